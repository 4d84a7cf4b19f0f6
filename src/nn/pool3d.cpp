// 3-D pooling (include/ember/nn/pool3d.h): PyTorch's checks and messages in its order, in 3-D
// terms, then the separable composition of the 2-D pooling ops: height and width over
// [N, C * D, H, W], then depth over [N, C, D, oH * oW] with a kD x 1 window. Every check runs
// before the 2-D ops, so no error names their folded shapes.
#include "ember/nn/pool3d.h"

#include <array>
#include <cmath>
#include <limits>
#include <utility>
#include <vector>

#include "core/check.h"
#include "core/tensor_internal.h"
#include "ember/factories.h"
#include "ember/nn/adaptive_max_pool.h"
#include "ember/ops.h"
#include "ops/pooling.h"

namespace ember::nn {

namespace functional {

namespace {

using Triple = std::array<int64_t, 3>;

Triple triple_of(IntList values) {
  if (values.size() == 1) return {values[0], values[0], values[0]};
  return {values[0], values[1], values[2]};
}

using ops::pooled_size;

/// A window's geometry with one value per dimension (depth, height, width) and the output sizes.
struct Window {
  Triple kernel{}, stride{}, padding{}, dilation{1, 1, 1}, out{};
};

/// Non-batch dimensions must not be empty: "<fn>: Expected input to have non-zero size ...".
void check_not_empty(const Tensor& input, const char* fn) {
  for (int64_t d = input.dim() == 5 ? 1 : 0; d < input.dim(); ++d) {
    EMBER_CHECK(input.size(d) > 0, fn,
                ": Expected input to have non-zero size for non-batch dimensions, but input has sizes ",
                ember::detail::shape_str(input.sizes()), " with dimension ", d, " being empty");
  }
}

/// PyTorch's pool3d_shape_check, after the output sizes are known.
void check_pool3d_shape(const Tensor& input, const Window& w, const char* fn, bool check_input_size) {
  EMBER_CHECK(w.kernel[0] > 0 && w.kernel[1] > 0 && w.kernel[2] > 0,
              "kernel size should be greater than zero, but got kT: ", w.kernel[0], " kH: ", w.kernel[1],
              " kW: ", w.kernel[2]);
  EMBER_CHECK(w.stride[0] > 0 && w.stride[1] > 0 && w.stride[2] > 0,
              "stride should be greater than zero, but got dT: ", w.stride[0], " dH: ", w.stride[1],
              " dW: ", w.stride[2]);
  EMBER_CHECK(w.dilation[0] > 0 && w.dilation[1] > 0 && w.dilation[2] > 0,
              "dilation should be greater than zero, but got dilationT: ", w.dilation[0], " dilationH: ", w.dilation[1],
              " dilationW: ", w.dilation[2]);
  check_not_empty(input, fn);
  const int64_t planes = input.size(-4), it = input.size(-3), ih = input.size(-2), iw = input.size(-1);
  if (check_input_size) {
    EMBER_CHECK(it >= w.kernel[0] && ih >= w.kernel[1] && iw >= w.kernel[2], "input image (T: ", it, " H: ", ih,
                " W: ", iw, ") smaller than kernel size (kT: ", w.kernel[0], " kH: ", w.kernel[1], " kW: ", w.kernel[2],
                ")");
  }
  EMBER_CHECK(w.kernel[0] / 2 >= w.padding[0] && w.kernel[2] / 2 >= w.padding[2] && w.kernel[1] / 2 >= w.padding[1],
              "pad should be smaller than or equal to half of kernel size, but got kT: ", w.kernel[0],
              " kW: ", w.kernel[2], " kH: ", w.kernel[1], " padT: ", w.padding[0], " padW: ", w.padding[2],
              " padH: ", w.padding[1]);
  EMBER_CHECK(w.out[0] >= 1 && w.out[1] >= 1 && w.out[2] >= 1, "Given input size: (", planes, "x", it, "x", ih, "x", iw,
              "). Calculated output size: (", planes, "x", w.out[0], "x", w.out[1], "x", w.out[2],
              "). Output size is too small");
}

void compute_out(const Tensor& input, Window& w, bool ceil_mode) {
  for (int i = 0; i < 3; ++i) {
    w.out[static_cast<size_t>(i)] = pooled_size(input.size(2 + i - (input.dim() == 4 ? 1 : 0)), w.kernel[i],
                                                w.padding[i], w.stride[i], w.dilation[i], ceil_mode);
  }
}

Tensor as_batched(const Tensor& input) { return input.dim() == 5 ? input : input.unsqueeze(0); }
Tensor as_given(const Tensor& result, const Tensor& input) { return input.dim() == 5 ? result : result.squeeze(0); }

/// The flat d*H*W + h*W + w index of each maximum: the plane index (h*W + w) that the height
/// and width step found in the plane (d) that the depth step chose, whose flat position in
/// [D, oH * oW] the depth step's index is.
Tensor combine_indices(const Tensor& plane_indices, const Tensor& depth_indices, int64_t h, int64_t w) {
  const int64_t n = plane_indices.size(0), c = plane_indices.size(1), d = plane_indices.size(2);
  const int64_t ohw = plane_indices.size(3);
  const Tensor offsets = (arange(d, TensorOptions().dtype(kInt64)) * (h * w)).to(plane_indices.device()).view({d, 1});
  const Tensor flat = (plane_indices + offsets).reshape({n, c, d * ohw});
  const int64_t od = depth_indices.size(2);
  return ember::gather(flat, 2, depth_indices.reshape({n, c, od * ohw}));
}

/// The max pooling of a batched, checked input over window `w`.
std::tuple<Tensor, Tensor> max_pool3d_batched(const Tensor& input, const Window& w, bool ceil_mode, bool want_indices) {
  // PyTorch pools integers too; the 2-D ops take floating point only, and float64 holds every
  // integer below 2^53 exactly.
  const bool integral = !input.is_floating_point();
  const Tensor x = integral ? input.to(kFloat64) : input;
  const int64_t n = x.size(0), c = x.size(1), d = x.size(2), h = x.size(3), wd = x.size(4);
  const Tensor planes = x.reshape({n, c * d, h, wd});
  // The height and width step's window, and the depth step's (kD x 1 over [D, oH * oW]).
  const std::array<int64_t, 2> k2{w.kernel[1], w.kernel[2]}, s2{w.stride[1], w.stride[2]},
      p2{w.padding[1], w.padding[2]}, d2{w.dilation[1], w.dilation[2]};
  const std::array<int64_t, 2> kd{w.kernel[0], 1}, sd{w.stride[0], 1}, pd{w.padding[0], 0}, dd{w.dilation[0], 1};
  Tensor out, indices;
  if (want_indices) {
    auto [a, plane_indices] = ember::max_pool2d_with_indices(planes, k2, s2, p2, d2, ceil_mode);
    const int64_t oh = a.size(2), ow = a.size(3);
    auto [b, depth_indices] = ember::max_pool2d_with_indices(a.view({n, c, d, oh * ow}), kd, sd, pd, dd, ceil_mode);
    out = b.view({n, c, b.size(2), oh, ow});
    indices = combine_indices(plane_indices.view({n, c, d, oh * ow}), depth_indices, h, wd).view(out.sizes());
  } else {
    const Tensor a = ember::max_pool2d(planes, k2, s2, p2, d2, ceil_mode);
    const int64_t oh = a.size(2), ow = a.size(3);
    const Tensor b = ember::max_pool2d(a.view({n, c, d, oh * ow}), kd, sd, pd, dd, ceil_mode);
    out = b.view({n, c, b.size(2), oh, ow});
  }
  if (integral) out = out.to(input.dtype());
  return {out, indices};
}

std::tuple<Tensor, Tensor> max_pool3d_impl(const Tensor& input, IntList kernel_size, IntList stride, IntList padding,
                                           IntList dilation, bool ceil_mode, bool want_indices) {
  ember::detail::check_defined(input, "max_pool3d");
  EMBER_CHECK(kernel_size.size() == 1 || kernel_size.size() == 3,
              "max_pool3d: kernel_size must either be a single int, or a tuple of three ints");
  EMBER_CHECK(stride.size() == 0 || stride.size() == 1 || stride.size() == 3,
              "max_pool3d: stride must either be omitted, a single int, or a tuple of three ints");
  EMBER_CHECK(padding.size() == 1 || padding.size() == 3,
              "max_pool3d: padding must either be a single int, or a tuple of three ints");
  EMBER_CHECK(dilation.size() == 1 || dilation.size() == 3,
              "max_pool3d: dilation must be either a single int, or a tuple of three ints");
  Window w;
  w.kernel = triple_of(kernel_size);
  w.stride = triple_of(stride.empty() ? kernel_size : stride);
  w.padding = triple_of(padding);
  w.dilation = triple_of(dilation);
  EMBER_CHECK(input.dim() == 4 || input.dim() == 5, "non-empty 4D or 5D (batch mode) tensor expected for input");
  compute_out(input, w, ceil_mode);
  check_pool3d_shape(input, w, "max_pool3d_with_indices_out_cpu_template()", false);
  EMBER_CHECK(input.dtype() != kBool, "\"max_pool3d_with_indices_cpu\" not implemented for 'Bool'");
  auto [out, indices] = max_pool3d_batched(as_batched(input), w, ceil_mode, want_indices);
  return {as_given(out, input), indices.defined() ? as_given(indices, input) : indices};
}

}  // namespace

Tensor max_pool3d(const Tensor& input, IntList kernel_size, IntList stride, IntList padding, IntList dilation,
                  bool ceil_mode) {
  ember::detail::OpContext context("max_pool3d", {{"input", &input}});
  return std::get<0>(max_pool3d_impl(input, kernel_size, stride, padding, dilation, ceil_mode, false));
}

std::tuple<Tensor, Tensor> max_pool3d_with_indices(const Tensor& input, IntList kernel_size, IntList stride,
                                                   IntList padding, IntList dilation, bool ceil_mode) {
  ember::detail::OpContext context("max_pool3d_with_indices", {{"input", &input}});
  return max_pool3d_impl(input, kernel_size, stride, padding, dilation, ceil_mode, true);
}

namespace {

/// Average pooling of a batched floating-point input, height and width first, then depth.
Tensor avg_pool3d_separable(const Tensor& x, const Window& w, bool ceil_mode, bool count_include_pad,
                            std::optional<int64_t> divisor_override) {
  const int64_t n = x.size(0), c = x.size(1), d = x.size(2);
  // With a divisor override, the first step only sums (divisor 1) and the second divides.
  const std::optional<int64_t> first_divisor = divisor_override ? std::optional<int64_t>(1) : std::nullopt;
  const Tensor a = ember::avg_pool2d(x.reshape({n, c * d, x.size(3), x.size(4)}), {w.kernel[1], w.kernel[2]},
                                     {w.stride[1], w.stride[2]}, {w.padding[1], w.padding[2]}, ceil_mode,
                                     count_include_pad, first_divisor);
  const int64_t oh = a.size(2), ow = a.size(3);
  const Tensor b = ember::avg_pool2d(a.view({n, c, d, oh * ow}), {w.kernel[0], 1}, {w.stride[0], 1}, {w.padding[0], 0},
                                     ceil_mode, count_include_pad, divisor_override);
  return b.view({n, c, b.size(2), oh, ow});
}

/// PyTorch's int64 average: each window's sum divided by its divisor, truncated toward zero. The
/// sums are float64 pools with a divisor of 1 (exact below 2^53); each window's divisor is its
/// count of input elements over the average of ones, which is that count over the divisor.
Tensor avg_pool3d_int64(const Tensor& x, const Window& w, bool ceil_mode, bool count_include_pad,
                        std::optional<int64_t> divisor_override) {
  const Tensor values = x.to(kFloat64);
  const Tensor sums = avg_pool3d_separable(values, w, ceil_mode, count_include_pad, 1);
  Tensor divisor;
  if (divisor_override) {
    divisor = full({}, static_cast<double>(*divisor_override), TensorOptions().dtype(kFloat64).device(x.device()));
  } else {
    const Tensor ones = ones_like(values).narrow(0, 0, std::min<int64_t>(values.size(0), 1));
    const Tensor counts = avg_pool3d_separable(ones, w, ceil_mode, count_include_pad, 1);
    divisor = ember::round(counts / avg_pool3d_separable(ones, w, ceil_mode, count_include_pad, std::nullopt));
  }
  return ember::trunc(sums / divisor).to(kInt64);
}

}  // namespace

Tensor avg_pool3d(const Tensor& input, IntList kernel_size, IntList stride, IntList padding, bool ceil_mode,
                  bool count_include_pad, std::optional<int64_t> divisor_override) {
  ember::detail::OpContext context("avg_pool3d", {{"input", &input}});
  ember::detail::check_defined(input, "avg_pool3d");
  EMBER_CHECK(kernel_size.size() == 1 || kernel_size.size() == 3,
              "avg_pool3d: kernel_size must be a single int, or a tuple of three ints");
  EMBER_CHECK(stride.empty() || stride.size() == 1 || stride.size() == 3,
              "avg_pool3d: stride must be omitted, a single int, or a tuple of three ints");
  EMBER_CHECK(padding.size() == 1 || padding.size() == 3,
              "avg_pool3d: padding must be a single int, or a tuple of three ints");
  EMBER_CHECK(!divisor_override.has_value() || *divisor_override != 0, "divisor must be not zero");
  Window w;
  w.kernel = triple_of(kernel_size);
  w.stride = triple_of(stride.empty() ? kernel_size : stride);
  w.padding = triple_of(padding);
  EMBER_CHECK(input.dim() == 4 || input.dim() == 5, "non-empty 4D or 5D (batch mode) tensor expected for input");
  compute_out(input, w, ceil_mode);
  check_pool3d_shape(input, w, "avg_pool3d()", true);
  // PyTorch averages int64 too (the truncated quotient); no other integer type.
  EMBER_CHECK(input.is_floating_point() || input.dtype() == kInt64, "\"avg_pool3d_out_frame\" not implemented for '",
              scalar_type_name(input.dtype()), "'");
  const Tensor x = as_batched(input);
  if (input.dtype() == kInt64)
    return as_given(avg_pool3d_int64(x, w, ceil_mode, count_include_pad, divisor_override), input);
  return as_given(avg_pool3d_separable(x, w, ceil_mode, count_include_pad, divisor_override), input);
}

namespace {

/// An empty result of `sizes` that keeps input's graph (an adaptive pool to a size of 0).
Tensor empty_like_graph(const Tensor& x, IntList sizes) { return x.reshape({-1}).narrow(0, 0, 0).reshape(sizes); }

}  // namespace

Tensor adaptive_avg_pool3d(const Tensor& input, IntList output_size) {
  ember::detail::OpContext context("adaptive_avg_pool3d", {{"input", &input}});
  ember::detail::check_defined(input, "adaptive_avg_pool3d");
  EMBER_CHECK(output_size.size() == 1 || output_size.size() == 3, "adaptive_avg_pool3d: output_size must be 3");
  const Triple out = triple_of(output_size);
  EMBER_CHECK(out[0] >= 0 && out[1] >= 0 && out[2] >= 0,
              "adaptive_avg_pool3d: elements of output_size must be greater than or equal to 0 but received {", out[0],
              ", ", out[1], ",", out[2], "}");
  EMBER_CHECK(input.dim() == 4 || input.dim() == 5, "adaptive_avg_pool3d(): Expected 4D or 5D tensor, but got ",
              ember::detail::shape_str(input.sizes()));
  check_not_empty(input, "adaptive_avg_pool3d()");
  EMBER_CHECK(input.is_floating_point(), "\"adaptive_avg_pool3d_cpu\" not implemented for '",
              scalar_type_name(input.dtype()), "'");
  const Tensor x = as_batched(input);
  const int64_t n = x.size(0), c = x.size(1), d = x.size(2);
  if (out[0] == 0 || out[1] == 0 || out[2] == 0) {
    return as_given(empty_like_graph(x, {n, c, out[0], out[1], out[2]}), input);
  }
  const Tensor a = ember::adaptive_avg_pool2d(x.reshape({n, c * d, x.size(3), x.size(4)}), {out[1], out[2]});
  const Tensor b = ember::adaptive_avg_pool2d(a.view({n, c, d, out[1] * out[2]}), {out[0], out[1] * out[2]});
  return as_given(b.view({n, c, out[0], out[1], out[2]}), input);
}

std::tuple<Tensor, Tensor> adaptive_max_pool3d_with_indices(const Tensor& input, IntList output_size) {
  ember::detail::OpContext context("adaptive_max_pool3d", {{"input", &input}});
  ember::detail::check_defined(input, "adaptive_max_pool3d");
  EMBER_CHECK(input.dim() == 4 || input.dim() == 5,
              "adaptive_max_pool3d(): Expected 4D or 5D tensor, but got: ", ember::detail::shape_str(input.sizes()));
  check_not_empty(input, "adaptive_max_pool3d()");
  EMBER_CHECK(output_size.size() == 1 || output_size.size() == 3,
              "adaptive_max_pool3d(): internal error: output_size.size() must be 3");
  const Triple out = triple_of(output_size);
  std::vector<int64_t> out_sizes(input.sizes().begin(), input.sizes().end() - 3);
  out_sizes.insert(out_sizes.end(), out.begin(), out.end());
  EMBER_CHECK(out[0] >= 0 && out[1] >= 0 && out[2] >= 0, "Trying to create tensor with negative dimension ",
              out[0] < 0 ? out[0] : (out[1] < 0 ? out[1] : out[2]), ": ", ember::detail::shape_str(out_sizes));
  EMBER_CHECK(input.is_floating_point(), "\"adaptive_max_pool3d_cpu\" not implemented for '",
              scalar_type_name(input.dtype()), "'");
  const Tensor x = as_batched(input);
  const int64_t n = x.size(0), c = x.size(1), d = x.size(2), h = x.size(3), wd = x.size(4);
  if (out[0] == 0 || out[1] == 0 || out[2] == 0) {
    const std::vector<int64_t> sizes{n, c, out[0], out[1], out[2]};
    return {as_given(empty_like_graph(x, sizes), input),
            as_given(zeros(sizes, TensorOptions().dtype(kInt64).device(x.device())), input)};
  }
  auto [a, plane_indices] = adaptive_max_pool2d_with_indices(x.reshape({n, c * d, h, wd}), {out[1], out[2]});
  const int64_t ohw = out[1] * out[2];
  auto [b, depth_indices] = adaptive_max_pool2d_with_indices(a.view({n, c, d, ohw}), {out[0], ohw});
  const Tensor values = b.view({n, c, out[0], out[1], out[2]});
  const Tensor indices = combine_indices(plane_indices.view({n, c, d, ohw}), depth_indices, h, wd).view(values.sizes());
  return {as_given(values, input), as_given(indices, input)};
}

Tensor adaptive_max_pool3d(const Tensor& input, IntList output_size) {
  return std::get<0>(adaptive_max_pool3d_with_indices(input, output_size));
}

Tensor lp_pool3d(const Tensor& input, double norm_type, IntList kernel_size, IntList stride, bool ceil_mode) {
  EMBER_CHECK(norm_type != 0, "norm_type must be a non-zero value, but got ", ember::detail::python_float(norm_type));
  constexpr double kInf = std::numeric_limits<double>::infinity();
  if (norm_type == kInf) return max_pool3d(ember::abs(input), kernel_size, stride, {0}, {1}, ceil_mode);
  if (norm_type == -kInf) return -max_pool3d(-ember::abs(input), kernel_size, stride, {0}, {1}, ceil_mode);
  const Tensor pooled = avg_pool3d(ember::pow(input, Scalar(norm_type)), kernel_size, stride, {0}, ceil_mode);
  int64_t count = 1;
  for (int64_t k : kernel_size) count *= k;
  if (kernel_size.size() == 1) count *= count * count;  // one value stands for all three dimensions
  const Tensor magnitude = ember::sign(pooled) * ember::relu(ember::abs(pooled));
  return ember::pow(magnitude * Scalar(count), Scalar(1.0 / norm_type));
}

}  // namespace functional

// ---------------------------------------------------------------- layers

namespace {

ExpandingSize<3> stride_or_kernel(const OptionalSize<3>& stride, const ExpandingSize<3>& kernel, const char* layer) {
  return stride ? stride->check(layer, "stride") : kernel;
}

}  // namespace

MaxPool3d::MaxPool3d(ExpandingSize<3> kernel_size, MaxPool3dOptions options)
    : kernel_size(kernel_size.check("MaxPool3d", "kernel_size")),
      stride(stride_or_kernel(options.stride, this->kernel_size, "MaxPool3d")),
      padding(options.padding.check("MaxPool3d", "padding")),
      dilation(options.dilation.check("MaxPool3d", "dilation")),
      return_indices(options.return_indices),
      ceil_mode(options.ceil_mode) {}

Tensor MaxPool3d::forward(const Tensor& input) {
  EMBER_CHECK(!return_indices,
              "MaxPool3d(return_indices=true) returns (output, indices): call forward_with_indices instead of forward");
  return functional::max_pool3d(input, kernel_size, stride, padding, dilation, ceil_mode);
}

std::tuple<Tensor, Tensor> MaxPool3d::forward_with_indices(const Tensor& input) {
  return functional::max_pool3d_with_indices(input, kernel_size, stride, padding, dilation, ceil_mode);
}

AvgPool3d::AvgPool3d(ExpandingSize<3> kernel_size, AvgPool3dOptions options)
    : kernel_size(kernel_size.check("AvgPool3d", "kernel_size")),
      stride(stride_or_kernel(options.stride, this->kernel_size, "AvgPool3d")),
      padding(options.padding.check("AvgPool3d", "padding")),
      ceil_mode(options.ceil_mode),
      count_include_pad(options.count_include_pad),
      divisor_override(options.divisor_override) {}

Tensor AvgPool3d::forward(const Tensor& input) {
  return functional::avg_pool3d(input, kernel_size, stride, padding, ceil_mode, count_include_pad, divisor_override);
}

AdaptiveAvgPool3d::AdaptiveAvgPool3d(ExpandingSize<3> output_size)
    : output_size(output_size.check("AdaptiveAvgPool3d", "output_size")) {}

Tensor AdaptiveAvgPool3d::forward(const Tensor& input) { return functional::adaptive_avg_pool3d(input, output_size); }

AdaptiveMaxPool3d::AdaptiveMaxPool3d(ExpandingSize<3> output_size, AdaptiveMaxPool3dOptions options)
    : output_size(output_size.check("AdaptiveMaxPool3d", "output_size")), return_indices(options.return_indices) {}

Tensor AdaptiveMaxPool3d::forward(const Tensor& input) {
  EMBER_CHECK(!return_indices,
              "AdaptiveMaxPool3d(return_indices=true) returns (output, indices): call forward_with_indices instead of "
              "forward");
  return functional::adaptive_max_pool3d(input, output_size);
}

std::tuple<Tensor, Tensor> AdaptiveMaxPool3d::forward_with_indices(const Tensor& input) {
  return functional::adaptive_max_pool3d_with_indices(input, output_size);
}

LPPool3d::LPPool3d(double norm_type, ExpandingSize<3> kernel_size, LPPool3dOptions options)
    : norm_type(norm_type),
      kernel_size(kernel_size.check("LPPool3d", "kernel_size")),
      stride(options.stride),
      ceil_mode(options.ceil_mode) {
  EMBER_CHECK(norm_type != 0, "norm_type must be a non-zero value, but got ", ember::detail::python_float(norm_type));
  if (stride) stride->check("LPPool3d", "stride");
}

Tensor LPPool3d::forward(const Tensor& input) {
  return functional::lp_pool3d(input, norm_type, kernel_size, stride ? stride->list() : IntList(), ceil_mode);
}

}  // namespace ember::nn
