// The Conv1d layer and nn::functional::conv1d, which call the op (src/ops/conv.cpp: conv2d over
// a height of one, with conv1d's own checks and messages).
#include <string>

#include "core/check.h"
#include "ember/factories.h"
#include "ember/nn/conv.h"
#include "ember/ops.h"
#include "nn/conv_init.h"
#include "ops/conv.h"

namespace ember::nn {

namespace functional {

Tensor conv1d(const Tensor& input, const Tensor& weight, const Tensor& bias, int64_t stride, int64_t padding,
              int64_t dilation, int64_t groups) {
  return ember::conv1d(input, weight, bias, stride, padding, dilation, groups);
}

namespace detail {

Tensor conv1d_padding_string(const Tensor& input, const Tensor& weight, const Tensor& bias, int64_t stride,
                             std::string_view padding, int64_t dilation, int64_t groups) {
  return ember::detail::conv1d_padding_string(input, weight, bias, stride, padding, dilation, groups);
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
