// CpuBackend::conv2d and conv2d_backward: 2-D convolution on the CPU.
//
// Two implementations:
//  * im2col + GEMM, for every floating dtype: each sample's receptive fields are unrolled into a
//    [Cin/groups * kH * kW, Ho * Wo] matrix so that the convolution is one BLAS product per
//    sample and group (oneDNN's sgemm for float32, OpenBLAS's dgemm for float64, as matmul.cpp).
//    float64 always goes this way: oneDNN has no float64 convolution, and the gradchecks need it.
//  * oneDNN's convolution primitives, float32 only. Primitives are cached per geometry, so a
//    training loop creates each of them once.
// float32 takes the path docs/PERFORMANCE.md ("Convolution") found faster; the environment
// variable EMBER_CONV2D_PATH=onednn|im2col overrides that (the benchmark and tests use it to run
// both). bfloat16 goes to oneDNN's primitives in bfloat16 on CPUs that multiply it natively
// (AVX512-BF16); float16, and bfloat16 elsewhere, are widened to float32, computed there and
// rounded once.
//
// conv2d_backward reads x only for grad_weight and weight only for grad_x, so the front end passes
// the operand no wanted gradient needs with its sizes alone (null data) and need not keep it alive.
#include <cblas.h>
#include <dnnl_version.h>

#include <algorithm>
#include <array>
#include <climits>
#include <cstdint>
#include <cstdlib>
#include <cstring>
#include <dnnl.hpp>
#include <memory>
#include <optional>
#include <string_view>
#include <type_traits>
#include <unordered_map>
#include <utility>
#include <vector>

#include "backend/cpu/cpu_backend.h"
#include "backend/cpu/defer_signals.h"
#include "backend/cpu/dispatch.h"
#include "backend/cpu/onednn_matmul.h"
#include "backend/cpu/onednn_primitives.h"
#include "base/parallel.h"
#include "core/check.h"

namespace ember::cpu {
namespace {

// ------------------------------------------------------------------------------- geometry

struct ConvShape {
  int64_t n, c, h, w;  // input
  int64_t o, kh, kw;   // weight [o, c / groups, kh, kw]
  int64_t ho, wo;      // output
  int64_t groups;
  int64_t sh, sw, ph, pw, dh, dw;

  int64_t cg() const { return c / groups; }
  int64_t og() const { return o / groups; }
  int64_t k() const { return cg() * kh * kw; }  // rows of one group's column matrix
  int64_t plane() const { return ho * wo; }
  // A 1x1 kernel with unit stride and no padding reads the input as its own column matrix.
  bool pointwise() const { return kh == 1 && kw == 1 && sh == 1 && sw == 1 && ph == 0 && pw == 0; }
};

ConvShape shape_of(const TensorView& x, const TensorView& weight, const TensorView& out, const Conv2dArgs& a) {
  EMBER_CHECK(x.ndim() == 4 && weight.ndim() == 4 && out.ndim() == 4, "[cpu conv2d] expects 4-D views, got ", x.ndim(),
              "-D, ", weight.ndim(), "-D and ", out.ndim(), "-D");
  EMBER_CHECK(x.dtype == weight.dtype && x.dtype == out.dtype, "[cpu conv2d] dtypes differ: ", dtype_name(x.dtype),
              ", ", dtype_name(weight.dtype), ", ", dtype_name(out.dtype));
  EMBER_CHECK(x.is_contiguous() && weight.is_contiguous() && out.is_contiguous(),
              "[cpu conv2d] views must be contiguous");
  ConvShape s{x.sizes[0],      x.sizes[1],   x.sizes[2],    x.sizes[3],   weight.sizes[0], weight.sizes[2],
              weight.sizes[3], out.sizes[2], out.sizes[3],  a.groups,     a.stride[0],     a.stride[1],
              a.padding[0],    a.padding[1], a.dilation[0], a.dilation[1]};
  EMBER_CHECK(s.groups > 0 && s.c % s.groups == 0 && s.o % s.groups == 0 && weight.sizes[1] == s.cg() &&
                  out.sizes[0] == s.n && out.sizes[1] == s.o,
              "[cpu conv2d] sizes do not match: input ", detail::shape_str(x.sizes), ", weight ",
              detail::shape_str(weight.sizes), ", output ", detail::shape_str(out.sizes), ", groups ", s.groups);
  return s;
}

// ------------------------------------------------------------------------------- BLAS

// Products inside ember's own per-sample loop must run on the calling thread: oneDNN's sgemm and
// OpenBLAS size their teams from omp_get_max_threads(), which is per task.
class BlasOnCallingThread {
 public:
  BlasOnCallingThread() {
#ifdef _OPENMP
    if (omp_in_parallel()) {
      saved_ = omp_get_max_threads();
      omp_set_num_threads(1);
    }
#endif
  }
  ~BlasOnCallingThread() {
#ifdef _OPENMP
    if (saved_ > 0) omp_set_num_threads(saved_);
#endif
  }
  BlasOnCallingThread(const BlasOnCallingThread&) = delete;
  BlasOnCallingThread& operator=(const BlasOnCallingThread&) = delete;

