// The BatchNorm layers and nn::functional::batch_norm, which call the op (src/ops/
// normalization.cpp: its checks, the running statistics' update and NativeBatchNormBackward0).
#include "ember/nn/batchnorm.h"

#include "core/check.h"
#include "core/tensor_internal.h"
#include "ember/autograd.h"
#include "ember/factories.h"
#include "ember/ops.h"
#include "ops/normalization.h"

namespace ember::nn {

namespace functional {

Tensor batch_norm(const Tensor& input, const Tensor& running_mean, const Tensor& running_var, const Tensor& weight,
                  const Tensor& bias, bool training, double momentum, double eps) {
  return ember::batch_norm(input, running_mean, running_var, weight, bias, training, momentum, eps);
}

}  // namespace functional

BatchNormBase::BatchNormBase(int64_t num_features, double eps, std::optional<double> momentum, bool affine,
                             bool track_running_stats)
    : num_features(num_features),
      eps(eps),
      momentum(momentum),
      affine(affine),
      track_running_stats(track_running_stats) {
  EMBER_CHECK(num_features >= 0, "num_features must be non-negative, got ", num_features);
  if (affine) {
    weight = register_parameter("weight", ones({num_features}));
    bias = register_parameter("bias", zeros({num_features}));
  }
  if (track_running_stats) {
    running_mean = register_buffer("running_mean", zeros({num_features}));
    running_var = register_buffer("running_var", ones({num_features}));
    num_batches_tracked = register_buffer("num_batches_tracked", zeros({}, kInt64));
  }
}

void BatchNormBase::reset_running_stats() {
  if (!track_running_stats) return;
  NoGradGuard no_grad;
  running_mean.zero_();
  running_var.fill_(1);
  num_batches_tracked.zero_();
}

Tensor BatchNormBase::forward(const Tensor& input) {
  check_input_dim(input);
  ember::detail::BatchNormMomentum factor{momentum.value_or(0.0), Tensor()};
  if (is_training() && track_running_stats) {
    NoGradGuard no_grad;
    num_batches_tracked.add_(1);
    // momentum=None: a cumulative average, factor 1/num_batches_tracked (float64, as PyTorch's
    // Python float), computed where the count lives: reading the count back would make the host
    // wait for the device at every forward.
    if (!momentum) factor.tensor = 1.0 / num_batches_tracked.to(kFloat64);
  }
  // Without running statistics the batch's own are used in eval() as well.
  const bool use_batch_stats = is_training() || !track_running_stats;
  return ember::detail::batch_norm_impl(input, running_mean, running_var, weight, bias, use_batch_stats, factor, eps);
}

void BatchNorm1d::check_input_dim(const Tensor& input) const {
  ember::detail::check_defined(input, "BatchNorm1d");
  EMBER_CHECK(input.dim() == 2 || input.dim() == 3, "expected 2D or 3D input (got ", input.dim(), "D input)");
}

void BatchNorm2d::check_input_dim(const Tensor& input) const {
  ember::detail::check_defined(input, "BatchNorm2d");
  EMBER_CHECK(input.dim() == 4, "expected 4D input (got ", input.dim(), "D input)");
}

}  // namespace ember::nn
