#pragma once
// Host-side decisions of the CUDA copy (copy.cu), kept free of CUDA headers so the tests check
// them on any machine.
#include <cstddef>
#include <cstdint>

namespace ember::cuda_impl {

/// Whether [dst, dst + nbytes) and [src, src + nbytes) share a byte: cudaMemcpy* forbids it
/// (where the CPU's memmove does not), so copy.cu then goes through a temporary.
inline bool ranges_overlap(const void* dst, const void* src, size_t nbytes) {
  const auto d = reinterpret_cast<uintptr_t>(dst), s = reinterpret_cast<uintptr_t>(src);
  return (d < s ? s - d : d - s) < nbytes;
}

}  // namespace ember::cuda_impl
