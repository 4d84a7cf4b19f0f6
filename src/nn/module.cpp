// Module bookkeeping: registration, PyTorch-ordered traversal, in-place moves, state dicts,
// and the hooks that operator() runs around forward (torch.nn.Module._call_impl).
#include "ember/nn/module.h"

#include <algorithm>
#include <atomic>
#include <functional>
#include <set>
#include <sstream>
#include <unordered_map>

#include "autograd/node.h"
#include "core/check.h"
#include "core/tensor_internal.h"
#include "ember/autograd.h"
#include "ember/warning.h"

namespace ember::nn {

/// A module's hooks by kind, each in calling order, with the parametrized tensors' refreshers.
/// Shared with the handles (weakly), so that a handle outliving its module does nothing.
struct ModuleHooks {
  template <typename Fn>
  struct Entry {
    uint64_t id;
    Fn fn;
  };
  std::vector<Entry<ForwardPreHook>> forward_pre;
  std::vector<Entry<ForwardHook>> forward;
  std::vector<uint64_t> forward_always_called;  // ids of forward hooks registered with always_call
  std::vector<Entry<BackwardPreHook>> backward_pre;
  std::vector<Entry<BackwardHook>> backward;
  std::vector<Entry<LoadStateDictPreHook>> load_state_dict_pre;
  std::vector<std::pair<std::string, std::function<void()>>> parametrized;

  void remove(uint64_t id) {
    auto drop = [id](auto& list) {
      list.erase(std::remove_if(list.begin(), list.end(), [id](const auto& e) { return e.id == id; }), list.end());
    };
    drop(forward_pre);
    drop(forward);
    drop(backward_pre);
    drop(backward);
    drop(load_state_dict_pre);
    std::erase(forward_always_called, id);
  }
};

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

// Python's repr of a list of str (no key holds a quote in practice; Python would switch quotes).
std::string python_str_list(const std::vector<std::string>& keys) {
  std::string out = "[";
  for (size_t i = 0; i < keys.size(); ++i) out += (i ? ", '" : "'") + keys[i] + "'";
  return out + "]";
}

uint64_t next_hook_id() {
  static std::atomic<uint64_t> counter{0};
  return ++counter;
}

template <typename Entry>
void add_hook(std::vector<Entry>& list, Entry entry, bool prepend) {
  if (prepend) {
    list.insert(list.begin(), std::move(entry));
  } else {
    list.push_back(std::move(entry));
  }
}

// What one call of a module with backward hooks shares between its two identity nodes (PyTorch's
// BackwardHook object): the hooks as they were at the call, and grad_output once known.
struct BackwardHookCall {
  Module* module = nullptr;
  std::shared_ptr<Module> keep_alive;  // when the module is owned by a shared_ptr
  std::vector<BackwardHook> hooks;
  std::vector<BackwardPreHook> pre_hooks;
  bool input_hooked = false;  // the input required grad, so grad_input will be computed
  bool has_grad_output = false;
  Tensor grad_output;
};

// An alias of t whose backward node (BackwardHookFunctionBackward, as PyTorch names it) passes the
// gradient through `on_grad`; t itself when nothing would record.
Tensor hook_identity(const Tensor& t, std::function<Tensor(const Tensor&)> on_grad) {
  if (!autograd::needs_grad({&t})) return t;
  Tensor alias = ember::detail::make_view(t, t.impl().sizes, t.impl().strides, t.storage_offset());
  return autograd::record_view_of(alias, t, "BackwardHookFunctionBackward", std::move(on_grad));
}

// setup_input_hook: the gradient reaching the module's input goes through the full backward hooks.
Tensor hook_input(const Tensor& input, const std::shared_ptr<BackwardHookCall>& call) {
  Tensor out = hook_identity(input, [call](const Tensor& grad_input) -> Tensor {
    // No grad_output: the gradient reached the input without passing through the output
    // (a double backward); PyTorch's hook then does nothing.
    if (!call->has_grad_output) return grad_input;
    Tensor result = grad_input;
    for (const BackwardHook& hook : call->hooks) {
      if (std::optional<Tensor> replaced = hook(*call->module, result, call->grad_output)) result = *replaced;
    }
    call->has_grad_output = false;
    call->grad_output = Tensor();
    return result;
  });
  call->input_hooked = !out.is_same(input);
  return out;
}

// setup_output_hook: the gradient of the module's output goes through the backward pre-hooks and
// is kept for the full backward hooks.
Tensor hook_output(const Tensor& output, const std::shared_ptr<BackwardHookCall>& call) {
  return hook_identity(output, [call](const Tensor& grad_output) -> Tensor {
    call->grad_output = grad_output;
    call->has_grad_output = true;
    for (const BackwardPreHook& hook : call->pre_hooks) {
      if (std::optional<Tensor> replaced = hook(*call->module, call->grad_output)) call->grad_output = *replaced;
    }
    Tensor local = call->grad_output;
    if (!call->input_hooked) {
      // No input requires grad: the full backward hooks fire now, with no grad_input.
      if (!call->hooks.empty()) {
        warn(
            "Full backward hook is firing when gradients are computed with respect to module outputs since no "
            "inputs require gradients. See "
            "https://docs.pytorch.org/docs/main/generated/torch.nn.Module.html#torch.nn.Module.register_full_"
            "backward_hook for more details.");
        for (const BackwardHook& hook : call->hooks) {
          std::optional<Tensor> res = hook(*call->module, Tensor(), call->grad_output);
          EMBER_CHECK(!res || !res->defined(),
                      "Backward hook for Modules where no input requires gradient should always return None or None "
                      "for all gradients.");
        }
      }
      call->has_grad_output = false;
      call->grad_output = Tensor();
    }
    return local;
  });
}

}  // namespace

