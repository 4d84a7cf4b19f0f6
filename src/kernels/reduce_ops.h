#pragma once
// Combine functors for reductions, shared by the CPU and CUDA backends.
//
// A backend reduces a slice in pieces (SIMD lanes, threads, warps, blocks) and merges the
// partial results with `combine`. Every combine here is commutative and associative up to
// floating-point rounding, and the ones that carry an index break ties by the lower index, so a
// tree of any shape gives PyTorch's answer (the first maximum, the first NaN).
//
// Compiled by g++ and nvcc: no CUDA includes, no std:: math (kmath:: instead).
#include <cstdint>

#include "ember/half.h"  // EMBER_HD
#include "kernels/kmath.h"

namespace ember::kernels {

template <typename Acc>
struct SumOp {
  EMBER_HD static constexpr Acc identity() { return Acc(0); }
  EMBER_HD static constexpr Acc combine(Acc a, Acc b) { return a + b; }
};

template <typename Acc>
struct ProdOp {
  EMBER_HD static constexpr Acc identity() { return Acc(1); }
  EMBER_HD static constexpr Acc combine(Acc a, Acc b) { return a * b; }
};

/// A candidate for max/min/argmax/argmin: the value and its index in the reduced slice.
/// index < 0 marks the empty partial, so no "lowest value" of the type is needed.
template <typename V>
struct ValueIndex {
  V value;
  int64_t index;
};

/// Max: NaN beats every number (torch.max propagates NaN and argmax reports it); among equal
/// values, and among NaNs, the lower index wins.
template <typename V>
struct MaxOp {
  /// True when `a` is strictly preferred to `b`, ignoring indices.
  EMBER_HD static constexpr bool better(V a, V b) { return (kmath::isnan(a) && !kmath::isnan(b)) || a > b; }
  EMBER_HD static constexpr ValueIndex<V> identity() { return {V(), -1}; }
  EMBER_HD static constexpr ValueIndex<V> combine(ValueIndex<V> a, ValueIndex<V> b) {
    if (a.index < 0) return b;
    if (b.index < 0) return a;
    if (better(a.value, b.value)) return a;
    if (better(b.value, a.value)) return b;
    return a.index <= b.index ? a : b;
  }
};

/// Min: NaN also wins (torch.min and argmin treat it as the extreme), ties go to the lower index.
template <typename V>
struct MinOp {
  EMBER_HD static constexpr bool better(V a, V b) { return (kmath::isnan(a) && !kmath::isnan(b)) || a < b; }
  EMBER_HD static constexpr ValueIndex<V> identity() { return {V(), -1}; }
  EMBER_HD static constexpr ValueIndex<V> combine(ValueIndex<V> a, ValueIndex<V> b) {
    if (a.index < 0) return b;
    if (b.index < 0) return a;
    if (better(a.value, b.value)) return a;
    if (better(b.value, a.value)) return b;
    return a.index <= b.index ? a : b;
  }
};

/// Running statistics for the variance: count, mean and the sum of squared deviations (m2).
template <typename Acc>
struct WelfordData {
  Acc mean;
  Acc m2;
  int64_t count;
};

template <typename Acc>
struct WelfordOp {
  EMBER_HD static constexpr WelfordData<Acc> identity() { return {Acc(0), Acc(0), 0}; }
  /// Adds one element (Welford's update, stable for long runs of similar values).
  EMBER_HD static constexpr WelfordData<Acc> push(WelfordData<Acc> a, Acc x) {
    a.count += 1;
    Acc delta = x - a.mean;
    a.mean += delta / Acc(a.count);
    a.m2 += delta * (x - a.mean);
    return a;
  }
  /// Merges two disjoint parts (Chan et al.): exact in real arithmetic for any split.
  EMBER_HD static constexpr WelfordData<Acc> combine(WelfordData<Acc> a, WelfordData<Acc> b) {
    if (a.count == 0) return b;
    if (b.count == 0) return a;
    int64_t n = a.count + b.count;
    Acc delta = b.mean - a.mean;
    Acc b_share = Acc(b.count) / Acc(n);
    WelfordData<Acc> r;
    r.mean = a.mean + delta * b_share;
    r.m2 = a.m2 + b.m2 + delta * delta * Acc(a.count) * b_share;
    r.count = n;
    return r;
  }
  /// m2 / max(0, count - correction), as torch.var: a non-positive divisor gives inf, or NaN
  /// when m2 is 0 (one element with correction 1, or no elements).
  EMBER_HD static Acc variance(WelfordData<Acc> a, int64_t correction) {
    int64_t dof = a.count - correction;
    return a.m2 / Acc(dof > 0 ? dof : 0);
  }
};

}  // namespace ember::kernels
