// The CUDA runtime behind the pinned allocator, and the process's one pinned allocator.
#include <cuda_runtime_api.h>

#include "backend/cuda/pinned_allocator.h"
#include "backend/cuda/runtime.h"
#include "ember/error.h"

namespace ember::cuda_impl {
namespace {

class CudaPinnedMemory final : public RawPinnedMemory {
 public:
  void* alloc(size_t nbytes) override {
    void* ptr = nullptr;
    // Portable: pinned for every GPU, so a batch pinned once can go to any of them.
    EMBER_CUDA_CHECK(cudaHostAlloc(&ptr, nbytes, cudaHostAllocPortable), "pin_memory");
    return ptr;
  }

  // Errors are dropped: this runs from destructors (and cudaFreeHost waits for the device).
  void free(void* ptr) noexcept override { (void)cudaFreeHost(ptr); }

  Event record(Stream stream, int device) override {
    DeviceGuard guard(device);
    cudaEvent_t event = nullptr;
    EMBER_CUDA_CHECK(cudaEventCreateWithFlags(&event, cudaEventDisableTiming), "pinned memory: cudaEventCreate");
    const cudaError_t err = cudaEventRecord(event, static_cast<cudaStream_t>(stream));
    if (err != cudaSuccess) {
      (void)cudaEventDestroy(event);
      throw_cuda_error(err, "pinned memory", "cudaEventRecord(event, stream)");
    }
    return event;
  }

  bool done(Event event) override {
    const cudaError_t err = cudaEventQuery(static_cast<cudaEvent_t>(event));
    if (err == cudaErrorNotReady) {
      (void)cudaGetLastError();  // "not ready" is an answer, not an error
      return false;
    }
    if (err != cudaSuccess) throw_cuda_error(err, "pinned memory", "cudaEventQuery(event)");
    return true;
  }

  void wait(Event event) noexcept override { (void)cudaEventSynchronize(static_cast<cudaEvent_t>(event)); }
  void destroy(Event event) noexcept override { (void)cudaEventDestroy(static_cast<cudaEvent_t>(event)); }
};

}  // namespace

PinnedAllocator& pinned_allocator() {
  // Never destroyed: at exit the runtime may be gone before static destructors run.
  static PinnedAllocator* allocator = new PinnedAllocator(std::make_unique<CudaPinnedMemory>());
  return *allocator;
}

}  // namespace ember::cuda_impl
