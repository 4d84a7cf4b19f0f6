// The Conv1d layer and nn::functional::conv1d, which call the op (src/ops/conv.cpp: conv2d over
// a height of one, with conv1d's own checks and messages).
#include <string>
#include <utility>

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

Conv1d::Conv1d(int64_t in_channels, int64_t out_channels, ExpandingSize<1> kernel_size, Conv1dOptions options)
    : in_channels(in_channels),
      out_channels(out_channels),
      kernel_size(kernel_size[0]),
      stride(options.stride[0]),
      padding(options.padding.size()),
      dilation(options.dilation[0]),
      padding_string(options.padding.mode()),
      groups(options.groups),
      padding_mode(std::move(options.padding_mode)) {
  EMBER_CHECK(kernel_size.valid(), "Conv1d: kernel_size must be a single integer or a list of one integer");
  EMBER_CHECK(options.stride.valid(), "Conv1d: stride must be a single integer or a list of one integer");
  EMBER_CHECK(options.dilation.valid(), "Conv1d: dilation must be a single integer or a list of one integer");
  EMBER_CHECK(groups > 0, "groups must be a positive integer");
  EMBER_CHECK(in_channels % groups == 0, "in_channels must be divisible by groups");
  EMBER_CHECK(out_channels % groups == 0, "out_channels must be divisible by groups");
  EMBER_CHECK(in_channels >= 0 && out_channels >= 0,
              "Conv1d: channel counts must be non-negative, got in_channels=", in_channels,
              ", out_channels=", out_channels);
  EMBER_CHECK(this->kernel_size > 0, "Conv1d: kernel_size must be positive, got ", this->kernel_size);
  if (!padding_string.empty()) {
    EMBER_CHECK(padding_string == "valid" || padding_string == "same", "Invalid padding string '", padding_string,
                "', should be one of {'same', 'valid'}");
    EMBER_CHECK(padding_string == "valid" || stride == 1, "padding='same' is not supported for strided convolutions");
    this->padding = 0;
  }
  detail::check_padding_mode(padding_mode);
  weight = register_parameter("weight", ember::empty({out_channels, in_channels / groups, this->kernel_size}));
  if (options.bias) bias = register_parameter("bias", ember::empty({out_channels}));
  reset_parameters();
}

void Conv1d::reset_parameters() { detail::reset_conv_parameters(weight, bias); }

Tensor Conv1d::forward(const Tensor& input) {
  if (padding_mode != "zeros") {
    // PyTorch pads with the mode first ("same" split with the extra element at the end), then
    // convolves without padding.
    int64_t before = padding, after = padding;
    if (padding_string == "same") {
      const int64_t total = dilation * (kernel_size - 1);
      before = total / 2;
      after = total - before;
    }
    return functional::conv1d(ember::pad(input, {before, after}, padding_mode), weight, bias, stride, 0, dilation,
                              groups);
  }
  if (!padding_string.empty()) {
    return functional::conv1d(input, weight, bias, stride, padding_string, dilation, groups);
  }
  return functional::conv1d(input, weight, bias, stride, padding, dilation, groups);
}

}  // namespace ember::nn
