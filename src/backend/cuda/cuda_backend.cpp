// CudaBackend: memory through the caching allocator and the copies between host and device.
#include "backend/cuda/cuda_backend.h"

#include "backend/cuda/caching_allocator.h"
#include "backend/cuda/runtime.h"
#include "backend/cuda_probe.h"

namespace ember::cuda_impl {

int CudaBackend::device_count() const noexcept { return cuda_probe().device_count; }

void* CudaBackend::allocate(size_t nbytes, int device_index) {
  DeviceGuard guard(device_index);
  return device_allocator(device_index).allocate(nbytes, current_stream(device_index));
}

void CudaBackend::deallocate(void* ptr, size_t /*nbytes*/, int device_index) noexcept {
  // The block goes back to its stream's cache: work already queued on that stream that still
  // reads it runs before any later user of the block, so no synchronisation is needed.
  device_allocator(device_index).free(ptr);
}

void CudaBackend::copy_from_host(void* dst, const void* host_src, size_t nbytes, int device_index) {
  if (nbytes == 0) return;
  DeviceGuard guard(device_index);
  // From pageable memory the call returns once the bytes are staged, so the caller may free
  // host_src right away; from pinned memory it would not wait, which is what non_blocking wants.
  EMBER_CUDA_CHECK(cudaMemcpyAsync(dst, host_src, nbytes, cudaMemcpyHostToDevice, current_stream(device_index)),
                   "copy to cuda");
}

void CudaBackend::copy_to_host(void* host_dst, const void* src, size_t nbytes, int device_index) {
  if (nbytes == 0) return;
  DeviceGuard guard(device_index);
  cudaStream_t stream = current_stream(device_index);
  EMBER_CUDA_CHECK(cudaMemcpyAsync(host_dst, src, nbytes, cudaMemcpyDeviceToHost, stream), "copy to cpu");
  // The host reads the bytes next: this is one of the places the host must wait.
  EMBER_CUDA_CHECK(cudaStreamSynchronize(stream), "copy to cpu");
}

CudaBackend& cuda_backend() {
  static CudaBackend backend;
  return backend;
}

}  // namespace ember::cuda_impl
