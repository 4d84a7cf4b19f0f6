#pragma once
// The seam between libember.so and its CUDA backend, libember_cuda.so.
//
// The CUDA backend is a library of its own, loaded at run time (src/backend/cuda_loader.cpp) only
// when an NVIDIA driver is present, as ggml loads its backends and PyTorch its CUDA hooks: a
// program that never touches a GPU, or runs where there is none, never maps cuBLAS, cuBLASLt or
// cuDNN (about 120 MB of resident memory otherwise; docs/PERFORMANCE.md §9). One build serves
// CPU-only and GPU machines alike.
//
// libember implements the public ember::cuda API (include/ember/cuda.h) by calling this interface; the plugin implements it
// (src/backend/cuda/cuda_runtime_impl.cpp) and hands it over through one C entry point. Handles
// (events, streams) cross the seam as void*, as they do in include/ember/cuda.h.
#include <cstddef>
#include <memory>
#include <string>

#include "backend/cuda_probe.h"
#include "ember/cuda.h"

namespace ember {
class Backend;

/// Bumped whenever this interface changes; libember refuses a plugin built against another.
inline constexpr int kCudaRuntimeAbi = 1;
/// The plugin's entry point: `CudaRuntime* ember_cuda_runtime(int abi)`, null on a mismatch.
inline constexpr const char* kCudaRuntimeEntry = "ember_cuda_runtime";

class CudaRuntime {
 public:
  virtual ~CudaRuntime() = default;

  /// Asks the driver which GPUs there are and whether this build can run on them.
  virtual CudaProbe probe() noexcept = 0;
  virtual Backend& backend() = 0;

  // ---- devices: the calling thread's current device (cuda::set_device) ----
  virtual cuda::DeviceProperties device_properties(int device) = 0;
  virtual int current_device() = 0;
  /// Whether the thread chose its device (set_device) rather than taking the default.
  virtual bool device_chosen() = 0;
  virtual void set_current_device(int device) = 0;
  virtual void restore_current_device(int device, bool chosen) = 0;
  /// Waits for every stream of `device`, then reports a pending out-of-range index.
  virtual void synchronize(int device) = 0;

  // ---- memory ----
  struct MemoryStats {
    size_t allocated = 0, reserved = 0, max_allocated = 0;
  };
  virtual MemoryStats memory_stats(int device) = 0;
  virtual void reset_peak_memory_stats(int device) = 0;
  /// Every device's cached blocks and the cached pinned host memory go back to the driver.
  virtual void empty_cache() = 0;
  /// The caching allocator keeps `block` from reuse until `stream`'s work so far is done.
  virtual void record_stream(void* block, int device, void* stream) = 0;
  virtual void set_allow_tf32(bool allow) = 0;
  virtual bool allow_tf32() = 0;

  // ---- events ----
  virtual void* event_create(int device) = 0;
  virtual void event_destroy(void* event) noexcept = 0;
  /// Records on `stream` of `device` (null: the device's current stream).
  virtual void event_record(void* event, int device, void* stream) = 0;
  virtual void event_synchronize(void* event, int device) = 0;
  virtual bool event_query(void* event) = 0;
  virtual float event_elapsed_ms(void* start, void* end) = 0;

  // ---- streams (null is the device's default stream) ----
  virtual void* stream_create(int device, bool high_priority) = 0;
  virtual void* current_stream(int device) = 0;
  /// -1 for a high-priority stream, 0 otherwise.
  virtual int stream_priority(int device, void* stream) = 0;
  virtual void set_current_stream(int device, void* stream) = 0;
  virtual bool stream_query(int device, void* stream) = 0;
  virtual void stream_synchronize(int device, void* stream) = 0;
  virtual void stream_wait_event(int device, void* stream, void* event) = 0;
  virtual void stream_wait_stream(int device, void* stream, int other_device, void* other) = 0;
};

/// The loaded CUDA backend, or nullptr when there is none to use: a build without CUDA, no
/// driver, or a plugin that would not load (cuda_probe().reason says which). Loads it on the
/// first call; never throws.
CudaRuntime* cuda_runtime() noexcept;

/// Another entry point of the loaded CUDA backend's library, by name (the NCCL transport's,
/// distributed/nccl/nccl_runtime.h), or nullptr when there is no backend or no such symbol.
void* cuda_plugin_symbol(const char* name) noexcept;

}  // namespace ember
