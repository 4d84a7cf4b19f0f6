// The CPU's default generator: a Mersenne Twister drawn exactly as PyTorch's CPU generator
// draws it, so that for the same seed rand, randint and randperm give PyTorch's numbers, and
// randn gives them for fewer than 16 elements (larger randn uses PyTorch's Box–Muller layout in
// scalar code; PyTorch's AVX2 path may differ from it in the last bits).
#include <bit>
#include <cmath>
#include <limits>
#include <mutex>
#include <numbers>
#include <optional>
#include <random>
#include <sstream>
#include <string>
#include <string_view>

#include "backend/cpu/cpu_backend.h"
#include "backend/cpu/dispatch.h"
#include "core/check.h"

namespace ember::cpu {
namespace {

class CpuGenerator {
 public:
  CpuGenerator() { seed(std::random_device{}()); }

  void seed(uint64_t s) {
    engine_.seed(static_cast<uint32_t>(s));
    seed_ = s;
    next_normal_.reset();
  }
  uint64_t initial_seed() const { return seed_; }
  uint32_t random() { return static_cast<uint32_t>(engine_()); }
  uint64_t random64() {
    uint64_t hi = random();
    uint64_t lo = random();
    return (hi << 32) | lo;
  }
  // Uniform on [0, 1) with as many random bits as T's mantissa holds (PyTorch's uniform_real).
  template <typename T>
  compute_t<T> uniform01() {
    using C = compute_t<T>;
    if constexpr (std::is_same_v<T, double>) {
      constexpr uint64_t mask = (uint64_t{1} << 53) - 1;
      return static_cast<double>(random64() & mask) * (1.0 / static_cast<double>(uint64_t{1} << 53));
    } else {
      constexpr int digits = std::is_same_v<T, Half> ? 11 : std::is_same_v<T, BFloat16> ? 8 : 24;
      constexpr uint32_t mask = (uint32_t{1} << digits) - 1;
      return static_cast<C>(random() & mask) * (C(1) / static_cast<C>(uint32_t{1} << digits));
    }
  }
  // PyTorch's normal_distribution<double>, including the cached second Box–Muller value.
  double normal_double() {
    if (next_normal_) {
      double v = *next_normal_;
      next_normal_.reset();
      return v;
    }
    double u1 = uniform01<double>();
    double u2 = uniform01<double>();
    double r = std::sqrt(-2.0 * std::log1p(-u2));
    double theta = 2.0 * std::numbers::pi * u1;
    next_normal_ = r * std::sin(theta);
    return r * std::cos(theta);
  }
  std::mutex& mutex() { return mutex_; }

  // The state as text: a tag, the seed, the Mersenne Twister as the standard library streams it
  // (its 624 words and position) and the cached normal. Text keeps it independent of the
  // library's member layout; the tag lets set_state refuse bytes from anything else.
  std::string state() const {
    std::ostringstream out;
    out << kStateTag << ' ' << seed_ << ' ' << engine_ << ' ' << (next_normal_ ? 1 : 0) << ' ';
    if (next_normal_) out << std::bit_cast<uint64_t>(*next_normal_);
    return out.str();
  }
  void set_state(std::string_view text) {
    std::istringstream in{std::string(text)};
    std::string tag;
    uint64_t seed = 0;
    std::mt19937 engine;
    int has_normal = 0;
    uint64_t normal_bits = 0;
    in >> tag >> seed >> engine >> has_normal;
    if (has_normal == 1) in >> normal_bits;
    EMBER_CHECK(in && tag == kStateTag && (has_normal == 0 || has_normal == 1),
                "set_rng_state: not a CPU generator state saved by ember (expected one from get_rng_state())");
    seed_ = seed;
    engine_ = engine;
    next_normal_.reset();
    if (has_normal == 1) next_normal_ = std::bit_cast<double>(normal_bits);
  }