 private:
  int saved_ = 0;
};

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
    BlasOnCallingThread blas;
    for (int64_t chunk = first; chunk < last; ++chunk) f(chunk, s.n * chunk / chunks, s.n * (chunk + 1) / chunks);
  });
  return chunks;
}

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

// ------------------------------------------------------------------------------- oneDNN path

using dnnl::memory;

/// One operand: its plain (user) layout, the layout the primitive chose, and the reorder between
/// them when they differ (into the primitive for inputs, out of it for outputs).
struct Operand {
  memory::desc user, inner;
  std::optional<dnnl::reorder> reorder;
  memory::desc reorder_scratchpad;

  static Operand input(const memory::desc& user, const memory::desc& inner) { return make(user, inner, true); }
  static Operand output(const memory::desc& user, const memory::desc& inner) { return make(user, inner, false); }
  static Operand make(const memory::desc& user, const memory::desc& inner, bool into_inner) {
    Operand op{user, inner, std::nullopt, memory::desc()};
    if (user == inner) return op;
    dnnl::reorder::primitive_desc pd(onednn_engine(), into_inner ? user : inner, onednn_engine(),
                                     into_inner ? inner : user, user_scratchpad());
    op.reorder = dnnl::reorder(pd);
    op.reorder_scratchpad = pd.scratchpad_desc();
    return op;
  }
  /// The memory the primitive reads: the user's buffer, or a reordered copy of it.
  memory bind_input(const void* data, int slot, dnnl::stream& stream) const {
    memory mem(user, onednn_engine(), const_cast<void*>(data));
    if (!reorder) return mem;
    memory staged(inner, onednn_engine(), staging(slot, inner.get_size()));
    execute(*reorder, reorder_scratchpad, stream, {{DNNL_ARG_FROM, mem}, {DNNL_ARG_TO, staged}});
    return staged;
  }
  /// The memory the primitive writes; finish_output copies it to the user's buffer when staged.
  memory bind_output(void* data) const {
    return reorder ? memory(inner, onednn_engine(), staging(2, inner.get_size())) : memory(user, onednn_engine(), data);
  }
  void finish_output(memory written, void* data, dnnl::stream& stream) const {
    if (!reorder) return;
    execute(*reorder, reorder_scratchpad, stream,
            {{DNNL_ARG_FROM, written}, {DNNL_ARG_TO, memory(user, onednn_engine(), data)}});
  }
};

/// Plain descriptors and the geometry in oneDNN's terms (dilation counts skipped taps, so d - 1).
struct OneDnnGeometry {
  memory::desc src, weights, bias, dst;
  memory::desc src_any, weights_any, dst_any;
  memory::dims strides, dilates, pad_l, pad_r;
};

