// CpuBackend::matmul: batched matrix products.
//
// float32 goes to oneDNN's sgemm and float64 to OpenBLAS's dgemm (oneDNN has no float64 GEMM);
// docs/PERFORMANCE.md has the measurements behind the split. bfloat16 goes to oneDNN's matmul
// primitive on CPUs that multiply it natively (AVX512-BF16); float16, and bfloat16 elsewhere, are
// widened to float32, multiplied there and rounded once, as PyTorch's CPU kernels do. Integer products use a
// plain loop that wraps like PyTorch's (two's complement, modulo 2^bits).
//
// Operand views reach the BLAS without a copy when one of their two inner strides is 1: a view
// whose rows are strided but whose columns are adjacent is a transposed matrix to the BLAS, which
// is what x @ w.t() (every Linear layer) produces.
#include <cblas.h>
#include <dnnl.h>

#include <algorithm>
#include <climits>
#include <cstdint>
#include <optional>
#include <type_traits>
#include <vector>

#include "backend/cpu/cpu_backend.h"
#include "backend/cpu/defer_signals.h"
#include "backend/cpu/dispatch.h"
#include "backend/cpu/onednn_matmul.h"
#include "base/parallel.h"
#include "core/check.h"

#if DNNL_CPU_THREADING_RUNTIME != DNNL_RUNTIME_OMP
#error "ember needs the OpenMP build of oneDNN, so that it shares ember's thread pool"
#endif

