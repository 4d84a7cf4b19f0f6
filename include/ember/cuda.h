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

/// Whether float32 matrix products may use TF32 tensor cores: faster, with
/// about 10 bits of mantissa. Off by default, like torch.backends.cuda.matmul.allow_tf32.
void set_allow_tf32(bool allow);
bool allow_tf32();

class Stream;

/// A CUDA event on the current stream, for timing GPU work without stopping the host:
///   cuda::Event start, stop; start.record(); ...; stop.record(); stop.synchronize();
///   float ms = start.elapsed_ms(stop);
/// and, recorded on one stream and waited for by another (Stream::wait_event), for ordering
/// work across streams.
class Event {
 public:
  /// An event of the current device.
  Event();
  ~Event();
  Event(const Event&) = delete;
  Event& operator=(const Event&) = delete;
  /// Move-only, so events can be kept in containers; a moved-from Event may only be destroyed
  /// or assigned to.
  Event(Event&& other) noexcept;
  Event& operator=(Event&& other) noexcept;
  /// Records the event on `device`'s current stream (the current device when -1).
  void record(int device = -1);
  /// Records the event on `stream`, which must be on the event's device.
  void record(const Stream& stream);
  /// Waits on the host until the work before the record has finished; then, as
  /// cuda::synchronize, reports an out-of-range index met by an earlier indexing kernel.
  void synchronize() const;
  /// Whether that work has finished, without waiting.
  bool query() const;
  /// Milliseconds between this event's record and `end`'s (both must have completed).
  float elapsed_ms(const Event& end) const;
  int device() const { return device_; }

 private:
  friend class Stream;
  void* event_ = nullptr;  // cudaEvent_t
  int device_ = 0;
};

/// A queue of GPU work, as torch.cuda.Stream. Work queued on one stream runs in order; work on
/// different streams may overlap, so a copy can run while a kernel computes. Every op queues
/// its kernels and copies on the thread's current stream (StreamGuard, set_stream), and the
/// host waits only for that stream when it reads a value (item(), printing, a copy to the CPU).
///
///   cuda::Stream side = cuda::Stream::create();
///   cuda::Stream main = cuda::current_stream();
///   side.wait_stream(main);                  // side sees what main has computed so far
///   {
///     cuda::StreamGuard on(side);            // ops in this scope queue on `side`
///     y = ember::matmul(x, w);
///   }
///   main.wait_stream(side);                  // main may now read y
///   cuda::record_stream(y, main);            // y's memory is used on main, not only on side
///
/// As in PyTorch, streams do not wait for each other unless told to (wait_stream, wait_event):
/// created streams do not synchronise with the default stream. A Stream is a small value: copies
/// name the same stream. Streams come from a pool of 32 per device and priority, handed out in
/// turn and never destroyed, so creating one per step costs nothing and leaks nothing, and two
/// Stream::create() calls may return the same stream.
class Stream {
 public:
  /// A stream from `device`'s pool (the current device when -1). `priority` 0 is normal;
  /// a negative one asks for the device's highest priority, as torch.cuda.Stream(priority=-1),
  /// and a positive one means normal (ember has these two levels).
  static Stream create(int device = -1, int priority = 0);
  int device() const { return device_; }
  /// 0, or -1 for a high-priority stream.
  int priority() const { return priority_; }
  /// The cudaStream_t, for launching one's own kernels or library calls in order with ember's
  /// (nullptr is the legacy default stream).
  void* handle() const { return handle_; }
  /// Whether all work queued so far has finished, without waiting.
  bool query() const;
  /// Waits on the host for the work queued so far; then, as cuda::synchronize, reports an
  /// out-of-range index met by an earlier indexing kernel.
  void synchronize() const;
  /// Work queued on this stream from now on waits, on the device, for `event`'s recorded work.
  void wait_event(const Event& event) const;
  /// Work queued on this stream from now on waits, on the device, for the work queued on `other`
  /// so far. The host does not wait.
  void wait_stream(const Stream& other) const;
  bool operator==(const Stream& other) const { return device_ == other.device_ && handle_ == other.handle_; }
  bool operator!=(const Stream& other) const { return !(*this == other); }

 private:
  friend Stream current_stream(int);
  friend Stream default_stream(int);
  Stream(int device, void* handle, int priority) : device_(device), handle_(handle), priority_(priority) {}
  int device_;
  void* handle_;  // cudaStream_t
  int priority_;
};

/// The stream this thread queues work on for `device` (the current device when -1): the
/// default stream until set_stream or a StreamGuard chose another.
Stream current_stream(int device = -1);
/// `device`'s default stream (the legacy default stream, as PyTorch's).
Stream default_stream(int device = -1);
/// Makes `stream` the current stream of its device on this thread, and its device the current
/// device, as torch.cuda.set_stream.
void set_stream(const Stream& stream);

/// Makes `stream` current (and its device the current device) for a scope, then restores both,
/// as `with torch.cuda.stream(s):`.
class StreamGuard {
 public:
  explicit StreamGuard(const Stream& stream);
  ~StreamGuard();
  StreamGuard(const StreamGuard&) = delete;
  StreamGuard& operator=(const StreamGuard&) = delete;

 private:
  int previous_device_;
  bool previous_chosen_;    // whether the thread had chosen a device (cuda::set_device)
  Stream previous_stream_;  // of the guarded stream's device
};

/// Tells the allocator that `tensor`'s memory is used by work queued on `stream`, as
/// Tensor.record_stream in PyTorch. Memory is otherwise reused as soon as it is freed by later
/// work on the stream it was allocated on, which is safe only for work on that stream; after
/// this call, the memory is reused only once the work queued on `stream` up to the tensor's
/// release has finished (the host never waits for it). `tensor` must be on `stream`'s device.
void record_stream(const Tensor& tensor, const Stream& stream);

}  // namespace ember::cuda