OneDnnGeometry onednn_geometry(const ConvShape& s, bool with_bias, memory::data_type dt) {
  using tag = memory::format_tag;
  const auto f32 = dt;  // every operand in the same dtype (float32, or bfloat16 computed natively)
  const memory::dims src_dims{s.n, s.c, s.h, s.w};
  const memory::dims dst_dims{s.n, s.o, s.ho, s.wo};
  const memory::dims w_dims =
      s.groups == 1 ? memory::dims{s.o, s.c, s.kh, s.kw} : memory::dims{s.groups, s.og(), s.cg(), s.kh, s.kw};
  OneDnnGeometry g;
  g.src = memory::desc(src_dims, f32, tag::nchw);
  g.dst = memory::desc(dst_dims, f32, tag::nchw);
  g.weights = memory::desc(w_dims, f32, s.groups == 1 ? tag::oihw : tag::goihw);
  if (with_bias) g.bias = memory::desc({s.o}, f32, tag::x);
  g.src_any = memory::desc(src_dims, f32, tag::any);
  g.dst_any = memory::desc(dst_dims, f32, tag::any);
  g.weights_any = memory::desc(w_dims, f32, tag::any);
  g.strides = {s.sh, s.sw};
  g.dilates = {s.dh - 1, s.dw - 1};
  g.pad_l = {s.ph, s.pw};
  // PyTorch floors the output size; oneDNN wants the right padding that produces exactly it.
  g.pad_r = {(s.ho - 1) * s.sh + (s.kh - 1) * s.dh + 1 - s.h - s.ph,
             (s.wo - 1) * s.sw + (s.kw - 1) * s.dw + 1 - s.w - s.pw};
  return g;
}

// oneDNN 3 folded the operation descriptors into the primitive descriptors' constructors.
dnnl::convolution_forward::primitive_desc forward_pd(const OneDnnGeometry& g, bool with_bias) {
  const memory::desc bias = with_bias ? g.bias : memory::desc();
#if DNNL_VERSION_MAJOR >= 3
  return {onednn_engine(),
          dnnl::prop_kind::forward_training,
          dnnl::algorithm::convolution_direct,
          g.src_any,
          g.weights_any,
          bias,
          g.dst_any,
          g.strides,
          g.dilates,
          g.pad_l,
          g.pad_r,
          user_scratchpad()};
#else
  dnnl::convolution_forward::desc desc(dnnl::prop_kind::forward_training, dnnl::algorithm::convolution_direct,
                                       g.src_any, g.weights_any, bias, g.dst_any, g.strides, g.dilates, g.pad_l,
                                       g.pad_r);
  return {desc, user_scratchpad(), onednn_engine()};
#endif
}

struct ForwardPrimitive {
  dnnl::convolution_forward prim;
  memory::desc scratchpad;
  Operand src, weights, dst;
};

struct BackwardDataPrimitive {
  dnnl::convolution_backward_data prim;
  memory::desc scratchpad;
  Operand diff_dst, weights, diff_src;
};

struct BackwardWeightsPrimitive {
  dnnl::convolution_backward_weights prim;
  memory::desc scratchpad;
  Operand src, diff_dst, diff_weights;
};

std::shared_ptr<const ForwardPrimitive> make_forward(const ConvShape& s, bool with_bias, memory::data_type dt) {
  const OneDnnGeometry g = onednn_geometry(s, with_bias, dt);
  auto pd = forward_pd(g, with_bias);
  return std::make_shared<const ForwardPrimitive>(
      ForwardPrimitive{dnnl::convolution_forward(pd), pd.scratchpad_desc(), Operand::input(g.src, pd.src_desc()),
                       Operand::input(g.weights, pd.weights_desc()), Operand::output(g.dst, pd.dst_desc())});
}

