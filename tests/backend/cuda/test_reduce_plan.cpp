// backend/cuda/reduce_plan.h on the host: coalescing keeps every row-major linear index at the
// same element (so argmax's indices match the CPU's), and the kernel choice follows the shape.
#include <gtest/gtest.h>

#include <algorithm>
#include <cstdint>
#include <vector>

#include "backend/cuda/reduce_plan.h"

namespace ember::cuda_impl {
namespace {

using Shape = std::vector<int64_t>;

Shape contiguous_strides(const Shape& sizes) {
  Shape strides(sizes.size());
  int64_t s = 1;
  for (size_t d = sizes.size(); d-- > 0;) {
    strides[d] = s;
    s *= sizes[d];
  }
  return strides;
}

// The offset of row-major position `linear` over dims [begin, end), computed naively.
int64_t naive_offset(const Shape& sizes, const Shape& strides, size_t begin, size_t end, int64_t linear) {
  int64_t off = 0;
  for (size_t d = end; d-- > begin;) {
    off += (linear % sizes[d]) * strides[d];
    linear /= sizes[d];
  }
  return off;
}

int64_t numel(const Shape& sizes, size_t begin, size_t end) {
  int64_t n = 1;
  for (size_t d = begin; d < end; ++d) n *= sizes[d];
  return n;
}

void expect_plan_matches_naive(const Shape& sizes, const Shape& strides, int64_t lead) {
  ReducePlan plan;
  ASSERT_TRUE(make_reduce_plan(sizes.data(), strides.data(), static_cast<int64_t>(sizes.size()), lead, plan));
  const size_t l = static_cast<size_t>(lead);
  EXPECT_EQ(plan.outputs, numel(sizes, 0, l));
  EXPECT_EQ(plan.count, numel(sizes, l, sizes.size()));
  for (int64_t i = 0; i < plan.outputs; ++i) {
    ASSERT_EQ(plan.kept.offset(i), naive_offset(sizes, strides, 0, l, i)) << "output " << i;
  }
  if (plan.count == 0) return;
  for (int64_t j = 0; j < plan.count; ++j) {
    ASSERT_EQ(plan.reduced.offset(j), naive_offset(sizes, strides, l, sizes.size(), j)) << "element " << j;
  }
}

TEST(CudaReducePlan, ContiguousGroupsCollapseToOneDim) {
  const Shape sizes{2, 3, 4, 5};
  const Shape strides = contiguous_strides(sizes);
  ReducePlan plan;
  ASSERT_TRUE(make_reduce_plan(sizes.data(), strides.data(), 4, 2, plan));
  EXPECT_EQ(plan.kept.ndim, 1);
  EXPECT_EQ(plan.kept.sizes[0], 6);
  EXPECT_EQ(plan.kept.strides[0], 20);
  EXPECT_EQ(plan.reduced.ndim, 1);
  EXPECT_EQ(plan.reduced.sizes[0], 20);
  EXPECT_EQ(plan.reduced.strides[0], 1);
}

TEST(CudaReducePlan, SizeOneDimsAreDropped) {
  const Shape sizes{1, 4, 1, 1, 3, 1};
  const Shape strides{99, 3, 7, 5, 1, 11};
  ReducePlan plan;
  ASSERT_TRUE(make_reduce_plan(sizes.data(), strides.data(), 6, 3, plan));
  EXPECT_EQ(plan.kept.ndim, 1);
  EXPECT_EQ(plan.reduced.ndim, 1);
  EXPECT_EQ(plan.reduced.strides[0], 1);
  expect_plan_matches_naive(sizes, strides, 3);
}

TEST(CudaReducePlan, OffsetsMatchANaiveWalkOnPermutedAndSlicedLayouts) {
  const Shape sizes{3, 4, 5, 2};
  const Shape base = contiguous_strides(sizes);
  const std::vector<Shape> layouts = {
      base,
      {1, 3, 12, 60},    // fully reversed (a transpose)
      {40, 10, 2, 1},    // a slice: every other element of the third dim
      {2, 30, 6, 1},     // first two dims swapped
      {0, 5, 1, 0},      // broadcast (stride 0) dims
      {-40, 10, -2, 1},  // negative strides (flipped views)
  };
  for (const Shape& strides : layouts) {
    for (int64_t lead = 0; lead <= 4; ++lead) {
      SCOPED_TRACE(::testing::Message() << "lead " << lead << " strides " << strides[0] << "," << strides[1] << ","
                                        << strides[2] << "," << strides[3]);
      expect_plan_matches_naive(sizes, strides, lead);
    }
  }
}

TEST(CudaReducePlan, ZeroElementSlicesAreNeverWalked) {
  const Shape sizes{4, 0, 3};
  const Shape strides{3, 3, 1};
  ReducePlan plan;
  ASSERT_TRUE(make_reduce_plan(sizes.data(), strides.data(), 3, 1, plan));
  EXPECT_EQ(plan.outputs, 4);
  EXPECT_EQ(plan.count, 0);
  EXPECT_EQ(plan.reduced.ndim, 0);
  EXPECT_EQ(plan.strategy, ReduceStrategy::ThreadPerOutput);
  EXPECT_EQ(plan.kept.offset(3), 9);
}

TEST(CudaReducePlan, ScalarsAndFullReductions) {
  ReducePlan plan;
  ASSERT_TRUE(make_reduce_plan(nullptr, nullptr, 0, 0, plan));  // a 0-d tensor
  EXPECT_EQ(plan.outputs, 1);
  EXPECT_EQ(plan.count, 1);
  EXPECT_EQ(plan.kept.offset(0), 0);
  EXPECT_EQ(plan.reduced.offset(0), 0);
  const Shape sizes{1000, 1000};
  const Shape strides = contiguous_strides(sizes);
  ASSERT_TRUE(make_reduce_plan(sizes.data(), strides.data(), 2, 0, plan));
  EXPECT_EQ(plan.outputs, 1);
  EXPECT_EQ(plan.count, 1000000);
  EXPECT_EQ(plan.strategy, ReduceStrategy::BlockPerOutput);
}

TEST(CudaReducePlan, TooManyDimsIsReportedNotOverrun) {
  // 26 dims of size 2 whose strides never line up: nothing merges.
  Shape sizes(26, 2), strides(26);
  for (size_t d = 0; d < 26; ++d) strides[d] = int64_t{3} << (2 * (25 - d));
  ReducePlan plan;
  EXPECT_FALSE(make_reduce_plan(sizes.data(), strides.data(), 26, 0, plan));
  EXPECT_FALSE(make_reduce_plan(sizes.data(), strides.data(), 26, 26, plan));
  EXPECT_TRUE(make_reduce_plan(sizes.data(), strides.data(), 26, 13, plan));
}

ReduceStrategy strategy_of(const Shape& sizes, const Shape& strides, int64_t lead) {
  ReducePlan plan;
  EXPECT_TRUE(make_reduce_plan(sizes.data(), strides.data(), static_cast<int64_t>(sizes.size()), lead, plan));
  return plan.strategy;
}

TEST(CudaReducePlan, StrategyFollowsTheShape) {
  // Long contiguous rows: a block per row.
  EXPECT_EQ(strategy_of({1000, 10000}, {10000, 1}, 1), ReduceStrategy::BlockPerOutput);
  // Short rows: a thread per row.
  EXPECT_EQ(strategy_of({100000, 8}, {8, 1}, 1), ReduceStrategy::ThreadPerOutput);
  EXPECT_EQ(strategy_of({100000, kSmallSlice}, {kSmallSlice, 1}, 1), ReduceStrategy::ThreadPerOutput);
  EXPECT_EQ(strategy_of({100000, kSmallSlice + 1}, {kSmallSlice + 1, 1}, 1), ReduceStrategy::BlockPerOutput);
  // Sum over dim 0 of a row-major [10000, 8192] matrix (the front end moves the reduced dim
  // last): neighbouring outputs are neighbours in memory, so a thread per column.
  EXPECT_EQ(strategy_of({8192, 10000}, {1, 8192}, 1), ReduceStrategy::ThreadPerOutput);
  // The same with too few columns to fill the GPU with threads: a block per column.
  EXPECT_EQ(strategy_of({1000, 10000}, {1, 1000}, 1), ReduceStrategy::BlockPerOutput);
  // Outputs strided, reduced dims strided too: no coalescing to gain, a block each.
  EXPECT_EQ(strategy_of({8192, 10000}, {2, 16384}, 1), ReduceStrategy::BlockPerOutput);
}

TEST(CudaReducePlan, ChunksCoverEachSliceExactlyOnce) {
  for (int64_t count : {1, 2, 7, 1000, 65537}) {
    for (int64_t chunks : {1, 2, 3, 16, 1000}) {
      if (chunks > count) continue;
      EXPECT_EQ(chunk_begin(count, chunks, 0), 0);
      EXPECT_EQ(chunk_begin(count, chunks, chunks), count);
      for (int64_t c = 0; c < chunks; ++c) {
        const int64_t len = chunk_begin(count, chunks, c + 1) - chunk_begin(count, chunks, c);
        EXPECT_TRUE(len == count / chunks || len == count / chunks + 1) << count << " " << chunks << " " << c;
      }
    }
  }
  // No overflow where count * chunks would exceed int64.
  const int64_t huge = int64_t{1} << 61;
  EXPECT_EQ(chunk_begin(huge, 1024, 1024), huge);
  EXPECT_EQ(chunk_begin(huge, 1024, 512), huge / 2);
}

TEST(CudaReducePlan, LongSlicesOfFewOutputsAreSplit) {
  using S = ReduceStrategy;
  EXPECT_EQ(split_chunks(S::BlockPerOutput, 1, 2 * kSplitElements - 1), 1);
  EXPECT_EQ(split_chunks(S::BlockPerOutput, 1, 2 * kSplitElements), 2);
  EXPECT_EQ(split_chunks(S::BlockPerOutput, 1, int64_t{1} << 30), kSplitMaxTasks);
  EXPECT_EQ(split_chunks(S::BlockPerOutput, 4, int64_t{1} << 30), kSplitMaxTasks / 4);
  EXPECT_EQ(split_chunks(S::BlockPerOutput, kSplitMaxTasks / 2 + 1, int64_t{1} << 30), 1);
  EXPECT_EQ(split_chunks(S::ThreadPerOutput, 1, int64_t{1} << 30), 1);
  for (int64_t outputs : {1, 3, 100, 1000}) {
    for (int64_t count : {int64_t{100000}, int64_t{1} << 24, int64_t{1} << 34}) {
      const int64_t chunks = split_chunks(S::BlockPerOutput, outputs, count);
      EXPECT_GE(chunks, 1);
      EXPECT_LE(outputs * chunks, std::max<int64_t>(outputs, kSplitMaxTasks));
      if (chunks > 1) {
        EXPECT_GE(count / chunks, kSplitElements);
      }
    }
  }
  // A full reduction of a large tensor is planned split; a 2-D sum of long rows is not.
  const Shape sizes{1 << 14, 1 << 14};
  const Shape strides = contiguous_strides(sizes);
  ReducePlan plan;
  ASSERT_TRUE(make_reduce_plan(sizes.data(), strides.data(), 2, 0, plan));
  EXPECT_EQ(plan.chunks, kSplitMaxTasks);
  ASSERT_TRUE(make_reduce_plan(sizes.data(), strides.data(), 2, 1, plan));
  EXPECT_EQ(plan.chunks, 1);
}

}  // namespace
}  // namespace ember::cuda_impl
