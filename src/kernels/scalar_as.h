#pragma once
// Scalars as element values, for the backends' host code: fill()'s value and clamp()'s bounds.
#include <limits>

#include "ember/scalar.h"
#include "kernels/dtype_dispatch.h"
#include "kernels/elementwise_ops.h"

namespace ember::kernels {

/// A Scalar as an element of type T, converted like an element of the Scalar's own kind would be
/// (a bool as bool, an integer as int64, a float as double), so fill(Scalar) gives what copying
/// a one-element tensor of that kind would.
template <typename T>
T scalar_as(const Scalar& value) {
  switch (value.kind()) {
    case Scalar::Kind::Bool:
      return convert<T>(value.to_bool());
    case Scalar::Kind::Int:
      return convert<T>(value.to_int64());
    case Scalar::Kind::Float:
      break;
  }
  return convert<T>(value.to_double());
}

/// clamp()'s functor for elements of type T, in T's computation type: a given bound is rounded to
/// T first, as PyTorch does; an absent one is the type's extreme, so it never wins. A NaN bound
/// in use (check with kmath::isnan on lo and hi) makes every element NaN.
template <typename T>
Clamp<compute_t<T>> clamp_bounds(const Scalar& lo, const Scalar& hi, bool has_lo, bool has_hi) {
  using C = compute_t<T>;
  using Limits = std::numeric_limits<C>;
  constexpr C kLowest = Limits::has_infinity ? -Limits::infinity() : Limits::lowest();
  constexpr C kHighest = Limits::has_infinity ? Limits::infinity() : Limits::max();
  return {has_lo ? convert<C>(lo.to<T>()) : kLowest, has_hi ? convert<C>(hi.to<T>()) : kHighest};
}

}  // namespace ember::kernels
