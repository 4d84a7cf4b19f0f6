// CpuBackend::index_select, gather, scatter_add and scatter_reduce.
//
// Every index is checked before anything is written, so a bad index throws without leaving a
// half-written output and no exception ever leaves a parallel region. index_select copies whole
// rows (the dims after `dim`). gather and scatter_add see the index's shape as lanes x `dim`,
// where a lane is a position of every other dim; threads split the lanes and each lane walks
// `dim` in order, so scatter_add never has two threads adding to one element and its order of
// additions is fixed (scatter_reduce likewise: Assign keeps the last value in index order).
#include <algorithm>
#include <array>
#include <cstring>

#include "backend/cpu/cpu_backend.h"
#include "backend/cpu/dispatch.h"
#include "base/parallel.h"
#include "core/check.h"
#include "core/tensor_internal.h"
#include "kernels/scatter_ops.h"

namespace ember::cpu {
namespace {

// Sizes and strides, with a 0-d tensor seen as a 1-d tensor of one element (PyTorch lets
// dim 0 address a scalar).
struct Shape {
  Dims sizes;
  Dims strides;
  int64_t ndim() const { return static_cast<int64_t>(sizes.size()); }
};

Shape shape_of(const TensorView& v) {
  if (v.ndim() == 0) return {Dims{1}, Dims{1}};
  return {v.sizes, v.strides};
}

using detail::contiguous_strides;

int64_t normalize_dim(int64_t dim, int64_t ndim, const char* op) {
  int64_t wrapped = dim < 0 ? dim + ndim : dim;
  EMBER_CHECK(wrapped >= 0 && wrapped < ndim, op, "(): dimension out of range (expected to be in range of [", -ndim,
              ", ", ndim - 1, "], but got ", dim, ")");
  return wrapped;
}

Dims slice_dims(const Dims& d, int64_t begin, int64_t end) {
  Dims out;
  for (int64_t i = begin; i < end; ++i) out.push_back(d[i]);
  return out;
}

int64_t product(const Dims& d) {
  int64_t n = 1;
  for (int64_t s : d) n *= s;
  return n;
}

// Offsets of N operands at one row-major position of `sizes`, advanced one position at a time.
template <int N>
class Walker {
 public:
  Walker(const Dims& sizes, const std::array<Dims, N>& strides, int64_t start)
      : sizes_(sizes), strides_(strides), index_(sizes.size()) {
    offsets_.fill(0);
    for (int64_t d = static_cast<int64_t>(sizes.size()) - 1; d >= 0; --d) {
      index_[d] = start % sizes[d];
      start /= sizes[d];
      for (int k = 0; k < N; ++k) offsets_[k] += index_[d] * strides[k][d];
    }
  }
  const std::array<int64_t, N>& offsets() const { return offsets_; }
  void next() {
    for (int64_t d = static_cast<int64_t>(sizes_.size()) - 1; d >= 0; --d) {
      for (int k = 0; k < N; ++k) offsets_[k] += strides_[k][d];
      if (++index_[d] < sizes_[d]) return;
      for (int k = 0; k < N; ++k) offsets_[k] -= strides_[k][d] * sizes_[d];
      index_[d] = 0;
    }
  }

 private:
  const Dims& sizes_;
  const std::array<Dims, N>& strides_;
  Dims index_;
  std::array<int64_t, N> offsets_;
};

// An iteration space seen as lanes x `dim`: a lane is one position of all the other dims. The
// last of those dims is the "run" dim, which kernels loop over directly; the rest ("group")
// are stepped by a Walker. N operands have their strides over each part.
template <int N>
struct Split {
  Dims group_sizes;
  std::array<Dims, N> group_strides;
  std::array<int64_t, N> dim_strides{}, run_strides{};
  int64_t dim_size = 1, run_size = 1, lanes = 1;

