#pragma once
// The CUDA generator's host-side logic, free of CUDA headers so the tests check it without a GPU:
// the per-element samplers the kernels run (EMBER_HD), the per-device generator states and their
// byte layout.
//
// A device's generator is (seed, offset). Each call reserves the Philox counters it will use by
// advancing the offset on the host, under a mutex, before it launches: the kernels never touch
// the state, so nothing waits for the GPU, and calls queued on different streams draw disjoint
// numbers. Which counter and lane element i reads is fixed by src/kernels/philox.h.
#include <array>
#include <cstdint>
#include <cstring>
#include <mutex>
#include <optional>
#include <span>
#include <type_traits>
#include <vector>

#include "ember/half.h"
#include "kernels/dtype_dispatch.h"
#include "kernels/philox.h"

namespace ember::cuda_impl {

// ---- samplers: the value of element i from its Philox block and lane ----
// The arithmetic follows the CPU backend (random.cpp): the same bit counts for uniform floats,
// the same `u * (to - from) + from` and `z * std + mean`, the same integer ranges.

template <typename T>
struct UniformSampler {
  using C = kernels::compute_t<T>;
  static constexpr int kPerCounter = std::is_same_v<T, double> ? 2 : 4;
  C from, to;
  EMBER_HD T operator()(const kernels::Philox4& b, int lane) const {
    C u;
    if constexpr (std::is_same_v<T, double>) {
      u = kernels::uniform_double(b.v[2 * lane], b.v[2 * lane + 1]);
    } else {
      // As many random bits as T's mantissa holds: for the unit interval a 16-bit result can
      // then never round up to 1.
      constexpr int kBits = std::is_same_v<T, Half> ? 11 : std::is_same_v<T, BFloat16> ? 8 : 24;
      u = kernels::uniform_float<kBits>(kernels::word32(b, lane));
    }
    return static_cast<T>(u * (to - from) + from);
  }
};

template <typename T>
struct NormalSampler {
  using C = kernels::compute_t<T>;
  static constexpr int kPerCounter = std::is_same_v<T, double> ? 2 : 4;
  C mean, stdv;
  EMBER_HD T operator()(const kernels::Philox4& b, int lane) const {
    if constexpr (std::is_same_v<T, double>) {
      return kernels::normal_double_lane(b, lane) * stdv + mean;
    } else {
      return static_cast<T>(kernels::normal_float_lane(b, lane) * stdv + mean);
    }
  }
};

/// low + (r mod range) with r random, as the CPU draws it: 32-bit draws when the range fits in
/// 32 bits (kWide false), 64-bit ones otherwise. The sum wraps in uint64 so that ranges reaching
/// past INT64_MAX from a negative low still land in [low, high).
template <typename T, bool kWide>
struct RandIntSampler {
  static constexpr int kPerCounter = kWide ? 2 : 4;
  uint64_t range;
  uint64_t low;
  EMBER_HD T operator()(const kernels::Philox4& b, int lane) const {
    uint64_t r;
    if constexpr (kWide) {
      r = kernels::word64(b, lane) % range;
    } else {
      r = kernels::word32(b, lane) % static_cast<uint32_t>(range);
    }
    const int64_t v = static_cast<int64_t>(r + low);
    if constexpr (std::is_same_v<T, Half> || std::is_same_v<T, BFloat16>) {
      return T(static_cast<float>(v));
    } else {
      return static_cast<T>(v);
    }
  }
};

/// Whether a randint range [low, high) needs 64-bit draws.
inline bool randint_is_wide(int64_t low, int64_t high) {
  return static_cast<uint64_t>(high) - static_cast<uint64_t>(low) >= (uint64_t{1} << 32);
}

// ---- the generators ----

/// Devices the CUDA generator keeps states for; higher indices are refused.
inline constexpr int kMaxRngDevices = 64;
/// PyTorch's default_rng_seed_val: its CUDA generators start from it until seeded, so an
/// unseeded program is reproducible (unlike the CPU generator's random start).
inline constexpr uint64_t kDefaultCudaSeed = 67280421310721ULL;

struct GeneratorState {
  uint64_t seed = kDefaultCudaSeed;
  uint64_t offset = 0;
  friend bool operator==(const GeneratorState&, const GeneratorState&) = default;
};

/// One (seed, offset) per device, guarded by a mutex. Device indices are checked by the caller
/// (valid_device) so that errors name the op.
class PhiloxGenerators {
 public:
  static bool valid_device(int device) { return device >= 0 && device < kMaxRngDevices; }

  /// The state a call draws from; the device's offset moves past the `counters` it will use.
  GeneratorState reserve(int device, uint64_t counters) {
    std::lock_guard lock(mutex_);
    const GeneratorState s = states_[device];
    states_[device].offset += counters;
    return s;
  }
  /// manual_seed: every device restarts from `seed` at offset 0, as torch.manual_seed seeds
  /// every GPU.
  void seed_all(uint64_t seed) {
    std::lock_guard lock(mutex_);
    for (GeneratorState& s : states_) s = GeneratorState{seed, 0};
  }
  GeneratorState get(int device) {
    std::lock_guard lock(mutex_);
    return states_[device];
  }
  void set(int device, GeneratorState s) {
    std::lock_guard lock(mutex_);
    states_[device] = s;
  }

 private:
  std::mutex mutex_;
  std::array<GeneratorState, kMaxRngDevices> states_{};
};

// ---- the state as bytes: magic, version, reserved zero word, seed, offset (little-endian) ----

inline constexpr char kRngStateMagic[8] = {'e', 'm', 'b', 'r', 'c', 'u', 'd', 'a'};
inline constexpr uint32_t kRngStateVersion = 1;
inline constexpr size_t kRngStateBytes = 32;

namespace rng_detail {
inline void put_le(uint8_t* p, uint64_t v, int bytes) {
  for (int k = 0; k < bytes; ++k) p[k] = static_cast<uint8_t>(v >> (8 * k));
}
inline uint64_t get_le(const uint8_t* p, int bytes) {
  uint64_t v = 0;
  for (int k = 0; k < bytes; ++k) v |= static_cast<uint64_t>(p[k]) << (8 * k);
  return v;
}
}  // namespace rng_detail

inline std::vector<uint8_t> encode_rng_state(GeneratorState s) {
  std::vector<uint8_t> bytes(kRngStateBytes, 0);
  std::memcpy(bytes.data(), kRngStateMagic, sizeof(kRngStateMagic));
  rng_detail::put_le(bytes.data() + 8, kRngStateVersion, 4);
  rng_detail::put_le(bytes.data() + 16, s.seed, 8);
  rng_detail::put_le(bytes.data() + 24, s.offset, 8);
  return bytes;
}

/// The state in `bytes`, or nothing when they are not a state encode_rng_state wrote.
inline std::optional<GeneratorState> decode_rng_state(std::span<const uint8_t> bytes) {
  using rng_detail::get_le;
  if (bytes.size() != kRngStateBytes || std::memcmp(bytes.data(), kRngStateMagic, sizeof(kRngStateMagic)) != 0 ||
      get_le(bytes.data() + 8, 4) != kRngStateVersion || get_le(bytes.data() + 12, 4) != 0) {
    return std::nullopt;
  }
  return GeneratorState{get_le(bytes.data() + 16, 8), get_le(bytes.data() + 24, 8)};
}

}  // namespace ember::cuda_impl
