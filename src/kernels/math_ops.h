#pragma once
// The scalar math of the rounding, sign, logarithm and exponential variants, trigonometric and
// hyperbolic, error-function and gamma-family unary ops, and of remainder, fmod, atan2 and hypot:
// entries of EMBER_UNARY_OPS / EMBER_ARITH_BINARY_OPS, in the conventions of elementwise_ops.h
// (which includes this file after its own functors; the CPU loops and CUDA kernels call both).
#include <type_traits>

#include "kernels/kmath.h"
#include "kernels/special_math.h"

namespace ember::kernels {

// ---- rounding: integers are already whole, so these copy them ----------------------------------

#define EMBER_ROUNDING_FUNCTOR(Name, fn)              \
  struct Name {                                       \
    static constexpr Domain domain = Domain::Numeric; \
    template <typename C>                             \
    EMBER_HD C operator()(C x) const {                \
      if constexpr (std::is_integral_v<C>) {          \
        return x;                                     \
      } else {                                        \
        return kmath::fn(x);                          \
      }                                               \
    }                                                 \
  };
EMBER_ROUNDING_FUNCTOR(Floor, floor)
EMBER_ROUNDING_FUNCTOR(Ceil, ceil)
EMBER_ROUNDING_FUNCTOR(Round, nearbyint)  // halves to even: round(2.5) = 2, as torch.round
EMBER_ROUNDING_FUNCTOR(Trunc, trunc)
#undef EMBER_ROUNDING_FUNCTOR

/// x - trunc(x), keeping x's sign (frac(-1.5) = -0.5). Floating types only, as in PyTorch.
struct Frac {
  static constexpr Domain domain = Domain::Floating;
  template <typename C>
  EMBER_HD C operator()(C x) const {
    return x - kmath::trunc(x);
  }
};

/// -1, 0 or 1; bool stays bool. sign(NaN) is 0 here as in PyTorch's CPU loop: both comparisons
/// with NaN are false.
struct Sign {
  static constexpr Domain domain = Domain::Any;
  template <typename C>
  EMBER_HD constexpr C operator()(C x) const {
    if constexpr (std::is_same_v<C, bool> || std::is_unsigned_v<C>) {
      return static_cast<C>(x != C(0));
    } else {
      return static_cast<C>(static_cast<int>(C(0) < x) - static_cast<int>(x < C(0)));
    }
  }
};

// ---- floating-point functions (the front end promotes integers to the default float type) -----

#define EMBER_FLOATING_FUNCTOR(Name, expr)             \
  struct Name {                                        \
    static constexpr Domain domain = Domain::Floating; \
    template <typename C>                              \
    EMBER_HD C operator()(C x) const {                 \
      return expr;                                     \
    }                                                  \
  };
EMBER_FLOATING_FUNCTOR(Log1p, kmath::log1p(x))
EMBER_FLOATING_FUNCTOR(Expm1, kmath::expm1(x))
EMBER_FLOATING_FUNCTOR(Log2, kmath::log2(x))
EMBER_FLOATING_FUNCTOR(Log10, kmath::log10(x))
EMBER_FLOATING_FUNCTOR(Exp2, kmath::exp2(x))
EMBER_FLOATING_FUNCTOR(Reciprocal, C(1) / x)
EMBER_FLOATING_FUNCTOR(Tan, kmath::tan(x))
EMBER_FLOATING_FUNCTOR(Asin, kmath::asin(x))
EMBER_FLOATING_FUNCTOR(Acos, kmath::acos(x))
EMBER_FLOATING_FUNCTOR(Atan, kmath::atan(x))
EMBER_FLOATING_FUNCTOR(Sinh, kmath::sinh(x))
EMBER_FLOATING_FUNCTOR(Cosh, kmath::cosh(x))
EMBER_FLOATING_FUNCTOR(Asinh, kmath::asinh(x))
EMBER_FLOATING_FUNCTOR(Acosh, kmath::acosh(x))
EMBER_FLOATING_FUNCTOR(Atanh, kmath::atanh(x))
EMBER_FLOATING_FUNCTOR(Erfc, kmath::erfc(x))
EMBER_FLOATING_FUNCTOR(Erfinv, kmath::erfinv(x))
EMBER_FLOATING_FUNCTOR(Lgamma, kmath::lgamma(x))
EMBER_FLOATING_FUNCTOR(Digamma, kmath::digamma(x))
EMBER_FLOATING_FUNCTOR(Trigamma, kmath::trigamma(x))  // polygamma(1, x): digamma's derivative
#undef EMBER_FLOATING_FUNCTOR

// ---- binary --------------------------------------------------------------------------------

/// Python's modulus (torch.remainder): the result has the divisor's sign. Integer division by
/// zero gives 0 here; the front end raises PyTorch's ZeroDivisionError on the CPU first.
struct Remainder {
  static constexpr Domain domain = Domain::Numeric;
  template <typename C>
  EMBER_HD C operator()(C a, C b) const {
    if constexpr (std::is_integral_v<C>) {
      if (b == 0) return C(0);
      if constexpr (std::is_signed_v<C>) {
        if (b == C(-1)) return C(0);  // MIN % -1 overflows in C++
      }
      C r = static_cast<C>(a % b);
      if constexpr (std::is_signed_v<C>) {
        if (r != 0 && ((r < 0) != (b < 0))) r = static_cast<C>(r + b);
      }
      return r;
    } else {
      C r = kmath::fmod(a, b);
      if (r != C(0) && ((b < C(0)) != (r < C(0)))) r += b;
      return r;
    }
  }
};

/// C's modulus (torch.fmod): the result has the dividend's sign.
struct Fmod {
  static constexpr Domain domain = Domain::Numeric;
  template <typename C>
  EMBER_HD C operator()(C a, C b) const {
    if constexpr (std::is_integral_v<C>) {
      if (b == 0) return C(0);
      if constexpr (std::is_signed_v<C>) {
        if (b == C(-1)) return C(0);
      }
      return static_cast<C>(a % b);
    } else {
      return kmath::fmod(a, b);
    }
  }
};

struct Atan2 {
  static constexpr Domain domain = Domain::Floating;
  template <typename C>
  EMBER_HD C operator()(C a, C b) const {
    return kmath::atan2(a, b);
  }
};

struct Hypot {
  static constexpr Domain domain = Domain::Floating;
  template <typename C>
  EMBER_HD C operator()(C a, C b) const {
    return kmath::hypot(a, b);
  }
};

}  // namespace ember::kernels
