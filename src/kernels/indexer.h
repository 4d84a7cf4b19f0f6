#pragma once
// Walking N strided operands of one shape (element-wise ops: the output first, then the inputs,
// already broadcast to the output's sizes, so a broadcast dimension has stride 0).
//
// StridedIndexer first simplifies the shared shape: size-1 dimensions are dropped (their
// strides never matter), dimensions can be put in the first operand's memory order, and
// adjacent dimensions that are contiguous with respect to each other in *every* operand are
// merged. A contiguous tensor, and one with a broadcast scalar, become one dimension; a
// row-broadcast [M, N] + [N] stays two. Then it maps a linear index to N element offsets (for
// a CUDA thread) or walks a range row by row (for a CPU loop, whose inner loop sees the
// innermost stride of each operand and can specialise for 1 and 0).
//
// Everything here is plain C++ that nvcc also compiles; the parts a GPU thread needs are EMBER_HD.
#include <cstdint>

#include "ember/half.h"  // EMBER_HD

namespace ember::kernels {

/// Dimensions left after coalescing that an indexer passed to a GPU kernel can hold (the limit
/// PyTorch's TensorIterator has too). CPU code may use a larger MaxDims.
inline constexpr int kMaxDims = 25;
/// Dimensions of size > 1 that any tensor can have: 64 of them would already be 2^64 elements.
inline constexpr int kMaxInputDims = 64;

template <int N, int MaxDims = kMaxDims>
struct StridedIndexer {
  static_assert(N >= 1 && MaxDims >= 1);

  struct Offsets {
    int64_t v[N];
    EMBER_HD int64_t operator[](int k) const { return v[k]; }
  };

  int ndim = 0;                 // >= 1 once built
  int64_t sizes[MaxDims];       // outermost first
  int64_t strides[N][MaxDims];  // in elements, per operand

  /// Simplifies the shape `sizes[0, in_ndim)` shared by the N operands whose strides are
  /// `in_strides[k][0, in_ndim)`. With `memory_order`, dimensions are first stably sorted by
  /// decreasing stride of operand 0, so that e.g. an in-place op on a transposed tensor walks
  /// memory in order (and usually collapses to one dimension). Returns false only when more
  /// than MaxDims dimensions remain, which needs at least 2^MaxDims elements.
  bool build(int64_t in_ndim, const int64_t* in_sizes, const int64_t* const* in_strides, bool memory_order) {
    for (int64_t d = 0; d < in_ndim; ++d) {
      if (in_sizes[d] == 0) {  // nothing to visit; one empty dimension keeps the walkers simple
        set_single(0);
        return true;
      }
    }
    int order[kMaxInputDims];
    int kept = 0;
    for (int64_t d = 0; d < in_ndim; ++d) {
      if (in_sizes[d] == 1) continue;
      if (kept == kMaxInputDims) return false;
      order[kept++] = static_cast<int>(d);
    }
    if (memory_order) {
      for (int i = 1; i < kept; ++i) {  // insertion sort: tiny, stable, no allocation
        for (int j = i; j > 0 && in_strides[0][order[j - 1]] < in_strides[0][order[j]]; --j) {
          int t = order[j];
          order[j] = order[j - 1];
          order[j - 1] = t;
        }
      }
    }
    ndim = 0;
    for (int i = 0; i < kept; ++i) {
      const int d = order[i];
      const int64_t size = in_sizes[d];
      if (ndim > 0 && mergeable(in_strides, d, size)) {
        sizes[ndim - 1] *= size;
        for (int k = 0; k < N; ++k) strides[k][ndim - 1] = in_strides[k][d];
        continue;
      }
      if (ndim == MaxDims) return false;
      sizes[ndim] = size;
      for (int k = 0; k < N; ++k) strides[k][ndim] = in_strides[k][d];
      ++ndim;
    }
    if (ndim == 0) set_single(1);  // a scalar, or only size-1 dimensions
    return true;
  }

  EMBER_HD int64_t numel() const {
    int64_t n = 1;
    for (int d = 0; d < ndim; ++d) n *= sizes[d];
    return n;
  }

  EMBER_HD int64_t inner_size() const { return sizes[ndim - 1]; }
  EMBER_HD int64_t inner_stride(int k) const { return strides[k][ndim - 1]; }

  /// The element offset of each operand for the element at `linear` in row-major order over
  /// the (simplified) shape.
  EMBER_HD Offsets offsets(int64_t linear) const {
    Offsets o;
    for (int k = 0; k < N; ++k) o.v[k] = 0;
    for (int d = ndim - 1; d > 0; --d) {
      const int64_t q = linear / sizes[d];
      const int64_t i = linear - q * sizes[d];
      linear = q;
      for (int k = 0; k < N; ++k) o.v[k] += i * strides[k][d];
    }
    for (int k = 0; k < N; ++k) o.v[k] += linear * strides[k][0];
    return o;
  }

 private:
  // The current last dimension (possibly already merged) can absorb dimension d, which is
  // inner to it, when in every operand its stride spans exactly d's extent.
  bool mergeable(const int64_t* const* in_strides, int d, int64_t size) const {
    for (int k = 0; k < N; ++k) {
      if (strides[k][ndim - 1] != in_strides[k][d] * size) return false;
    }
    return true;
  }
  void set_single(int64_t size) {
    ndim = 1;
    sizes[0] = size;
    for (int k = 0; k < N; ++k) strides[k][0] = 0;
  }
};

/// Visits the linear range [begin, end) of `ix` (any sub-range, so threads can split the work)
/// as runs along the innermost dimension: row(offsets, count) is called with the element
/// offset of each operand at the start of a run of `count` elements, whose stride for operand
/// k is ix.inner_stride(k). Runs come in row-major order. Host only.
template <int N, int MaxDims, typename Row>
void for_each_row(const StridedIndexer<N, MaxDims>& ix, int64_t begin, int64_t end, Row&& row) {
  if (begin >= end) return;
  const int last = ix.ndim - 1;
  int64_t index[MaxDims];
  int64_t off[N];
  for (int k = 0; k < N; ++k) off[k] = 0;
  int64_t rest = begin;
  for (int d = last; d >= 0; --d) {
    index[d] = rest % ix.sizes[d];
    rest /= ix.sizes[d];
    for (int k = 0; k < N; ++k) off[k] += index[d] * ix.strides[k][d];
  }
  const int64_t inner = ix.sizes[last];
  for (;;) {
    const int64_t count = inner - index[last] < end - begin ? inner - index[last] : end - begin;
    row(static_cast<const int64_t*>(off), count);
    begin += count;
    if (begin >= end) return;
    // The row was finished: go back to its start and carry into the outer dimensions.
    for (int k = 0; k < N; ++k) off[k] -= index[last] * ix.strides[k][last];
    index[last] = 0;
    for (int d = last - 1; d >= 0; --d) {
      for (int k = 0; k < N; ++k) off[k] += ix.strides[k][d];
      if (++index[d] < ix.sizes[d]) break;
      for (int k = 0; k < N; ++k) off[k] -= index[d] * ix.strides[k][d];
      index[d] = 0;
    }
  }
}

}  // namespace ember::kernels