 private:
  static constexpr const char* kStateTag = "ember-cpu-mt19937-v1";
  std::mt19937 engine_;
  uint64_t seed_ = 0;
  std::optional<double> next_normal_;
  std::mutex mutex_;
};

CpuGenerator& generator() {
  static CpuGenerator g;
  return g;
}

template <typename T>
void fill_uniform(CpuGenerator& g, T* data, int64_t n, double low, double high) {
  using C = compute_t<T>;
  const C from = static_cast<C>(low), to = static_cast<C>(high);
  // One rounding, as PyTorch's x86 builds compute x * (to - from) + from (their kernels are
  // compiled with FMA); written out so that every optimisation level gives the same values.
  for (int64_t i = 0; i < n; ++i) data[i] = static_cast<T>(std::fma(g.uniform01<T>(), to - from, from));
}

// Box–Muller over blocks of 16: the first 8 uniforms give radii, the next 8 angles.
template <typename C>
void normal_block16(C* d, C mean, C stdv) {
  for (int j = 0; j < 8; ++j) {
    const C u1 = 1 - d[j];
    const C u2 = d[j + 8];
    const C radius = std::sqrt(-2 * std::log(u1));
    const C theta = static_cast<C>(2.0 * std::numbers::pi) * u2;
    d[j] = radius * std::cos(theta) * stdv + mean;
    d[j + 8] = radius * std::sin(theta) * stdv + mean;
  }
}

template <typename T>
void fill_normal(CpuGenerator& g, T* data, int64_t n, double mean, double stdv) {
  using C = compute_t<T>;
  if (n < 16 || !std::is_floating_point_v<T>) {
    for (int64_t i = 0; i < n; ++i) data[i] = static_cast<T>(g.normal_double() * stdv + mean);
    return;
  }
  if constexpr (std::is_floating_point_v<T>) {
    for (int64_t i = 0; i < n; ++i) data[i] = g.uniform01<T>();
    for (int64_t i = 0; i + 16 <= n; i += 16) normal_block16<C>(data + i, static_cast<C>(mean), static_cast<C>(stdv));
    if (n % 16 != 0) {  // redraw the last 16 so the tail gets a full block, as PyTorch does
      T* tail = data + n - 16;
      for (int i = 0; i < 16; ++i) tail[i] = g.uniform01<T>();
      normal_block16<C>(tail, static_cast<C>(mean), static_cast<C>(stdv));
    }
  }
}

template <typename T>
void fill_randint(CpuGenerator& g, T* data, int64_t n, int64_t low, int64_t high) {
  const uint64_t range = static_cast<uint64_t>(high) - static_cast<uint64_t>(low);
  for (int64_t i = 0; i < n; ++i) {
    uint64_t r = range >= (uint64_t{1} << 32) ? g.random64() % range : g.random() % range;
    data[i] = static_cast<T>(static_cast<int64_t>(r + static_cast<uint64_t>(low)));
  }
}

}  // namespace

void CpuBackend::random(const TensorView& out, const RandomArgs& args) {
  EMBER_CHECK(out.is_contiguous(), "[random] internal error: output must be contiguous");
  CpuGenerator& g = generator();
  std::lock_guard lock(g.mutex());
  const int64_t n = out.numel();
  switch (args.distribution) {
    case Distribution::Uniform:
      dispatch_floating(out.dtype, "uniform_", [&]<typename T>() { fill_uniform(g, out.ptr<T>(), n, args.a, args.b); });
      break;
    case Distribution::Normal:
      dispatch_floating(out.dtype, "normal_", [&]<typename T>() { fill_normal(g, out.ptr<T>(), n, args.a, args.b); });
      break;
    case Distribution::RandInt:
      dispatch_all(out.dtype, "random_", [&]<typename T>() {
        fill_randint(g, out.ptr<T>(), n, static_cast<int64_t>(args.a), static_cast<int64_t>(args.b));
      });
      break;
  }
}

void CpuBackend::randperm(const TensorView& out) {
  EMBER_CHECK(out.is_contiguous() && out.ndim() == 1, "[randperm] internal error: output must be 1-D contiguous");
  CpuGenerator& g = generator();
  std::lock_guard lock(g.mutex());
  const int64_t n = out.numel();
  dispatch_all(out.dtype, "randperm", [&]<typename T>() {
    if constexpr (std::is_same_v<T, bool>) {
      detail::fail("\"randperm\" not implemented for 'Bool'");
    } else {
      T* r = out.ptr<T>();
      for (int64_t i = 0; i < n; ++i) r[i] = static_cast<T>(i);
      // Fisher–Yates in PyTorch's order, one 32-bit draw per position.
      for (int64_t i = 0; i + 1 < n; ++i) {
        int64_t z = static_cast<int64_t>(g.random() % static_cast<uint64_t>(n - i));
        std::swap(r[i], r[z + i]);
      }
    }
  });
}

void CpuBackend::manual_seed(uint64_t seed) {
  CpuGenerator& g = generator();
  std::lock_guard lock(g.mutex());
  g.seed(seed);
}

std::vector<uint8_t> CpuBackend::rng_state(int /*device_index: the CPU has one generator*/) {
  CpuGenerator& g = generator();
  std::lock_guard lock(g.mutex());
  const std::string text = g.state();
  return {text.begin(), text.end()};
}

void CpuBackend::set_rng_state(int /*device_index*/, std::span<const uint8_t> state) {
  CpuGenerator& g = generator();
  std::lock_guard lock(g.mutex());
  g.set_state(std::string_view(reinterpret_cast<const char*>(state.data()), state.size()));
}

uint64_t CpuBackend::initial_seed(int /*device_index*/) { return generator().initial_seed(); }

}  // namespace ember::cpu
