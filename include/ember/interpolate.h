#pragma once
/// Resampling: torch.nn.functional.interpolate (src/ops/interpolate.cpp). nn::functional's
/// interpolate / upsample* and the Upsample layers (ember/nn/upsampling.h) call it.
#include <optional>
#include <string_view>
#include <vector>

#include "ember/tensor.h"

namespace ember {

/// As torch.nn.functional.interpolate: resizes the spatial dimensions (all but the first two) of
/// a 3-D [N, C, W], 4-D [N, C, H, W] or 5-D [N, C, D, H, W] input, to `size` or by
/// `scale_factor` (exactly one of them; each holds one value per spatial dimension, or one value
/// for all of them, as a Python int or float does). Modes:
///  - "nearest": PyTorch's (OpenCV's) nearest neighbour, src = floor(dst * scale) in float;
///  - "nearest-exact": src = floor((dst + 0.5) * scale), as Pillow and scikit-image;
///  - "linear" (3-D), "bilinear" (4-D), "trilinear" (5-D): linear in each dimension, with PyTorch's
///    area_pixel_compute_source_index;
///  - "bicubic" (4-D): cubic convolution with A = -0.75, the border replicated;
///  - "area" (3-D and 4-D): adaptive_avg_pool1d / adaptive_avg_pool2d to the output size.
/// `align_corners` (the interpolating modes only; unset means false) maps the corner pixels'
/// centres onto each other. With `scale_factor` and `recompute_scale_factor` unset or false,
/// the output size is floor(input size * scale factor) and the coordinate mapping uses
/// 1 / scale_factor, as PyTorch's; with `recompute_scale_factor` true it uses input / output
/// size instead. The scales, source indices and weights are computed in the input's floating
/// type (float for float16 and bfloat16, whose inputs are computed in float32 and rounded back),
/// and the interpolation runs along the last dimension first, as PyTorch's CPU kernels do.
/// Floating inputs only, and uint8 for the nearest modes. The result is a new tensor,
/// differentiable with respect to `input` (made of index_select / gather, mul and add).
/// `antialias` = true is refused (not supported by ember), and so is "area" on a 5-D input
/// (ember has no adaptive_avg_pool3d). PyTorch's checks and messages otherwise.
Tensor interpolate(const Tensor& input, IntList size = {}, const std::vector<double>& scale_factor = {},
                   std::string_view mode = "nearest", std::optional<bool> align_corners = std::nullopt,
                   std::optional<bool> recompute_scale_factor = std::nullopt, bool antialias = false);

}  // namespace ember
