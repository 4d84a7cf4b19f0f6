#include "ember/optim/clip_grad.h"

#include <cmath>

#include "core/check.h"
#include "ember/autograd.h"
#include "ember/dtype.h"
#include "ember/factories.h"
#include "ember/ops.h"
#include "ember/optim/optimizer.h"

namespace ember::optim {

Tensor clip_grad_norm_(const std::vector<Tensor>& params, double max_norm, double norm_type, bool error_if_nonfinite) {
  NoGradGuard no_grad;
  std::vector<Tensor> grads;
  for (const Tensor& p : params) {
    Tensor g = p.grad();
    if (g.defined()) grads.push_back(g);
  }
  if (grads.empty()) return scalar_tensor(0.0, kFloat32);

  Dtype dtype = grads[0].dtype();
  for (const Tensor& g : grads) dtype = promote_types(dtype, g.dtype());
  std::vector<Tensor> norms;
  for (const Tensor& g : grads) norms.push_back(ember::vector_norm(g.detach(), norm_type).to(grads[0].device(), dtype));
  Tensor total_norm = norms.size() == 1 ? norms[0] : ember::vector_norm(stack(norms), norm_type);

  if (error_if_nonfinite) {
    double value = total_norm.item<double>();
    EMBER_CHECK(std::isfinite(value), "The total norm of order ", python_float(norm_type),
                " for gradients from `parameters` is non-finite, so it cannot be clipped. To disable this error and "
                "scale the gradients by the non-finite norm anyway, set `error_if_nonfinite=False`");
  }
  // Always scales, even by 1, as PyTorch does (so a NaN norm spreads to the gradients).
  Tensor clip_coef = clamp(max_norm / (total_norm + 1e-6), std::nullopt, Scalar(1.0));
  for (Tensor& g : grads) g.mul_(clip_coef.to(g.device(), g.dtype()));
  return total_norm;
}

}  // namespace ember::optim
