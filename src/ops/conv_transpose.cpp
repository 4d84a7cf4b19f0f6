// The transposed convolutions, conv_transpose2d and conv_transpose1d, built from conv2d's kernels
// with no kernel of their own. A transposed convolution is the input gradient of a regular one:
// its forward is the backend's conv2d_backward with grad_out = input and grad_x sized as the
// transposed output; its input gradient is conv2d's forward of grad_output with the same weight
// and geometry, its weight gradient conv2d's weight gradient with the roles of input and
// grad_output swapped, its bias gradient a sum over batch and positions. So it runs wherever
// conv2d runs (oneDNN or im2col on the CPU, cuDNN on CUDA), and one node, ConvolutionBackward0,
// is recorded, whose backward is made of conv2d's recorded pieces (ops/conv.h) for gradients of
// any order.
//
// The checks are PyTorch's, in its order: the rank (conv_transpose2d's or conv_transpose1d's
// words), _convolution's groups and parameter lists, check_shape_forward's shapes, then those of
// slow_conv_transpose2d (the kernel, dilation, output padding and output size, in 2-D terms even
// for conv_transpose1d, as PyTorch runs it in 2-D too).
#include "ember/conv_transpose.h"

#include <array>
#include <vector>

#include "amp/autocast_policy.h"
#include "autograd/node.h"
#include "backend/backend.h"
#include "core/check.h"
#include "core/tensor_internal.h"
#include "ember/grad_mode.h"
#include "ember/pad.h"
#include "ops/conv.h"

