// Rprop and ASGD, written as torch/optim/rprop.py's and asgd.py's single-tensor implementations
// write them, op for op.
#include "ember/optim/rprop_asgd.h"

#include <algorithm>
#include <cmath>
#include <utility>

#include "core/check.h"
#include "ember/factories.h"
#include "ember/ops.h"
#include "optim/update_helpers.h"

namespace ember::optim {
namespace {

using namespace update;  // NOLINT(google-build-using-namespace): the rules' shared helpers

Options rprop_options(const RpropOptions& o) {
  check_lr(o.lr);
  EMBER_CHECK(0.0 < o.etaminus && o.etaminus < 1.0 && 1.0 < o.etaplus, "Invalid eta values: ", python_float(o.etaminus),
              ", ", python_float(o.etaplus));
  return {{"lr", o.lr},
          {"etaminus", o.etaminus},
          {"etaplus", o.etaplus},
          {"step_size_min", o.step_size_min},
          {"step_size_max", o.step_size_max},
          {"maximize", flag(o.maximize)}};
}

Options asgd_options(const ASGDOptions& o) {
  check_lr(o.lr);
  EMBER_CHECK(o.lambd >= 0.0, "Invalid lambd value: ", python_float(o.lambd));
  EMBER_CHECK(o.alpha >= 0.0, "Invalid alpha value: ", python_float(o.alpha));
  check_weight_decay(o.weight_decay);
  return {{"lr", o.lr},
          {"lambd", o.lambd},
          {"alpha", o.alpha},
          {"t0", o.t0},
          {"weight_decay", o.weight_decay},
          {"maximize", flag(o.maximize)}};
}

}  // namespace

// ---- Rprop ----

Rprop::Rprop(std::vector<Tensor> params, RpropOptions options) : Rprop(single_group(std::move(params)), options) {}
Rprop::Rprop(std::vector<ParamGroup> groups, RpropOptions defaults)
    : Optimizer(std::move(groups), rprop_options(defaults)) {}

void Rprop::update(const ParamGroup& group, Tensor& param, const Tensor& grad, std::map<std::string, Tensor>& state,
                   const Tensor& skip) {
  if (state.empty()) {
    state["step"] = zero_step();
    state["prev"] = zeros_like(param);
    state["step_size"] = full_like(grad, group.lr());
  }
  OpByOpSkip flag(skip, param);
  if (flag.skipped()) return;
  Tensor& prev = state["prev"];
  Tensor& step_size = state["step_size"];
  flag.keep({&param, &prev, &step_size});
  increment_step(state);
  const double etaminus = group.get("etaminus"), etaplus = group.get("etaplus");
  Tensor g = group.get("maximize") != 0 ? grad.neg() : grad;

  // Where the gradient kept its sign the step grows, where it flipped it shrinks; one mask after
  // the other, as PyTorch assigns them (each sees the previous one's values).
  Tensor factor = g.mul(prev).sign();
  factor.masked_fill_(factor > 0.0, etaplus);
  factor.masked_fill_(factor < 0.0, etaminus);
  factor.masked_fill_(factor == 0.0, 1.0);
  step_size.mul_(factor);
  step_size.clamp_(group.get("step_size_min"), group.get("step_size_max"));

  // After a sign flip the gradient counts as zero: no move now, and no flip seen next time.
  g = g.masked_fill(factor == etaminus, 0.0);
  param.sub_(g.sign().mul(step_size));
  prev.copy_(g);
  flag.finish();
}

// ---- ASGD ----

ASGD::ASGD(std::vector<Tensor> params, ASGDOptions options) : ASGD(single_group(std::move(params)), options) {}
ASGD::ASGD(std::vector<ParamGroup> groups, ASGDOptions defaults)
    : Optimizer(std::move(groups), asgd_options(defaults)) {}

void ASGD::update(const ParamGroup& group, Tensor& param, const Tensor& grad, std::map<std::string, Tensor>& state,
                  const Tensor& skip) {
  // eta and mu change on the host: whether the step happens must be known there.
  if (skipped(skip)) return;
  const double lr = group.lr(), lambd = group.get("lambd"), alpha = group.get("alpha"), t0 = group.get("t0");
  if (state.empty()) {
    state["step"] = zero_step();
    state["eta"] = scalar_tensor(lr, kFloat32);
    state["mu"] = scalar_tensor(1.0, kFloat32);
    state["ax"] = zeros_like(param);
  }
  Tensor& eta = state["eta"];
  Tensor& mu = state["mu"];
  Tensor& ax = state["ax"];
  const double step = increment_step(state);
  Tensor g = effective_grad(group, param, grad);

  const double eta_value = eta.item<double>();
  param.mul_(1.0 - lambd * eta_value);  // decay
  param.add_(g, -eta_value);
  // The average: a copy of the parameter until step t0, a running mean after it.
  const double mu_value = mu.item<double>();
  if (mu_value != 1.0) {
    Tensor step_to_param = param.sub(ax);
    step_to_param.mul_(mu_value);
    ax.add_(step_to_param);
  } else {
    ax.copy_(param);
  }
  // Stored in the tensors' own dtype (float32), as PyTorch's copy_ into them rounds.
  eta.fill_(lr / std::pow(1.0 + lambd * lr * step, alpha));
  mu.fill_(1.0 / std::max(1.0, step - t0));
}

Tensor ASGD::loaded_state(const std::string& name, const Tensor& saved, const Tensor& param) const {
  if (name != "eta" && name != "mu") return Optimizer::loaded_state(name, saved, param);
  // Kept as saved (float32), on the CPU where the host reads it. PyTorch moves it to the
  // parameter's dtype and device, so there a float64 run continues in float64 after a load and
  // rounds differently from an unbroken run; here it continues exactly as the unbroken run.
  return saved.detach().to(Device(DeviceType::CPU), /*non_blocking=*/false, /*copy=*/true);
}

}  // namespace ember::optim
