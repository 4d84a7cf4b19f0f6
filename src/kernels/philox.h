#pragma once
// Philox4x32-10 (Salmon et al., "Parallel random numbers: as easy as 1, 2, 3", SC'11), the
// counter-based generator of Random123, cuRAND and PyTorch's CUDA generator, written once for
// the host (tests) and CUDA kernels (EMBER_HD, no CUDA headers).
//
// Stream layout used by the CUDA backend. A generator is (seed, offset). A call that fills n
// elements takes `per_counter` elements from each 128-bit Philox block and uses the counters
// offset, offset+1, ..., offset+ceil(n/per_counter)-1; the generator's offset then advances by
// that many. Element i of the call reads block
//     philox4x32_10({lo32(offset + i/per_counter), hi32(offset + i/per_counter), 0, 0},
//                   {lo32(seed), hi32(seed)})
// and lane i % per_counter of it: one 32-bit word per element when 32 bits suffice
// (per_counter 4), a pair of words when 64 bits are needed (per_counter 2: doubles, 64-bit
// integer ranges, randperm's sort keys). Normals come in Box-Muller pairs built from
// neighbouring lanes of one block. Each element is thus a pure function of (seed, offset, i,
// dtype, distribution): the launch configuration never shows in the numbers, so a seed gives the
// same tensor on any GPU. Counter words 2-3 stay 0, leaving 2^64 blocks per seed.
#include <cstdint>

#include "ember/half.h"  // EMBER_HD
#include "kernels/kmath.h"

namespace ember::kernels {

struct Philox4 {
  uint32_t v[4];
};

namespace philox_detail {
inline constexpr uint32_t kMul0 = 0xD2511F53u;
inline constexpr uint32_t kMul1 = 0xCD9E8D57u;
inline constexpr uint32_t kWeyl0 = 0x9E3779B9u;  // golden ratio
inline constexpr uint32_t kWeyl1 = 0xBB67AE85u;  // sqrt(3) - 1

EMBER_HD constexpr void mulhilo(uint32_t a, uint32_t b, uint32_t& hi, uint32_t& lo) {
  const uint64_t p = static_cast<uint64_t>(a) * static_cast<uint64_t>(b);
  hi = static_cast<uint32_t>(p >> 32);
  lo = static_cast<uint32_t>(p);
}
}  // namespace philox_detail

/// The raw bijection: ten rounds of counter `c` under key (k0, k1).
EMBER_HD constexpr Philox4 philox4x32_10(Philox4 c, uint32_t k0, uint32_t k1) {
  using namespace philox_detail;
  for (int round = 0; round < 10; ++round) {
    if (round > 0) {
      k0 += kWeyl0;
      k1 += kWeyl1;
    }
    uint32_t hi0 = 0, lo0 = 0, hi1 = 0, lo1 = 0;
    mulhilo(kMul0, c.v[0], hi0, lo0);
    mulhilo(kMul1, c.v[2], hi1, lo1);
    c = Philox4{{hi1 ^ c.v[1] ^ k0, lo1, hi0 ^ c.v[3] ^ k1, lo0}};
  }
  return c;
}

/// The block for 64-bit counter `counter` of generator `seed` (the layout described above).
EMBER_HD constexpr Philox4 philox_block(uint64_t seed, uint64_t counter) {
  return philox4x32_10(Philox4{{static_cast<uint32_t>(counter), static_cast<uint32_t>(counter >> 32), 0u, 0u}},
                       static_cast<uint32_t>(seed), static_cast<uint32_t>(seed >> 32));
}

/// Counters a call of n elements uses (its offset advance) at `per_counter` elements per block.
EMBER_HD constexpr uint64_t philox_counters(uint64_t n, uint64_t per_counter) {
  return n / per_counter + (n % per_counter != 0 ? 1 : 0);
}

EMBER_HD constexpr uint64_t join64(uint32_t hi, uint32_t lo) { return (static_cast<uint64_t>(hi) << 32) | lo; }

/// 32-bit word `lane` (0-3) and 64-bit word `lane` (0-1) of a block.
EMBER_HD constexpr uint32_t word32(const Philox4& b, int lane) { return b.v[lane]; }
EMBER_HD constexpr uint64_t word64(const Philox4& b, int lane) { return join64(b.v[2 * lane], b.v[2 * lane + 1]); }

/// Calls write(i, block, lane) for the elements i < n of block `g` of a call at `offset`: the work
/// of one CUDA thread, and of the host tests that check the layout.
template <typename Write>
EMBER_HD void philox_visit_block(uint64_t seed, uint64_t offset, uint64_t g, int per_counter, uint64_t n,
                                 Write&& write) {
  const Philox4 block = philox_block(seed, offset + g);
  for (int lane = 0; lane < per_counter; ++lane) {
    const uint64_t i = g * static_cast<uint64_t>(per_counter) + static_cast<uint64_t>(lane);
    if (i < n) write(i, block, lane);
  }
}

/// Uniform on [0, 1) from the top `Bits` bits of x (Bits <= 24): every value k / 2^Bits is exact
/// in float, and with Bits equal to a 16-bit float's mantissa width (11 for float16, 8 for
/// bfloat16) also in that type, so rounding to it can never reach 1.
template <int Bits = 24>
EMBER_HD constexpr float uniform_float(uint32_t x) {
  static_assert(Bits >= 1 && Bits <= 24);
  return static_cast<float>(x >> (32 - Bits)) * (1.0f / static_cast<float>(1u << Bits));
}
/// Uniform on (0, 1]: the same grid shifted up one step, safe for log().
EMBER_HD constexpr float uniform_float_open0(uint32_t x) {
  return static_cast<float>((x >> 8) + 1u) * (1.0f / 16777216.0f);
}
/// Uniform on [0, 1) with 53 random bits from two words.
EMBER_HD constexpr double uniform_double(uint32_t hi, uint32_t lo) {
  return static_cast<double>(join64(hi, lo) >> 11) * (1.0 / 9007199254740992.0);
}
/// Uniform on (0, 1] with 53 random bits.
EMBER_HD constexpr double uniform_double_open0(uint32_t hi, uint32_t lo) {
  return static_cast<double>((join64(hi, lo) >> 11) + 1u) * (1.0 / 9007199254740992.0);
}

template <typename F>
struct NormalPair {
  F first;
  F second;
};

/// Box-Muller: two independent standard normals from u1 in (0, 1] (never log(0)) and u2 in [0, 1).
template <typename F>
EMBER_HD NormalPair<F> box_muller(F u1, F u2) {
  const F radius = kmath::sqrt(F(-2) * kmath::log(u1));
  const F theta = F(6.283185307179586476925286766559) * u2;
  return {radius * kmath::cos(theta), radius * kmath::sin(theta)};
}

/// Standard normal number `lane` (0-3) of a block, in float: lanes 0-1 share one Box-Muller pair
/// built from words 0-1, lanes 2-3 the pair from words 2-3.
EMBER_HD inline float normal_float_lane(const Philox4& b, int lane) {
  const int base = lane & 2;
  const NormalPair<float> p = box_muller(uniform_float_open0(b.v[base]), uniform_float(b.v[base + 1]));
  return (lane & 1) ? p.second : p.first;
}
/// Standard normal number `lane` (0-1) of a block, in double: one pair from all four words.
EMBER_HD inline double normal_double_lane(const Philox4& b, int lane) {
  const NormalPair<double> p = box_muller(uniform_double_open0(b.v[0], b.v[1]), uniform_double(b.v[2], b.v[3]));
  return lane ? p.second : p.first;
}

}  // namespace ember::kernels