  Split(const Dims& sizes, int64_t dim, std::array<const Dims*, N> strides) {
    const int64_t nd = static_cast<int64_t>(sizes.size());
    const int64_t run_dim = dim == nd - 1 ? nd - 2 : nd - 1;  // -1 when dim is the only dim
    dim_size = sizes[dim];
    if (run_dim >= 0) run_size = sizes[run_dim];
    for (int64_t d = 0; d < nd; ++d) {
      if (d != dim && d != run_dim) group_sizes.push_back(sizes[d]);
    }
    for (int k = 0; k < N; ++k) {
      dim_strides[k] = (*strides[k])[dim];
      if (run_dim >= 0) run_strides[k] = (*strides[k])[run_dim];
      for (int64_t d = 0; d < nd; ++d) {
        if (d != dim && d != run_dim) group_strides[k].push_back((*strides[k])[d]);
      }
    }
    lanes = product(group_sizes) * run_size;
  }
};

// Covers lanes [begin, end): for each piece of a run it calls body(offsets, n), with the
// offsets of the piece's first lane (at dim index 0) and its length. The body walks `dim`
// itself, so each lane sees the dim indices in order.
template <int N, typename Body>
void for_each_run(const Split<N>& s, int64_t begin, int64_t end, const Body& body) {
  Walker<N> group(s.group_sizes, s.group_strides, begin / s.run_size);
  for (int64_t lane = begin, pos = begin % s.run_size; lane < end; pos = 0, group.next()) {
    const int64_t n = std::min(s.run_size - pos, end - lane);
    std::array<int64_t, N> offsets;
    for (int k = 0; k < N; ++k) offsets[k] = group.offsets()[k] + pos * s.run_strides[k];
    body(offsets, n);
    lane += n;
  }
}

// Checks every index of `index` against [0, size), reporting the first bad one in row-major
// order with PyTorch's message.
void check_indices(const TensorView& index, int64_t dim, int64_t size) {
  const Shape shape = shape_of(index);
  const int64_t* data = index.ptr<const int64_t>();
  if (index.is_contiguous()) {
    const int64_t n = index.numel();
    bool ok = true;
    for (int64_t i = 0; i < n; ++i) ok &= data[i] >= 0 && data[i] < size;
    if (ok) return;
  }
  const int64_t nd = shape.ndim();
  const int64_t last = shape.sizes[nd - 1], stride = shape.strides[nd - 1];
  const Dims rest = slice_dims(shape.sizes, 0, nd - 1);
  const std::array<Dims, 1> rest_strides{slice_dims(shape.strides, 0, nd - 1)};
  const int64_t rows = product(rest);
  if (last == 0) return;
  Walker<1> w(rest, rest_strides, 0);
  for (int64_t r = 0; r < rows; ++r, w.next()) {
    const int64_t* row = data + w.offsets()[0];
    bool ok = true;
    for (int64_t i = 0; i < last; ++i) ok &= row[i * stride] >= 0 && row[i * stride] < size;
    if (ok) continue;
    for (int64_t i = 0; i < last; ++i) {
      int64_t v = row[i * stride];
      EMBER_CHECK(v >= 0 && v < size, "index ", v, " is out of bounds for dimension ", dim, " with size ", size);
    }
  }
}

void check_index_dtype(const TensorView& index, const char* op) {
  EMBER_CHECK(index.dtype == kInt64, op, "(): Expected dtype int64 for index");
}

template <typename T>
void index_select_typed(const TensorView& x, int64_t dim, const TensorView& index, const TensorView& out) {
  const Shape xs = shape_of(x);
  const int64_t count = index.numel();
  const int64_t index_stride = index.ndim() == 0 ? 0 : index.strides[0];
  const int64_t* idx = index.ptr<const int64_t>();

  const int64_t outer = product(slice_dims(xs.sizes, 0, dim));
  const Dims inner_sizes = slice_dims(xs.sizes, dim + 1, xs.ndim());
  const std::array<Dims, 1> inner_strides{slice_dims(xs.strides, dim + 1, xs.ndim())};
  const Dims outer_sizes = slice_dims(xs.sizes, 0, dim);
  const std::array<Dims, 1> outer_strides{slice_dims(xs.strides, 0, dim)};
  const int64_t inner = product(inner_sizes);
  const bool inner_contiguous = inner_strides[0] == contiguous_strides(inner_sizes);

  const T* src = x.ptr<const T>();
  T* dst = out.ptr<T>();
  auto copy_rows = [&](int64_t begin, int64_t end) {
    for (int64_t row = begin; row < end; ++row) {
      const int64_t a = row / count, j = row % count;
      const T* from =
          src + Walker<1>(outer_sizes, outer_strides, a).offsets()[0] + idx[j * index_stride] * xs.strides[dim];
      T* to = dst + row * inner;
      if (inner_contiguous) {
        std::copy(from, from + inner, to);
      } else {
        Walker<1> w(inner_sizes, inner_strides, 0);
        for (int64_t b = 0; b < inner; ++b, w.next()) to[b] = from[w.offsets()[0]];
      }
    }
  };
  base::parallel_for(outer * count, std::max<int64_t>(1, base::kGrainSize / std::max<int64_t>(1, inner)), copy_rows);
}

template <typename T>
void gather_typed(const TensorView& x, int64_t dim, const TensorView& index, const TensorView& out) {
  const Shape xs = shape_of(x), is = shape_of(index);
  const Dims out_strides = contiguous_strides(is.sizes);
  // Operands: 0 = index, 1 = x (its `dim` offset comes from the index), 2 = out.
  const Split<3> s(is.sizes, dim, {&is.strides, &xs.strides, &out_strides});
  const int64_t* idx = index.ptr<const int64_t>();
  const T* src = x.ptr<const T>();
  T* dst = out.ptr<T>();
  // Plain variables, not structured bindings: clang before 16 cannot capture those in lambdas.
  const int64_t is_dim = s.dim_strides[0], xs_dim = s.dim_strides[1], os_dim = s.dim_strides[2];
  const int64_t is_run = s.run_strides[0], xs_run = s.run_strides[1], os_run = s.run_strides[2];
  auto copy_run = [&](const std::array<int64_t, 3>& offsets, int64_t n) {
    for (int64_t j = 0; j < s.dim_size; ++j) {
      const int64_t* ip = idx + offsets[0] + j * is_dim;
      const T* xp = src + offsets[1];
      T* op = dst + offsets[2] + j * os_dim;
      for (int64_t i = 0; i < n; ++i) op[i * os_run] = xp[ip[i * is_run] * xs_dim + i * xs_run];
    }
  };
  base::parallel_for(s.lanes, std::max<int64_t>(1, base::kGrainSize / std::max<int64_t>(1, s.dim_size)),
                     [&](int64_t begin, int64_t end) { for_each_run(s, begin, end, copy_run); });
}

// Combines src into out at the index along dim (kernels/scatter_ops.h): scatter_add is Sum.
template <typename T, typename Combine>
void scatter_typed(const TensorView& out, int64_t dim, const TensorView& index, const TensorView& src,
                   const Combine& combine) {
  const Shape os = shape_of(out), is = shape_of(index), ss = shape_of(src);
  // Operands: 0 = index, 1 = src, 2 = out (its `dim` offset comes from the index).
  const Split<3> s(is.sizes, dim, {&is.strides, &ss.strides, &os.strides});
  const int64_t* idx = index.ptr<const int64_t>();
  const T* from = src.ptr<const T>();
  T* to = out.ptr<T>();
  const int64_t is_dim = s.dim_strides[0], ss_dim = s.dim_strides[1], os_dim = s.dim_strides[2];
  const int64_t is_run = s.run_strides[0], ss_run = s.run_strides[1], os_run = s.run_strides[2];
  auto combine_run = [&](const std::array<int64_t, 3>& offsets, int64_t n) {
    for (int64_t j = 0; j < s.dim_size; ++j) {
      const int64_t* ip = idx + offsets[0] + j * is_dim;
      const T* sp = from + offsets[1] + j * ss_dim;
      T* op = to + offsets[2];
      for (int64_t i = 0; i < n; ++i) combine(&op[ip[i * is_run] * os_dim + i * os_run], sp[i * ss_run]);
    }
  };
  base::parallel_for(s.lanes, std::max<int64_t>(1, base::kGrainSize / std::max<int64_t>(1, s.dim_size)),
                     [&](int64_t begin, int64_t end) { for_each_run(s, begin, end, combine_run); });
}

// The checks scatter_add and scatter_reduce share, with PyTorch's messages.
void check_scatter(const TensorView& out, int64_t& dim, const TensorView& index, const TensorView& src,
                   const char* op) {
  check_index_dtype(index, op);
  const Shape os = shape_of(out), is = shape_of(index), ss = shape_of(src);
  EMBER_CHECK(os.ndim() == is.ndim() && ss.ndim() == is.ndim(),
              "Index tensor must have the same number of dimensions as self tensor");
  dim = normalize_dim(dim, os.ndim(), op);
  for (int64_t d = 0; d < os.ndim(); ++d) {
    EMBER_CHECK((d == dim || is.sizes[d] <= os.sizes[d]) && is.sizes[d] <= ss.sizes[d], "Expected index ",
                detail::shape_str(index.sizes), " to be smaller than self ", detail::shape_str(out.sizes),
                " apart from dimension ", dim, " and to be smaller size than src ", detail::shape_str(src.sizes));
  }
  EMBER_CHECK(out.dtype == src.dtype, op, "(): Expected self.dtype to be equal to src.dtype");
  check_indices(index, dim, os.sizes[dim]);
}

}  // namespace

void CpuBackend::index_select(const TensorView& x, int64_t dim, const TensorView& index, const TensorView& out) {
  check_index_dtype(index, "index_select");
  EMBER_CHECK(index.ndim() <= 1, "index_select(): Index is supposed to be a vector");
  const Shape xs = shape_of(x);
  dim = normalize_dim(dim, xs.ndim(), "index_select");
  const int64_t size = xs.sizes[dim];
  const int64_t count = index.numel();
  const int64_t index_stride = index.ndim() == 0 ? 0 : index.strides[0];
  const int64_t* idx = index.ptr<const int64_t>();
  for (int64_t j = 0; j < count; ++j) {
    int64_t v = idx[j * index_stride];
    EMBER_CHECK(v >= 0 && v < size, "index out of range in self");
  }
  if (out.numel() == 0) return;
  dispatch_all(x.dtype, "index_select", [&]<typename T>() { index_select_typed<T>(x, dim, index, out); });
}

void CpuBackend::gather(const TensorView& x, int64_t dim, const TensorView& index, const TensorView& out) {
  check_index_dtype(index, "gather");
  const Shape xs = shape_of(x), is = shape_of(index);
  EMBER_CHECK(xs.ndim() == is.ndim(), "Index tensor must have the same number of dimensions as input tensor");
  dim = normalize_dim(dim, xs.ndim(), "gather");
  for (int64_t d = 0; d < xs.ndim(); ++d) {
    EMBER_CHECK(d == dim || is.sizes[d] <= xs.sizes[d], "Size does not match at dimension ", d, " expected index ",
                detail::shape_str(index.sizes), " to be smaller than self ", detail::shape_str(x.sizes),
                " apart from dimension ", dim);
  }
  EMBER_CHECK(out.numel() == index.numel() && out.dtype == x.dtype,
              "gather(): out must have index's sizes and x's dtype");
  check_indices(index, dim, xs.sizes[dim]);
  if (index.numel() == 0) return;
  dispatch_all(x.dtype, "gather", [&]<typename T>() { gather_typed<T>(x, dim, index, out); });
}

void CpuBackend::scatter_add(const TensorView& out, int64_t dim, const TensorView& index, const TensorView& src) {
  check_scatter(out, dim, index, src, "scatter_add");
  if (index.numel() == 0) return;
  // bool adds as logical or, small integers wrap, 16-bit floats add in float and round once.
  dispatch_all(out.dtype, "scatter_add", [&]<typename T>() {
    scatter_typed<T>(out, dim, index, src, kernels::ScatterCombine<ScatterReduceOp::Sum>{});
  });
}

void CpuBackend::scatter_reduce(ScatterReduceOp op, const TensorView& out, int64_t dim, const TensorView& index,
                                const TensorView& src) {
  check_scatter(out, dim, index, src, "scatter_reduce");
  if (index.numel() == 0) return;
  kernels::visit_scatter_reduce(op, [&](auto combine) {
    dispatch_all(out.dtype, "scatter_reduce", [&]<typename T>() { scatter_typed<T>(out, dim, index, src, combine); });
  });
}

}  // namespace ember::cpu
