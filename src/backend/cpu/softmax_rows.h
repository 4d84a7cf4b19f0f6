#pragma once
// Row statistics shared by the CPU's softmax (softmax.cpp) and its fused cross-entropy
// (cross_entropy.cpp), which therefore agree to the bit: each row's maximum and sum of
// exp(x - max), computed over L1-sized blocks of rows.
#include <algorithm>
#include <cstdint>
#include <vector>

#include "backend/cpu/vector_libm.h"
#include "base/parallel.h"
#include "kernels/elementwise_ops.h"

namespace ember::cpu::rowwise {

constexpr int64_t kBlockElements = 4096;  // rows are processed in blocks of about this size (L1-resident)

// The loops below are written for the vectoriser: OpenMP's simd reduction lets it reorder the
// adds and compares into lanes. A NaN anywhere still reaches the result through exp, so the
// max need not propagate it.
template <typename S, typename T>
S row_max(const T* x, int64_t n) {
  S best = static_cast<S>(x[0]);
#pragma omp simd reduction(max : best)
  for (int64_t i = 0; i < n; ++i) {
    S v = static_cast<S>(x[i]);
    best = v > best ? v : best;
  }
  return best;
}

template <typename S>
S row_sum(const S* t, int64_t n) {
  S sum = 0;
#pragma omp simd reduction(+ : sum)
  for (int64_t i = 0; i < n; ++i) sum += t[i];
  return sum;
}

// Each row's maximum and sum of exp(x - max) for a block of rows; `t` receives exp(x - max).
// The exp runs as one flat loop over the whole block, so short rows ([64, 10]) vectorise as well
// as long ones. Shared by softmax, log_softmax and cross_entropy, which therefore agree.
template <typename S, typename T>
void row_stats(const T* x, int64_t rows, int64_t n, S* t, S* maxes, S* sums) {
  for (int64_t r = 0; r < rows; ++r) {
    const T* xr = x + r * n;
    S* tr = t + r * n;
    const S max = row_max<S>(xr, n);
    maxes[r] = max;
    for (int64_t i = 0; i < n; ++i) tr[i] = static_cast<S>(xr[i]) - max;
  }
  const int64_t m = rows * n;
#pragma omp simd
  for (int64_t i = 0; i < m; ++i) t[i] = std::exp(t[i]);  // libmvec's vector expf for float
  for (int64_t r = 0; r < rows; ++r) sums[r] = row_sum(t + r * n, n);
}

/// Calls block(first_row, count, t, maxes, sums) over [0, rows) in blocks of L1-sized rows, on
/// several threads when the work is large, with per-thread scratch for row_stats.
template <typename S, typename Block>
void for_each_row_block(int64_t rows, int64_t n, const Block& block) {
  const int64_t block_rows = std::max<int64_t>(1, kBlockElements / n);
  base::parallel_for(rows, std::max<int64_t>(1, base::kGrainSize / n), [&](int64_t begin, int64_t end) {
    std::vector<S> scratch(std::min(end - begin, block_rows) * n);
    std::vector<S> maxes(std::min(end - begin, block_rows));
    std::vector<S> sums(maxes.size());
    for (int64_t r = begin; r < end; r += block_rows) {
      block(r, std::min(block_rows, end - r), scratch.data(), maxes.data(), sums.data());
    }
  });
}

}  // namespace ember::cpu::rowwise
