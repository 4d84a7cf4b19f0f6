#pragma once
// Host-side decisions of the cuBLAS matrix product (matmul.cpp), kept free of CUDA headers so the
// tests check them on any machine.
#include <cstdint>

namespace ember::cuda_impl {

/// How cuBLAS can read a row-major [rows, cols] matrix with strides (rs, cs) in place, in its
/// column-major terms: as is or transposed, with leading dimension `ld`; false when it cannot
/// (neither stride is 1, or ld is below the leading size or beyond cuBLAS's int, where it would
/// wrap: 2^32 + r reads as r).
inline bool gemm_layout(int64_t rows, int64_t cols, int64_t rs, int64_t cs, bool& transposed, int64_t& ld) {
  // A size-1 dimension's stride is arbitrary; cuBLAS only needs ld at least the leading size.
  if (cs == 1 || cols == 1) {  // row-major: column-major [cols, rows], used as is
    transposed = false;
    ld = rows == 1 ? cols : rs;
    return ld >= cols && ld > 0 && ld <= INT32_MAX;
  }
  if (rs == 1 || rows == 1) {  // column-major [rows, cols]: cuBLAS transposes it
    transposed = true;
    ld = cols == 1 ? rows : cs;
    return ld >= rows && ld > 0 && ld <= INT32_MAX;
  }
  return false;
}

}  // namespace ember::cuda_impl
