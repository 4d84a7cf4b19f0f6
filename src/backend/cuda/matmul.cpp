// CUDA matrix products: every batch in one cublasGemmStridedBatchedEx call.
//
// ember's matrices are row-major and cuBLAS's column-major, so out = a @ b is computed as
// out^T = b^T @ a^T: a row-major matrix with unit column stride *is* its transpose in column
// major, and one with unit row stride is the matrix itself, which cuBLAS transposes on the fly.
// Only an operand with neither unit stride (a strided slice), or with a leading dimension beyond
// the int cuBLAS takes, is first copied to a contiguous scratch buffer. float32 is exact IEEE
// single unless ember::cuda::set_allow_tf32(true); float16 and bfloat16 accumulate in float32,
// as PyTorch's do. Integer products are not offered, exactly as in PyTorch ("addmm_cuda" not
// implemented for 'Long').
#include <cstdint>

#include "backend/cuda/cuda_backend.h"
#include "backend/cuda/gemm_plan.h"
#include "backend/cuda/runtime.h"
#include "core/check.h"

namespace ember::cuda_impl {

namespace {

/// One operand as cuBLAS sees it (already transposed into column-major terms).
struct GemmOperand {
  const void* data;
  cublasOperation_t op;
  int64_t ld;
  int64_t batch_stride;  // cuBLAS takes batch strides as long long: any stride fits
};

/// A row-major [rows, cols] matrix (batched by strides[0]) as the column-major transpose cuBLAS
/// multiplies, or nothing when it cannot read it in place (gemm_layout).
bool as_gemm_operand(const TensorView& v, GemmOperand& g) {
  g.data = v.data;
  g.batch_stride = v.strides[0];
  bool transposed = false;
  const bool direct = gemm_layout(v.sizes[1], v.sizes[2], v.strides[1], v.strides[2], transposed, g.ld);
  g.op = transposed ? CUBLAS_OP_T : CUBLAS_OP_N;
  return direct;
}

}  // namespace

void CudaBackend::matmul(const TensorView& a_in, const TensorView& b_in, const TensorView& out) {
  EMBER_CHECK(a_in.ndim() == 3 && b_in.ndim() == 3 && out.ndim() == 3, "[cuda matmul] expects 3-D views, got ",
              a_in.ndim(), "-D, ", b_in.ndim(), "-D and ", out.ndim(), "-D");
  EMBER_CHECK(a_in.dtype == b_in.dtype && a_in.dtype == out.dtype,
              "[cuda matmul] dtypes differ: ", dtype_name(a_in.dtype), ", ", dtype_name(b_in.dtype), ", ",
              dtype_name(out.dtype));
  const int64_t batch = a_in.sizes[0], m = a_in.sizes[1], k = a_in.sizes[2], n = b_in.sizes[2];
  EMBER_CHECK(
      b_in.sizes[0] == batch && b_in.sizes[1] == k && out.sizes[0] == batch && out.sizes[1] == m && out.sizes[2] == n,
      "[cuda matmul] sizes do not match: ", detail::shape_str(a_in.sizes), " @ ", detail::shape_str(b_in.sizes), " -> ",
      detail::shape_str(out.sizes));
  EMBER_CHECK(out.strides[2] == 1 || n <= 1, "[cuda matmul] the output's rows must be contiguous");

  cudaDataType_t data_type;
  cublasComputeType_t compute;
  switch (a_in.dtype) {
    case Dtype::Float32:
      data_type = CUDA_R_32F;
      compute = allow_tf32() ? CUBLAS_COMPUTE_32F_FAST_TF32 : CUBLAS_COMPUTE_32F;
      break;
    case Dtype::Float64:
      data_type = CUDA_R_64F;
      compute = CUBLAS_COMPUTE_64F;
      break;
    case Dtype::Float16:
      data_type = CUDA_R_16F;
      compute = CUBLAS_COMPUTE_32F;
      break;
    case Dtype::BFloat16:
      data_type = CUDA_R_16BF;
      compute = CUBLAS_COMPUTE_32F;
      break;
    default:
      detail::fail("\"addmm_cuda\" not implemented for '", scalar_type_name(a_in.dtype), "'");
  }
  if (batch == 0 || m == 0 || n == 0) return;
  if (k == 0) {  // empty sums: cuBLAS may return early without writing, so write the zeros here
    fill(out, Scalar(0));
    return;
  }
  EMBER_CHECK(m <= INT32_MAX && n <= INT32_MAX && k <= INT32_MAX && batch <= INT32_MAX,
              "[cuda matmul] dimensions beyond 2^31 - 1 are not supported: ", detail::shape_str(a_in.sizes), " @ ",
              detail::shape_str(b_in.sizes));
  // The output cannot be staged like an operand, so a row stride cuBLAS cannot take is refused
  // here, before any work is queued.
  const int64_t ldc = m > 1 ? out.strides[1] : n;
  EMBER_CHECK(ldc >= n, "[cuda matmul] the output's rows overlap");
  EMBER_CHECK(ldc <= INT32_MAX, "[cuda matmul] the output's row stride ", ldc,
              " is beyond 2^31 - 1, which cuBLAS does not support");

  const int device = out.device_index;
  DeviceGuard guard(device);
  // Operands cuBLAS cannot read in place are copied to contiguous scratch memory first.
  GemmOperand a{}, b{};
  const bool a_direct = as_gemm_operand(a_in, a), b_direct = as_gemm_operand(b_in, b);
  const size_t width = element_size(a_in.dtype);
  Workspace a_ws(a_direct ? 0 : static_cast<size_t>(a_in.numel()) * width, device);
  Workspace b_ws(b_direct ? 0 : static_cast<size_t>(b_in.numel()) * width, device);
  auto stage = [&](const TensorView& v, const Workspace& ws, GemmOperand& g) {
    TensorView c = v;
    c.data = ws.data();
    c.strides = Dims{v.sizes[1] * v.sizes[2], v.sizes[2], 1};
    copy(c, v);
    EMBER_CHECK(as_gemm_operand(c, g), "[cuda matmul] internal error: contiguous operand rejected");
  };
  if (!a_direct) stage(a_in, a_ws, a);
  if (!b_direct) stage(b_in, b_ws, b);

  const float alpha_f = 1.0f, beta_f = 0.0f;
  const double alpha_d = 1.0, beta_d = 0.0;
  const bool f64 = a_in.dtype == Dtype::Float64;
  const void* alpha = f64 ? static_cast<const void*>(&alpha_d) : static_cast<const void*>(&alpha_f);
  const void* beta = f64 ? static_cast<const void*>(&beta_d) : static_cast<const void*>(&beta_f);
  // out^T[n, m] = b^T[n, k] @ a^T[k, m] in column-major terms.
  EMBER_CUBLAS_CHECK(cublasGemmStridedBatchedEx(
                         cublas_handle(device), b.op, a.op, static_cast<int>(n), static_cast<int>(m),
                         static_cast<int>(k), alpha, b.data, data_type, static_cast<int>(b.ld), b.batch_stride, a.data,
                         data_type, static_cast<int>(a.ld), a.batch_stride, beta, out.data, data_type,
                         static_cast<int>(ldc), out.strides[0], static_cast<int>(batch), compute, CUBLAS_GEMM_DEFAULT),
                     "matmul");
}

}  // namespace ember::cuda_impl
