// Update rules written as torch/optim/*.py's single-tensor implementations write them, op for op,
// so that float results follow PyTorch's rounding as closely as ember's ops allow.
#include "ember/optim/optimizers.h"

#include <cmath>
#include <utility>
#include <vector>

#include "backend/backend.h"
#include "core/check.h"
#include "ember/detail/tensor_impl.h"
#include "ember/factories.h"
#include "ember/ops.h"
#include "kernels/optim_ops.h"
#include "optim/fused_updates.h"
#include "optim/update_helpers.h"

namespace ember::optim {
namespace {

using namespace update;  // NOLINT(google-build-using-namespace): the rules' shared helpers

/// Whether one fused backend call can replace the op-by-op update: every tensor contiguous,
/// float32 or float64 like the parameter, on its device, and a skip flag there too. (Others,
/// e.g. float16 parameters, keep the op-by-op path, which rounds to 16 bits between ops as
/// PyTorch does.)
bool fusable(const Tensor& param, const Tensor& skip, std::initializer_list<const Tensor*> others) {
  if ((param.dtype() != kFloat32 && param.dtype() != kFloat64) || !param.is_contiguous()) return false;
  if (skip.defined() && skip.device() != param.device()) return false;
  for (const Tensor* t : others) {
    if (!t->defined()) continue;
    if (t->dtype() != param.dtype() || t->device() != param.device() || !t->is_contiguous() ||
        t->numel() != param.numel()) {
      return false;
    }
  }
  return true;
}

/// What in-place ops would have done: tensors written by a fused update count as modified, so
/// autograd still refuses a graph that saved them before the step.
void mark_written(std::initializer_list<const Tensor*> tensors) {
  for (const Tensor* t : tensors) {
    if (t->defined()) t->impl().storage->bump_version();
  }
}

Options sgd_options(const SGDOptions& o) {
  check_lr(o.lr);
  EMBER_CHECK(o.momentum >= 0.0, "Invalid momentum value: ", python_float(o.momentum));
  check_weight_decay(o.weight_decay);
  EMBER_CHECK(!o.nesterov || (o.momentum > 0 && o.dampening == 0),
              "Nesterov momentum requires a momentum and zero dampening");
  return {{"lr", o.lr},
          {"momentum", o.momentum},
          {"dampening", o.dampening},
          {"weight_decay", o.weight_decay},
          {"nesterov", o.nesterov ? 1.0 : 0.0},
          {"maximize", o.maximize ? 1.0 : 0.0}};
}

Options adam_options(const AdamOptions& o) {
  check_lr(o.lr);
  check_eps(o.eps);
  EMBER_CHECK(o.beta1 >= 0.0 && o.beta1 < 1.0, "Invalid beta parameter at index 0: ", python_float(o.beta1));
  EMBER_CHECK(o.beta2 >= 0.0 && o.beta2 < 1.0, "Invalid beta parameter at index 1: ", python_float(o.beta2));
  check_weight_decay(o.weight_decay);
  return {{"lr", o.lr},
          {"beta1", o.beta1},
          {"beta2", o.beta2},
          {"eps", o.eps},
          {"weight_decay", o.weight_decay},
          {"amsgrad", o.amsgrad ? 1.0 : 0.0},
          {"maximize", o.maximize ? 1.0 : 0.0}};
}

AdamOptions from_adamw(const AdamWOptions& o) {
  return {o.lr, o.beta1, o.beta2, o.eps, o.weight_decay, o.amsgrad, o.maximize};
}

Options adadelta_options(const AdadeltaOptions& o) {
  check_lr(o.lr);
  EMBER_CHECK(o.rho >= 0.0 && o.rho <= 1.0, "Invalid rho value: ", python_float(o.rho));
  check_eps(o.eps);
  check_weight_decay(o.weight_decay);
  return {{"lr", o.lr},
          {"rho", o.rho},
          {"eps", o.eps},
          {"weight_decay", o.weight_decay},
          {"maximize", o.maximize ? 1.0 : 0.0}};
}

Options rmsprop_options(const RMSpropOptions& o) {
  check_lr(o.lr);
  check_eps(o.eps);
  EMBER_CHECK(o.momentum >= 0.0, "Invalid momentum value: ", python_float(o.momentum));
  check_weight_decay(o.weight_decay);
  EMBER_CHECK(o.alpha >= 0.0, "Invalid alpha value: ", python_float(o.alpha));
  return {{"lr", o.lr},
          {"alpha", o.alpha},
          {"eps", o.eps},
          {"weight_decay", o.weight_decay},
          {"momentum", o.momentum},
          {"centered", o.centered ? 1.0 : 0.0},
          {"maximize", o.maximize ? 1.0 : 0.0}};
}

}  // namespace

// ---- SGD ----

SGD::SGD(std::vector<Tensor> params, SGDOptions options) : SGD(single_group(std::move(params)), options) {}
SGD::SGD(std::vector<ParamGroup> groups, SGDOptions defaults) : Optimizer(std::move(groups), sgd_options(defaults)) {}

void SGD::update(const ParamGroup& group, Tensor& param, const Tensor& grad, std::map<std::string, Tensor>& state,
                 const Tensor& skip) {
  const double momentum = group.get("momentum");
  auto it = state.find("momentum_buffer");
  const bool first_step = momentum != 0 && it == state.end();
  Tensor buffer = it != state.end() ? it->second : Tensor();
  if (fusable(param, skip, {&grad, &buffer})) {
    if (first_step) {
      // Written whole by the first step; zeros when it may be skipped, so that a skipped first
      // step leaves a buffer that a later step can build on.
      buffer = skip.defined() ? zeros_like(param) : empty_like(param);
      state["momentum_buffer"] = buffer;
    }
    kernels::SgdStep step;
    step.lr = group.lr();
    step.weight_decay = group.get("weight_decay");
    step.momentum = momentum;
    step.dampening = group.get("dampening");
    step.nesterov = group.get("nesterov") != 0;
    step.maximize = group.get("maximize") != 0;
    step.first_step = first_step;
    fusion::fused_sgd_step(param, grad, buffer, step, skip);
    mark_written({&param, &buffer});
    return;
  }
  OpByOpSkip flag(skip, param);
  if (flag.skipped()) return;
  flag.keep(param);
  flag.keep(buffer);
  Tensor g = effective_grad(group, param, grad);
  if (momentum != 0) {
    if (first_step) {
      buffer = g.detach().clone();
      state["momentum_buffer"] = buffer;
      flag.keep_as_zeros(buffer);
    } else {
      buffer.mul_(momentum);
      buffer.add_(g, 1.0 - group.get("dampening"));
    }
    g = group.get("nesterov") != 0 ? g.add(buffer, momentum) : buffer;
  }
  param.add_(g, -group.lr());
  flag.finish();
}

// ---- Adam / AdamW ----

Adam::Adam(std::vector<Tensor> params, AdamOptions options) : Adam(single_group(std::move(params)), options) {}
Adam::Adam(std::vector<ParamGroup> groups, AdamOptions defaults) : Adam(std::move(groups), defaults, false) {}
Adam::Adam(std::vector<ParamGroup> groups, const AdamOptions& defaults, bool decoupled)
    : Optimizer(std::move(groups), adam_options(defaults)), decoupled_weight_decay_(decoupled) {}

void Adam::update(const ParamGroup& group, Tensor& param, const Tensor& grad, std::map<std::string, Tensor>& state,
                  const Tensor& skip) {
  const double lr = group.lr(), beta1 = group.get("beta1"), beta2 = group.get("beta2");
  const double weight_decay = group.get("weight_decay");
  const bool amsgrad = group.get("amsgrad") != 0;
  if (state.empty()) {
    state["step"] = scalar_tensor(0.0, kFloat32);
    state["exp_avg"] = zeros_like(param);
    state["exp_avg_sq"] = zeros_like(param);
    if (amsgrad) state["max_exp_avg_sq"] = zeros_like(param);
  }
  const double step = increment_step(state);
  const double bias_correction1 = 1.0 - std::pow(beta1, step);
  const double bias_correction2 = 1.0 - std::pow(beta2, step);
  const double step_size = lr / bias_correction1;
  const double bias_correction2_sqrt = std::sqrt(bias_correction2);
  if (amsgrad && !state["max_exp_avg_sq"].defined()) {
    state["max_exp_avg_sq"] = zeros_like(param);  // amsgrad switched on after the first step
  }
  Tensor& exp_avg = state["exp_avg"];
  Tensor& exp_avg_sq = state["exp_avg_sq"];
  Tensor max_sq = amsgrad ? state["max_exp_avg_sq"] : Tensor();
  if (fusable(param, skip, {&grad, &exp_avg, &exp_avg_sq, &max_sq})) {
    kernels::AdamStep fused;
    fused.lr = lr;
    fused.beta1 = beta1;
    fused.beta2 = beta2;
    fused.eps = group.get("eps");
    fused.weight_decay = weight_decay;
    fused.step_size = step_size;
    fused.bias_correction2_sqrt = bias_correction2_sqrt;
    fused.decoupled = decoupled_weight_decay_;
    fused.maximize = group.get("maximize") != 0;
    fused.amsgrad = amsgrad;
    fusion::fused_adam_step(param, grad, exp_avg, exp_avg_sq, max_sq, fused, skip);
    mark_written({&param, &exp_avg, &exp_avg_sq, &max_sq});
    return;
  }
  OpByOpSkip flag(skip, param);
  if (flag.skipped()) return;
  for (const Tensor* t : {&param, &exp_avg, &exp_avg_sq, &max_sq}) flag.keep(*t);
  Tensor g = group.get("maximize") != 0 ? grad.neg() : grad;
  if (weight_decay != 0) {
    if (decoupled_weight_decay_) {
      param.mul_(1.0 - lr * weight_decay);
    } else {
      g = g.add(param, weight_decay);
    }
  }
  lerp_(exp_avg, g, 1.0 - beta1);
  decay_add_square_(exp_avg_sq, g, beta2);

  Tensor second_moment = exp_avg_sq;
  if (amsgrad) {
    max_sq.copy_(maximum(max_sq, exp_avg_sq));
    second_moment = max_sq;
  }
  Tensor denom = second_moment.sqrt() / bias_correction2_sqrt;
  denom.add_(group.get("eps"));
  param.add_(exp_avg.div(denom), -step_size);
  flag.finish();
}

AdamW::AdamW(std::vector<Tensor> params, AdamWOptions options) : AdamW(single_group(std::move(params)), options) {}
AdamW::AdamW(std::vector<ParamGroup> groups, AdamWOptions defaults)
    : Adam(std::move(groups), from_adamw(defaults), /*decoupled=*/true) {}

// ---- Adadelta ----

Adadelta::Adadelta(std::vector<Tensor> params, AdadeltaOptions options)
    : Adadelta(single_group(std::move(params)), options) {}
Adadelta::Adadelta(std::vector<ParamGroup> groups, AdadeltaOptions defaults)
    : Optimizer(std::move(groups), adadelta_options(defaults)) {}

void Adadelta::update(const ParamGroup& group, Tensor& param, const Tensor& grad, std::map<std::string, Tensor>& state,
                      const Tensor& skip) {
  if (state.empty()) {
    state["step"] = scalar_tensor(0.0, kFloat32);
    state["square_avg"] = zeros_like(param);
    state["acc_delta"] = zeros_like(param);
  }
  const double rho = group.get("rho"), eps = group.get("eps");
  increment_step(state);
  Tensor& square_avg = state["square_avg"];
  Tensor& acc_delta = state["acc_delta"];
  if (fusable(param, skip, {&grad, &square_avg, &acc_delta})) {
    kernels::AdadeltaStep fused;
    fused.lr = group.lr();
    fused.rho = rho;
    fused.eps = eps;
    fused.weight_decay = group.get("weight_decay");
    fused.maximize = group.get("maximize") != 0;
    fusion::fused_adadelta_step(param, grad, square_avg, acc_delta, fused, skip);
    mark_written({&param, &square_avg, &acc_delta});
    return;
  }
  OpByOpSkip flag(skip, param);
  if (flag.skipped()) return;
  for (const Tensor* t : {&param, &square_avg, &acc_delta}) flag.keep(*t);
  Tensor g = effective_grad(group, param, grad);
  decay_add_square_(square_avg, g, rho);
  Tensor std_dev = (square_avg + eps).sqrt();
  Tensor delta = (acc_delta + eps).sqrt();
  delta.div_(std_dev);
  delta.mul_(g);
  decay_add_square_(acc_delta, delta, rho);
  param.add_(delta, -group.lr());
  flag.finish();
}

// ---- RMSprop ----

RMSprop::RMSprop(std::vector<Tensor> params, RMSpropOptions options)
    : RMSprop(single_group(std::move(params)), options) {}
RMSprop::RMSprop(std::vector<ParamGroup> groups, RMSpropOptions defaults)
    : Optimizer(std::move(groups), rmsprop_options(defaults)) {}

void RMSprop::update(const ParamGroup& group, Tensor& param, const Tensor& grad, std::map<std::string, Tensor>& state,
                     const Tensor& skip) {
  const double alpha = group.get("alpha"), eps = group.get("eps"), momentum = group.get("momentum");
  const bool centered = group.get("centered") != 0;
  if (state.empty()) {
    state["step"] = scalar_tensor(0.0, kFloat32);
    state["square_avg"] = zeros_like(param);
    if (momentum > 0) state["momentum_buffer"] = zeros_like(param);
    if (centered) state["grad_avg"] = zeros_like(param);
  }
  increment_step(state);
  Tensor& square_avg = state["square_avg"];
  Tensor grad_avg, buffer;  // handles on the state, defined when the options use them
  if (centered) {
    Tensor& stored = state["grad_avg"];
    if (!stored.defined()) stored = zeros_like(param);  // centered switched on after the first step
    grad_avg = stored;
  }
  if (momentum > 0) {
    Tensor& stored = state["momentum_buffer"];
    if (!stored.defined()) stored = zeros_like(param);  // momentum switched on after the first step
    buffer = stored;
  }
  if (fusable(param, skip, {&grad, &square_avg, &grad_avg, &buffer})) {
    kernels::RmspropStep fused;
    fused.lr = group.lr();
    fused.alpha = alpha;
    fused.eps = eps;
    fused.weight_decay = group.get("weight_decay");
    fused.momentum = momentum;
    fused.centered = centered;
    fused.maximize = group.get("maximize") != 0;
    fusion::fused_rmsprop_step(param, grad, square_avg, grad_avg, buffer, fused, skip);
    mark_written({&param, &square_avg, &grad_avg, &buffer});
    return;
  }
  OpByOpSkip flag(skip, param);
  if (flag.skipped()) return;
  for (const Tensor* t : {&param, &square_avg, &grad_avg, &buffer}) flag.keep(*t);
  Tensor g = effective_grad(group, param, grad);
  decay_add_square_(square_avg, g, alpha);
  Tensor avg;
  if (centered) {
    lerp_(grad_avg, g, 1.0 - alpha);
    avg = square_avg.sub(grad_avg.mul(grad_avg)).sqrt();
  } else {
    avg = square_avg.sqrt();
  }
  avg.add_(eps);
  if (momentum > 0) {
    buffer.mul_(momentum);
    buffer.add_(g.div(avg));
    param.add_(buffer, -group.lr());
  } else {
    param.add_(g.div(avg), -group.lr());
  }
  flag.finish();
}

}  // namespace ember::optim
