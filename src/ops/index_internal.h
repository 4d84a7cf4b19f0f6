#pragma once
// What the indexing front ends (tensor_indexing.cpp, index_ops.cpp, scatter_ops.cpp) share.
#include <cstdint>
#include <functional>
#include <vector>

#include "ember/tensor.h"

namespace ember::detail {

/// The elements of x that advanced indexing with `indices` (one optional tensor per leading
/// dimension; int64/int32 positions or bool/uint8 masks) reads, described as the row-major
/// offsets of each result element in a contiguous x, shaped as the result.
struct AdvancedIndex {
  Tensor offsets;  // int64 on x's device, the result's sizes
};
/// `explicit_list`: the indices came from torch.index_put's list (whose "too many indices"
/// message names the count) rather than from Python-style tensor indexing.
AdvancedIndex advanced_index_of(const Tensor& x, const std::vector<Tensor>& indices, bool explicit_list);

/// x[indices] (a copy; differentiable in x).
Tensor advanced_get(const Tensor& x, const std::vector<Tensor>& indices);
/// index_put without its checks on the values' dtype.
Tensor advanced_put(const Tensor& x, const std::vector<Tensor>& indices, const Tensor& values, bool accumulate,
                    bool explicit_list);

/// The row-major flat positions of the non-zero elements of x, as an int64 CPU tensor (the
/// count decides the result's size, so it is read on the host, as PyTorch does).
Tensor nonzero_flat_positions(const Tensor& x);

/// The host-side bounds check of an index tensor: every value in [-size, size) (or [0, size)
/// when negatives are refused); `fail(v)` throws the op's message for the first bad value v.
/// Indices on another device are left to the kernels' own checks.
void check_index_bounds(const Tensor& index, int64_t size, bool allow_negative,
                        const std::function<void(int64_t)>& fail);

/// `index` as int64 on `device` (a CPU index may index a tensor on any device, as in PyTorch).
Tensor long_index_on(const Tensor& index, Device device);
/// index + size where it is negative.
Tensor wrap_negative(const Tensor& index, int64_t size);

}  // namespace ember::detail
