#pragma once
// Helpers shared by ember's own implementation files: allocation, views, dimension wrapping.
#include <string>

#include "ember/tensor.h"

namespace ember {

namespace detail {

/// Row-major strides for `sizes`.
Dims contiguous_strides(IntList sizes);
int64_t numel_of(IntList sizes);
/// Whether (sizes, strides) is the row-major layout, ignoring size-1 dimensions; an empty tensor
/// is contiguous whatever its strides, as in PyTorch.
bool is_contiguous_layout(IntList sizes, IntList strides);
/// A new contiguous, uninitialised tensor. Throws when the device is unusable.
Tensor make_tensor(IntList sizes, Dtype dtype, Device device);
/// A tensor with this geometry over an existing storage: no autograd state, not a view of
/// anything (the tensors torch_load and the mapped loads make over records they read or map).
Tensor make_tensor_over(std::shared_ptr<Storage> storage, Dims sizes, Dims strides, int64_t offset, Dtype dtype);
/// The result of a view op: a tensor sharing `base`'s storage with new geometry, which
/// remembers its base for autograd (TensorImpl::view_base).
Tensor make_view(const Tensor& base, Dims sizes, Dims strides, int64_t offset);
/// A tensor sharing t's storage and geometry but no autograd state and no base (detach()).
Tensor make_alias(const Tensor& t);
/// Makes an op's result, which the op built as a view of an internal temporary, a tensor of
/// its own: not a view, as the result of PyTorch's op would be.
void forget_base(Tensor& t);
/// Wraps a possibly negative dim into [0, ndim); PyTorch's message when out of range.
int64_t wrap_dim(int64_t dim, int64_t ndim);
/// Throws unless `t` is defined, naming the op.
void check_defined(const Tensor& t, const char* op);

}  // namespace detail
}  // namespace ember
