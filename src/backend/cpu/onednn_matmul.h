#pragma once
// Products through oneDNN's matmul primitive instead of dnnl_sgemm, where it is faster:
//  * float32 with the right operand stored transposed (x @ w.t(), every Linear layer's forward):
//    with 2 threads, Debian's oneDNN 2.6 runs the transposed sgemm at 60-75% of its plain-layout
//    speed, and the primitive does not have that gap (docs/PERFORMANCE.md §9);
//  * bfloat16 on CPUs with AVX512-BF16 (or AMX), where the primitive multiplies bfloat16 natively
//    at twice float32's rate (docs/PERFORMANCE.md §14); elsewhere ember widens to float32.
#include <cstdint>

#include "ember/half.h"

namespace ember::cpu {

/// One row-major product c[m, n] = a[m, k] @ b[k, n] with b stored transposed (element (p, j)
/// of b at b[j * ldb + p]); lda and ldc are the row strides of a and c. Primitives are cached
/// by geometry and thread count. Must not be called inside an OpenMP parallel region.
void onednn_matmul_b_transposed(const float* a, int64_t lda, const float* b, int64_t ldb, float* c, int64_t ldc,
                                int64_t m, int64_t n, int64_t k);

/// Whether this CPU multiplies bfloat16 natively (oneDNN's effective ISA has AVX512-BF16).
bool onednn_native_bfloat16();

/// c[m, n] = a[m, k] @ b[k, n] in bfloat16: float32 accumulation, each result rounded once to
/// bfloat16, as the widening path computes it (up to the order of the sums). Each operand is
/// given by its row and column strides, one of which is 1 with the other at least the extent it
/// steps over; c's rows are contiguous, ldc apart. Cached and threaded as above.
void onednn_matmul_bf16(const BFloat16* a, int64_t a_row_stride, int64_t a_col_stride, const BFloat16* b,
                        int64_t b_row_stride, int64_t b_col_stride, BFloat16* c, int64_t ldc, int64_t m, int64_t n,
                        int64_t k);

}  // namespace ember::cpu
