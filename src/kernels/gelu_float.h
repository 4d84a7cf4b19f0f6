#pragma once
// The exact GELU, x Phi(x), and its derivative, Phi(x) + x phi(x), for float on the host:
// branch-free polynomial and rational arithmetic that the compiler vectorises like the rest of a
// kernel's loop (16 lanes with AVX-512). kernels::Gelu and kernels::GeluBackward use it for float
// (and so for Half and BFloat16, computed in float) outside CUDA device code. Phi is the
// standard normal distribution function, phi its density.
//
// Why it exists: those functors compute Phi(x) as erfc(-x/sqrt2)/2, and on the CPU the float
// erfc is glibc's libmvec erfcf (backend/cpu/vector_libm.h), whose 16-lane version runs at
// 0.97 G elements/s: the exact GELU took twice PyTorch's time. This runs at 1.95 G elements/s
// (machine D, docs/PERFORMANCE.md section 12). Working from x itself also removes the error of
// erfc(-x/sqrt2) in the negative tail, where erfc magnifies the rounding of its argument by 2z^2
// (the old kernel: 23 ulp at x = -4.9, up to 196 ulp before the results leave the normal range).
//
// Accuracy, measured over every float x in [-16.5, 16.5] against the exact value (double; long
// double near the derivative's root) in units of the last place of the float nearest it (2^-149
// below the normal range): GELU 3.9 ulp, its derivative 4.1 ulp, Phi 3.3 ulp; without FMA
// (the #else branch below, and kmath::fma unfused) 4.7, 4.8 and 4.4 ulp. Beyond that range the
// results are exact (x or -0, 1 or 0). NaN and the infinities give what x/2 erfc(-x/sqrt2) and
// PyTorch's derivative formula give: GELU NaN, +inf and NaN (at -inf), the derivative NaN.
//
// With a = |x|:
//   Phi(-a) = exp(-a^2/2) R(a),  R(a) = Phi(-a) exp(a^2/2) = 1 / (sqrt(2 pi) (a + g(a))),
// where a + g(a) is the reciprocal of the Mills ratio: g is smooth, sqrt(2/pi) at 0 and ~1/a at
// infinity. R is computed as N / (a (sqrt(2 pi) N + P1) + 2 N(0)), where sqrt(2 pi) g = P/N
// = (a P1 + 2 N(0)) / N is a [4/4] rational function fitted for this file (minimax relative
// error of R over [0, 14.6]; the coefficients rounded to float one at a time, the others
// refitted each time; none taken from elsewhere). Written this way, the rounding errors of N and
// P1 shrink as a grows instead of accumulating. Then Phi(x) = Phi(-a) for x <= 0 and 1 - Phi(-a)
// otherwise, which never cancels.
//
// The derivative at x = -a is Phi(-a) - a phi(a) = -phi(a) (a - a0) T(a), with a0 = 0.7518 its
// root, taken to 48 bits so that the result keeps its relative precision next to the root, and
// T smooth: T = 1/sqrt(2 pi) + P/Q, another [4/4] function fitted the same way. At x = a the
// derivative is 1 minus that.
//
// exp(-a^2/2) = 2^n (1 + s p(s)) with a^2 = h + l split exactly, n = round(-h / (2 ln 2)),
// s = (h + 2n ln 2) + l, the first sum exact, and 1 + s p(s) a fitted degree-6 polynomial for
// exp(-s/2), |s| <= ln 2. The 2^n goes into the result's exponent field, offset by 64: results
// stay scaled by 2^64 until the last multiplication, so that those below float's normal range
// (x < -13.2) are rounded once, there.
#include <bit>
#include <cmath>
#include <cstdint>

#include "kernels/kmath.h"

