// The convolution ops, conv2d and conv1d (nn::functional's and the layers' are thin wrappers
// over these). conv2d checks its arguments the way PyTorch's check_shape_forward does (with its
// messages), makes the operands contiguous, calls the backend once and records
// ConvolutionBackward0, whose gradients come from the backend too. A 1-D convolution is a 2-D one
// over a height of one, so conv1d runs on conv2d's kernels (oneDNN, cuDNN) and its
// ConvolutionBackward0; its checks are made first, in 1-D terms and with PyTorch's conv1d
// messages, so that no error speaks of a height the user never gave.
#include "ops/conv.h"

#include <array>
#include <string>
#include <vector>

#include "amp/autocast_policy.h"
#include "autograd/node.h"
#include "backend/backend.h"
#include "core/check.h"
#include "core/tensor_internal.h"
#include "ember/ops.h"

namespace ember {

// ---------------------------------------------------------------- conv2d

namespace {

/// A 1- or 2-element list as a [height, width] pair, with PyTorch's message otherwise.
std::array<int64_t, 2> expand_pair(IntList values, const char* name) {
  EMBER_CHECK(values.size() == 1 || values.size() == 2, "expected ", name,
              " to be a single integer value or a list of 2 values to match the convolution dimensions, but got ", name,
              "=", detail::shape_str(values));
  return {values[0], values.size() == 2 ? values[1] : values[0]};
}

/// How PyTorch names a dtype in "Input type (...) and ... type (...)" messages.
std::string type_name(Dtype d) {
  switch (d) {
    case kFloat32:
      return "float";
    case kFloat64:
      return "double";
    case kFloat16:
      return "c10::Half";
    case kBFloat16:
      return "c10::BFloat16";
    default:
      return std::string(scalar_type_name(d));
  }
}

void check_operand(const Tensor& input, const Tensor& t, const char* what) {
  EMBER_CHECK(t.dtype() == input.dtype(), "Input type (", type_name(input.dtype()), ") and ", what, " type (",
              type_name(t.dtype()), ") should be the same");
  EMBER_CHECK(t.device() == input.device(), "Expected all tensors to be on the same device, but found at least two ",
              "devices, ", input.device(), " and ", t.device(), "!");
}

// PyTorch has no message of its own here: a weight of the wrong rank fails its stride check.
void check_weight_dims(const Tensor& weight) {
  EMBER_CHECK(weight.dim() == 4,
              "Expected 4-dimensional weight [out_channels, in_channels/groups, kH, kW] for conv2d, ",
              "but got weight of size ", detail::shape_str(weight.sizes()));
}

/// Checks a batched input against weight, bias and geometry; returns the output's sizes.
std::array<int64_t, 4> check_and_size(const Tensor& input, const Tensor& weight, const Tensor& bias,
                                      const Conv2dArgs& args) {
  check_weight_dims(weight);
  EMBER_CHECK(input.is_floating_point(), "\"conv2d\" not implemented for '", scalar_type_name(input.dtype()), "'");
  check_operand(input, weight, "weight");
  if (bias.defined()) check_operand(input, bias, "bias");
  EMBER_CHECK(args.groups > 0, "non-positive groups is not supported");
  for (int i = 0; i < 2; ++i) {
    EMBER_CHECK(args.padding[i] >= 0, "negative padding is not supported");
    EMBER_CHECK(args.stride[i] > 0, "non-positive stride is not supported");
  }
  EMBER_CHECK(args.dilation[0] > 0 && args.dilation[1] > 0, "dilation should be greater than zero, but got [",
              args.dilation[0], ", ", args.dilation[1], "]");
  const IntList w = weight.sizes();
  // PyTorch prints the weight's sizes in double brackets in this one message; kept for parity.
  EMBER_CHECK(w[0] % args.groups == 0, "Given groups=", args.groups, ", expected weight to be divisible by ",
              args.groups, " at dimension 0, but got weight of size [", detail::shape_str(w), "] instead");
  EMBER_CHECK(input.size(1) == w[1] * args.groups, "Given groups=", args.groups, ", weight of size ",
              detail::shape_str(w), ", expected input", detail::shape_str(input.sizes()), " to have ",
              w[1] * args.groups, " channels, but got ", input.size(1), " channels instead");
  EMBER_CHECK(!bias.defined() || (bias.dim() == 1 && bias.size(0) == w[0]), "Given weight of size ",
              detail::shape_str(w), ", expected bias to be 1-dimensional with ", w[0],
              " elements, but got bias of size ", detail::shape_str(bias.sizes()), " instead");
  int64_t padded[2], extent[2];
  bool fits = true;
  for (int i = 0; i < 2; ++i) {
    padded[i] = input.size(2 + i) + 2 * args.padding[i];
    extent[i] = args.dilation[i] * (w[2 + i] - 1) + 1;
    fits = fits && padded[i] >= extent[i];
  }
  EMBER_CHECK(fits, "Calculated padded input size per channel: (", padded[0], " x ", padded[1], "). Kernel size: (",
              extent[0], " x ", extent[1], "). Kernel size can't be greater than actual input size");
  return {input.size(0), w[0], (padded[0] - extent[0]) / args.stride[0] + 1,
          (padded[1] - extent[1]) / args.stride[1] + 1};
}

/// A view with sizes and no data, for an operand the backend will not read.
TensorView shape_only(const Dims& sizes, Dtype dtype) {
  TensorView v;
  v.sizes = sizes;
  v.strides = detail::contiguous_strides(sizes);
  v.dtype = dtype;
  return v;
}

Tensor conv2d_batched(const Tensor& input, const Tensor& weight, const Tensor& bias, const Conv2dArgs& args);
Tensor conv_weight_grad(const Tensor& x, const Tensor& g, const Dims& w_sizes, const Conv2dArgs& args);

// conv2d's gradients for the input and the weight as ops of their own, for a backward pass that
// records itself (create_graph). Both are bilinear, so their gradients are conv2d and each
// other: for gx = input_grad(g, w), d<gg, gx>/dg = conv2d(gg, w) and d/dw = weight_grad(gg, g);
// for gw = weight_grad(x, g), d<gg, gw>/dx = input_grad(g, gg) and d/dg = conv2d(x, gg).
Tensor conv_input_grad(const Tensor& g, const Tensor& w, const Dims& x_sizes, const Conv2dArgs& args) {
  const Tensor gc = g.contiguous(), wc = w.contiguous();
  Tensor gx = detail::make_tensor(x_sizes, g.dtype(), g.device());
  backend_for(g.device())
      .conv2d_backward(view_of(gc), shape_only(x_sizes, g.dtype()), view_of(wc), args, view_of(gx), TensorView{},
                       TensorView{});
  if (autograd::needs_grad({&g, &w})) {
    autograd::record(
        gx, "ConvolutionBackwardBackward0", {&g, &w},
        [args, saved_g = autograd::SavedTensor(g), saved_w = autograd::SavedTensor(w),
         w_sizes = Dims(w.sizes())](const Tensor& gg) {
          const Tensor g0 = saved_g.get(), w0 = saved_w.get();
          return std::vector<Tensor>{conv2d_batched(gg, w0, Tensor(), args), conv_weight_grad(gg, g0, w_sizes, args)};
        });
  }
  return gx;
}

Tensor conv_weight_grad(const Tensor& x, const Tensor& g, const Dims& w_sizes, const Conv2dArgs& args) {
  const Tensor xc = x.contiguous(), gc = g.contiguous();
  Tensor gw = detail::make_tensor(w_sizes, g.dtype(), g.device());
  backend_for(g.device())
      .conv2d_backward(view_of(gc), view_of(xc), shape_only(w_sizes, g.dtype()), args, TensorView{}, view_of(gw),
                       TensorView{});
  if (autograd::needs_grad({&x, &g})) {
    autograd::record(
        gw, "ConvolutionBackwardBackward0", {&x, &g},
        [args, saved_x = autograd::SavedTensor(x), saved_g = autograd::SavedTensor(g),
         x_sizes = Dims(x.sizes())](const Tensor& gg) {
          const Tensor x0 = saved_x.get(), g0 = saved_g.get();
          return std::vector<Tensor>{conv_input_grad(g0, gg, x_sizes, args), conv2d_batched(x0, gg, Tensor(), args)};
        });
  }
  return gw;
}

Tensor conv2d_batched(const Tensor& input, const Tensor& weight, const Tensor& bias, const Conv2dArgs& args) {
  const std::array<int64_t, 4> out_sizes = check_and_size(input, weight, bias, args);
  Tensor x = input.contiguous();
  Tensor w = weight.contiguous();
  Tensor b = bias.defined() ? bias.contiguous() : Tensor();
  Tensor out = detail::make_tensor(out_sizes, input.dtype(), input.device());
  Backend& backend = backend_for(input.device());
  if (out.numel() > 0)
    backend.conv2d(view_of(x), view_of(w), b.defined() ? view_of(b) : TensorView{}, view_of(out), args);
  if (autograd::needs_grad({&input, &weight, &bias})) {
    const bool want_x = input.requires_grad();
    const bool want_w = weight.requires_grad();
    const bool want_b = bias.defined() && bias.requires_grad();
    // Only what the wanted gradients read is kept: x for the weight's, w for the input's. The
    // backend reads an operand's data only for the gradient that needs it, so the other is
    // passed by its sizes alone.
    autograd::record(
        out, "ConvolutionBackward0", {&input, &weight, &bias},
        [args, want_x, want_w, want_b, saved_x = autograd::SavedTensor(want_w ? x : Tensor()),
         saved_w = autograd::SavedTensor(want_x ? w : Tensor()), x_sizes = Dims(x.sizes()), w_sizes = Dims(w.sizes()),
         dtype = x.dtype(), device = x.device()](const Tensor& grad) {
          if (GradMode::is_enabled()) {
            return std::vector<Tensor>{want_x ? conv_input_grad(grad, saved_w.get(), x_sizes, args) : Tensor(),
                                       want_w ? conv_weight_grad(saved_x.get(), grad, w_sizes, args) : Tensor(),
                                       want_b ? grad.sum(std::vector<int64_t>{0, 2, 3}) : Tensor()};
          }
          Tensor g = grad.contiguous();
          const TensorView xv = want_w ? view_of(saved_x.get()) : shape_only(x_sizes, dtype);
          const TensorView wv = want_x ? view_of(saved_w.get()) : shape_only(w_sizes, dtype);
          Tensor gx = want_x ? detail::make_tensor(x_sizes, dtype, device) : Tensor();
          Tensor gw = want_w ? detail::make_tensor(w_sizes, dtype, device) : Tensor();
          Tensor gb = want_b ? detail::make_tensor({w_sizes[0]}, dtype, device) : Tensor();
          backend_for(device).conv2d_backward(view_of(g), xv, wv, args, want_x ? view_of(gx) : TensorView{},
                                              want_w ? view_of(gw) : TensorView{}, want_b ? view_of(gb) : TensorView{});
          return std::vector<Tensor>{gx, gw, gb};
        });
  }
  return out;
}

/// Unbatched [C, H, W] inputs run as a batch of one, as PyTorch's conv2d does.
Tensor conv2d_any(const Tensor& input, const Tensor& weight, const Tensor& bias, const Conv2dArgs& args) {
  if (const auto device = amp::detail::autocast_device(input, weight, bias)) {
    return amp::detail::autocast_call(amp::detail::CastPolicy::LowerPrecision, *device, conv2d_any, input, weight, bias,
                                      args);
  }
  detail::OpContext context("conv2d", {{"input", &input}, {"weight", &weight}, {"bias", &bias}});
  detail::check_defined(input, "conv2d");
  detail::check_defined(weight, "conv2d");
  EMBER_CHECK(input.dim() == 3 || input.dim() == 4,
              "Expected 3D (unbatched) or 4D (batched) input to conv2d, but got input of size: ",
              detail::shape_str(input.sizes()));
  if (input.dim() == 4) return conv2d_batched(input, weight, bias, args);
  return conv2d_batched(input.unsqueeze(0), weight, bias, args).squeeze(0);
}

Conv2dArgs make_args(IntList stride, IntList padding, IntList dilation, int64_t groups) {
  Conv2dArgs args;
  const auto s = expand_pair(stride, "stride");
  const auto p = expand_pair(padding, "padding");
  const auto d = expand_pair(dilation, "dilation");
  for (int i = 0; i < 2; ++i) {
    args.stride[i] = s[i];
    args.padding[i] = p[i];
    args.dilation[i] = d[i];
  }
  args.groups = groups;
  return args;
}

}  // namespace

Tensor conv2d(const Tensor& input, const Tensor& weight, const Tensor& bias, IntList stride, IntList padding,
              IntList dilation, int64_t groups) {
  return conv2d_any(input, weight, bias, make_args(stride, padding, dilation, groups));
}

namespace detail {

Tensor conv2d_with_args(const Tensor& input, const Tensor& weight, const Tensor& bias, const Conv2dArgs& args) {
  return conv2d_batched(input, weight, bias, args);
}

Tensor conv2d_weight_grad(const Tensor& x, const Tensor& g, IntList w_sizes, const Conv2dArgs& args) {
  return conv_weight_grad(x, g, Dims(w_sizes), args);
}

void check_conv_operand(const Tensor& input, const Tensor& t, const char* what) { check_operand(input, t, what); }

Tensor conv2d_padding_string(const Tensor& input, const Tensor& weight, const Tensor& bias, IntList stride,
                             std::string_view padding, IntList dilation, int64_t groups) {
  EMBER_CHECK(padding == "valid" || padding == "same", "Invalid padding string: '", padding, "'");
  Conv2dArgs args = make_args(stride, {0}, dilation, groups);
  if (padding == "valid") return conv2d_any(input, weight, bias, args);
  EMBER_CHECK(args.stride[0] == 1 && args.stride[1] == 1, "padding='same' is not supported for strided convolutions");
  detail::check_defined(weight, "conv2d");
  check_weight_dims(weight);
  // An odd total padding puts the extra row/column at the end. Padding one more on both sides
  // and dropping the first output row/column gives exactly that, with no padded copy of the input.
  bool odd[2];
  for (int i = 0; i < 2; ++i) {
    const int64_t total = args.dilation[i] * (weight.size(2 + i) - 1);
    odd[i] = total % 2 == 1;
    args.padding[i] = total / 2 + (odd[i] ? 1 : 0);
  }
  Tensor out = conv2d_any(input, weight, bias, args);
  const int64_t h_dim = out.dim() - 2;
  for (int i = 0; i < 2; ++i) {
    if (odd[i]) out = out.narrow(h_dim + i, 1, out.size(h_dim + i) - 1);
  }
  return out;
}

}  // namespace detail

// ---------------------------------------------------------------- conv1d

namespace {

void check_conv1d(const Tensor& input, const Tensor& weight, const Tensor& bias, int64_t stride, int64_t padding,
                  int64_t dilation, int64_t groups) {
  detail::check_defined(input, "conv1d");
  detail::check_defined(weight, "conv1d");
  EMBER_CHECK(input.dim() == 2 || input.dim() == 3,
              "Expected 2D (unbatched) or 3D (batched) input to conv1d, but got input of size: ",
              detail::shape_str(input.sizes()));
  EMBER_CHECK(weight.dim() == 3, "Expected 3-dimensional weight [out_channels, in_channels/groups, kernel_size] for ",
              "conv1d, but got weight of size ", detail::shape_str(weight.sizes()));
  EMBER_CHECK(groups > 0, "non-positive groups is not supported");
  EMBER_CHECK(padding >= 0, "negative padding is not supported");
  EMBER_CHECK(stride > 0, "non-positive stride is not supported");
  EMBER_CHECK(dilation > 0, "dilation should be greater than zero, but got [", dilation, "]");
  const Tensor batched = input.dim() == 3 ? input : input.unsqueeze(0);
  const IntList w = weight.sizes();
  EMBER_CHECK(w[0] % groups == 0, "Given groups=", groups, ", expected weight to be divisible by ", groups,
              " at dimension 0, but got weight of size [", detail::shape_str(w), "] instead");
  EMBER_CHECK(batched.size(1) == w[1] * groups, "Given groups=", groups, ", weight of size ", detail::shape_str(w),
              ", expected input", detail::shape_str(batched.sizes()), " to have ", w[1] * groups, " channels, but got ",
              batched.size(1), " channels instead");
  EMBER_CHECK(!bias.defined() || (bias.dim() == 1 && bias.size(0) == w[0]), "Given weight of size ",
              detail::shape_str(w), ", expected bias to be 1-dimensional with ", w[0],
              " elements, but got bias of size ", detail::shape_str(bias.sizes()), " instead");
  const int64_t padded = batched.size(2) + 2 * padding, extent = dilation * (w[2] - 1) + 1;
  EMBER_CHECK(padded >= extent, "Calculated padded input size per channel: (", padded, "). Kernel size: (", extent,
              "). Kernel size can't be greater than actual input size");
}

/// The [.., C, L] result of conv2d on [.., C, 1, L]: the height of one dropped again.
Tensor as_1d(const Tensor& out2d) { return out2d.squeeze(-2); }

}  // namespace

Tensor conv1d(const Tensor& input, const Tensor& weight, const Tensor& bias, int64_t stride, int64_t padding,
              int64_t dilation, int64_t groups) {
  if (const auto device = amp::detail::autocast_device(input, weight, bias)) {
    auto run = [&](const Tensor& x, const Tensor& w, const Tensor& b) {
      return conv1d(x, w, b, stride, padding, dilation, groups);
    };
    return amp::detail::autocast_call(amp::detail::CastPolicy::LowerPrecision, *device, run, input, weight, bias);
  }
  check_conv1d(input, weight, bias, stride, padding, dilation, groups);
  return as_1d(
      conv2d(input.unsqueeze(-2), weight.unsqueeze(2), bias, {1, stride}, {0, padding}, {1, dilation}, groups));
}

namespace detail {

Tensor conv1d_padding_string(const Tensor& input, const Tensor& weight, const Tensor& bias, int64_t stride,
                             std::string_view padding, int64_t dilation, int64_t groups) {
  if (const auto device = amp::detail::autocast_device(input, weight, bias)) {
    return amp::detail::autocast_call(amp::detail::CastPolicy::LowerPrecision, *device, conv1d_padding_string, input,
                                      weight, bias, stride, padding, dilation, groups);
  }
  EMBER_CHECK(padding == "valid" || padding == "same", "Invalid padding string: '", padding, "'");
  check_conv1d(input, weight, bias, stride, 0, dilation, groups);
  if (padding == "same") EMBER_CHECK(stride == 1, "padding='same' is not supported for strided convolutions");
  // "same" pads the (unit) height by nothing, since its kernel height is one.
  return as_1d(conv2d_padding_string(input.unsqueeze(-2), weight.unsqueeze(2), bias, {1, stride}, padding,
                                     {1, dilation}, groups));
}

}  // namespace detail

}  // namespace ember