// ---------------------------------------------------------------- IncompatibleKeys, handles

std::string IncompatibleKeys::to_string() const {
  if (missing_keys.empty() && unexpected_keys.empty()) return "<All keys matched successfully>";
  return "_IncompatibleKeys(missing_keys=" + python_str_list(missing_keys) +
         ", unexpected_keys=" + python_str_list(unexpected_keys) + ")";
}

void RemovableHandle::remove() {
  if (auto hooks = hooks_.lock()) hooks->remove(id_);
}

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

bool StateDict::erase(std::string_view key) {
  return std::erase_if(items_, [&](const Item& item) { return item.first == key; }) > 0;
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
  EMBER_CHECK(module != nullptr, "register_module: module '", name, "' is null");
  // A child of the same name is replaced where it stands (PyTorch's add_module assigns the key).
  for (auto& item : children_) {
    if (item.first == name) {
      item.second = std::move(module);
      return;
    }
  }
  check_new_name(name, "module");
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

std::vector<std::pair<std::string, std::shared_ptr<Module>>> Module::named_modules(const std::string& prefix,
                                                                                   bool remove_duplicate) {
  std::vector<std::pair<std::string, std::shared_ptr<Module>>> out;
  std::shared_ptr<Module> self = weak_from_this().lock();
  // A module not owned by a shared_ptr (e.g. on the stack) is listed through a non-owning handle.
  if (!self) self = std::shared_ptr<Module>(std::shared_ptr<Module>(), this);
  std::set<const Module*> seen;
  std::function<void(const std::shared_ptr<Module>&, const std::string&)> walk = [&](const std::shared_ptr<Module>& m,
                                                                                     const std::string& name) {
    if (seen.count(m.get())) return;
    if (remove_duplicate) seen.insert(m.get());
    out.emplace_back(name, m);
    for (const auto& [child_name, child] : m->children_) walk(child, join_name(name, child_name));
  };
  walk(self, prefix);
  return out;
}

std::vector<std::shared_ptr<Module>> Module::modules(bool remove_duplicate) {
  std::vector<std::shared_ptr<Module>> out;
  for (auto& item : named_modules("", remove_duplicate)) out.push_back(std::move(item.second));
  return out;
}

std::shared_ptr<Module> Module::get_submodule(const std::string& target) {
  std::shared_ptr<Module> current = weak_from_this().lock();
  if (!current) current = std::shared_ptr<Module>(std::shared_ptr<Module>(), this);
  if (target.empty()) return current;
  size_t start = 0;
  while (true) {
    const size_t dot = target.find('.', start);
    const std::string atom = target.substr(start, dot == std::string::npos ? std::string::npos : dot - start);
    const auto& kids = current->children_;
    auto it = std::find_if(kids.begin(), kids.end(), [&](const auto& item) { return item.first == atom; });
    if (it == kids.end()) {
      const auto has = [&](const auto& list) {
        return std::any_of(list.begin(), list.end(), [&](const auto& item) { return item.first == atom; });
      };
      const bool is_tensor = has(current->parameters_) || has(current->buffers_) || current->has_parametrized(atom);
      if (is_tensor) detail::fail("`", atom, "` is not an nn.Module");
      detail::fail(current->type_name(), " has no attribute `", atom, "`");
    }
    current = it->second;
    if (dot == std::string::npos) return current;
    start = dot + 1;
  }
}

Tensor Module::get_parameter(const std::string& target) {
  const size_t dot = target.rfind('.');
  const std::string path = dot == std::string::npos ? "" : target.substr(0, dot);
  const std::string name = dot == std::string::npos ? target : target.substr(dot + 1);
  std::shared_ptr<Module> owner = get_submodule(path);
  for (const auto& [key, p] : owner->parameters_) {
    if (key != name) continue;
    EMBER_CHECK(p.defined(), "`", name, "` is not an nn.Parameter");  // a None parameter (bias=False)
    return p;
  }
  const auto has = [&](const auto& list) {
    return std::any_of(list.begin(), list.end(), [&](const auto& item) { return item.first == name; });
  };
  if (has(owner->buffers_) || has(owner->children_) || owner->has_parametrized(name)) {
    detail::fail("`", name, "` is not an nn.Parameter");
  }
  detail::fail(owner->type_name(), " has no attribute `", name, "`");
}

Tensor Module::get_buffer(const std::string& target) {
  const size_t dot = target.rfind('.');
  const std::string path = dot == std::string::npos ? "" : target.substr(0, dot);
  const std::string name = dot == std::string::npos ? target : target.substr(dot + 1);
  std::shared_ptr<Module> owner = get_submodule(path);
  for (const auto& [key, b] : owner->buffers_) {
    if (key == name) return b;
  }
  const auto has = [&](const auto& list) {
    return std::any_of(list.begin(), list.end(), [&](const auto& item) { return item.first == name; });
  };
  if (has(owner->parameters_) || has(owner->children_) || owner->has_parametrized(name)) {
    detail::fail("`", name, "` is not a buffer");
  }
  detail::fail(owner->type_name(), " has no attribute `", name, "`");
}

Module& Module::apply(const std::function<void(Module&)>& fn) {
  // PyTorch's children() lists a module registered under two names once.
  std::set<const Module*> seen;
  for (const auto& [child_name, child] : children_) {
    if (seen.insert(child.get()).second) child->apply(fn);
  }
  fn(*this);
  return *this;
}

Module& Module::requires_grad_(bool requires_grad) {
  for (Tensor& p : parameters()) p.requires_grad_(requires_grad);
  return *this;
}

// ---------------------------------------------------------------- hooks and calls

ModuleHooks& Module::hooks() {
  if (!hooks_) hooks_ = std::make_shared<ModuleHooks>();
  return *hooks_;
}

RemovableHandle Module::register_forward_pre_hook(ForwardPreHook hook, bool prepend) {
  EMBER_CHECK(hook != nullptr, "register_forward_pre_hook: the hook is empty");
  const uint64_t id = next_hook_id();
  add_hook(hooks().forward_pre, {id, std::move(hook)}, prepend);
  return RemovableHandle(hooks_, id);
}

RemovableHandle Module::register_forward_hook(ForwardHook hook, bool prepend, bool always_call) {
  EMBER_CHECK(hook != nullptr, "register_forward_hook: the hook is empty");
  const uint64_t id = next_hook_id();
  add_hook(hooks().forward, {id, std::move(hook)}, prepend);
  if (always_call) hooks_->forward_always_called.push_back(id);
  return RemovableHandle(hooks_, id);
}

RemovableHandle Module::register_full_backward_pre_hook(BackwardPreHook hook, bool prepend) {
  EMBER_CHECK(hook != nullptr, "register_full_backward_pre_hook: the hook is empty");
  const uint64_t id = next_hook_id();
  add_hook(hooks().backward_pre, {id, std::move(hook)}, prepend);
  return RemovableHandle(hooks_, id);
}

RemovableHandle Module::register_full_backward_hook(BackwardHook hook, bool prepend) {
  EMBER_CHECK(hook != nullptr, "register_full_backward_hook: the hook is empty");
  const uint64_t id = next_hook_id();
  add_hook(hooks().backward, {id, std::move(hook)}, prepend);
  return RemovableHandle(hooks_, id);
}

RemovableHandle Module::register_load_state_dict_pre_hook(LoadStateDictPreHook hook) {
  EMBER_CHECK(hook != nullptr, "register_load_state_dict_pre_hook: the hook is empty");
  const uint64_t id = next_hook_id();
  hooks().load_state_dict_pre.push_back({id, std::move(hook)});
  return RemovableHandle(hooks_, id);
}

void Module::set_parametrized(const std::string& name, std::function<void()> refresh) {
  auto& list = hooks().parametrized;
  for (auto& item : list) {
    if (item.first == name) {
      item.second = std::move(refresh);
      return;
    }
  }
  list.emplace_back(name, std::move(refresh));
}

void Module::unset_parametrized(const std::string& name) {
  if (!hooks_) return;
  std::erase_if(hooks_->parametrized, [&](const auto& item) { return item.first == name; });
}

bool Module::has_parametrized(const std::string& name) const {
  return hooks_ && std::any_of(hooks_->parametrized.begin(), hooks_->parametrized.end(),
                               [&](const auto& item) { return item.first == name; });
}

std::string Module::type_name() const {
  return hooks_ && !hooks_->parametrized.empty() ? "Parametrized" + name() : name();
}

Tensor Module::call_with_hooks(const Tensor& input_arg) {
  // Copies: a hook may register or remove hooks (the new set applies from the next call), and
  // the backward hooks of this call are those registered now, as in PyTorch.
  const std::shared_ptr<ModuleHooks> state = hooks_;
  const auto forward_pre = state->forward_pre;
  const auto forward_hooks = state->forward;
  const auto always_called = state->forward_always_called;

  Tensor input = input_arg;
  Tensor result;
  std::vector<uint64_t> called;
  try {
    for (const auto& hook : forward_pre) {
      if (std::optional<Tensor> replaced = hook.fn(*this, input)) input = *replaced;
    }
    // Parametrized tensors are computed after the pre-hooks, as PyTorch computes them when
    // forward reads them: a pre-hook's change to an original reaches this call.
    for (const auto& item : std::vector(state->parametrized)) item.second();
    std::shared_ptr<BackwardHookCall> backward_call;
    if (!state->backward.empty() || !state->backward_pre.empty()) {
      backward_call = std::make_shared<BackwardHookCall>();
      backward_call->module = this;
      backward_call->keep_alive = weak_from_this().lock();
      for (const auto& hook : state->backward) backward_call->hooks.push_back(hook.fn);
      for (const auto& hook : state->backward_pre) backward_call->pre_hooks.push_back(hook.fn);
      input = hook_input(input, backward_call);
    }
    result = forward(input);
    for (const auto& hook : forward_hooks) {
      called.push_back(hook.id);
      if (std::optional<Tensor> replaced = hook.fn(*this, input, result)) result = *replaced;
    }
    if (backward_call) result = hook_output(result, backward_call);
    return result;
  } catch (...) {
    // The always_call forward hooks that have not run yet run now; their own errors become
    // warnings so that the original error is the one that propagates.
    for (const auto& hook : forward_hooks) {
      const bool always = std::find(always_called.begin(), always_called.end(), hook.id) != always_called.end();
      if (!always || std::find(called.begin(), called.end(), hook.id) != called.end()) continue;
      try {
        if (std::optional<Tensor> replaced = hook.fn(*this, input, result)) result = *replaced;
      } catch (const std::exception& e) {
        warn(std::string("module forward hook with ``always_call=True`` raised an exception that was silenced as "
                         "another error was raised in forward: ") +
             e.what());
      }
    }
    throw;
  }
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

IncompatibleKeys Module::load_state_dict(const StateDict& state, bool strict) {
  // As PyTorch's load(): each module (depth first, every path, so a shared module is visited
  // under each of its names) runs its load pre-hooks on the entries under its prefix, checks its
  // own parameters then buffers against them, and reports as unexpected the keys that name
  // neither one of them nor (with a further dot) one of its children; the children load from
  // what is left under their prefixes.
  IncompatibleKeys result;
  std::vector<std::string> errors;
  std::vector<std::pair<Tensor, Tensor>> copies;

  std::function<void(const Module&, const std::string&, StateDict)> load = [&](const Module& m,
                                                                               const std::string& prefix,
                                                                               StateDict local) {
    if (m.hooks_) {
      for (const auto& hook : std::vector(m.hooks_->load_state_dict_pre)) hook.fn(local, prefix);
    }
    std::unordered_map<std::string_view, const Tensor*> by_key;
    for (const auto& [key, value] : local) by_key.emplace(key, &value);
    std::vector<std::pair<std::string, Tensor>> local_state;
    for (const auto& item : m.parameters_) {
      if (item.second.defined()) local_state.push_back(item);
    }
    for (const auto& item : m.buffers_) {
      if (item.second.defined()) local_state.push_back(item);
    }
    for (const auto& [name, target] : local_state) {
      const std::string key = prefix + name;
      auto found = by_key.find(key);
      if (found == by_key.end()) {
        result.missing_keys.push_back(key);
        continue;
      }
      Tensor source = *found->second;
      if (!source.defined()) {
        errors.push_back("While copying the parameter named \"" + key +
                         "\", expected torch.Tensor or Tensor-like object from checkpoint but received "
                         "<class 'NoneType'>");
        continue;
      }
      // PyTorch still takes a one-element 1-D tensor for a 0-dim one (checkpoints from 0.3).
      if (target.dim() == 0 && source.dim() == 1 && source.size(0) == 1) source = source[0];
      if (!std::equal(source.sizes().begin(), source.sizes().end(), target.sizes().begin(), target.sizes().end())) {
        errors.push_back("size mismatch for " + key + ": copying a param with shape " + torch_size_str(source.sizes()) +
                         " from checkpoint, the shape in current model is " + torch_size_str(target.sizes()) + ".");
        continue;
      }
      copies.emplace_back(target, source);
    }
    for (const auto& [key, value] : local) {
      if (!key.starts_with(prefix)) continue;  // a pre-hook may have added keys elsewhere
      const std::string_view rest = std::string_view(key).substr(prefix.size());
      const size_t dot = rest.find('.');
      const std::string_view head = rest.substr(0, dot);
      const auto named = [&](const auto& list) {
        return std::any_of(list.begin(), list.end(), [&](const auto& entry) { return entry.first == head; });
      };
      if (dot != std::string_view::npos ? !named(m.children_) : !named(local_state)) {
        result.unexpected_keys.push_back(key);
      }
    }
    for (const auto& [name, child] : m.children_) {
      const std::string child_prefix = prefix + name + ".";
      std::vector<StateDict::Item> child_items;
      for (const auto& item : local) {
        if (item.first.starts_with(child_prefix)) child_items.push_back(item);
      }
      load(*child, child_prefix, StateDict(std::move(child_items)));
    }
  };
  load(*this, "", state);

  if (strict) {
    if (!result.unexpected_keys.empty())
      errors.insert(errors.begin(), "Unexpected key(s) in state_dict: " + quoted_list(result.unexpected_keys) + ". ");
    if (!result.missing_keys.empty())
      errors.insert(errors.begin(), "Missing key(s) in state_dict: " + quoted_list(result.missing_keys) + ". ");
  }
  if (!errors.empty()) {
    std::string message = "Error(s) in loading state_dict for " + type_name() + ":";
    for (const auto& e : errors) message += "\n\t" + e;
    throw Error(message);
  }
  NoGradGuard no_grad;
  for (auto& [target, source] : copies) target.copy_(source);
  return result;
}

}  // namespace ember::nn
