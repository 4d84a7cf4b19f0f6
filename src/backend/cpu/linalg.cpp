// The linalg family on the CPU: the singular value decomposition through LAPACK's divide-and-
// conquer driver, sgesdd/dgesdd (the one PyTorch's CPU backend calls), which Debian's OpenBLAS
// ships inside libopenblas.so.
//
// LAPACK is column-major; ember's matrices are row-major. A row-major m x n matrix A is, read in
// column-major order, the n x m matrix A^T = V S U^T. So gesdd is handed A^T as it lies in memory,
// and its outputs land where ember wants them without a transpose: its left singular vectors
// (column-major n x k) are ember's row-major Vh [k, n], and its right ones transposed (column-major
// k x m) are ember's row-major U [m, k].
#include <algorithm>
#include <climits>
#include <cmath>
#include <cstddef>
#include <cstdint>
#include <memory>

#include "backend/cpu/cpu_backend.h"
#include "base/parallel.h"
#include "core/check.h"

extern "C" {
// LAPACK's Fortran entry points (LP64: INTEGER is int). The trailing size_t is the hidden length
// of the CHARACTER argument that gfortran-compiled LAPACKs expect.
void sgesdd_(const char* jobz, const int* m, const int* n, float* a, const int* lda, float* s, float* u, const int* ldu,
             float* vt, const int* ldvt, float* work, const int* lwork, int* iwork, int* info, size_t jobz_len);
void dgesdd_(const char* jobz, const int* m, const int* n, double* a, const int* lda, double* s, double* u,
             const int* ldu, double* vt, const int* ldvt, double* work, const int* lwork, int* iwork, int* info,
             size_t jobz_len);
}

namespace ember::cpu {

namespace {

void gesdd(char jobz, int m, int n, float* a, int lda, float* s, float* u, int ldu, float* vt, int ldvt, float* work,
           int lwork, int* iwork, int* info) {
  sgesdd_(&jobz, &m, &n, a, &lda, s, u, &ldu, vt, &ldvt, work, &lwork, iwork, info, 1);
}
void gesdd(char jobz, int m, int n, double* a, int lda, double* s, double* u, int ldu, double* vt, int ldvt,
           double* work, int lwork, int* iwork, int* info) {
  dgesdd_(&jobz, &m, &n, a, &lda, s, u, &ldu, vt, &ldvt, work, &lwork, iwork, info, 1);
}

/// A batch of row-major matrices [B, rows, cols] as LAPACK can take them: each matrix's rows must
/// be contiguous, their stride becoming the leading dimension. Views laid out otherwise go
/// through a packed scratch copy.
struct MatrixBatch {
  int64_t rows = 0, cols = 0;
  int64_t batch_stride = 0, row_stride = 0, col_stride = 0;
  bool direct = false;  // LAPACK reads/writes the view's own memory

