// The CUDA copy between overlapping contiguous views of one buffer (x[1:].copy_(x[:-1])):
// cudaMemcpy* forbids overlapping ranges, so copy.cu stages such a copy through a temporary when
// ranges_overlap says so. The predicate is checked on the host; the copy itself against the CPU's
// memmove where a GPU is usable.
#include <gtest/gtest.h>

#include <cstddef>
#include <cstdint>
#include <string>

#include "backend/cuda/copy_plan.h"
#include "ember/ember.h"

namespace {

using ember::cuda_impl::ranges_overlap;

TEST(CudaCopyOverlap, AdjacentRangesDoNotOverlap) {
  char buf[64] = {};  // never read: only its addresses are compared
  for (size_t n : {size_t{1}, size_t{8}, size_t{32}}) {
    EXPECT_FALSE(ranges_overlap(buf + n, buf, n)) << n;  // dst right after src
    EXPECT_FALSE(ranges_overlap(buf, buf + n, n)) << n;  // dst right before src
  }
  EXPECT_FALSE(ranges_overlap(buf, buf + 40, 16));
  EXPECT_FALSE(ranges_overlap(buf + 40, buf, 16));
}

TEST(CudaCopyOverlap, ShiftedRangesOverlapInBothDirections) {
  char buf[64] = {};
  // x.narrow(0, 1, n - 1).copy_(x.narrow(0, 0, n - 1)) for 4-byte elements, and its mirror.
  EXPECT_TRUE(ranges_overlap(buf + 4, buf, 60));
  EXPECT_TRUE(ranges_overlap(buf, buf + 4, 60));
  // One shared byte is enough, at either end.
  EXPECT_TRUE(ranges_overlap(buf + 31, buf, 32));
  EXPECT_TRUE(ranges_overlap(buf, buf + 31, 32));
  EXPECT_TRUE(ranges_overlap(buf + 1, buf, 2));
  EXPECT_TRUE(ranges_overlap(buf, buf, 16));
}

TEST(CudaCopyOverlap, ZeroBytesNeverOverlap) {
  char buf[16] = {};
  EXPECT_FALSE(ranges_overlap(buf, buf, 0));
  EXPECT_FALSE(ranges_overlap(buf + 1, buf, 0));
  EXPECT_FALSE(ranges_overlap(buf, buf + 1, 0));
}

// The copy on the GPU: large enough that a single cudaMemcpyAsync over overlapping ranges runs in
// many concurrent pieces, shifted forwards and backwards by one element and by a few.
TEST(CudaCopyOverlap, OverlappingContiguousCopiesMatchTheCpu) {
  if (!ember::cuda::is_available()) GTEST_SKIP() << "cuda: " << ember::cuda::unavailable_reason();
  const int64_t n = int64_t{1} << 22;
  const ember::Device gpu(ember::DeviceType::CUDA, 0);
  for (ember::Dtype dtype : {ember::kFloat32, ember::kUInt8, ember::kFloat64}) {
    for (int64_t shift : {int64_t{1}, int64_t{-1}, int64_t{7}, int64_t{-1000}}) {
      SCOPED_TRACE(std::string(ember::dtype_name(dtype)) + " shift " + std::to_string(shift));
      const int64_t d = shift > 0 ? shift : 0, s = shift > 0 ? 0 : -shift, len = n - (shift > 0 ? shift : -shift);
      // Distinct neighbours (uint8 wraps round 0..255), so a misplaced element shows.
      ember::Tensor cpu = ember::arange(0, n, 1, ember::kInt64).to(dtype);
      ember::Tensor dev = cpu.to(gpu, false, true);
      cpu.narrow(0, d, len).copy_(cpu.narrow(0, s, len));
      dev.narrow(0, d, len).copy_(dev.narrow(0, s, len));
      EXPECT_TRUE(ember::equal(dev.cpu(), cpu));
    }
  }
}

}  // namespace
