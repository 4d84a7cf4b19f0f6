// CudaBackend: memory through the caching allocator and the copies between host and device.
#include "backend/cuda/cuda_backend.h"

#include <array>
#include <mutex>

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

namespace {

constexpr const char* kPeerCopy = "copy between devices";

/// Lets `device` reach `peer`'s memory directly where the GPUs allow it (NVLink, or PCIe under
/// one switch), asked once per ordered pair and process: a peer copy from `device` then goes
/// straight to `peer`, where otherwise the driver stages it through host memory. Enabling covers
/// every allocation, present and future (the caching allocator's cudaMalloc blocks). A refusal
/// (too many peers) leaves the driver's staged copy, which is still correct.
void enable_peer_access(int device, int peer) {
  static std::mutex mutex;
  static std::array<bool, kMaxDevices * kMaxDevices> asked{};
  std::lock_guard<std::mutex> lock(mutex);
  bool& done = asked[static_cast<size_t>(device) * kMaxDevices + static_cast<size_t>(peer)];
  if (done) return;
  int can_access = 0;
  EMBER_CUDA_CHECK(cudaDeviceCanAccessPeer(&can_access, device, peer), kPeerCopy);
  if (can_access != 0) {
    DeviceGuard guard(device);
    const cudaError_t err = cudaDeviceEnablePeerAccess(peer, 0);
    // Already enabled (by NCCL, or the user) is as good; any refusal falls back to staging. The
    // runtime keeps the refusal as this thread's last error, which a later kernel's check would
    // report: clear it.
    if (err != cudaSuccess) (void)cudaGetLastError();
  }
  done = true;
}

/// Makes `waiter` (a stream of the current device) wait for `marker`, then lets the event go
/// (the runtime keeps it until the wait is over).
void wait_for(cudaStream_t waiter, cudaEvent_t marker) {
  const cudaError_t err = cudaStreamWaitEvent(waiter, marker, 0);
  (void)cudaEventDestroy(marker);
  if (err != cudaSuccess) throw_cuda_error(err, kPeerCopy, "cudaStreamWaitEvent(waiter, marker)");
}

}  // namespace

void CudaBackend::copy_between_devices(void* dst, int dst_index, const void* src, int src_index, size_t nbytes) {
  if (nbytes == 0) return;
  if (dst_index == src_index) {
    DeviceGuard guard(dst_index);
    EMBER_CUDA_CHECK(cudaMemcpyAsync(dst, src, nbytes, cudaMemcpyDeviceToDevice, current_stream(dst_index)), kPeerCopy);
    return;
  }
  enable_peer_access(src_index, dst_index);
  // As PyTorch's copy_ between GPUs: the copy runs on the source's current stream, after what the
  // destination's current stream has queued (work still using the memory the caching allocator
  // gave `dst` on that stream), and the destination's stream waits for it before anything it
  // queues later reads `dst`. The source's memory is safe by stream order alone: the source
  // stream runs the copy before whatever it queues next, its next user included.
  const cudaStream_t src_stream = current_stream(src_index);
  const cudaStream_t dst_stream = current_stream(dst_index);
  cudaEvent_t dst_ready = nullptr;
  {
    DeviceGuard guard(dst_index);
    dst_ready = record_marker(dst_stream, kPeerCopy);
  }
  DeviceGuard on_src(src_index);
  wait_for(src_stream, dst_ready);
  EMBER_CUDA_CHECK(cudaMemcpyPeerAsync(dst, dst_index, src, src_index, nbytes, src_stream), kPeerCopy);
  const cudaEvent_t copied = record_marker(src_stream, kPeerCopy);
  DeviceGuard on_dst(dst_index);
  wait_for(dst_stream, copied);
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
