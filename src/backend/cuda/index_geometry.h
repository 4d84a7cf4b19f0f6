#pragma once
// The iteration geometry of the CUDA index_select, gather and scatter_add kernels (indexing.cu)
// and their per-element bodies, kept free of CUDA headers so that the host tests build every
// op's geometry from strided views and run the bodies against the CPU backend.
//
// Each op is one thread per element of an iteration space (the index's shape; for index_select
// the output's), and an element maps to three offsets: into the index, into the indexed operand
// (x, or scatter_add's out; its `dim` coordinate comes from the index) and into the other operand
// (the contiguous output of index_select and gather, or scatter_add's src).
#include <cstdint>

#include "backend/backend.h"
#include "core/check.h"
#include "core/tensor_internal.h"
#include "ember/half.h"  // EMBER_HD
#include "kernels/dtype_dispatch.h"

namespace ember::cuda_impl {

/// Dimensions a kernel argument holds (PyTorch's CUDA kernels have the same limit).
inline constexpr int kMaxIndexDims = 25;

struct IndexGeometry {
  int ndim = 0;
  int dim = 0;
  int64_t bound = 0;  // size of `dim` in the indexed operand: valid indices are [0, bound)
  int64_t sizes[kMaxIndexDims] = {};
  int64_t index_strides[kMaxIndexDims] = {};
  int64_t data_strides[kMaxIndexDims] = {};
  int64_t other_strides[kMaxIndexDims] = {};
};

struct IndexOffsets {
  int64_t index = 0, data = 0, other = 0;  // data without the `dim` term
};

EMBER_HD inline IndexOffsets index_offsets(const IndexGeometry& g, int64_t linear) {
  IndexOffsets o;
  for (int d = g.ndim - 1; d >= 0; --d) {
    const int64_t q = linear / g.sizes[d];
    const int64_t i = linear - q * g.sizes[d];
    linear = q;
    o.index += i * g.index_strides[d];
    o.other += i * g.other_strides[d];
    if (d != g.dim) o.data += i * g.data_strides[d];
  }
  return o;
}

/// index_select / gather element `i`: out = x at the index, or 0 for an index outside [0, bound)
/// (never a read out of bounds). Returns whether the index was in range (the kernel records a
/// bad one: index_error.h).
template <typename T>
EMBER_HD bool gather_at(const T* x, const int64_t* index, T* out, const IndexGeometry& g, int64_t i) {
  const IndexOffsets o = index_offsets(g, i);
  const int64_t v = index[o.index];
  const bool in_range = v >= 0 && v < g.bound;
  out[o.other] = in_range ? x[o.data + v * g.data_strides[g.dim]] : T{};
  return in_range;
}

/// scatter_add element `i`: add(target, value) for the target the index picks; an index outside
/// [0, bound) adds nothing. Returns whether the index was in range.
template <typename T, typename Add>
EMBER_HD bool scatter_add_at(T* out, const int64_t* index, const T* src, const IndexGeometry& g, int64_t i,
                             const Add& add) {
  const IndexOffsets o = index_offsets(g, i);
  const int64_t v = index[o.index];
  const bool in_range = v >= 0 && v < g.bound;
  if (in_range) add(out + o.data + v * g.data_strides[g.dim], src[o.other]);
  return in_range;
}

/// Adds `value` to `*target` as the CPU's scatter_add does: in the compute type (float for the
/// 16-bit floats) and rounded once; bool adds as logical or.
struct SequentialAdd {
  template <typename T>
  EMBER_HD void operator()(T* target, T value) const {
    using C = kernels::compute_t<T>;
    *target = static_cast<T>(static_cast<C>(*target) + static_cast<C>(value));
  }
};

/// Deterministic scatter_add (use_deterministic_algorithms): the index's elements are taken as
/// columns along `dim`, a column being the elements that share every other coordinate. Two
/// columns never add into one target (a target's other coordinates are its column's), so one
/// thread per column that adds its elements in order along `dim` adds into every target in one
/// fixed order, the CPU backend's (which walks each such lane along `dim` too): the result is
/// the CPU's, bit for bit. The geometry of the columns is scatter_add's with `dim` cut to one
/// element; `length` is the index's size along `dim`, and there are numel / length columns.
inline IndexGeometry column_geometry(const IndexGeometry& g) {
  IndexGeometry columns = g;
  columns.sizes[columns.dim] = 1;
  return columns;
}

/// Column `c` of a deterministic scatter_add: adds its elements in order, skipping indices
/// outside [0, bound) (never a write out of bounds). Returns the position along `dim` of the
/// first such index, or -1 when all were in range.
template <typename T, typename Add>
EMBER_HD int64_t scatter_add_column(T* out, const int64_t* index, const T* src, const IndexGeometry& columns,
                                    int64_t length, int64_t c, const Add& add) {
  const IndexOffsets o = index_offsets(columns, c);
  const int d = columns.dim;
  int64_t first_bad = -1;
  for (int64_t k = 0; k < length; ++k) {
    const int64_t v = index[o.index + k * columns.index_strides[d]];
    if (v >= 0 && v < columns.bound) {
      add(out + o.data + v * columns.data_strides[d], src[o.other + k * columns.other_strides[d]]);
    } else if (first_bad < 0) {
      first_bad = k;
    }
  }
  return first_bad;
}

// ------------------------------------------------------------------------------- host side

namespace index_detail {

// A 0-d tensor is seen as one element of a 1-d tensor (PyTorch lets dim 0 address a scalar).
inline Dims sizes_of(const TensorView& v) { return v.ndim() == 0 ? Dims{1} : v.sizes; }
inline Dims strides_of(const TensorView& v) { return v.ndim() == 0 ? Dims{1} : v.strides; }

using detail::contiguous_strides;

inline IndexGeometry make(const Dims& sizes, int64_t dim, int64_t bound, const Dims& index_strides,
                          const Dims& data_strides, const Dims& other_strides, const char* op) {
  const int64_t nd = static_cast<int64_t>(sizes.size());
  EMBER_CHECK(nd <= kMaxIndexDims, op, "(): tensors with more than ", kMaxIndexDims,
              " dimensions are not supported on CUDA");
  IndexGeometry g;
  g.ndim = static_cast<int>(nd);
  g.dim = static_cast<int>(dim);
  g.bound = bound;
  for (int64_t d = 0; d < nd; ++d) {
    g.sizes[d] = sizes[d];
    g.index_strides[d] = index_strides[d];
    g.data_strides[d] = data_strides[d];
    g.other_strides[d] = other_strides[d];
  }
  return g;
}

}  // namespace index_detail

/// index_select over out's elements (out contiguous, x's sizes with `dim` replaced by the
/// index's length); `dim` is already wrapped, the index is 0-d or 1-d.
inline IndexGeometry index_select_geometry(const TensorView& x, int64_t dim, const TensorView& index) {
  using namespace index_detail;
  Dims sizes = sizes_of(x);
  const int64_t bound = sizes[dim];
  sizes[dim] = index.numel();
  Dims index_strides(sizes.size(), 0);
  index_strides[dim] = index.ndim() == 0 ? 0 : index.strides[0];
  return make(sizes, dim, bound, index_strides, strides_of(x), contiguous_strides(sizes), "index_select");
}

/// gather over the index's elements (out contiguous, shaped like the index).
inline IndexGeometry gather_geometry(const TensorView& x, int64_t dim, const TensorView& index) {
  using namespace index_detail;
  const Dims sizes = sizes_of(index);
  return make(sizes, dim, sizes_of(x)[dim], strides_of(index), strides_of(x), contiguous_strides(sizes), "gather");
}

/// scatter_add over the index's elements, into a strided out from a strided src.
inline IndexGeometry scatter_add_geometry(const TensorView& out, int64_t dim, const TensorView& index,
                                          const TensorView& src) {
  using namespace index_detail;
  return make(sizes_of(index), dim, sizes_of(out)[dim], strides_of(index), strides_of(out), strides_of(src),
              "scatter_add");
}

/// The index's own elements in row-major order (for checking them against `bound`).
inline IndexGeometry index_check_geometry(const TensorView& index, int64_t bound, const char* op) {
  using namespace index_detail;
  const Dims strides = strides_of(index);
  return make(sizes_of(index), 0, bound, strides, strides, strides, op);
}

}  // namespace ember::cuda_impl
