// group_norm and the GroupNorm layer, composed of recorded ops (mean, subtraction, rsqrt), so
// that autograd (second order included) and every device come with them. The statistics are
// computed in float32 or float64 as the input is, over each sample's group of channels.
#include <vector>

#include "amp/autocast_policy.h"
#include "core/check.h"
#include "core/tensor_internal.h"
#include "ember/factories.h"
#include "ember/nn/functional.h"
#include "ember/nn/modules.h"
#include "ember/ops.h"

namespace ember::nn {

Tensor functional::group_norm(const Tensor& input, int64_t num_groups, const Tensor& weight, const Tensor& bias,
                              double eps) {
  if (const auto device = amp::detail::autocast_device(input, weight, bias); device && *device != kCPU) {
    return amp::detail::autocast_call(amp::detail::CastPolicy::Float32, *device, functional::group_norm, input,
                                      num_groups, weight, bias, eps);
  }
  ember::detail::check_defined(input, "group_norm");
  EMBER_CHECK(input.dim() >= 2, "Expected at least 2 dimensions for input tensor but received ", input.dim());
  const int64_t N = input.size(0), C = input.size(1);
  EMBER_CHECK(num_groups > 0, "Expected num groups to be greater than 0, got ", num_groups);
  EMBER_CHECK(C % num_groups == 0,
              "Expected number of channels in input to be divisible by num_groups, but got input of shape ",
              ember::detail::shape_str(input.sizes()), " and num_groups=", num_groups);
  EMBER_CHECK(!weight.defined() || (weight.dim() == 1 && weight.numel() == C),
              "Expected weight to be a vector of size equal to the number of channels in input, but got weight of "
              "shape ",
              ember::detail::shape_str(weight.sizes()), " and input of shape ",
              ember::detail::shape_str(input.sizes()));
  EMBER_CHECK(!bias.defined() || (bias.dim() == 1 && bias.numel() == C),
              "Expected bias to be a vector of size equal to the number of channels in input, but got bias of shape ",
              ember::detail::shape_str(bias.sizes()), " and input of shape ", ember::detail::shape_str(input.sizes()));
  EMBER_CHECK(input.is_floating_point(), "\"GroupNormKernelImpl\" not implemented for '",
              scalar_type_name(input.dtype()), "'");
  // PyTorch's _verify_batch_size: a group of one value has no variance to normalise by.
  std::vector<int64_t> group_sizes{N * C / num_groups, num_groups};
  int64_t values = group_sizes[0];
  for (int64_t d = 2; d < input.dim(); ++d) {
    group_sizes.push_back(input.size(d));
    values *= input.size(d);
  }
  EMBER_CHECK(values != 1, "Expected more than 1 value per channel when training, got input size ",
              ember::detail::shape_str(group_sizes));
  // [N, G, C/G * spatial]: each row is one sample's group.
  const Tensor grouped = input.reshape({N, num_groups, -1});
  const Tensor mean = grouped.mean({2}, true);
  const Tensor centred = grouped - mean;
  const Tensor var = (centred * centred).mean({2}, true);
  Tensor out = (centred * rsqrt(var + eps)).reshape(input.sizes());
  if (weight.defined() || bias.defined()) {
    std::vector<int64_t> per_channel(static_cast<size_t>(input.dim()), 1);
    per_channel[1] = C;
    if (weight.defined()) out = out * weight.reshape(per_channel);
    if (bias.defined()) out = out + bias.reshape(per_channel);
  }
  return out;
}

GroupNorm::GroupNorm(int64_t num_groups, int64_t num_channels, double eps, bool affine)
    : num_groups(num_groups), num_channels(num_channels), eps(eps) {
  EMBER_CHECK(num_groups > 0, "GroupNorm: num_groups must be positive, got ", num_groups);
  EMBER_CHECK(num_channels % num_groups == 0, "num_channels (", num_channels, ") must be divisible by num_groups (",
              num_groups, ")");
  if (affine) {
    weight = register_parameter("weight", ones({num_channels}));
    bias = register_parameter("bias", zeros({num_channels}));
  }
}

Tensor GroupNorm::forward(const Tensor& input) { return functional::group_norm(input, num_groups, weight, bias, eps); }

}  // namespace ember::nn