std::shared_ptr<const BackwardDataPrimitive> make_backward_data(const ConvShape& s, memory::data_type dt) {
  const OneDnnGeometry g = onednn_geometry(s, false, dt);
  const auto hint = forward_pd(g, false);
#if DNNL_VERSION_MAJOR >= 3
  dnnl::convolution_backward_data::primitive_desc pd(onednn_engine(), dnnl::algorithm::convolution_direct, g.src_any,
                                                     g.weights_any, g.dst_any, g.strides, g.dilates, g.pad_l, g.pad_r,
                                                     hint, user_scratchpad());
#else
  dnnl::convolution_backward_data::desc desc(dnnl::algorithm::convolution_direct, g.src_any, g.weights_any, g.dst_any,
                                             g.strides, g.dilates, g.pad_l, g.pad_r);
  dnnl::convolution_backward_data::primitive_desc pd(desc, user_scratchpad(), onednn_engine(), hint);
#endif
  return std::make_shared<const BackwardDataPrimitive>(BackwardDataPrimitive{
      dnnl::convolution_backward_data(pd), pd.scratchpad_desc(), Operand::input(g.dst, pd.diff_dst_desc()),
      Operand::input(g.weights, pd.weights_desc()), Operand::output(g.src, pd.diff_src_desc())});
}

std::shared_ptr<const BackwardWeightsPrimitive> make_backward_weights(const ConvShape& s, bool with_bias,
                                                                      memory::data_type dt) {
  const OneDnnGeometry g = onednn_geometry(s, with_bias, dt);
  const auto hint = forward_pd(g, with_bias);
  const memory::desc bias = with_bias ? g.bias : memory::desc();
#if DNNL_VERSION_MAJOR >= 3
  dnnl::convolution_backward_weights::primitive_desc pd(onednn_engine(), dnnl::algorithm::convolution_direct, g.src_any,
                                                        g.weights_any, bias, g.dst_any, g.strides, g.dilates, g.pad_l,
                                                        g.pad_r, hint, user_scratchpad());
#else
  dnnl::convolution_backward_weights::desc desc(dnnl::algorithm::convolution_direct, g.src_any, g.weights_any, bias,
                                                g.dst_any, g.strides, g.dilates, g.pad_l, g.pad_r);
  dnnl::convolution_backward_weights::primitive_desc pd(desc, user_scratchpad(), onednn_engine(), hint);
#endif
  return std::make_shared<const BackwardWeightsPrimitive>(BackwardWeightsPrimitive{
      dnnl::convolution_backward_weights(pd), pd.scratchpad_desc(), Operand::input(g.src, pd.src_desc()),
      Operand::input(g.dst, pd.diff_dst_desc()), Operand::output(g.weights, pd.diff_weights_desc())});
}

using CacheKey = std::array<int64_t, 17>;

CacheKey key_of(const ConvShape& s, int64_t kind, bool with_bias, memory::data_type dt) {
  return {kind * 256 + static_cast<int64_t>(dt),
          s.n,
          s.c,
          s.h,
          s.w,
          s.o,
          s.kh,
          s.kw,
          s.ho,
          s.wo,
          s.groups,
          s.sh,
          s.sw,
          s.ph,
          s.pw,
          s.dh,
          s.dw * 2 + (with_bias ? 1 : 0)};
}

PrimitiveCache<CacheKey, ForwardPrimitive>& forward_cache() {
  static PrimitiveCache<CacheKey, ForwardPrimitive> cache;
  return cache;
}
PrimitiveCache<CacheKey, BackwardDataPrimitive>& backward_data_cache() {
  static PrimitiveCache<CacheKey, BackwardDataPrimitive> cache;
  return cache;
}
PrimitiveCache<CacheKey, BackwardWeightsPrimitive>& backward_weights_cache() {
  static PrimitiveCache<CacheKey, BackwardWeightsPrimitive> cache;
  return cache;
}