namespace ember::kmath {
namespace gelu_detail {

/// Beyond this |x| the GELU is -0 or x and its derivative 0 or 1 in float; the formulas below
/// are fitted up to here, and beyond it their results (meaningless there) are replaced.
constexpr float kCut = 14.6f;
/// The derivative's root, a0 = kA0Hi + kA0Lo.
constexpr float kA0Hi = 0x1.80ead2p-1f;
constexpr float kA0Lo = -0x1.a03fd4p-27f;

/// exp(-a^2/2) = (1 + s p) 2^n; `exponent` is (n + 64) << 23.
struct ExpHalfSquare {
  float s, p;
  uint32_t exponent;
};

inline ExpHalfSquare exp_half_square(float a) {
  // t = round(-(a^2) / (2 ln 2)) + 64 + 1.5 * 2^23: the rounding to an integer, and n + 64 in
  // t's low mantissa bits.
  constexpr float kShift = 0x1.8p23f + 64.0f;
  constexpr float kMinusHalfLog2e = -0.721347511f;
#if defined(__FMA__)
  // a^2 = h + l exactly; h + 2 n ln 2 is exact with the 24-bit 2 ln 2 (an fma, and |s| < 1).
  const float h = a * a;
  const float l = kmath::fma(a, a, -h);
  const float t = kmath::fma(h, kMinusHalfLog2e, kShift);
  const float n = t - kShift;
  const float s = kmath::fma(n, 0x1.62e430p+0f, h) + kmath::fma(n, -3.80930842e-09f, l);  // 2 ln 2 in two parts
#else
  // Without FMA, l by Dekker's product: a = ah + al, ah a's first 12 bits, so that every
  // product and difference below is exact; and 2 ln 2 with 16 bits, so that n times it is.
  const float ah = std::bit_cast<float>(std::bit_cast<uint32_t>(a) & 0xfffff000u);
  const float al = a - ah;
  const float h = a * a;
  const float l = ((ah * ah - h) + (ah + ah) * al) + al * al;
  const float t = h * kMinusHalfLog2e + kShift;
  const float n = t - kShift;
  const float s = (n * 0x1.62e400p+0f + h) + (n * 2.85721353e-06f + l);  // 2 ln 2 in two parts
#endif
  // (exp(-s/2) - 1) / s, |s| <= ln 2.
  float p = 2.1596059e-05f;
  p = kmath::fma(p, s, -0.000261520705f);
  p = kmath::fma(p, s, 0.00260426593f);
  p = kmath::fma(p, s, -0.0208331514f);
  p = kmath::fma(p, s, 0.124999985f);
  p = kmath::fma(p, s, -0.5f);
  return {s, p, std::bit_cast<uint32_t>(t) << 23};
}

/// m exp(-a^2/2) 2^64, for m in the normal range: m (1 + s p) with one rounding, then the
/// exponent field moved by n + 64 (integer arithmetic; kCut keeps the result normal).
inline float times_exp_half_square(float m, const ExpHalfSquare& e) {
  return std::bit_cast<float>(std::bit_cast<uint32_t>(kmath::fma(m * e.s, e.p, m)) + e.exponent);
}

/// R(a) = Phi(-a) exp(a^2/2), 0 <= a <= kCut: N / (a (sqrt(2 pi) N + P1) + 2 N(0)).
inline float tail_ratio(float a) {
  float p = 1.94758809e-06f;
  p = kmath::fma(p, a, 0.0192551818f);
  p = kmath::fma(p, a, 0.183509305f);
  p = kmath::fma(p, a, 0.732793987f);
  float n = 0.0077170874f;
  n = kmath::fma(n, a, 0.0725270957f);
  n = kmath::fma(n, a, 0.315266579f);
  n = kmath::fma(n, a, 0.73074007f);
  n = kmath::fma(n, a, 0.8f);
  return n / kmath::fma(a, kmath::fma(2.50662827f, n, p), 1.6f);
}

/// T(a) = (Phi(-a) - a phi(a)) / (phi(a) (a0 - a)), 0 <= a <= kCut: T(inf) + P/Q, T(inf) = 1/sqrt(2 pi).
inline float derivative_ratio(float a) {
  float p = 4.85453633e-08f;
  p = kmath::fma(p, a, 0.00626251241f);
  p = kmath::fma(p, a, 0.0491776839f);
  p = kmath::fma(p, a, 0.156383842f);
  p = kmath::fma(p, a, 0.212908551f);
  float q = 0.0208882857f;
  q = kmath::fma(q, a, 0.175892651f);
  q = kmath::fma(q, a, 0.634035826f);
  q = kmath::fma(q, a, 1.11862588f);
  q = kmath::fma(q, a, 0.8f);
  return kmath::fma(0.398942292f, q, p) / q;
}

}  // namespace gelu_detail

/// x Phi(x).
inline float gelu_float(float x) {
  const float a = std::fabs(x);
  // Phi(-a) 2^64, then Phi(x) 2^64.
  float w = gelu_detail::times_exp_half_square(gelu_detail::tail_ratio(a), gelu_detail::exp_half_square(a));
  w = a <= gelu_detail::kCut ? w : 0.0f;
  const float cdf = x <= 0.0f ? w : 0x1p64f - w;
  // x cdf overflows for x > 2^63, where the GELU is x.
  return x <= 0x1p62f ? (x * cdf) * 0x1p-64f : x;
}

/// grad (Phi(x) + x phi(x)).
inline float gelu_backward_float(float grad, float x) {
  const float a = std::fabs(x);
  const float a_minus_a0 = (a - gelu_detail::kA0Hi) - gelu_detail::kA0Lo;
  // -(Phi(-a) - a phi(a)) 2^64, then the derivative at x times 2^64. Beyond kCut it is 0 and 1,
  // except at the infinities: NaN, as PyTorch's formula gives.
  float w = gelu_detail::times_exp_half_square(a_minus_a0 * gelu_detail::derivative_ratio(a),
                                               gelu_detail::exp_half_square(a));
  w = a <= gelu_detail::kCut ? w : x - x;
  const float derivative = x <= 0.0f ? -w : 0x1p64f + w;
  // Scaled back by 2^-64 after the product, or, where that product could overflow, before it,
  // through grad (exactly: |grad| > 2^62).
  const bool huge = std::fabs(grad) > 0x1p62f;
  return ((grad * (huge ? 0x1p-64f : 1.0f)) * derivative) * (huge ? 1.0f : 0x1p-64f);
}

}  // namespace ember::kmath
