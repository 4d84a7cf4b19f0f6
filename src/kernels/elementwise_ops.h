#pragma once
// The scalar math of every element-wise op, written once for the CPU loops and the CUDA kernels.
//
// One functor per entry of EMBER_UNARY_OPS / EMBER_BINARY_OPS, with the same name. Each has a
// call operator templated on the computation type C: the CPU backend calls it with
// compute_t<T> (float for Half/BFloat16, T otherwise) and the CUDA backend will do the same.
// Arithmetic functors return C; comparison and logical functors return bool.
//
// Each functor also states its `domain`: which element types the op is defined on. An op
// outside its domain is never given to a kernel: the front end promotes first (exp of an int
// tensor is computed in the default float type, true division always is) or raises PyTorch's
// error (negating a bool tensor). Backends use `accepts_v` to avoid instantiating, and to
// reject, combinations that cannot occur.
//
// Integer arithmetic wraps like PyTorch's (two's complement) and never has undefined
// behaviour: int32/int64 sums and products are formed in the unsigned type.
#include <cstdint>
#include <type_traits>

#include "ember/half.h"
#include "kernels/gelu_float.h"
#include "kernels/kmath.h"

namespace ember::kernels {

/// True for the four floating element types, including the 16-bit storage structs.
template <typename T>
inline constexpr bool is_floating_v =
    std::is_floating_point_v<T> || std::is_same_v<T, Half> || std::is_same_v<T, BFloat16>;

/// The element types an op is defined on.
enum class Domain : uint8_t {
  Any,       // bool, integers and floating types
  Numeric,   // integers and floating types, not bool
  Floating,  // floating types only; the front end promotes integers and bool first
  Integral,  // bool and integers (the bitwise ops)
  Integer,   // integers only (the shifts)
};

/// Whether op `Op` may be run on elements of type T (a storage type: Half counts as floating).
template <typename Op, typename T>
inline constexpr bool accepts_v = Op::domain == Domain::Any ||
                                  (Op::domain == Domain::Numeric && !std::is_same_v<T, bool>) ||
                                  (Op::domain == Domain::Floating && is_floating_v<T>) ||
                                  (Op::domain == Domain::Integral && !is_floating_v<T>) ||
                                  (Op::domain == Domain::Integer && !is_floating_v<T> && !std::is_same_v<T, bool>);

namespace detail {

/// Integer types whose arithmetic C++ would do in int (bool, 8- and 16-bit) already wrap on the
/// conversion back; wider signed types go through their unsigned type to wrap without UB.
template <typename T>
inline constexpr bool needs_unsigned_wrap_v = std::is_integral_v<T> && sizeof(T) >= sizeof(int);

template <typename T>
EMBER_HD constexpr T wrapping_add(T a, T b) {
  if constexpr (needs_unsigned_wrap_v<T>) {
    using U = std::make_unsigned_t<T>;
    return static_cast<T>(static_cast<U>(a) + static_cast<U>(b));
  } else {
    return static_cast<T>(a + b);
  }
}
template <typename T>
EMBER_HD constexpr T wrapping_sub(T a, T b) {
  if constexpr (needs_unsigned_wrap_v<T>) {
    using U = std::make_unsigned_t<T>;
    return static_cast<T>(static_cast<U>(a) - static_cast<U>(b));
  } else {
    return static_cast<T>(a - b);
  }
}
template <typename T>
EMBER_HD constexpr T wrapping_mul(T a, T b) {
  if constexpr (needs_unsigned_wrap_v<T>) {
    using U = std::make_unsigned_t<T>;
    return static_cast<T>(static_cast<U>(a) * static_cast<U>(b));
  } else {
    return static_cast<T>(a * b);
  }
}

/// Integer power by squaring, wrapping on overflow. A negative exponent (which the front end
/// rejects for integer tensors) still has a defined result, the one of the exact power
/// truncated toward zero: 1 for base 1, +-1 for base -1, 0 otherwise.
template <typename T>
EMBER_HD constexpr T integer_pow(T base, T exponent) {
  if constexpr (std::is_signed_v<T>) {
    if (exponent < 0) {
      if (base == 1) return T(1);
      if (base == -1) return (exponent & 1) ? T(-1) : T(1);
      return T(0);
    }
  }
  T result = 1;
  while (exponent != 0) {
    if (exponent & 1) result = wrapping_mul(result, base);
    exponent = static_cast<T>(exponent >> 1);
    if (exponent != 0) base = wrapping_mul(base, base);
  }
  return result;
}

/// Float to integer conversion with x86's result for values out of range (and NaN): the
/// type's minimum ("integer indefinite") for 32 and 64 bits. That is what PyTorch's plain
/// static_cast gives on x86, here without undefined behaviour. 8- and 16-bit types go
/// through int32 as the compiler does, and uint8 through int64, as PyTorch specifies so that
/// negative floats wrap (-1.0 -> 255).
template <typename To, typename From>
EMBER_HD constexpr To float_to_integer(From v) {
  if constexpr (std::is_same_v<To, uint8_t>) {
    return static_cast<To>(float_to_integer<int64_t>(v));
  } else if constexpr (sizeof(To) < sizeof(int32_t)) {
    return static_cast<To>(float_to_integer<int32_t>(v));
  } else {
    static_assert(std::is_signed_v<To>, "no unsigned 32/64-bit dtype exists");
    constexpr uint64_t kMinMagnitude = uint64_t{1} << (8 * sizeof(To) - 1);  // 2^31 or 2^63, exact in float
    constexpr From kLow = -static_cast<From>(kMinMagnitude);
    constexpr To kIndefinite = static_cast<To>(kMinMagnitude);  // wraps to the minimum
    return (v >= kLow && v < -kLow) ? static_cast<To>(v) : kIndefinite;
  }
}

// The 16-bit float conversions of ember/half.h, bit for bit, rewritten without branches:
// every case is computed and the right one selected, so that CPU loops over Half/BFloat16
// elements vectorise (the branchy originals keep them scalar). Tests check them against
// Half/BFloat16 on every half and on the float boundary cases.

EMBER_HD inline float half_bits_to_float(uint16_t h) {
  const uint32_t sign = static_cast<uint32_t>(h & 0x8000u) << 16;
  const uint32_t magnitude = static_cast<uint32_t>(h & 0x7fffu) << 13;  // exponent and mantissa, float-aligned
  const uint32_t normal = magnitude + (112u << 23);                     // rebias the exponent: 15 -> 127
  const uint32_t inf_nan = magnitude | 0x7f800000u;
  // Subnormal: mantissa * 2^-24, exact, computed on normal floats (so flush-to-zero modes
  // cannot touch it).
  const uint32_t subnormal =
      ember::detail::float_bits(static_cast<float>(static_cast<int32_t>(h & 0x3ffu)) * 5.9604644775390625e-08f);
  uint32_t bits = magnitude >= (0x1fu << 23) ? inf_nan : normal;
  // A mask rather than ?: here: GCC will not if-convert a select whose arm holds float math
  // (it could trap), and the branch would stop the loop from vectorising.
  const uint32_t subnormal_mask = 0u - static_cast<uint32_t>(magnitude < (1u << 23));
  bits = (subnormal & subnormal_mask) | (bits & ~subnormal_mask);
  return ember::detail::bits_float(sign | bits);
}

EMBER_HD inline uint16_t half_bits_from_float(float f) {
  const uint32_t x = ember::detail::float_bits(f);
  const uint32_t sign = (x >> 16) & 0x8000u;
  const uint32_t abs = x & 0x7fffffffu;
  // Normal halves: rebias the exponent and round the 13 dropped bits half to even.
  const uint32_t normal = (abs + 0xc8000fffu + ((abs >> 13) & 1u)) >> 13;
  // Subnormal halves: adding 0.5 makes the FPU round into the subnormal grid.
  const uint32_t subnormal = ember::detail::float_bits(ember::detail::bits_float(abs) + 0.5f) - 0x3f000000u;
  uint32_t r = abs < 0x38800000u ? subnormal : normal;
  r = abs >= 0x47800000u ? 0x7c00u : r;  // overflow and inf
  r = abs > 0x7f800000u ? 0x7e00u : r;   // NaN
  return static_cast<uint16_t>(sign | r);
}

EMBER_HD inline float bfloat16_bits_to_float(uint16_t b) {
  return ember::detail::bits_float(static_cast<uint32_t>(b) << 16);
}

EMBER_HD inline uint16_t bfloat16_bits_from_float(float f) {
  const uint32_t x = ember::detail::float_bits(f);
  const uint32_t rounded = (x + 0x7fffu + ((x >> 16) & 1u)) >> 16;
  const uint32_t quiet_nan = (x >> 16) | 0x40u;
  return static_cast<uint16_t>((x & 0x7fffffffu) > 0x7f800000u ? quiet_nan : rounded);
}

}  // namespace detail

/// Converts one element between any two element types with PyTorch's CPU semantics:
/// to bool is `!= 0` (NaN is true); float to integer truncates toward zero; Half and BFloat16
/// go through float in both directions, so double -> half rounds twice, exactly as PyTorch's
/// c10::Half(float(double)) does, and int64 -> half rounds via float too.
template <typename To, typename From>
EMBER_HD constexpr To convert(From v) {
  if constexpr (std::is_same_v<To, From>) {
    return v;
  } else if constexpr (std::is_same_v<From, Half>) {
    return convert<To>(detail::half_bits_to_float(v.bits));
  } else if constexpr (std::is_same_v<From, BFloat16>) {
    return convert<To>(detail::bfloat16_bits_to_float(v.bits));
  } else if constexpr (std::is_same_v<To, bool>) {
    return v != From(0);
  } else if constexpr (std::is_same_v<To, Half>) {
    return Half::from_bits(detail::half_bits_from_float(static_cast<float>(v)));
  } else if constexpr (std::is_same_v<To, BFloat16>) {
    return BFloat16::from_bits(detail::bfloat16_bits_from_float(static_cast<float>(v)));
  } else if constexpr (std::is_integral_v<To> && std::is_floating_point_v<From>) {
    return detail::float_to_integer<To>(v);
  } else {
    return static_cast<To>(v);
  }
}

// ---- unary ------------------------------------------------------------------------------------

struct Neg {
  static constexpr Domain domain = Domain::Numeric;
  template <typename C>
  EMBER_HD constexpr C operator()(C x) const {
    if constexpr (std::is_integral_v<C>) {
      return detail::wrapping_sub(C(0), x);
    } else {
      return -x;
    }
  }
};

struct Abs {
  static constexpr Domain domain = Domain::Numeric;
  template <typename C>
  EMBER_HD C operator()(C x) const {
    if constexpr (std::is_floating_point_v<C>) {
      return kmath::abs(x);  // clears the sign of -0.0 and of NaN, as fabs does
    } else if constexpr (std::is_signed_v<C>) {
      return x < 0 ? detail::wrapping_sub(C(0), x) : x;  // abs(INT_MIN) wraps to INT_MIN
    } else {
      return x;
    }
  }
};

struct Exp {
  static constexpr Domain domain = Domain::Floating;
  template <typename C>
  EMBER_HD C operator()(C x) const {
    return kmath::exp(x);
  }
};

struct Log {
  static constexpr Domain domain = Domain::Floating;
  template <typename C>
  EMBER_HD C operator()(C x) const {
    return kmath::log(x);
  }
};

struct Sqrt {
  static constexpr Domain domain = Domain::Floating;
  template <typename C>
  EMBER_HD C operator()(C x) const {
    return kmath::sqrt(x);
  }
};

struct Rsqrt {
  static constexpr Domain domain = Domain::Floating;
  template <typename C>
  EMBER_HD C operator()(C x) const {
    return kmath::rsqrt(x);
  }
};

struct Sin {
  static constexpr Domain domain = Domain::Floating;
  template <typename C>
  EMBER_HD C operator()(C x) const {
    return kmath::sin(x);
  }
};

struct Cos {
  static constexpr Domain domain = Domain::Floating;
  template <typename C>
  EMBER_HD C operator()(C x) const {
    return kmath::cos(x);
  }
};

struct Tanh {
  static constexpr Domain domain = Domain::Floating;
  template <typename C>
  EMBER_HD C operator()(C x) const {
    return kmath::tanh(x);
  }
};

/// 1 / (1 + exp(-x)) evaluated with e = exp(-|x|) <= 1, so neither tail overflows: for very
/// negative x the result is the tiny e/(1+e) rather than 1/inf rounded to 0. Only the numerator
/// depends on the sign, a select rather than a branch, so that loops over it vectorise.
struct Sigmoid {
  static constexpr Domain domain = Domain::Floating;
  template <typename C>
  EMBER_HD C operator()(C x) const {
    C e = kmath::exp(-kmath::abs(x));
    C numerator = x >= C(0) ? C(1) : e;
    return numerator / (C(1) + e);
  }
};

/// max(x, 0) that keeps NaN (and -0.0, as PyTorch's clamp_min does on CPU).
struct Relu {
  static constexpr Domain domain = Domain::Numeric;
  template <typename C>
  EMBER_HD constexpr C operator()(C x) const {
    if constexpr (std::is_unsigned_v<C>) {
      return x;
    } else {
      return x < C(0) ? C(0) : x;
    }
  }
};

struct Erf {
  static constexpr Domain domain = Domain::Floating;
  template <typename C>
  EMBER_HD C operator()(C x) const {
    return kmath::erf(x);
  }
};

/// Exact GELU: x/2 * (1 + erf(x / sqrt(2))), PyTorch's formula, written with 1 + erf(z) =
/// erfc(-z): in the negative tail 1 + erf(z) cancels to a few significant bits (float32 results
/// off by 1e-4 relative at x = -3.6, by 100% near -5.5 in PyTorch), while erfc keeps full precision.
/// Float on the host has its own formula, kmath::gelu_float (kernels/gelu_float.h): the C
/// library's vector erfcf made this op twice as slow as PyTorch's.
struct Gelu {
  static constexpr Domain domain = Domain::Floating;
  template <typename C>
  EMBER_HD C operator()(C x) const {
#if !defined(__CUDA_ARCH__)
    if constexpr (std::is_same_v<C, float>) return kmath::gelu_float(x);
#endif
    const C kSqrtHalf = C(0.70710678118654752440);
    return x * C(0.5) * kmath::erfc(-x * kSqrtHalf);
  }
};

/// GELU's tanh approximation (approximate="tanh"): x/2 * (1 + tanh(u)), u = sqrt(2/pi) (x +
/// 0.044715 x^3), PyTorch's formula, written with 1 + tanh(u) = 2 sigmoid(2u): in the negative
/// tail 1 + tanh(u) cancels (float32 results off by 3e-4 relative at x = -3.6, and by as much
/// again between two correct tanh implementations), while the sigmoid keeps full precision.
struct GeluTanh {
  static constexpr Domain domain = Domain::Floating;
  template <typename C>
  EMBER_HD C operator()(C x) const {
    const C kBeta = C(0.79788456080286535588);  // sqrt(2 / pi)
    const C kKappa = C(0.044715);
    return x * Sigmoid{}(C(2) * kBeta * (x + kKappa * (x * x * x)));
  }
};

/// x * sigmoid(x), as PyTorch writes it: x / (1 + exp(-x)).
struct Silu {
  static constexpr Domain domain = Domain::Floating;
  template <typename C>
  EMBER_HD C operator()(C x) const {
    return x / (C(1) + kmath::exp(-x));
  }
};

struct LogicalNot {
  static constexpr Domain domain = Domain::Any;
  template <typename C>
  EMBER_HD constexpr bool operator()(C x) const {
    return !(x != C(0));  // NaN is nonzero, so logical_not(NaN) is false
  }
};

// The three classifiers below use only comparisons and x - x, which is 0 for every finite value
// (and every integer) and NaN for an infinity or a NaN, so they need no <cmath> in device code and
// stay correct for integer and bool inputs.

/// True for every value but NaN and ±infinity.
struct IsFinite {
  static constexpr Domain domain = Domain::Any;
  template <typename C>
  EMBER_HD constexpr bool operator()(C x) const {
    return x - x == 0;
  }
};

struct IsNan {
  static constexpr Domain domain = Domain::Any;
  template <typename C>
  EMBER_HD constexpr bool operator()(C x) const {
    return x != x;
  }
};

/// True for ±infinity: not NaN, yet x - x is NaN.
struct IsInf {
  static constexpr Domain domain = Domain::Any;
  template <typename C>
  EMBER_HD constexpr bool operator()(C x) const {
    return x == x && x - x != x - x;
  }
};

// ---- binary, arithmetic -----------------------------------------------------------------------

/// For bool, a + b is logical or (True + True is True), as in PyTorch.
struct Add {
  static constexpr Domain domain = Domain::Any;
  template <typename C>
  EMBER_HD constexpr C operator()(C a, C b) const {
    return detail::wrapping_add(a, b);
  }
};

struct Sub {
  static constexpr Domain domain = Domain::Numeric;
  template <typename C>
  EMBER_HD constexpr C operator()(C a, C b) const {
    return detail::wrapping_sub(a, b);
  }
};

/// For bool, a * b is logical and.
struct Mul {
  static constexpr Domain domain = Domain::Any;
  template <typename C>
  EMBER_HD constexpr C operator()(C a, C b) const {
    return detail::wrapping_mul(a, b);
  }
};

/// True division. The front end always computes it in a floating type; the integer form is
/// still defined so that no instantiation can trap: it truncates toward zero, x / 0 is 0 and
/// MIN / -1 wraps to MIN.
struct Div {
  static constexpr Domain domain = Domain::Floating;
  template <typename C>
  EMBER_HD constexpr C operator()(C a, C b) const {
    if constexpr (std::is_same_v<C, bool>) {
      return b ? a : false;
    } else if constexpr (std::is_integral_v<C>) {
      if (b == 0) return C(0);
      if constexpr (std::is_signed_v<C>) {
        if (b == -1) return detail::wrapping_sub(C(0), a);
      }
      return static_cast<C>(a / b);
    } else {
      return a / b;
    }
  }
};

/// ReLU's backward in one pass, as aten::threshold_backward(grad, output, 0): the gradient where
/// the output is above 0 (or NaN), exactly 0 where it is not, whatever the gradient holds.
struct ThresholdBackward {
  static constexpr Domain domain = Domain::Any;
  template <typename C>
  EMBER_HD constexpr C operator()(C grad, C output) const {
    return output <= C(0) ? C(0) : grad;
  }
};

// The activations' backward formulas, each one pass over (grad, saved) instead of three to eight
// ops, in PyTorch's arithmetic (aten's sigmoid_backward, tanh_backward, gelu_backward,
// silu_backward). The front end uses them when the backward is not itself recorded
// (create_graph); a recorded backward runs as ops, which can be differentiated again.

/// grad * (1 - y) * y, for y = sigmoid(x).
struct SigmoidBackward {
  static constexpr Domain domain = Domain::Floating;
  template <typename C>
  EMBER_HD C operator()(C grad, C output) const {
    return grad * (C(1) - output) * output;
  }
};

/// grad * (1 - y^2), for y = tanh(x).
struct TanhBackward {
  static constexpr Domain domain = Domain::Floating;
  template <typename C>
  EMBER_HD C operator()(C grad, C output) const {
    return grad * (C(1) - output * output);
  }
};

/// grad * (cdf(x) + x pdf(x)), the exact GELU's derivative; the cdf through erfc, as Gelu's.
/// Float on the host: kmath::gelu_backward_float, which also keeps the derivative's relative
/// precision near its root (x = -0.75), where cdf + x pdf cancels.
struct GeluBackward {
  static constexpr Domain domain = Domain::Floating;
  template <typename C>
  EMBER_HD C operator()(C grad, C x) const {
#if !defined(__CUDA_ARCH__)
    if constexpr (std::is_same_v<C, float>) return kmath::gelu_backward_float(grad, x);
#endif
    const C kSqrtHalf = C(0.70710678118654752440);
    const C kInvSqrt2Pi = C(0.39894228040143267794);  // 1 / sqrt(2 pi)
    const C cdf = C(0.5) * kmath::erfc(-x * kSqrtHalf);
    const C pdf = kInvSqrt2Pi * kmath::exp(C(-0.5) * x * x);
    return grad * (cdf + x * pdf);
  }
};

/// The derivative of GeluTanh: with u = sqrt(2/pi) (x + 0.044715 x^3) and t = tanh(u),
/// grad * (0.5 (1 + t) + 0.5 x (1 - t^2) sqrt(2/pi) (1 + 3 * 0.044715 x^2)), PyTorch's formula.
/// As in GeluTanh, 1 + t = 2 s and 1 - t = 2 (1 - s) for s = sigmoid(2u), with s and 1 - s both
/// taken from e = exp(-|2u|), so that neither tail cancels.
struct GeluTanhBackward {
  static constexpr Domain domain = Domain::Floating;
  template <typename C>
  EMBER_HD C operator()(C grad, C x) const {
    const C kBeta = C(0.79788456080286535588);  // sqrt(2 / pi)
    const C kKappa = C(0.044715);
    const C x_sq = x * x;
    const C two_u = C(2) * kBeta * (x + kKappa * x_sq * x);
    const C e = kmath::exp(-kmath::abs(two_u));
    const C inv = C(1) / (C(1) + e);
    const C s = (two_u >= C(0) ? C(1) : e) * inv;            // (1 + t) / 2
    const C one_minus_s = (two_u >= C(0) ? e : C(1)) * inv;  // (1 - t) / 2
    const C right_derivative = C(2) * x * s * one_minus_s * kBeta * (C(1) + C(3) * kKappa * x_sq);
    return grad * (s + right_derivative);
  }
};

/// grad * s (1 + x (1 - s)), for s = sigmoid(x).
struct SiluBackward {
  static constexpr Domain domain = Domain::Floating;
  template <typename C>
  EMBER_HD C operator()(C grad, C x) const {
    const C s = Sigmoid{}(x);
    return grad * s * (C(1) + x * (C(1) - s));
  }
};

/// torch.maximum: NaN if either operand is NaN.
struct Maximum {
  static constexpr Domain domain = Domain::Any;
  template <typename C>
  EMBER_HD constexpr C operator()(C a, C b) const {
    return kmath::maximum(a, b);
  }
};

/// torch.minimum: NaN if either operand is NaN.
struct Minimum {
  static constexpr Domain domain = Domain::Any;
  template <typename C>
  EMBER_HD constexpr C operator()(C a, C b) const {
    return kmath::minimum(a, b);
  }
};

/// Floating pow is std::pow. Integer pow is exact by repeated squaring (wrapping), with the
/// defined results of detail::integer_pow for negative exponents.
struct Pow {
  static constexpr Domain domain = Domain::Numeric;
  template <typename C>
  EMBER_HD C operator()(C a, C b) const {
    if constexpr (std::is_integral_v<C>) {
      return detail::integer_pow(a, b);
    } else {
      // Squares and cubes as products, as PyTorch computes them (x * x is also pow's correctly
      // rounded square); with a scalar exponent the test is loop-invariant, so the loop is
      // unswitched and vectorises instead of calling pow per element.
      if (b == C(2)) return a * a;
      if (b == C(3)) return a * a * a;
      return kmath::pow(a, b);
    }
  }
};

// ---- binary, producing bool -------------------------------------------------------------------

#define EMBER_COMPARISON_FUNCTOR(Name, expr)             \
  struct Name {                                          \
    static constexpr Domain domain = Domain::Any;        \
    template <typename C>                                \
    EMBER_HD constexpr bool operator()(C a, C b) const { \
      return expr;                                       \
    }                                                    \
  };
EMBER_COMPARISON_FUNCTOR(Eq, a == b)
EMBER_COMPARISON_FUNCTOR(Ne, a != b)
EMBER_COMPARISON_FUNCTOR(Lt, a < b)
EMBER_COMPARISON_FUNCTOR(Le, a <= b)
EMBER_COMPARISON_FUNCTOR(Gt, a > b)
EMBER_COMPARISON_FUNCTOR(Ge, a >= b)
EMBER_COMPARISON_FUNCTOR(LogicalAnd, (a != C(0)) && (b != C(0)))
EMBER_COMPARISON_FUNCTOR(LogicalOr, (a != C(0)) || (b != C(0)))
#undef EMBER_COMPARISON_FUNCTOR

// ---- ops with parameters ----------------------------------------------------------------------

/// a + alpha * b (torch.add / torch.sub with alpha). Floating types use one fused
/// multiply-add where the hardware has it, matching PyTorch's vectorised CPU loop and CUDA.
template <typename C>
struct AddScaled {
  static constexpr Domain domain = Domain::Any;
  C alpha;
  EMBER_HD C operator()(C a, C b) const {
    if constexpr (std::is_floating_point_v<C>) {
      return kmath::fma(alpha, b, a);
    } else {
      return detail::wrapping_add(a, detail::wrapping_mul(alpha, b));
    }
  }
};

/// torch.where for one element: a where the condition holds, else b. The condition is a bool
/// tensor's byte (0 or 1); a and b move as raw bits (U an unsigned integer of the element's
/// width), so one instantiation serves every dtype of that width.
struct Where {
  static constexpr Domain domain = Domain::Any;
  template <typename U>
  EMBER_HD constexpr U operator()(uint8_t cond, U a, U b) const {
    return cond != 0 ? a : b;
  }
};

/// min(max(x, lo), hi) with NaN in x kept. The bounds must not be NaN (the backend handles a
/// NaN bound, whose result is all NaN, before it gets here); an unused bound is passed as the
/// type's lowest / highest value (or -inf / inf).
template <typename C>
struct Clamp {
  static constexpr Domain domain = Domain::Numeric;
  C lo;
  C hi;
  EMBER_HD constexpr C operator()(C x) const {
    C r = x < lo ? lo : x;
    return r > hi ? hi : r;
  }
};

}  // namespace ember::kernels

// The bitwise ops; then the rounding, logarithm/exponential variants, trigonometric, hyperbolic
// and special functions, and remainder/fmod/atan2/hypot: more functors in the same conventions.
#include "kernels/bitwise_ops.h"  // IWYU pragma: export
#include "kernels/math_ops.h"     // IWYU pragma: export
