// CpuBackend: memory and host copies. The op families live in their own files (cpu_backend.h).
#include "backend/cpu/cpu_backend.h"

#include <cstdlib>
#include <cstring>
#include <new>

#include "backend/cpu/host_allocator.h"
#include "core/check.h"

namespace ember::cpu {

CpuBackend& cpu_backend() {
  static CpuBackend backend;
  return backend;
}

void* CpuBackend::allocate(size_t nbytes, int /*device_index*/) { return host_allocator().allocate(nbytes); }

void CpuBackend::deallocate(void* ptr, size_t nbytes, int /*device_index*/) noexcept {
  host_allocator().deallocate(ptr, nbytes);
}

void CpuBackend::copy_from_host(void* dst, const void* host_src, size_t nbytes, int /*device_index*/,
                                bool /*non_blocking*/) {
  if (nbytes) std::memcpy(dst, host_src, nbytes);
}

void CpuBackend::copy_to_host(void* host_dst, const void* src, size_t nbytes, int /*device_index*/,
                              bool /*non_blocking*/) {
  if (nbytes) std::memcpy(host_dst, src, nbytes);
}

void CpuBackend::copy_between_devices(void* dst, int dst_index, const void* src, int src_index, size_t nbytes) {
  // One CPU device: a caller asking for another index has a bug a GPU would report too.
  EMBER_CHECK(dst_index == 0 && src_index == 0, "copy_between_devices: the CPU has one device, got indices ", src_index,
              " -> ", dst_index);
  // memmove: the front end never hands over overlapping ranges, but nothing here relies on it.
  if (nbytes) std::memmove(dst, src, nbytes);
}

}  // namespace ember::cpu
