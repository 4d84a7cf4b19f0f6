// CpuBackend::sort, topk and searchsorted (entry_points.def), over the rows of contiguous views;
// the order itself is kernels/sort_ops.h, shared with CUDA.
//
// Each row is sorted as (key, position) pairs with std::stable_sort, so equal elements keep
// their order; topk takes std::partial_sort when k is small against the row (it touches the
// rest of the row once) and nth_element then a sort of the k otherwise. Threads split the rows.
// The values written are the input's own elements, read back through the positions, so -0.0
// and NaN payloads come out as they went in.
#include <algorithm>
#include <cstdint>
#include <utility>
#include <vector>

#include "backend/cpu/cpu_backend.h"
#include "backend/cpu/dispatch.h"
#include "base/parallel.h"
#include "core/check.h"
#include "kernels/sort_ops.h"

namespace ember::cpu {
namespace {

// The last dimension's length and the number of rows before it (a 0-d view is one row of one).
std::pair<int64_t, int64_t> rows_and_length(const TensorView& v) {
  const int64_t n = v.ndim() == 0 ? 1 : v.sizes[v.ndim() - 1];
  return {n == 0 ? 0 : v.numel() / n, n};
}

// Rows per task: enough elements that a thread's share is worth starting.
int64_t row_grain(int64_t n) { return std::max<int64_t>(1, base::kGrainSize / std::max<int64_t>(1, n)); }

template <typename T>
using Keyed = std::pair<compute_t<T>, int64_t>;

template <typename T>
void load_row(const T* x, int64_t n, std::vector<Keyed<T>>& row) {
  row.resize(static_cast<size_t>(n));
  for (int64_t i = 0; i < n; ++i) row[i] = {static_cast<compute_t<T>>(x[i]), i};
}

template <typename T>
void sort_typed(const TensorView& x, bool descending, const TensorView& values, const TensorView& indices) {
  using C = compute_t<T>;
  const auto [rows, n] = rows_and_length(x);
  const T* in = x.ptr<const T>();
  T* out = values.ptr<T>();
  int64_t* idx = indices.ptr<int64_t>();
  const int64_t length = n;  // a plain copy for the lambda (clang 14 cannot capture bindings)
  base::parallel_for(rows, row_grain(n), [&](int64_t begin, int64_t end) {
    std::vector<Keyed<T>> row;
    for (int64_t r = begin; r < end; ++r) {
      const T* xr = in + r * length;
      load_row(xr, length, row);
      if (descending) {
        std::stable_sort(row.begin(), row.end(), [](const Keyed<T>& a, const Keyed<T>& b) {
          return kernels::sort_greater<C>(a.first, b.first);
        });
      } else {
        std::stable_sort(row.begin(), row.end(),
                         [](const Keyed<T>& a, const Keyed<T>& b) { return kernels::sort_less<C>(a.first, b.first); });
      }
      for (int64_t i = 0; i < length; ++i) {
        out[r * length + i] = xr[row[i].second];
        idx[r * length + i] = row[i].second;
      }
    }
  });
}

template <typename T>
void topk_typed(const TensorView& x, int64_t k, bool largest, const TensorView& values, const TensorView& indices) {
  using C = compute_t<T>;
  const auto [rows, n] = rows_and_length(x);
  const T* in = x.ptr<const T>();
  T* out = values.ptr<T>();
  int64_t* idx = indices.ptr<int64_t>();
  const int64_t length = n;
  const auto before = [largest](const Keyed<T>& a, const Keyed<T>& b) {
    return largest ? kernels::sort_greater<C>(a.first, b.first) : kernels::sort_less<C>(a.first, b.first);
  };
  base::parallel_for(rows, row_grain(n), [&](int64_t begin, int64_t end) {
    std::vector<Keyed<T>> row;
    for (int64_t r = begin; r < end; ++r) {
      const T* xr = in + r * length;
      load_row(xr, length, row);
      if (k * 64 <= length) {
        std::partial_sort(row.begin(), row.begin() + k, row.end(), before);
      } else {
        if (k < length) std::nth_element(row.begin(), row.begin() + (k - 1), row.end(), before);
        std::sort(row.begin(), row.begin() + k, before);
      }
      for (int64_t i = 0; i < k; ++i) {
        out[r * k + i] = xr[row[i].second];
        idx[r * k + i] = row[i].second;
      }
    }
  });
}

template <typename T, typename Out>
void searchsorted_typed(const TensorView& sorted, const TensorView& values, bool right, const TensorView& sorter,
                        const TensorView& out) {
  const auto [rows, n] = rows_and_length(values);
  const auto [sorted_rows, m] = rows_and_length(sorted);
  const T* seq = sorted.ptr<const T>();
  const T* val = values.ptr<const T>();
  const int64_t* perm = sorter.data != nullptr ? sorter.ptr<const int64_t>() : nullptr;
  Out* dst = out.ptr<Out>();
  const int64_t length = n, seq_length = m, shared = sorted_rows == 1 ? 1 : 0;
  base::parallel_for(rows * n, base::kGrainSize / 16, [&](int64_t begin, int64_t end) {
    for (int64_t i = begin; i < end; ++i) {
      const int64_t row = shared ? 0 : i / length;
      const int64_t* row_perm = perm != nullptr ? perm + row * seq_length : nullptr;
      dst[i] =
          static_cast<Out>(kernels::searchsorted_position(seq + row * seq_length, row_perm, seq_length, val[i], right));
    }
  });
}

}  // namespace

void CpuBackend::sort(const TensorView& x, bool descending, const TensorView& values, const TensorView& indices) {
  EMBER_CHECK(x.is_contiguous() && values.is_contiguous() && indices.is_contiguous() && indices.dtype == kInt64 &&
                  values.dtype == x.dtype && values.numel() == x.numel() && indices.numel() == x.numel(),
              "sort: the kernel takes contiguous views of equal sizes and int64 indices");
  if (x.numel() == 0) return;
  dispatch_all(x.dtype, "sort", [&]<typename T>() { sort_typed<T>(x, descending, values, indices); });
}

void CpuBackend::topk(const TensorView& x, int64_t k, bool largest, const TensorView& values,
                      const TensorView& indices) {
  const int64_t n = x.ndim() == 0 ? 1 : x.sizes[x.ndim() - 1];
  EMBER_CHECK(x.is_contiguous() && values.is_contiguous() && indices.is_contiguous() && indices.dtype == kInt64 &&
                  values.dtype == x.dtype && k >= 0 && k <= n,
              "topk: the kernel takes contiguous views, int64 indices and 0 <= k <= the row length");
  if (values.numel() == 0) return;
  dispatch_all(x.dtype, "topk", [&]<typename T>() { topk_typed<T>(x, k, largest, values, indices); });
}

void CpuBackend::searchsorted(const TensorView& sorted, const TensorView& values, bool right, const TensorView& sorter,
                              const TensorView& out) {
  EMBER_CHECK(sorted.is_contiguous() && values.is_contiguous() && out.is_contiguous() && sorted.dtype == values.dtype &&
                  (out.dtype == kInt64 || out.dtype == kInt32),
              "searchsorted: the kernel takes contiguous views of one dtype and an int64 or int32 output");
  if (values.numel() == 0) return;
  dispatch_all(values.dtype, "searchsorted", [&]<typename T>() {
    if (out.dtype == kInt64)
      searchsorted_typed<T, int64_t>(sorted, values, right, sorter, out);
    else
      searchsorted_typed<T, int32_t>(sorted, values, right, sorter, out);
  });
}

}  // namespace ember::cpu
