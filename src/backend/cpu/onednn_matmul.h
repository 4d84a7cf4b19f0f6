#pragma once
// float32 products whose right operand is stored transposed (x @ w.t(), every Linear layer's
// forward) through oneDNN's matmul primitive instead of dnnl_sgemm. With 2 threads, Debian's
// oneDNN 2.6 runs the transposed sgemm at 60-75% of its plain-layout speed, and the primitive
// does not have that gap; docs/PERFORMANCE.md §9 has the measurements.
#include <cstdint>

namespace ember::cpu {

/// One row-major product c[m, n] = a[m, k] @ b[k, n] with b stored transposed (element (p, j)
/// of b at b[j * ldb + p]); lda and ldc are the row strides of a and c. Primitives are cached
/// by geometry and thread count. Must not be called inside an OpenMP parallel region.
void onednn_matmul_b_transposed(const float* a, int64_t lda, const float* b, int64_t ldb, float* c, int64_t ldc,
                                int64_t m, int64_t n, int64_t k);

}  // namespace ember::cpu
