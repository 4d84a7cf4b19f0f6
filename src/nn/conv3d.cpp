// conv3d and conv_transpose3d (include/ember/nn/conv3d.h) composed of the 2-D ops, and the
// Conv3d and ConvTranspose3d layers. The checks are PyTorch's (its words and order, in 3-D
// terms) and all run before any 2-D op, so no error speaks of the folded 2-D shapes.
#include "ember/nn/conv3d.h"

#include <array>
#include <cmath>
#include <utility>
#include <vector>

#include "core/check.h"
#include "core/tensor_internal.h"
#include "ember/conv_transpose.h"
#include "ember/factories.h"
#include "ember/ops.h"
#include "ember/pad.h"
#include "nn/conv_init.h"

namespace ember::nn {

namespace functional {

namespace {

using Triple = std::array<int64_t, 3>;

/// A 1- or 3-element list as a [depth, height, width] triple, with PyTorch's message otherwise.
Triple expand_triple(IntList values, const char* name) {
  EMBER_CHECK(values.size() == 1 || values.size() == 3, "expected ", name,
              " to be a single integer value or a list of 3 values to match the convolution dimensions, but got ", name,
              "=", ember::detail::shape_str(values));
  if (values.size() == 1) return {values[0], values[0], values[0]};
  return {values[0], values[1], values[2]};
}

IntList tail2(const Triple& t) { return {t.data() + 1, 2}; }

/// How PyTorch names a dtype in "Input type (...) and weight type (...)" messages.
std::string tensor_type_name(Dtype d) {
  switch (d) {
    case kFloat32:
      return "torch.FloatTensor";
    case kFloat64:
      return "torch.DoubleTensor";
    case kFloat16:
      return "torch.HalfTensor";
    case kBFloat16:
      return "torch.BFloat16Tensor";
    default:
      return "torch." + std::string(scalar_type_name(d)) + "Tensor";
  }
}

void check_operand(const Tensor& input, const Tensor& t, const char* what) {
  EMBER_CHECK(t.dtype() == input.dtype(), "Input type (", tensor_type_name(input.dtype()), ") and ", what, " type (",
              tensor_type_name(t.dtype()),
              ") should be the same or input should be a MKLDNN tensor and weight is a dense tensor");
  EMBER_CHECK(t.device() == input.device(), "Expected all tensors to be on the same device, but found at least two ",
              "devices, ", input.device(), " and ", t.device(), "!");
}

void check_weight_rank(const Tensor& weight, const char* op, const char* layout) {
  EMBER_CHECK(weight.dim() == 5, "Expected 5-dimensional weight ", layout, " for ", op, ", but got weight of size ",
              ember::detail::shape_str(weight.sizes()));
}

void check_rank(const Tensor& input, const char* op) {
  EMBER_CHECK(input.dim() == 4 || input.dim() == 5, "Expected 4D (unbatched) or 5D (batched) input to ", op,
              ", but got input of size: ", ember::detail::shape_str(input.sizes()));
}

/// The common parameter checks of PyTorch's _convolution / check_shape_forward.
void check_parameters(const Triple& stride, const Triple& padding, const Triple& dilation, int64_t groups) {
  EMBER_CHECK(groups > 0, "non-positive groups is not supported");
  for (int i = 0; i < 3; ++i) EMBER_CHECK(padding[i] >= 0, "negative padding is not supported");
  for (int i = 0; i < 3; ++i) EMBER_CHECK(stride[i] > 0, "non-positive stride is not supported");
  for (int i = 0; i < 3; ++i) EMBER_CHECK(dilation[i] >= 0, "dilation should be greater than zero");
}

/// conv3d's checks on a batched input; returns the output's spatial sizes.
Triple check_conv3d(const Tensor& input, const Tensor& weight, const Tensor& bias, const Triple& stride,
                    const Triple& padding, const Triple& dilation, int64_t groups) {
  check_parameters(stride, padding, dilation, groups);
  const IntList w = weight.sizes();
  EMBER_CHECK(w[0] >= groups, "Given groups=", groups, ", expected weight to be at least ", groups,
              " at dimension 0, but got weight of size ", ember::detail::shape_str(w), " instead");
  EMBER_CHECK(w[0] % groups == 0, "Given groups=", groups, ", expected weight to be divisible by ", groups,
              " at dimension 0, but got weight of size [", ember::detail::shape_str(w), "] instead");
  EMBER_CHECK(input.size(1) == w[1] * groups, "Given groups=", groups, ", weight of size ", ember::detail::shape_str(w),
              ", expected input", ember::detail::shape_str(input.sizes()), " to have ", w[1] * groups,
              " channels, but got ", input.size(1), " channels instead");
  EMBER_CHECK(!bias.defined() || (bias.dim() == 1 && bias.size(0) == w[0]), "Given weight of size ",
              ember::detail::shape_str(w), ", expected bias to be 1-dimensional with ", w[0],
              " elements, but got bias of size ", ember::detail::shape_str(bias.sizes()), " instead");
  Triple padded{}, extent{}, out{};
  bool fits = true;
  for (int i = 0; i < 3; ++i) {
    padded[i] = input.size(2 + i) + 2 * padding[i];
    extent[i] = dilation[i] * (w[2 + i] - 1) + 1;
    fits = fits && padded[i] >= extent[i];
    out[i] = (padded[i] - extent[i]) / stride[i] + 1;
  }
  EMBER_CHECK(fits, "Calculated padded input size per channel: (", padded[0], " x ", padded[1], " x ", padded[2],
              "). Kernel size: (", extent[0], " x ", extent[1], " x ", extent[2],
              "). Kernel size can't be greater than actual input size");
  for (int i = 0; i < 3; ++i) EMBER_CHECK(dilation[i] > 0, "non-positive dilation is not supported");
  EMBER_CHECK(input.is_floating_point(), "\"conv3d\" not implemented for '", scalar_type_name(input.dtype()), "'");
  check_operand(input, weight, "weight");
  if (bias.defined()) check_operand(input, bias, "bias");
  return out;
}

/// conv3d of a checked, batched input: one conv2d over the output planes folded into the batch,
/// each reading its kD input planes stacked along the channels.
Tensor conv3d_batched(const Tensor& input, const Tensor& weight, const Tensor& bias, const Triple& stride,
                      const Triple& padding, const Triple& dilation, int64_t groups, const Triple& out) {
  const int64_t n = input.size(0), c = input.size(1), h = input.size(3), w = input.size(4);
  const int64_t o = weight.size(0), kd = weight.size(2), od = out[0];
  const int64_t cg = c / groups;
  // Only the depth is padded here; conv2d pads the height and width itself.
  const Tensor x = padding[0] > 0 ? ember::pad(input, {0, 0, 0, 0, padding[0], padding[0]}) : input;
  // Plane t of slice k is input plane t * stride + k * dilation: [N, C, od, H, W] each, made
  // [N, od, g, C/g, H, W] and stacked at dimension 3, so that channel block j of the 2-D input
  // holds [kD, C/g] as the folded weight's block j does.
  std::vector<Tensor> slices;
  slices.reserve(static_cast<size_t>(kd));
  for (int64_t k = 0; k < kd; ++k) {
    const int64_t start = k * dilation[0];
    const Tensor s = x.slice(2, start, start + (od - 1) * stride[0] + 1, stride[0]);
    slices.push_back(s.view({n, groups, cg, od, h, w}).permute({0, 3, 1, 2, 4, 5}));
  }
  const Tensor stacked = ember::stack(slices, 3).view({n * od, kd * c, h, w});
  const Tensor w2d = weight.permute({0, 2, 1, 3, 4}).reshape({o, kd * cg, weight.size(3), weight.size(4)});
  const Tensor y = ember::conv2d(stacked, w2d, bias, tail2(stride), tail2(padding), tail2(dilation), groups);
  return y.view({n, od, o, y.size(2), y.size(3)}).permute({0, 2, 1, 3, 4}).contiguous();
}

Tensor conv3d_any(const Tensor& input, const Tensor& weight, const Tensor& bias, const Triple& stride,
                  const Triple& padding, const Triple& dilation, int64_t groups) {
  const bool batched = input.dim() == 5;
  const Tensor x = batched ? input : input.unsqueeze(0);
  const Triple out = check_conv3d(x, weight, bias, stride, padding, dilation, groups);
  const Tensor y = conv3d_batched(x, weight, bias, stride, padding, dilation, groups, out);
  return batched ? y : y.squeeze(0);
}

void check_defined_operands(const Tensor& input, const Tensor& weight, const char* op) {
  ember::detail::check_defined(input, op);
  ember::detail::check_defined(weight, op);
}

}  // namespace

Tensor conv3d(const Tensor& input, const Tensor& weight, const Tensor& bias, IntList stride, IntList padding,
              IntList dilation, int64_t groups) {
  ember::detail::OpContext context("conv3d", {{"input", &input}, {"weight", &weight}, {"bias", &bias}});
  check_defined_operands(input, weight, "conv3d");
  check_rank(input, "conv3d");
  const Triple s = expand_triple(stride, "stride"), p = expand_triple(padding, "padding"),
               d = expand_triple(dilation, "dilation");
  check_weight_rank(weight, "conv3d", "[out_channels, in_channels/groups, kD, kH, kW]");
  return conv3d_any(input, weight, bias, s, p, d, groups);
}

namespace detail {

Tensor conv3d_padding_string(const Tensor& input, const Tensor& weight, const Tensor& bias, IntList stride,
                             std::string_view padding, IntList dilation, int64_t groups) {
  ember::detail::OpContext context("conv3d", {{"input", &input}, {"weight", &weight}, {"bias", &bias}});
  EMBER_CHECK(padding == "valid" || padding == "same", "Invalid padding string: '", padding, "'");
  check_defined_operands(input, weight, "conv3d");
  check_rank(input, "conv3d");
  const Triple s = expand_triple(stride, "stride"), d = expand_triple(dilation, "dilation");
  check_weight_rank(weight, "conv3d", "[out_channels, in_channels/groups, kD, kH, kW]");
  if (padding == "valid") return conv3d_any(input, weight, bias, s, {0, 0, 0}, d, groups);
  for (int i = 0; i < 3; ++i) {
    EMBER_CHECK(s[i] == 1, "padding='same' is not supported for strided convolutions");
  }
  // Each dimension is padded by dilation * (k - 1) in all, half before; an odd total puts the
  // extra element at the end, which a one-sided pad of the input adds first.
  Triple symmetric{};
  std::vector<int64_t> extra(6, 0);  // ember::pad's order: width, height, depth
  bool any_extra = false;
  for (int i = 0; i < 3; ++i) {
    const int64_t total = d[i] * (weight.size(2 + i) - 1);
    symmetric[i] = total / 2;
    if (total % 2 == 1) {
      extra[static_cast<size_t>(2 * (2 - i) + 1)] = 1;
      any_extra = true;
    }
  }
  const Tensor x = any_extra ? ember::pad(input, extra) : input;
  return conv3d_any(x, weight, bias, s, symmetric, d, groups);
}

}  // namespace detail

// ---------------------------------------------------------------- conv_transpose3d

namespace {

/// PyTorch's checks of a transposed convolution on a batched input, in its order; returns the
/// output's spatial sizes.
Triple check_conv_transpose3d(const Tensor& input, const Tensor& weight, const Tensor& bias, const Triple& stride,
                              const Triple& padding, const Triple& output_padding, const Triple& dilation,
                              int64_t groups) {
  EMBER_CHECK(groups > 0, "non-positive groups is not supported");
  for (int i = 0; i < 3; ++i) EMBER_CHECK(padding[i] >= 0, "negative padding is not supported");
  for (int i = 0; i < 3; ++i) EMBER_CHECK(output_padding[i] >= 0, "negative output_padding is not supported");
  for (int i = 0; i < 3; ++i) EMBER_CHECK(stride[i] > 0, "non-positive stride is not supported");
  for (int i = 0; i < 3; ++i) EMBER_CHECK(dilation[i] >= 0, "dilation should be greater than zero");
  const IntList w = weight.sizes();
  EMBER_CHECK(w[0] >= groups, "Given groups=", groups, ", expected weight to be at least ", groups,
              " at dimension 0, but got weight of size ", ember::detail::shape_str(w), " instead");
  EMBER_CHECK(w[0] % groups == 0, "Given groups=", groups, ", expected weight to be divisible by ", groups,
              " at dimension 0, but got weight of size [", ember::detail::shape_str(w), "] instead");
  EMBER_CHECK(input.size(1) == w[0], "Given transposed=1, weight of size ", ember::detail::shape_str(w),
              ", expected input", ember::detail::shape_str(input.sizes()), " to have ", w[0], " channels, but got ",
              input.size(1), " channels instead");
  EMBER_CHECK(!bias.defined() || (bias.dim() == 1 && bias.size(0) == w[1] * groups),
              "Given transposed=1, weight of size ", ember::detail::shape_str(w),
              ", expected bias to be 1-dimensional with ", w[1] * groups, " elements, but got bias of size ",
              ember::detail::shape_str(bias.sizes()), " instead");
  EMBER_CHECK(input.is_floating_point(), "\"conv_transpose3d\" not implemented for '", scalar_type_name(input.dtype()),
              "'");
  check_operand(input, weight, "weight");
  if (bias.defined()) check_operand(input, bias, "bias");
  // slow_conv_transpose3d_shape_check's words.
  EMBER_CHECK(dilation[0] > 0 && dilation[1] > 0 && dilation[2] > 0,
              "dilation should be greater than zero, but got dilation_depth: ", dilation[0],
              ", dilation_height: ", dilation[1], ", dilation_width: ", dilation[2]);
  bool small_enough = true;
  for (int i = 0; i < 3; ++i) {
    small_enough = small_enough && (output_padding[i] < stride[i] || output_padding[i] < dilation[i]);
  }
  EMBER_CHECK(
      small_enough, "output padding must be smaller than either stride or dilation, but got output_padding_depth: ",
      output_padding[0], " output_padding_height: ", output_padding[1], " output_padding_width: ", output_padding[2],
      " stride_depth: ", stride[0], " stride_height: ", stride[1], " stride_width: ", stride[2],
      " dilation_depth: ", dilation[0], " dilation_height: ", dilation[1], " dilation_width: ", dilation[2]);
  Triple out{};
  for (int i = 0; i < 3; ++i) {
    out[i] =
        (input.size(2 + i) - 1) * stride[i] - 2 * padding[i] + dilation[i] * (w[2 + i] - 1) + output_padding[i] + 1;
  }
  EMBER_CHECK(out[0] >= 1 && out[1] >= 1 && out[2] >= 1, "Given input size per channel: (", input.size(2), " x ",
              input.size(3), " x ", input.size(4), "). Calculated output size per channel: (", out[0], " x ", out[1],
              " x ", out[2], "). Output size is too small");
  return out;
}

/// conv_transpose3d of a checked, batched input.
Tensor conv_transpose3d_batched(const Tensor& input, const Tensor& weight, const Tensor& bias, const Triple& stride,
                                const Triple& padding, const Triple& output_padding, const Triple& dilation,
                                int64_t groups, const Triple& out) {
  const int64_t n = input.size(0), cin = input.size(1), d = input.size(2);
  const int64_t og = weight.size(1), kd = weight.size(2), cout = og * groups;
  // Every input plane through conv_transpose2d, the kernel's depth folded into the output
  // channels: block j of the 2-D output holds [kD, out_channels / groups].
  const Tensor x2d = input.permute({0, 2, 1, 3, 4}).reshape({n * d, cin, input.size(3), input.size(4)});
  const Tensor w2d = weight.permute({0, 2, 1, 3, 4}).reshape({cin, kd * og, weight.size(3), weight.size(4)});
  const Tensor y = ember::conv_transpose2d(x2d, w2d, Tensor(), tail2(stride), tail2(padding), tail2(output_padding),
                                           groups, tail2(dilation));
  const int64_t oh = y.size(2), ow = y.size(3);
  const Tensor planes = y.view({n, d, groups, kd, og, oh, ow});
  // Kernel depth k sends input plane t to output plane t * stride + k * dilation - padding. Seen
  // from the unpadded start, that is row q = t + (k * dilation) / stride, phase
  // r = (k * dilation) % stride of the output viewed as [Q, stride] planes: so each phase is a
  // sum of whole kernel depths' planes shifted by a pad (a negative pad crops what lies past
  // the output), and the phases interleave with one stack, with no zeros put between planes.
  const int64_t s = stride[0];
  const int64_t rows = (out[0] + padding[0] + s - 1) / s;
  std::vector<Tensor> phases(static_cast<size_t>(s));
  for (int64_t k = 0; k < kd; ++k) {
    const int64_t shift = k * dilation[0] / s, phase = k * dilation[0] % s;
    const Tensor part =
        ember::pad(planes.select(3, k).reshape({n, d, cout, oh, ow}), {0, 0, 0, 0, 0, 0, shift, rows - d - shift});
    Tensor& sum = phases[static_cast<size_t>(phase)];
    sum = sum.defined() ? sum + part : part;
  }
  for (Tensor& phase : phases) {
    if (!phase.defined()) phase = zeros({n, rows, cout, oh, ow}, y.options());
  }
  const Tensor interleaved = s == 1 ? phases[0] : ember::stack(phases, 2).view({n, rows * s, cout, oh, ow});
  const Tensor total = interleaved.narrow(1, padding[0], out[0]);
  Tensor result = total.permute({0, 2, 1, 3, 4}).contiguous();
  if (bias.defined()) result = result + bias.view({1, cout, 1, 1, 1});
  return result;
}

}  // namespace

Tensor conv_transpose3d(const Tensor& input, const Tensor& weight, const Tensor& bias, IntList stride, IntList padding,
                        IntList output_padding, int64_t groups, IntList dilation) {
  ember::detail::OpContext context("conv_transpose3d", {{"input", &input}, {"weight", &weight}, {"bias", &bias}});
  check_defined_operands(input, weight, "conv_transpose3d");
  check_rank(input, "conv_transpose3d");
  const Triple s = expand_triple(stride, "stride"), p = expand_triple(padding, "padding"),
               op = expand_triple(output_padding, "output_padding"), d = expand_triple(dilation, "dilation");
  check_weight_rank(weight, "conv_transpose3d", "[in_channels, out_channels/groups, kD, kH, kW]");
  const bool batched = input.dim() == 5;
  const Tensor x = batched ? input : input.unsqueeze(0);
  const Triple out = check_conv_transpose3d(x, weight, bias, s, p, op, d, groups);
  const Tensor y = conv_transpose3d_batched(x, weight, bias, s, p, op, d, groups, out);
  return batched ? y : y.squeeze(0);
}

}  // namespace functional

// ---------------------------------------------------------------- layers

namespace {

/// _ConvNd's checks, in PyTorch's order.
void check_layer(const char* layer, int64_t in_channels, int64_t out_channels, int64_t groups) {
  EMBER_CHECK(groups > 0, "groups must be a positive integer");
  EMBER_CHECK(in_channels % groups == 0, "in_channels must be divisible by groups");
  EMBER_CHECK(out_channels % groups == 0, "out_channels must be divisible by groups");
  EMBER_CHECK(in_channels >= 0 && out_channels >= 0, layer,
              ": channel counts must be non-negative, got in_channels=", in_channels, ", out_channels=", out_channels);
}

}  // namespace

Conv3d::Conv3d(int64_t in_channels, int64_t out_channels, ExpandingSize<3> kernel_size, Conv3dOptions options)
    : in_channels(in_channels),
      out_channels(out_channels),
      kernel_size(std::move(kernel_size.check("Conv3d", "kernel_size"))),
      stride(std::move(options.stride.check("Conv3d", "stride"))),
      padding(0),
      dilation(std::move(options.dilation.check("Conv3d", "dilation"))),
      padding_string(options.padding.mode()),
      groups(options.groups),
      padding_mode(std::move(options.padding_mode)) {
  check_layer("Conv3d", in_channels, out_channels, groups);
  if (padding_string.empty()) {
    padding = options.padding.size().check("Conv3d", "padding");
  } else {
    EMBER_CHECK(padding_string == "valid" || padding_string == "same", "Invalid padding string '", padding_string,
                "', should be one of {'valid', 'same'}");
    EMBER_CHECK(padding_string == "valid" || (stride[0] == 1 && stride[1] == 1 && stride[2] == 1),
                "padding='same' is not supported for strided convolutions");
  }
  EMBER_CHECK(
      padding_mode == "zeros" || padding_mode == "reflect" || padding_mode == "replicate" || padding_mode == "circular",
      "padding_mode must be one of {'reflect', 'circular', 'zeros', 'replicate'}, but got padding_mode='", padding_mode,
      "'");
  weight = register_parameter("weight", ember::empty({out_channels, in_channels / groups, this->kernel_size[0],
                                                      this->kernel_size[1], this->kernel_size[2]}));
  if (options.bias) bias = register_parameter("bias", ember::empty({out_channels}));
  reset_parameters();
}

void Conv3d::reset_parameters() { detail::reset_conv_parameters(weight, bias); }

Tensor Conv3d::forward(const Tensor& input) {
  if (padding_mode != "zeros") {
    // PyTorch's _reversed_padding_repeated_twice: the padding of each dimension from the last,
    // "same" split with the extra element at the end, then a convolution without padding.
    std::vector<int64_t> pads;
    for (int i = 2; i >= 0; --i) {
      int64_t before = padding[static_cast<size_t>(i)], after = before;
      if (padding_string == "same") {
        const int64_t total = dilation[static_cast<size_t>(i)] * (kernel_size[static_cast<size_t>(i)] - 1);
        before = total / 2;
        after = total - before;
      } else if (padding_string == "valid") {
        before = after = 0;
      }
      pads.push_back(before);
      pads.push_back(after);
    }
    return functional::conv3d(ember::pad(input, pads, padding_mode), weight, bias, stride, {0}, dilation, groups);
  }
  if (!padding_string.empty()) {
    return functional::conv3d(input, weight, bias, stride, padding_string, dilation, groups);
  }
  return functional::conv3d(input, weight, bias, stride, padding, dilation, groups);
}

ConvTranspose3d::ConvTranspose3d(int64_t in_channels, int64_t out_channels, ExpandingSize<3> kernel_size,
                                 ConvTranspose3dOptions options)
    : in_channels(in_channels),
      out_channels(out_channels),
      kernel_size(std::move(kernel_size.check("ConvTranspose3d", "kernel_size"))),
      stride(std::move(options.stride.check("ConvTranspose3d", "stride"))),
      padding(std::move(options.padding.check("ConvTranspose3d", "padding"))),
      output_padding(std::move(options.output_padding.check("ConvTranspose3d", "output_padding"))),
      dilation(std::move(options.dilation.check("ConvTranspose3d", "dilation"))),
      groups(options.groups),
      padding_mode(std::move(options.padding_mode)) {
  EMBER_CHECK(padding_mode == "zeros", "Only \"zeros\" padding mode is supported for ConvTranspose3d");
  check_layer("ConvTranspose3d", in_channels, out_channels, groups);
  weight = register_parameter("weight", ember::empty({in_channels, out_channels / groups, this->kernel_size[0],
                                                      this->kernel_size[1], this->kernel_size[2]}));
  if (options.bias) bias = register_parameter("bias", ember::empty({out_channels}));
  reset_parameters();
}

void ConvTranspose3d::reset_parameters() { detail::reset_conv_parameters(weight, bias); }

Tensor ConvTranspose3d::forward(const Tensor& input) {
  return functional::conv_transpose3d(input, weight, bias, stride, padding, output_padding, groups, dilation);
}

Tensor ConvTranspose3d::forward(const Tensor& input, IntList output_size) {
  if (!input.defined() || (input.dim() != 4 && input.dim() != 5)) return forward(input);
  // PyTorch's _output_padding: the output_padding that gives `output_size`, each between the
  // smallest output and that plus stride - 1.
  const int64_t non_spatial = input.dim() == 5 ? 2 : 1;
  std::vector<int64_t> size(output_size.begin(), output_size.end());
  if (static_cast<int64_t>(size.size()) == non_spatial + 3) size.erase(size.begin(), size.begin() + non_spatial);
  EMBER_CHECK(size.size() == 3, "ConvTranspose3D: for ", input.dim(), "D input, output_size must have 3 or ",
              non_spatial + 3, " elements (got ", output_size.size(), ")");
  std::vector<int64_t> min_sizes, max_sizes, chosen;
  for (size_t i = 0; i < 3; ++i) {
    min_sizes.push_back((input.size(static_cast<int64_t>(i) + non_spatial) - 1) * stride[i] - 2 * padding[i] +
                        dilation[i] * (kernel_size[i] - 1) + 1);
    max_sizes.push_back(min_sizes.back() + stride[i] - 1);
  }
  const IntList sizes = input.sizes();
  const IntList tail(sizes.data() + 2, sizes.size() - 2);  // PyTorch names input.size()[2:], batched or not
  for (size_t i = 0; i < 3; ++i) {
    EMBER_CHECK(size[i] >= min_sizes[i] && size[i] <= max_sizes[i], "requested an output size of ",
                ember::detail::shape_str(size), ", but valid sizes range from ", ember::detail::shape_str(min_sizes),
                " to ", ember::detail::shape_str(max_sizes), " (for an input of torch.Size(",
                ember::detail::shape_str(tail), "))");
    chosen.push_back(size[i] - min_sizes[i]);
  }
  return functional::conv_transpose3d(input, weight, bias, stride, padding, chosen, groups, dilation);
}

}  // namespace ember::nn
