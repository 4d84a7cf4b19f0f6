// The fused finiteness check over many tensors (Backend::all_finite): one read of each element,
// on the pool's threads for large tensors, and no temporary tensors. The trainer runs it on the
// loss and every gradient after each backward pass.
#include <atomic>
#include <cstring>

#include "backend/cpu/cpu_backend.h"
#include "base/parallel.h"
#include "core/check.h"
#include "kernels/finite_bits.h"

namespace ember::cpu {
namespace {

// The elements are read through memcpy into an unsigned integer of their size (the bytes of a
// float may not be read through an integer pointer); GCC turns each copy into one load.
template <typename Bits>
bool any_nonfinite(const unsigned char* data, int64_t begin, int64_t end, Bits mask) {
  Bits found = 0;
  for (int64_t i = begin; i < end; ++i) {
    Bits bits;
    std::memcpy(&bits, data + i * static_cast<int64_t>(sizeof(Bits)), sizeof(Bits));
    found |= kernels::nonfinite_bit(bits, mask);
  }
  return found != 0;
}

bool any_nonfinite(const TensorView& x, int64_t begin, int64_t end) {
  const kernels::ExponentBits exponent = kernels::exponent_bits(x.dtype);
  const auto* data = static_cast<const unsigned char*>(x.data);
  switch (exponent.bytes) {
    case 2:
      return any_nonfinite<uint16_t>(data, begin, end, static_cast<uint16_t>(exponent.mask));
    case 4:
      return any_nonfinite<uint32_t>(data, begin, end, static_cast<uint32_t>(exponent.mask));
    case 8:
      return any_nonfinite<uint64_t>(data, begin, end, exponent.mask);
    default:
      return false;
  }
}

}  // namespace

void CpuBackend::all_finite(std::span<const TensorView> xs, const TensorView& out) {
  EMBER_CHECK(out.dtype == kBool && out.numel() == 1, "[all_finite] the result must be one bool");
  for (const TensorView& x : xs) {
    EMBER_CHECK(is_floating_point(x.dtype) && x.is_contiguous(), "[all_finite] expected contiguous floating tensors");
  }
  std::atomic<bool> found{false};
  for (const TensorView& x : xs) {
    // Each chunk is a few hundred kilobytes: reading it costs far more than waking a thread.
    base::parallel_for(x.numel(), 4 * base::kGrainSize, [&](int64_t begin, int64_t end) {
      if (!found.load(std::memory_order_relaxed) && any_nonfinite(x, begin, end)) {
        found.store(true, std::memory_order_relaxed);
      }
    });
    if (found.load(std::memory_order_relaxed)) break;
  }
  *out.ptr<bool>() = !found.load(std::memory_order_relaxed);
}

}  // namespace ember::cpu
