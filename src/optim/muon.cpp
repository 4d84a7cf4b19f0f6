// Muon, written as torch/optim/_muon.py writes it, op for op.
#include "ember/optim/muon.h"

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

double adjust_lr_code(const std::string& name) {
  if (name.empty()) return kMuonAdjustLrNone;
  if (name == "original") return kMuonAdjustLrOriginal;
  if (name == "match_rms_adamw") return kMuonAdjustLrMatchRmsAdamW;
  if (name == "spectral_unclamped") return kMuonAdjustLrSpectralUnclamped;
  EMBER_CHECK(false, "Adjust learning rate function ", name, " is not supported");
  return 0;
}

Options muon_options(const MuonOptions& o) {
  EMBER_CHECK(o.lr >= 0.0, "Learning rate should be >= 0 but is: ", python_float(o.lr));
  EMBER_CHECK(o.momentum >= 0.0, "momentum should be >= 0 but is: ", python_float(o.momentum));
  EMBER_CHECK(o.weight_decay >= 0.0, "weight decay should be >= 0 but is: ", python_float(o.weight_decay));
  const double adjust = adjust_lr_code(o.adjust_lr_fn);
  return {{"lr", o.lr},
          {"weight_decay", o.weight_decay},
          {"momentum", o.momentum},
          {"nesterov", flag(o.nesterov)},
          {"ns_a", o.ns_a},
          {"ns_b", o.ns_b},
          {"ns_c", o.ns_c},
          {"eps", o.eps},
          {"ns_steps", static_cast<double>(o.ns_steps)},
          {"adjust_lr_fn", adjust}};
}

/// The learning rate scaled for the matrix's shape [rows, cols], so that updates of rectangular
/// matrices have comparable sizes.
double adjusted_lr(double lr, double adjust_lr_fn, double rows, double cols) {
  double ratio = 1.0;
  if (adjust_lr_fn == kMuonAdjustLrNone || adjust_lr_fn == kMuonAdjustLrOriginal) {
    ratio = std::sqrt(std::max(1.0, rows / cols));  // Keller Jordan's
  } else if (adjust_lr_fn == kMuonAdjustLrMatchRmsAdamW) {
    ratio = 0.2 * std::sqrt(std::max(rows, cols));  // Moonshot's: AdamW's RMS
  } else if (adjust_lr_fn == kMuonAdjustLrSpectralUnclamped) {
    ratio = std::sqrt(rows / cols);  // Bernstein's
  }
  return lr * ratio;
}

}  // namespace

Tensor zeropower_via_newtonschulz(const Tensor& grad, double a, double b, double c, int64_t ns_steps, double eps) {
  EMBER_CHECK(ns_steps < 100, "Number of steps must be less than 100 for computational efficiency");
  EMBER_CHECK(grad.dim() == 2, "Input tensor gradient must be a 2D matrix");
  Tensor x = grad.to(kBFloat16, /*non_blocking=*/false, /*copy=*/true);
  const bool tall = grad.size(0) > grad.size(1);
  if (tall) x = x.t();
  // The spectral norm is at most the Frobenius norm: scaled by it, X's is at most 1.
  x = x.div(x.norm().clamp(eps));
  for (int64_t i = 0; i < ns_steps; ++i) {
    Tensor gram = x.mm(x.t());
    Tensor gram_update = addmm(gram, gram, gram, b, c);
    x = addmm(x, gram_update, x, a);
  }
  return tall ? x.t() : x;
}

Muon::Muon(std::vector<Tensor> params, MuonOptions options) : Muon(single_group(std::move(params)), options) {}
Muon::Muon(std::vector<ParamGroup> groups, MuonOptions defaults)
    : Optimizer(std::move(groups), muon_options(defaults)) {
  for (const ParamGroup& group : param_groups()) {
    for (const Tensor& p : group.params) {
      EMBER_CHECK(p.dim() == 2,
                  "Muon only supports 2D parameters whereas we found a parameter with size: ", "torch.Size(",
                  detail::shape_str(p.sizes()), ")");
    }
  }
}

void Muon::update(const ParamGroup& group, Tensor& param, const Tensor& grad, std::map<std::string, Tensor>& state,
                  const Tensor& skip) {
  EMBER_CHECK(grad.dim() == 2, "Param gradient must be a 2D matrix");
  Tensor& buffer = state["momentum_buffer"];
  if (!buffer.defined()) buffer = zeros_like(grad);
  OpByOpSkip flag(skip, param);
  if (flag.skipped()) return;
  flag.keep({&param, &buffer});
  const double lr = group.lr(), momentum = group.get("momentum");
  lerp_(buffer, grad, 1.0 - momentum);
  Tensor direction = buffer;
  if (group.get("nesterov") != 0) {
    direction = grad.clone();
    lerp_(direction, buffer, momentum);
  }
  Tensor orthogonal = zeropower_via_newtonschulz(direction, group.get("ns_a"), group.get("ns_b"), group.get("ns_c"),
                                                 static_cast<int64_t>(group.get("ns_steps")), group.get("eps"));
  const double step_lr = adjusted_lr(lr, group.get("adjust_lr_fn"), static_cast<double>(param.size(0)),
                                     static_cast<double>(param.size(1)));
  param.mul_(1.0 - lr * group.get("weight_decay"));
  param.add_(orthogonal.to(param.dtype()), -step_lr);
  flag.finish();
}

}  // namespace ember::optim
