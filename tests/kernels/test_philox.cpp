// kernels/philox.h on the host: Random123's known answers for Philox4x32-10, the ranges of the
// uniform conversions, the moments of the Box-Muller normals, and the stream layout's promise
// that an element's value depends on its index only (never on how threads split the work).
#include <gtest/gtest.h>

#include <cmath>
#include <cstdint>
#include <vector>

#include "kernels/philox.h"

namespace ember::kernels {
namespace {

struct Kat {
  Philox4 counter;
  uint32_t key[2];
  Philox4 expected;
};

// Random123's kat_vectors, the three "philox4x32 10" lines: counter, key, result.
constexpr Kat kKats[] = {
    {{{0x00000000u, 0x00000000u, 0x00000000u, 0x00000000u}},
     {0x00000000u, 0x00000000u},
     {{0x6627e8d5u, 0xe169c58du, 0xbc57ac4cu, 0x9b00dbd8u}}},
    {{{0xffffffffu, 0xffffffffu, 0xffffffffu, 0xffffffffu}},
     {0xffffffffu, 0xffffffffu},
     {{0x408f276du, 0x41c83b0eu, 0xa20bc7c6u, 0x6d5451fdu}}},
    {{{0x243f6a88u, 0x85a308d3u, 0x13198a2eu, 0x03707344u}},
     {0xa4093822u, 0x299f31d0u},
     {{0xd16cfe09u, 0x94fdccebu, 0x5001e420u, 0x24126ea1u}}},
};

TEST(Philox, KnownAnswerVectors) {
  for (const Kat& k : kKats) {
    const Philox4 r = philox4x32_10(k.counter, k.key[0], k.key[1]);
    for (int w = 0; w < 4; ++w) EXPECT_EQ(r.v[w], k.expected.v[w]) << "word " << w;
  }
}

TEST(Philox, KnownAnswerAtCompileTime) {
  static_assert(philox4x32_10(Philox4{{0, 0, 0, 0}}, 0, 0).v[0] == 0x6627e8d5u);
  static_assert(philox_block(0, 0).v[3] == 0x9b00dbd8u);
}

TEST(Philox, BlockLayoutPutsCounterAndSeedInTheLowWordsFirst) {
  const uint64_t seed = 0x299f31d0a4093822ull, counter = 0x85a308d3243f6a88ull;
  const Philox4 a = philox_block(seed, counter);
  const Philox4 b = philox4x32_10(Philox4{{0x243f6a88u, 0x85a308d3u, 0u, 0u}}, 0xa4093822u, 0x299f31d0u);
  for (int w = 0; w < 4; ++w) EXPECT_EQ(a.v[w], b.v[w]);
  EXPECT_EQ(word64(a, 0), (uint64_t{a.v[0]} << 32) | a.v[1]);
  EXPECT_EQ(word64(a, 1), (uint64_t{a.v[2]} << 32) | a.v[3]);
}

TEST(Philox, CountersRoundUp) {
  EXPECT_EQ(philox_counters(0, 4), 0u);
  EXPECT_EQ(philox_counters(1, 4), 1u);
  EXPECT_EQ(philox_counters(4, 4), 1u);
  EXPECT_EQ(philox_counters(5, 4), 2u);
  EXPECT_EQ(philox_counters(7, 2), 4u);
}

TEST(Philox, UniformFloatEndpoints) {
  EXPECT_EQ(uniform_float(0u), 0.0f);
  EXPECT_LT(uniform_float(0xffffffffu), 1.0f);
  EXPECT_EQ(uniform_float(0xffffffffu), 1.0f - 0x1p-24f);
  EXPECT_EQ(uniform_float<11>(0xffffffffu), 1.0f - 0x1p-11f);
  EXPECT_EQ(uniform_float<8>(0xffffffffu), 1.0f - 0x1p-8f);
  EXPECT_GT(uniform_float_open0(0u), 0.0f);
  EXPECT_EQ(uniform_float_open0(0u), 0x1p-24f);
  EXPECT_EQ(uniform_float_open0(0xffffffffu), 1.0f);
  EXPECT_EQ(uniform_double(0u, 0u), 0.0);
  EXPECT_LT(uniform_double(0xffffffffu, 0xffffffffu), 1.0);
  EXPECT_EQ(uniform_double(0xffffffffu, 0xffffffffu), 1.0 - 0x1p-53);
  EXPECT_EQ(uniform_double_open0(0u, 0u), 0x1p-53);
  EXPECT_EQ(uniform_double_open0(0xffffffffu, 0xffffffffu), 1.0);
}

TEST(Philox, UniformsStayInRangeOnRealDraws) {
  double sum = 0;
  constexpr uint64_t kBlocks = 50000;
  for (uint64_t g = 0; g < kBlocks; ++g) {
    const Philox4 b = philox_block(42, g);
    for (int lane = 0; lane < 4; ++lane) {
      const float u = uniform_float(b.v[lane]);
      const float o = uniform_float_open0(b.v[lane]);
      ASSERT_GE(u, 0.0f);
      ASSERT_LT(u, 1.0f);
      ASSERT_GT(o, 0.0f);
      ASSERT_LE(o, 1.0f);
      sum += u;
    }
    for (int lane = 0; lane < 2; ++lane) {
      const double d = uniform_double(b.v[2 * lane], b.v[2 * lane + 1]);
      ASSERT_GE(d, 0.0);
      ASSERT_LT(d, 1.0);
    }
  }
  EXPECT_NEAR(sum / (4.0 * kBlocks), 0.5, 0.005);
}

template <typename F>
void expect_standard_normal(F&& draw, int n) {
  double sum = 0, sq = 0;
  int beyond3 = 0;
  for (int i = 0; i < n; ++i) {
    const double z = draw(i);
    ASSERT_TRUE(std::isfinite(z)) << "draw " << i;
    sum += z;
    sq += z * z;
    beyond3 += std::fabs(z) > 3.0;
  }
  const double mean = sum / n, var = sq / n - mean * mean;
  EXPECT_NEAR(mean, 0.0, 0.01);
  EXPECT_NEAR(var, 1.0, 0.02);
  EXPECT_NEAR(static_cast<double>(beyond3) / n, 0.0027, 0.001);  // two-sided 3-sigma tail
}

TEST(Philox, NormalFloatMoments) {
  expect_standard_normal([](int i) { return static_cast<double>(normal_float_lane(philox_block(7, i / 4), i % 4)); },
                         200000);
}

TEST(Philox, NormalDoubleMoments) {
  expect_standard_normal([](int i) { return normal_double_lane(philox_block(7, i / 2), i % 2); }, 200000);
}

TEST(Philox, BoxMullerExtremesStayFinite) {
  const NormalPair<float> f = box_muller(uniform_float_open0(0u), 0.0f);  // smallest u1: the largest radius
  EXPECT_TRUE(std::isfinite(f.first));
  EXPECT_GT(f.first, 5.0f);
  const NormalPair<double> d = box_muller(uniform_double_open0(0u, 0u), 0.25);
  EXPECT_TRUE(std::isfinite(d.second));
  EXPECT_GT(d.second, 8.0);
  EXPECT_EQ(box_muller(1.0f, 0.3f).first, 0.0f);  // u1 = 1: radius 0
}

// A kernel's grid-stride loop over blocks, simulated with `threads` threads, each thread taking
// its blocks in turn; the values must not depend on `threads`.
std::vector<uint32_t> fill_like_a_kernel(uint64_t seed, uint64_t offset, uint64_t n, int per_counter, int threads) {
  std::vector<uint32_t> out(n, 0xdeadbeefu);
  const uint64_t blocks = philox_counters(n, per_counter);
  for (int t = 0; t < threads; ++t) {
    for (uint64_t g = t; g < blocks; g += threads) {
      philox_visit_block(seed, offset, g, per_counter, n, [&](uint64_t i, const Philox4& b, int lane) {
        out[i] = per_counter == 4 ? word32(b, lane) : static_cast<uint32_t>(word64(b, lane) >> 7);
      });
    }
  }
  return out;
}

TEST(Philox, ElementsDependOnTheirIndexOnly) {
  const uint64_t seed = 0x1234567890abcdefull, offset = 1000;
  for (int per_counter : {2, 4}) {
    for (uint64_t n : {0u, 1u, 3u, 4u, 5u, 17u, 1031u}) {
      const std::vector<uint32_t> one = fill_like_a_kernel(seed, offset, n, per_counter, 1);
      for (int threads : {2, 3, 64, 4096}) {
        EXPECT_EQ(fill_like_a_kernel(seed, offset, n, per_counter, threads), one) << n << " " << threads;
      }
      for (uint64_t i = 0; i < n; ++i) {
        // Element i by itself: its block and lane from the documented formula.
        const Philox4 b = philox_block(seed, offset + i / per_counter);
        const int lane = static_cast<int>(i % per_counter);
        const uint32_t v = per_counter == 4 ? word32(b, lane) : static_cast<uint32_t>(word64(b, lane) >> 7);
        ASSERT_EQ(one[i], v) << "element " << i;
      }
    }
  }
}

TEST(Philox, ConsecutiveCallsUseFreshCounters) {
  // A call of 10 elements at offset 0 uses counters 0-2; the next call starts at offset 3, so its
  // first element is the first word of block 3 and shares nothing with the first call.
  const std::vector<uint32_t> first = fill_like_a_kernel(5, 0, 10, 4, 1);
  const std::vector<uint32_t> second = fill_like_a_kernel(5, philox_counters(10, 4), 10, 4, 1);
  EXPECT_EQ(second[0], philox_block(5, 3).v[0]);
  for (uint32_t a : first) {
    for (uint32_t b : second) EXPECT_NE(a, b);
  }
}

TEST(Philox, SeedsGiveDifferentStreams) {
  EXPECT_NE(philox_block(1, 0).v[0], philox_block(2, 0).v[0]);
  EXPECT_NE(philox_block(uint64_t{1} << 32, 0).v[0], philox_block(0, 0).v[0]);  // the seed's high word counts
  EXPECT_NE(philox_block(0, uint64_t{1} << 32).v[0], philox_block(0, 0).v[0]);  // and the counter's
}

}  // namespace
}  // namespace ember::kernels
