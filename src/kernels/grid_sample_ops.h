#pragma once
// The pixel arithmetic of grid_sample, written once for the CPU (cpu/grid_sample.cpp) and CUDA
// (cuda/grid_sample.cu) kernels: PyTorch's rules (ATen's GridSampler.h) for turning one
// normalised grid coordinate into the taps it reads along one spatial axis.
//
// Each axis gives 1 (nearest), 2 (linear) or 4 (cubic) taps: a pixel index, or -1 for a tap
// outside the input (it reads as zero, so it adds nothing and receives nothing), a weight, and
// the weight's derivative with respect to the normalised coordinate (its "slope"). A sample
// point reads the product of its axes' taps: its value is the sum over every combination of the
// product of their weights times the pixel, and the grid's gradient along one axis is the same
// sum with that axis's weight replaced by its slope. Bilinear and nearest taps come from the
// padded source coordinate (clamped or reflected with PyTorch's gradient multipliers, the
// borders counting as outside); bicubic's four taps surround the unpadded coordinate and each
// is padded on its own, so that padding moves the pixels read but not the weights.
#include <cstdint>

#include "kernels/grid_sample_args.h"
#include "kernels/kmath.h"

namespace ember::kernels {

/// Taps per axis of each mode; the kernels size their arrays for the largest.
inline constexpr int kGridSampleMaxTaps = 4;
EMBER_HD constexpr int grid_sample_taps(GridSampleMode mode) {
  return mode == GridSampleMode::Nearest ? 1 : mode == GridSampleMode::Bilinear ? 2 : 4;
}

/// One axis's taps (see above); entries past the mode's count are unused.
template <typename T>
struct GridAxisTaps {
  int64_t index[kGridSampleMaxTaps];
  T weight[kGridSampleMaxTaps];
  T slope[kGridSampleMaxTaps];
};

/// [-1, 1] to pixel coordinates: -1 and 1 are the corner pixels' centres with align_corners,
/// the image's outer edges without. *slope is the derivative.
template <typename T>
EMBER_HD inline T grid_unnormalize(T coord, int64_t size, bool align_corners, T* slope) {
  if (align_corners) {
    *slope = static_cast<T>(size - 1) / 2;
    return ((coord + 1) / 2) * static_cast<T>(size - 1);
  }
  *slope = static_cast<T>(size) / 2;
  return ((coord + 1) * static_cast<T>(size) - 1) / 2;
}

/// Clamps to [0, size - 1]; on a bound (and beyond) the derivative is 0, so the borders count
/// as outside for the gradient. NaN passes through, and is then outside every axis.
template <typename T>
EMBER_HD inline T grid_clip(T in, int64_t size, T* slope) {
  if (in <= static_cast<T>(0)) {
    *slope = 0;
    return 0;
  }
  const T high = static_cast<T>(size - 1);
  if (in >= high) {
    *slope = 0;
    return high;
  }
  *slope = 1;
  return in;
}

/// Mirrors `in` at low and high (given doubled, so that half pixels are integers) until it lies
/// between them; the derivative is +1 or -1 by the number of mirrorings. Equal bounds (one pixel
/// with align_corners) map everything to 0.
template <typename T>
EMBER_HD inline T grid_reflect(T in, int64_t twice_low, int64_t twice_high, T* slope) {
  if (twice_low == twice_high) {
    *slope = 0;
    return 0;
  }
  const T low = static_cast<T>(twice_low) / 2;
  const T span = static_cast<T>(twice_high - twice_low) / 2;
  T distance = in - low;
  T sign = 1;
  if (distance < static_cast<T>(0)) {
    sign = -1;
    distance = -distance;
  }
  const T extra = kmath::fmod(distance, span);
  const T flips = kmath::floor(distance / span);
  // The parity of the mirrorings, without converting a possibly huge count to an integer.
  const bool even = kmath::fmod(flips, static_cast<T>(2)) == static_cast<T>(0);
  if (even) {
    *slope = sign;
    return extra + low;
  }
  *slope = -sign;
  return span - extra + low;
}

/// The padding of a pixel coordinate (PyTorch's compute_coordinates): clamped (border),
/// reflected then clamped (reflection), or left (zeros). *slope is the derivative.
template <typename T>
EMBER_HD inline T grid_pad(T x, int64_t size, GridSamplePadding padding, bool align_corners, T* slope) {
  if (padding == GridSamplePadding::Border) return grid_clip(x, size, slope);
  if (padding == GridSamplePadding::Reflection) {
    T reflect_slope = 1, clip_slope = 1;
    const T reflected = align_corners ? grid_reflect(x, 0, 2 * (size - 1), &reflect_slope)
                                      : grid_reflect(x, -1, 2 * size - 1, &reflect_slope);
    const T clipped = grid_clip(reflected, size, &clip_slope);
    *slope = reflect_slope * clip_slope;
    return clipped;
  }
  *slope = 1;
  return x;
}

/// The source coordinate of bilinear and nearest sampling: unnormalised, then padded.
template <typename T>
EMBER_HD inline T grid_source_index(T coord, int64_t size, GridSamplePadding padding, bool align_corners, T* slope) {
  T unnormalize_slope = 1, pad_slope = 1;
  const T x = grid_pad(grid_unnormalize(coord, size, align_corners, &unnormalize_slope), size, padding, align_corners,
                       &pad_slope);
  *slope = unnormalize_slope * pad_slope;
  return x;
}

/// An integral-valued pixel coordinate as an index, or -1 outside [0, size) (NaN included): the
/// comparison comes first, so no out-of-range value is ever converted.
template <typename T>
EMBER_HD inline int64_t grid_pixel_index(T position, int64_t size) {
  return (position >= static_cast<T>(0) && position < static_cast<T>(size)) ? static_cast<int64_t>(position) : -1;
}

/// Cubic convolution with A = -0.75 and its derivative, for |x| <= 1 (near) and 1 < |x| < 2 (far).
template <typename T>
EMBER_HD inline T cubic_near(T x) {
  constexpr T A = static_cast<T>(-0.75);
  return ((A + 2) * x - (A + 3)) * x * x + 1;
}
template <typename T>
EMBER_HD inline T cubic_far(T x) {
  constexpr T A = static_cast<T>(-0.75);
  return ((A * x - 5 * A) * x + 8 * A) * x - 4 * A;
}
template <typename T>
EMBER_HD inline T cubic_near_derivative(T x) {
  constexpr T A = static_cast<T>(-0.75);
  return (3 * (A + 2) * x - 2 * (A + 3)) * x;
}
template <typename T>
EMBER_HD inline T cubic_far_derivative(T x) {
  constexpr T A = static_cast<T>(-0.75);
  return (3 * A * x - 10 * A) * x + 8 * A;
}

/// The taps of `coord` (normalised) along an axis of `size` pixels.
template <typename T>
EMBER_HD inline void grid_axis_taps(T coord, int64_t size, GridSampleMode mode, GridSamplePadding padding,
                                    bool align_corners, GridAxisTaps<T>& taps) {
  if (mode == GridSampleMode::Bicubic) {
    T slope = 1;
    const T x = grid_unnormalize(coord, size, align_corners, &slope);
    const T x0 = kmath::floor(x);
    const T t = x - x0;
    const T one = 1;
    taps.weight[0] = cubic_far(t + one);
    taps.weight[1] = cubic_near(t);
    taps.weight[2] = cubic_near(one - t);
    taps.weight[3] = cubic_far(one - t + one);
    taps.slope[0] = cubic_far_derivative(t + one) * slope;
    taps.slope[1] = cubic_near_derivative(t) * slope;
    taps.slope[2] = -cubic_near_derivative(one - t) * slope;
    taps.slope[3] = -cubic_far_derivative(one - t + one) * slope;
    for (int k = 0; k < 4; ++k) {
      T ignored = 0;
      const T position = grid_pad(x0 + static_cast<T>(k - 1), size, padding, align_corners, &ignored);
      taps.index[k] = grid_pixel_index(position, size);
      if (taps.index[k] < 0) taps.weight[k] = taps.slope[k] = 0;
    }
    return;
  }
  T slope = 1;
  const T x = grid_source_index(coord, size, padding, align_corners, &slope);
  if (mode == GridSampleMode::Nearest) {
    taps.index[0] = grid_pixel_index(kmath::nearbyint(x), size);  // half to even
    taps.weight[0] = taps.index[0] < 0 ? T(0) : T(1);
    taps.slope[0] = 0;
    return;
  }
  const T x0 = kmath::floor(x);
  const T x1 = x0 + 1;
  taps.index[0] = grid_pixel_index(x0, size);
  taps.index[1] = grid_pixel_index(x1, size);
  taps.weight[0] = taps.index[0] < 0 ? T(0) : x1 - x;
  taps.weight[1] = taps.index[1] < 0 ? T(0) : x - x0;
  taps.slope[0] = taps.index[0] < 0 ? T(0) : -slope;
  taps.slope[1] = taps.index[1] < 0 ? T(0) : slope;
}

/// The pixels a sample point reads, S axes of K taps each (K^S corners): the axes' taps in
/// D, H, W order, and the input's strides along them. corner() gives corner j's offset, weight
/// and slopes (d weight / d coordinate of each axis); false when a tap is outside.
template <typename T, int S, int K>
struct GridCorners {
  static constexpr int kCount = S == 2 ? K * K : K * K * K;
  GridAxisTaps<T> axis[S];
  int64_t stride[S];

