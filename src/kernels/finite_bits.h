#pragma once
// Finiteness read from a floating-point value's bits, for the fused all_finite check on the CPU
// and on CUDA: a value is NaN or infinite exactly when its exponent bits are all ones. The
// integer test treats every NaN payload alike, and GCC vectorises an OR of such tests where it
// will not vectorise a loop that classifies floats and leaves early.
#include <cstdint>

#include "ember/dtype.h"
#include "ember/half.h"  // EMBER_HD

namespace ember::kernels {

/// A floating dtype's element size and the exponent bits of an element read as an unsigned
/// integer of that size; {0, 0} for the other dtypes, whose values are always finite.
struct ExponentBits {
  int bytes = 0;
  uint64_t mask = 0;
};

inline constexpr ExponentBits exponent_bits(Dtype dtype) {
  switch (dtype) {
    case Dtype::Float16:
      return {2, 0x7C00u};
    case Dtype::BFloat16:
      return {2, 0x7F80u};
    case Dtype::Float32:
      return {4, 0x7F800000u};
    case Dtype::Float64:
      return {8, 0x7FF0000000000000ull};
    default:
      return {};
  }
}

/// 1 when `bits` (an element's bits) encode NaN or an infinity under `mask`, else 0.
template <typename Bits>
EMBER_HD inline Bits nonfinite_bit(Bits bits, Bits mask) {
  return static_cast<Bits>((bits & mask) == mask);
}

}  // namespace ember::kernels