/// x, w, bias and out hold `dt` elements (float32, or bfloat16 where the CPU has it natively).
void onednn_forward(const void* x, const void* w, const void* bias, void* out, const ConvShape& s,
                    memory::data_type dt) {
  const bool with_bias = bias != nullptr;
  auto p = forward_cache().get(key_of(s, 0, with_bias, dt), [&] { return make_forward(s, with_bias, dt); });
  dnnl::stream stream(onednn_engine());
  memory src = p->src.bind_input(x, 0, stream);
  memory wei = p->weights.bind_input(w, 1, stream);
  memory dst = p->dst.bind_output(out);
  std::unordered_map<int, memory> args{{DNNL_ARG_SRC, src}, {DNNL_ARG_WEIGHTS, wei}, {DNNL_ARG_DST, dst}};
  if (with_bias) {
    args.emplace(DNNL_ARG_BIAS,
                 memory(memory::desc({s.o}, dt, memory::format_tag::x), onednn_engine(), const_cast<void*>(bias)));
  }
  execute(p->prim, p->scratchpad, stream, std::move(args));
  p->dst.finish_output(dst, out, stream);
  stream.wait();
}

/// As onednn_forward; the bias gradient alone is the caller's (bias_grad), when grad_w is null.
void onednn_backward(const void* grad_out, const void* x, const void* w, const ConvShape& s, void* grad_x, void* grad_w,
                     void* grad_b, memory::data_type dt) {
  dnnl::stream stream(onednn_engine());
  if (grad_x != nullptr) {
    auto p = backward_data_cache().get(key_of(s, 1, false, dt), [&] { return make_backward_data(s, dt); });
    memory diff_dst = p->diff_dst.bind_input(grad_out, 0, stream);
    memory wei = p->weights.bind_input(w, 1, stream);
    memory diff_src = p->diff_src.bind_output(grad_x);
    execute(p->prim, p->scratchpad, stream,
            {{DNNL_ARG_DIFF_DST, diff_dst}, {DNNL_ARG_WEIGHTS, wei}, {DNNL_ARG_DIFF_SRC, diff_src}});
    p->diff_src.finish_output(diff_src, grad_x, stream);
  }
  if (grad_w != nullptr) {
    // The bias gradient comes out of the same pass when both are wanted.
    const bool with_bias = grad_b != nullptr;
    auto p = backward_weights_cache().get(key_of(s, 2, with_bias, dt),
                                          [&] { return make_backward_weights(s, with_bias, dt); });
    memory src = p->src.bind_input(x, 0, stream);
    memory diff_dst = p->diff_dst.bind_input(grad_out, 1, stream);
    memory diff_wei = p->diff_weights.bind_output(grad_w);
    std::unordered_map<int, memory> args{
        {DNNL_ARG_SRC, src}, {DNNL_ARG_DIFF_DST, diff_dst}, {DNNL_ARG_DIFF_WEIGHTS, diff_wei}};
    if (with_bias) {
      args.emplace(DNNL_ARG_DIFF_BIAS, memory(memory::desc({s.o}, dt, memory::format_tag::x), onednn_engine(), grad_b));
    }
    execute(p->prim, p->scratchpad, stream, std::move(args));
    p->diff_weights.finish_output(diff_wei, grad_w, stream);
  }
  stream.wait();
}

// ------------------------------------------------------------------------------- float32 path choice

// im2col was as fast or faster on the MNIST CNN's layers, 1 and 2 threads (docs/PERFORMANCE.md,
// "Convolution"); oneDNN loses its edge to the reorders between NCHW and its blocked layouts.
constexpr bool kOneDnnByDefault = false;

bool use_onednn(const ConvShape& s) {
  // An empty reduction (no input channels) is left to the GEMM path, which writes the zeros.
  if (s.k() == 0) return false;
  const char* env = std::getenv("EMBER_CONV2D_PATH");
  if (env == nullptr || *env == '\0') return kOneDnnByDefault;
  const std::string_view path(env);
  EMBER_CHECK(path == "onednn" || path == "im2col", "EMBER_CONV2D_PATH must be \"onednn\" or \"im2col\", got \"", path,
              "\"");
  return path == "onednn";
}

