#pragma once
// batch_norm with its momentum given as a number or as a tensor, for the BatchNorm layers.
// Internal: the public op is ember::batch_norm (ops.h), which takes a number.
#include "ember/tensor.h"

namespace ember::detail {

/// The running statistics' update factor: a number, or a 0-dim float64 tensor on the module's
/// device (BatchNorm with momentum=None, whose factor 1/num_batches_tracked the host would have to
/// wait for the device to read).
struct BatchNormMomentum {
  double value = 0;
  Tensor tensor;
};

/// ember::batch_norm with the running statistics' update factor as a BatchNormMomentum.
Tensor batch_norm_impl(const Tensor& input, const Tensor& running_mean, const Tensor& running_var, const Tensor& weight,
                       const Tensor& bias, bool training, const BatchNormMomentum& momentum, double eps);

}  // namespace ember::detail
