// CpuBackend::channel_moments, channel_grad_sums and channel_affine: the passes of batch_norm and
// group_norm over a contiguous [N, C, S] view (kernels/channel_norm_ops.h).
//
// The statistics run one task per channel, each walking its N runs of S contiguous values and
// accumulating in double; with S == 1 (BatchNorm1d's [N, C]) a task takes a block of channels and
// walks the rows instead, so that its loads stay contiguous. channel_affine runs one task per
// block of (n, c) runs, the coefficients read once per run.
#include <algorithm>
#include <cstdint>
#include <vector>

#include "backend/cpu/cpu_backend.h"
#include "backend/cpu/dispatch.h"
#include "base/parallel.h"
#include "core/check.h"
#include "kernels/channel_norm_ops.h"

namespace ember::cpu {
namespace {

using kernels::ChannelShape;

ChannelShape shape_of(const TensorView& x) {
  EMBER_CHECK(x.ndim() == 3 && x.is_contiguous(), "channel_norm: the kernels take a contiguous [N, C, S] view");
  return {x.sizes[0], x.sizes[1], x.sizes[2]};
}

void check_vector(const TensorView& v, const TensorView& x, const char* what) {
  EMBER_CHECK(v.dtype == x.dtype && v.is_contiguous() && v.numel() == x.sizes[1], "channel_norm: ", what,
              " must be a contiguous vector of x's channels in x's dtype");
}

// The sum of f(i) over [0, n) in double with 8 independent accumulators, so that the additions
// pipeline and vectorise (one accumulator would wait on each addition's latency); a fixed order,
// so the result does not depend on the thread count.
template <typename F>
double sum_of(int64_t n, const F& f) {
  double acc[8] = {};
  int64_t i = 0;
  for (; i + 8 <= n; i += 8)
    for (int j = 0; j < 8; ++j) acc[j] += f(i + j);
  double tail = 0;
  for (; i < n; ++i) tail += f(i);
  return ((acc[0] + acc[1]) + (acc[2] + acc[3])) + ((acc[4] + acc[5]) + (acc[6] + acc[7])) + tail;
}

// Channels per task when S == 1: a block of rows' worth of contiguous loads.
constexpr int64_t kChannelBlock = 64;

// body(c0, c1) over blocks of channels, in parallel: one channel per task when S > 1.
template <typename Body>
void for_channel_blocks(const ChannelShape& sh, const Body& body) {
  const int64_t block = sh.s == 1 ? kChannelBlock : 1;
  const int64_t blocks = (sh.c + block - 1) / block;
  const int64_t work = std::max<int64_t>(1, sh.n * sh.s * block);
  base::parallel_for(blocks, std::max<int64_t>(1, base::kGrainSize / work), [&](int64_t begin, int64_t end) {
    for (int64_t b = begin; b < end; ++b) body(b * block, std::min(sh.c, (b + 1) * block));
  });
}

template <typename T>
void moments_typed(const TensorView& x, const TensorView& mean_view, const TensorView& var_view) {
  const ChannelShape sh = shape_of(x);
  const T* in = x.ptr<const T>();
  T* mean = mean_view.ptr<T>();
  T* var = var_view.ptr<T>();
  const double count = static_cast<double>(sh.n * sh.s);
  for_channel_blocks(sh, [&](int64_t c0, int64_t c1) {
    if (sh.s == 1) {
      double sums[kChannelBlock] = {}, squares[kChannelBlock] = {};
      const int64_t w = c1 - c0;
      for (int64_t n = 0; n < sh.n; ++n)
        for (int64_t j = 0; j < w; ++j) sums[j] += static_cast<double>(in[n * sh.c + c0 + j]);
      for (int64_t j = 0; j < w; ++j) sums[j] /= count;
      for (int64_t n = 0; n < sh.n; ++n)
        for (int64_t j = 0; j < w; ++j) {
          const double d = static_cast<double>(in[n * sh.c + c0 + j]) - sums[j];
          squares[j] += d * d;
        }
      for (int64_t j = 0; j < w; ++j) {
        mean[c0 + j] = static_cast<T>(sums[j]);
        var[c0 + j] = static_cast<T>(squares[j] / count);
      }
      return;
    }
    const int64_t c = c0;
    double sum = 0;
    for (int64_t n = 0; n < sh.n; ++n) {
      const T* run = in + (n * sh.c + c) * sh.s;
      sum += sum_of(sh.s, [run](int64_t i) { return static_cast<double>(run[i]); });
    }
    const double mu = sum / count;
    double squares = 0;
    for (int64_t n = 0; n < sh.n; ++n) {
      const T* run = in + (n * sh.c + c) * sh.s;
      squares += sum_of(sh.s, [run, mu](int64_t i) {
        const double d = static_cast<double>(run[i]) - mu;
        return d * d;
      });
    }
    mean[c] = static_cast<T>(mu);
    var[c] = static_cast<T>(squares / count);
  });
}

template <typename T>
void grad_sums_typed(const TensorView& g, const TensorView& x, const TensorView& m, const TensorView& sum_g_view,
                     const TensorView& sum_gxm_view) {
  const ChannelShape sh = shape_of(x);
  const T* gin = g.ptr<const T>();
  const T* xin = x.ptr<const T>();
  const T* centre = m.ptr<const T>();
  T* sum_g = sum_g_view.ptr<T>();
  T* sum_gxm = sum_gxm_view.ptr<T>();
  for_channel_blocks(sh, [&](int64_t c0, int64_t c1) {
    if (sh.s == 1) {
      double sg[kChannelBlock] = {}, sgx[kChannelBlock] = {};
      const int64_t w = c1 - c0;
      for (int64_t n = 0; n < sh.n; ++n)
        for (int64_t j = 0; j < w; ++j) {
          const int64_t at = n * sh.c + c0 + j;
          const double gv = static_cast<double>(gin[at]);
          sg[j] += gv;
          sgx[j] += gv * (static_cast<double>(xin[at]) - static_cast<double>(centre[c0 + j]));
        }
      for (int64_t j = 0; j < w; ++j) {
        sum_g[c0 + j] = static_cast<T>(sg[j]);
        sum_gxm[c0 + j] = static_cast<T>(sgx[j]);
      }
      return;
    }
    const int64_t c = c0;
    const double mc = static_cast<double>(centre[c]);
    double sg = 0, sgx = 0;
    for (int64_t n = 0; n < sh.n; ++n) {
      const T* gr = gin + (n * sh.c + c) * sh.s;
      const T* xr = xin + (n * sh.c + c) * sh.s;
      sg += sum_of(sh.s, [gr](int64_t i) { return static_cast<double>(gr[i]); });
      sgx += sum_of(sh.s,
                    [gr, xr, mc](int64_t i) { return static_cast<double>(gr[i]) * (static_cast<double>(xr[i]) - mc); });
    }
    sum_g[c] = static_cast<T>(sg);
    sum_gxm[c] = static_cast<T>(sgx);
  });
}

// The coefficient of (n, c) in an [N, C] view (a stride of 0 along N repeats a channel's value);
// 0 for a view with null data.
template <typename T>
T coefficient(const TensorView& v, int64_t n, int64_t c) {
  return v.data == nullptr ? T(0) : v.ptr<const T>()[n * v.strides[0] + c * v.strides[1]];
}

template <typename T>
void affine_typed(const TensorView& x, const TensorView& m, const TensorView& a, const TensorView& b,
                  const TensorView& y, const TensorView& d, const TensorView& out) {
  const ChannelShape sh = shape_of(x);
  const T* xin = x.ptr<const T>();
  const T* yin = y.data == nullptr ? nullptr : y.ptr<const T>();
  T* dst = out.ptr<T>();
  const int64_t runs = sh.n * sh.c;
  base::parallel_for(runs, std::max<int64_t>(1, base::kGrainSize / std::max<int64_t>(1, sh.s)),
                     [&](int64_t begin, int64_t end) {
                       for (int64_t r = begin; r < end; ++r) {
                         const int64_t n = r / sh.c, c = r % sh.c;
                         const T mv = coefficient<T>(m, n, c), av = coefficient<T>(a, n, c),
                                 bv = coefficient<T>(b, n, c), dv = coefficient<T>(d, n, c);
                         const T* xr = xin + r * sh.s;
                         T* o = dst + r * sh.s;
                         if (yin == nullptr) {
                           for (int64_t i = 0; i < sh.s; ++i) o[i] = av * (xr[i] - mv) + bv;
                         } else {
                           const T* yr = yin + r * sh.s;
                           for (int64_t i = 0; i < sh.s; ++i)
                             o[i] = kernels::channel_affine_value(xr[i], mv, av, bv, yr[i], dv);
                         }
                       }
                     });
}

void check_coefficients(const TensorView& v, const TensorView& x, const char* what, bool optional) {
  if (optional && v.data == nullptr) return;
  EMBER_CHECK(v.dtype == x.dtype && v.ndim() == 2 && (v.sizes[0] == x.sizes[0] || v.strides[0] == 0) &&
                  v.sizes[1] == x.sizes[1],
              "channel_norm: ", what, " must be an [N, C] view in x's dtype");
}

template <typename F>
void dispatch_norm(Dtype dtype, const char* op, const F& f) {
  EMBER_CHECK(dtype == kFloat32 || dtype == kFloat64, op, ": the kernel takes float32 or float64, got ",
              dtype_name(dtype));
  if (dtype == kFloat32) {
    f.template operator()<float>();
  } else {
    f.template operator()<double>();
  }
}

}  // namespace

void CpuBackend::channel_moments(const TensorView& x, const TensorView& mean, const TensorView& var) {
  shape_of(x);
  check_vector(mean, x, "mean");
  check_vector(var, x, "var");
  if (x.numel() == 0) return;
  dispatch_norm(x.dtype, "channel_moments", [&]<typename T>() { moments_typed<T>(x, mean, var); });
}

void CpuBackend::channel_grad_sums(const TensorView& g, const TensorView& x, const TensorView& m,
                                   const TensorView& sum_g, const TensorView& sum_gxm) {
  shape_of(x);
  EMBER_CHECK(g.dtype == x.dtype && g.is_contiguous() && g.sizes == x.sizes,
              "channel_grad_sums: g must be contiguous with x's sizes and dtype");
  check_vector(m, x, "m");
  check_vector(sum_g, x, "sum_g");
  check_vector(sum_gxm, x, "sum_gxm");
  if (x.numel() == 0) return;
  dispatch_norm(x.dtype, "channel_grad_sums", [&]<typename T>() { grad_sums_typed<T>(g, x, m, sum_g, sum_gxm); });
}

void CpuBackend::channel_affine(const TensorView& x, const TensorView& m, const TensorView& a, const TensorView& b,
                                const TensorView& y, const TensorView& d, const TensorView& out) {
  shape_of(x);
  EMBER_CHECK(out.dtype == x.dtype && out.is_contiguous() && out.sizes == x.sizes,
              "channel_affine: out must be contiguous with x's sizes and dtype");
  EMBER_CHECK(y.data == nullptr || (y.dtype == x.dtype && y.is_contiguous() && y.sizes == x.sizes && d.data != nullptr),
              "channel_affine: y must be contiguous with x's sizes and dtype, and come with d");
  check_coefficients(m, x, "m", true);
  check_coefficients(a, x, "a", false);
  check_coefficients(b, x, "b", true);
  check_coefficients(d, x, "d", true);
  if (x.numel() == 0) return;
  dispatch_norm(x.dtype, "channel_affine", [&]<typename T>() { affine_typed<T>(x, m, a, b, y, d, out); });
}

}  // namespace ember::cpu