void float_forward(const float* x, const float* w, const float* bias, float* out, const ConvShape& s) {
  if (use_onednn(s)) {
    onednn_forward(x, w, bias, out, s, memory::data_type::f32);
  } else {
    im2col_forward(x, w, bias, out, s);
  }
}

void float_backward(const float* grad_out, const float* x, const float* w, const ConvShape& s, float* grad_x,
                    float* grad_w, float* grad_b) {
  if (use_onednn(s)) {
    onednn_backward(grad_out, x, w, s, grad_x, grad_w, grad_b, memory::data_type::f32);
    if (grad_w == nullptr && grad_b != nullptr) bias_grad(grad_out, s, grad_b);
    return;
  }
  if (grad_b != nullptr) bias_grad(grad_out, s, grad_b);
  if (grad_x != nullptr || grad_w != nullptr) im2col_backward(grad_out, x, w, s, grad_x, grad_w);
}

// ------------------------------------------------------------------------------- 16-bit floats

/// bfloat16 through oneDNN's primitives where the CPU multiplies it natively (docs/PERFORMANCE.md
/// §14): float32 accumulation inside, each result rounded once, as the widening path does.
bool native_bfloat16(const ConvShape& s) { return s.k() != 0 && onednn_native_bfloat16(); }

template <typename T>
std::vector<float> widen(const TensorView& v) {
  // The backward pass may pass an operand it will not read with no data.
  if (v.data == nullptr) return {};
  const T* p = v.ptr<const T>();
  std::vector<float> out(static_cast<size_t>(v.numel()));
  for (size_t i = 0; i < out.size(); ++i) out[i] = static_cast<float>(p[i]);
  return out;
}

template <typename T>
void narrow_into(const std::vector<float>& src, const TensorView& dst) {
  T* p = dst.ptr<T>();
  for (size_t i = 0; i < src.size(); ++i) p[i] = T(src[i]);
}

}  // namespace

void CpuBackend::conv2d(const TensorView& x, const TensorView& weight, const TensorView& bias, const TensorView& out,
                        const Conv2dArgs& args) {
  const ConvShape s = shape_of(x, weight, out, args);
  const DeferSignals defer;  // oneDNN's GEMM kernels run below
  const bool has_bias = bias.data != nullptr;
  EMBER_CHECK(!has_bias || (bias.dtype == x.dtype && bias.ndim() == 1 && bias.sizes[0] == s.o),
              "[cpu conv2d] bias must be a ", dtype_name(x.dtype), " vector of ", s.o, " elements");
  if (out.numel() == 0) return;
  dispatch_floating(x.dtype, "conv2d", [&]<typename T>() {
    if constexpr (std::is_same_v<T, double>) {
      im2col_forward(x.ptr<const double>(), weight.ptr<const double>(), has_bias ? bias.ptr<const double>() : nullptr,
                     out.ptr<double>(), s);
    } else if constexpr (std::is_same_v<T, float>) {
      float_forward(x.ptr<const float>(), weight.ptr<const float>(), has_bias ? bias.ptr<const float>() : nullptr,
                    out.ptr<float>(), s);
    } else if (std::is_same_v<T, BFloat16> && native_bfloat16(s)) {
      onednn_forward(x.data, weight.data, has_bias ? bias.data : nullptr, out.data, s, memory::data_type::bf16);
    } else {
      const std::vector<float> wx = widen<T>(x), ww = widen<T>(weight);
      const std::vector<float> wb = has_bias ? widen<T>(bias) : std::vector<float>();
      std::vector<float> wout(static_cast<size_t>(out.numel()));
      float_forward(wx.data(), ww.data(), has_bias ? wb.data() : nullptr, wout.data(), s);
      narrow_into<T>(wout, out);
    }
  });
}

