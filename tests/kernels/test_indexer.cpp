// kernels::StridedIndexer and for_each_row, checked exhaustively against a naive multi-index
// walk on small shapes: empty, scalar, broadcast, transposed and sliced operands.
#include <gtest/gtest.h>

#include <algorithm>
#include <array>
#include <cstdint>
#include <vector>

#include "kernels/indexer.h"

namespace ember::kernels {
namespace {

constexpr int kOperands = 3;
using Shape = std::vector<int64_t>;
using OffsetTuple = std::array<int64_t, kOperands>;

Shape contiguous_strides(const Shape& sizes) {
  Shape strides(sizes.size());
  int64_t s = 1;
  for (size_t d = sizes.size(); d-- > 0;) {
    strides[d] = s;
    s *= sizes[d];
  }
  return strides;
}

enum class Layout { Contiguous, Reversed, Rotated, BroadcastEven, BroadcastAll, Sliced };
constexpr Layout kLayouts[] = {Layout::Contiguous,    Layout::Reversed,     Layout::Rotated,
                               Layout::BroadcastEven, Layout::BroadcastAll, Layout::Sliced};

/// Strides of an operand of shape `sizes` stored in the given way.
Shape make_strides(const Shape& sizes, Layout layout) {
  const size_t nd = sizes.size();
  Shape strides(nd, 0);
  switch (layout) {
    case Layout::Contiguous:
      return contiguous_strides(sizes);
    case Layout::Reversed: {  // every dimension transposed: column-major
      int64_t s = 1;
      for (size_t d = 0; d < nd; ++d) {
        strides[d] = s;
        s *= sizes[d];
      }
      return strides;
    }
    case Layout::Rotated: {  // memory order: last dimension outermost, then the others in order
      if (nd == 0) return strides;
      int64_t s = 1;
      for (size_t d = nd - 1; d-- > 0;) {
        strides[d] = s;
        s *= sizes[d];
      }
      strides[nd - 1] = s;
      return strides;
    }
    case Layout::BroadcastEven: {  // expanded from a tensor with size 1 at even dimensions
      Shape source = sizes;
      for (size_t d = 0; d < nd; d += 2) source[d] = 1;
      strides = contiguous_strides(source);
      for (size_t d = 0; d < nd; d += 2) strides[d] = 0;
      return strides;
    }
    case Layout::BroadcastAll:
      return strides;
    case Layout::Sliced: {  // x[..., ::2] of a tensor padded by one in every dimension
      Shape padded = sizes;
      for (auto& s : padded) s = 2 * s + 1;
      strides = contiguous_strides(padded);
      if (nd) strides.back() *= 2;
      return strides;
    }
  }
  return strides;
}

/// All offset tuples in row-major order of the original shape.
std::vector<OffsetTuple> naive_walk(const Shape& sizes, const std::array<Shape, kOperands>& strides) {
  std::vector<OffsetTuple> out;
  int64_t numel = 1;
  for (int64_t s : sizes) numel *= s;
  for (int64_t linear = 0; linear < numel; ++linear) {
    OffsetTuple t{};
    int64_t rest = linear;
    for (size_t d = sizes.size(); d-- > 0;) {
      const int64_t i = rest % sizes[d];
      rest /= sizes[d];
      for (int k = 0; k < kOperands; ++k) t[k] += i * strides[k][d];
    }
    out.push_back(t);
  }
  return out;
}

template <int MaxDims>
std::vector<OffsetTuple> rows_walk(const StridedIndexer<kOperands, MaxDims>& ix, int64_t begin, int64_t end) {
  std::vector<OffsetTuple> out;
  for_each_row(ix, begin, end, [&](const int64_t* off, int64_t count) {
    EXPECT_GT(count, 0);
    EXPECT_LE(count, ix.inner_size());
    for (int64_t j = 0; j < count; ++j) {
      OffsetTuple t;
      for (int k = 0; k < kOperands; ++k) t[k] = off[k] + j * ix.inner_stride(k);
      out.push_back(t);
    }
  });
  return out;
}

StridedIndexer<kOperands> build(const Shape& sizes, const std::array<Shape, kOperands>& strides, bool memory_order) {
  StridedIndexer<kOperands> ix;
  const int64_t* ptrs[kOperands] = {strides[0].data(), strides[1].data(), strides[2].data()};
  EXPECT_TRUE(ix.build(static_cast<int64_t>(sizes.size()), sizes.data(), ptrs, memory_order));
  return ix;
}

void check_config(const Shape& sizes, const std::array<Shape, kOperands>& strides) {
  const std::vector<OffsetTuple> expected = naive_walk(sizes, strides);
  const int64_t numel = static_cast<int64_t>(expected.size());

  // In logical order the walk must reproduce the naive one exactly, element by element.
  const StridedIndexer<kOperands> ix = build(sizes, strides, /*memory_order=*/false);
  ASSERT_EQ(ix.numel(), numel);
  ASSERT_GE(ix.ndim, 1);
  for (int64_t i = 0; i < numel; ++i) {
    const auto o = ix.offsets(i);
    for (int k = 0; k < kOperands; ++k) ASSERT_EQ(o[k], expected[i][k]) << "linear " << i << " operand " << k;
  }
  ASSERT_EQ(rows_walk(ix, 0, numel), expected);
  // Any split into chunks (as threads get) concatenates to the same walk.
  for (int64_t cut : {int64_t{1}, numel / 3, numel / 2, numel - 1}) {
    if (cut <= 0 || cut >= numel) continue;
    std::vector<OffsetTuple> parts = rows_walk(ix, 0, cut);
    const std::vector<OffsetTuple> tail = rows_walk(ix, cut, numel);
    parts.insert(parts.end(), tail.begin(), tail.end());
    ASSERT_EQ(parts, expected) << "split at " << cut;
  }

  // In operand 0's memory order the same tuples are visited, only reordered.
  const StridedIndexer<kOperands> mem = build(sizes, strides, /*memory_order=*/true);
  ASSERT_EQ(mem.numel(), numel);
  std::vector<OffsetTuple> visited = rows_walk(mem, 0, numel);
  for (int64_t i = 0; i < numel; ++i) {
    const auto o = mem.offsets(i);
    for (int k = 0; k < kOperands; ++k) ASSERT_EQ(o[k], visited[i][k]);
  }
  std::vector<OffsetTuple> sorted_expected = expected;
  std::sort(sorted_expected.begin(), sorted_expected.end());
  std::sort(visited.begin(), visited.end());
  ASSERT_EQ(visited, sorted_expected);
}

TEST(Indexer, ExhaustiveSmallShapes) {
  int configs = 0;
  for (int nd = 0; nd <= 4; ++nd) {
    int shape_count = 1;
    for (int d = 0; d < nd; ++d) shape_count *= 4;
    for (int code = 0; code < shape_count; ++code) {
      Shape sizes(nd);
      for (int d = 0, c = code; d < nd; ++d, c /= 4) sizes[d] = c % 4;  // sizes 0..3
      for (Layout out_layout : {Layout::Contiguous, Layout::Reversed, Layout::Sliced}) {
        for (Layout a_layout : kLayouts) {
          for (Layout b_layout : kLayouts) {
            SCOPED_TRACE(::testing::Message()
                         << "nd " << nd << " code " << code << " layouts " << static_cast<int>(out_layout)
                         << static_cast<int>(a_layout) << static_cast<int>(b_layout));
            check_config(
                sizes, {make_strides(sizes, out_layout), make_strides(sizes, a_layout), make_strides(sizes, b_layout)});
            if (HasFatalFailure()) return;
            ++configs;
          }
        }
      }
    }
  }
  EXPECT_EQ(configs, 341 * 3 * 6 * 6);
}

TEST(Indexer, ContiguousAndScalarBroadcastCollapseToOneDim) {
  const Shape sizes = {2, 3, 4};
  const Shape c = contiguous_strides(sizes);
  auto ix = build(sizes, {c, c, Shape{0, 0, 0}}, false);
  EXPECT_EQ(ix.ndim, 1);
  EXPECT_EQ(ix.sizes[0], 24);
  EXPECT_EQ(ix.inner_stride(0), 1);
  EXPECT_EQ(ix.inner_stride(1), 1);
  EXPECT_EQ(ix.inner_stride(2), 0);
}

TEST(Indexer, RowAndColumnBroadcastKeepTwoDims) {
  const Shape sizes = {4, 3};
  const Shape c = contiguous_strides(sizes);
  auto rows = build(sizes, {c, c, Shape{0, 1}}, false);  // [4,3] + [3]
  EXPECT_EQ(rows.ndim, 2);
  EXPECT_EQ(rows.inner_size(), 3);
  EXPECT_EQ(rows.inner_stride(2), 1);
  auto cols = build(sizes, {c, c, Shape{1, 0}}, false);  // [4,3] + [4,1]
  EXPECT_EQ(cols.ndim, 2);
  EXPECT_EQ(cols.inner_stride(2), 0);
  // Broadcast over the two leading dims of [2,3,4] + [4] merges them.
  auto lead = build({2, 3, 4}, {contiguous_strides({2, 3, 4}), contiguous_strides({2, 3, 4}), Shape{0, 0, 1}}, false);
  EXPECT_EQ(lead.ndim, 2);
  EXPECT_EQ(lead.sizes[0], 6);
  EXPECT_EQ(lead.sizes[1], 4);
}

TEST(Indexer, TransposedOperandsInMemoryOrder) {
  const Shape sizes = {4, 3};
  const Shape t = {1, 4};  // x.t() of a contiguous [3, 4]
  auto logical = build(sizes, {t, t, t}, false);
  EXPECT_EQ(logical.ndim, 2);
  auto mem = build(sizes, {t, t, t}, true);  // e.g. an in-place op on a transposed tensor
  EXPECT_EQ(mem.ndim, 1);
  EXPECT_EQ(mem.inner_stride(0), 1);
  // A transposed input with a contiguous output stays two-dimensional, in the output's order.
  auto mixed = build(sizes, {contiguous_strides(sizes), t, t}, true);
  EXPECT_EQ(mixed.ndim, 2);
  EXPECT_EQ(mixed.inner_stride(0), 1);
  EXPECT_EQ(mixed.inner_stride(1), 4);
}

TEST(Indexer, SizeOneDimsAreDroppedWhateverTheirStride) {
  const Shape sizes = {2, 1, 3};
  const Shape s = {3, 999, 1};
  auto ix = build(sizes, {s, s, s}, false);
  EXPECT_EQ(ix.ndim, 1);
  EXPECT_EQ(ix.sizes[0], 6);
}

TEST(Indexer, EmptyAndScalarShapes) {
  auto empty = build({3, 0, 2}, {Shape{0, 2, 1}, Shape{0, 2, 1}, Shape{0, 2, 1}}, true);
  EXPECT_EQ(empty.numel(), 0);
  int calls = 0;
  for_each_row(empty, 0, empty.numel(), [&](const int64_t*, int64_t) { ++calls; });
  EXPECT_EQ(calls, 0);

  auto scalar = build({}, {Shape{}, Shape{}, Shape{}}, false);
  EXPECT_EQ(scalar.ndim, 1);
  EXPECT_EQ(scalar.numel(), 1);
  EXPECT_EQ(scalar.offsets(0)[1], 0);

  auto ones = build({1, 1}, {Shape{5, 7}, Shape{1, 1}, Shape{0, 0}}, false);
  EXPECT_EQ(ones.numel(), 1);
}

TEST(Indexer, TooManyDimensionsIsReportedNotOverflowed) {
  const int64_t sizes[] = {2, 2, 2};
  const int64_t strides[] = {1, 2, 4};  // fully transposed: nothing merges in logical order
  const int64_t* ptrs[] = {strides};
  StridedIndexer<1, 2> small;
  EXPECT_FALSE(small.build(3, sizes, ptrs, /*memory_order=*/false));
  EXPECT_TRUE(small.build(3, sizes, ptrs, /*memory_order=*/true));  // sorted, it is contiguous
  EXPECT_EQ(small.ndim, 1);
  StridedIndexer<1, 3> enough;
  EXPECT_TRUE(enough.build(3, sizes, ptrs, false));
  EXPECT_EQ(enough.ndim, 3);
}

}  // namespace
}  // namespace ember::kernels
