// The 1-D and 2-D pooling layers and nn::functional's pooling functions, which call the ops
// (src/ops/pooling.cpp: checks, the backend call and the recorded backward).
#include "ember/nn/pooling.h"

#include <utility>
#include <vector>

#include "core/check.h"
#include "ember/ops.h"
#include "ember/pool1d.h"

namespace ember::nn {

namespace functional {

Tensor max_pool2d(const Tensor& input, IntList kernel_size, IntList stride, IntList padding, IntList dilation,
                  bool ceil_mode) {
  return ember::max_pool2d(input, kernel_size, stride, padding, dilation, ceil_mode);
}

std::tuple<Tensor, Tensor> max_pool2d_with_indices(const Tensor& input, IntList kernel_size, IntList stride,
                                                   IntList padding, IntList dilation, bool ceil_mode) {
  return ember::max_pool2d_with_indices(input, kernel_size, stride, padding, dilation, ceil_mode);
}

Tensor avg_pool2d(const Tensor& input, IntList kernel_size, IntList stride, IntList padding, bool ceil_mode,
                  bool count_include_pad, std::optional<int64_t> divisor_override) {
  return ember::avg_pool2d(input, kernel_size, stride, padding, ceil_mode, count_include_pad, divisor_override);
}

Tensor adaptive_avg_pool2d(const Tensor& input, IntList output_size) {
  return ember::adaptive_avg_pool2d(input, output_size);
}

Tensor max_pool1d(const Tensor& input, IntList kernel_size, IntList stride, IntList padding, IntList dilation,
                  bool ceil_mode) {
  return ember::max_pool1d(input, kernel_size, stride, padding, dilation, ceil_mode);
}

std::tuple<Tensor, Tensor> max_pool1d_with_indices(const Tensor& input, IntList kernel_size, IntList stride,
                                                   IntList padding, IntList dilation, bool ceil_mode) {
  return ember::max_pool1d_with_indices(input, kernel_size, stride, padding, dilation, ceil_mode);
}

Tensor avg_pool1d(const Tensor& input, IntList kernel_size, IntList stride, IntList padding, bool ceil_mode,
                  bool count_include_pad) {
  return ember::avg_pool1d(input, kernel_size, stride, padding, ceil_mode, count_include_pad);
}

Tensor adaptive_avg_pool1d(const Tensor& input, IntList output_size) {
  return ember::adaptive_avg_pool1d(input, output_size);
}

}  // namespace functional

namespace {

/// The D values of a size, or a refusal with `message` (PyTorch's, which its functional gives),
/// followed by the number of values given and `after_count` when that is not null.
template <size_t D>
std::vector<int64_t> values_of(const ExpandingSize<D>& size, const char* message, const char* after_count = nullptr) {
  if (after_count) {
    EMBER_CHECK(size.valid(), message, size.given(), after_count);
  } else {
    EMBER_CHECK(size.valid(), message);
  }
  return size.vec();
}

/// A stride: empty when omitted ({}, PyTorch's None), else its D values.
template <size_t D>
std::vector<int64_t> stride_of(const ExpandingSize<D>& stride, const char* message, const char* after_count = nullptr) {
  if (stride.given() == 0) return {};
  return values_of(stride, message, after_count);
}

}  // namespace

MaxPool2d::MaxPool2d(ExpandingSize<2> kernel_size, MaxPool2dOptions options)
    : kernel_size(
          values_of(kernel_size, "max_pool2d: kernel_size must either be a single int, or a tuple of two ints")),
      stride(
          stride_of(options.stride, "max_pool2d: stride must either be omitted, a single int, or a tuple of two ints")),
      padding(values_of(options.padding, "max_pool2d: padding must either be a single int, or a tuple of two ints")),
      dilation(values_of(options.dilation, "max_pool2d: dilation must be either a single int, or a tuple of two ints")),
      return_indices(options.return_indices),
      ceil_mode(options.ceil_mode) {}

Tensor MaxPool2d::forward(const Tensor& input) {
  EMBER_CHECK(!return_indices,
              "MaxPool2d(return_indices=true) returns (output, indices): call forward_with_indices instead of forward");
  return functional::max_pool2d(input, kernel_size, stride, padding, dilation, ceil_mode);
}

std::tuple<Tensor, Tensor> MaxPool2d::forward_with_indices(const Tensor& input) {
  return functional::max_pool2d_with_indices(input, kernel_size, stride, padding, dilation, ceil_mode);
}

AvgPool2d::AvgPool2d(ExpandingSize<2> kernel_size, AvgPool2dOptions options)
    : kernel_size(
          values_of(kernel_size, "avg_pool2d: kernel_size must either be a single int, or a tuple of two ints")),
      stride(
          stride_of(options.stride, "avg_pool2d: stride must either be omitted, a single int, or a tuple of two ints")),
      padding(values_of(options.padding, "avg_pool2d: padding must either be a single int, or a tuple of two ints")),
      ceil_mode(options.ceil_mode),
      count_include_pad(options.count_include_pad),
      divisor_override(options.divisor_override) {}

Tensor AvgPool2d::forward(const Tensor& input) {
  return functional::avg_pool2d(input, kernel_size, stride, padding, ceil_mode, count_include_pad, divisor_override);
}

AdaptiveAvgPool2d::AdaptiveAvgPool2d(ExpandingSize<2> output_size)
    : output_size(values_of(output_size, "adaptive_avg_pool2d: output_size must be 2")) {}

MaxPool1d::MaxPool1d(ExpandingSize<1> kernel_size, MaxPool1dOptions options)
    : kernel_size(values_of(kernel_size,
                            "max_pool1d() kernel_size must be an int, list of ints or tuple of ints of size 1 but got "
                            "size ",
                            "")),
      stride(stride_of(options.stride,
                       "max_pool1d() stride must be None, an int, list of ints, or tuple of ints of size 1 but got "
                       "size ",
                       "")),
      padding(values_of(options.padding,
                        "max_pool1d() padding must be an int, list of ints, or tuple of ints of size 1 but got size ",
                        "")),
      dilation(values_of(options.dilation,
                         "max_pool1d() dilation must be an int, list of ints or tuple of ints of size 1 but got size ",
                         "")),
      return_indices(options.return_indices),
      ceil_mode(options.ceil_mode) {}

Tensor MaxPool1d::forward(const Tensor& input) {
  EMBER_CHECK(!return_indices,
              "MaxPool1d(return_indices=true) returns (output, indices): call forward_with_indices instead of forward");
  return functional::max_pool1d(input, kernel_size, stride, padding, dilation, ceil_mode);
}

std::tuple<Tensor, Tensor> MaxPool1d::forward_with_indices(const Tensor& input) {
  return functional::max_pool1d_with_indices(input, kernel_size, stride, padding, dilation, ceil_mode);
}

// PyTorch's AvgPool1d stores stride = kernel_size when none is given; the op does the same.
AvgPool1d::AvgPool1d(ExpandingSize<1> kernel_size, AvgPool1dOptions options)
    : kernel_size(values_of(kernel_size, "avg_pool1d() argument 'kernel_size' should contain one int (got ", ")")),
      stride(stride_of(options.stride, "avg_pool1d() argument 'stride' should contain one int (got ", ")")),
      padding(values_of(options.padding, "avg_pool1d() argument 'padding' should contain one int (got ", ")")),
      ceil_mode(options.ceil_mode),
      count_include_pad(options.count_include_pad) {}

Tensor AvgPool1d::forward(const Tensor& input) {
  return functional::avg_pool1d(input, kernel_size, stride, padding, ceil_mode, count_include_pad);
}

AdaptiveAvgPool1d::AdaptiveAvgPool1d(ExpandingSize<1> output_size)
    : output_size(
          values_of(output_size, "adaptive_avg_pool1d() argument 'output_size' should contain one int (got ", ")")) {}

}  // namespace ember::nn