  EMBER_HD bool corner(int j, int64_t* offset, T* weight, T* slopes) const {
    int k[S];
    for (int d = S - 1; d >= 0; --d) {  // W's tap varies fastest
      k[d] = j % K;
      j /= K;
    }
    int64_t at = 0;
    for (int d = 0; d < S; ++d) {
      const int64_t i = axis[d].index[k[d]];
      if (i < 0) return false;
      at += i * stride[d];
    }
    *offset = at;
    // The product in x, y, z order (W first), as PyTorch multiplies its corner weights.
    T w = 1;
    for (int d = S - 1; d >= 0; --d) w *= axis[d].weight[k[d]];
    *weight = w;
    if (slopes != nullptr) {
      for (int d = 0; d < S; ++d) {
        T s = axis[d].slope[k[d]];
        for (int e = S - 1; e >= 0; --e)
          if (e != d) s *= axis[e].weight[k[e]];
        slopes[d] = s;
      }
    }
    return true;
  }
};

/// The sizes and strides the kernels walk, for S spatial axes (D, H, W order; H, W for S == 2):
/// x [N, C, *in_size] and grid [N, *out_size, S], any strides.
template <int S>
struct GridGeometry {
  int64_t n = 0, channels = 0;
  int64_t in_size[S] = {};
  int64_t x_sample = 0, x_channel = 0, x_stride[S] = {};
  int64_t out_size[S] = {};  // the grid's spatial sizes
  int64_t points = 1;        // per sample
  int64_t grid_sample = 0, grid_stride[S] = {}, grid_component = 0;

