// Adagrad, Adamax, NAdam and RAdam, written as torch/optim/*.py's single-tensor implementations
// write them, op for op, so that float results follow PyTorch's rounding as closely as ember's ops
// allow. The scalars PyTorch computes in Python (bias corrections, step sizes) are computed here
// on the host in double, as Python does.
#include "ember/optim/adaptive_optimizers.h"

#include <cmath>
#include <utility>

#include "core/check.h"
#include "ember/factories.h"
#include "ember/ops.h"
#include "optim/update_helpers.h"

namespace ember::optim {
namespace {

using namespace update;  // NOLINT(google-build-using-namespace): the rules' shared helpers

Options adagrad_options(const AdagradOptions& o) {
  check_lr(o.lr);
  EMBER_CHECK(o.lr_decay >= 0.0, "Invalid lr_decay value: ", python_float(o.lr_decay));
  check_weight_decay(o.weight_decay);
  EMBER_CHECK(o.initial_accumulator_value >= 0.0,
              "Invalid initial_accumulator_value value: ", python_float(o.initial_accumulator_value));
  check_eps(o.eps);
  return {{"lr", o.lr},
          {"lr_decay", o.lr_decay},
          {"eps", o.eps},
          {"weight_decay", o.weight_decay},
          {"initial_accumulator_value", o.initial_accumulator_value},
          {"maximize", flag(o.maximize)}};
}

Options adamax_options(const AdamaxOptions& o) {
  check_lr(o.lr);
  check_eps(o.eps);
  check_betas(o.beta1, o.beta2);
  check_weight_decay(o.weight_decay);
  return {{"lr", o.lr},
          {"beta1", o.beta1},
          {"beta2", o.beta2},
          {"eps", o.eps},
          {"weight_decay", o.weight_decay},
          {"maximize", flag(o.maximize)}};
}

Options nadam_options(const NAdamOptions& o) {
  check_lr(o.lr);
  check_eps(o.eps);
  check_betas(o.beta1, o.beta2);
  check_weight_decay(o.weight_decay);
  EMBER_CHECK(o.momentum_decay >= 0.0, "Invalid momentum_decay value: ", python_float(o.momentum_decay));
  return {{"lr", o.lr},
          {"beta1", o.beta1},
          {"beta2", o.beta2},
          {"eps", o.eps},
          {"weight_decay", o.weight_decay},
          {"momentum_decay", o.momentum_decay},
          {"decoupled_weight_decay", flag(o.decoupled_weight_decay)},
          {"maximize", flag(o.maximize)}};
}

Options radam_options(const RAdamOptions& o) {
  check_lr(o.lr);
  check_eps(o.eps);
  check_betas(o.beta1, o.beta2);
  check_weight_decay(o.weight_decay);
  return {{"lr", o.lr},
          {"beta1", o.beta1},
          {"beta2", o.beta2},
          {"eps", o.eps},
          {"weight_decay", o.weight_decay},
          {"decoupled_weight_decay", flag(o.decoupled_weight_decay)},
          {"maximize", flag(o.maximize)}};
}

Tensor maybe_negated(const ParamGroup& group, const Tensor& grad) {
  return group.get("maximize") != 0 ? grad.neg() : grad;
}

/// Weight decay as Adam-like rules apply it: decoupled (the parameter shrinks by lr * wd first) or
/// L2 (added to the gradient). Returns the gradient the rule goes on with.
Tensor apply_weight_decay(const ParamGroup& group, Tensor& param, const Tensor& grad) {
  const double weight_decay = group.get("weight_decay");
  if (weight_decay == 0) return grad;
  if (group.has("decoupled_weight_decay") && group.get("decoupled_weight_decay") != 0) {
    param.mul_(1.0 - group.lr() * weight_decay);
    return grad;
  }
  return grad.add(param, weight_decay);
}

}  // namespace

// ---- Adagrad ----

Adagrad::Adagrad(std::vector<Tensor> params, AdagradOptions options)
    : Adagrad(single_group(std::move(params)), options) {}
Adagrad::Adagrad(std::vector<ParamGroup> groups, AdagradOptions defaults)
    : Optimizer(std::move(groups), adagrad_options(defaults)),
      initial_accumulator_value_(defaults.initial_accumulator_value) {
  // PyTorch makes the state of every parameter here, not at its first step.
  size_t index = 0;
  for (const ParamGroup& group : param_groups()) {
    for (const Tensor& p : group.params) {
      auto& s = state(index++);
      s["step"] = zero_step();
      s["sum"] = full_like(p, initial_accumulator_value_);
    }
  }
}

void Adagrad::update(const ParamGroup& group, Tensor& param, const Tensor& grad, std::map<std::string, Tensor>& state,
                     const Tensor& skip) {
  if (state.empty()) {  // a parameter of a group added after construction
    state["step"] = zero_step();
    state["sum"] = full_like(param, initial_accumulator_value_);
  }
  OpByOpSkip flag(skip, param);
  if (flag.skipped()) return;
  Tensor& sum = state["sum"];
  flag.keep({&param, &sum});
  const double step = increment_step(state);
  Tensor g = effective_grad(group, param, grad);
  const double clr = group.lr() / (1 + (step - 1) * group.get("lr_decay"));
  sum.add_(g.mul(g));
  Tensor std_dev = sum.sqrt();
  std_dev.add_(group.get("eps"));
  param.add_(g.div(std_dev), -clr);
  flag.finish();
}

// ---- Adamax ----

Adamax::Adamax(std::vector<Tensor> params, AdamaxOptions options) : Adamax(single_group(std::move(params)), options) {}
Adamax::Adamax(std::vector<ParamGroup> groups, AdamaxOptions defaults)
    : Optimizer(std::move(groups), adamax_options(defaults)) {}

void Adamax::update(const ParamGroup& group, Tensor& param, const Tensor& grad, std::map<std::string, Tensor>& state,
                    const Tensor& skip) {
  if (state.empty()) {
    state["step"] = zero_step();
    state["exp_avg"] = zeros_like(param);
    state["exp_inf"] = zeros_like(param);
  }
  OpByOpSkip flag(skip, param);
  if (flag.skipped()) return;
  Tensor& exp_avg = state["exp_avg"];
  Tensor& exp_inf = state["exp_inf"];
  flag.keep({&param, &exp_avg, &exp_inf});
  const double beta1 = group.get("beta1"), beta2 = group.get("beta2");
  const double step = increment_step(state);
  Tensor g = maybe_negated(group, grad);
  const double weight_decay = group.get("weight_decay");
  if (weight_decay != 0) g = g.add(param, weight_decay);
  lerp_(exp_avg, g, 1.0 - beta1);
  exp_inf.mul_(beta2);
  Tensor bound = g.abs();
  bound.add_(group.get("eps"));
  exp_inf.copy_(maximum(exp_inf, bound));
  const double clr = group.lr() / (1.0 - std::pow(beta1, step));
  param.add_(exp_avg.div(exp_inf), -clr);
  flag.finish();
}

// ---- NAdam ----

NAdam::NAdam(std::vector<Tensor> params, NAdamOptions options) : NAdam(single_group(std::move(params)), options) {}
NAdam::NAdam(std::vector<ParamGroup> groups, NAdamOptions defaults)
    : Optimizer(std::move(groups), nadam_options(defaults)) {}

void NAdam::update(const ParamGroup& group, Tensor& param, const Tensor& grad, std::map<std::string, Tensor>& state,
                   const Tensor& skip) {
  // mu_product is multiplied on the host: whether the step happens must be known there.
  if (skipped(skip)) return;
  if (state.empty()) {
    state["step"] = zero_step();
    state["mu_product"] = scalar_tensor(1.0, kFloat32);
    state["exp_avg"] = zeros_like(param);
    state["exp_avg_sq"] = zeros_like(param);
  }
  Tensor& exp_avg = state["exp_avg"];
  Tensor& exp_avg_sq = state["exp_avg_sq"];
  Tensor& mu_product = state["mu_product"];
  const double lr = group.lr(), beta1 = group.get("beta1"), beta2 = group.get("beta2");
  const double momentum_decay = group.get("momentum_decay");
  const double step = increment_step(state);
  const double bias_correction2 = 1.0 - std::pow(beta2, step);
  Tensor g = apply_weight_decay(group, param, maybe_negated(group, grad));

  // The momentum cache mu_t and mu_{t+1} (Dozat's schedule), and their running product, kept in
  // the dtype of "mu_product" (float32, as PyTorch) by multiplying the tensor itself.
  const double mu = beta1 * (1.0 - 0.5 * std::pow(0.96, step * momentum_decay));
  const double mu_next = beta1 * (1.0 - 0.5 * std::pow(0.96, (step + 1) * momentum_decay));
  mu_product.mul_(mu);
  const double mu_product_value = mu_product.item<double>();
  const double mu_product_next = mu_product_value * mu_next;

  lerp_(exp_avg, g, 1.0 - beta1);
  decay_add_square_(exp_avg_sq, g, beta2);
  Tensor denom = (exp_avg_sq / bias_correction2).sqrt();
  denom.add_(group.get("eps"));
  param.add_(g.div(denom), (-lr * (1.0 - mu)) / (1.0 - mu_product_value));
  param.add_(exp_avg.div(denom), (-lr * mu_next) / (1.0 - mu_product_next));
}

Tensor NAdam::loaded_state(const std::string& name, const Tensor& saved, const Tensor& param) const {
  if (name != "mu_product") return Optimizer::loaded_state(name, saved, param);
  // Kept as saved (float32), on the CPU where the host reads it. PyTorch moves it to the
  // parameter's dtype and device, so there a float64 run continues in float64 after a load and
  // rounds differently from an unbroken run; here it continues exactly as the unbroken run.
  return saved.detach().to(Device(DeviceType::CPU), /*non_blocking=*/false, /*copy=*/true);
}

// ---- RAdam ----

RAdam::RAdam(std::vector<Tensor> params, RAdamOptions options) : RAdam(single_group(std::move(params)), options) {}
RAdam::RAdam(std::vector<ParamGroup> groups, RAdamOptions defaults)
    : Optimizer(std::move(groups), radam_options(defaults)) {}

void RAdam::update(const ParamGroup& group, Tensor& param, const Tensor& grad, std::map<std::string, Tensor>& state,
                   const Tensor& skip) {
  if (state.empty()) {
    state["step"] = zero_step();
    state["exp_avg"] = zeros_like(param);
    state["exp_avg_sq"] = zeros_like(param);
  }
  OpByOpSkip flag(skip, param);
  if (flag.skipped()) return;
  Tensor& exp_avg = state["exp_avg"];
  Tensor& exp_avg_sq = state["exp_avg_sq"];
  flag.keep({&param, &exp_avg, &exp_avg_sq});
  const double lr = group.lr(), beta1 = group.get("beta1"), beta2 = group.get("beta2");
  const double step = increment_step(state);
  Tensor g = apply_weight_decay(group, param, maybe_negated(group, grad));
  lerp_(exp_avg, g, 1.0 - beta1);
  decay_add_square_(exp_avg_sq, g, beta2);

  const double bias_correction1 = 1.0 - std::pow(beta1, step);
  const double bias_correction2 = 1.0 - std::pow(beta2, step);
  Tensor bias_corrected_exp_avg = exp_avg / bias_correction1;
  // The length of the approximated simple moving average, and its limit.
  const double rho_inf = 2.0 / (1.0 - beta2) - 1.0;
  const double rho_t = rho_inf - 2.0 * step * std::pow(beta2, step) / bias_correction2;
  if (rho_t > 5.0) {
    // The variance is tractable: rectify the adaptive step.
    const double rect = std::pow((rho_t - 4) * (rho_t - 2) * rho_inf / ((rho_inf - 4) * (rho_inf - 2) * rho_t), 0.5);
    Tensor root = exp_avg_sq.sqrt();
    root.add_(group.get("eps"));
    Tensor adaptive_lr = std::pow(bias_correction2, 0.5) / root;
    param.add_(bias_corrected_exp_avg * lr * adaptive_lr * rect, -1.0);
  } else {
    param.add_(bias_corrected_exp_avg * lr, -1.0);
  }
  flag.finish();
}

}  // namespace ember::optim