namespace ember::cpu {
namespace {

/// One [rows, cols] matrix slice as a row-major BLAS sees it: stored as is (ld = row stride) or
/// stored transposed (ld = column stride).
struct BlasOperand {
  bool transposed = false;
  int64_t ld = 1;
};

/// How to hand a strided [rows, cols] slice to a BLAS, or nothing when neither inner stride is 1
/// (or the leading dimension would be too small, as in overlapping or broadcast views).
std::optional<BlasOperand> blas_operand(int64_t rows, int64_t cols, int64_t row_stride, int64_t col_stride) {
  // A dimension of size 1 is never stepped over, so its stride is free: each test below picks
  // the value that makes its layout valid.
  const int64_t min_row_ld = std::max<int64_t>(cols, 1);
  const bool dense_rows = cols <= 1 || col_stride == 1;
  const int64_t row_ld = rows <= 1 ? min_row_ld : row_stride;
  if (dense_rows && row_ld >= min_row_ld) return BlasOperand{false, row_ld};

  const int64_t min_col_ld = std::max<int64_t>(rows, 1);
  const bool dense_columns = rows <= 1 || row_stride == 1;
  const int64_t col_ld = cols <= 1 ? min_col_ld : col_stride;
  if (dense_columns && col_ld >= min_col_ld) return BlasOperand{true, col_ld};
  return std::nullopt;
}

/// Copies a strided [rows, cols] slice into a dense row-major buffer, converting to Dst.
template <typename Dst, typename Src>
void pack_rows(const Src* src, int64_t rows, int64_t cols, int64_t row_stride, int64_t col_stride, Dst* dst) {
  for (int64_t i = 0; i < rows; ++i) {
    const Src* row = src + i * row_stride;
    Dst* out = dst + i * cols;
    if (col_stride == 1) {
      for (int64_t j = 0; j < cols; ++j) out[j] = static_cast<Dst>(static_cast<compute_t<Src>>(row[j]));
    } else {
      for (int64_t j = 0; j < cols; ++j) out[j] = static_cast<Dst>(static_cast<compute_t<Src>>(row[j * col_stride]));
    }
  }
}

/// A [rows, cols] slice of an operand: its first element and its two inner strides.
template <typename T>
struct Slice {
  const T* data;
  int64_t row_stride, col_stride;
};

/// Sizes of one product: [m, k] @ [k, n] -> [m, n], written with row stride ldc.
struct ProductShape {
  int64_t m, n, k, ldc;
};

// Accumulation type of the direct loop: the element type for floating point, uint64 for
// integers so that overflow wraps (defined behaviour) exactly as PyTorch's int64 arithmetic does;
// narrowing the sum back to a smaller integer type then keeps its low bits, which is the same
// result a wrapping accumulator of that type would give.
template <typename T>
using direct_acc_t = std::conditional_t<std::is_integral_v<T>, uint64_t, T>;

template <typename T>
direct_acc_t<T> widen(T v) {
  if constexpr (std::is_integral_v<T>) {
    return static_cast<uint64_t>(static_cast<int64_t>(v));
  } else {
    return v;
  }
}

/// c = a @ b by an i-k-j loop over column blocks (a block of accumulators stays in L1 while a row of
/// a streams over the matching block of b). Used for integers and for products too small to be
/// worth a BLAS call.
template <typename T>
void direct_product(Slice<T> a, Slice<T> b, T* c, const ProductShape& s, int64_t row_begin, int64_t row_end) {
  using Acc = direct_acc_t<T>;
  constexpr int64_t kColumnBlock = 256;
  Acc acc[kColumnBlock];
  for (int64_t j0 = 0; j0 < s.n; j0 += kColumnBlock) {
    const int64_t width = std::min(kColumnBlock, s.n - j0);
    for (int64_t i = row_begin; i < row_end; ++i) {
      std::fill(acc, acc + width, Acc{});
      for (int64_t p = 0; p < s.k; ++p) {
        const Acc av = widen(a.data[i * a.row_stride + p * a.col_stride]);
        const T* brow = b.data + p * b.row_stride + j0 * b.col_stride;
        if (b.col_stride == 1) {
          for (int64_t j = 0; j < width; ++j) acc[j] += av * widen(brow[j]);
        } else {
          for (int64_t j = 0; j < width; ++j) acc[j] += av * widen(brow[j * b.col_stride]);
        }
      }
      T* crow = c + i * s.ldc + j0;
      for (int64_t j = 0; j < width; ++j) crow[j] = static_cast<T>(acc[j]);
    }
  }
}

// Products with at most this many multiply-adds skip the BLAS: oneDNN's sgemm costs ~0.6 us per
// call however small the product. Measured crossover (docs/PERFORMANCE.md): the loop is ahead up
// to 8x8x8 and behind from 10x10x10.
constexpr int64_t kDirectMaxMacs = 512;

// Batched products smaller than this many multiply-adds each are spread over threads by batch
// (the BLAS then runs single-threaded inside); bigger ones are threaded by the BLAS itself.
constexpr int64_t kBatchParallelMacs = 64 * 64 * 64;

// OpenBLAS takes sizes and leading dimensions as 32-bit ints.
void check_blas_int(int64_t largest) {
  EMBER_CHECK(largest <= INT_MAX, "[matmul] a float64 size or stride of ", largest,
              " is too large for the BLAS (32-bit sizes)");
}

/// Whether an a @ b.t() product goes to oneDNN's matmul primitive rather than its sgemm: on
/// several threads (where the transposed sgemm falls behind; on one thread the two are even),
/// outside a parallel region, and big enough that a primitive per shape is worth caching.
bool use_matmul_primitive(const ProductShape& s) {
#ifdef _OPENMP
  if (omp_in_parallel() || omp_get_max_threads() < 2) return false;
#endif
  return s.m * s.n * s.k >= kBatchParallelMacs;
}

/// One float32 or float64 product through the BLAS; operands must already be BLAS-compatible.
template <typename T>
void blas_product(const T* a, BlasOperand la, const T* b, BlasOperand lb, T* c, const ProductShape& s) {
  base::SingleThreadedInParallelRegion single_threaded;
  if constexpr (std::is_same_v<T, float>) {
    if (!la.transposed && lb.transposed && use_matmul_primitive(s)) {
      onednn_matmul_b_transposed(a, la.ld, b, lb.ld, c, s.ldc, s.m, s.n, s.k);
      return;
    }
    dnnl_status_t status = dnnl_sgemm(la.transposed ? 'T' : 'N', lb.transposed ? 'T' : 'N', s.m, s.n, s.k, 1.0f, a,
                                      la.ld, b, lb.ld, 0.0f, c, s.ldc);
    EMBER_CHECK(status == dnnl_success, "[matmul] oneDNN sgemm failed with status ", static_cast<int>(status), " for ",
                s.m, "x", s.k, " @ ", s.k, "x", s.n);
  } else {
    static_assert(std::is_same_v<T, double>);
    check_blas_int(std::max({s.m, s.n, s.k, la.ld, lb.ld, s.ldc}));
    cblas_dgemm(CblasRowMajor, la.transposed ? CblasTrans : CblasNoTrans, lb.transposed ? CblasTrans : CblasNoTrans,
                static_cast<int>(s.m), static_cast<int>(s.n), static_cast<int>(s.k), 1.0, a, static_cast<int>(la.ld), b,
                static_cast<int>(lb.ld), 0.0, c, static_cast<int>(s.ldc));
  }
}

/// One float32/float64 product with strided operands: direct loop when tiny, else the BLAS,
/// packing an operand only when the BLAS cannot read it in place.
template <typename T>
void floating_product(Slice<T> a, Slice<T> b, T* c, const ProductShape& s, std::vector<T>& scratch) {
  if (s.m * s.n * s.k <= kDirectMaxMacs) {
    direct_product(a, b, c, s, 0, s.m);
    return;
  }
  std::optional<BlasOperand> la = blas_operand(s.m, s.k, a.row_stride, a.col_stride);
  std::optional<BlasOperand> lb = blas_operand(s.k, s.n, b.row_stride, b.col_stride);
  const int64_t a_packed = la ? 0 : s.m * s.k;
  const int64_t b_packed = lb ? 0 : s.k * s.n;
  if (a_packed + b_packed > 0) scratch.resize(static_cast<size_t>(a_packed + b_packed));
  const T* a_ptr = a.data;
  const T* b_ptr = b.data;
  if (!la) {
    pack_rows(a.data, s.m, s.k, a.row_stride, a.col_stride, scratch.data());
    a_ptr = scratch.data();
    la = BlasOperand{false, std::max<int64_t>(s.k, 1)};
  }
  if (!lb) {
    pack_rows(b.data, s.k, s.n, b.row_stride, b.col_stride, scratch.data() + a_packed);
    b_ptr = scratch.data() + a_packed;
    lb = BlasOperand{false, std::max<int64_t>(s.n, 1)};
  }
  blas_product(a_ptr, *la, b_ptr, *lb, c, s);
}

/// The per-call geometry shared by every dtype path.
struct BatchGeometry {
  int64_t batch, m, n, k;
  int64_t a_batch_stride, b_batch_stride, out_batch_stride, out_row_stride;
  ProductShape shape() const { return {m, n, k, out_row_stride}; }
};

/// Calls products(begin, end) on ranges of batch entries: split across threads when the entries
/// are small (each then runs its BLAS single-threaded), otherwise all at once on this thread, where
/// the BLAS threads each product.
template <typename F>
void for_batch_ranges(const BatchGeometry& g, const F& products) {
  const int64_t macs = g.m * g.n * g.k;
  if (g.batch > 1 && macs < kBatchParallelMacs) {
    base::parallel_for(g.batch, std::max<int64_t>(1, kBatchParallelMacs / std::max<int64_t>(macs, 1)), products);
  } else {
    products(int64_t{0}, g.batch);
  }
}

/// Whether the products go to the BLAS (oneDNN's kernels, which must not take signals).
bool uses_blas(const BatchGeometry& g) { return g.m * g.n * g.k > kDirectMaxMacs; }

template <typename T>
void floating_matmul(const TensorView& a, const TensorView& b, const TensorView& out, const BatchGeometry& g) {
  std::optional<DeferSignals> defer;
  if (uses_blas(g)) defer.emplace();
  const T* a_base = a.ptr<const T>();
  const T* b_base = b.ptr<const T>();
  T* out_base = out.ptr<T>();
  for_batch_ranges(g, [&](int64_t begin, int64_t end) {
    std::vector<T> scratch;  // packed operands, reused across the range
    for (int64_t i = begin; i < end; ++i) {
      floating_product(Slice<T>{a_base + i * g.a_batch_stride, a.strides[1], a.strides[2]},
                       Slice<T>{b_base + i * g.b_batch_stride, b.strides[1], b.strides[2]},
                       out_base + i * g.out_batch_stride, g.shape(), scratch);
    }
  });
}

/// bfloat16 through oneDNN where the CPU multiplies it natively, when both operands have BLAS
/// layouts: twice the widening path's speed, the same rounding (float32 sums, rounded once).
/// Returns false, having done nothing, where that does not apply.
bool native_bfloat16_matmul(const TensorView& a, const TensorView& b, const TensorView& out, const BatchGeometry& g) {
  if (!uses_blas(g) || !onednn_native_bfloat16()) return false;
#ifdef _OPENMP
  if (omp_in_parallel()) return false;  // ember's own batch loop: the primitives are not for it
#endif
  const std::optional<BlasOperand> ao = blas_operand(g.m, g.k, a.strides[1], a.strides[2]);
  const std::optional<BlasOperand> bo = blas_operand(g.k, g.n, b.strides[1], b.strides[2]);
  if (!ao || !bo) return false;
  DeferSignals defer;
  const BFloat16* a_base = a.ptr<const BFloat16>();
  const BFloat16* b_base = b.ptr<const BFloat16>();
  BFloat16* out_base = out.ptr<BFloat16>();
  for (int64_t i = 0; i < g.batch; ++i) {  // each product threaded by oneDNN
    onednn_matmul_bf16(a_base + i * g.a_batch_stride, ao->transposed ? 1 : ao->ld, ao->transposed ? ao->ld : 1,
                       b_base + i * g.b_batch_stride, bo->transposed ? 1 : bo->ld, bo->transposed ? bo->ld : 1,
                       out_base + i * g.out_batch_stride, g.out_row_stride, g.m, g.n, g.k);
  }
  return true;
}

/// float16/bfloat16: widen both operands to float32, multiply there, round the result once.
template <typename T>
void half_matmul(const TensorView& a, const TensorView& b, const TensorView& out, const BatchGeometry& g) {
  if constexpr (std::is_same_v<T, BFloat16>) {
    if (native_bfloat16_matmul(a, b, out, g)) return;
  }
  std::optional<DeferSignals> defer;
  if (uses_blas(g)) defer.emplace();
  const T* a_base = a.ptr<const T>();
  const T* b_base = b.ptr<const T>();
  T* out_base = out.ptr<T>();
  const int64_t a_count = g.m * g.k, b_count = g.k * g.n, c_count = g.m * g.n;
  for_batch_ranges(g, [&](int64_t begin, int64_t end) {
    std::vector<float> widened(static_cast<size_t>(a_count + b_count + c_count));
    std::vector<float> scratch;
    float* wa = widened.data();
    float* wb = wa + a_count;
    float* wc = wb + b_count;
    for (int64_t i = begin; i < end; ++i) {
      pack_rows(a_base + i * g.a_batch_stride, g.m, g.k, a.strides[1], a.strides[2], wa);
      pack_rows(b_base + i * g.b_batch_stride, g.k, g.n, b.strides[1], b.strides[2], wb);
      floating_product(Slice<float>{wa, g.k, 1}, Slice<float>{wb, g.n, 1}, wc, ProductShape{g.m, g.n, g.k, g.n},
                       scratch);
      T* c = out_base + i * g.out_batch_stride;
      for (int64_t r = 0; r < g.m; ++r) {
        for (int64_t j = 0; j < g.n; ++j) c[r * g.out_row_stride + j] = T(wc[r * g.n + j]);
      }
    }
  });
}

/// Integers: the direct loop, threaded over all rows of all batch entries. b is packed dense first
/// when its columns are not adjacent, so the inner loop always runs over contiguous memory.
template <typename T>
void integer_matmul(const TensorView& a, const TensorView& b, const TensorView& out, const BatchGeometry& g) {
  const T* b_base = b.ptr<const T>();
  int64_t b_batch_stride = g.b_batch_stride, b_row_stride = b.strides[1], b_col_stride = b.strides[2];
  std::vector<T> packed_b;
  if (b_col_stride != 1 && g.n > 1) {
    packed_b.resize(static_cast<size_t>(g.batch * g.k * g.n));
    for (int64_t i = 0; i < g.batch; ++i) {
      pack_rows(b_base + i * g.b_batch_stride, g.k, g.n, b_row_stride, b_col_stride, packed_b.data() + i * g.k * g.n);
    }
    b_base = packed_b.data();
    b_batch_stride = g.k * g.n;
    b_row_stride = g.n;
    b_col_stride = 1;
  }
  const T* a_base = a.ptr<const T>();
  T* out_base = out.ptr<T>();
  const ProductShape shape = g.shape();
  const int64_t row_macs = std::max<int64_t>(g.n * g.k, 1);
  base::parallel_for(g.batch * g.m, std::max<int64_t>(1, kBatchParallelMacs / row_macs),
                     [&](int64_t begin, int64_t end) {
                       while (begin < end) {
                         const int64_t i = begin / g.m;
                         const int64_t row_begin = begin % g.m;
                         const int64_t row_end = std::min(g.m, row_begin + (end - begin));
                         direct_product(Slice<T>{a_base + i * g.a_batch_stride, a.strides[1], a.strides[2]},
                                        Slice<T>{b_base + i * b_batch_stride, b_row_stride, b_col_stride},
                                        out_base + i * g.out_batch_stride, shape, row_begin, row_end);
                         begin += row_end - row_begin;
                       }
                     });
}

}  // namespace

void CpuBackend::matmul(const TensorView& a, const TensorView& b, const TensorView& out) {
  EMBER_CHECK(a.ndim() == 3 && b.ndim() == 3 && out.ndim() == 3, "[cpu matmul] expects 3-D views, got ", a.ndim(),
              "-D, ", b.ndim(), "-D and ", out.ndim(), "-D");
  EMBER_CHECK(a.dtype == b.dtype && a.dtype == out.dtype, "[cpu matmul] dtypes differ: ", dtype_name(a.dtype), ", ",
              dtype_name(b.dtype), ", ", dtype_name(out.dtype));
  BatchGeometry g{};
  g.batch = a.sizes[0];
  g.m = a.sizes[1];
  g.k = a.sizes[2];
  g.n = b.sizes[2];
  EMBER_CHECK(b.sizes[0] == g.batch && b.sizes[1] == g.k && out.sizes[0] == g.batch && out.sizes[1] == g.m &&
                  out.sizes[2] == g.n,
              "[cpu matmul] sizes do not match: ", detail::shape_str(a.sizes), " @ ", detail::shape_str(b.sizes),
              " -> ", detail::shape_str(out.sizes));
  EMBER_CHECK(out.strides[2] == 1 || g.n <= 1, "[cpu matmul] the output's rows must be contiguous");
  if (a.dtype == kBool) detail::fail("\"addmm_impl_cpu_\" not implemented for 'Bool'");
  g.a_batch_stride = a.strides[0];
  g.b_batch_stride = b.strides[0];
  g.out_batch_stride = out.strides[0];
  g.out_row_stride = g.m > 1 ? out.strides[1] : g.n;
  // K = 0 needs no special case: it is below the small-product cutoff, and the direct loop writes
  // the empty sums as zeros.
  if (g.batch == 0 || g.m == 0 || g.n == 0) return;
  dispatch_all(a.dtype, "matmul", [&]<typename T>() {
    if constexpr (std::is_same_v<T, float> || std::is_same_v<T, double>) {
      floating_matmul<T>(a, b, out, g);
    } else if constexpr (std::is_same_v<T, Half> || std::is_same_v<T, BFloat16>) {
      half_matmul<T>(a, b, out, g);
    } else if constexpr (!std::is_same_v<T, bool>) {
      integer_matmul<T>(a, b, out, g);
    }
  });
}

}  // namespace ember::cpu
