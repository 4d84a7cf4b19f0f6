// In-place random fills (Tensor.uniform_ / normal_ in PyTorch): one backend call into a fresh
// tensor, then one copy into the target.
#include "ops/random.h"

#include "backend/backend.h"
#include "core/check.h"
#include "core/tensor_internal.h"
#include "ember/autograd.h"

namespace ember::detail {

namespace {

// Draws into a fresh contiguous tensor (what the backend fills) and copies it in, so the
// target may have any layout and keeps its identity.
Tensor fill_random(const Tensor& tensor, const RandomArgs& args, const char* op) {
  check_defined(tensor, op);
  EMBER_CHECK(tensor.is_floating_point(), op, " expects a floating-point tensor, got ",
              scalar_type_name(tensor.dtype()));
  NoGradGuard no_grad;
  Tensor drawn = make_tensor(tensor.sizes(), tensor.dtype(), tensor.device());
  if (drawn.numel() > 0) backend_for(drawn.device()).random(view_of(drawn), args);
  Tensor target = tensor;
  target.copy_(drawn);
  return tensor;
}

}  // namespace

Tensor uniform_(const Tensor& tensor, double from, double to) {
  return fill_random(tensor, {Distribution::Uniform, from, to}, "uniform_");
}

Tensor normal_(const Tensor& tensor, double mean, double std) {
  EMBER_CHECK(std >= 0.0, "normal expects std >= 0.0, but found std ", std);
  return fill_random(tensor, {Distribution::Normal, mean, std}, "normal_");
}

}  // namespace ember::detail
