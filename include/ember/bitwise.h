#pragma once
/// The bitwise ops on bool and integer tensors (src/ops/bitwise.cpp): torch.bitwise_and, _or,
/// _xor, _not, bitwise_left_shift and bitwise_right_shift, with PyTorch's type promotion and its
/// operators (&, |, ^, ~, <<, >>). On bool, and/or/xor/not are the logical ops; shifts take
/// integers only. A shift by a negative amount or by the type's width or more gives 0 (left) or
/// the sign (right), as in PyTorch. Floating inputs raise PyTorch's "not implemented" error.
#include "ember/scalar.h"
#include "ember/tensor.h"

namespace ember {

Tensor bitwise_and(const Tensor& a, const Tensor& b);
Tensor bitwise_and(const Tensor& a, const Scalar& b);
Tensor bitwise_or(const Tensor& a, const Tensor& b);
Tensor bitwise_or(const Tensor& a, const Scalar& b);
Tensor bitwise_xor(const Tensor& a, const Tensor& b);
Tensor bitwise_xor(const Tensor& a, const Scalar& b);
Tensor bitwise_not(const Tensor& a);
Tensor bitwise_left_shift(const Tensor& a, const Tensor& b);
Tensor bitwise_left_shift(const Tensor& a, const Scalar& b);
Tensor bitwise_right_shift(const Tensor& a, const Tensor& b);
Tensor bitwise_right_shift(const Tensor& a, const Scalar& b);

Tensor operator&(const Tensor& a, const Tensor& b);
Tensor operator&(const Tensor& a, const Scalar& b);
Tensor operator|(const Tensor& a, const Tensor& b);
Tensor operator|(const Tensor& a, const Scalar& b);
Tensor operator^(const Tensor& a, const Tensor& b);
Tensor operator^(const Tensor& a, const Scalar& b);
Tensor operator~(const Tensor& a);
Tensor operator<<(const Tensor& a, const Tensor& b);
Tensor operator<<(const Tensor& a, const Scalar& b);
Tensor operator>>(const Tensor& a, const Tensor& b);
Tensor operator>>(const Tensor& a, const Scalar& b);

/// |a - b| <= atol + rtol * |b| element-wise (infinities close only to themselves; NaNs close to
/// each other with equal_nan), as torch.isclose; a and b must have one dtype. (ember::allclose,
/// in ember/ops.h, is the whole-tensor test.)
Tensor isclose(const Tensor& a, const Tensor& b, double rtol = 1e-05, double atol = 1e-08, bool equal_nan = false);

}  // namespace ember
