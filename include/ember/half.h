#pragma once
/// 16-bit floating-point storage types. They are plain structs with exact conversions to and
/// from float, usable unchanged in CUDA kernels (EMBER_HD), so the math is written once.
#include <cstdint>
#include <cstring>

#if defined(__CUDACC__) || defined(__HIPCC__)
#define EMBER_HD __host__ __device__
#else
#define EMBER_HD
#endif

namespace ember {

namespace detail {
EMBER_HD inline uint32_t float_bits(float f) {
  uint32_t u;
  std::memcpy(&u, &f, sizeof u);
  return u;
}
EMBER_HD inline float bits_float(uint32_t u) {
  float f;
  std::memcpy(&f, &u, sizeof f);
  return f;
}
}  // namespace detail

/// IEEE 754 binary16.
struct Half {
  uint16_t bits = 0;
  Half() = default;
  EMBER_HD Half(float f) : bits(from_float(f)) {}  // NOLINT: implicit like a builtin float
  EMBER_HD operator float() const { return to_float(bits); }  // NOLINT

  EMBER_HD static Half from_bits(uint16_t b) {
    Half h;
    h.bits = b;
    return h;
  }
  // Round to nearest even, with subnormals, infinities and NaN handled exactly.
  EMBER_HD static uint16_t from_float(float f) {
    uint32_t x = detail::float_bits(f);
    uint32_t sign = (x >> 16) & 0x8000u;
    uint32_t abs = x & 0x7fffffffu;
    if (abs >= 0x7f800000u) return static_cast<uint16_t>(sign | (abs > 0x7f800000u ? 0x7e00u : 0x7c00u));
    if (abs >= 0x47800000u) return static_cast<uint16_t>(sign | 0x7c00u);  // 2^16 and up: inf
    if (abs < 0x38800000u) {                                               // subnormal or zero in half
      // Add 0.5 (as float) so the FPU does the rounding into the subnormal grid.
      float r = detail::bits_float(abs) + 0.5f;
      return static_cast<uint16_t>(sign | (detail::float_bits(r) - 0x3f000000u));
    }
    uint32_t mant_odd = (abs >> 13) & 1u;
    abs += 0xc8000fffu + mant_odd;  // rebias exponent (-112 << 23) and round half to even
    return static_cast<uint16_t>(sign | (abs >> 13));
  }
  EMBER_HD static float to_float(uint16_t h) {
    uint32_t sign = static_cast<uint32_t>(h & 0x8000u) << 16;
    uint32_t exp = (h >> 10) & 0x1fu;
    uint32_t mant = h & 0x3ffu;
    if (exp == 0x1f) return detail::bits_float(sign | 0x7f800000u | (mant << 13));
    if (exp == 0) {
      // Subnormal: value = mant * 2^-24, exact in float.
      float v = static_cast<float>(mant) * 5.9604644775390625e-08f;
      return sign ? -v : v;
    }
    return detail::bits_float(sign | ((exp + 112u) << 23) | (mant << 13));
  }
};

/// bfloat16: the top half of a float32, rounded to nearest even.
struct BFloat16 {
  uint16_t bits = 0;
  BFloat16() = default;
  EMBER_HD BFloat16(float f) : bits(from_float(f)) {}  // NOLINT
  EMBER_HD operator float() const { return detail::bits_float(static_cast<uint32_t>(bits) << 16); }  // NOLINT

  EMBER_HD static BFloat16 from_bits(uint16_t b) {
    BFloat16 v;
    v.bits = b;
    return v;
  }
  EMBER_HD static uint16_t from_float(float f) {
    uint32_t x = detail::float_bits(f);
    if ((x & 0x7fffffffu) > 0x7f800000u) return static_cast<uint16_t>((x >> 16) | 0x40u);  // quiet NaN
    x += 0x7fffu + ((x >> 16) & 1u);
    return static_cast<uint16_t>(x >> 16);
  }
};

}  // namespace ember
