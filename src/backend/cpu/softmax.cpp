// CpuBackend::softmax: softmax and log-softmax along the last dimension of a contiguous tensor.
//
// Rows are handled in L1-sized blocks: each row's maximum, then x - max for the whole block,
// exp over the block as one flat vectorised loop (so short rows vectorise as well as long
// ones), then each row's sum and the scaling. Subtracting the maximum keeps exp in range; a row
// that is -inf everywhere (or holds a NaN) yields NaN, as in PyTorch. float16 and bfloat16 are
// computed in float.
#include <algorithm>
#include <bit>
#include <cmath>
#include <cstdint>
#include <type_traits>
#include <vector>

#include "backend/cpu/cpu_backend.h"
#include "backend/cpu/dispatch.h"
#include "backend/cpu/parallel.h"
#include "core/check.h"

namespace ember::cpu {
namespace {

// exp(x) for float in a form the compiler can vectorise (std::exp is a libm call per element).
// x = n*ln2 + r with |r| <= ln2/2; exp(r) by its Taylor series to r^7 (truncation error 5e-9,
// below float's rounding); 2^n is applied in two halves so that results down in the subnormal
// range and up to overflow are scaled correctly. Accurate to about 2 ulp; NaN stays NaN,
// -inf gives 0 and large x gives inf.
inline float exp_float(float x) {
  x = x < -104.0f ? -104.0f : x;  // exp(-104) already rounds to 0; comparisons keep NaN
  x = x > 100.0f ? 100.0f : x;    // exp(89) already overflows to inf
  constexpr float kLog2e = 1.44269504088896341f;
  constexpr float kLn2Hi = 0.693145751953125f;  // few mantissa bits: n * kLn2Hi is exact
  constexpr float kLn2Lo = 1.42860682030941723212e-6f;
  constexpr float kShifter = 12582912.0f;  // 1.5 * 2^23: adding it rounds to an integer in the low bits
  float shifted = x * kLog2e + kShifter;
  float n = shifted - kShifter;
  uint32_t n_bits = std::bit_cast<uint32_t>(shifted) - std::bit_cast<uint32_t>(kShifter);  // n mod 2^32
  float r = (x - n * kLn2Hi) - n * kLn2Lo;
  float p = 1.0f / 5040.0f;
  p = p * r + 1.0f / 720.0f;
  p = p * r + 1.0f / 120.0f;
  p = p * r + 1.0f / 24.0f;
  p = p * r + 1.0f / 6.0f;
  p = p * r + 0.5f;
  p = p * r + 1.0f;
  p = p * r + 1.0f;
  int32_t n_int = static_cast<int32_t>(n_bits);
  int32_t half1 = n_int >> 1;     // floor(n / 2); a shift vectorises more cheaply than a divide
  int32_t half2 = n_int - half1;  // both in [-75, 73]: valid normal exponents
  float scale1 = std::bit_cast<float>(static_cast<uint32_t>(half1 + 127) << 23);
  float scale2 = std::bit_cast<float>(static_cast<uint32_t>(half2 + 127) << 23);
  return p * scale1 * scale2;
}

inline float exp_of(float x) { return exp_float(x); }
inline double exp_of(double x) { return std::exp(x); }

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

// A block of rows (x and y may alias). The exp runs as one flat loop over the whole block in
// the scratch buffer `t`, so short rows ([64, 10]) vectorise as well as long ones.
template <typename S, typename T>
void softmax_block(const T* x, T* y, int64_t rows, int64_t n, bool log, S* t, S* maxes) {
  for (int64_t r = 0; r < rows; ++r) {
    const T* xr = x + r * n;
    S* tr = t + r * n;
    const S max = row_max<S>(xr, n);
    maxes[r] = max;
    for (int64_t i = 0; i < n; ++i) tr[i] = static_cast<S>(xr[i]) - max;
  }
  const int64_t m = rows * n;
#pragma omp simd
  for (int64_t i = 0; i < m; ++i) t[i] = exp_of(t[i]);
  for (int64_t r = 0; r < rows; ++r) {
    const S sum = row_sum(t + r * n, n);
    const T* xr = x + r * n;
    const S* tr = t + r * n;
    T* yr = y + r * n;
    if (log) {
      const S max = maxes[r], log_sum = std::log(sum);
      for (int64_t i = 0; i < n; ++i) yr[i] = T(static_cast<S>(xr[i]) - max - log_sum);
    } else {
      // One reciprocal and a multiply per element, as PyTorch's vectorised CPU kernel does: a
      // vector divide costs several times more and buys half an ulp.
      const S scale = S(1) / sum;
      for (int64_t i = 0; i < n; ++i) yr[i] = T(tr[i] * scale);
    }
  }
}

template <typename T>
void softmax_rows(const T* x, T* y, int64_t rows, int64_t n, bool log) {
  using S = compute_t<T>;  // float for the 16-bit types: widened once, rounded once
  const int64_t block_rows = std::max<int64_t>(1, kBlockElements / n);
  parallel_for(rows, std::max<int64_t>(1, kGrainSize / n), [&](int64_t begin, int64_t end) {
    std::vector<S> scratch(std::min(end - begin, block_rows) * n);
    std::vector<S> maxes(std::min(end - begin, block_rows));
    for (int64_t r = begin; r < end; r += block_rows) {
      int64_t count = std::min(block_rows, end - r);
      softmax_block(x + r * n, y + r * n, count, n, log, scratch.data(), maxes.data());
    }
  });
}

}  // namespace

void CpuBackend::softmax(const TensorView& x, const TensorView& out, bool log) {
  const char* name = log ? "log_softmax" : "softmax";
  EMBER_CHECK(x.is_contiguous() && out.is_contiguous(), "[", name, "] expects contiguous tensors");
  EMBER_CHECK(x.dtype == out.dtype, "[", name, "] input and output dtypes differ");
  const int64_t n = x.ndim() == 0 ? 1 : x.sizes[x.ndim() - 1];
  const int64_t total = x.numel();
  if (total == 0) return;
  dispatch_floating(x.dtype, name,
                    [&]<typename T>() { softmax_rows(x.ptr<const T>(), out.ptr<T>(), total / n, n, log); });
}

}  // namespace ember::cpu
