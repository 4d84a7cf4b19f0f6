// CudaBackend: memory through the caching allocator and the copies between host and device.
#include "backend/cuda/cuda_backend.h"

#include "backend/cuda/caching_allocator.h"
#include "backend/cuda/pinned_allocator.h"
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

void CudaBackend::copy_from_host(void* dst, const void* host_src, size_t nbytes, int device_index, bool non_blocking) {
  if (nbytes == 0) return;
  DeviceGuard guard(device_index);
  cudaStream_t stream = current_stream(device_index);
  EMBER_CUDA_CHECK(cudaMemcpyAsync(dst, host_src, nbytes, cudaMemcpyHostToDevice, stream), "copy to cuda");
  // A blocking copy lets the caller reuse the host memory at once, as PyTorch's does (from
  // pinned memory the copy above is still running; from pageable memory the wait is short). A
  // non-blocking one from pinned memory keeps that memory from being reused until it is done.
  if (non_blocking) {
    pinned_allocator().record_use(host_src, stream, device_index);
  } else {
    EMBER_CUDA_CHECK(cudaStreamSynchronize(stream), "copy to cuda");
    // The copy is complete (the caller owns whatever it allocated for it): only now report an
    // out-of-range index an earlier kernel recorded.
    raise_pending_index_error(device_index);
  }
}

void CudaBackend::copy_to_host(void* host_dst, const void* src, size_t nbytes, int device_index, bool non_blocking) {
  if (nbytes == 0) return;
  DeviceGuard guard(device_index);
  cudaStream_t stream = current_stream(device_index);
  EMBER_CUDA_CHECK(cudaMemcpyAsync(host_dst, src, nbytes, cudaMemcpyDeviceToHost, stream), "copy to cpu");
  // The host usually reads the bytes next: one of the places it must wait. A non-blocking copy
  // into pinned memory leaves that to the caller's cuda::synchronize(), and keeps the memory
  // from being reused until it is done.
  if (non_blocking) {
    pinned_allocator().record_use(host_dst, stream, device_index);
  } else {
    EMBER_CUDA_CHECK(cudaStreamSynchronize(stream), "copy to cpu");
    // After the wait, where item(), printing and .to(cpu) see it: an out-of-range index an
    // earlier kernel recorded (indexing.cu). The copy itself is complete.
    raise_pending_index_error(device_index);
  }
}

// Through the pinned caching allocator: cudaFreeHost would wait for the whole device each time
// a pinned batch is let go.
void* CudaBackend::allocate_pinned(size_t nbytes) { return pinned_allocator().allocate(nbytes); }

void CudaBackend::free_pinned(void* ptr) noexcept { pinned_allocator().free(ptr); }

CudaBackend& cuda_backend() {
  static CudaBackend backend;
  return backend;
}

}  // namespace ember::cuda_impl
