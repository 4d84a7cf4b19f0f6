#pragma once
// conv2d and conv1d with a padding string ("valid" or "same"). Internal: the public overloads
// are nn::functional's, which take the string through a constrained template (so that a braced
// {0} still picks the numeric overload); the numeric forms are ember::conv2d / conv1d (ops.h).
#include <cstdint>
#include <string_view>

#include "ember/tensor.h"

namespace ember {
struct Conv2dArgs;  // backend/backend.h
}  // namespace ember

namespace ember::detail {

/// conv2d with padding "valid" or "same" (stride 1); an odd total "same" padding puts the extra
/// row/column at the bottom/right, as in PyTorch.
Tensor conv2d_padding_string(const Tensor& input, const Tensor& weight, const Tensor& bias, IntList stride,
                             std::string_view padding, IntList dilation, int64_t groups);

/// conv1d with padding "valid" or "same" (stride 1).
Tensor conv1d_padding_string(const Tensor& input, const Tensor& weight, const Tensor& bias, int64_t stride,
                             std::string_view padding, int64_t dilation, int64_t groups);

// conv2d's pieces over a geometry already checked and expanded, for the ops built from them
// (conv_transpose2d, src/ops/conv_transpose.cpp). Inputs are batched (4-D); each records its
// node when grad mode is on and an operand requires grad, and each node's backward records
// itself, so gradients of any order come out.

/// conv2d of input [N, C, H, W] with weight [O, C / groups, kH, kW] (ConvolutionBackward0),
/// checked as conv2d checks it.
Tensor conv2d_with_args(const Tensor& input, const Tensor& weight, const Tensor& bias, const Conv2dArgs& args);
/// conv2d's weight gradient for input x and output gradient g (ConvolutionBackwardBackward0).
Tensor conv2d_weight_grad(const Tensor& x, const Tensor& g, IntList w_sizes, const Conv2dArgs& args);
/// conv2d's operand check, with PyTorch's message: `t` (the weight or bias, named by `what`) has
/// input's dtype and device.
void check_conv_operand(const Tensor& input, const Tensor& t, const char* what);

}  // namespace ember::detail
