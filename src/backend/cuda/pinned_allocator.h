#pragma once
// The caching allocator behind pinned host memory (Tensor::pin_memory(), DataLoader's
// pin_memory, the pinned side of non-blocking copies). cudaHostAlloc is slow, and cudaFreeHost
// waits for the whole device, so a training loop that pinned each batch and let it go would wait
// for the GPU once per batch. Freed blocks are kept and handed out again instead.
//
// A block freed while a non-blocking copy may still read or write it must not be handed out
// before that copy is done: each copy that uses a block records an event on its stream
// (record_use), and a freed block is reused only once all of its events have completed. Nothing
// here waits for the device, except empty_cache() for blocks whose copies are still running.
//
// Plain host C++ (no CUDA headers): the CUDA calls go through RawPinnedMemory, so the
// bookkeeping is tested without a GPU (tests/backend/cuda/test_pinned_allocator.cpp).
#include <cstddef>
#include <cstdint>
#include <memory>

namespace ember::cuda_impl {

/// The CUDA calls the pinned allocator needs; the real one (pinned_memory.cpp) calls
/// cudaHostAlloc, cudaFreeHost and the cudaEvent functions.
class RawPinnedMemory {
 public:
  using Event = void*;   // cudaEvent_t
  using Stream = void*;  // cudaStream_t
  virtual ~RawPinnedMemory() = default;
  /// Pinned host memory; throws ember::Error when it cannot be had.
  virtual void* alloc(size_t nbytes) = 0;
  virtual void free(void* ptr) noexcept = 0;
  /// An event recorded on `stream` of `device`, after the work queued there so far.
  virtual Event record(Stream stream, int device) = 0;
  /// Whether the event has completed, without waiting.
  virtual bool done(Event event) = 0;
  /// Waits for the event.
  virtual void wait(Event event) noexcept = 0;
  virtual void destroy(Event event) noexcept = 0;
};

struct PinnedStats {
  size_t allocated = 0;      // held by live tensors (block sizes)
  size_t reserved = 0;       // obtained with cudaHostAlloc: in use, cached, or waiting for copies
  uint64_t host_allocs = 0;  // cudaHostAlloc calls made
};

class PinnedAllocator {
 public:
  explicit PinnedAllocator(std::unique_ptr<RawPinnedMemory> raw);
  /// Gives no memory back: at exit the driver may already be gone, and the OS reclaims it.
  ~PinnedAllocator();
  PinnedAllocator(const PinnedAllocator&) = delete;
  PinnedAllocator& operator=(const PinnedAllocator&) = delete;

  /// A pinned block of at least `nbytes` (a power of two from kMinBlock up; nullptr for 0
  /// bytes): a cached one whose copies have all completed, or a new one.
  void* allocate(size_t nbytes);
  /// Returns a block to the cache; it is handed out again once the copies recorded for it have
  /// completed. Pointers it did not hand out are ignored (never a crash).
  void free(void* ptr) noexcept;
  /// Records that work just queued on `stream` of `device` (a non-blocking copy) reads or writes
  /// the memory at `ptr`, which may lie inside a block. Returns false, recording nothing, when
  /// `ptr` is in no live block of this allocator (pageable memory, pinned by someone else, or a
  /// block already freed).
  bool record_use(const void* ptr, RawPinnedMemory::Stream stream, int device);
  /// Gives every free block back (cudaFreeHost), waiting first for the copies of those whose
  /// copies are still running.
  void empty_cache() noexcept;
  PinnedStats stats() const;

  static constexpr size_t kMinBlock = 512;
  /// The block size a request of `nbytes` gets: the next power of two, at least kMinBlock.
  static size_t block_size(size_t nbytes);

 private:
  struct State;
  std::unique_ptr<State> state_;
};

/// The process's pinned allocator (created on first use; lives until exit).
PinnedAllocator& pinned_allocator();

}  // namespace ember::cuda_impl
