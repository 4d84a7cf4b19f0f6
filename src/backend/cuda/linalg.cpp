// The linalg family on CUDA: the singular value decomposition through cuSOLVER's 64-bit gesvd
// (cusolverDnXgesvd), one matrix after another on the current stream. Each matrix's info goes
// straight to the device view the front end reads, so nothing here waits for the GPU.
//
// cuSOLVER is column-major and its gesvd takes only rows >= columns. A row-major m x n matrix A
// lies in memory as the column-major n x m matrix A^T = V S U^T. When n >= m that is handed over
// as it is, and the outputs land in ember's layout directly: cuSOLVER's U (column-major n x k) is
// ember's row-major Vh [k, n], its VT (column-major k x m) ember's row-major U [m, k]. When n < m,
// A is first transposed into a column-major copy (cuBLAS geam), decomposed, and its U and VT are
// transposed into ember's U and Vh.
#include <cublas_v2.h>
#include <cusolverDn.h>

#include <algorithm>
#include <cstddef>
#include <cstdint>
#include <vector>

#include "backend/cuda/cuda_backend.h"
#include "backend/cuda/handle_pool.h"
#include "backend/cuda/runtime.h"
#include "core/check.h"

namespace ember::cuda_impl {

namespace {

[[noreturn]] void throw_cusolver_error(cusolverStatus_t status, const char* call) {
  if (status == CUSOLVER_STATUS_ALLOC_FAILED) {
    throw OutOfMemoryError(detail::concat("svd: cuSOLVER could not allocate memory (", call, ")"));
  }
  detail::fail("svd: cuSOLVER's ", call, " failed with status ", static_cast<int>(status));
}

#define EMBER_CUSOLVER_CHECK(call)                                                    \
  do {                                                                                \
    const cusolverStatus_t ember_st_ = (call);                                        \
    if (ember_st_ != CUSOLVER_STATUS_SUCCESS) throw_cusolver_error(ember_st_, #call); \
  } while (0)

/// cuSOLVER handles per device and thread, as cuBLAS's (handle_pool.h says why).
HandlePool<cusolverDnHandle_t>& cusolver_pool() {
  static auto* pool = new HandlePool<cusolverDnHandle_t>(kMaxDevices, [](int device) {  // leaked: used until exit
    DeviceGuard guard(device);
    cusolverDnHandle_t h = nullptr;
    EMBER_CUSOLVER_CHECK(cusolverDnCreate(&h));
    return h;
  });
  return *pool;
}

cusolverDnHandle_t cusolver_handle(int device) {
  const cusolverDnHandle_t h = cusolver_pool().get(device);
  EMBER_CUSOLVER_CHECK(cusolverDnSetStream(h, current_stream(device)));
  return h;
}

/// cuSOLVER's options for the 64-bit API (the defaults), released at the end of the call.
class SolverParams {
 public:
  SolverParams() { EMBER_CUSOLVER_CHECK(cusolverDnCreateParams(&params_)); }
  ~SolverParams() { cusolverDnDestroyParams(params_); }
  SolverParams(const SolverParams&) = delete;
  SolverParams& operator=(const SolverParams&) = delete;
  cusolverDnParams_t get() const { return params_; }

 private:
  cusolverDnParams_t params_ = nullptr;
};

/// dst (column-major rows x cols, leading dimension ldd) = the transpose of src (column-major
/// cols x rows, leading dimension lds).
template <typename T>
void transpose(cublasHandle_t h, int64_t rows, int64_t cols, const T* src, int64_t lds, T* dst, int64_t ldd) {
  const T one = 1, zero = 0;
  const int r = static_cast<int>(rows), c = static_cast<int>(cols);
  const int ls = static_cast<int>(std::max<int64_t>(1, lds)), ld = static_cast<int>(std::max<int64_t>(1, ldd));
  // beta = 0 with B = C (not transposed) is cuBLAS's in-place form: C is only written.
  if constexpr (sizeof(T) == sizeof(float)) {
    EMBER_CUBLAS_CHECK(cublasSgeam(h, CUBLAS_OP_T, CUBLAS_OP_N, r, c, &one, src, ls, &zero, dst, ld, dst, ld), "svd");
  } else {
    EMBER_CUBLAS_CHECK(cublasDgeam(h, CUBLAS_OP_T, CUBLAS_OP_N, r, c, &one, src, ls, &zero, dst, ld, dst, ld), "svd");
  }
}

/// Whether a [B, rows, cols] view is a stack of dense row-major matrices.
bool dense_rows(const TensorView& v) {
  return (v.strides[2] == 1 || v.sizes[2] <= 1) && v.strides[1] == v.sizes[2] &&
         (v.strides[0] == v.sizes[1] * v.sizes[2] || v.sizes[0] <= 1);
}

constexpr size_t kAlign = 256;
size_t aligned(size_t bytes) { return (bytes + kAlign - 1) / kAlign * kAlign; }

template <typename T>
void svd_batch(const TensorView& a, bool full_matrices, const TensorView& u, const TensorView& s, const TensorView& vh,
               const TensorView& info) {
  const int64_t batch = a.sizes[0], m = a.sizes[1], n = a.sizes[2], k = std::min(m, n);
  if (batch == 0) return;
  const bool vectors = u.data != nullptr;
  EMBER_CHECK(dense_rows(a) && s.strides[1] == 1 && (!vectors || (dense_rows(u) && dense_rows(vh))),
              "svd: the CUDA kernel expects dense row-major matrices");
  // The front end answers matrices with a zero dimension itself.
  EMBER_CHECK(k > 0, "svd: the CUDA kernel expects matrices without a zero dimension");
  const cudaDataType type = sizeof(T) == sizeof(float) ? CUDA_R_32F : CUDA_R_64F;
  const int64_t u_cols = full_matrices ? m : k;   // ember's U [m, u_cols]
  const int64_t vh_rows = full_matrices ? n : k;  // ember's Vh [vh_rows, n]
  const signed char job = !vectors ? 'N' : full_matrices ? 'A' : 'S';

  DeviceGuard guard(a.device_index);
  const cusolverDnHandle_t solver = cusolver_handle(a.device_index);
  const SolverParams params;
  // cuSOLVER's problem: rows x cols, column-major, with rows >= cols.
  const bool wide = n >= m;  // A^T as it lies in memory is already such a problem
  const int64_t rows = wide ? n : m, cols = wide ? m : n;
  // Its outputs: U (rows x left_cols, leading dimension rows) and VT (right_rows x cols).
  const int64_t left_cols = !vectors ? 0 : full_matrices ? rows : k;
  const int64_t right_rows = !vectors ? 0 : full_matrices ? cols : k;
  const int64_t ldu = std::max<int64_t>(1, rows), ldvt = std::max<int64_t>(1, right_rows);

  size_t device_bytes = 0, host_bytes = 0;
  EMBER_CUSOLVER_CHECK(cusolverDnXgesvd_bufferSize(solver, params.get(), job, job, rows, cols, type, nullptr, rows,
                                                   type, nullptr, type, nullptr, ldu, type, nullptr, ldvt, type,
                                                   &device_bytes, &host_bytes));
  // One allocation: the solver's workspace, then, for a tall A, the column-major copy of A and
  // cuSOLVER's U and VT before they are transposed into ember's layout.
  const size_t solver_bytes = aligned(device_bytes);
  const size_t a_bytes = wide ? 0 : aligned(static_cast<size_t>(m * n) * sizeof(T));
  const size_t u_bytes = wide ? 0 : aligned(static_cast<size_t>(rows * left_cols) * sizeof(T));
  const size_t vt_bytes = wide ? 0 : aligned(static_cast<size_t>(right_rows * cols) * sizeof(T));
  const Workspace workspace(solver_bytes + a_bytes + u_bytes + vt_bytes, a.device_index);
  auto* const base = static_cast<unsigned char*>(workspace.data());
  void* const solver_work = base;
  T* const a_col = reinterpret_cast<T*>(base + solver_bytes);
  T* const u_col = reinterpret_cast<T*>(base + solver_bytes + a_bytes);
  T* const vt_col = reinterpret_cast<T*>(base + solver_bytes + a_bytes + u_bytes);
  std::vector<unsigned char> host_work(host_bytes);
  const cublasHandle_t blas = wide ? nullptr : cublas_handle(a.device_index);

  for (int64_t b = 0; b < batch; ++b) {
    T* const a_b = a.ptr<T>() + b * a.strides[0];
    T* const s_b = s.ptr<T>() + b * s.strides[0];
    T* const u_b = vectors ? u.ptr<T>() + b * u.strides[0] : nullptr;
    T* const vh_b = vectors ? vh.ptr<T>() + b * vh.strides[0] : nullptr;
    int* const info_b = info.ptr<int>() + b * info.strides[0];
    if (wide) {
      // cuSOLVER's U is ember's Vh, its VT ember's U (see the top of the file).
      EMBER_CUSOLVER_CHECK(cusolverDnXgesvd(solver, params.get(), job, job, rows, cols, type, a_b, rows, type, s_b,
                                            type, vh_b, ldu, type, u_b, ldvt, type, solver_work, device_bytes,
                                            host_work.data(), host_bytes, info_b));
    } else {
      transpose(blas, m, n, a_b, n, a_col, m);
      EMBER_CUSOLVER_CHECK(cusolverDnXgesvd(solver, params.get(), job, job, rows, cols, type, a_col, rows, type, s_b,
                                            type, vectors ? u_col : nullptr, ldu, type, vectors ? vt_col : nullptr,
                                            ldvt, type, solver_work, device_bytes, host_work.data(), host_bytes,
                                            info_b));
      if (vectors) {
        transpose(blas, u_cols, m, u_col, ldu, u_b, u_cols);  // column-major u_cols x m: row-major U
        transpose(blas, n, vh_rows, vt_col, ldvt, vh_b, n);   // column-major n x vh_rows: row-major Vh
      }
    }
  }
}

}  // namespace

void CudaBackend::svd(const TensorView& a, bool full_matrices, const TensorView& u, const TensorView& s,
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

}  // namespace ember::cuda_impl
