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
  // last): neighbouring outputs are neighbours in memory, so the column kernel.
  EXPECT_EQ(strategy_of({8192, 10000}, {1, 8192}, 1), ReduceStrategy::Column);
  // The same with few columns: still the column kernel (a block per column would read strided).
  EXPECT_EQ(strategy_of({1000, 10000}, {1, 1000}, 1), ReduceStrategy::Column);
  EXPECT_EQ(strategy_of({2, 10000}, {1, 2}, 1), ReduceStrategy::Column);
  // Outputs 2 apart, elements 16384 apart: neighbouring outputs are still the closer ones.
  EXPECT_EQ(strategy_of({8192, 10000}, {2, 16384}, 1), ReduceStrategy::Column);
  // Elements closer than outputs (a transposed row layout): a block per output.
  EXPECT_EQ(strategy_of({8192, 10000}, {16384, 2}, 1), ReduceStrategy::BlockPerOutput);
  // A broadcast reduced dim (stride 0) reads one address per warp either way: a block.
  EXPECT_EQ(strategy_of({100, 1000}, {1, 0}, 1), ReduceStrategy::BlockPerOutput);
  // Broadcast outputs over strided slices: each block reads its (shared) slice.
  EXPECT_EQ(strategy_of({100, 1000}, {0, 3}, 1), ReduceStrategy::BlockPerOutput);
  // BatchNorm2d's statistics, x[N, C, H, W] over N, H, W, as [C, N, H*W]: rows of H*W are
  // contiguous, so a block per channel reads coalesced already.
  EXPECT_EQ(strategy_of({64, 32, 28 * 28}, {28 * 28, 64 * 28 * 28, 1}, 1), ReduceStrategy::BlockPerOutput);
  // BatchNorm1d's, x[N, C] over N: columns.
  EXPECT_EQ(strategy_of({512, 256}, {1, 512}, 1), ReduceStrategy::Column);
  // One output (a full reduction of a transposed matrix) has no neighbour: a block.
  EXPECT_EQ(strategy_of({1, 100, 1000}, {5, 1, 100}, 1), ReduceStrategy::BlockPerOutput);
}

// Checks everything the column kernel relies on for one shape.
void expect_valid_column_shape(int64_t outputs, int64_t count, int64_t inner) {
  SCOPED_TRACE(::testing::Message() << "outputs " << outputs << " count " << count << " inner " << inner);
  const ColumnShape c = column_shape(outputs, count, inner);
  // A block of exactly kReduceBlockThreads (its __launch_bounds__ and shared arrays).
  ASSERT_EQ(c.block_x * c.block_y, kReduceBlockThreads);
  ASSERT_GE(c.block_x, 1);
  ASSERT_LE(c.block_x, kColumnMaxX);
  ASSERT_EQ(c.block_x & (c.block_x - 1), 0) << "block_x " << c.block_x;  // the tree halves block_y
  ASSERT_GE(c.block_y, kColumnMinY);
  // A warp covers whole runs of neighbouring outputs: never narrower than the innermost kept
  // dim (up to a warp).
  ASSERT_GE(c.block_x, std::min<int64_t>(kColumnMaxX, pow2_ceil(std::max<int64_t>(inner, 1))));
  // Every output in exactly one group.
  ASSERT_GE(c.groups * c.block_x, outputs);
  ASSERT_LT((c.groups - 1) * c.block_x, outputs);
  // The grid within the hardware's limits, every group visited by the x-stride loop.
  ASSERT_GE(c.grid_x, 1);
  ASSERT_LE(c.grid_x, kMaxGridX);
  ASSERT_LE(c.grid_x, c.groups);
  ASSERT_GE(c.chunks, 1);
  ASSERT_LE(c.chunks, kMaxGridY);
  if (c.chunks > 1) {
    // Worth a block: each thread gets at least kSplitPerThread elements of its chunk...
    ASSERT_GE(count / c.chunks, c.block_y * kSplitPerThread);
    // ...and splitting stays within about one wave of blocks.
    ASSERT_LE(c.groups * c.chunks, kSplitMaxTasks);
  }
  // The chunks tile the column; every thread row's first element exists in every chunk.
  ASSERT_EQ(chunk_begin(count, c.chunks, c.chunks), count);
  if (c.chunks > 1) {
    ASSERT_GE(chunk_begin(count, c.chunks, 1) - chunk_begin(count, c.chunks, 0), c.block_y);
  }
  // Thread rows are not wasted when the columns are short and there are outputs to spread to.
  if (c.block_y > kColumnMinY && 2 * c.block_x <= pow2_ceil(outputs)) {
    ASSERT_GE(count, c.block_y * kColumnMinPerThread);
  }
}

