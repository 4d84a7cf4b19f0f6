// CpuBackend: memory and host copies. The op families live in their own files (cpu_backend.h).
#include "backend/cpu/cpu_backend.h"

#include <cstdlib>
#include <cstring>
#include <new>

#include "backend/cpu/host_allocator.h"
#include "backend/cpu/parallel.h"
#include "backend/cpu/thread_count.h"
#include "core/check.h"

namespace ember::cpu {

CpuBackend& cpu_backend() {
  static CpuBackend backend;
  return backend;
}

int num_threads() {
#ifdef _OPENMP
  apply_default_thread_count();
  // Read on every call (a thread-local value, nanoseconds): set_num_threads() changes it.
  return omp_get_max_threads();
#else
  return 1;
#endif
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

}  // namespace ember::cpu
