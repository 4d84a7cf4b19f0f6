#pragma once
// The arithmetic of the resample family (interpolate's modes), written once for the CPU
// (cpu/resample.cpp) and CUDA (cuda/resample.cu) kernels.
//
// Each resized dimension has a table of taps: output position j reads input positions
// index[t * out + j] with weights weight[t * out + j], t < taps (no weights: one tap of weight 1,
// the nearest modes). The dimensions combine from the last to the first, each summing
// value * weight over its taps left to right, every product and sum rounded in the computation
// type C (float, or double for float64): bilinear is h0 * (w0 * a + w1 * b) + h1 * (w0 * c + w1 * d)
// with no fused multiply-add, which is the rounding of interpolate's composed form (separate mul
// and add ops) and of PyTorch's CPU kernels. `product` is the one multiplication that must not be
// fused with the sum that consumes it: nvcc contracts a * b + c by default, so the device form
// rounds explicitly; the CPU file switches contraction off for itself.
#include <cstdint>

#include "kernels/kmath.h"

namespace ember::kernels {

/// The resized dimensions a kernel handles: interpolate's 1-D, 2-D and 3-D modes.
inline constexpr int kMaxResampleDims = 3;

/// v * w rounded once, never contracted into a following addition.
template <typename C>
EMBER_HD inline C resample_product(C v, C w) {
#ifdef __CUDA_ARCH__
  if constexpr (sizeof(C) == sizeof(double)) {
    return __dmul_rn(v, w);
  } else {
    return __fmul_rn(v, w);
  }
#else
  return v * w;
#endif
}

/// One resized dimension's table (contiguous [taps, out] arrays).
template <typename C>
struct ResampleAxis {
  const int64_t* index = nullptr;
  const C* weight = nullptr;  // null: one tap of weight 1
  int64_t taps = 1, in = 1, out = 1;
};

/// The resized dimensions of one call, the first of them outermost.
template <typename C>
struct ResampleGeometry {
  ResampleAxis<C> axis[kMaxResampleDims];
  int dims = 1;
  int64_t in_plane = 1, out_plane = 1;  // elements per (n, c) plane
};

/// The input position tap t of output position j reads, kept inside the dimension (the CPU checks
/// the tables; a device kernel must not read outside its input even for a bad one).
template <typename C>
EMBER_HD inline int64_t resample_tap(const ResampleAxis<C>& a, int64_t t, int64_t j) {
  const int64_t at = a.index[t * a.out + j];
  return at < 0 ? 0 : (at >= a.in ? a.in - 1 : at);
}

/// The output element at positions j[0..K) of a plane whose input starts at `plane`: dimension D
/// sums over its taps the weight times the combination of the dimensions after it, at the input
/// row `row` (the linear position over dimensions < D, in input elements). Per element, so the
/// value is the separable passes' value bit for bit: every partial sum is the one those passes
/// store.
template <int D, int K, typename S, typename C>
EMBER_HD inline C resample_combine(const ResampleGeometry<C>& g, const S* plane, int64_t row, const int64_t* j) {
  const ResampleAxis<C>& a = g.axis[D];
  C acc{};
  for (int64_t t = 0; t < a.taps; ++t) {
    const int64_t at = row * a.in + resample_tap(a, t, j[D]);
    C v;
    if constexpr (D + 1 == K) {
      v = static_cast<C>(plane[at]);
    } else {
      v = resample_combine<D + 1, K, S, C>(g, plane, at, j);
    }
    const C term = a.weight == nullptr ? v : resample_product(v, a.weight[t * a.out + j[D]]);
    acc = t == 0 ? term : acc + term;
  }
  return acc;
}

/// The backward pass's contribution of one output gradient `grad` to the input positions it read:
/// add(offset, value) is called once per tap combination, with the gradient times the weights
/// (the outer dimension's weight first).
template <int D, int K, typename C, typename Add>
EMBER_HD inline void resample_spread(const ResampleGeometry<C>& g, C grad, int64_t row, const int64_t* j,
                                     const Add& add) {
  const ResampleAxis<C>& a = g.axis[D];
  for (int64_t t = 0; t < a.taps; ++t) {
    const int64_t at = row * a.in + resample_tap(a, t, j[D]);
    const C v = a.weight == nullptr ? grad : resample_product(grad, a.weight[t * a.out + j[D]]);
    if constexpr (D + 1 == K) {
      add(at, v);
    } else {
      resample_spread<D + 1, K, C>(g, v, at, j, add);
    }
  }
}

}  // namespace ember::kernels
