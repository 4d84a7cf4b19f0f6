#pragma once
/// Spatial transformers' sampling: torch.nn.functional.affine_grid and grid_sample
/// (src/nn/vision.cpp): affine_grid composed of ember's ops, grid_sample a kernel of its own
/// (src/ops/grid_sample.cpp).
#include <optional>
#include <string_view>

#include "ember/tensor.h"

namespace ember::nn::functional {

/// As torch.nn.functional.affine_grid: the sampling grid of a batch of affine transforms,
/// theta [N, 2, 3] for size [N, C, H, W] (grid [N, H, W, 2]) or theta [N, 3, 4] for size
/// [N, C, D, H, W] (grid [N, D, H, W, 3]). Each output position's normalised coordinates
/// (x along W first, in [-1, 1]; with align_corners false the pixel centres, (2i + 1) / n - 1)
/// are multiplied by theta, as PyTorch's base grid times theta^T (one bmm). Unset align_corners
/// means false, with PyTorch's warning. Differentiable with respect to theta. PyTorch's checks
/// and messages (and its warning for unit-size grids with align_corners).
Tensor affine_grid(const Tensor& theta, IntList size, std::optional<bool> align_corners = std::nullopt);

/// As torch.nn.functional.grid_sample: samples `input` [N, C, H, W] (or [N, C, D, H, W]) at
/// the normalised positions of `grid` [N, H_out, W_out, 2] (or [N, D_out, H_out, W_out, 3]),
/// whose last dimension holds x (along W), y (along H) and z (along D) in [-1, 1]; the result is
/// [N, C, H_out, W_out] (or [N, C, D_out, H_out, W_out]).
///  - mode: "bilinear" (trilinear on 5-D inputs), "nearest" (rounding half to even, as PyTorch's
///    nearbyint) or "bicubic" (cubic convolution with A = -0.75 over 4x4 pixels, 4x4x4 on 5-D
///    inputs, as PyTorch 2.15's CPU kernel);
///  - padding_mode for positions outside the input: "zeros", "border" (clamped to the edge
///    pixels) or "reflection" (mirrored at the border, then clamped);
///  - align_corners: -1 and 1 name the corner pixels' centres (true) or their outer edges
///    (false; unset means false, with PyTorch's warning).
/// Pixel coordinates, clamping and reflection follow PyTorch's rules exactly, so values and the
/// gradients with respect to input and grid match its CPU kernels; a coordinate on a clamping
/// bound passes no gradient, as there. One backend kernel each way
/// (src/backend/{cpu,cuda}/grid_sample.*); float16 and bfloat16 are computed in float32; second
/// derivatives exist (create_graph), as in PyTorch 2.15.
/// input and grid must share a floating dtype and device.
Tensor grid_sample(const Tensor& input, const Tensor& grid, std::string_view mode = "bilinear",
                   std::string_view padding_mode = "zeros", std::optional<bool> align_corners = std::nullopt);

}  // namespace ember::nn::functional
