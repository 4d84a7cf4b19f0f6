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

MaxPool2d::MaxPool2d(std::vector<int64_t> kernel_size, std::vector<int64_t> stride, std::vector<int64_t> padding,
                     std::vector<int64_t> dilation, bool ceil_mode)
    : kernel_size(std::move(kernel_size)),
      stride(std::move(stride)),
      padding(std::move(padding)),
      dilation(std::move(dilation)),
      ceil_mode(ceil_mode) {}

Tensor MaxPool2d::forward(const Tensor& input) {
  return functional::max_pool2d(input, kernel_size, stride, padding, dilation, ceil_mode);
}

AvgPool2d::AvgPool2d(std::vector<int64_t> kernel_size, std::vector<int64_t> stride, std::vector<int64_t> padding,
                     bool ceil_mode, bool count_include_pad, std::optional<int64_t> divisor_override)
    : kernel_size(std::move(kernel_size)),
      stride(std::move(stride)),
      padding(std::move(padding)),
      ceil_mode(ceil_mode),
      count_include_pad(count_include_pad),
      divisor_override(divisor_override) {}

Tensor AvgPool2d::forward(const Tensor& input) {
  return functional::avg_pool2d(input, kernel_size, stride, padding, ceil_mode, count_include_pad, divisor_override);
}

MaxPool1d::MaxPool1d(std::vector<int64_t> kernel_size, std::vector<int64_t> stride, std::vector<int64_t> padding,
                     std::vector<int64_t> dilation, bool return_indices, bool ceil_mode)
    : kernel_size(std::move(kernel_size)),
      stride(std::move(stride)),
      padding(std::move(padding)),
      dilation(std::move(dilation)),
      return_indices(return_indices),
      ceil_mode(ceil_mode) {}

Tensor MaxPool1d::forward(const Tensor& input) {
  EMBER_CHECK(!return_indices,
              "MaxPool1d(return_indices=true) returns (output, indices): call forward_with_indices instead of forward");
  return functional::max_pool1d(input, kernel_size, stride, padding, dilation, ceil_mode);
}

std::tuple<Tensor, Tensor> MaxPool1d::forward_with_indices(const Tensor& input) {
  return functional::max_pool1d_with_indices(input, kernel_size, stride, padding, dilation, ceil_mode);
}

// PyTorch's AvgPool1d stores stride = kernel_size when none is given; the op does the same.
AvgPool1d::AvgPool1d(std::vector<int64_t> kernel_size, std::vector<int64_t> stride, std::vector<int64_t> padding,
                     bool ceil_mode, bool count_include_pad)
    : kernel_size(std::move(kernel_size)),
      stride(std::move(stride)),
      padding(std::move(padding)),
      ceil_mode(ceil_mode),
      count_include_pad(count_include_pad) {}

Tensor AvgPool1d::forward(const Tensor& input) {
  return functional::avg_pool1d(input, kernel_size, stride, padding, ceil_mode, count_include_pad);
}

}  // namespace ember::nn
