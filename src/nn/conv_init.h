#pragma once
// The initialisation Conv1d and Conv2d share, PyTorch's _ConvNd.reset_parameters.
#include <cmath>
#include <cstdint>

#include "ember/nn/init.h"
#include "ember/tensor.h"

namespace ember::nn::detail {

/// kaiming_uniform_(a = √5) for weight, then uniform(±1/√fan_in) for bias when it is defined,
/// drawn in that order.
inline void reset_conv_parameters(const Tensor& weight, const Tensor& bias) {
  init::kaiming_uniform_(weight, std::sqrt(5.0));
  if (!bias.defined()) return;
  const int64_t fan_in = init::calculate_fan_in_and_fan_out(weight).first;
  if (fan_in == 0) return;
  const double bound = 1.0 / std::sqrt(static_cast<double>(fan_in));
  init::uniform_(bias, -bound, bound);
}

}  // namespace ember::nn::detail
