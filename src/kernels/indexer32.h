#pragma once
// 32-bit index math for the GPU element-wise kernels (PyTorch's can_use_32bit_indexing and
// IntDivider, written anew). A GPU divides 64-bit integers in a long software routine and 32-bit
// ones in a few more instructions than a multiply; dividing by a dimension's size, which is
// fixed for a whole launch, takes only a multiply-high, an add and a shift with a precomputed
// magic number (Granlund and Montgomery, "Division by invariant integers using multiplication",
// 1994). So when every element and every operand's offset fits in int32, a thread maps its
// linear index to offsets with StridedIndexer32 instead of StridedIndexer's 64-bit divisions.
//
// Plain C++ that nvcc also compiles; the parts a GPU thread runs are EMBER_HD and run on the host
// in the tests.
#include <cstdint>

#include "ember/half.h"  // EMBER_HD
#include "kernels/indexer.h"

namespace ember::kernels {

/// The largest dividend, element count and |offset| of the 32-bit path.
inline constexpr int64_t kMaxIndex32 = 2147483647;

/// Quotient and remainder of one division.
struct DivMod32 {
  uint32_t quotient;
  uint32_t remainder;
};

/// Division of n in [0, 2^31) by a divisor d in [1, 2^31] fixed at construction:
/// n / d == (umulhi(n, m) + n) >> s with s = ceil(log2 d) and m = floor(2^32 (2^s - d) / d) + 1.
/// m < 2^32 for every such d, and umulhi(n, m) <= n, so the sum stays below 2^32 because n < 2^31.
struct IntDivider32 {
  uint32_t divisor = 1;
  uint32_t multiplier = 1;
  uint32_t shift = 0;

  IntDivider32() = default;
  /// d must be in [1, 2^31] (a dimension's size on the 32-bit path).
  explicit IntDivider32(uint32_t d) : divisor(d) {
    while ((uint64_t{1} << shift) < d) ++shift;
    multiplier = static_cast<uint32_t>(((uint64_t{1} << 32) * ((uint64_t{1} << shift) - d)) / d + 1);
  }

  EMBER_HD uint32_t div(uint32_t n) const {
#if defined(__CUDA_ARCH__)
    const uint32_t high = __umulhi(n, multiplier);
#else
    const uint32_t high = static_cast<uint32_t>((uint64_t{n} * multiplier) >> 32);
#endif
    return (high + n) >> shift;
  }

  EMBER_HD DivMod32 divmod(uint32_t n) const {
    const uint32_t q = div(n);
    return {q, n - q * divisor};
  }
};

/// StridedIndexer's simplified shape with 32-bit sizes (as dividers), strides and offsets.
template <int N>
struct StridedIndexer32 {
  struct Offsets {
    int32_t v[N];
    EMBER_HD int32_t operator[](int k) const { return v[k]; }
  };

  int ndim = 1;
  IntDivider32 sizes[kMaxDims];  // sizes[0] is never divided by; kept for symmetry
  int32_t strides[kMaxDims][N];  // [dim][operand]: a dimension's strides are read together

  /// Whether `ix` can be walked in 32 bits: at most `limit` (kMaxIndex32) elements, and for
  /// every operand the largest |offset| (the sum over dims of (size - 1) * |stride|) at most
  /// `limit`, so that every partial sum of an offset fits in int32 too. (Tests pass a small
  /// limit to split small shapes.)
  template <int MaxDims>
  static bool fits(const StridedIndexer<N, MaxDims>& ix, int64_t limit = kMaxIndex32) {
    if (ix.ndim > kMaxDims || limit > kMaxIndex32) return false;
    int64_t n = 1;
    for (int d = 0; d < ix.ndim; ++d) {
      if (ix.sizes[d] > limit) return false;
      n *= ix.sizes[d];
      if (n > limit) return false;
    }
    for (int k = 0; k < N; ++k) {
      int64_t reach = 0;
      for (int d = 0; d < ix.ndim; ++d) {
        const int64_t span = ix.sizes[d] - 1;
        const int64_t stride = ix.strides[k][d] < 0 ? -ix.strides[k][d] : ix.strides[k][d];
        if (span > 0 && stride > limit / span) return false;
        reach += span * stride;  // each term <= limit: no overflow over kMaxDims terms
        if (reach > limit) return false;
      }
    }
    return true;
  }

  StridedIndexer32() = default;
  /// `ix` must satisfy fits(ix).
  template <int MaxDims>
  explicit StridedIndexer32(const StridedIndexer<N, MaxDims>& ix) : ndim(ix.ndim) {
    for (int d = 0; d < ndim; ++d) {
      sizes[d] = IntDivider32(static_cast<uint32_t>(ix.sizes[d] > 0 ? ix.sizes[d] : 1));
      for (int k = 0; k < N; ++k) strides[d][k] = static_cast<int32_t>(ix.strides[k][d]);
    }
  }

  /// The element offset of each operand for the element at `linear` (< numel) in row-major order
  /// over the simplified shape, as StridedIndexer::offsets gives it.
  EMBER_HD Offsets offsets(uint32_t linear) const {
    Offsets o;
    for (int k = 0; k < N; ++k) o.v[k] = 0;
    for (int d = ndim - 1; d > 0; --d) {
      const DivMod32 qr = sizes[d].divmod(linear);
      linear = qr.quotient;
      for (int k = 0; k < N; ++k) o.v[k] += static_cast<int32_t>(qr.remainder) * strides[d][k];
    }
    for (int k = 0; k < N; ++k) o.v[k] += static_cast<int32_t>(linear) * strides[0][k];
    return o;
  }
};

}  // namespace ember::kernels
