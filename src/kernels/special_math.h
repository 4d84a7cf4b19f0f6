#pragma once
// Special functions that neither <cmath> nor (for some) CUDA's math library has, written once
// for the host and the device: the inverse error function, digamma and trigamma.
//
// They follow the conventions of PyTorch's CPU kernels (ATen's Math.h): digamma(±0) is ∓inf,
// digamma of a negative integer is NaN, erfinv(±1) is ±inf and erfinv outside [-1, 1] is NaN.
#include <limits>

#include "kernels/kmath.h"

namespace ember::kmath {

namespace special_detail {

inline constexpr double kPi = 3.14159265358979323846;

template <typename C>
EMBER_HD C copysign_inf(bool negative) {
  return negative ? -std::numeric_limits<C>::infinity() : std::numeric_limits<C>::infinity();
}

/// Giles' single-precision approximation of erfinv ("Approximating the erfinv function", GPU
/// Computing Gems, 2011): relative error below 4e-7 on (-1, 1), the start of Newton's method.
EMBER_HD inline double erfinv_estimate(double y) {
  double w = -log((1.0 - y) * (1.0 + y));
  double p;
  if (w < 5.0) {
    w -= 2.5;
    p = 2.81022636e-08;
    p = 3.43273939e-07 + p * w;
    p = -3.5233877e-06 + p * w;
    p = -4.39150654e-06 + p * w;
    p = 0.00021858087 + p * w;
    p = -0.00125372503 + p * w;
    p = -0.00417768164 + p * w;
    p = 0.246640727 + p * w;
    p = 1.50140941 + p * w;
  } else {
    w = sqrt(w) - 3.0;
    p = -0.000200214257;
    p = 0.000100950558 + p * w;
    p = 0.00134934322 + p * w;
    p = -0.00367342844 + p * w;
    p = 0.00573950773 + p * w;
    p = -0.0076224613 + p * w;
    p = 0.00943887047 + p * w;
    p = 1.00167406 + p * w;
    p = 2.83297682 + p * w;
  }
  return p * y;
}

}  // namespace special_detail

/// The inverse of erf on [-1, 1]. The device has its own (erfinvf, erfinv); the host refines
/// Giles' estimate with two Newton steps on erf in double, which carries the 4e-7 start to
/// double precision (each step squares the relative error).
template <typename C>
EMBER_HD C erfinv(C y) {
#if defined(__CUDA_ARCH__)
  if constexpr (sizeof(C) == sizeof(float)) {
    return ::erfinvf(y);
  } else {
    return ::erfinv(y);
  }
#else
  if (!(y >= C(-1) && y <= C(1))) return std::numeric_limits<C>::quiet_NaN();  // NaN too
  if (y == C(1) || y == C(-1)) return special_detail::copysign_inf<C>(y < C(0));
  const double target = static_cast<double>(y);
  double x = special_detail::erfinv_estimate(target);
  constexpr double kTwoOverSqrtPi = 1.12837916709551257390;
  for (int step = 0; step < 2; ++step) x -= (std::erf(x) - target) / (kTwoOverSqrtPi * std::exp(-x * x));
  return static_cast<C>(x);
#endif
}

/// The digamma function psi(x) = d/dx log Gamma(x): the reflection formula for negative x, the
/// recurrence psi(x) = psi(x + 1) - 1/x up to x >= 10, then the asymptotic series
/// log x - 1/(2x) - sum B_2k / (2k x^2k) (Cephes' psi), in double for either type.
template <typename C>
EMBER_HD C digamma(C input) {
  double x = static_cast<double>(input);
  if (x == 0.0) return special_detail::copysign_inf<C>(!(1.0 / x < 0.0));  // psi(+0) = -inf, psi(-0) = +inf
  double result = 0.0;
  if (x < 0.0) {
    if (x == floor(x)) return std::numeric_limits<C>::quiet_NaN();  // the poles
    // psi(x) = psi(1 - x) - pi / tan(pi x).
    result = -special_detail::kPi / tan(special_detail::kPi * x);
    x = 1.0 - x;
  }
  while (x < 10.0) {
    result -= 1.0 / x;
    x += 1.0;
  }
  if (x < 1e17) {
    const double z = 1.0 / (x * x);
    // B_2k / (2k) for k = 7 .. 1, highest power of z first.
    double series = 8.33333333333333333333e-2;
    series = series * z - 2.10927960927960927961e-2;
    series = series * z + 7.57575757575757575758e-3;
    series = series * z - 4.16666666666666666667e-3;
    series = series * z + 3.96825396825396825397e-3;
    series = series * z - 8.33333333333333333333e-3;
    series = series * z + 8.33333333333333333333e-2;
    result -= z * series;
  }
  return static_cast<C>(result + log(x) - 0.5 / x);
}

/// The trigamma function psi'(x), digamma's derivative: the reflection formula
/// psi'(1 - x) + psi'(x) = pi^2 / sin^2(pi x) below 1/2, six steps of psi'(x) = psi'(x + 1) + 1/x^2,
/// then the asymptotic series 1/x + 1/(2x^2) + sum B_2k / x^(2k+1).
template <typename C>
EMBER_HD C trigamma(C input) {
  double x = static_cast<double>(input);
  double sign = 1.0, result = 0.0;
  if (x < 0.5) {
    sign = -1.0;
    const double s = sin(special_detail::kPi * x);
    result -= special_detail::kPi * special_detail::kPi / (s * s);
    x = 1.0 - x;
  }
  for (int i = 0; i < 6; ++i) {
    result += 1.0 / (x * x);
    x += 1.0;
  }
  const double z = 1.0 / (x * x);
  result += (1.0 + 1.0 / (2.0 * x) + z * (1.0 / 6.0 - z * (1.0 / 30.0 - z * (1.0 / 42.0)))) / x;
  return static_cast<C>(sign * result);
}

}  // namespace ember::kmath
