// LPPool1d/LPPool2d and lp_pool1d/lp_pool2d (include/ember/nn/lppool.h): PyTorch's composition
// of the pooling ops and element-wise ops, so autograd and every device come with them.
#include "ember/nn/lppool.h"

#include <cmath>
#include <limits>
#include <utility>
#include <vector>

#include "core/check.h"
#include "ember/ops.h"
#include "ember/pool1d.h"

namespace ember::nn {

namespace functional {

namespace {

void check_norm_type(double norm_type) {
  EMBER_CHECK(norm_type != 0, "norm_type must be a non-zero value, but got ", ember::detail::python_float(norm_type));
}

/// (sign(s) * relu(|s|) * count)^(1/p) of the average pool s, as torch.nn.functional's.
Tensor finish(const Tensor& pooled, double norm_type, int64_t count) {
  const Tensor magnitude = ember::sign(pooled) * ember::relu(ember::abs(pooled));
  return ember::pow(magnitude * Scalar(count), Scalar(1.0 / norm_type));
}

}  // namespace

Tensor lp_pool1d(const Tensor& input, double norm_type, IntList kernel_size, IntList stride, bool ceil_mode) {
  check_norm_type(norm_type);
  constexpr double kInf = std::numeric_limits<double>::infinity();
  if (norm_type == kInf) return ember::max_pool1d(ember::abs(input), kernel_size, stride, {0}, {1}, ceil_mode);
  if (norm_type == -kInf) return -ember::max_pool1d(-ember::abs(input), kernel_size, stride, {0}, {1}, ceil_mode);
  const Tensor pooled = ember::avg_pool1d(ember::pow(input, Scalar(norm_type)), kernel_size, stride, {0}, ceil_mode);
  int64_t count = 1;
  for (int64_t k : kernel_size) count *= k;
  return finish(pooled, norm_type, count);
}

Tensor lp_pool2d(const Tensor& input, double norm_type, IntList kernel_size, IntList stride, bool ceil_mode) {
  check_norm_type(norm_type);
  constexpr double kInf = std::numeric_limits<double>::infinity();
  if (norm_type == kInf) return ember::max_pool2d(ember::abs(input), kernel_size, stride, {0}, {1}, ceil_mode);
  if (norm_type == -kInf) return -ember::max_pool2d(-ember::abs(input), kernel_size, stride, {0}, {1}, ceil_mode);
  const Tensor pooled = ember::avg_pool2d(ember::pow(input, Scalar(norm_type)), kernel_size, stride, {0}, ceil_mode);
  int64_t count = 1;
  for (int64_t k : kernel_size) count *= k;
  if (kernel_size.size() == 1) count *= count;  // one value stands for both dimensions
  return finish(pooled, norm_type, count);
}

}  // namespace functional

namespace {

/// The D values of a size, refused with the message of the average pool that lp_pool runs.
template <size_t D>
std::vector<int64_t> values_of(const ExpandingSize<D>& size, const char* name, bool optional) {
  if (optional && size.given() == 0) return {};
  if constexpr (D == 1) {
    EMBER_CHECK(size.valid(), "avg_pool1d() argument '", name, "' should contain one int (got ", size.given(), ")");
  } else {
    EMBER_CHECK(size.valid(), "avg_pool2d: ", name, " must either be ", optional ? "omitted, " : "",
                "a single int, or a tuple of two ints");
  }
  return size.vec();
}

}  // namespace

LPPool1d::LPPool1d(double norm_type, ExpandingSize<1> kernel_size, LPPool1dOptions options)
    : norm_type(norm_type), ceil_mode(options.ceil_mode) {
  EMBER_CHECK(norm_type != 0, "norm_type must be a non-zero value, but got ", ember::detail::python_float(norm_type));
  this->kernel_size = values_of(kernel_size, "kernel_size", false);
  stride = values_of(options.stride, "stride", true);
}

Tensor LPPool1d::forward(const Tensor& input) {
  return functional::lp_pool1d(input, norm_type, kernel_size, stride, ceil_mode);
}

LPPool2d::LPPool2d(double norm_type, ExpandingSize<2> kernel_size, LPPool2dOptions options)
    : norm_type(norm_type), ceil_mode(options.ceil_mode) {
  EMBER_CHECK(norm_type != 0, "norm_type must be a non-zero value, but got ", ember::detail::python_float(norm_type));
  this->kernel_size = values_of(kernel_size, "kernel_size", false);
  stride = values_of(options.stride, "stride", true);
}

Tensor LPPool2d::forward(const Tensor& input) {
  return functional::lp_pool2d(input, norm_type, kernel_size, stride, ceil_mode);
}

}  // namespace ember::nn