namespace ember {
namespace {

/// The parameters after PyTorch's expansion to one value per spatial dimension (1 or 2).
struct Params {
  std::vector<int64_t> stride, padding, output_padding, dilation;
  int64_t groups = 1;
};

/// A parameter list as one value per spatial dimension. `bound` is the list as PyTorch's
/// binding hands it over (a single value already repeated for each of the op's dimensions);
/// `dim` is the weight's number of spatial dimensions.
std::vector<int64_t> expand_param(const std::vector<int64_t>& bound, const char* name, int64_t dim) {
  if (bound.size() == 1) return std::vector<int64_t>(static_cast<size_t>(dim), bound[0]);
  EMBER_CHECK(static_cast<int64_t>(bound.size()) == dim, "expected ", name,
              " to be a single integer value or a list of ", dim,
              " values to match the convolution dimensions, but got ", name, "=", detail::shape_str(bound));
  return bound;
}

bool any_of(const std::vector<int64_t>& values, bool (*pred)(int64_t)) {
  for (int64_t v : values) {
    if (pred(v)) return true;
  }
  return false;
}

/// PyTorch's check_shape_forward for a transposed convolution, on the batched input.
void check_shape_forward(const Tensor& input, const Tensor& weight, const Tensor& bias, const Params& p) {
  EMBER_CHECK(!any_of(p.padding, [](int64_t v) { return v < 0; }), "negative padding is not supported");
  EMBER_CHECK(!any_of(p.output_padding, [](int64_t v) { return v < 0; }), "negative output_padding is not supported");
  EMBER_CHECK(!any_of(p.stride, [](int64_t v) { return v <= 0; }), "non-positive stride is not supported");
  EMBER_CHECK(!any_of(p.dilation, [](int64_t v) { return v < 0; }), "dilation should be greater than zero");
  const IntList w = weight.sizes();
  EMBER_CHECK(weight.dim() == input.dim(), "Expected ", weight.dim(), "-dimensional input for ", weight.dim(),
              "-dimensional weight ", detail::shape_str(w), ", but got ", input.dim(), "-dimensional input of size ",
              detail::shape_str(input.sizes()), " instead");
  EMBER_CHECK(w[0] >= p.groups, "Given groups=", p.groups, ", expected weight to be at least ", p.groups,
              " at dimension 0, but got weight of size ", detail::shape_str(w), " instead");
  // PyTorch prints the weight's sizes in double brackets in this one message; kept for parity.
  EMBER_CHECK(w[0] % p.groups == 0, "Given groups=", p.groups, ", expected weight to be divisible by ", p.groups,
              " at dimension 0, but got weight of size [", detail::shape_str(w), "] instead");
  EMBER_CHECK(input.size(1) == w[0], "Given transposed=1, weight of size ", detail::shape_str(w), ", expected input",
              detail::shape_str(input.sizes()), " to have ", w[0], " channels, but got ", input.size(1),
              " channels instead");
  EMBER_CHECK(!bias.defined() || (bias.dim() == 1 && bias.size(0) == w[1] * p.groups),
              "Given transposed=1, weight of size ", detail::shape_str(w), ", expected bias to be 1-dimensional with ",
              w[1] * p.groups, " elements, but got bias of size ", detail::shape_str(bias.sizes()), " instead");
  // _select_conv_backend: an empty batch (or no channels) is fine, empty planes are not.
  EMBER_CHECK(
      input.size(0) == 0 || input.size(1) == 0 || input.numel() != 0,
      "Only zero batch or zero channel inputs are supported, but got input shape: ", detail::shape_str(input.sizes()));
}

/// [N, C, L] as [N, C, 1, L] (a view); 4-D tensors as they are.
Tensor as_4d(const Tensor& t) { return t.dim() == 3 ? t.unsqueeze(2) : t; }
/// The inverse of as_4d for a result whose counterpart had `rank` dimensions.
Tensor from_4d(const Tensor& t, int64_t rank) { return t.defined() && rank == 3 ? t.squeeze(2) : t; }

/// A contiguous tensor's view for the backend, as 4-D: a 3-D [N, C, L] one as [N, C, 1, L].
TensorView view_4d(const Tensor& t) {
  TensorView v = view_of(t);
  if (t.dim() == 3) {
    v.sizes = Dims{t.size(0), t.size(1), 1, t.size(2)};
    v.strides = detail::contiguous_strides(v.sizes);
  }
  return v;
}

/// A view with sizes and no data, for an operand the backend will not read.
TensorView shape_only(IntList sizes, Dtype dtype) {
  TensorView v;
  v.sizes = Dims(sizes);
  v.strides = detail::contiguous_strides(sizes);
  v.dtype = dtype;
  return v;
}

/// The transposed convolution of a batched input (3-D for conv_transpose1d, with the height of
/// one its 2-D geometry `p` gives it; 4-D otherwise) whose shapes check_shape_forward accepted.
/// `op` names the op in the dtype message.
Tensor conv_transpose_batched(const Tensor& input, const Tensor& weight, const Tensor& bias, const Params& p,
                              const char* op) {
  EMBER_CHECK(input.is_floating_point(), "\"", op, "\" not implemented for '", scalar_type_name(input.dtype()), "'");
  detail::check_conv_operand(input, weight, "weight");
  if (bias.defined()) detail::check_conv_operand(input, bias, "bias");
  // slow_conv_transpose2d_shape_check's words, in 2-D terms.
  const Tensor x4 = as_4d(input), w4 = as_4d(weight);
  const int64_t kh = w4.size(2), kw = w4.size(3);
  const int64_t sh = p.stride[0], sw = p.stride[1], dh = p.dilation[0], dw = p.dilation[1];
  const int64_t oph = p.output_padding[0], opw = p.output_padding[1];
  EMBER_CHECK(kw > 0 && kh > 0, "kernel size should be greater than zero, but got kernel_height: ", kh,
              " kernel_width: ", kw);
  EMBER_CHECK(dw > 0 && dh > 0, "dilation should be greater than zero, but got dilation_height: ", dh,
              ", dilation_width: ", dw);
  EMBER_CHECK((opw < sw || opw < dw) && (oph < sh || oph < dh),
              "output padding must be smaller than either stride or dilation, but got output_padding_height: ", oph,
              " output_padding_width: ", opw, " stride_height: ", sh, " stride_width: ", sw, " dilation_height: ", dh,
              " dilation_width: ", dw);
  EMBER_CHECK(weight.numel() != 0,
              "non-empty 2D or 4D weight tensor expected, but got: ", detail::shape_str(w4.sizes()));
  std::array<int64_t, 2> out_hw{}, covered{};
  for (int i = 0; i < 2; ++i) {
    const int64_t extent = p.dilation[i] * (w4.size(2 + i) - 1) + 1;
    out_hw[i] = (x4.size(2 + i) - 1) * p.stride[i] - 2 * p.padding[i] + extent + p.output_padding[i];
    // The rows of the regular convolution over the output: the input's, plus one more for each
    // whole stride in output_padding (possible when output_padding >= stride < dilation).
    if (out_hw[i] >= 1) covered[i] = (out_hw[i] + 2 * p.padding[i] - extent) / p.stride[i] + 1;
  }
  EMBER_CHECK(out_hw[0] >= 1 && out_hw[1] >= 1, "Given input size per channel: (", x4.size(2), " x ", x4.size(3),
              "). Calculated output size per channel: (", out_hw[0], " x ", out_hw[1], "). Output size is too small");

  Conv2dArgs args;
  for (int i = 0; i < 2; ++i) {
    args.stride[i] = p.stride[i];
    args.padding[i] = p.padding[i];
    args.dilation[i] = p.dilation[i];
  }
  args.groups = p.groups;

  // Where output_padding reaches past a whole stride, the regular convolution over the output
  // has more rows than the input: they are zeros (recorded, so the gradient is cut back).
  Tensor x = input;
  if (covered[0] != x4.size(2) || covered[1] != x4.size(3)) {
    const int64_t more_w = covered[1] - x4.size(3), more_h = covered[0] - x4.size(2);
    x = input.dim() == 3 ? pad(input, {0, more_w}) : pad(input, {0, more_w, 0, more_h});
  }
  const int64_t rank = input.dim();
  const Tensor xc = x.contiguous(), wc = weight.contiguous();
  const Tensor bc = bias.defined() ? bias.contiguous() : Tensor();
  const int64_t out_channels = w4.size(1) * p.groups;
  Dims out_sizes =
      rank == 3 ? Dims{xc.size(0), out_channels, out_hw[1]} : Dims{xc.size(0), out_channels, out_hw[0], out_hw[1]};
  Tensor out = detail::make_tensor(out_sizes, input.dtype(), input.device());
  if (out.numel() > 0) {
    const Dims out_4d{out_sizes[0], out_channels, out_hw[0], out_hw[1]};
    backend_for(input.device())
        .conv2d_backward(view_4d(xc), shape_only(out_4d, input.dtype()), view_4d(wc), args, view_4d(out), TensorView{},
                         TensorView{});
    if (bc.defined()) {
      const NoGradGuard no_grad;
      out.add_(rank == 3 ? bc.view({1, out_channels, 1}) : bc.view({1, out_channels, 1, 1}));
    }
  }
  if (autograd::needs_grad({&x, &weight, &bias})) {
    const bool want_x = x.requires_grad();
    const bool want_w = weight.requires_grad();
    const bool want_b = bias.defined() && bias.requires_grad();
    // Only what the wanted gradients read is kept: x for the weight's, the weight for x's.
    autograd::record(
        out, "ConvolutionBackward0", {&x, &weight, &bias},
        [args, want_x, want_w, want_b, rank, saved_x = autograd::SavedTensor(want_w ? xc : Tensor()),
         saved_w = autograd::SavedTensor(want_x ? wc : Tensor()),
         w_sizes = Dims(as_4d(wc).sizes())](const Tensor& grad) {
          const Tensor g = as_4d(grad);
          Tensor gx, gw, gb;
          if (want_x) gx = detail::conv2d_with_args(g, as_4d(saved_w.get()), Tensor(), args);
          if (want_w) gw = detail::conv2d_weight_grad(g, as_4d(saved_x.get()), w_sizes, args);
          if (want_b) gb = rank == 3 ? grad.sum(std::vector<int64_t>{0, 2}) : grad.sum(std::vector<int64_t>{0, 2, 3});
          return std::vector<Tensor>{from_4d(gx, rank), from_4d(gw, rank), gb};
        });
  }
  return out;
}

Tensor conv_transpose2d_impl(const Tensor& input, const Tensor& weight, const Tensor& bias, IntList stride,
                             IntList padding, IntList output_padding, int64_t groups, IntList dilation) {
  detail::OpContext context("conv_transpose2d", {{"input", &input}, {"weight", &weight}, {"bias", &bias}});
  detail::check_defined(input, "conv_transpose2d");
  detail::check_defined(weight, "conv_transpose2d");
  EMBER_CHECK(input.dim() == 3 || input.dim() == 4,
              "Expected 3D (unbatched) or 4D (batched) input to conv_transpose2d, but got input of size: ",
              detail::shape_str(input.sizes()));
  const Tensor batched = input.dim() == 4 ? input : input.unsqueeze(0);
  EMBER_CHECK(groups > 0, "non-positive groups is not supported");
  EMBER_CHECK(weight.dim() >= 3, "weight should have at least three dimensions");
  // PyTorch's binding repeats a single value for both dimensions, then _convolution expands each
  // list to the weight's number of spatial dimensions.
  auto bound = [](IntList values) {
    std::vector<int64_t> v(values.begin(), values.end());
    if (v.size() == 1) v.push_back(v[0]);
    return v;
  };
  const int64_t dim = weight.dim() - 2;
  Params p;
  p.stride = expand_param(bound(stride), "stride", dim);
  p.padding = expand_param(bound(padding), "padding", dim);
  p.dilation = expand_param(bound(dilation), "dilation", dim);
  p.output_padding = expand_param(bound(output_padding), "output_padding", dim);
  p.groups = groups;
  check_shape_forward(batched, weight, bias, p);
  const Tensor out = conv_transpose_batched(batched, weight, bias, p, "conv_transpose2d");
  return input.dim() == 4 ? out : out.squeeze(0);
}

Tensor conv_transpose1d_impl(const Tensor& input, const Tensor& weight, const Tensor& bias, int64_t stride,
                             int64_t padding, int64_t output_padding, int64_t groups, int64_t dilation) {
  detail::OpContext context("conv_transpose1d", {{"input", &input}, {"weight", &weight}, {"bias", &bias}});
  detail::check_defined(input, "conv_transpose1d");
  detail::check_defined(weight, "conv_transpose1d");
  EMBER_CHECK(input.dim() == 2 || input.dim() == 3,
              "Expected 2D (unbatched) or 3D (batched) input to conv_transpose1d, but got input of size: ",
              detail::shape_str(input.sizes()));
  const Tensor batched = input.dim() == 3 ? input : input.unsqueeze(0);
  EMBER_CHECK(groups > 0, "non-positive groups is not supported");
  EMBER_CHECK(weight.dim() >= 3, "weight should have at least three dimensions");
  const int64_t dim = weight.dim() - 2;
  Params p;
  p.stride.assign(static_cast<size_t>(dim), stride);
  p.padding.assign(static_cast<size_t>(dim), padding);
  p.dilation.assign(static_cast<size_t>(dim), dilation);
  p.output_padding.assign(static_cast<size_t>(dim), output_padding);
  p.groups = groups;
  check_shape_forward(batched, weight, bias, p);
  // In 2-D terms, over a height of one (as PyTorch's view1d_as_2d).
  p.stride = {1, stride};
  p.padding = {0, padding};
  p.dilation = {1, dilation};
  p.output_padding = {0, output_padding};
  const Tensor out = conv_transpose_batched(batched, weight, bias, p, "conv_transpose1d");
  return input.dim() == 3 ? out : out.squeeze(0);
}

}  // namespace

Tensor conv_transpose2d(const Tensor& input, const Tensor& weight, const Tensor& bias, IntList stride, IntList padding,
                        IntList output_padding, int64_t groups, IntList dilation) {
  if (const auto device = amp::detail::autocast_device(input, weight, bias)) {
    return amp::detail::autocast_call(amp::detail::CastPolicy::LowerPrecision, *device, conv_transpose2d_impl, input,
                                      weight, bias, stride, padding, output_padding, groups, dilation);
  }
  return conv_transpose2d_impl(input, weight, bias, stride, padding, output_padding, groups, dilation);
}

Tensor conv_transpose1d(const Tensor& input, const Tensor& weight, const Tensor& bias, int64_t stride, int64_t padding,
                        int64_t output_padding, int64_t groups, int64_t dilation) {
  if (const auto device = amp::detail::autocast_device(input, weight, bias)) {
    return amp::detail::autocast_call(amp::detail::CastPolicy::LowerPrecision, *device, conv_transpose1d_impl, input,
                                      weight, bias, stride, padding, output_padding, groups, dilation);
  }
  return conv_transpose1d_impl(input, weight, bias, stride, padding, output_padding, groups, dilation);
}

}  // namespace ember
