// The Conv2d layer and nn::functional::conv2d, which call the op (src/ops/conv.cpp: its checks,
// the backend call and ConvolutionBackward0).
#include "ember/nn/conv.h"

#include <algorithm>

#include "core/check.h"
#include "ember/factories.h"
#include "ember/ops.h"
#include "nn/conv_init.h"
#include "ops/conv.h"

namespace ember::nn {

namespace functional {

Tensor conv2d(const Tensor& input, const Tensor& weight, const Tensor& bias, IntList stride, IntList padding,
              IntList dilation, int64_t groups) {
  return ember::conv2d(input, weight, bias, stride, padding, dilation, groups);
}

namespace detail {

Tensor conv2d_padding_string(const Tensor& input, const Tensor& weight, const Tensor& bias, IntList stride,
                             std::string_view padding, IntList dilation, int64_t groups) {
  return ember::detail::conv2d_padding_string(input, weight, bias, stride, padding, dilation, groups);
}

}  // namespace detail
}  // namespace functional

// ---------------------------------------------------------------- Conv2d

Size2d::Size2d(std::initializer_list<int64_t> list) : count_(std::min<size_t>(list.size(), 3)) {
  if (list.size() >= 1) values_[0] = values_[1] = *list.begin();
  if (list.size() >= 2) values_[1] = *(list.begin() + 1);
}

namespace {

void take_pair(const Size2d& given, const char* name, int64_t (&into)[2]) {
  EMBER_CHECK(given.count() == 1 || given.count() == 2, "Conv2d: ", name,
              " must be a single integer or a list of 2 integers");
  into[0] = given[0];
  into[1] = given[1];
}

}  // namespace

Conv2d::Conv2d(int64_t in_channels, int64_t out_channels, Size2d kernel_size, Size2d stride, Conv2dPadding padding,
               Size2d dilation, int64_t groups, bool bias)
    : in_channels(in_channels), out_channels(out_channels), padding_string(padding.mode()), groups(groups) {
  take_pair(kernel_size, "kernel_size", this->kernel_size);
  take_pair(stride, "stride", this->stride);
  take_pair(dilation, "dilation", this->dilation);
  EMBER_CHECK(groups > 0, "groups must be a positive integer");
  EMBER_CHECK(in_channels % groups == 0, "in_channels must be divisible by groups");
  EMBER_CHECK(out_channels % groups == 0, "out_channels must be divisible by groups");
  EMBER_CHECK(in_channels >= 0 && out_channels >= 0,
              "Conv2d: channel counts must be non-negative, got in_channels=", in_channels,
              ", out_channels=", out_channels);
  EMBER_CHECK(this->kernel_size[0] > 0 && this->kernel_size[1] > 0, "Conv2d: kernel_size must be positive, got [",
              this->kernel_size[0], ", ", this->kernel_size[1], "]");
  if (padding_string.empty()) {
    take_pair(padding.size(), "padding", this->padding);
  } else {
    EMBER_CHECK(padding_string == "valid" || padding_string == "same", "Invalid padding string '", padding_string,
                "', should be one of {'same', 'valid'}");
    EMBER_CHECK(padding_string == "valid" || (this->stride[0] == 1 && this->stride[1] == 1),
                "padding='same' is not supported for strided convolutions");
    this->padding[0] = this->padding[1] = 0;
  }
  weight = register_parameter(
      "weight", ember::empty({out_channels, in_channels / groups, this->kernel_size[0], this->kernel_size[1]}));
  if (bias) this->bias = register_parameter("bias", ember::empty({out_channels}));
  reset_parameters();
}

void Conv2d::reset_parameters() { detail::reset_conv_parameters(weight, bias); }

Tensor Conv2d::forward(const Tensor& input) {
  if (!padding_string.empty()) {
    return functional::conv2d(input, weight, bias, stride, padding_string, dilation, groups);
  }
  return functional::conv2d(input, weight, bias, stride, padding, dilation, groups);
}

}  // namespace ember::nn