  explicit MatrixBatch(const TensorView& v) {
    rows = v.sizes[1];
    cols = v.sizes[2];
    batch_stride = v.strides[0];
    row_stride = v.strides[1];
    col_stride = v.strides[2];
    // A batch broadcast from one matrix (stride 0) would be overwritten by its first solve.
    direct = (col_stride == 1 || cols <= 1) && row_stride >= std::max<int64_t>(1, cols) &&
             (batch_stride != 0 || v.sizes[0] <= 1);
  }
  int leading_dim() const { return static_cast<int>(direct ? row_stride : std::max<int64_t>(1, cols)); }
  int64_t scratch_elements() const { return direct ? 0 : rows * cols; }
};

template <typename T>
void pack(const T* src, const MatrixBatch& m, T* dst) {
  for (int64_t i = 0; i < m.rows; ++i) {
    for (int64_t j = 0; j < m.cols; ++j) dst[i * m.cols + j] = src[i * m.row_stride + j * m.col_stride];
  }
}

template <typename T>
void unpack(const T* src, const MatrixBatch& m, T* dst) {
  for (int64_t i = 0; i < m.rows; ++i) {
    for (int64_t j = 0; j < m.cols; ++j) dst[i * m.row_stride + j * m.col_stride] = src[i * m.cols + j];
  }
}

/// Every matrix with a zero dimension: no singular values; the full bases are identities.
template <typename T>
void svd_of_empty(const TensorView& u, const TensorView& vh, const TensorView& info, int64_t batch) {
  for (const TensorView* v : {&u, &vh}) {
    if (v->data == nullptr) continue;
    for (int64_t b = 0; b < batch; ++b) {
      for (int64_t i = 0; i < v->sizes[1]; ++i) {
        for (int64_t j = 0; j < v->sizes[2]; ++j) {
          v->ptr<T>()[b * v->strides[0] + i * v->strides[1] + j * v->strides[2]] = i == j ? T(1) : T(0);
        }
      }
    }
  }
  for (int64_t b = 0; b < batch; ++b) info.ptr<int32_t>()[b * info.strides[0]] = 0;
}

template <typename T>
void svd_batch(const TensorView& a, bool full_matrices, const TensorView& u, const TensorView& s, const TensorView& vh,
               const TensorView& info) {
  const int64_t batch = a.sizes[0], m = a.sizes[1], n = a.sizes[2], k = std::min(m, n);
  if (batch == 0) return;
  if (k == 0) return svd_of_empty<T>(u, vh, info, batch);
  EMBER_CHECK(m <= INT_MAX && n <= INT_MAX && m * n <= INT_MAX, "linalg.svd: a matrix of ", m, " x ", n,
              " is too large for LAPACK's 32-bit indices");
  const bool vectors = u.data != nullptr;
  const char jobz = !vectors ? 'N' : full_matrices ? 'A' : 'S';
  // LAPACK's problem: the column-major n x m matrix A^T (see the top of the file).
  const int lapack_rows = static_cast<int>(n), lapack_cols = static_cast<int>(m);

  const MatrixBatch in(a);
  const MatrixBatch left = vectors ? MatrixBatch(u) : in;    // ember's U: LAPACK's VT
  const MatrixBatch right = vectors ? MatrixBatch(vh) : in;  // ember's Vh: LAPACK's U
  const bool s_direct = s.strides[1] == 1;
  const int lda = in.leading_dim();
  const int ldvt = vectors ? left.leading_dim() : 1;
  const int ldu = vectors ? right.leading_dim() : 1;

  // The workspace LAPACK asks for (it depends on the sizes and jobz only), then one allocation
  // for every thread's workspace, integer workspace and scratch copies.
  int lwork = -1, query_info = 0;
  T optimal = 0;
  gesdd(jobz, lapack_rows, lapack_cols, nullptr, lda, nullptr, nullptr, ldu, nullptr, ldvt, &optimal, lwork, nullptr,
        &query_info);
  EMBER_CHECK(query_info == 0, "linalg.svd: LAPACK's workspace query failed (info ", query_info, ")");
  // The size comes back as a floating value; a float can round a large one down, so a little is
  // added.
  lwork = std::max(1, static_cast<int>(std::ceil(static_cast<double>(optimal) * (1.0 + 1e-6))));
  const int64_t per_slot = lwork + in.scratch_elements() + (s_direct ? 0 : k) +
                           (vectors ? left.scratch_elements() + right.scratch_elements() : 0);
  const int64_t iwork_per_slot = 8 * k;

  // Matrices of one batch run side by side, each LAPACK call on one thread; a single matrix (or
  // a batch too small to share) runs on the caller, where the BLAS under LAPACK may use threads.
  constexpr int64_t kWorkPerThread = int64_t{1} << 18;  // ~ m n k multiply-adds worth a thread
  const int64_t work = std::max<int64_t>(1, m * n * k);
  const int64_t slots =
      batch == 1 ? 1
                 : std::clamp<int64_t>(batch * work / kWorkPerThread, 1, std::min<int64_t>(base::num_threads(), batch));
  const size_t bytes = static_cast<size_t>(slots) *
                       (static_cast<size_t>(per_slot) * sizeof(T) + static_cast<size_t>(iwork_per_slot) * sizeof(int));
  const auto buffer = std::make_unique_for_overwrite<unsigned char[]>(bytes);
  T* const scratch = reinterpret_cast<T*>(buffer.get());
  int* const iscratch = reinterpret_cast<int*>(buffer.get() + static_cast<size_t>(slots * per_slot) * sizeof(T));

  base::parallel_for(slots, 1, [&](int64_t first_slot, int64_t end_slot) {
    const base::SingleThreadedInParallelRegion one_thread;
    for (int64_t slot = first_slot; slot < end_slot; ++slot) {
      T* w = scratch + slot * per_slot;
      T* const lwork_area = w;
      w += lwork;
      T* const a_scratch = w;
      w += in.scratch_elements();
      T* const s_scratch = w;
      w += s_direct ? 0 : k;
      T* const vt_scratch = w;  // ember's U
      w += vectors ? left.scratch_elements() : 0;
      T* const u_scratch = w;  // ember's Vh
      int* const iwork = iscratch + slot * iwork_per_slot;

      for (int64_t b = batch * slot / slots; b < batch * (slot + 1) / slots; ++b) {
        T* const a_b = a.ptr<T>() + b * in.batch_stride;
        T* const a_lapack = in.direct ? a_b : a_scratch;
        if (!in.direct) pack(a_b, in, a_scratch);
        T* const s_b = s.ptr<T>() + b * s.strides[0];
        T* const s_lapack = s_direct ? s_b : s_scratch;
        T* vt_lapack = nullptr;
        T* u_lapack = nullptr;
        if (vectors) {
          vt_lapack = left.direct ? u.ptr<T>() + b * left.batch_stride : vt_scratch;
          u_lapack = right.direct ? vh.ptr<T>() + b * right.batch_stride : u_scratch;
        }
        int status = 0;
        gesdd(jobz, lapack_rows, lapack_cols, a_lapack, lda, s_lapack, u_lapack, ldu, vt_lapack, ldvt, lwork_area,
              lwork, iwork, &status);
        info.ptr<int32_t>()[b * info.strides[0]] = status;
        if (!s_direct) {
          for (int64_t i = 0; i < k; ++i) s_b[i * s.strides[1]] = s_scratch[i];
        }
        if (vectors && !left.direct) unpack(vt_scratch, left, u.ptr<T>() + b * left.batch_stride);
        if (vectors && !right.direct) unpack(u_scratch, right, vh.ptr<T>() + b * right.batch_stride);
      }
    }
  });
}

}  // namespace

void CpuBackend::svd(const TensorView& a, bool full_matrices, const TensorView& u, const TensorView& s,
                     const TensorView& vh, const TensorView& info) {
  EMBER_CHECK(a.ndim() == 3 && s.ndim() == 2 && info.ndim() == 1, "svd: expects a [B, M, N] batch of matrices");
  switch (a.dtype) {
    case kFloat32:
      return svd_batch<float>(a, full_matrices, u, s, vh, info);
    case kFloat64:
      return svd_batch<double>(a, full_matrices, u, s, vh, info);
    default:
      detail::fail("svd: float32 or float64 expected, got ", dtype_name(a.dtype));
  }
}

}  // namespace ember::cpu
