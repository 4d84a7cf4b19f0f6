#pragma once
// The window arithmetic of 2-D pooling, written once for the CUDA kernels (and usable by any CPU
// loop): which input rows and columns an output position reads, and, for the gather-style
// backward passes, which output positions can read a given input position.
//
// The rules are PyTorch's, as src/backend/cpu/pool.cpp implements them:
//  * Max: taps ih = oh*stride - pad + k*dilation, k < kernel; taps outside the input are skipped.
//    `begin` is the first tap inside the input (the index reported for an all -inf window).
//  * Avg: the window is clipped first to the padded input (giving count_include_pad's divisor),
//    then to the input (giving the summed region and the other divisor); divisor_override
//    replaces both. A window that ends up empty gives 0.
//  * AdaptiveAvg: start = floor(i*in/out), end = ceil((i+1)*in/out).
// Everything is per dimension except the average window's divisor, which is a product.
//
// The last part holds the per-element bodies of the CUDA kernels (one output element forward,
// one input element backward), so that the host tests run the very code the GPU runs against
// the CPU backend.
#include <cstdint>
#include <limits>

#include "ember/half.h"  // EMBER_HD
#include "kernels/dtype_dispatch.h"
#include "kernels/kmath.h"

namespace ember::kernels {

/// One dimension's pooling geometry.
struct PoolDim {
  int64_t in = 0, out = 0;
  int64_t kernel = 1, stride = 1, padding = 0, dilation = 1;
};

/// The geometry of one pooling call, shared by all planes.
struct PoolGeometry {
  PoolDim h, w;
  bool adaptive = false;          // AdaptiveAvg: kernel, stride and padding are unused
  bool count_include_pad = true;  // Avg
  int64_t divisor_override = 0;   // Avg; 0 means none
};

/// Max pooling taps of one output index along one dimension: begin, begin + dilation, ... < end.
struct MaxTaps {
  int64_t begin, end;
};

EMBER_HD inline MaxTaps max_taps(const PoolDim& d, int64_t o) {
  int64_t begin = o * d.stride - d.padding;
  int64_t end = begin + (d.kernel - 1) * d.dilation + 1;
  if (end > d.in) end = d.in;
  // The first tap at or after 0 (padding taps are skipped, padding acts as -inf).
  if (begin < 0) begin += (-begin + d.dilation - 1) / d.dilation * d.dilation;
  return {begin, end};
}

/// A half-open range [begin, end).
struct Span {
  int64_t begin, end;
  EMBER_HD bool empty() const { return begin >= end; }
  EMBER_HD int64_t size() const { return end - begin; }
};

EMBER_HD inline int64_t adaptive_start(int64_t i, int64_t in, int64_t out) { return (i * in) / out; }
EMBER_HD inline int64_t adaptive_end(int64_t i, int64_t in, int64_t out) { return ((i + 1) * in + out - 1) / out; }

/// An average window along one dimension: `clipped` is summed, `padded` (clipped to the padded
/// input only) is what count_include_pad divides by.
struct AvgSpan {
  Span clipped;
  int64_t padded_size;
};

EMBER_HD inline AvgSpan avg_span(const PoolDim& d, int64_t o, bool adaptive) {
  if (adaptive) {
    const Span s{adaptive_start(o, d.in, d.out), adaptive_end(o, d.in, d.out)};
    return {s, s.size()};
  }
  int64_t begin = o * d.stride - d.padding;
  int64_t end = begin + d.kernel;
  if (end > d.in + d.padding) end = d.in + d.padding;
  const int64_t padded = end - begin;
  if (begin < 0) begin = 0;
  if (end > d.in) end = d.in;
  return {{begin, end}, padded};
}

/// The clipped 2-D average window of output (oh, ow) and its divisor.
struct AvgWindow {
  Span h, w;
  int64_t divisor;
  EMBER_HD bool empty() const { return h.empty() || w.empty(); }
  EMBER_HD bool contains(int64_t ih, int64_t iw) const {
    return ih >= h.begin && ih < h.end && iw >= w.begin && iw < w.end;
  }
};

EMBER_HD inline AvgWindow avg_window(const PoolGeometry& g, int64_t oh, int64_t ow) {
  const AvgSpan sh = avg_span(g.h, oh, g.adaptive), sw = avg_span(g.w, ow, g.adaptive);
  int64_t divisor = 0;
  if (g.adaptive) {
    divisor = sh.padded_size * sw.padded_size;
  } else if (g.divisor_override != 0) {
    divisor = g.divisor_override;
  } else if (g.count_include_pad) {
    divisor = sh.padded_size * sw.padded_size;
  } else {
    divisor = sh.clipped.size() * sw.clipped.size();
  }
  return {sh.clipped, sw.clipped, divisor};
}

// ------------------------------------------------------------------------------- backward

EMBER_HD inline int64_t floor_div(int64_t a, int64_t b) {  // b > 0
  const int64_t q = a / b;
  return (a % b != 0 && a < 0) ? q - 1 : q;
}

EMBER_HD inline Span clamp_outputs(int64_t lo, int64_t hi, int64_t out) {
  if (lo < 0) lo = 0;
  if (hi > out) hi = out;
  return {lo, hi};
}

/// The output indices along one dimension whose max-pooling span [o*stride - pad,
/// o*stride - pad + (kernel-1)*dilation] holds input index i: a superset of the windows that
/// can report i, so a gather over it finds every output whose index is i.
EMBER_HD inline Span max_outputs_reading(const PoolDim& d, int64_t i) {
  // o*stride >= i + pad - (kernel-1)*dilation and o*stride <= i + pad.
  const int64_t lo = -floor_div(-(i + d.padding - (d.kernel - 1) * d.dilation), d.stride);
  const int64_t hi = floor_div(i + d.padding, d.stride) + 1;
  return clamp_outputs(lo, hi, d.out);
}

/// The output indices along one dimension whose average window can hold input index i (a
/// superset: callers confirm with AvgWindow::contains, so the gather and the forward agree
/// by construction).
EMBER_HD inline Span avg_outputs_reading(const PoolDim& d, int64_t i, bool adaptive) {
  if (adaptive) {
    // start(o) <= i  <=>  o*in <= i*out + out - 1 ... bounded by floor(i*out/in) +- 1.
    const int64_t lo = (i * d.out) / d.in - 1;
    const int64_t hi = ((i + 1) * d.out + d.in - 1) / d.in + 1;
    return clamp_outputs(lo, hi, d.out);
  }
  // o*stride - pad <= i < o*stride - pad + kernel.
  const int64_t lo = -floor_div(-(i + d.padding - d.kernel + 1), d.stride);
  const int64_t hi = floor_div(i + d.padding, d.stride) + 1;
  return clamp_outputs(lo, hi, d.out);
}

// ------------------------------------------------------------------------------- element bodies

/// Max pooling of output (oh, ow) of one plane: the value, and the flat index h*W+w of the
/// maximum in `*index`. A NaN wins, and a later NaN replaces an earlier one, as on the CPU.
template <typename T>
EMBER_HD T max_pool_at(const T* plane, const PoolGeometry& g, int64_t oh, int64_t ow, int64_t* index) {
  using S = compute_t<T>;
  const MaxTaps th = max_taps(g.h, oh), tw = max_taps(g.w, ow);
  int64_t best_index = th.begin * g.w.in + tw.begin;
  S best = -std::numeric_limits<S>::infinity();
  for (int64_t ih = th.begin; ih < th.end; ih += g.h.dilation) {
    for (int64_t iw = tw.begin; iw < tw.end; iw += g.w.dilation) {
      const int64_t i = ih * g.w.in + iw;
      const S v = static_cast<S>(plane[i]);
      if (v > best || kmath::isnan(v)) {
        best = v;
        best_index = i;
      }
    }
  }
  *index = best_index;
  return T(best);
}

/// Average pooling (plain or adaptive) of output (oh, ow) of one plane.
template <typename T>
EMBER_HD T avg_pool_at(const T* plane, const PoolGeometry& g, int64_t oh, int64_t ow) {
  using S = compute_t<T>;
  const AvgWindow win = avg_window(g, oh, ow);
  S sum = 0;
  if (!win.empty()) {
    for (int64_t ih = win.h.begin; ih < win.h.end; ++ih) {
      for (int64_t iw = win.w.begin; iw < win.w.end; ++iw) sum += static_cast<S>(plane[ih * g.w.in + iw]);
    }
    sum /= static_cast<S>(win.divisor);
  }
  return T(sum);
}

/// The max-pooling gradient of input (ih, iw) of one plane: the sum, in the outputs' row-major
/// order, of the gradients of the outputs whose index is this input.
template <typename T>
EMBER_HD T max_pool_grad_at(const T* grad_plane, const int64_t* index_plane, const PoolGeometry& g, int64_t ih,
                            int64_t iw) {
  using S = compute_t<T>;
  const Span sh = max_outputs_reading(g.h, ih), sw = max_outputs_reading(g.w, iw);
  const int64_t target = ih * g.w.in + iw;
  S acc = 0;
  for (int64_t oh = sh.begin; oh < sh.end; ++oh) {
    for (int64_t ow = sw.begin; ow < sw.end; ++ow) {
      const int64_t o = oh * g.w.out + ow;
      if (index_plane[o] == target) acc += static_cast<S>(grad_plane[o]);
    }
  }
  return T(acc);
}

/// The average-pooling gradient of input (ih, iw) of one plane: each window holding it passes
/// on its gradient divided by its divisor, summed in the outputs' row-major order.
template <typename T>
EMBER_HD T avg_pool_grad_at(const T* grad_plane, const PoolGeometry& g, int64_t ih, int64_t iw) {
  using S = compute_t<T>;
  const Span sh = avg_outputs_reading(g.h, ih, g.adaptive), sw = avg_outputs_reading(g.w, iw, g.adaptive);
  S acc = 0;
  for (int64_t oh = sh.begin; oh < sh.end; ++oh) {
    for (int64_t ow = sw.begin; ow < sw.end; ++ow) {
      const AvgWindow win = avg_window(g, oh, ow);
      if (!win.contains(ih, iw)) continue;
      acc += static_cast<S>(grad_plane[oh * g.w.out + ow]) / static_cast<S>(win.divisor);
    }
  }
  return T(acc);
}

}  // namespace ember::kernels
