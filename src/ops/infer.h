#pragma once
// Shape, dtype and device inference shared by the front-end ops. No device code here.
#include <initializer_list>
#include <span>

#include "ember/scalar.h"
#include "ember/tensor.h"

namespace ember::ops {

/// PyTorch's result_type over tensors (0-dim tensors weigh less than dimensioned ones) and
/// scalars (which only count by category: bool < integral < floating).
struct ResultTypeState {
  std::optional<Dtype> dim_result, zero_dim_result, wrapped_result;
  void add(const Tensor& t);
  void add(const Scalar& s);
  Dtype result() const;
};

/// The common device of an element-wise op, checked as TensorIterator does: the first non-CPU
/// device wins; 0-dim CPU tensors may join a GPU op; anything else mismatched is PyTorch's error.
Device common_device(std::initializer_list<const Tensor*> operands);

/// For matmul-like ops: the first tensor sets the device; each later one must match, named.
void check_same_device(const char* method, std::initializer_list<std::pair<const char*, const Tensor*>> args);

/// Moves `t` to `device` (a 0-dim CPU operand of a GPU op), converts it to `dtype` and broadcasts
/// it to `sizes` (each a no-op when already so).
Tensor prepare_operand(const Tensor& t, Dtype dtype, IntList sizes, Device device);

/// A 0-dim tensor holding `s` as `dtype` on `device`.
Tensor wrap_scalar(const Scalar& s, Dtype dtype, Device device);

/// The dtype floating-only unary ops compute in: the input's if floating, else float32.
Dtype to_floating(Dtype d);

}  // namespace ember::ops
