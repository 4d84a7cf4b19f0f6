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
    // cudaHostAlloc needs a context: on a thread that never chose a device (a DataLoader's
    // pinning thread) the runtime would create one on device 0; use the process's device.
    DeviceGuard guard(process_device());
    // Portable: pinned for every GPU, so a batch pinned once can go to any of them.
    EMBER_CUDA_CHECK(cudaHostAlloc(&ptr, nbytes, cudaHostAllocPortable), "pin_memory");
    return ptr;
  }

  // Errors are dropped: this runs from destructors (and cudaFreeHost waits for the device).
  void free(void* ptr) noexcept override { (void)cudaFreeHost(ptr); }

  Event record(Stream stream, int device) override {
    DeviceGuard guard(device);
    return record_marker(static_cast<cudaStream_t>(stream), "pinned memory");
  }

  bool done(Event event) override {
    return query_completed(cudaEventQuery(static_cast<cudaEvent_t>(event)), "pinned memory", "cudaEventQuery(event)");
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
