// The 2-D pooling ops (nn::functional's and the layers' are thin wrappers over these):
// PyTorch's argument checks and output-size rules, one backend call forward, one recorded node
// whose backward is one backend call. The 1-D ops (ember/pool1d.h) check their own arguments and
// run the 2-D ones over a height of one, as PyTorch's do.
#include "ops/pooling.h"

#include <tuple>
#include <utility>
#include <vector>

#include "autograd/node.h"
#include "backend/backend.h"
#include "core/check.h"
#include "core/tensor_internal.h"
#include "ember/ops.h"
#include "ember/pool1d.h"

namespace ember {

namespace {

// Floor division for any signs: PyTorch's div_rtn, which the output-size formula relies on when
// a (bad) negative stride or an oversized kernel makes the numerator negative.
int64_t div_floor(int64_t a, int64_t b) {
  int64_t q = a / b;
  if (a % b != 0 && ((a < 0) != (b < 0))) --q;
  return q;
}

}  // namespace

int64_t ops::pooled_size(int64_t in, int64_t kernel, int64_t pad, int64_t stride, int64_t dilation, bool ceil_mode) {
  EMBER_CHECK(stride != 0, "stride should not be zero");
  EMBER_CHECK(pad >= 0, "pad must be non-negative, but got pad: ", pad);
  EMBER_CHECK(pad <= ((kernel - 1) * dilation + 1) / 2,
              "pad should be at most half of effective kernel size, but got pad=", pad, ", kernel_size=", kernel,
              " and dilation=", dilation);
  int64_t out = div_floor(in + 2 * pad - dilation * (kernel - 1) - 1 + (ceil_mode ? stride - 1 : 0), stride) + 1;
  // A ceil_mode window must start inside the input or the left padding.
  if (ceil_mode && (out - 1) * stride >= in + pad) --out;
  return out;
}

namespace {

using ops::pooled_size;

// One value for both dimensions, or a [height, width] pair.
void pair_of(IntList values, int64_t (&dst)[2]) {
  dst[0] = values[0];
  dst[1] = values.size() == 2 ? values[1] : values[0];
}

// PyTorch's pool2d_shape_check, after the output size is known.
void check_pool_shape(const Tensor& input, const Pool2dArgs& a, int64_t out_h, int64_t out_w) {
  EMBER_CHECK(a.kernel[1] > 0 && a.kernel[0] > 0, "kernel size should be greater than zero, but got kH: ", a.kernel[0],
              " kW: ", a.kernel[1]);
  EMBER_CHECK(a.stride[1] > 0 && a.stride[0] > 0, "stride should be greater than zero, but got dH: ", a.stride[0],
              " dW: ", a.stride[1]);
  EMBER_CHECK(a.dilation[1] > 0 && a.dilation[0] > 0,
              "dilation should be greater than zero, but got dilationH: ", a.dilation[0],
              " dilationW: ", a.dilation[1]);
  const int64_t ndim = input.dim();
  const bool valid = (ndim == 3 && input.size(0) != 0 && input.size(1) != 0 && input.size(2) != 0) ||
                     (ndim == 4 && input.size(1) != 0 && input.size(2) != 0 && input.size(3) != 0);
  EMBER_CHECK(valid, "Expected 3D or 4D (batch mode) tensor with optional 0 dim batch size for input, but got:",
              detail::shape_str(input.sizes()));
  EMBER_CHECK(a.kernel[1] / 2 >= a.padding[1] && a.kernel[0] / 2 >= a.padding[0],
              "pad should be smaller than or equal to half of kernel size, but got padW = ", a.padding[1],
              ", padH = ", a.padding[0], ", kW = ", a.kernel[1], ", kH = ", a.kernel[0]);
  const int64_t planes = input.size(-3), in_h = input.size(-2), in_w = input.size(-1);
  EMBER_CHECK(out_w >= 1 && out_h >= 1, "Given input size: (", planes, "x", in_h, "x", in_w,
              "). Calculated output size: (", planes, "x", out_h, "x", out_w, "). Output size is too small");
}

void check_floating(const Tensor& input, const char* op) {
  EMBER_CHECK(input.is_floating_point(), "\"", op, "\" not implemented for '", scalar_type_name(input.dtype()), "'");
}

std::pair<Tensor, Tensor> run_pool(const Tensor& input, const Pool2dArgs& args, int64_t out_h, int64_t out_w,
                                   const char* grad_name, bool want_indices = false);

// Records pooling's backward (gx from the output gradient g4, both 4-D), for a backward pass
// that records itself (create_graph). It is linear in g4, and its own gradient is the pooling
// of the incoming gradient: max pooling picks it at the saved indices, average pooling averages
// it over the same windows.
void record_pool_backward(Tensor& gx, const Tensor& g4, const Tensor& indices, const Pool2dArgs& args, int64_t out_h,
                          int64_t out_w) {
  const bool adaptive = args.kind == PoolKind::AdaptiveAvg;
  const char* name = args.kind == PoolKind::Max ? "MaxPool2DWithIndicesBackwardBackward0"
                     : adaptive                 ? "AdaptiveAvgPool2DBackwardBackward0"
                                                : "AvgPool2DBackwardBackward0";
  autograd::record(gx, name, {&g4}, [args, indices, out_h, out_w, adaptive](const Tensor& gg) {
    const int64_t n = gg.size(0), c = gg.size(1);
    if (args.kind != PoolKind::Max) {
      const char* pool_grad = adaptive ? "AdaptiveAvgPool2DBackward0" : "AvgPool2DBackward0";
      return std::vector<Tensor>{run_pool(gg, args, out_h, out_w, pool_grad).first};
    }
    const Tensor picked = gg.reshape({n, c, gg.size(2) * gg.size(3)}).gather(2, indices.reshape({n, c, out_h * out_w}));
    return std::vector<Tensor>{picked.reshape({n, c, out_h, out_w})};
  });
}

// Runs the backend on a 4-D contiguous copy of `input` and records `grad_name` when needed.
// want_indices: max pooling returns its indices to the caller; otherwise they are made only
// when the backward pass will need them (an evaluation pass skips a write of 8 bytes per output).
std::pair<Tensor, Tensor> run_pool(const Tensor& input, const Pool2dArgs& args, int64_t out_h, int64_t out_w,
                                   const char* grad_name, bool want_indices) {
  const bool records = autograd::needs_grad({&input});
  const bool batched = input.dim() == 4;
  const Tensor x4 = (batched ? input : input.unsqueeze(0)).contiguous();
  const int64_t n = x4.size(0), c = x4.size(1);
  Tensor out4 = detail::make_tensor({n, c, out_h, out_w}, input.dtype(), input.device());
  Tensor idx4;
  if (args.kind == PoolKind::Max && (want_indices || records))
    idx4 = detail::make_tensor({n, c, out_h, out_w}, kInt64, input.device());
  backend_for(input.device()).pool2d(view_of(x4), view_of(out4), idx4.defined() ? view_of(idx4) : TensorView{}, args);
  const std::vector<int64_t> out_sizes =
      batched ? std::vector<int64_t>{n, c, out_h, out_w} : std::vector<int64_t>{c, out_h, out_w};
  Tensor out = batched ? out4 : out4.view(out_sizes);
  Tensor indices = !idx4.defined() || batched ? idx4 : idx4.view(out_sizes);
  if (records) {
    const std::vector<int64_t> in4 = x4.sizes().vec(), in_sizes = input.sizes().vec();
    const Dtype dtype = input.dtype();
    const Device device = input.device();
    autograd::record(
        out, grad_name, {&input},
        [args, in4, in_sizes, dtype, device, n, c, out_h, out_w, saved = autograd::SavedTensor(idx4)](const Tensor& g) {
          const Tensor g4 = g.to(dtype).reshape({n, c, out_h, out_w}).contiguous();
          const Tensor idx = saved.get();
          Tensor gx = detail::make_tensor(in4, dtype, device);
          backend_for(device).pool2d_backward(view_of(g4), idx.defined() ? view_of(idx) : TensorView{}, view_of(gx),
                                              args);
          if (autograd::needs_grad({&g4})) record_pool_backward(gx, g4, idx, args, out_h, out_w);
          return std::vector<Tensor>{gx.view(in_sizes)};
        });
  }
  return {out, indices};
}

// PyTorch's checkDimRange(name, self, 2, 4) and check1d, which the 1-D ops run first.
void check_pool1d_rank(const Tensor& input, const char* op) {
  EMBER_CHECK(input.dim() >= 2 && input.dim() < 4, "Expected 2 to 3 dimensions, but got ", input.dim(),
              "-dimensional tensor for argument #1 'self' (while checking arguments for ", op, ")");
}

void check_one_value(IntList values, const char* op, const char* argument) {
  EMBER_CHECK(values.size() == 1, op, "() argument '", argument, "' should contain one int (got ", values.size(), ")");
}

std::pair<Tensor, Tensor> max_pool_impl(const Tensor& input, IntList kernel_size, IntList stride, IntList padding,
                                        IntList dilation, bool ceil_mode, bool want_indices) {
  detail::check_defined(input, "max_pool2d");
  EMBER_CHECK(kernel_size.size() == 1 || kernel_size.size() == 2,
              "max_pool2d: kernel_size must either be a single int, or a tuple of two ints");
  EMBER_CHECK(stride.size() <= 2, "max_pool2d: stride must either be omitted, a single int, or a tuple of two ints");
  EMBER_CHECK(padding.size() == 1 || padding.size() == 2,
              "max_pool2d: padding must either be a single int, or a tuple of two ints");
  EMBER_CHECK(dilation.size() == 1 || dilation.size() == 2,
              "max_pool2d: dilation must be either a single int, or a tuple of two ints");
  Pool2dArgs a;
  a.kind = PoolKind::Max;
  a.ceil_mode = ceil_mode;
  pair_of(kernel_size, a.kernel);
  pair_of(stride.size() == 0 ? kernel_size : stride, a.stride);
  pair_of(padding, a.padding);
  pair_of(dilation, a.dilation);
  EMBER_CHECK(input.dim() == 3 || input.dim() == 4, "non-empty 3D or 4D (batch mode) tensor expected for input");
  const int64_t out_h = pooled_size(input.size(-2), a.kernel[0], a.padding[0], a.stride[0], a.dilation[0], ceil_mode);
  const int64_t out_w = pooled_size(input.size(-1), a.kernel[1], a.padding[1], a.stride[1], a.dilation[1], ceil_mode);
  check_pool_shape(input, a, out_h, out_w);
  check_floating(input, "max_pool2d");
  return run_pool(input, a, out_h, out_w, "MaxPool2DWithIndicesBackward0", want_indices);
}

}  // namespace

Tensor max_pool2d(const Tensor& input, IntList kernel_size, IntList stride, IntList padding, IntList dilation,
                  bool ceil_mode) {
  detail::OpContext context("max_pool2d", {{"input", &input}});
  return max_pool_impl(input, kernel_size, stride, padding, dilation, ceil_mode, /*want_indices=*/false).first;
}

std::tuple<Tensor, Tensor> max_pool2d_with_indices(const Tensor& input, IntList kernel_size, IntList stride,
                                                   IntList padding, IntList dilation, bool ceil_mode) {
  auto [out, indices] = max_pool_impl(input, kernel_size, stride, padding, dilation, ceil_mode, /*want_indices=*/true);
  return {out, indices};
}

Tensor avg_pool2d(const Tensor& input, IntList kernel_size, IntList stride, IntList padding, bool ceil_mode,
                  bool count_include_pad, std::optional<int64_t> divisor_override) {
  detail::OpContext context("avg_pool2d", {{"input", &input}});
  detail::check_defined(input, "avg_pool2d");
  EMBER_CHECK(kernel_size.size() == 1 || kernel_size.size() == 2,
              "avg_pool2d: kernel_size must either be a single int, or a tuple of two ints");
  EMBER_CHECK(stride.size() <= 2, "avg_pool2d: stride must either be omitted, a single int, or a tuple of two ints");
  EMBER_CHECK(padding.size() == 1 || padding.size() == 2,
              "avg_pool2d: padding must either be a single int, or a tuple of two ints");
  EMBER_CHECK(!divisor_override.has_value() || *divisor_override != 0, "divisor must be not zero");
  Pool2dArgs a;
  a.kind = PoolKind::Avg;
  a.ceil_mode = ceil_mode;
  a.count_include_pad = count_include_pad;
  a.divisor_override = divisor_override.value_or(0);
  pair_of(kernel_size, a.kernel);
  pair_of(stride.size() == 0 ? kernel_size : stride, a.stride);
  pair_of(padding, a.padding);
  // PyTorch reads the plane count first, so a tensor of fewer than 3 dimensions fails there.
  (void)detail::wrap_dim(-3, input.dim());
  const int64_t out_h = pooled_size(input.size(-2), a.kernel[0], a.padding[0], a.stride[0], 1, ceil_mode);
  const int64_t out_w = pooled_size(input.size(-1), a.kernel[1], a.padding[1], a.stride[1], 1, ceil_mode);
  check_pool_shape(input, a, out_h, out_w);
  check_floating(input, "avg_pool2d");
  return run_pool(input, a, out_h, out_w, "AvgPool2DBackward0").first;
}

Tensor adaptive_avg_pool2d(const Tensor& input, IntList output_size) {
  detail::OpContext context("adaptive_avg_pool2d", {{"input", &input}});
  detail::check_defined(input, "adaptive_avg_pool2d");
  // A single value stands for both sizes, as torch.nn.functional's int argument does.
  EMBER_CHECK(output_size.size() == 1 || output_size.size() == 2, "adaptive_avg_pool2d: output_size must be 2");
  Pool2dArgs a;
  a.kind = PoolKind::AdaptiveAvg;
  int64_t out[2];
  pair_of(output_size, out);
  EMBER_CHECK(out[0] >= 0 && out[1] >= 0,
              "adaptive_avg_pool2d: elements of output_size must be greater than or equal to 0 but received {", out[0],
              ", ", out[1], "}");
  EMBER_CHECK(input.dim() == 3 || input.dim() == 4, "adaptive_avg_pool2d(): Expected 3D or 4D tensor, but got ",
              detail::shape_str(input.sizes()));
  for (int64_t d = input.dim() - 2; d < input.dim(); ++d) {
    EMBER_CHECK(input.size(d) > 0,
                "adaptive_avg_pool2d(): Expected input to have non-zero size for non-batch dimensions, but input has "
                "sizes ",
                detail::shape_str(input.sizes()), " with dimension ", d, " being empty");
  }
  check_floating(input, "adaptive_avg_pool2d");
  return run_pool(input, a, out[0], out[1], "AdaptiveAvgPool2DBackward0").first;
}

// ---- 1-D pooling: the 2-D ops over [N, C, 1, L] ----

Tensor max_pool1d(const Tensor& input, IntList kernel_size, IntList stride, IntList padding, IntList dilation,
                  bool ceil_mode) {
  detail::OpContext context("max_pool1d", {{"input", &input}});
  detail::check_defined(input, "max_pool1d");
  // PyTorch's max_pool1d and check_max_pool1d, which run before either of its paths (its own CPU
  // kernel, or max_pool1d_with_indices when a gradient is needed or off the CPU).
  const int64_t ndim = input.dim();
  EMBER_CHECK((ndim == 2 && input.size(0) != 0 && input.size(1) != 0) ||
                  (ndim == 3 && input.size(1) != 0 && input.size(2) != 0),
              "max_pool1d: Expected 2D or 3D (batch mode) tensor with optional 0 dim batch size for input, but got:",
              detail::shape_str(input.sizes()));
  EMBER_CHECK(kernel_size.size() == 1,
              "max_pool1d() kernel_size must be an int, list of ints or tuple of ints of size 1 but got size ",
              kernel_size.size());
  EMBER_CHECK(stride.empty() || stride.size() == 1,
              "max_pool1d() stride must be None, an int, list of ints, or tuple of ints of size 1 but got size ",
              stride.size());
  EMBER_CHECK(padding.size() == 1,
              "max_pool1d() padding must be an int, list of ints, or tuple of ints of size 1 but got size ",
              padding.size());
  EMBER_CHECK(dilation.size() == 1,
              "max_pool1d() dilation must be an int, list of ints or tuple of ints of size 1 but got size ",
              dilation.size());
  const int64_t k = kernel_size[0], s = stride.empty() ? k : stride[0], p = padding[0], d = dilation[0];
  EMBER_CHECK(k > 0, "max_pool1d() kernel_size must be greater than zero, but got ", k);
  EMBER_CHECK(s > 0, "max_pool1d() stride must be greater than zero, but got ", s);
  EMBER_CHECK(p >= 0, "max_pool1d() padding must be non-negative, but got ", p);
  EMBER_CHECK(p <= k / 2, "max_pool1d() padding should be at most half of kernel size, but got padding=", p,
              " and kernel_size=", k);
  EMBER_CHECK(d > 0, "max_pool1d() dilation must be greater than zero, but got ", d);
  const int64_t out_l = pooled_size(input.size(-1), k, p, s, d, ceil_mode);
  EMBER_CHECK(out_l > 0, "max_pool1d() Invalid computed output size: ", out_l);
  check_floating(input, "max_pool1d_impl");
  return max_pool2d(input.unsqueeze(-2), {1, k}, {1, s}, {0, p}, {1, d}, ceil_mode).squeeze(-2);
}

std::tuple<Tensor, Tensor> max_pool1d_with_indices(const Tensor& input, IntList kernel_size, IntList stride,
                                                   IntList padding, IntList dilation, bool ceil_mode) {
  detail::OpContext context("max_pool1d_with_indices", {{"input", &input}});
  detail::check_defined(input, "max_pool1d_with_indices");
  if (stride.empty()) stride = kernel_size;
  check_pool1d_rank(input, "max_pool1d");
  check_one_value(kernel_size, "max_pool1d", "kernel_size");
  check_one_value(stride, "max_pool1d", "stride");
  check_one_value(padding, "max_pool1d", "padding");
  check_one_value(dilation, "max_pool1d", "dilation");
  auto [out, indices] = max_pool2d_with_indices(input.unsqueeze(-2), {1, kernel_size[0]}, {1, stride[0]},
                                                {0, padding[0]}, {1, dilation[0]}, ceil_mode);
  return {out.squeeze(-2), indices.squeeze(-2)};
}

Tensor avg_pool1d(const Tensor& input, IntList kernel_size, IntList stride, IntList padding, bool ceil_mode,
                  bool count_include_pad) {
  detail::OpContext context("avg_pool1d", {{"input", &input}});
  detail::check_defined(input, "avg_pool1d");
  if (stride.empty()) stride = kernel_size;
  check_pool1d_rank(input, "avg_pool1d");
  check_one_value(kernel_size, "avg_pool1d", "kernel_size");
  check_one_value(stride, "avg_pool1d", "stride");
  check_one_value(padding, "avg_pool1d", "padding");
  return avg_pool2d(input.unsqueeze(-2), {1, kernel_size[0]}, {1, stride[0]}, {0, padding[0]}, ceil_mode,
                    count_include_pad)
      .squeeze(-2);
}

Tensor adaptive_avg_pool1d(const Tensor& input, IntList output_size) {
  detail::OpContext context("adaptive_avg_pool1d", {{"input", &input}});
  detail::check_defined(input, "adaptive_avg_pool1d");
  check_pool1d_rank(input, "adaptive_avg_pool1d");
  check_one_value(output_size, "adaptive_avg_pool1d", "output_size");
  return adaptive_avg_pool2d(input.unsqueeze(-2), {1, output_size[0]}).squeeze(-2);
}

}  // namespace ember
