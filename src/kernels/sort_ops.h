#pragma once
// The order of torch.sort, topk and searchsorted, written once for the CPU (cpu/sort.cpp) and
// CUDA (cuda/sort.cu) kernels. Elements compare in their compute type (float for the 16-bit
// floats). NaN sorts above every number, as in PyTorch; -0.0 and 0.0 are equal.
#include <cstdint>

#include "kernels/dtype_dispatch.h"
#include "kernels/kmath.h"

namespace ember::kernels {

/// a comes before b in ascending order.
template <typename C>
EMBER_HD constexpr bool sort_less(C a, C b) {
  if (kmath::isnan(a)) return false;
  return kmath::isnan(b) || a < b;
}

/// a comes before b in descending order (NaN first).
template <typename C>
EMBER_HD constexpr bool sort_greater(C a, C b) {
  return sort_less(b, a);
}

/// Where `value` goes in the ascending row `row` of `m` elements (read through `sorter`, a
/// permutation of 0..m-1, when it is not null): the first position whose element is >= value
/// (right = false) or > value (right = true). The comparisons are PyTorch's (`!(mid >= value)`):
/// every comparison with a NaN is false and moves the search right, so a NaN value goes after
/// the whole row, and so does a value that reaches the NaNs at a row's end.
template <typename T>
EMBER_HD int64_t searchsorted_position(const T* row, const int64_t* sorter, int64_t m, T value, bool right) {
  using C = compute_t<T>;
  const C v = static_cast<C>(value);
  int64_t lo = 0, hi = m;
  while (lo < hi) {
    const int64_t mid = lo + ((hi - lo) >> 1);
    const C at = static_cast<C>(sorter != nullptr ? row[sorter[mid]] : row[mid]);
    const bool go_right = right ? !(at > v) : !(at >= v);
    if (go_right)
      lo = mid + 1;
    else
      hi = mid;
  }
  return lo;
}

}  // namespace ember::kernels
