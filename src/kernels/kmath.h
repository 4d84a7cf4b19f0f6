#pragma once
// Scalar math for kernels that are compiled both by the host compiler and by nvcc. Each function
// has a float and a double overload; on the host it calls <cmath>, in CUDA device code
// (__CUDA_ARCH__) the CUDA math library (expf, erff, ...), which is accurate to a few ulp. The
// fast `__expf`-style intrinsics are not used: they would make CUDA results drift from the CPU
// oracle far beyond the per-function tolerances the tests allow.
#include <cmath>

#include "ember/half.h"  // EMBER_HD

namespace ember::kmath {

#if defined(__CUDA_ARCH__)
#define EMBER_KMATH_UNARY(name, device_f, device_d, host_fn)    \
  EMBER_HD inline float name(float x) { return ::device_f(x); } \
  EMBER_HD inline double name(double x) { return ::device_d(x); }
#define EMBER_KMATH_BINARY(name, device_f, device_d, host_fn)               \
  EMBER_HD inline float name(float x, float y) { return ::device_f(x, y); } \
  EMBER_HD inline double name(double x, double y) { return ::device_d(x, y); }
#else
#define EMBER_KMATH_UNARY(name, device_f, device_d, host_fn)      \
  EMBER_HD inline float name(float x) { return std::host_fn(x); } \
  EMBER_HD inline double name(double x) { return std::host_fn(x); }
#define EMBER_KMATH_BINARY(name, device_f, device_d, host_fn)                 \
  EMBER_HD inline float name(float x, float y) { return std::host_fn(x, y); } \
  EMBER_HD inline double name(double x, double y) { return std::host_fn(x, y); }
#endif

EMBER_KMATH_UNARY(exp, expf, exp, exp)
EMBER_KMATH_UNARY(expm1, expm1f, expm1, expm1)
EMBER_KMATH_UNARY(log, logf, log, log)
EMBER_KMATH_UNARY(log1p, log1pf, log1p, log1p)
EMBER_KMATH_UNARY(sqrt, sqrtf, sqrt, sqrt)
EMBER_KMATH_UNARY(tanh, tanhf, tanh, tanh)
EMBER_KMATH_UNARY(erf, erff, erf, erf)
EMBER_KMATH_UNARY(erfc, erfcf, erfc, erfc)
EMBER_KMATH_UNARY(sin, sinf, sin, sin)
EMBER_KMATH_UNARY(cos, cosf, cos, cos)
EMBER_KMATH_UNARY(abs, fabsf, fabs, fabs)
EMBER_KMATH_UNARY(trunc, truncf, trunc, trunc)
EMBER_KMATH_UNARY(floor, floorf, floor, floor)
EMBER_KMATH_UNARY(ceil, ceilf, ceil, ceil)
EMBER_KMATH_UNARY(nearbyint, nearbyintf, nearbyint, nearbyint)  // half to even, as torch.round
EMBER_KMATH_UNARY(log2, log2f, log2, log2)
EMBER_KMATH_UNARY(log10, log10f, log10, log10)
EMBER_KMATH_UNARY(exp2, exp2f, exp2, exp2)
EMBER_KMATH_UNARY(tan, tanf, tan, tan)
EMBER_KMATH_UNARY(asin, asinf, asin, asin)
EMBER_KMATH_UNARY(acos, acosf, acos, acos)
EMBER_KMATH_UNARY(atan, atanf, atan, atan)
EMBER_KMATH_UNARY(sinh, sinhf, sinh, sinh)
EMBER_KMATH_UNARY(cosh, coshf, cosh, cosh)
EMBER_KMATH_UNARY(asinh, asinhf, asinh, asinh)
EMBER_KMATH_UNARY(acosh, acoshf, acosh, acosh)
EMBER_KMATH_UNARY(atanh, atanhf, atanh, atanh)
EMBER_KMATH_BINARY(pow, powf, pow, pow)
EMBER_KMATH_BINARY(fmod, fmodf, fmod, fmod)
EMBER_KMATH_BINARY(atan2, atan2f, atan2, atan2)
EMBER_KMATH_BINARY(hypot, hypotf, hypot, hypot)

#undef EMBER_KMATH_UNARY
#undef EMBER_KMATH_BINARY

/// log(|Gamma(x)|). On the host the reentrant lgamma_r: std::lgamma writes the global `signgam`,
/// a data race when threads evaluate it at once.
EMBER_HD inline float lgamma(float x) {
#if defined(__CUDA_ARCH__)
  return ::lgammaf(x);
#else
  int sign = 0;
  return ::lgammaf_r(x, &sign);
#endif
}
EMBER_HD inline double lgamma(double x) {
#if defined(__CUDA_ARCH__)
  return ::lgamma(x);
#else
  int sign = 0;
  return ::lgamma_r(x, &sign);
#endif
}

/// 1 / sqrt(x). The device has a dedicated (correctly rounded to ~1 ulp) instruction.
EMBER_HD inline float rsqrt(float x) {
#if defined(__CUDA_ARCH__)
  return ::rsqrtf(x);
#else
  return 1.0f / std::sqrt(x);
#endif
}
EMBER_HD inline double rsqrt(double x) {
#if defined(__CUDA_ARCH__)
  return ::rsqrt(x);
#else
  return 1.0 / std::sqrt(x);
#endif
}

/// x * y + z. Fused (one rounding) where the hardware has FMA, as PyTorch's vectorised CPU
/// loops and CUDA are; without FMA on the host a libm call per element would be far slower
/// than the one-ulp difference is worth, so it falls back to the unfused form there.
EMBER_HD inline float fma(float x, float y, float z) {
#if defined(__CUDA_ARCH__)
  return ::fmaf(x, y, z);
#elif defined(__FMA__)
  return std::fma(x, y, z);
#else
  return x * y + z;
#endif
}
EMBER_HD inline double fma(double x, double y, double z) {
#if defined(__CUDA_ARCH__)
  return ::fma(x, y, z);
#elif defined(__FMA__)
  return std::fma(x, y, z);
#else
  return x * y + z;
#endif
}

/// NaN test written as a self-comparison: it works for any arithmetic type (always false for
/// integers), in device code, and the compiler turns it into a vector compare.
template <typename T>
EMBER_HD constexpr bool isnan(T x) {
  return x != x;  // NOLINT(misc-redundant-expression): true only for NaN
}

/// max(a, b) that returns NaN when either operand is NaN (torch.maximum), unlike std::max and
/// fmax, which drop it. On ties it returns b, as x86 maxps does.
template <typename T>
EMBER_HD constexpr T maximum(T a, T b) {
  return (a > b || kmath::isnan(a)) ? a : b;
}
/// min(a, b) that returns NaN when either operand is NaN (torch.minimum).
template <typename T>
EMBER_HD constexpr T minimum(T a, T b) {
  return (a < b || kmath::isnan(a)) ? a : b;
}

}  // namespace ember::kmath
