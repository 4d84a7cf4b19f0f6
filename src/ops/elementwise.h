#pragma once
// The element-wise front end's own entry points, shared by elementwise.cpp (binary ops), unary.cpp
// and activation.cpp: each checks and promotes, calls the backend and records the backward.
#include "backend/backend.h"
#include "ember/scalar.h"
#include "ember/tensor.h"

namespace ember::ops {

/// A binary op on operands already promoted to `promoted` (the fused backward kernels call it
/// with the gradient's dtype).
Tensor binary_impl(BinaryOp op, const Tensor& a, const Tensor& b, Dtype promoted);
/// A binary op with PyTorch's type promotion, under the op's error context.
Tensor binary(BinaryOp op, const Tensor& a, const Tensor& b);
Tensor binary(BinaryOp op, const Tensor& a, const Scalar& b);
Tensor binary(BinaryOp op, const Scalar& a, const Tensor& b);
/// A unary op with its dtype rule (integers promoted to float for exp and the like).
Tensor unary(UnaryOp op, const Tensor& x);

/// In-place ops compute out of place, then write the result into self. The result must keep
/// self's shape and be castable to its dtype. While recording, self's history becomes the
/// result's node (h.add_(y): AddBackward0 over h's old history and y).
Tensor& assign_result(Tensor& self, const Tensor& result, const char* op);

}  // namespace ember::ops
