// The CUDA backend's side of the seam with libember (src/backend/cuda_runtime.h): what the
// public ember::cuda API (src/backend/cuda_api.cpp) asks of CUDA, and the entry point through
// which libember finds it after loading this library.
#include <cuda_runtime_api.h>

#include "backend/cuda/caching_allocator.h"
#include "backend/cuda/cuda_backend.h"
#include "backend/cuda/pinned_allocator.h"
#include "backend/cuda/runtime.h"
#include "backend/cuda_runtime.h"
#include "core/check.h"
#include "ember/device.h"

namespace ember::cuda_impl {

CudaProbe probe_driver() noexcept;  // cuda_probe.cpp

namespace {

cudaStream_t stream_of(void* s) { return static_cast<cudaStream_t>(s); }
cudaEvent_t event_of(void* e) { return static_cast<cudaEvent_t>(e); }

class Runtime final : public CudaRuntime {
 public:
  CudaProbe probe() noexcept override { return probe_driver(); }
  Backend& backend() override { return cuda_backend(); }

  cuda::DeviceProperties device_properties(int device) override {
    cudaDeviceProp prop{};
    EMBER_CUDA_CHECK(cudaGetDeviceProperties(&prop, device), "get_device_properties");
    return {prop.name, prop.major, prop.minor, prop.totalGlobalMem, prop.multiProcessorCount};
  }
  int current_device() override { return cuda_impl::current_device(); }
  bool device_chosen() override { return cuda_impl::device_chosen(); }
  void set_current_device(int device) override { cuda_impl::set_current_device(device); }
  void restore_current_device(int device, bool chosen) override { cuda_impl::restore_current_device(device, chosen); }
  void synchronize(int device) override {
    DeviceGuard guard(device);
    EMBER_CUDA_CHECK(cudaDeviceSynchronize(), "synchronize");
    raise_pending_index_error(device);  // every stream of the device has finished: its record is complete
  }

  MemoryStats memory_stats(int device) override {
    const cuda_impl::MemoryStats s = device_allocator(device).stats();
    return {s.allocated, s.reserved, s.max_allocated};
  }
  void reset_peak_memory_stats(int device) override { device_allocator(device).reset_peak(); }
  void empty_cache() override {
    for (int d = 0; d < cuda_probe().device_count; ++d) device_allocator(d).empty_cache();
    pinned_allocator().empty_cache();
  }
  void record_stream(void* block, int device, void* stream) override {
    device_allocator(device).record_stream(block, stream_of(stream));
  }
  void set_allow_tf32(bool allow) override { cuda_impl::set_allow_tf32(allow); }
  bool allow_tf32() override { return cuda_impl::allow_tf32(); }

  void* event_create(int device) override {
    DeviceGuard guard(device);
    cudaEvent_t e = nullptr;
    EMBER_CUDA_CHECK(cudaEventCreate(&e), "cuda::Event");
    return e;
  }
  void event_destroy(void* event) noexcept override { cudaEventDestroy(event_of(event)); }
  void event_record(void* event, int device, void* stream) override {
    DeviceGuard guard(device);
    cudaStream_t s = stream != nullptr ? stream_of(stream) : cuda_impl::current_stream(device);
    EMBER_CUDA_CHECK(cudaEventRecord(event_of(event), s), "Event::record");
  }
  void event_synchronize(void* event, int device) override {
    EMBER_CUDA_CHECK(cudaEventSynchronize(event_of(event)), "Event::synchronize");
    raise_pending_index_error(device);
  }
  bool event_query(void* event) override {
    return query_completed(cudaEventQuery(event_of(event)), "Event::query", "cudaEventQuery(event)");
  }
  float event_elapsed_ms(void* start, void* end) override {
    float ms = 0;
    EMBER_CUDA_CHECK(cudaEventElapsedTime(&ms, event_of(start), event_of(end)), "Event::elapsed_ms");
    return ms;
  }

  void* stream_create(int device, bool high_priority) override { return pooled_stream(device, high_priority); }
  void* current_stream(int device) override { return cuda_impl::current_stream(device); }
  int stream_priority(int device, void* stream) override {
    DeviceGuard guard(device);
    int priority = 0;
    EMBER_CUDA_CHECK(cudaStreamGetPriority(stream_of(stream), &priority), "cuda::current_stream");
    return priority < 0 ? -1 : 0;
  }
  void set_current_stream(int device, void* stream) override {
    cuda_impl::set_current_stream(device, stream_of(stream));
  }
  bool stream_query(int device, void* stream) override {
    DeviceGuard guard(device);
    return query_completed(cudaStreamQuery(stream_of(stream)), "Stream::query", "cudaStreamQuery(stream)");
  }
  void stream_synchronize(int device, void* stream) override {
    DeviceGuard guard(device);
    EMBER_CUDA_CHECK(cudaStreamSynchronize(stream_of(stream)), "Stream::synchronize");
    raise_pending_index_error(device);
  }
  void stream_wait_event(int device, void* stream, void* event) override {
    DeviceGuard guard(device);
    EMBER_CUDA_CHECK(cudaStreamWaitEvent(stream_of(stream), event_of(event), 0), "Stream::wait_event");
  }
  void stream_wait_stream(int device, void* stream, int other_device, void* other) override {
    // An event of `other`'s device marks its work so far. Destroying it at once is allowed: the
    // wait below has already taken its place in this stream's queue.
    cudaEvent_t marker = nullptr;
    {
      DeviceGuard guard(other_device);
      marker = record_marker(stream_of(other), "Stream::wait_stream");
    }
    DeviceGuard guard(device);
    const cudaError_t err = cudaStreamWaitEvent(stream_of(stream), marker, 0);
    cudaEventDestroy(marker);
    if (err != cudaSuccess) throw_cuda_error(err, "Stream::wait_stream", "cudaStreamWaitEvent(this, marker)");
  }
};

}  // namespace
}  // namespace ember::cuda_impl

/// The one symbol libember looks up after loading this library (src/backend/cuda_loader.cpp).
extern "C" __attribute__((visibility("default"))) ember::CudaRuntime* ember_cuda_runtime(int abi) {
  if (abi != ember::kCudaRuntimeAbi) return nullptr;
  static ember::cuda_impl::Runtime runtime;
  return &runtime;
}
