// The Conv2d layer and nn::functional::conv2d, which call the op (src/ops/conv.cpp: its checks,
// the backend call and ConvolutionBackward0).
#include "ember/nn/conv.h"

#include <string>
#include <utility>
#include <vector>

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

namespace detail {

void check_padding_mode(const std::string& padding_mode) {
  EMBER_CHECK(
      padding_mode == "zeros" || padding_mode == "reflect" || padding_mode == "replicate" || padding_mode == "circular",
      "padding_mode must be one of {'reflect', 'circular', 'zeros', 'replicate'}, but got padding_mode='", padding_mode,
      "'");
}

}  // namespace detail

// ---------------------------------------------------------------- Conv2d

namespace {

void take_pair(const Size2d& given, const char* name, int64_t (&into)[2]) {
  EMBER_CHECK(given.valid(), "Conv2d: ", name, " must be a single integer or a list of 2 integers");
  into[0] = given[0];
  into[1] = given[1];
}

}  // namespace

Conv2d::Conv2d(int64_t in_channels, int64_t out_channels, Size2d kernel_size, Conv2dOptions options)
    : in_channels(in_channels),
      out_channels(out_channels),
      padding_string(options.padding.mode()),
      groups(options.groups),
      padding_mode(std::move(options.padding_mode)) {
  take_pair(kernel_size, "kernel_size", this->kernel_size);
  take_pair(options.stride, "stride", this->stride);
  take_pair(options.dilation, "dilation", this->dilation);
  EMBER_CHECK(groups > 0, "groups must be a positive integer");
  EMBER_CHECK(in_channels % groups == 0, "in_channels must be divisible by groups");
  EMBER_CHECK(out_channels % groups == 0, "out_channels must be divisible by groups");
  EMBER_CHECK(in_channels >= 0 && out_channels >= 0,
              "Conv2d: channel counts must be non-negative, got in_channels=", in_channels,
              ", out_channels=", out_channels);
  EMBER_CHECK(this->kernel_size[0] > 0 && this->kernel_size[1] > 0, "Conv2d: kernel_size must be positive, got [",
              this->kernel_size[0], ", ", this->kernel_size[1], "]");
  if (padding_string.empty()) {
    take_pair(options.padding.size(), "padding", this->padding);
  } else {
    EMBER_CHECK(padding_string == "valid" || padding_string == "same", "Invalid padding string '", padding_string,
                "', should be one of {'same', 'valid'}");
    EMBER_CHECK(padding_string == "valid" || (this->stride[0] == 1 && this->stride[1] == 1),
                "padding='same' is not supported for strided convolutions");
    this->padding[0] = this->padding[1] = 0;
  }
  detail::check_padding_mode(padding_mode);
  weight = register_parameter(
      "weight", ember::empty({out_channels, in_channels / groups, this->kernel_size[0], this->kernel_size[1]}));
  if (options.bias) bias = register_parameter("bias", ember::empty({out_channels}));
  reset_parameters();
}

void Conv2d::reset_parameters() { detail::reset_conv_parameters(weight, bias); }

Tensor Conv2d::forward(const Tensor& input) {
  if (padding_mode != "zeros") {
    // PyTorch's _reversed_padding_repeated_twice: width's padding, then height's ("same" split
    // with the extra element at the end), applied with the mode; then no padding in the conv.
    std::vector<int64_t> pads;
    for (int i = 1; i >= 0; --i) {
      int64_t before = padding[i], after = padding[i];
      if (padding_string == "same") {
        const int64_t total = dilation[i] * (kernel_size[i] - 1);
        before = total / 2;
        after = total - before;
      }
      pads.push_back(before);
      pads.push_back(after);
    }
    return functional::conv2d(ember::pad(input, pads, padding_mode), weight, bias, stride, {0}, dilation, groups);
  }
  if (!padding_string.empty()) {
    return functional::conv2d(input, weight, bias, stride, padding_string, dilation, groups);
  }
  return functional::conv2d(input, weight, bias, stride, padding, dilation, groups);
}

}  // namespace ember::nn
