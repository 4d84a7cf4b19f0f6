// CpuBackend::pool2d and pool2d_backward: 2-D max, average and adaptive-average pooling.
//
// Each (n, c) plane is independent, so planes are the unit of parallelism: no two threads ever
// write the same element, forward or backward, and the backward needs no atomics. The window
// rules are PyTorch's CPU kernels' rules, reproduced exactly because they decide which elements
// a padded or ceil_mode window covers:
//  * Max: the window's taps are ih = oh*stride - pad + k*dilation; taps outside the input are
//    skipped (padding acts as -inf). The first tap inside is the index reported for a window
//    that holds only -inf; a NaN always wins, and a later NaN replaces an earlier one.
//  * Avg: the window is clipped first to the padded input (which sets count_include_pad's
//    divisor), then to the input itself (which sets the summed region and the other divisor);
//    a window that ends up empty gives 0. divisor_override replaces both divisors.
//  * AdaptiveAvg: start = floor(i*in/out), end = ceil((i+1)*in/out).
// float16 and bfloat16 accumulate in float and round once on the way out.
#include <algorithm>
#include <cstdint>
#include <limits>
#include <type_traits>
#include <vector>

#include "backend/cpu/cpu_backend.h"
#include "backend/cpu/dispatch.h"
#include "base/parallel.h"
#include "core/check.h"

