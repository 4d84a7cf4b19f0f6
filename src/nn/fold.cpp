// Unfold/Fold and functional::unfold/fold (include/ember/nn/fold.h): PyTorch's im2col/col2im
// checks and messages (ATen's im2col_shape_check and col2im_shape_check), then one index_select
// (unfold) or one scatter_add (fold) over the flattened, zero-padded planes with a table of the
// windows' element positions built on the host.
#include "ember/nn/fold.h"

#include <array>
#include <utility>
#include <vector>

#include "core/check.h"
#include "core/tensor_internal.h"
#include "ember/factories.h"
#include "ember/ops.h"
#include "ember/pad.h"

namespace ember::nn {

namespace functional {

namespace {

/// Python's _pair: one value stands for both dimensions; anything but two values is refused with
/// ATen's message.
std::array<int64_t, 2> pair_of(IntList v, const char* name) {
  if (v.size() == 1) return {v[0], v[0]};
  EMBER_CHECK(v.size() == 2, "It is expected ", name, " equals to 2, but got size ", v.size());
  return {v[0], v[1]};
}

/// Integer division rounding toward negative infinity (ATen's div_rtn).
int64_t div_rtn(int64_t x, int64_t y) {
  int64_t q = x / y, r = x % y;
  if (r != 0 && ((r < 0) != (y < 0))) --q;
  return q;
}

struct Geometry {
  std::array<int64_t, 2> kernel, dilation, padding, stride;
};

/// The four pairs, checked as ATen's im2col (stride last) or col2im (stride second) checks them:
/// the order decides which message a call with several bad values gets.
Geometry geometry_of(IntList kernel_size, IntList dilation, IntList padding, IntList stride, bool stride_second) {
  Geometry g;
  g.kernel = pair_of(kernel_size, "kernel_size");
  g.dilation = pair_of(dilation, "dilation");
  g.padding = pair_of(padding, "padding");
  g.stride = pair_of(stride, "stride");
  const auto check_stride = [&g] {
    EMBER_CHECK(g.stride[1] > 0 && g.stride[0] > 0,
                "stride should be greater than zero, but got stride_height: ", g.stride[0],
                " stride_width: ", g.stride[1]);
  };
  EMBER_CHECK(g.kernel[1] > 0 && g.kernel[0] > 0,
              "kernel size should be greater than zero, but got kernel_height: ", g.kernel[0],
              " kernel_width: ", g.kernel[1]);
  if (stride_second) check_stride();
  EMBER_CHECK(g.dilation[1] > 0 && g.dilation[0] > 0,
              "dilation should be greater than zero, but got dilation_height: ", g.dilation[0],
              " dilation_width: ", g.dilation[1]);
  EMBER_CHECK(g.padding[1] >= 0 && g.padding[0] >= 0,
              "padding should be non-negative, but got pad_height: ", g.padding[0], " pad_width: ", g.padding[1]);
  if (!stride_second) check_stride();
  return g;
}

/// Flat positions in the padded [Hp, Wp] plane of every window element, ordered kernel row,
/// kernel column, block row, block column: kh*kw*blocks_h*blocks_w values.
Tensor window_positions(const Geometry& g, int64_t padded_width, int64_t blocks_h, int64_t blocks_w,
                        const Device& device) {
  std::vector<int64_t> idx;
  idx.reserve(static_cast<size_t>(g.kernel[0] * g.kernel[1] * blocks_h * blocks_w));
  for (int64_t ki = 0; ki < g.kernel[0]; ++ki) {
    for (int64_t kj = 0; kj < g.kernel[1]; ++kj) {
      for (int64_t i = 0; i < blocks_h; ++i) {
        for (int64_t j = 0; j < blocks_w; ++j) {
          idx.push_back((i * g.stride[0] + ki * g.dilation[0]) * padded_width + j * g.stride[1] + kj * g.dilation[1]);
        }
      }
    }
  }
  return tensor(idx, TensorOptions().dtype(kInt64)).to(device);
}

void check_not_integral(const Tensor& input, const char* kernel) {
  EMBER_CHECK(input.is_floating_point(), "\"", kernel, input.is_cpu() ? "_out_cpu" : "_out_cuda",
              "\" not implemented for '", scalar_type_name(input.dtype()), "'");
}

}  // namespace

Tensor unfold(const Tensor& input, IntList kernel_size, IntList dilation, IntList padding, IntList stride) {
  ember::detail::OpContext context("unfold", {{"input", &input}});
  ember::detail::check_defined(input, "unfold");
  const Geometry g = geometry_of(kernel_size, dilation, padding, stride, /*stride_second=*/false);
  const auto [kh, kw] = g.kernel;
  const int64_t ndim = input.dim();
  // ATen reads sizes 1 and 2 before it checks the rank, so a 1-D or 2-D input fails there.
  bool valid_dims = input.size(1) != 0 && input.size(2) != 0;
  valid_dims = valid_dims && (ndim == 3 ? input.size(0) != 0 : input.size(3) != 0);
  EMBER_CHECK((ndim == 3 || ndim == 4) && valid_dims,
              "Expected 3D or 4D (batch mode) tensor with possibly 0 batch size and other non-zero dimensions for "
              "input, but got: ",
              ember::detail::shape_str(input.sizes()));
  const bool batched = ndim == 4;
  const Tensor x = batched ? input : input.unsqueeze(0);
  const int64_t n = x.size(0), c = x.size(1), h = x.size(2), w = x.size(3);
  const int64_t blocks_h = div_rtn(h + 2 * g.padding[0] - (g.dilation[0] * (kh - 1) + 1), g.stride[0]) + 1;
  const int64_t blocks_w = div_rtn(w + 2 * g.padding[1] - (g.dilation[1] * (kw - 1) + 1), g.stride[1]) + 1;
  EMBER_CHECK(blocks_h >= 1 && blocks_w >= 1, "Given input with spatial size (", h, ", ", w, "), kernel_size=(", kh,
              ", ", kw, "), dilation=(", g.dilation[0], ", ", g.dilation[1], "), padding=(", g.padding[0], ", ",
              g.padding[1], "), calculated shape of the array of sliding blocks as (", blocks_h, ", ", blocks_w,
              "), but its components must be at least one.");
  check_not_integral(input, "im2col");
  const bool padded = g.padding[0] != 0 || g.padding[1] != 0;
  const Tensor xp = padded ? ember::pad(x, {g.padding[1], g.padding[1], g.padding[0], g.padding[0]}) : x;
  const int64_t hp = h + 2 * g.padding[0], wp = w + 2 * g.padding[1];
  const Tensor positions = window_positions(g, wp, blocks_h, blocks_w, input.device());
  const Tensor cols =
      ember::index_select(xp.reshape({n, c, hp * wp}), 2, positions).view({n, c * kh * kw, blocks_h * blocks_w});
  return batched ? cols : cols.squeeze(0);
}

Tensor fold(const Tensor& input, IntList output_size, IntList kernel_size, IntList dilation, IntList padding,
            IntList stride) {
  ember::detail::OpContext context("fold", {{"input", &input}});
  ember::detail::check_defined(input, "fold");
  const auto [out_h, out_w] = pair_of(output_size, "output_size");
  const Geometry g = geometry_of(kernel_size, dilation, padding, stride, /*stride_second=*/true);
  const auto [kh, kw] = g.kernel;
  const int64_t ndim = input.dim();
  EMBER_CHECK((ndim == 2 && input.size(0) != 0 && input.size(1) != 0) ||
                  (ndim == 3 && input.size(1) != 0 && input.size(2) != 0),
              "Expected 2D or 3D (batch mode) tensor for input with possibly 0 batch size and non-zero dimensions for "
              "input, but got: ",
              ember::detail::shape_str(input.sizes()));
  const bool batched = ndim == 3;
  const int64_t planes = input.size(batched ? 1 : 0);
  EMBER_CHECK(planes % (kw * kh) == 0,
              "Expected size of input's dimension 1 to be divisible by the product of kernel_size, but got "
              "input.size(1)=",
              planes, " and kernel_size=(", kh, ", ", kw, ").");
  const int64_t length = input.size(batched ? 2 : 1);
  const int64_t blocks_h = div_rtn(out_h + 2 * g.padding[0] - g.dilation[0] * (kh - 1) - 1, g.stride[0]) + 1;
  const int64_t blocks_w = div_rtn(out_w + 2 * g.padding[1] - g.dilation[1] * (kw - 1) - 1, g.stride[1]) + 1;
  // Copies of the structured bindings: clang 14 (the TSan build's compiler) cannot capture those.
  const auto describe = [&, oh = out_h, ow = out_w, kh_ = kh, kw_ = kw] {
    return ember::detail::concat("Given output_size=(", oh, ", ", ow, "), kernel_size=(", kh_, ", ", kw_,
                                 "), dilation=(", g.dilation[0], ", ", g.dilation[1], "), padding=(", g.padding[0],
                                 ", ", g.padding[1], "), stride=(", g.stride[0], ", ", g.stride[1], "), ");
  };
  EMBER_CHECK(length == blocks_h * blocks_w, describe(),
              "expected size of input's dimension 2 to match the calculated number of sliding blocks ", blocks_h, " * ",
              blocks_w, " = ", blocks_h * blocks_w, ", but got input.size(2)=", length, ".");
  EMBER_CHECK(blocks_h >= 1 && blocks_w >= 1, describe(), "calculated shape of the array of sliding blocks as (",
              blocks_h, ", ", blocks_w, "), which is too small (non-positive)");
  EMBER_CHECK(out_w >= 1 && out_h >= 1, "Expected output spatial size to be positive, but got: output_size=(", out_h,
              ", ", out_w, ").");
  check_not_integral(input, "col2im");
  const Tensor x = batched ? input : input.unsqueeze(0);
  const int64_t n = x.size(0), c = planes / (kh * kw), k = kh * kw * length;
  const int64_t hp = out_h + 2 * g.padding[0], wp = out_w + 2 * g.padding[1];
  const Tensor positions = window_positions(g, wp, blocks_h, blocks_w, input.device());
  const Tensor index = positions.view({1, 1, k}).expand({n, c, k}).contiguous();
  const Tensor sums = ember::scatter_add(zeros({n, c, hp * wp}, x.options()), 2, index, x.reshape({n, c, k}));
  Tensor out = sums.view({n, c, hp, wp});
  if (g.padding[0] != 0 || g.padding[1] != 0) {
    out = out.narrow(2, g.padding[0], out_h).narrow(3, g.padding[1], out_w).contiguous();
  }
  return batched ? out : out.squeeze(0);
}

}  // namespace functional

Unfold::Unfold(SizeList kernel_size, UnfoldOptions options)
    : kernel_size(kernel_size.vec()),
      dilation(options.dilation.vec()),
      padding(options.padding.vec()),
      stride(options.stride.vec()) {}

Tensor Unfold::forward(const Tensor& input) {
  return functional::unfold(input, kernel_size, dilation, padding, stride);
}

Fold::Fold(SizeList output_size, SizeList kernel_size, FoldOptions options)
    : output_size(output_size.vec()),
      kernel_size(kernel_size.vec()),
      dilation(options.dilation.vec()),
      padding(options.padding.vec()),
      stride(options.stride.vec()) {}

Tensor Fold::forward(const Tensor& input) {
  return functional::fold(input, output_size, kernel_size, dilation, padding, stride);
}

}  // namespace ember::nn
