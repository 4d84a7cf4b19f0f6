// PixelShuffle, PixelUnshuffle and ChannelShuffle (include/ember/nn/pixelshuffle.h): PyTorch's
// checks, then a reshape into the factors, a permutation and a copy into the result's layout
// (ATen's math_pixel_shuffle and math_channel_shuffle); autograd comes with the view ops.
#include "ember/nn/pixelshuffle.h"

#include <cstdint>
#include <vector>

#include "core/check.h"
#include "core/tensor_internal.h"
#include "ember/ops.h"

namespace ember::nn::functional {

namespace {

/// `t` (a rearrangement of `input`) as a contiguous tensor of `sizes` that shares no memory with
/// `input` and is nobody's view, as the results of PyTorch's kernels are.
Tensor own_result(const Tensor& t, const Tensor& input, IntList sizes) {
  Tensor out = t.contiguous();
  if (out.is_alias_of(input)) out = out.clone();
  out = out.view(sizes);
  if (out.is_view()) ember::detail::forget_base(out);
  return out;
}

}  // namespace

Tensor pixel_shuffle(const Tensor& input, int64_t upscale_factor) {
  ember::detail::OpContext context("pixel_shuffle", {{"input", &input}});
  ember::detail::check_defined(input, "pixel_shuffle");
  EMBER_CHECK(input.dim() >= 3, "pixel_shuffle expects input to have at least 3 dimensions, but got input with ",
              input.dim(), " dimension(s)");
  EMBER_CHECK(upscale_factor > 0, "pixel_shuffle expects a positive upscale_factor, but got ", upscale_factor);
  const int64_t r = upscale_factor, c = input.size(-3), h = input.size(-2), w = input.size(-1);
  EMBER_CHECK(c % (r * r) == 0,
              "pixel_shuffle expects its input's 'channel' dimension to be divisible by the square of upscale_factor, "
              "but input.size(-3)=",
              c, " is not divisible by ", r * r);
  // [*, C, r, r, H, W] -> [*, C, H, r, W, r] -> [*, C, H r, W r]
  const std::vector<int64_t> sizes = input.sizes().vec();
  const std::vector<int64_t> lead(sizes.begin(), sizes.end() - 3);
  const int64_t n = static_cast<int64_t>(lead.size());
  std::vector<int64_t> split = lead, perm, out = lead;
  split.insert(split.end(), {c / (r * r), r, r, h, w});
  for (int64_t d = 0; d < n; ++d) perm.push_back(d);
  perm.insert(perm.end(), {n, n + 3, n + 1, n + 4, n + 2});
  out.insert(out.end(), {c / (r * r), h * r, w * r});
  return own_result(input.reshape(split).permute(perm), input, out);
}

Tensor pixel_unshuffle(const Tensor& input, int64_t downscale_factor) {
  ember::detail::OpContext context("pixel_unshuffle", {{"input", &input}});
  ember::detail::check_defined(input, "pixel_unshuffle");
  EMBER_CHECK(input.dim() >= 3, "pixel_unshuffle expects input to have at least 3 dimensions, but got input with ",
              input.dim(), " dimension(s)");
  EMBER_CHECK(downscale_factor > 0, "pixel_unshuffle expects a positive downscale_factor, but got ", downscale_factor);
  const int64_t r = downscale_factor, c = input.size(-3), h = input.size(-2), w = input.size(-1);
  EMBER_CHECK(h % r == 0, "pixel_unshuffle expects height to be divisible by downscale_factor, but input.size(-2)=", h,
              " is not divisible by ", r);
  EMBER_CHECK(w % r == 0, "pixel_unshuffle expects width to be divisible by downscale_factor, but input.size(-1)=", w,
              " is not divisible by ", r);
  // [*, C, H, r, W, r] -> [*, C, r, r, H, W] -> [*, C r r, H, W]
  const std::vector<int64_t> sizes = input.sizes().vec();
  const std::vector<int64_t> lead(sizes.begin(), sizes.end() - 3);
  const int64_t n = static_cast<int64_t>(lead.size());
  std::vector<int64_t> split = lead, perm, out = lead;
  split.insert(split.end(), {c, h / r, r, w / r, r});
  for (int64_t d = 0; d < n; ++d) perm.push_back(d);
  perm.insert(perm.end(), {n, n + 2, n + 4, n + 1, n + 3});
  out.insert(out.end(), {c * r * r, h / r, w / r});
  return own_result(input.reshape(split).permute(perm), input, out);
}

Tensor channel_shuffle(const Tensor& input, int64_t groups) {
  ember::detail::OpContext context("channel_shuffle", {{"input", &input}});
  ember::detail::check_defined(input, "channel_shuffle");
  EMBER_CHECK(input.dim() > 2, "channel_shuffle expects input with > 2 dims, but got input with sizes ",
              ember::detail::shape_str(input.sizes()));
  EMBER_CHECK(groups > 0, "Number of groups to divide channels in must be positive. Value of groups:", groups);
  const int64_t c = input.size(1);
  EMBER_CHECK(c % groups == 0, "Number of channels must be divisible by groups. Got ", c, " channels and ", groups,
              " groups.");
  if (input.numel() == 0) return input.clone();
  // [N, g, C / g, rest] -> [N, C / g, g, rest]
  const Tensor split = input.reshape({input.size(0), groups, c / groups, -1});
  return own_result(split.permute({0, 2, 1, 3}), input, input.sizes());
}

}  // namespace ember::nn::functional