namespace ember::cpu {
namespace {

// The geometry shared by all planes of one call.
struct Planes {
  int64_t count = 0;  // N * C
  int64_t in_h = 0, in_w = 0, out_h = 0, out_w = 0;
};

/// x and out as check_pool2d_views has checked them.
Planes planes_of(const TensorView& x, const TensorView& out) {
  return {x.sizes[0] * x.sizes[1], x.sizes[2], x.sizes[3], out.sizes[2], out.sizes[3]};
}

// Planes per parallel chunk: enough that a chunk touches about base::kGrainSize elements.
int64_t plane_grain(const Planes& p) {
  const int64_t per_plane = std::max<int64_t>(1, p.in_h * p.in_w + p.out_h * p.out_w);
  return std::max<int64_t>(1, base::kGrainSize / per_plane);
}

int64_t adaptive_start(int64_t i, int64_t in, int64_t out) { return (i * in) / out; }
int64_t adaptive_end(int64_t i, int64_t in, int64_t out) { return ((i + 1) * in + out - 1) / out; }

// The clipped window of an average-pooling output and its divisor.
struct AvgWindow {
  int64_t h0, h1, w0, w1;
  int64_t divisor;
  bool empty() const { return h0 >= h1 || w0 >= w1; }
};

AvgWindow avg_window(const Pool2dArgs& a, const Planes& p, int64_t oh, int64_t ow) {
  if (a.kind == PoolKind::AdaptiveAvg) {
    AvgWindow w{adaptive_start(oh, p.in_h, p.out_h), adaptive_end(oh, p.in_h, p.out_h),
                adaptive_start(ow, p.in_w, p.out_w), adaptive_end(ow, p.in_w, p.out_w), 0};
    w.divisor = (w.h1 - w.h0) * (w.w1 - w.w0);
    return w;
  }
  int64_t h0 = oh * a.stride[0] - a.padding[0], w0 = ow * a.stride[1] - a.padding[1];
  int64_t h1 = std::min(h0 + a.kernel[0], p.in_h + a.padding[0]);
  int64_t w1 = std::min(w0 + a.kernel[1], p.in_w + a.padding[1]);
  const int64_t padded_size = (h1 - h0) * (w1 - w0);
  h0 = std::max<int64_t>(h0, 0);
  w0 = std::max<int64_t>(w0, 0);
  h1 = std::min(h1, p.in_h);
  w1 = std::min(w1, p.in_w);
  int64_t divisor = a.divisor_override != 0 ? a.divisor_override
                    : a.count_include_pad   ? padded_size
                                            : (h1 - h0) * (w1 - w0);
  return {h0, h1, w0, w1, divisor};
}

// Whether every window is the 2x2 block at (2*oh, 2*ow): kernel 2, stride 2, no padding, no
// dilation, and no ceil_mode window hanging over the edge. The CNNs of the examples pool this
// way, and this shape gets its own loop (max_plane_2x2).
bool is_plain_2x2(const Pool2dArgs& a, const Planes& p) {
  return a.kernel[0] == 2 && a.kernel[1] == 2 && a.stride[0] == 2 && a.stride[1] == 2 && a.padding[0] == 0 &&
         a.padding[1] == 0 && a.dilation[0] == 1 && a.dilation[1] == 1 && 2 * p.out_h <= p.in_h &&
         2 * p.out_w <= p.in_w;
}

// max_plane for plain 2x2 windows: the same taps in the same order, with the same NaN rule,
// written without the general window arithmetic so that GCC vectorises it (the general loop
// took about 4 ns per tap, a fifth of the MNIST CNN's training step). The outputs are taken in
// chunks that run on across rows: one loop copies each window's 4 taps into a column each (as
// the compute type), a second finds each maximum and which of its taps that is, as a 32-bit
// number (as wide as a float lane), and a third turns the tap numbers into int64 indices. The
// copy lets the second loop, the one that branches per element when it is not vectorised, run
// vectorised over whole chunks even where rows are narrow: the MNIST CNN's are 12 outputs wide,
// which left most of a row-by-row loop in its scalar tail (a bfloat16 step spent 14% there).
template <typename T>
void max_plane_2x2(const T* x, T* y, int64_t* idx, const Planes& p) {
  using S = compute_t<T>;
  constexpr int64_t kChunk = 256;
  S taps[4][kChunk];
  int32_t taps_won[kChunk];
  const int64_t total = p.out_h * p.out_w;
  for (int64_t begin = 0; begin < total; begin += kChunk) {
    const int64_t n = std::min(kChunk, total - begin);
    int64_t oh = begin / p.out_w, ow = begin % p.out_w;
    for (int64_t j = 0; j < n; ++j) {
      const T* window = x + 2 * oh * p.in_w + 2 * ow;
      taps[0][j] = static_cast<S>(window[0]);
      taps[1][j] = static_cast<S>(window[1]);
      taps[2][j] = static_cast<S>(window[p.in_w]);
      taps[3][j] = static_cast<S>(window[p.in_w + 1]);
      if (++ow == p.out_w) ow = 0, ++oh;
    }
    T* out = y + begin;
    for (int64_t j = 0; j < n; ++j) {
      // The first tap beats -inf unless it is -inf, whose index is the first tap's anyway.
      S best = taps[0][j];
      int32_t at = 0;
      for (int32_t k = 1; k < 4; ++k) {
        const S tap = taps[k][j];
        const bool take = (tap > best) | (tap != tap);
        best = take ? tap : best;
        at = take ? k : at;
      }
      out[j] = T(best);
      taps_won[j] = at;
    }
    if (idx == nullptr) continue;
    int64_t* out_index = idx + begin;
    oh = begin / p.out_w, ow = begin % p.out_w;
    for (int64_t j = 0; j < n; ++j) {
      out_index[j] = 2 * oh * p.in_w + 2 * ow + (taps_won[j] >> 1) * p.in_w + (taps_won[j] & 1);
      if (++ow == p.out_w) ow = 0, ++oh;
    }
  }
}

template <typename T>
void max_plane(const T* x, T* y, int64_t* idx, const Pool2dArgs& a, const Planes& p) {
  using S = compute_t<T>;
  if (is_plain_2x2(a, p)) return max_plane_2x2(x, y, idx, p);
  for (int64_t oh = 0; oh < p.out_h; ++oh) {
    int64_t h0 = oh * a.stride[0] - a.padding[0];
    const int64_t h1 = std::min(h0 + (a.kernel[0] - 1) * a.dilation[0] + 1, p.in_h);
    while (h0 < 0) h0 += a.dilation[0];
    for (int64_t ow = 0; ow < p.out_w; ++ow) {
      int64_t w0 = ow * a.stride[1] - a.padding[1];
      const int64_t w1 = std::min(w0 + (a.kernel[1] - 1) * a.dilation[1] + 1, p.in_w);
      while (w0 < 0) w0 += a.dilation[1];
      int64_t best_index = h0 * p.in_w + w0;
      S best = -std::numeric_limits<S>::infinity();
      for (int64_t ih = h0; ih < h1; ih += a.dilation[0]) {
        for (int64_t iw = w0; iw < w1; iw += a.dilation[1]) {
          const int64_t i = ih * p.in_w + iw;
          const S v = static_cast<S>(x[i]);
          // Selects instead of a branch: on random data the comparison is unpredictable.
          // v != v is the NaN test.
          const bool take = (v > best) | (v != v);
          best = take ? v : best;
          best_index = take ? i : best_index;
        }
      }
      const int64_t o = oh * p.out_w + ow;
      y[o] = T(best);
      if (idx != nullptr) idx[o] = best_index;
    }
  }
}

template <typename T>
void avg_plane(const T* x, T* y, const Pool2dArgs& a, const Planes& p) {
  using S = compute_t<T>;
  for (int64_t oh = 0; oh < p.out_h; ++oh) {
    for (int64_t ow = 0; ow < p.out_w; ++ow) {
      const AvgWindow win = avg_window(a, p, oh, ow);
      S sum = 0;
      if (!win.empty()) {
        for (int64_t ih = win.h0; ih < win.h1; ++ih) {
          const T* row = x + ih * p.in_w;
          for (int64_t iw = win.w0; iw < win.w1; ++iw) sum += static_cast<S>(row[iw]);
        }
        sum /= static_cast<S>(win.divisor);
      }
      y[oh * p.out_w + ow] = T(sum);
    }
  }
}

template <typename T>
void max_plane_backward(const T* gy, const int64_t* idx, T* gx, const Planes& p) {
  using S = compute_t<T>;
  const int64_t in_numel = p.in_h * p.in_w;
  // Accumulating in S keeps 16-bit gradients from rounding at every overlap.
  if constexpr (std::is_same_v<S, T>) {
    std::fill(gx, gx + in_numel, T(0));
    for (int64_t o = 0; o < p.out_h * p.out_w; ++o) {
      gx[idx[o]] += gy[o];
    }
  } else {
    std::vector<S> acc(static_cast<size_t>(in_numel), S(0));
    for (int64_t o = 0; o < p.out_h * p.out_w; ++o) {
      acc[static_cast<size_t>(idx[o])] += static_cast<S>(gy[o]);
    }
    for (int64_t i = 0; i < in_numel; ++i) gx[i] = T(acc[static_cast<size_t>(i)]);
  }
}

template <typename T>
void avg_plane_backward(const T* gy, T* gx, const Pool2dArgs& a, const Planes& p) {
  using S = compute_t<T>;
  const int64_t in_numel = p.in_h * p.in_w;
  std::vector<S> acc;
  S* g = nullptr;
  if constexpr (std::is_same_v<S, T>) {
    g = gx;
  } else {
    acc.assign(static_cast<size_t>(in_numel), S(0));
    g = acc.data();
  }
  std::fill(g, g + in_numel, S(0));
  for (int64_t oh = 0; oh < p.out_h; ++oh) {
    for (int64_t ow = 0; ow < p.out_w; ++ow) {
      const AvgWindow win = avg_window(a, p, oh, ow);
      if (win.empty()) continue;
      const S share = static_cast<S>(gy[oh * p.out_w + ow]) / static_cast<S>(win.divisor);
      for (int64_t ih = win.h0; ih < win.h1; ++ih) {
        S* row = g + ih * p.in_w;
        for (int64_t iw = win.w0; iw < win.w1; ++iw) row[iw] += share;
      }
    }
  }
  if constexpr (!std::is_same_v<S, T>) {
    for (int64_t i = 0; i < in_numel; ++i) gx[i] = T(acc[static_cast<size_t>(i)]);
  }
}

}  // namespace

void CpuBackend::pool2d(const TensorView& x, const TensorView& out, const TensorView& indices, const Pool2dArgs& args) {
  const char* op = pool2d_name(args.kind, /*backward=*/false);
  check_pool2d_views(x, out, indices, args);
  const Planes p = planes_of(x, out);
  const bool with_indices = args.kind == PoolKind::Max && indices.data != nullptr;
  if (out.numel() == 0) return;
  EMBER_CHECK(p.in_h > 0 && p.in_w > 0, "[", op, "] empty input planes");
  const int64_t in_plane = p.in_h * p.in_w, out_plane = p.out_h * p.out_w;
  dispatch_floating(x.dtype, op, [&]<typename T>() {
    const T* xs = x.ptr<const T>();
    T* ys = out.ptr<T>();
    int64_t* is = with_indices ? indices.ptr<int64_t>() : nullptr;
    base::parallel_for(p.count, plane_grain(p), [&](int64_t begin, int64_t end) {
      for (int64_t c = begin; c < end; ++c) {
        if (args.kind == PoolKind::Max) {
          max_plane(xs + c * in_plane, ys + c * out_plane, is ? is + c * out_plane : nullptr, args, p);
        } else {
          avg_plane(xs + c * in_plane, ys + c * out_plane, args, p);
        }
      }
    });
  });
}

void CpuBackend::pool2d_backward(const TensorView& grad_out, const TensorView& indices, const TensorView& grad_x,
                                 const Pool2dArgs& args) {
  const char* op = pool2d_name(args.kind, /*backward=*/true);
  check_pool2d_backward_views(grad_out, indices, grad_x, args);
  const Planes p = planes_of(grad_x, grad_out);
  if (args.kind == PoolKind::Max) {
    // Checked here, once, because an exception cannot leave the parallel loop below.
    const int64_t* is = indices.ptr<const int64_t>();
    const int64_t limit = grad_x.sizes[2] * grad_x.sizes[3];
    const int64_t count = indices.numel();
    for (int64_t o = 0; o < count; ++o) {
      EMBER_CHECK(is[o] >= 0 && is[o] < limit, "[", op, "] index ", is[o], " is out of range for a plane of ", limit,
                  " elements");
    }
  }
  if (grad_x.numel() == 0) return;
  const int64_t in_plane = p.in_h * p.in_w, out_plane = p.out_h * p.out_w;
  dispatch_floating(grad_x.dtype, op, [&]<typename T>() {
    const T* gy = grad_out.ptr<const T>();
    T* gx = grad_x.ptr<T>();
    const int64_t* is = args.kind == PoolKind::Max ? indices.ptr<const int64_t>() : nullptr;
    base::parallel_for(p.count, plane_grain(p), [&](int64_t begin, int64_t end) {
      for (int64_t c = begin; c < end; ++c) {
        if (args.kind == PoolKind::Max) {
          max_plane_backward(gy + c * out_plane, is + c * out_plane, gx + c * in_plane, p);
        } else {
          avg_plane_backward(gy + c * out_plane, gx + c * in_plane, args, p);
        }
      }
    });
  });
}

}  // namespace ember::cpu
