// The host-side decisions of the cuBLAS matrix product (matmul.cpp): which operands cuBLAS reads
// in place and with which leading dimension, and which outputs are refused. cuBLAS takes leading
// dimensions as int, so one beyond 2^31 - 1 must never reach it (2^32 + r would read as r).
#include <gtest/gtest.h>

#include <cstdint>
#include <string>

#include "backend/cuda/cuda_backend.h"
#include "backend/cuda/gemm_plan.h"
#include "support/error_of.h"

namespace ember::cuda_impl {

namespace {

constexpr int64_t kIntMax = INT32_MAX;

struct Layout {
  bool direct;
  bool transposed;
  int64_t ld;
};

Layout layout(int64_t rows, int64_t cols, int64_t rs, int64_t cs) {
  Layout l{false, false, -1};
  l.direct = gemm_layout(rows, cols, rs, cs, l.transposed, l.ld);
  return l;
}

TEST(CudaMatmulLayout, RowAndColumnMajorMatricesAreReadInPlace) {
  const Layout row_major = layout(4, 3, 3, 1);
  EXPECT_TRUE(row_major.direct);
  EXPECT_FALSE(row_major.transposed);
  EXPECT_EQ(row_major.ld, 3);
  const Layout padded_rows = layout(4, 3, 10, 1);  // a column slice of a wider matrix
  EXPECT_TRUE(padded_rows.direct);
  EXPECT_EQ(padded_rows.ld, 10);
  const Layout column_major = layout(4, 3, 1, 4);  // x.t() of a contiguous [3, 4]
  EXPECT_TRUE(column_major.direct);
  EXPECT_TRUE(column_major.transposed);
  EXPECT_EQ(column_major.ld, 4);
}

TEST(CudaMatmulLayout, StridedSlicesAndOverlappingRowsAreStaged) {
  EXPECT_FALSE(layout(4, 3, 6, 2).direct);  // neither stride is 1
  EXPECT_FALSE(layout(4, 3, 2, 1).direct);  // rows overlap: ld below the row length
  EXPECT_FALSE(layout(4, 3, 1, 3).direct);  // columns overlap
  EXPECT_FALSE(layout(4, 3, 0, 1).direct);  // a broadcast row
}

TEST(CudaMatmulLayout, LeadingDimensionsBeyondCublasIntAreStaged) {
  const Layout at_limit = layout(2, 3, kIntMax, 1);
  EXPECT_TRUE(at_limit.direct);
  EXPECT_EQ(at_limit.ld, kIntMax);
  EXPECT_TRUE(layout(3, 2, 1, kIntMax).direct);

  for (int64_t stride : {kIntMax + 1, (int64_t{1} << 32) + 3, (int64_t{1} << 32) + 64, int64_t{1} << 40}) {
    SCOPED_TRACE(stride);
    EXPECT_FALSE(layout(2, 3, stride, 1).direct);  // row stride, read as is
    EXPECT_FALSE(layout(3, 2, 1, stride).direct);  // column stride, read transposed
    EXPECT_FALSE(layout(5, 1, stride, 1).direct);  // a column: its elements are `stride` apart
  }
}

TEST(CudaMatmulLayout, SizeOneDimensionsIgnoreTheirStride) {
  // A single row's row stride is never read, however large: ld is the row length.
  const Layout row = layout(1, 3, int64_t{1} << 40, 1);
  EXPECT_TRUE(row.direct);
  EXPECT_FALSE(row.transposed);
  EXPECT_EQ(row.ld, 3);
  // A single row with strided elements is read transposed, its element stride the leading one.
  const Layout strided_row = layout(1, 3, int64_t{1} << 40, 5);
  EXPECT_TRUE(strided_row.direct);
  EXPECT_TRUE(strided_row.transposed);
  EXPECT_EQ(strided_row.ld, 5);
  EXPECT_FALSE(layout(1, 3, 7, (int64_t{1} << 32) + 5).direct);
}

// The output cannot be staged, so CudaBackend::matmul refuses a row stride cuBLAS cannot take
// before it queues any work: these run without a GPU (and the views' data is never touched).
TensorView view(const Dims& sizes, const Dims& strides) {
  TensorView v;
  v.sizes = sizes;
  v.strides = strides;
  v.dtype = kFloat32;
  return v;
}

TEST(CudaMatmulLayout, OutputRowStridesBeyondCublasIntAreRefused) {
  const TensorView a = view({1, 2, 3}, {6, 3, 1}), b = view({1, 3, 4}, {12, 4, 1});
  for (int64_t stride : {kIntMax + 1, (int64_t{1} << 32) + 4}) {
    SCOPED_TRACE(stride);
    const TensorView out = view({1, 2, 4}, {2 * stride, stride, 1});
    const std::string message = ember_test::error_of([&] { cuda_backend().matmul(a, b, out); });
    EXPECT_NE(message.find("[cuda matmul] the output's row stride " + std::to_string(stride)), std::string::npos)
        << message;
  }
  const TensorView overlapping = view({1, 2, 4}, {8, 3, 1});
  EXPECT_EQ(ember_test::error_of([&] { cuda_backend().matmul(a, b, overlapping); }),
            "[cuda matmul] the output's rows overlap");
}

}  // namespace
}  // namespace ember::cuda_impl
