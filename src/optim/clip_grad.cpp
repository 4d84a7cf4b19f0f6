#include "ember/optim/clip_grad.h"

#include <cmath>
#include <optional>

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

void clip_grad_value_(const std::vector<Tensor>& params, double clip_value) {
  NoGradGuard no_grad;
  for (const Tensor& p : params) {
    Tensor g = p.grad();
    if (g.defined()) g.clamp_(-clip_value, clip_value);
  }
}

namespace {

/// PyTorch's _check_param_device: every parameter on the first one's device.
void check_same_device(const Tensor& param, std::optional<Device>& first) {
  if (!first) {
    first = param.device();
    return;
  }
  if (param.device() != *first) {
    EMBER_CHECK(false, "Found two parameters on different devices, this is currently not supported.");
  }
}

}  // namespace

Tensor parameters_to_vector(const std::vector<Tensor>& params) {
  std::optional<Device> device;
  std::vector<Tensor> views;
  for (const Tensor& p : params) {
    check_same_device(p, device);
    views.push_back(p.view({-1}));
  }
  return cat(views);
}

void vector_to_parameters(const Tensor& vec, const std::vector<Tensor>& params) {
  EMBER_CHECK(vec.defined(), "expected torch.Tensor, but got: NoneType");
  std::optional<Device> device;
  int64_t total = 0;
  for (const Tensor& p : params) {
    check_same_device(p, device);
    total += p.numel();
  }
  EMBER_CHECK(vec.dim() == 1 && vec.numel() >= total, "vector_to_parameters: the vector of size ",
              detail::shape_str(vec.sizes()), " does not hold the parameters' ", total, " elements");
  NoGradGuard no_grad;
  int64_t pointer = 0;
  for (const Tensor& p : params) {
    const int64_t n = p.numel();
    Tensor(p).copy_(vec.narrow(0, pointer, n).view(p.sizes()));
    pointer += n;
  }
}

}  // namespace ember::optim
