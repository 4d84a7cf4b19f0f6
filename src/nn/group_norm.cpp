// The GroupNorm layer and nn::functional::group_norm, which calls the op (src/ops/
// normalization.cpp).
#include "core/check.h"
#include "ember/factories.h"
#include "ember/nn/functional.h"
#include "ember/nn/modules.h"
#include "ember/ops.h"

namespace ember::nn {

Tensor functional::group_norm(const Tensor& input, int64_t num_groups, const Tensor& weight, const Tensor& bias,
                              double eps) {
  return ember::group_norm(input, num_groups, weight, bias, eps);
}

GroupNorm::GroupNorm(int64_t num_groups, int64_t num_channels, double eps, bool affine)
    : GroupNorm(num_groups, num_channels, GroupNormOptions{.eps = eps, .affine = affine}) {}

GroupNorm::GroupNorm(int64_t num_groups, int64_t num_channels, GroupNormOptions options)
    : num_groups(num_groups), num_channels(num_channels), eps(options.eps), affine(options.affine) {
  EMBER_CHECK(num_groups > 0, "GroupNorm: num_groups must be positive, got ", num_groups);
  EMBER_CHECK(num_channels % num_groups == 0, "num_channels (", num_channels, ") must be divisible by num_groups (",
              num_groups, ")");
  if (affine) {
    weight = register_parameter("weight", ones({num_channels}));
    if (options.bias) bias = register_parameter("bias", zeros({num_channels}));
  }
}

Tensor GroupNorm::forward(const Tensor& input) { return functional::group_norm(input, num_groups, weight, bias, eps); }

}  // namespace ember::nn
