// The im2col path of the CPU's 2-D convolution (conv_paths.h): each sample's receptive fields
// are unrolled into a [Cin/groups * kH * kW, Ho * Wo] matrix so that the convolution is one BLAS
// product per sample and group (oneDNN's sgemm for float32, OpenBLAS's dgemm for float64, as
// matmul.cpp). float64 always goes this way: oneDNN has no float64 convolution, and the
// gradchecks need it.
#include <cblas.h>

#include <algorithm>
#include <climits>
#include <cstdint>
#include <cstring>
#include <dnnl.hpp>
#include <type_traits>
#include <vector>

#ifdef _OPENMP
#include <omp.h>
#endif

#include "backend/cpu/conv_paths.h"
#include "base/parallel.h"
#include "core/check.h"

namespace ember::cpu::conv2d_paths {
namespace {

// ------------------------------------------------------------------------------- BLAS

/// c = op(a) @ op(b) + beta * c, row-major, with op = transpose when the flag is set.
template <typename T>
void gemm(bool trans_a, bool trans_b, int64_t m, int64_t n, int64_t k, const T* a, int64_t lda, const T* b, int64_t ldb,
          T beta, T* c, int64_t ldc) {
  if (m == 0 || n == 0) return;
  if (k == 0) {
    // An empty sum; not every BLAS writes the zeros itself.
    for (int64_t i = 0; i < m; ++i) {
      for (int64_t j = 0; j < n; ++j) c[i * ldc + j] = beta == T(0) ? T(0) : beta * c[i * ldc + j];
    }
    return;
  }
  if constexpr (std::is_same_v<T, float>) {
    const dnnl_status_t status =
        dnnl_sgemm(trans_a ? 'T' : 'N', trans_b ? 'T' : 'N', m, n, k, 1.0f, a, lda, b, ldb, beta, c, ldc);
    EMBER_CHECK(status == dnnl_success, "[conv2d] oneDNN sgemm failed with status ", static_cast<int>(status));
  } else {
    static_assert(std::is_same_v<T, double>);
    EMBER_CHECK(std::max({m, n, k, lda, ldb, ldc}) <= INT_MAX,
                "[conv2d] a float64 convolution is too large for the BLAS (32-bit sizes)");
    cblas_dgemm(CblasRowMajor, trans_a ? CblasTrans : CblasNoTrans, trans_b ? CblasTrans : CblasNoTrans,
                static_cast<int>(m), static_cast<int>(n), static_cast<int>(k), 1.0, a, static_cast<int>(lda), b,
                static_cast<int>(ldb), beta, c, static_cast<int>(ldc));
  }
}

// ------------------------------------------------------------------------------- im2col path

/// The output columns [lo, hi) whose input column ow*stride - pad + offset lies inside [0, w).
std::pair<int64_t, int64_t> valid_range(int64_t out_len, int64_t in_len, int64_t stride, int64_t pad, int64_t offset) {
  const int64_t first = pad - offset;  // ow * stride >= first
  const int64_t lo = first <= 0 ? 0 : (first + stride - 1) / stride;
  const int64_t end = in_len + pad - offset;  // ow * stride < end
  const int64_t hi = end <= 0 ? 0 : (end + stride - 1) / stride;
  return {std::min(lo, out_len), std::clamp(hi, std::min(lo, out_len), out_len)};
}

/// Copies n elements between buffers that do not overlap, without a library call: im2col copies
/// one output row at a time (24 floats for the MNIST CNN's conv2), and a memmove call per row
/// cost more than the copying (5% of a cnn training step). Whole 64-byte blocks, then one last
/// block that overlaps the previous one, so no per-element tail.
template <typename T>
void copy_row(const T* src, int64_t n, T* dst) {
  constexpr int64_t kBlock = 64 / static_cast<int64_t>(sizeof(T));
  if (n < kBlock) {
    for (int64_t i = 0; i < n; ++i) dst[i] = src[i];
    return;
  }
  int64_t i = 0;
  for (; i + kBlock <= n; i += kBlock) std::memcpy(dst + i, src + i, 64);
  if (i < n) std::memcpy(dst + n - kBlock, src + n - kBlock, 64);
}

/// Unrolls cg input planes into col [cg * kh * kw, ho * wo] (rows ld apart, ld >= ho * wo);
/// out-of-image taps read zero.
template <typename T>
void im2col(const T* x, const ConvShape& s, T* col, int64_t ld) {
  for (int64_t c = 0; c < s.cg(); ++c) {
    for (int64_t i = 0; i < s.kh; ++i) {
      for (int64_t j = 0; j < s.kw; ++j) {
        T* row = col + ((c * s.kh + i) * s.kw + j) * ld;
        const auto [lo, hi] = valid_range(s.wo, s.w, s.sw, s.pw, j * s.dw);
        for (int64_t oh = 0; oh < s.ho; ++oh) {
          T* dst = row + oh * s.wo;
          const int64_t ih = oh * s.sh - s.ph + i * s.dh;
          if (ih < 0 || ih >= s.h) {
            std::fill(dst, dst + s.wo, T(0));
            continue;
          }
          // Input column of output column ow: ow * sw + shift, inside the row for ow in [lo, hi).
          const T* src = x + (c * s.h + ih) * s.w;
          const int64_t shift = j * s.dw - s.pw;
          std::fill(dst, dst + lo, T(0));
          if (s.sw == 1) {
            copy_row(src + lo + shift, hi - lo, dst + lo);
          } else {
            for (int64_t ow = lo; ow < hi; ++ow) dst[ow] = src[ow * s.sw + shift];
          }
          std::fill(dst + hi, dst + s.wo, T(0));
        }
      }
    }
  }
}

/// The adjoint of im2col: adds each column entry back onto the input position it was read from.
template <typename T>
void col2im_add(const T* col, const ConvShape& s, T* x) {
  for (int64_t c = 0; c < s.cg(); ++c) {
    for (int64_t i = 0; i < s.kh; ++i) {
      for (int64_t j = 0; j < s.kw; ++j) {
        const T* row = col + ((c * s.kh + i) * s.kw + j) * s.plane();
        const auto [lo, hi] = valid_range(s.wo, s.w, s.sw, s.pw, j * s.dw);
        for (int64_t oh = 0; oh < s.ho; ++oh) {
          const int64_t ih = oh * s.sh - s.ph + i * s.dh;
          if (ih < 0 || ih >= s.h) continue;
          const T* src = row + oh * s.wo;
          T* dst = x + (c * s.h + ih) * s.w;
          const int64_t shift = j * s.dw - s.pw;
          for (int64_t ow = lo; ow < hi; ++ow) dst[ow * s.sw + shift] += src[ow];
        }
      }
    }
  }
}

// Samples are spread over threads when one sample's product is small (each thread then runs its
// BLAS single-threaded); a big sample is left to the BLAS's own threading.
constexpr int64_t kSampleParallelMacs = 64 * 64 * 64;

/// Calls f(chunk, begin, end) for `chunks` disjoint sample ranges covering [0, n), in parallel.
template <typename F>
int64_t for_sample_chunks(const ConvShape& s, const F& f) {
  const int64_t macs = std::max<int64_t>(1, s.o * s.k() * s.plane());
  const int64_t grain = std::max<int64_t>(1, kSampleParallelMacs / macs);
  const int64_t chunks = std::clamp<int64_t>(s.n / grain, 1, std::max(1, base::num_threads()));
  base::parallel_for(chunks, 1, [&](int64_t first, int64_t last) {
    base::SingleThreadedInParallelRegion blas;  // products inside the per-sample loop
    for (int64_t chunk = first; chunk < last; ++chunk) f(chunk, s.n * chunk / chunks, s.n * (chunk + 1) / chunks);
  });
  return chunks;
}

/// gw += the weight gradient of samples [begin, end), one product per sample and group. (Taking
/// several samples per product needs grad_out regathered into a new buffer; on the MNIST CNN the
/// page faults of that buffer cost more than the BLAS calls it saves.)
template <typename T>
void weight_grad_range(const T* grad_out, const T* x, const ConvShape& s, int64_t begin, int64_t end, T* gw) {
  const int64_t plane = s.plane(), k = s.k();
  std::vector<T> col(s.pointwise() ? 0 : static_cast<size_t>(k * plane));
  for (int64_t n = begin; n < end; ++n) {
    for (int64_t g = 0; g < s.groups; ++g) {
      const T* cols = x + (n * s.c + g * s.cg()) * s.h * s.w;
      if (!s.pointwise()) {
        im2col(cols, s, col.data(), plane);
        cols = col.data();
      }
      const T* go = grad_out + (n * s.o + g * s.og()) * plane;
      gemm<T>(false, true, s.og(), k, plane, go, plane, cols, plane, T(1), gw + g * s.og() * k, k);
    }
  }
}

}  // namespace

template <typename T>
void im2col_forward(const T* x, const T* w, const T* bias, T* out, const ConvShape& s) {
  const int64_t plane = s.plane(), k = s.k();
  for_sample_chunks(s, [&](int64_t, int64_t begin, int64_t end) {
    std::vector<T> col(s.pointwise() ? 0 : static_cast<size_t>(k * plane));
    for (int64_t n = begin; n < end; ++n) {
      for (int64_t g = 0; g < s.groups; ++g) {
        const T* xg = x + (n * s.c + g * s.cg()) * s.h * s.w;
        const T* cols = xg;
        if (!s.pointwise()) {
          im2col(xg, s, col.data(), plane);
          cols = col.data();
        }
        T* yg = out + (n * s.o + g * s.og()) * plane;
        gemm<T>(false, false, s.og(), plane, k, w + g * s.og() * k, k, cols, plane, T(0), yg, plane);
        if (bias != nullptr) {
          for (int64_t oc = 0; oc < s.og(); ++oc) {
            const T b = bias[g * s.og() + oc];
            T* row = yg + oc * plane;
            for (int64_t p = 0; p < plane; ++p) row[p] += b;
          }
        }
      }
    }
  });
}

/// Sum of grad_out over batch and positions, per output channel.
template <typename T>
void bias_grad(const T* grad_out, const ConvShape& s, T* grad_bias) {
  // Independent lanes per row, so the adds vectorise instead of waiting on one another; rows are
  // then summed in double, so a large batch loses no digits.
  constexpr int64_t kLanes = 16;
  base::parallel_for(s.o, std::max<int64_t>(1, base::kGrainSize / std::max<int64_t>(1, s.n * s.plane())),
                     [&](int64_t begin, int64_t end) {
                       for (int64_t oc = begin; oc < end; ++oc) {
                         double total = 0;
                         for (int64_t n = 0; n < s.n; ++n) {
                           const T* row = grad_out + (n * s.o + oc) * s.plane();
                           T lanes[kLanes] = {};
                           int64_t p = 0;
                           for (; p + kLanes <= s.plane(); p += kLanes) {
                             for (int64_t l = 0; l < kLanes; ++l) lanes[l] += row[p + l];
                           }
                           for (; p < s.plane(); ++p) lanes[0] += row[p];
                           for (int64_t l = 0; l < kLanes; ++l) total += static_cast<double>(lanes[l]);
                         }
                         grad_bias[oc] = static_cast<T>(total);
                       }
                     });
}

template <typename T>
void im2col_backward(const T* grad_out, const T* x, const T* w, const ConvShape& s, T* grad_x, T* grad_w) {
  const int64_t plane = s.plane(), k = s.k();
  const int64_t w_numel = s.o * k;
  // Each chunk of samples accumulates its own weight gradient; chunk 0 writes straight into grad_w.
  std::vector<std::vector<T>> partial(static_cast<size_t>(std::max(1, base::num_threads())));
  if (grad_w != nullptr) std::fill(grad_w, grad_w + w_numel, T(0));
  const int64_t chunks = for_sample_chunks(s, [&](int64_t chunk, int64_t begin, int64_t end) {
    if (grad_w != nullptr) {
      T* gw = grad_w;
      if (chunk > 0) {
        partial[static_cast<size_t>(chunk)].assign(static_cast<size_t>(w_numel), T(0));
        gw = partial[static_cast<size_t>(chunk)].data();
      }
      weight_grad_range(grad_out, x, s, begin, end, gw);
    }
    if (grad_x == nullptr) return;
    std::vector<T> dcol(s.pointwise() ? 0 : static_cast<size_t>(k * plane));
    for (int64_t n = begin; n < end; ++n) {
      for (int64_t g = 0; g < s.groups; ++g) {
        const T* go = grad_out + (n * s.o + g * s.og()) * plane;
        const T* wg = w + g * s.og() * k;
        T* gxg = grad_x + (n * s.c + g * s.cg()) * s.h * s.w;
        if (s.pointwise()) {
          gemm<T>(true, false, k, plane, s.og(), wg, k, go, plane, T(0), gxg, plane);
        } else {
          gemm<T>(true, false, k, plane, s.og(), wg, k, go, plane, T(0), dcol.data(), plane);
          std::fill(gxg, gxg + s.cg() * s.h * s.w, T(0));
          col2im_add(dcol.data(), s, gxg);
        }
      }
    }
  });
  if (grad_w != nullptr) {
    for (int64_t chunk = 1; chunk < chunks; ++chunk) {
      const T* p = partial[static_cast<size_t>(chunk)].data();
      for (int64_t i = 0; i < w_numel; ++i) grad_w[i] += p[i];
    }
  }
}

template void im2col_forward<float>(const float*, const float*, const float*, float*, const ConvShape&);
template void im2col_forward<double>(const double*, const double*, const double*, double*, const ConvShape&);
template void im2col_backward<float>(const float*, const float*, const float*, const ConvShape&, float*, float*);
template void im2col_backward<double>(const double*, const double*, const double*, const ConvShape&, double*, double*);
template void bias_grad<float>(const float*, const ConvShape&, float*);
template void bias_grad<double>(const double*, const ConvShape&, double*);

}  // namespace ember::cpu::conv2d_paths
