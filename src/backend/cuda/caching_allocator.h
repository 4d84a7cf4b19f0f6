#pragma once
// The caching allocator behind every CUDA tensor: cudaMalloc and cudaFree synchronise the device
// and cost tens of microseconds, so freed blocks are kept per stream and handed out again, and a
// training step allocates nothing from the driver after the first.
//
// Plain host C++ (no CUDA headers): the device calls go through RawDeviceMemory, so the
// bookkeeping (rounding, pools, splitting, merging, statistics, the out-of-memory path) is
// tested on machines without a GPU with a fake (tests/backend/cuda/test_caching_allocator.cpp).
#include <cstddef>
#include <cstdint>
#include <memory>

namespace ember::cuda_impl {

/// An opaque stream handle (cudaStream_t); memory freed on one stream is reused only by
/// allocations on the same stream, whose work is ordered after the free. Memory that other
/// streams used (record_stream) is reused only once events recorded on them at the free have
/// completed.
using StreamHandle = void*;

/// The device calls the allocator needs. The real one (device_memory.cpp) calls
/// cudaMalloc/cudaFree/cudaMemGetInfo on one device.
class RawDeviceMemory {
 public:
  virtual ~RawDeviceMemory() = default;
  /// nullptr when the device is out of memory (the CUDA error state is cleared); throws
  /// ember::Error for any other failure.
  virtual void* malloc(size_t nbytes) = 0;
  virtual void free(void* ptr) noexcept = 0;
  /// Free and total device memory, as cudaMemGetInfo reports them.
  virtual void mem_info(size_t& free_bytes, size_t& total_bytes) noexcept = 0;
  /// Waits for all work on the device (before memory goes back to the driver).
  virtual void synchronize() noexcept = 0;

  using Event = void*;  // cudaEvent_t
  /// An event recorded on `stream`, after the work queued there so far; throws ember::Error
  /// when it cannot be created or recorded.
  virtual Event record(StreamHandle stream) = 0;
  /// Whether the event has completed, without waiting; throws ember::Error for an error that
  /// earlier asynchronous work left.
  virtual bool done(Event event) = 0;
  virtual void destroy(Event event) noexcept = 0;
};

/// What torch.cuda.memory_stats() reports, in bytes.
struct MemoryStats {
  size_t allocated = 0;      // held by live tensors (rounded sizes)
  size_t reserved = 0;       // obtained from the driver (cached or in use)
  size_t max_allocated = 0;  // peak of `allocated` since start or reset_peak()
  size_t max_reserved = 0;
  uint64_t driver_allocs = 0;   // cudaMalloc calls made
  uint64_t retries = 0;         // times the cache was emptied to satisfy a request
  uint64_t ooms = 0;            // OutOfMemoryError thrown
  size_t awaiting_streams = 0;  // freed blocks not yet reusable: other streams may still use them
};

class CachingAllocator {
 public:
  /// `device` is used in messages only.
  CachingAllocator(std::unique_ptr<RawDeviceMemory> raw, int device);
  ~CachingAllocator();
  CachingAllocator(const CachingAllocator&) = delete;
  CachingAllocator& operator=(const CachingAllocator&) = delete;

  /// A block of at least `nbytes` (256-byte aligned; nullptr for 0 bytes) usable on `stream`.
  /// When neither the cache nor the driver can provide it, empties the cache and retries once,
  /// then throws ember::OutOfMemoryError naming the requested size, the device's free and
  /// total memory, and what ember has allocated and reserved.
  void* allocate(size_t nbytes, StreamHandle stream);
  /// Returns a block to its stream's cache; unknown pointers are ignored (never crash). A block
  /// that other streams used (record_stream) is cached only once events recorded on each of
  /// them now have completed; until then it is neither allocated nor reusable.
  void free(void* ptr) noexcept;
  /// Records that work on `stream` uses the live block at `ptr` (its start, as allocate returned
  /// it). Returns false, recording nothing, for a pointer this allocator did not hand out or
  /// that has been freed. The block's own stream needs no record.
  bool record_stream(void* ptr, StreamHandle stream);
  /// Gives every unused cached segment back to the driver, first waiting for the device when
  /// freed blocks still wait for other streams.
  void empty_cache() noexcept;
  MemoryStats stats() const;
  void reset_peak() noexcept;

  // The size classes (exposed for tests). Requests are rounded up to kRoundBytes; those up to
  // kSmallRequest come from kSmallSegment segments, larger ones from segments rounded up to
  // kLargeRound, so one segment serves many small tensors and large ones waste little.
  static constexpr size_t kRoundBytes = 512;
  static constexpr size_t kSmallRequest = size_t{1} << 20;  // 1 MiB
  static constexpr size_t kSmallSegment = size_t{2} << 20;  // 2 MiB
  static constexpr size_t kLargeRound = size_t{2} << 20;    // 2 MiB
  static size_t round_size(size_t nbytes);
  static size_t segment_size(size_t rounded);

 private:
  struct State;
  std::unique_ptr<State> state_;
};

/// The allocator of CUDA device `device` (created on first use; lives until exit).
CachingAllocator& device_allocator(int device);

}  // namespace ember::cuda_impl
