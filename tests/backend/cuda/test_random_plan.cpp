// backend/cuda/random_plan.h on the host: the samplers the CUDA kernels run (ranges and moments
// per dtype, randint's 32- and 64-bit paths), the per-device generator bookkeeping and the state
// bytes that set_rng_state accepts.
#include <gtest/gtest.h>

#include <cmath>
#include <cstdint>
#include <limits>
#include <set>
#include <string>
#include <vector>

#include "backend/cuda/cuda_backend.h"
#include "backend/cuda/random_plan.h"
#include "ember/error.h"

namespace ember::cuda_impl {
namespace {

using kernels::Philox4;

// Calls f(value) for `n` elements drawn as the kernel draws them at (seed, offset 0).
template <typename Sampler, typename F>
void draw(const Sampler& s, uint64_t seed, uint64_t n, F&& f) {
  const uint64_t blocks = kernels::philox_counters(n, Sampler::kPerCounter);
  for (uint64_t g = 0; g < blocks; ++g) {
    kernels::philox_visit_block(seed, 0, g, Sampler::kPerCounter, n,
                                [&](uint64_t, const Philox4& b, int lane) { f(s(b, lane)); });
  }
}

template <typename T>
void expect_unit_uniform() {
  double sum = 0;
  const uint64_t n = 100000;
  draw(UniformSampler<T>{0, 1}, 11, n, [&](T v) {
    const double d = static_cast<double>(static_cast<float>(v));
    ASSERT_GE(d, 0.0);
    ASSERT_LT(d, 1.0);  // rounding to T never reaches the excluded end
    sum += d;
  });
  EXPECT_NEAR(sum / n, 0.5, 0.01);
}

TEST(CudaRandomPlan, UniformStaysInTheUnitIntervalForEveryFloatingDtype) {
  expect_unit_uniform<float>();
  expect_unit_uniform<Half>();
  expect_unit_uniform<BFloat16>();
  double sum = 0;
  draw(UniformSampler<double>{0, 1}, 11, 100000, [&](double v) {
    ASSERT_GE(v, 0.0);
    ASSERT_LT(v, 1.0);
    sum += v;
  });
  EXPECT_NEAR(sum / 100000, 0.5, 0.01);
}

TEST(CudaRandomPlan, UniformScalesToTheRange) {
  float lo = 1e9f, hi = -1e9f;
  draw(UniformSampler<float>{-3.0f, 5.0f}, 3, 100000, [&](float v) {
    lo = std::min(lo, v);
    hi = std::max(hi, v);
  });
  EXPECT_GE(lo, -3.0f);
  EXPECT_LT(lo, -2.99f);
  EXPECT_LT(hi, 5.0f);
  EXPECT_GT(hi, 4.99f);
}

TEST(CudaRandomPlan, UniformUsesTheCpuBitCounts) {
  // All-ones words give the largest value each dtype can draw.
  const Philox4 ones{{0xffffffffu, 0xffffffffu, 0xffffffffu, 0xffffffffu}};
  EXPECT_EQ(static_cast<float>(UniformSampler<Half>{0, 1}(ones, 0)), 1.0f - 0x1p-11f);
  EXPECT_EQ(static_cast<float>(UniformSampler<BFloat16>{0, 1}(ones, 0)), 1.0f - 0x1p-8f);
  EXPECT_EQ((UniformSampler<float>{0, 1}(ones, 3)), 1.0f - 0x1p-24f);
  EXPECT_EQ((UniformSampler<double>{0, 1}(ones, 1)), 1.0 - 0x1p-53);
  EXPECT_EQ(UniformSampler<float>::kPerCounter, 4);
  EXPECT_EQ(UniformSampler<double>::kPerCounter, 2);
}

template <typename T>
void expect_normal(double mean, double stdv, double tol) {
  double sum = 0, sq = 0;
  const uint64_t n = 200000;
  draw(NormalSampler<T>{static_cast<kernels::compute_t<T>>(mean), static_cast<kernels::compute_t<T>>(stdv)}, 5, n,
       [&](T v) {
         const double d = static_cast<double>(static_cast<float>(v));
         ASSERT_TRUE(std::isfinite(d));
         sum += d;
         sq += d * d;
       });
  const double m = sum / n;
  EXPECT_NEAR(m, mean, tol * stdv);
  EXPECT_NEAR(std::sqrt(sq / n - m * m), stdv, tol * stdv);
}

TEST(CudaRandomPlan, NormalMomentsForEveryFloatingDtype) {
  expect_normal<float>(0.0, 1.0, 0.01);
  expect_normal<float>(3.0, 0.5, 0.01);
  expect_normal<Half>(-2.0, 2.0, 0.02);
  expect_normal<BFloat16>(1.0, 1.0, 0.03);
  expect_normal<double>(10.0, 4.0, 0.01);
}

template <typename T, bool kWide>
std::set<int64_t> randint_values(int64_t low, int64_t high, uint64_t n) {
  std::set<int64_t> seen;
  const RandIntSampler<T, kWide> s{static_cast<uint64_t>(high) - static_cast<uint64_t>(low),
                                   static_cast<uint64_t>(low)};
  draw(s, 9, n, [&](T v) {
    int64_t x;
    if constexpr (std::is_same_v<T, Half> || std::is_same_v<T, BFloat16>) {
      x = static_cast<int64_t>(static_cast<float>(v));
    } else {
      x = static_cast<int64_t>(v);
    }
    seen.insert(x);
  });
  return seen;
}

TEST(CudaRandomPlan, RandIntCoversExactlyTheRange) {
  const std::set<int64_t> small = randint_values<int64_t, false>(-3, 4, 10000);
  EXPECT_EQ(small, (std::set<int64_t>{-3, -2, -1, 0, 1, 2, 3}));
  EXPECT_EQ((randint_values<bool, false>(0, 2, 1000)), (std::set<int64_t>{0, 1}));
  EXPECT_EQ((randint_values<uint8_t, false>(0, 256, 100000).size()), 256u);
  EXPECT_EQ((randint_values<int8_t, false>(-128, 128, 100000).size()), 256u);
  EXPECT_EQ((randint_values<Half, false>(-5, 5, 10000).size()), 10u);
  EXPECT_EQ((randint_values<float, false>(100, 101, 100)), (std::set<int64_t>{100}));
}

TEST(CudaRandomPlan, RandIntWideRangesUse64BitDraws) {
  EXPECT_FALSE(randint_is_wide(0, int64_t{1} << 31));
  EXPECT_FALSE(randint_is_wide(-(int64_t{1} << 31), (int64_t{1} << 31) - 1));
  EXPECT_TRUE(randint_is_wide(0, int64_t{1} << 32));
  EXPECT_TRUE(randint_is_wide(std::numeric_limits<int64_t>::min(), std::numeric_limits<int64_t>::max()));
  EXPECT_EQ((RandIntSampler<int64_t, true>::kPerCounter), 2);
  EXPECT_EQ((RandIntSampler<int64_t, false>::kPerCounter), 4);

  const int64_t low = -(int64_t{1} << 40), high = int64_t{1} << 40;
  bool negative = false, positive = false, beyond32 = false;
  for (int64_t v : randint_values<int64_t, true>(low, high, 10000)) {
    ASSERT_GE(v, low);
    ASSERT_LT(v, high);
    negative |= v < 0;
    positive |= v > 0;
    beyond32 |= v > (int64_t{1} << 33) || v < -(int64_t{1} << 33);
  }
  EXPECT_TRUE(negative && positive && beyond32);

  // The widest range: from INT64_MIN to INT64_MAX, where low + r must wrap, not overflow.
  const int64_t mn = std::numeric_limits<int64_t>::min(), mx = std::numeric_limits<int64_t>::max();
  for (int64_t v : randint_values<int64_t, true>(mn, mx, 1000)) ASSERT_LT(v, mx);
}

TEST(CudaRandomPlan, GeneratorsStartFromPyTorchsDefaultSeed) {
  PhiloxGenerators g;
  EXPECT_EQ(kDefaultCudaSeed, 67280421310721ULL);
  for (int d : {0, 1, kMaxRngDevices - 1}) EXPECT_EQ(g.get(d), (GeneratorState{kDefaultCudaSeed, 0}));
  EXPECT_TRUE(PhiloxGenerators::valid_device(0));
  EXPECT_TRUE(PhiloxGenerators::valid_device(kMaxRngDevices - 1));
  EXPECT_FALSE(PhiloxGenerators::valid_device(-1));
  EXPECT_FALSE(PhiloxGenerators::valid_device(kMaxRngDevices));
}

TEST(CudaRandomPlan, ReserveAdvancesOnlyThatDevicesOffset) {
  PhiloxGenerators g;
  g.seed_all(42);
  EXPECT_EQ(g.reserve(1, 10), (GeneratorState{42, 0}));
  EXPECT_EQ(g.reserve(1, 3), (GeneratorState{42, 10}));
  EXPECT_EQ(g.get(1), (GeneratorState{42, 13}));
  EXPECT_EQ(g.get(0), (GeneratorState{42, 0}));
  EXPECT_EQ(g.reserve(0, 0), (GeneratorState{42, 0}));  // an empty tensor uses no counters
  g.seed_all(7);
  EXPECT_EQ(g.get(1), (GeneratorState{7, 0}));
  g.set(2, GeneratorState{5, 99});
  EXPECT_EQ(g.reserve(2, 1), (GeneratorState{5, 99}));
}

TEST(CudaRandomPlan, StateBytesRoundTrip) {
  for (GeneratorState s : {GeneratorState{}, GeneratorState{0, 0}, GeneratorState{~uint64_t{0}, 12345},
                           GeneratorState{0x0123456789abcdefull, ~uint64_t{0}}}) {
    const std::vector<uint8_t> bytes = encode_rng_state(s);
    EXPECT_EQ(bytes.size(), kRngStateBytes);
    const std::optional<GeneratorState> back = decode_rng_state(bytes);
    ASSERT_TRUE(back.has_value());
    EXPECT_EQ(*back, s);
  }
  // Little-endian, whatever the host: the seed's low byte comes first.
  const std::vector<uint8_t> bytes = encode_rng_state({0x0102030405060708ull, 1});
  EXPECT_EQ(bytes[16], 0x08);
  EXPECT_EQ(bytes[23], 0x01);
  EXPECT_EQ(bytes[24], 0x01);
}

TEST(CudaRandomPlan, ForeignStateBytesAreRefused) {
  const std::vector<uint8_t> good = encode_rng_state({1, 2});
  EXPECT_FALSE(decode_rng_state({}).has_value());
  EXPECT_FALSE(decode_rng_state(std::span(good).first(31)).has_value());
  std::vector<uint8_t> longer = good;
  longer.push_back(0);
  EXPECT_FALSE(decode_rng_state(longer).has_value());
  for (size_t at : {size_t{0}, size_t{7}, size_t{8}, size_t{12}, size_t{15}}) {
    std::vector<uint8_t> bad = good;
    bad[at] ^= 0x40;  // magic, version or the reserved word
    EXPECT_FALSE(decode_rng_state(bad).has_value()) << "byte " << at;
  }
  // The CPU generator's state (text beginning with its tag) is not a CUDA state.
  const std::string cpu = "ember-cpu-mt19937-v1 5489 1 2 3";
  EXPECT_FALSE(decode_rng_state(std::span(reinterpret_cast<const uint8_t*>(cpu.data()), cpu.size())).has_value());
}

// The backend's state entry points touch no GPU, so they run here too (on cuda:0).
TEST(CudaRandomPlan, BackendStateRoundTripsAndRefusesForeignBytes) {
  CudaBackend& backend = cuda_backend();
  const std::vector<uint8_t> saved = backend.rng_state(0);
  ASSERT_TRUE(decode_rng_state(saved).has_value());

  backend.manual_seed(123);
  EXPECT_EQ(*decode_rng_state(backend.rng_state(0)), (GeneratorState{123, 0}));
  const std::vector<uint8_t> state = encode_rng_state({99, 4096});
  backend.set_rng_state(0, state);
  EXPECT_EQ(backend.rng_state(0), state);

  const std::vector<uint8_t> junk(32, 0x5a);
  try {
    backend.set_rng_state(0, junk);
    ADD_FAILURE() << "set_rng_state accepted bytes it did not write";
  } catch (const Error& e) {
    EXPECT_NE(std::string(e.what()).find("not a CUDA generator state"), std::string::npos) << e.what();
  }
  EXPECT_EQ(backend.rng_state(0), state);  // a refused state changes nothing

  backend.set_rng_state(0, saved);
  EXPECT_EQ(backend.rng_state(0), saved);
}

}  // namespace
}  // namespace ember::cuda_impl
