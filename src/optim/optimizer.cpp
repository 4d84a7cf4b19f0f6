#include "ember/optim/optimizer.h"

#include <algorithm>
#include <charconv>
#include <cmath>
#include <string_view>

#include "core/check.h"
#include "ember/autograd.h"
#include "ember/dtype.h"
#include "optim/fused_updates.h"

namespace ember::optim {

std::string python_float(double value) { return ember::detail::python_float(value); }

double ParamGroup::get(const std::string& name) const {
  auto it = options.find(name);
  EMBER_CHECK(it != options.end(), "parameter group has no option '", name, "'");
  return it->second;
}

Optimizer::Optimizer(std::vector<ParamGroup> groups, Options defaults) : defaults_(std::move(defaults)) {
  size_t total = 0;
  for (const auto& group : groups) total += group.params.size();
  EMBER_CHECK(total > 0, "optimizer got an empty parameter list");
  for (auto& group : groups) add_param_group(std::move(group));
}

void Optimizer::add_param_group(ParamGroup group) {
  for (const Tensor& p : group.params) {
    EMBER_CHECK(p.defined(), "optimizer can only optimize defined Tensors");
    EMBER_CHECK(p.is_leaf(), "can't optimize a non-leaf Tensor");
    for (const auto& existing : groups_) {
      for (const Tensor& q : existing.params) {
        EMBER_CHECK(!q.is_same(p), "some parameters appear in more than one parameter group");
      }
    }
  }
  for (const auto& [name, value] : defaults_) group.options.try_emplace(name, value);
  state_.resize(state_.size() + group.params.size());
  groups_.push_back(std::move(group));
}

std::map<std::string, Tensor>& Optimizer::state(size_t index) {
  EMBER_CHECK(index < state_.size(), "optimizer has no parameter with index ", index);
  return state_[index];
}

void Optimizer::step() { step(Tensor()); }

void Optimizer::step(const Tensor& skip) {
  EMBER_CHECK(!skip.defined() || (skip.dtype() == kBool && skip.dim() == 0),
              "Optimizer::step(skip) expects a 0-dim bool tensor, got ", dtype_name(skip.dtype()), " of size ",
              detail::shape_str(skip.sizes()));
  NoGradGuard no_grad;
  stepped_ = true;
  fusion::FusedUpdates fused;  // the rules' fused updates, launched together below (fused_updates.h)
  size_t index = 0;
  for (auto& group : groups_) {
    for (Tensor& param : group.params) {
      Tensor grad = param.grad();
      if (grad.defined()) update(group, param, grad, state_[index], skip);
      ++index;
    }
  }
  fused.launch();
}

bool Optimizer::skipped(const Tensor& skip) { return skip.defined() && skip.item<bool>(); }

Tensor Optimizer::loaded_state(const std::string& name, const Tensor& saved, const Tensor& param) const {
  // As PyTorch: floating state follows its parameter's dtype and device; "step" stays as saved
  // (on the CPU, where reading it for the bias corrections does not wait for a GPU).
  Tensor value = saved.detach();
  if (name == "step") return value.clone();
  if (value.is_floating_point()) {
    value = value.to(param.device(), param.dtype(), /*non_blocking=*/false, /*copy=*/true);
  } else {
    value = value.to(param.device(), /*non_blocking=*/false, /*copy=*/true);
  }
  EMBER_CHECK(value.sizes().vec() == param.sizes().vec(), "optimizer state '", name, "' has size ",
              detail::shape_str(value.sizes()), " but its parameter has size ", detail::shape_str(param.sizes()));
  return value;
}

Optimizer::HostState Optimizer::host_state() const {
  HostState saved;
  saved.names.resize(state_.size());
  saved.steps.assign(state_.size(), std::nan(""));
  for (size_t i = 0; i < state_.size(); ++i) {
    for (const auto& [name, tensor] : state_[i]) saved.names[i].push_back(name);
    auto step = state_[i].find("step");
    // "step" lives on the CPU (see load_state_dict): reading it waits for no device.
    if (step != state_[i].end() && step->second.defined()) saved.steps[i] = step->second.item<double>();
  }
  return saved;
}

void Optimizer::restore_host_state(const HostState& saved) {
  EMBER_CHECK(saved.names.size() == state_.size() && saved.steps.size() == state_.size(),
              "restore_host_state: the saved state is for ", saved.names.size(), " parameters, this optimizer has ",
              state_.size());
  for (size_t i = 0; i < state_.size(); ++i) {
    const std::vector<std::string>& keep = saved.names[i];
    std::erase_if(state_[i],
                  [&](const auto& entry) { return std::find(keep.begin(), keep.end(), entry.first) == keep.end(); });
    auto step = state_[i].find("step");
    if (step != state_[i].end() && !std::isnan(saved.steps[i])) step->second.fill_(saved.steps[i]);
  }
}

void Optimizer::zero_grad(bool set_to_none) {
  for (auto& group : groups_) {
    for (Tensor& param : group.params) {
      Tensor grad = param.grad();
      if (!grad.defined()) continue;
      if (set_to_none) {
        param.set_grad(Tensor());
      } else {
        NoGradGuard no_grad;
        grad.zero_();
      }
    }
  }
}

OptimizerStateDict Optimizer::state_dict() const {
  OptimizerStateDict dict;
  // Clones, so that a saved dictionary does not change as the optimizer keeps stepping.
  for (size_t i = 0; i < state_.size(); ++i) {
    for (const auto& [name, tensor] : state_[i]) {
      dict.tensors["state." + std::to_string(i) + "." + name] = tensor.detach().clone();
    }
  }
  dict.numbers["num_param_groups"] = static_cast<double>(groups_.size());
  for (size_t g = 0; g < groups_.size(); ++g) {
    std::string prefix = "param_groups." + std::to_string(g) + ".";
    for (const auto& [name, value] : groups_[g].options) dict.numbers[prefix + name] = value;
    dict.numbers[prefix + "num_params"] = static_cast<double>(groups_[g].params.size());
  }
  return dict;
}

void Optimizer::load_state_dict(const OptimizerStateDict& dict) {
  auto number = [&](const std::string& key) {
    auto it = dict.numbers.find(key);
    EMBER_CHECK(it != dict.numbers.end(), "optimizer state dict is missing '", key, "'");
    return it->second;
  };
  EMBER_CHECK(static_cast<size_t>(number("num_param_groups")) == groups_.size(),
              "loaded state dict has a different number of parameter groups");
  std::vector<const Tensor*> params;
  for (size_t g = 0; g < groups_.size(); ++g) {
    std::string prefix = "param_groups." + std::to_string(g) + ".";
    EMBER_CHECK(static_cast<size_t>(number(prefix + "num_params")) == groups_[g].params.size(),
                "loaded state dict contains a parameter group that doesn't match the size of optimizer's group");
    for (const Tensor& p : groups_[g].params) params.push_back(&p);
  }

  std::vector<std::map<std::string, Tensor>> new_state(state_.size());
  for (const auto& [key, tensor] : dict.tensors) {
    std::string_view rest(key);
    EMBER_CHECK(rest.substr(0, 6) == "state.", "unexpected key in optimizer state dict: '", key, "'");
    rest.remove_prefix(6);
    size_t index = 0;
    auto [ptr, ec] = std::from_chars(rest.data(), rest.data() + rest.size(), index);
    EMBER_CHECK(ec == std::errc() && ptr != rest.data() + rest.size() && *ptr == '.',
                "unexpected key in optimizer state dict: '", key, "'");
    EMBER_CHECK(index < params.size(), "optimizer state dict has state for parameter ", index,
                " but the optimizer has ", params.size(), " parameters");
    std::string name(ptr + 1, rest.data() + rest.size());
    new_state[index][name] = loaded_state(name, tensor, *params[index]);
  }

  for (size_t g = 0; g < groups_.size(); ++g) {
    std::string prefix = "param_groups." + std::to_string(g) + ".";
    Options options;
    for (const auto& [key, value] : dict.numbers) {
      if (key.compare(0, prefix.size(), prefix) != 0) continue;
      std::string name = key.substr(prefix.size());
      if (name != "num_params") options[name] = value;
    }
    groups_[g].options = std::move(options);
  }
  state_ = std::move(new_state);
}

}  // namespace ember::optim
