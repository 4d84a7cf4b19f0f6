// Module bookkeeping: registration, PyTorch-ordered traversal, in-place moves, state dicts.
#include "ember/nn/module.h"

#include <algorithm>
#include <functional>
#include <set>
#include <sstream>

#include "core/check.h"
#include "ember/autograd.h"

namespace ember::nn {

namespace {

std::string join_name(const std::string& prefix, const std::string& name) {
  return prefix.empty() ? name : prefix + "." + name;
}

// PyTorch prints shapes in load_state_dict messages as torch.Size([3, 4]).
std::string torch_size_str(IntList sizes) { return "torch.Size(" + detail::shape_str(sizes) + ")"; }

std::string quoted_list(const std::vector<std::string>& keys) {
  std::string out;
  for (size_t i = 0; i < keys.size(); ++i) out += (i ? ", \"" : "\"") + keys[i] + "\"";
  return out;
}

}  // namespace

// ---------------------------------------------------------------- StateDict

void StateDict::insert(std::string key, Tensor value) {
  for (auto& [k, v] : items_) {
    if (k == key) {
      v = std::move(value);
      return;
    }
  }
  items_.emplace_back(std::move(key), std::move(value));
}

bool StateDict::contains(std::string_view key) const {
  return std::any_of(items_.begin(), items_.end(), [&](const Item& item) { return item.first == key; });
}

const Tensor& StateDict::at(std::string_view key) const {
  for (const auto& [k, v] : items_) {
    if (k == key) return v;
  }
  detail::fail("state_dict has no key \"", key, "\"");
}

std::vector<std::string> StateDict::keys() const {
  std::vector<std::string> out;
  out.reserve(items_.size());
  for (const auto& item : items_) out.push_back(item.first);
  return out;
}

// ---------------------------------------------------------------- in-place data replacement

void replace_tensor_data(const Tensor& target, const Tensor& source) {
  EMBER_CHECK(target.defined() && source.defined(), "replace_tensor_data: both tensors must be defined");
  EMBER_CHECK(target.is_leaf(), "replace_tensor_data: the target must be a leaf tensor");
  if (target.is_same(source)) return;
  detail::TensorImpl& dst = target.impl();
  const detail::TensorImpl& src = source.impl();
  dst.storage = src.storage;
  dst.sizes = src.sizes;
  dst.strides = src.strides;
  dst.offset = src.offset;
  dst.numel = src.numel;
  dst.dtype = src.dtype;
}

// ---------------------------------------------------------------- Module

Tensor Module::forward(const Tensor& /*input*/) {
  detail::fail("Module [", name(), "] is missing the required \"forward\" function");
}

void Module::check_new_name(const std::string& name, const char* what) const {
  EMBER_CHECK(!name.empty(), what, " name can't be empty string \"\"");
  EMBER_CHECK(name.find('.') == std::string::npos, what, " name can't contain \".\", got: ", name);
  auto has = [&](const auto& list) {
    return std::any_of(list.begin(), list.end(), [&](const auto& item) { return item.first == name; });
  };
  EMBER_CHECK(!has(parameters_) && !has(buffers_) && !has(children_), "attribute '", name, "' already exists");
}

Tensor Module::register_parameter(const std::string& name, Tensor tensor, bool requires_grad) {
  check_new_name(name, "parameter");
  if (tensor.defined()) {
    EMBER_CHECK(tensor.is_leaf(), "Cannot assign non-leaf Tensor to parameter '", name,
                "'. Model parameters must be created explicitly; use detach() first.");
    tensor.requires_grad_(requires_grad);
  }
  parameters_.emplace_back(name, tensor);
  return tensor;
}

Tensor Module::register_buffer(const std::string& name, Tensor tensor) {
  check_new_name(name, "buffer");
  buffers_.emplace_back(name, tensor);
  return tensor;
}

void Module::add_child(const std::string& name, std::shared_ptr<Module> module) {
  check_new_name(name, "module");
  EMBER_CHECK(module != nullptr, "register_module: module '", name, "' is null");
  children_.emplace_back(name, std::move(module));
}

std::vector<std::pair<std::string, Tensor>> Module::named_parameters(bool recurse) const {
  std::vector<std::pair<std::string, Tensor>> out;
  std::set<const detail::TensorImpl*> seen;
  std::function<void(const Module&, const std::string&)> walk = [&](const Module& m, const std::string& prefix) {
    for (const auto& [name, p] : m.parameters_) {
      if (!p.defined() || !seen.insert(&p.impl()).second) continue;
      out.emplace_back(join_name(prefix, name), p);
    }
    if (!recurse) return;
    for (const auto& [name, child] : m.children_) walk(*child, join_name(prefix, name));
  };
  walk(*this, "");
  return out;
}

std::vector<Tensor> Module::parameters(bool recurse) const {
  std::vector<Tensor> out;
  for (auto& item : named_parameters(recurse)) out.push_back(std::move(item.second));
  return out;
}

std::vector<std::pair<std::string, Tensor>> Module::named_buffers(bool recurse) const {
  std::vector<std::pair<std::string, Tensor>> out;
  std::set<const detail::TensorImpl*> seen;
  std::function<void(const Module&, const std::string&)> walk = [&](const Module& m, const std::string& prefix) {
    for (const auto& [name, b] : m.buffers_) {
      if (!b.defined() || !seen.insert(&b.impl()).second) continue;
      out.emplace_back(join_name(prefix, name), b);
    }
    if (!recurse) return;
    for (const auto& [name, child] : m.children_) walk(*child, join_name(prefix, name));
  };
  walk(*this, "");
  return out;
}

std::vector<Tensor> Module::buffers(bool recurse) const {
  std::vector<Tensor> out;
  for (auto& item : named_buffers(recurse)) out.push_back(std::move(item.second));
  return out;
}

std::vector<std::pair<std::string, std::shared_ptr<Module>>> Module::named_children() const { return children_; }

std::vector<std::shared_ptr<Module>> Module::children() const {
  std::vector<std::shared_ptr<Module>> out;
  for (const auto& item : children_) out.push_back(item.second);
  return out;
}

std::vector<std::pair<std::string, std::shared_ptr<Module>>> Module::named_modules() {
  std::vector<std::pair<std::string, std::shared_ptr<Module>>> out;
  std::shared_ptr<Module> self = weak_from_this().lock();
  // A module not owned by a shared_ptr (e.g. on the stack) is listed through a non-owning handle.
  if (!self) self = std::shared_ptr<Module>(std::shared_ptr<Module>(), this);
  std::set<const Module*> seen;
  std::function<void(const std::shared_ptr<Module>&, const std::string&)> walk = [&](const std::shared_ptr<Module>& m,
                                                                                     const std::string& prefix) {
    if (!seen.insert(m.get()).second) return;
    out.emplace_back(prefix, m);
    for (const auto& [name, child] : m->children_) walk(child, join_name(prefix, name));
  };
  walk(self, "");
  return out;
}

void Module::train(bool on) {
  training_ = on;
  for (auto& item : children_) item.second->train(on);
}

template <typename Visit>
void Module::visit_tensors(Visit&& visit) {
  std::set<const detail::TensorImpl*> seen;
  std::function<void(Module&)> walk = [&](Module& m) {
    for (auto& item : m.parameters_) {
      if (item.second.defined() && seen.insert(&item.second.impl()).second) visit(item.second, true);
    }
    for (auto& item : m.buffers_) {
      if (item.second.defined() && seen.insert(&item.second.impl()).second) visit(item.second, false);
    }
    for (auto& item : m.children_) walk(*item.second);
  };
  walk(*this);
}

void Module::to(Device device) {
  NoGradGuard no_grad;
  visit_tensors([&](Tensor& t, bool is_parameter) {
    replace_tensor_data(t, t.to(device));
    if (is_parameter && t.grad().defined()) t.set_grad(t.grad().to(device));
  });
}

void Module::to(Dtype dtype) {
  EMBER_CHECK(is_floating_point(dtype),
              "nn.Module.to only accepts floating point or complex dtypes, but got desired dtype=", dtype_name(dtype));
  NoGradGuard no_grad;
  visit_tensors([&](Tensor& t, bool is_parameter) {
    if (!t.is_floating_point()) return;
    replace_tensor_data(t, t.to(dtype));
    if (is_parameter && t.grad().defined()) t.set_grad(t.grad().to(dtype));
  });
}

void Module::to(Device device, Dtype dtype) {
  to(device);
  to(dtype);
}

void Module::zero_grad(bool set_to_none) {
  NoGradGuard no_grad;
  for (Tensor& p : parameters()) {
    Tensor g = p.grad();
    if (!g.defined()) continue;
    if (set_to_none) {
      p.set_grad(Tensor());
    } else {
      g.zero_();
    }
  }
}

void Module::collect_state(const std::string& prefix, StateDict& out) const {
  for (const auto& [name, p] : parameters_) {
    if (p.defined()) out.insert(prefix + name, p.detach());
  }
  for (const auto& [name, b] : buffers_) {
    if (b.defined()) out.insert(prefix + name, b.detach());
  }
  for (const auto& [name, child] : children_) child->collect_state(prefix + name + ".", out);
}

StateDict Module::state_dict() const {
  StateDict out;
  collect_state("", out);
  return out;
}

void Module::load_state_dict(const StateDict& state, bool strict) {
  // Every target tensor under its dotted name, including the ones state_dict() would list twice.
  std::vector<std::pair<std::string, Tensor>> targets;
  std::function<void(const Module&, const std::string&)> walk = [&](const Module& m, const std::string& prefix) {
    for (const auto& [name, p] : m.parameters_) {
      if (p.defined()) targets.emplace_back(prefix + name, p);
    }
    for (const auto& [name, b] : m.buffers_) {
      if (b.defined()) targets.emplace_back(prefix + name, b);
    }
    for (const auto& [name, child] : m.children_) walk(*child, prefix + name + ".");
  };
  walk(*this, "");

  std::vector<std::string> missing, unexpected, errors;
  std::vector<std::pair<Tensor, Tensor>> copies;
  for (const auto& [key, target] : targets) {
    if (!state.contains(key)) {
      missing.push_back(key);
      continue;
    }
    const Tensor& source = state.at(key);
    if (!source.defined() ||
        !std::equal(source.sizes().begin(), source.sizes().end(), target.sizes().begin(), target.sizes().end())) {
      errors.push_back("size mismatch for " + key + ": copying a param with shape " +
                       (source.defined() ? torch_size_str(source.sizes()) : std::string("None")) +
                       " from checkpoint, the shape in current model is " + torch_size_str(target.sizes()) + ".");
      continue;
    }
    copies.emplace_back(target, source);
  }
  for (const auto& [key, value] : state) {
    const bool known =
        std::any_of(targets.begin(), targets.end(), [&key = key](const auto& item) { return item.first == key; });
    if (!known) unexpected.push_back(key);
  }
  if (strict) {
    if (!unexpected.empty())
      errors.insert(errors.begin(), "Unexpected key(s) in state_dict: " + quoted_list(unexpected) + ". ");
    if (!missing.empty()) errors.insert(errors.begin(), "Missing key(s) in state_dict: " + quoted_list(missing) + ". ");
  }
  if (!errors.empty()) {
    std::string message = "Error(s) in loading state_dict for " + name() + ":";
    for (const auto& e : errors) message += "\n\t" + e;
    throw Error(message);
  }
  NoGradGuard no_grad;
  for (auto& [target, source] : copies) target.copy_(source);
}

}  // namespace ember::nn
