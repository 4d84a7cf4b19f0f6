// conv1d and the Conv1d layer: a 1-D convolution is a 2-D one over a height of one, so it runs on
// conv2d's kernels (oneDNN, cuDNN) and its ConvolutionBackward0. The checks are made here first,
// in 1-D terms and with PyTorch's conv1d messages, so that no error speaks of a height the user
// never gave.
#include <cmath>
#include <string>

#include "amp/autocast_policy.h"
#include "core/check.h"
#include "core/tensor_internal.h"
#include "ember/factories.h"
#include "ember/nn/conv.h"
#include "ember/nn/init.h"
#include "nn/conv_init.h"

namespace ember::nn {

namespace functional {
namespace {

void check_conv1d(const Tensor& input, const Tensor& weight, const Tensor& bias, int64_t stride, int64_t padding,
                  int64_t dilation, int64_t groups) {
  ember::detail::check_defined(input, "conv1d");
  ember::detail::check_defined(weight, "conv1d");
  EMBER_CHECK(input.dim() == 2 || input.dim() == 3,
              "Expected 2D (unbatched) or 3D (batched) input to conv1d, but got input of size: ",
              ember::detail::shape_str(input.sizes()));
  EMBER_CHECK(weight.dim() == 3, "Expected 3-dimensional weight [out_channels, in_channels/groups, kernel_size] for ",
              "conv1d, but got weight of size ", ember::detail::shape_str(weight.sizes()));
  EMBER_CHECK(groups > 0, "non-positive groups is not supported");
  EMBER_CHECK(padding >= 0, "negative padding is not supported");
  EMBER_CHECK(stride > 0, "non-positive stride is not supported");
  EMBER_CHECK(dilation > 0, "dilation should be greater than zero, but got [", dilation, "]");
  const Tensor batched = input.dim() == 3 ? input : input.unsqueeze(0);
  const IntList w = weight.sizes();
  EMBER_CHECK(w[0] % groups == 0, "Given groups=", groups, ", expected weight to be divisible by ", groups,
              " at dimension 0, but got weight of size [", ember::detail::shape_str(w), "] instead");
  EMBER_CHECK(batched.size(1) == w[1] * groups, "Given groups=", groups, ", weight of size ",
              ember::detail::shape_str(w), ", expected input", ember::detail::shape_str(batched.sizes()), " to have ",
              w[1] * groups, " channels, but got ", batched.size(1), " channels instead");
  EMBER_CHECK(!bias.defined() || (bias.dim() == 1 && bias.size(0) == w[0]), "Given weight of size ",
              ember::detail::shape_str(w), ", expected bias to be 1-dimensional with ", w[0],
              " elements, but got bias of size ", ember::detail::shape_str(bias.sizes()), " instead");
  const int64_t padded = batched.size(2) + 2 * padding, extent = dilation * (w[2] - 1) + 1;
  EMBER_CHECK(padded >= extent, "Calculated padded input size per channel: (", padded, "). Kernel size: (", extent,
              "). Kernel size can't be greater than actual input size");
}

/// The [.., C, L] result of conv2d on [.., C, 1, L]: the height of one dropped again.
Tensor as_1d(const Tensor& out2d) { return out2d.squeeze(-2); }

}  // namespace

Tensor conv1d(const Tensor& input, const Tensor& weight, const Tensor& bias, int64_t stride, int64_t padding,
              int64_t dilation, int64_t groups) {
  if (const auto device = amp::detail::autocast_device(input, weight, bias)) {
    auto run = [&](const Tensor& x, const Tensor& w, const Tensor& b) {
      return conv1d(x, w, b, stride, padding, dilation, groups);
    };
    return amp::detail::autocast_call(amp::detail::CastPolicy::LowerPrecision, *device, run, input, weight, bias);
  }
  check_conv1d(input, weight, bias, stride, padding, dilation, groups);
  return as_1d(
      conv2d(input.unsqueeze(-2), weight.unsqueeze(2), bias, {1, stride}, {0, padding}, {1, dilation}, groups));
}

namespace detail {

Tensor conv1d_padding_string(const Tensor& input, const Tensor& weight, const Tensor& bias, int64_t stride,
                             std::string_view padding, int64_t dilation, int64_t groups) {
  if (const auto device = amp::detail::autocast_device(input, weight, bias)) {
    return amp::detail::autocast_call(amp::detail::CastPolicy::LowerPrecision, *device, conv1d_padding_string, input,
                                      weight, bias, stride, padding, dilation, groups);
  }
  EMBER_CHECK(padding == "valid" || padding == "same", "Invalid padding string: '", padding, "'");
  check_conv1d(input, weight, bias, stride, 0, dilation, groups);
  if (padding == "same") EMBER_CHECK(stride == 1, "padding='same' is not supported for strided convolutions");
  // "same" pads the (unit) height by nothing, since its kernel height is one.
  return as_1d(conv2d(input.unsqueeze(-2), weight.unsqueeze(2), bias, {1, stride}, padding, {1, dilation}, groups));
}

}  // namespace detail
}  // namespace functional

Conv1d::Conv1d(int64_t in_channels, int64_t out_channels, int64_t kernel_size, int64_t stride, Conv1dPadding padding,
               int64_t dilation, int64_t groups, bool bias)
    : in_channels(in_channels),
      out_channels(out_channels),
      kernel_size(kernel_size),
      stride(stride),
      padding(padding.size()),
      dilation(dilation),
      padding_string(padding.mode()),
      groups(groups) {
  EMBER_CHECK(groups > 0, "groups must be a positive integer");
  EMBER_CHECK(in_channels % groups == 0, "in_channels must be divisible by groups");
  EMBER_CHECK(out_channels % groups == 0, "out_channels must be divisible by groups");
  EMBER_CHECK(in_channels >= 0 && out_channels >= 0,
              "Conv1d: channel counts must be non-negative, got in_channels=", in_channels,
              ", out_channels=", out_channels);
  EMBER_CHECK(kernel_size > 0, "Conv1d: kernel_size must be positive, got ", kernel_size);
  if (!padding_string.empty()) {
    EMBER_CHECK(padding_string == "valid" || padding_string == "same", "Invalid padding string '", padding_string,
                "', should be one of {'same', 'valid'}");
    EMBER_CHECK(padding_string == "valid" || stride == 1, "padding='same' is not supported for strided convolutions");
    this->padding = 0;
  }
  weight = register_parameter("weight", ember::empty({out_channels, in_channels / groups, kernel_size}));
  if (bias) this->bias = register_parameter("bias", ember::empty({out_channels}));
  reset_parameters();
}

void Conv1d::reset_parameters() { detail::reset_conv_parameters(weight, bias); }

Tensor Conv1d::forward(const Tensor& input) {
  if (!padding_string.empty()) {
    return functional::conv1d(input, weight, bias, stride, padding_string, dilation, groups);
  }
  return functional::conv1d(input, weight, bias, stride, padding, dilation, groups);
}

}  // namespace ember::nn
