// kernels/indexer32.h: the magic-number divider against plain division over every divisor
// family that matters (powers of two and their neighbours, small divisors exhaustively, random
// ones) at the dividends where a rounding error would first show; StridedIndexer32 against the
// 64-bit StridedIndexer on permuted, broadcast, sliced and flipped layouts; and fits() at the
// int32 boundaries.
#include <gtest/gtest.h>

#include <cstdint>
#include <vector>

#include "kernels/indexer32.h"

namespace ember::kernels {
namespace {

uint64_t next_random(uint64_t& state) {
  state = state * 6364136223846793005ull + 1442695040888963407ull;
  return state ^ (state >> 29);
}

// n / d over the dividends near every multiple of d that a test can afford, and the extremes.
void expect_divides(uint32_t d, uint64_t& state) {
  const IntDivider32 div(d);
  const auto check = [&](uint64_t n) {
    if (n > static_cast<uint64_t>(kMaxIndex32)) return;
    const auto n32 = static_cast<uint32_t>(n);
    const DivMod32 qr = div.divmod(n32);
    ASSERT_EQ(qr.quotient, n32 / d) << n << " / " << d;
    ASSERT_EQ(qr.remainder, n32 % d) << n << " % " << d;
  };
  for (uint64_t n : {uint64_t{0}, uint64_t{1}, uint64_t{2}, static_cast<uint64_t>(kMaxIndex32),
                     static_cast<uint64_t>(kMaxIndex32) - 1}) {
    check(n);
  }
  // The largest multiples of d below 2^31, and either side of them: where m's rounding bites.
  const uint64_t top = static_cast<uint64_t>(kMaxIndex32) / d * d;
  for (uint64_t k = 0; k < 64 && top >= k * d; ++k) {
    const uint64_t m = top - k * d;
    check(m);
    check(m + d - 1);
    if (m > 0) check(m - 1);
  }
  for (int i = 0; i < 200; ++i) check(next_random(state) % (static_cast<uint64_t>(kMaxIndex32) + 1));
}

TEST(IntDivider32, SmallDivisorsExhaustivelyOverSmallDividends) {
  for (uint32_t d = 1; d <= 300; ++d) {
    const IntDivider32 div(d);
    for (uint32_t n = 0; n < 20000; ++n) {
      ASSERT_EQ(div.div(n), n / d) << n << " / " << d;
    }
  }
}

TEST(IntDivider32, EveryDivisorFamilyAtTheDangerousDividends) {
  uint64_t state = 1;
  for (uint32_t d = 1; d <= 5000; ++d) expect_divides(d, state);
  for (int s = 1; s <= 31; ++s) {  // powers of two and their neighbours, up to 2^31
    const uint64_t p = uint64_t{1} << s;
    for (uint64_t d : {p - 1, p, p + 1, p + p / 2}) {
      if (d >= 1 && d <= (uint64_t{1} << 31)) expect_divides(static_cast<uint32_t>(d), state);
    }
  }
  for (int i = 0; i < 5000; ++i) {
    const auto d = static_cast<uint32_t>(next_random(state) % (uint64_t{1} << 31) + 1);
    expect_divides(d, state);
  }
  // Divisors like sizes of real tensors: products of small primes.
  for (uint32_t d : {3u * 224u * 224u, 64u * 56u * 56u, 768u, 50257u, 1000000007u, 2147483647u}) {
    expect_divides(d, state);
  }
}

TEST(IntDivider32, TheMultiplierFitsItsWordForEveryShift) {
  // m = floor(2^32 (2^s - d) / d) + 1 must stay below 2^32: worst just above a power of two.
  for (int s = 1; s <= 31; ++s) {
    const uint32_t d = (1u << (s - 1)) + 1;
    const IntDivider32 div(d);
    EXPECT_EQ(div.shift, static_cast<uint32_t>(s));
    const uint64_t exact = ((uint64_t{1} << 32) * ((uint64_t{1} << s) - d)) / d + 1;
    EXPECT_EQ(uint64_t{div.multiplier}, exact) << d;
  }
  EXPECT_EQ(IntDivider32(1u << 31).multiplier, 1u);
  EXPECT_EQ(IntDivider32(1u << 31).div(static_cast<uint32_t>(kMaxIndex32)), 0u);
}

template <int N>
StridedIndexer<N> build(const std::vector<int64_t>& sizes, const std::vector<std::vector<int64_t>>& strides,
                        bool memory_order = true) {
  StridedIndexer<N> ix;
  const int64_t* s[N];
  for (int k = 0; k < N; ++k) s[k] = strides[static_cast<size_t>(k)].data();
  EXPECT_TRUE(ix.build(static_cast<int64_t>(sizes.size()), sizes.data(), s, memory_order));
  return ix;
}

template <int N>
void expect_same_offsets(const StridedIndexer<N>& ix, int64_t step = 1) {
  ASSERT_TRUE(StridedIndexer32<N>::fits(ix));
  const StridedIndexer32<N> ix32(ix);
  const int64_t n = ix.numel();
  for (int64_t i = 0; i < n; i += step) {
    const auto want = ix.offsets(i);
    const auto got = ix32.offsets(static_cast<uint32_t>(i));
    for (int k = 0; k < N; ++k) ASSERT_EQ(int64_t{got[k]}, want[k]) << "element " << i << " operand " << k;
  }
  const auto last = ix32.offsets(static_cast<uint32_t>(n - 1));
  for (int k = 0; k < N; ++k) ASSERT_EQ(int64_t{last[k]}, ix.offsets(n - 1)[k]);
}

TEST(StridedIndexer32, OffsetsMatchThe64BitIndexer) {
  // out contiguous [6, 5, 4]; a transposed input; a row broadcast; a flipped, sliced input.
  const std::vector<int64_t> sizes{6, 5, 4};
  expect_same_offsets(build<4>(sizes, {{20, 4, 1}, {1, 6, 30}, {0, 1, 0}, {-40, 8, -2}}));
  // Not merged in memory order: the output itself permuted.
  expect_same_offsets(build<3>(sizes, {{1, 6, 30}, {20, 4, 1}, {0, 0, 1}}, false));
  // A scalar, a single element, and one long dim.
  expect_same_offsets(build<2>({}, {{}, {}}));
  expect_same_offsets(build<2>({1, 1}, {{1, 1}, {0, 0}}));
  expect_same_offsets(build<2>({1000003}, {{1}, {3}}), 7);
  // Many dims that do not merge.
  std::vector<int64_t> many(12, 2), a(12), b(12);
  for (size_t d = 0; d < 12; ++d) {
    a[d] = int64_t{3} << (11 - d);  // gaps: no merging
    b[d] = d % 2 == 0 ? 0 : int64_t{1} << d;
  }
  expect_same_offsets(build<2>(many, {a, b}));
}

TEST(StridedIndexer32, OffsetsNearTheInt32LimitStayExact) {
  // [2^15, 2^16 - 1] with an input whose offsets reach exactly 2^31 - 1 (checked at a sample).
  const int64_t rows = int64_t{1} << 15, cols = (int64_t{1} << 16) - 1;
  const int64_t row_stride = (kMaxIndex32 - (cols - 1)) / (rows - 1);
  StridedIndexer<2> ix = build<2>({rows, cols}, {{cols, 1}, {row_stride, 1}});
  ASSERT_EQ(ix.ndim, 2);
  ASSERT_TRUE(StridedIndexer32<2>::fits(ix));
  const StridedIndexer32<2> ix32(ix);
  for (int64_t i : {int64_t{0}, cols - 1, cols, rows * cols / 2 + 12345, rows * cols - 1}) {
    EXPECT_EQ(int64_t{ix32.offsets(static_cast<uint32_t>(i))[1]}, ix.offsets(i)[1]) << i;
  }
  EXPECT_LE(ix.offsets(rows * cols - 1)[1], kMaxIndex32);
}

TEST(StridedIndexer32, FitsOnlyWhenEveryElementAndOffsetDoes) {
  // Element counts: 2^31 - 1 fits, 2^31 does not.
  EXPECT_TRUE(StridedIndexer32<1>::fits(build<1>({kMaxIndex32}, {{1}})));
  EXPECT_FALSE(StridedIndexer32<1>::fits(build<1>({kMaxIndex32 + 1}, {{1}})));
  EXPECT_FALSE(StridedIndexer32<1>::fits(build<1>({int64_t{1} << 20, int64_t{1} << 12}, {{1 << 12, 1}})));
  // Offsets: a last offset of exactly 2^31 - 1 fits, one more does not.
  EXPECT_TRUE(StridedIndexer32<2>::fits(build<2>({2, 1000}, {{1000, 1}, {kMaxIndex32 - 999, 1}})));
  EXPECT_FALSE(StridedIndexer32<2>::fits(build<2>({2, 1000}, {{1000, 1}, {kMaxIndex32 - 998, 1}})));
  // Negative strides count by their size (a flipped view starts at its far end).
  EXPECT_TRUE(StridedIndexer32<2>::fits(build<2>({2, 1000}, {{1000, 1}, {-(kMaxIndex32 - 999), 1}})));
  EXPECT_FALSE(StridedIndexer32<2>::fits(build<2>({2, 1000}, {{1000, 1}, {-(kMaxIndex32 - 998), 1}})));
  // A stride so large that (size - 1) * stride would overflow int64.
  EXPECT_FALSE(StridedIndexer32<2>::fits(build<2>({4, 3}, {{3, 1}, {int64_t{1} << 62, 1}})));
  // A broadcast input (stride 0) never limits.
  EXPECT_TRUE(StridedIndexer32<2>::fits(build<2>({1 << 15, 1 << 15}, {{1 << 15, 1}, {0, 0}})));
}

}  // namespace
}  // namespace ember::kernels
