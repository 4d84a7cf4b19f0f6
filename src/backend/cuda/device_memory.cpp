// The CUDA runtime behind the caching allocator, and the one allocator per device.
#include <cuda_runtime_api.h>

#include <array>
#include <atomic>
#include <memory>
#include <mutex>
#include <string>

#include "backend/cuda/caching_allocator.h"
#include "backend/cuda/runtime.h"
#include "ember/error.h"

namespace ember::cuda_impl {
namespace {

class CudaDeviceMemory final : public RawDeviceMemory {
 public:
  explicit CudaDeviceMemory(int device) : device_(device) {}

  void* malloc(size_t nbytes) override {
    DeviceGuard guard(device_);
    void* ptr = nullptr;
    const cudaError_t err = cudaMalloc(&ptr, nbytes);
    if (err == cudaErrorMemoryAllocation) {
      // Out of memory is not sticky: clear it so the next check_launch does not report it.
      (void)cudaGetLastError();
      return nullptr;
    }
    if (err != cudaSuccess) throw_cuda_error(err, "allocate", "cudaMalloc(&ptr, nbytes)");
    return ptr;
  }

  // Errors are dropped rather than thrown: this runs from destructors, and at process exit
  // (cudaErrorCudartUnloading) the runtime has already released the memory.
  void free(void* ptr) noexcept override {
    try {
      DeviceGuard guard(device_);
      (void)cudaFree(ptr);
    } catch (...) {
    }
  }

  void mem_info(size_t& free_bytes, size_t& total_bytes) noexcept override {
    free_bytes = 0;
    total_bytes = 0;
    try {
      DeviceGuard guard(device_);
      if (cudaMemGetInfo(&free_bytes, &total_bytes) != cudaSuccess) {
        free_bytes = 0;
        total_bytes = 0;
      }
    } catch (...) {
    }
  }

  // An error of earlier asynchronous work is left in CUDA's error state for the next check to
  // report under its op; swallowing it here would hide it.
  void synchronize() noexcept override {
    try {
      DeviceGuard guard(device_);
      (void)cudaDeviceSynchronize();
    } catch (...) {
    }
  }

  Event record(StreamHandle stream) override {
    DeviceGuard guard(device_);
    return record_marker(static_cast<cudaStream_t>(stream), "free");
  }

  bool done(Event event) override {
    return query_completed(cudaEventQuery(static_cast<cudaEvent_t>(event)), "allocate", "cudaEventQuery(event)");
  }

  void destroy(Event event) noexcept override { (void)cudaEventDestroy(static_cast<cudaEvent_t>(event)); }

 private:
  int device_;
};

}  // namespace

CachingAllocator& device_allocator(int device) {
  // A fixed table, so the lookup on every allocation is one atomic load.
  // Never destroyed: tensors released during static destruction still reach their allocator.
  static std::array<std::atomic<CachingAllocator*>, kMaxDevices>& table =
      *new std::array<std::atomic<CachingAllocator*>, kMaxDevices>{};
  static std::mutex& create_mutex = *new std::mutex;
  if (device < 0 || device >= kMaxDevices) {
    throw Error("CUDA device " + std::to_string(device) + " does not exist");
  }
  CachingAllocator* allocator = table[device].load(std::memory_order_acquire);
  if (allocator != nullptr) return *allocator;
  std::lock_guard<std::mutex> lock(create_mutex);
  allocator = table[device].load(std::memory_order_relaxed);
  if (allocator == nullptr) {
    allocator = new CachingAllocator(std::make_unique<CudaDeviceMemory>(device), device);
    table[device].store(allocator, std::memory_order_release);
  }
  return *allocator;
}

}  // namespace ember::cuda_impl
