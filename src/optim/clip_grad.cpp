#include "ember/optim/clip_grad.h"

#include <cmath>

#include "core/check.h"
#include "ember/autograd.h"
#include "ember/dtype.h"
#include "ember/factories.h"
#include "ember/ops.h"
#include "ember/optim/optimizer.h"

namespace ember::optim {
namespace {

/// torch.linalg.vector_norm(x, ord) over all elements.
Tensor vector_norm(const Tensor& x, double ord) {
  if (std::isinf(ord)) return ord > 0 ? x.abs().max() : x.abs().min();
  if (ord == 0) return x.ne(zeros_like(x)).to(x.dtype()).sum();
  if (ord == 1) return x.abs().sum();
  if (ord == 2) return x.mul(x).sum().sqrt();
  return x.abs().pow(ord).sum().pow(1.0 / ord);
}

}  // namespace

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
  for (const Tensor& g : grads) norms.push_back(vector_norm(g.detach(), norm_type).to(grads[0].device(), dtype));
  Tensor total_norm = norms.size() == 1 ? norms[0] : vector_norm(stack(norms), norm_type);

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
