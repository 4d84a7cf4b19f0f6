#pragma once
// conv2d and conv1d with a padding string ("valid" or "same"). Internal: the public overloads
// are nn::functional's, which take the string through a constrained template (so that a braced
// {0} still picks the numeric overload); the numeric forms are ember::conv2d / conv1d (ops.h).
#include <cstdint>
#include <string_view>

#include "ember/tensor.h"

namespace ember::detail {

/// conv2d with padding "valid" or "same" (stride 1); an odd total "same" padding puts the extra
/// row/column at the bottom/right, as in PyTorch.
Tensor conv2d_padding_string(const Tensor& input, const Tensor& weight, const Tensor& bias, IntList stride,
                             std::string_view padding, IntList dilation, int64_t groups);

/// conv1d with padding "valid" or "same" (stride 1).
Tensor conv1d_padding_string(const Tensor& input, const Tensor& weight, const Tensor& bias, int64_t stride,
                             std::string_view padding, int64_t dilation, int64_t groups);

}  // namespace ember::detail