TEST(CudaReducePlan, ColumnShapesHoldTheirInvariants) {
  const int64_t big = int64_t{1} << 31;
  const std::vector<int64_t> outputs_list = {
      1, 2, 3, 5, 7, 8, 31, 32, 33, 100, 1000, 4096, 65535, 65536, big - 1, big + 5, int64_t{1} << 40};
  const std::vector<int64_t> counts = {
      kSmallSlice + 1, 100,   255,   256,    511,     512,     2047, 2048,    4096,
      16383,           16384, 32768, 100000, 1000000, big - 1, big,  big + 1, int64_t{1} << 40};
  for (int64_t outputs : outputs_list) {
    for (int64_t count : counts) {
      for (int64_t inner : {int64_t{1}, int64_t{2}, int64_t{3}, int64_t{4}, int64_t{7}, int64_t{16}, int64_t{31},
                            int64_t{32}, int64_t{33}, int64_t{1000}, outputs}) {
        if (inner > outputs) continue;
        expect_valid_column_shape(outputs, count, inner);
      }
    }
  }
  // Exhaustively over small shapes.
  for (int64_t outputs = 1; outputs <= 70; ++outputs) {
    for (int64_t count = kSmallSlice + 1; count <= 3000; count += 37) {
      for (int64_t inner = 1; inner <= outputs; inner += (inner < 40 ? 1 : 13)) {
        expect_valid_column_shape(outputs, count, inner);
      }
    }
  }
}

TEST(CudaReducePlan, ColumnShapesOfCommonLayers) {
  // Bias gradient of a Linear(…, 1024) over a batch of 256: one warp per 32 outputs, 8 rows of
  // threads, no split (32 elements a thread).
  ColumnShape c = column_shape(1024, 256, 1024);
  EXPECT_EQ(c.block_x, 32);
  EXPECT_EQ(c.block_y, 8);
  EXPECT_EQ(c.groups, 32);
  EXPECT_EQ(c.chunks, 1);
  // [8192, 512] over dim 0: 16 groups, columns cut in 16 chunks of 512 rows (64 a thread).
  c = column_shape(512, 8192, 512);
  EXPECT_EQ(c.groups, 16);
  EXPECT_EQ(c.chunks, 16);
  // [1M, 2] over dim 0: 2 outputs wide, 128 rows of threads, 122 chunks.
  c = column_shape(2, 1 << 20, 2);
  EXPECT_EQ(c.block_x, 2);
  EXPECT_EQ(c.block_y, 128);
  EXPECT_EQ(c.chunks, (1 << 20) / (128 * kSplitPerThread));
  // [100, 2 * 10000] viewed as 10000 outputs in rows of 2, columns of 100: the block widens to
  // a warp (8 rows of 12.5 elements), as short columns leave little for each thread row.
  c = column_shape(20000, 100, 2);
  EXPECT_EQ(c.block_x, 32);
  EXPECT_EQ(c.block_y, 8);
  // Many outputs: no split, whatever the length.
  c = column_shape(int64_t{1} << 20, int64_t{1} << 20, 1 << 20);
  EXPECT_EQ(c.chunks, 1);
  EXPECT_EQ(c.groups, (int64_t{1} << 20) / 32);
}

// The number of distinct 32-byte sectors the 32 threads of warp `w` of block (0, 0) touch with
// their first load of 4-byte elements: 4 is a fully coalesced 128-byte request, 32 the worst.
int64_t first_load_sectors(const ReducePlan& plan, int w) {
  std::vector<int64_t> sectors;
  for (int lane = 0; lane < 32; ++lane) {
    const int tid = w * 32 + lane;
    int64_t addr = 0;
    if (plan.strategy == ReduceStrategy::Column) {
      const int tx = tid % plan.column.block_x, ty = tid / plan.column.block_x;
      if (tx >= plan.outputs) continue;
      addr = plan.kept.offset(tx) + plan.reduced.offset(ty);
    } else {  // block per output: the block's threads walk output 0's slice
      addr = plan.reduced.offset(tid);
    }
    sectors.push_back(addr * 4 / 32);
  }
  std::sort(sectors.begin(), sectors.end());
  return std::unique(sectors.begin(), sectors.end()) - sectors.begin();
}

