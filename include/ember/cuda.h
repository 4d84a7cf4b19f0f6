#pragma once
/// CUDA devices, memory and streams, as torch.cuda offers them. Availability queries
/// (cuda::is_available(), cuda::device_count()) live in ember/device.h.
///
/// In a build without CUDA, or on a machine without a usable GPU, the memory queries return 0
/// and everything that needs a GPU throws ember::Error saying why.
#include <cstddef>
#include <cstdint>
#include <string>

#include "ember/tensor.h"

namespace ember::cuda {

struct DeviceProperties {
  std::string name;  // "NVIDIA H100 80GB HBM3"
  int major = 0;     // compute capability
  int minor = 0;
  size_t total_memory = 0;  // bytes
  int multi_processor_count = 0;
};

/// Properties of cuda:`device`; throws ember::Error when it does not exist.
DeviceProperties get_device_properties(int device);
/// The device that "cuda" (without an index) means on this thread; 0 by default.
int current_device();
void set_device(int device);
/// Waits until all work queued on `device` (the current one when -1) has finished. Like every
/// wait for the GPU (item(), printing, blocking copies), it then throws ember::Error for an
/// out-of-range index that an earlier index_select, gather or scatter_add met there.
void synchronize(int device = -1);

/// Bytes held by tensors / obtained from the driver by ember's caching allocator on `device`
/// (the current one when -1), and the peak of the first since start or the last reset.
size_t memory_allocated(int device = -1);
size_t memory_reserved(int device = -1);
size_t max_memory_allocated(int device = -1);
void reset_peak_memory_stats(int device = -1);
/// Returns cached, unused blocks to the driver (other processes can then use the memory): each
/// device's, and the pinned host memory cached for pin_memory() (waiting for copies still using it).
void empty_cache();

/// The random generator of cuda:`device` (the current device when -1) as a 1-D uint8 CPU tensor,
/// and its inverse, as torch.cuda.get_rng_state / set_rng_state: after set_rng_state(s), the
/// device draws what it drew after get_rng_state() returned s. The bytes are ember's own layout
/// (the Philox generator's seed and offset); ember::manual_seed seeds every device's generator,
/// and ember::get_rng_state is the CPU's. A tensor that is not such a state is an ember::Error.
Tensor get_rng_state(int device = -1);
void set_rng_state(const Tensor& state, int device = -1);

/// Whether float32 matrix products and convolutions may use TF32 tensor cores: faster, with
/// about 10 bits of mantissa. Off by default, like torch.backends.cuda.matmul.allow_tf32.
void set_allow_tf32(bool allow);
bool allow_tf32();

/// A CUDA event on the current stream, for timing GPU work without stopping the host:
///   cuda::Event start, stop; start.record(); ...; stop.record(); stop.synchronize();
///   float ms = start.elapsed_ms(stop);
class Event {
 public:
  Event();
  ~Event();
  Event(const Event&) = delete;
  Event& operator=(const Event&) = delete;
  /// Records the event on `device`'s current stream (the current device when -1).
  void record(int device = -1);
  /// Waits on the host until the work before the record has finished; then, as
  /// cuda::synchronize, reports an out-of-range index met by an earlier indexing kernel.
  void synchronize() const;
  /// Whether that work has finished, without waiting.
  bool query() const;
  /// Milliseconds between this event's record and `end`'s (both must have completed).
  float elapsed_ms(const Event& end) const;

 private:
  void* event_ = nullptr;  // cudaEvent_t
  int device_ = 0;
};

}  // namespace ember::cuda
