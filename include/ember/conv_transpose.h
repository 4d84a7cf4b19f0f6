#pragma once
/// Transposed convolution: ember::conv_transpose2d and conv_transpose1d (src/ops/conv_transpose.cpp),
/// torch.nn.functional's, with its argument order, defaults, checks and messages.
/// nn::functional::conv_transpose2d/1d and the layers nn::ConvTranspose2d/1d
/// (ember/nn/conv_transpose.h) call them.
#include <cstdint>

#include "ember/tensor.h"

namespace ember {

/// The transpose of conv2d (the gradient of conv2d with respect to its input): input
/// [N, in_channels, H, W] (or unbatched [in_channels, H, W]), weight
/// [in_channels, out_channels / groups, kH, kW], bias [out_channels] when defined. The output is
/// [N, out_channels, Ho, Wo] with Ho = (H - 1) * stride - 2 * padding + dilation * (kH - 1) +
/// output_padding + 1 (and the same for Wo); output_padding must be smaller than the stride or
/// the dilation. stride, padding, output_padding and dilation are one value for both dimensions
/// or a [height, width] pair. It runs on conv2d's kernels (oneDNN or im2col on the CPU, cuDNN on
/// CUDA) and records one node, ConvolutionBackward0, whose backward records itself for
/// higher-order gradients.
Tensor conv_transpose2d(const Tensor& input, const Tensor& weight, const Tensor& bias = Tensor(), IntList stride = {1},
                        IntList padding = {0}, IntList output_padding = {0}, int64_t groups = 1,
                        IntList dilation = {1});

/// conv_transpose2d over a height of one: input [N, in_channels, L] (or [in_channels, L]),
/// weight [in_channels, out_channels / groups, k]; the batched result's grad_fn is
/// ConvolutionBackward0, as in PyTorch.
Tensor conv_transpose1d(const Tensor& input, const Tensor& weight, const Tensor& bias = Tensor(), int64_t stride = 1,
                        int64_t padding = 0, int64_t output_padding = 0, int64_t groups = 1, int64_t dilation = 1);

}  // namespace ember