void CpuBackend::conv2d_backward(const TensorView& grad_out, const TensorView& x, const TensorView& weight,
                                 const Conv2dArgs& args, const TensorView& grad_x, const TensorView& grad_weight,
                                 const TensorView& grad_bias) {
  const ConvShape s = shape_of(x, weight, grad_out, args);
  const DeferSignals defer;  // oneDNN's GEMM kernels run below
  const bool want_x = grad_x.data != nullptr, want_w = grad_weight.data != nullptr, want_b = grad_bias.data != nullptr;
  EMBER_CHECK(!want_x || (grad_x.dtype == x.dtype && grad_x.numel() == x.numel()),
              "[cpu conv2d_backward] grad_x must match the input");
  EMBER_CHECK(!want_w || (grad_weight.dtype == x.dtype && grad_weight.numel() == weight.numel()),
              "[cpu conv2d_backward] grad_weight must match the weight");
  EMBER_CHECK(!want_b || (grad_bias.dtype == x.dtype && grad_bias.numel() == s.o),
              "[cpu conv2d_backward] grad_bias must have one element per output channel");
  dispatch_floating(x.dtype, "conv2d_backward", [&]<typename T>() {
    // With no samples (or no outputs) the sums are empty: zero gradients for weight and bias.
    if (s.n == 0 || s.plane() == 0 || s.o == 0) {
      if (want_x) std::fill(grad_x.ptr<T>(), grad_x.ptr<T>() + grad_x.numel(), T(0));
      if (want_w) std::fill(grad_weight.ptr<T>(), grad_weight.ptr<T>() + grad_weight.numel(), T(0));
      if (want_b) std::fill(grad_bias.ptr<T>(), grad_bias.ptr<T>() + grad_bias.numel(), T(0));
      return;
    }
    if constexpr (std::is_same_v<T, double>) {
      if (want_b) bias_grad(grad_out.ptr<const double>(), s, grad_bias.ptr<double>());
      if (want_x || want_w) {
        im2col_backward(grad_out.ptr<const double>(), x.ptr<const double>(), weight.ptr<const double>(), s,
                        want_x ? grad_x.ptr<double>() : nullptr, want_w ? grad_weight.ptr<double>() : nullptr);
      }
    } else if constexpr (std::is_same_v<T, float>) {
      float_backward(grad_out.ptr<const float>(), x.ptr<const float>(), weight.ptr<const float>(), s,
                     want_x ? grad_x.ptr<float>() : nullptr, want_w ? grad_weight.ptr<float>() : nullptr,
                     want_b ? grad_bias.ptr<float>() : nullptr);
    } else if (std::is_same_v<T, BFloat16> && native_bfloat16(s) && (want_x || want_w)) {
      onednn_backward(grad_out.data, x.data, weight.data, s, want_x ? grad_x.data : nullptr,
                      want_w ? grad_weight.data : nullptr, want_b && want_w ? grad_bias.data : nullptr,
                      memory::data_type::bf16);
      if (want_b && !want_w) {  // the bias alone: summed in float32 by the widening path's code
        std::vector<float> gb(static_cast<size_t>(s.o));
        bias_grad(widen<T>(grad_out).data(), s, gb.data());
        narrow_into<T>(gb, grad_bias);
      }
    } else {
      const std::vector<float> wg = widen<T>(grad_out), wx = widen<T>(x), ww = widen<T>(weight);
      std::vector<float> gx(want_x ? static_cast<size_t>(x.numel()) : 0);
      std::vector<float> gw(want_w ? static_cast<size_t>(weight.numel()) : 0);
      std::vector<float> gb(want_b ? static_cast<size_t>(s.o) : 0);
      float_backward(wg.data(), wx.empty() ? nullptr : wx.data(), ww.empty() ? nullptr : ww.data(), s,
                     want_x ? gx.data() : nullptr, want_w ? gw.data() : nullptr, want_b ? gb.data() : nullptr);
      if (want_x) narrow_into<T>(gx, grad_x);
      if (want_w) narrow_into<T>(gw, grad_weight);
      if (want_b) narrow_into<T>(gb, grad_bias);
    }
  });
}

}  // namespace ember::cpu