  /// The grid offset of point p of `sample`, and p's output coordinates.
  EMBER_HD int64_t grid_offset(int64_t sample, int64_t p, int64_t (&at)[S]) const {
    for (int d = S - 1; d >= 0; --d) {
      at[d] = p % out_size[d];
      p /= out_size[d];
    }
    int64_t offset = sample * grid_sample;
    for (int d = 0; d < S; ++d) offset += at[d] * grid_stride[d];
    return offset;
  }
};

/// The geometry of x [N, C, *in] and grid [N, *out, S] from their views (a TensorView; a
/// template so that this header stays below the backend interface).
template <int S, typename View>
inline GridGeometry<S> grid_geometry_of(const View& x, const View& grid) {
  GridGeometry<S> g;
  g.n = x.sizes[0];
  g.channels = x.sizes[1];
  g.x_sample = x.strides[0];
  g.x_channel = x.strides[1];
  g.grid_sample = grid.strides[0];
  g.grid_component = grid.strides[S + 1];
  for (int d = 0; d < S; ++d) {
    g.in_size[d] = x.sizes[2 + d];
    g.x_stride[d] = x.strides[2 + d];
    g.out_size[d] = grid.sizes[1 + d];
    g.grid_stride[d] = grid.strides[1 + d];
    g.points *= g.out_size[d];
  }
  return g;
}

/// The corners of the point whose grid coordinates start at `coords` (x, y, z: W's first). The
/// mode is K's (args.mode picked K), a constant, so that the compiler drops the other modes' code.
template <typename T, int S, int K>
EMBER_HD inline GridCorners<T, S, K> grid_corners_of(const T* coords, const GridGeometry<S>& geo,
                                                     const GridSampleArgs& args) {
  static_assert(K == 1 || K == 2 || K == 4);
  constexpr GridSampleMode mode = K == 1   ? GridSampleMode::Nearest
                                  : K == 2 ? GridSampleMode::Bilinear
                                           : GridSampleMode::Bicubic;
  GridCorners<T, S, K> corners;
  for (int d = 0; d < S; ++d) {
    grid_axis_taps(coords[(S - 1 - d) * geo.grid_component], geo.in_size[d], mode, args.padding, args.align_corners,
                   corners.axis[d]);
    corners.stride[d] = geo.x_stride[d];
  }
  return corners;
}

}  // namespace ember::kernels
