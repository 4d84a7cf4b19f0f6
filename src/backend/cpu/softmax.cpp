// CpuBackend::softmax: softmax and log-softmax along the last dimension of a contiguous tensor.
//
// Each row is done in three vectorised passes: the maximum, exp(x - max) and its sum, then
// the scaling. Subtracting the maximum keeps exp in range; a row that is -inf everywhere (or
// holds a NaN) yields NaN, as in PyTorch. float16 and bfloat16 rows are computed in float.
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

constexpr int kLanes = 16;

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
  int32_t half1 = n_int / 2;
  int32_t half2 = n_int - half1;  // both in [-75, 73]: valid normal exponents
  float scale1 = std::bit_cast<float>(static_cast<uint32_t>(half1 + 127) << 23);
  float scale2 = std::bit_cast<float>(static_cast<uint32_t>(half2 + 127) << 23);
  return p * scale1 * scale2;
}

inline float exp_of(float x) { return exp_float(x); }
inline double exp_of(double x) { return std::exp(x); }

template <typename S>
S row_max(const S* x, int64_t n) {
  S best = x[0];
  int64_t i = 0;
  if (n >= kLanes) {
    S lanes[kLanes];
    for (int j = 0; j < kLanes; ++j) lanes[j] = x[j];
    for (; i + kLanes <= n; i += kLanes) {
      for (int j = 0; j < kLanes; ++j) lanes[j] = x[i + j] > lanes[j] ? x[i + j] : lanes[j];
    }
    for (int j = 0; j < kLanes; ++j) best = lanes[j] > best ? lanes[j] : best;
  }
  for (; i < n; ++i) best = x[i] > best ? x[i] : best;
  return best;
}

// Returns the sum of exp(x - shift), also writing each term to y when kStore.
template <bool kStore, typename S>
S exp_and_sum(const S* x, S* y, int64_t n, S shift) {
  S lanes[kLanes] = {};
  int64_t i = 0;
  for (; i + kLanes <= n; i += kLanes) {
    for (int j = 0; j < kLanes; ++j) {
      S e = exp_of(x[i + j] - shift);
      if constexpr (kStore) y[i + j] = e;
      lanes[j] += e;
    }
  }
  for (int j = 0; i + j < n; ++j) {
    S e = exp_of(x[i + j] - shift);
    if constexpr (kStore) y[i + j] = e;
    lanes[j] += e;
  }
  for (int width = kLanes / 2; width > 0; width /= 2) {
    for (int j = 0; j < width; ++j) lanes[j] += lanes[j + width];
  }
  return lanes[0];
}

// One row, in S (float or double); x and y may alias.
template <typename S>
void softmax_row(const S* x, S* y, int64_t n, bool log) {
  const S max = row_max(x, n);
  if (log) {
    const S log_sum = std::log(exp_and_sum<false>(x, y, n, max));
    for (int64_t i = 0; i < n; ++i) y[i] = x[i] - max - log_sum;
  } else {
    const S sum = exp_and_sum<true>(x, y, n, max);
    for (int64_t i = 0; i < n; ++i) y[i] = y[i] / sum;
  }
}

template <typename T>
void softmax_rows(const T* x, T* y, int64_t rows, int64_t n, bool log) {
  parallel_for(rows, std::max<int64_t>(1, kGrainSize / n), [&](int64_t begin, int64_t end) {
    if constexpr (std::is_same_v<T, float> || std::is_same_v<T, double>) {
      for (int64_t r = begin; r < end; ++r) softmax_row(x + r * n, y + r * n, n, log);
    } else {
      std::vector<float> row(n);  // 16-bit rows are widened, computed in float and rounded once
      for (int64_t r = begin; r < end; ++r) {
        for (int64_t i = 0; i < n; ++i) row[i] = static_cast<float>(x[r * n + i]);
        softmax_row(row.data(), row.data(), n, log);
        for (int64_t i = 0; i < n; ++i) y[r * n + i] = T(row[i]);
      }
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
  dispatch_floating(x.dtype, name, [&]<typename T>() {
    softmax_rows(x.ptr<const T>(), out.ptr<T>(), total / n, n, log);
  });
}

}  // namespace ember::cpu