TEST(CudaReducePlan, ColumnWarpsReadWholeSectors) {
  for (const auto& [sizes, strides] : std::vector<std::pair<Shape, Shape>>{
           {{512, 8192}, {1, 512}},       // [8192, 512] over dim 0
           {{2, 1 << 20}, {1, 2}},        // [1M, 2] over dim 0
           {{5, 100000}, {1, 5}},         // five columns
           {{64, 10000}, {1, 64}},        // 64 columns
           {{3, 40, 70}, {2800, 1, 40}},  // x[3, 70, 40] over dim 1
       }) {
    ReducePlan plan;
    ASSERT_TRUE(make_reduce_plan(sizes.data(), strides.data(), static_cast<int64_t>(sizes.size()),
                                 static_cast<int64_t>(sizes.size()) - 1, plan));
    ASSERT_EQ(plan.strategy, ReduceStrategy::Column);
    for (int w = 0; w < kReduceBlockThreads / 32; ++w) {
      // 32 floats of neighbouring outputs and rows: at most one sector more than 128 bytes
      // need (an unaligned run), against 32 sectors when each thread reads its own row.
      EXPECT_LE(first_load_sectors(plan, w), 5) << "warp " << w << " of [" << sizes[0] << ", " << sizes[1] << "]";
    }
    ReducePlan rows = plan;  // what a block per output would read
    rows.strategy = ReduceStrategy::BlockPerOutput;
    EXPECT_GE(first_load_sectors(rows, 0), 8);
  }
}

TEST(CudaReducePlan, HugeAndDegenerateColumns) {
  // More than 2^31 elements per column, and more than 2^31 outputs.
  const int64_t big = (int64_t{1} << 31) + 3;
  ReducePlan plan;
  Shape sizes{4, big}, strides{1, 4};
  ASSERT_TRUE(make_reduce_plan(sizes.data(), strides.data(), 2, 1, plan));
  EXPECT_EQ(plan.strategy, ReduceStrategy::Column);
  EXPECT_EQ(plan.count, big);
  EXPECT_EQ(plan.chunks, kSplitMaxTasks);
  EXPECT_EQ(plan.reduced.offset(big - 1), (big - 1) * 4);
  const int64_t last = big - chunk_begin(big, plan.chunks, plan.chunks - 1);  // no 32-bit overflow on the way
  EXPECT_TRUE(last == big / plan.chunks || last == big / plan.chunks + 1) << last;
  sizes = {big, 100};
  strides = {1, big};
  ASSERT_TRUE(make_reduce_plan(sizes.data(), strides.data(), 2, 1, plan));
  EXPECT_EQ(plan.strategy, ReduceStrategy::Column);
  EXPECT_EQ(plan.column.groups, (big + 31) / 32);
  EXPECT_EQ(plan.column.grid_x, plan.column.groups);
  EXPECT_EQ(plan.chunks, 1);
  EXPECT_EQ(plan.kept.offset(big - 1), big - 1);
  // More groups than gridDim.x allows: the grid is capped and blocks loop.
  const ColumnShape huge = column_shape(int64_t{1} << 40, 100, int64_t{1} << 40);
  EXPECT_EQ(huge.grid_x, kMaxGridX);
  EXPECT_GT(huge.groups, huge.grid_x);
  // One output, or outputs only along a size-1 dim: no column kernel (no neighbour to share
  // a load with, and kept.ndim would be 0).
  sizes = {1, 1000};
  strides = {1000, 1};
  ASSERT_TRUE(make_reduce_plan(sizes.data(), strides.data(), 2, 1, plan));
  EXPECT_EQ(plan.kept.ndim, 0);
  EXPECT_EQ(plan.strategy, ReduceStrategy::BlockPerOutput);
  // One element per column, or none: a thread per output.
  sizes = {1000, 1};
  strides = {1, 1000};
  ASSERT_TRUE(make_reduce_plan(sizes.data(), strides.data(), 2, 1, plan));
  EXPECT_EQ(plan.strategy, ReduceStrategy::ThreadPerOutput);
  sizes = {1000, 0};
  ASSERT_TRUE(make_reduce_plan(sizes.data(), strides.data(), 2, 1, plan));
  EXPECT_EQ(plan.strategy, ReduceStrategy::ThreadPerOutput);
  // No outputs: an empty shape that launches nothing.
  const ColumnShape none = column_shape(0, 1000, 1);
  EXPECT_EQ(none.groups, 0);
  EXPECT_EQ(none.grid_x, 0);
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
