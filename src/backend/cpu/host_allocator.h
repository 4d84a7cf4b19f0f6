#pragma once
// The CPU backend's memory: freed tensor buffers are kept, by size class, and handed out again,
// so a training step that allocates the same tensors every step gets them from the cache rather
// than from malloc, which returns big blocks to the kernel and then takes page faults (and the
// kernel's zeroing) to get them back. docs/PERFORMANCE.md ("Caching CPU allocator") has the
// figures.
#include <cstddef>
#include <cstdint>
#include <mutex>
#include <unordered_map>
#include <vector>

namespace ember::cpu {

/// Whether this is an ASan or TSan build, where reusing freed blocks would hide use-after-free
/// and a huge request ends the process instead of failing.
#if defined(__SANITIZE_ADDRESS__) || defined(__SANITIZE_THREAD__)
inline constexpr bool kSanitizedBuild = true;
#elif defined(__has_feature)
inline constexpr bool kSanitizedBuild =
    __has_feature(address_sanitizer) || __has_feature(thread_sanitizer) || __has_feature(memory_sanitizer);
#else
inline constexpr bool kSanitizedBuild = false;
#endif

struct HostAllocatorStats {
  size_t cached_bytes = 0;  // in free blocks kept for reuse
  size_t in_use_bytes = 0;  // handed out and not yet returned (size-class bytes)
  int64_t reused = 0;       // allocations served from the cache
  int64_t from_system = 0;  // allocations that went to the system allocator
};

class CachingHostAllocator {
 public:
  static constexpr size_t kAlignment = 64;  // a cache line, and enough for AVX-512 loads
  /// Blocks above this are returned to the system at once: they are rare, and a cache should not
  /// pin a one-off giant buffer.
  static constexpr size_t kMaxCachedBlock = size_t{64} << 20;

  /// caching = false makes it a thin wrapper over aligned_alloc/free (sanitizer builds, where
  /// reuse would hide use-after-free, and EMBER_CPU_ALLOCATOR=system). Free blocks beyond
  /// cache_limit bytes are returned to the system.
  CachingHostAllocator(bool caching, size_t cache_limit);
  ~CachingHostAllocator();
  CachingHostAllocator(const CachingHostAllocator&) = delete;
  CachingHostAllocator& operator=(const CachingHostAllocator&) = delete;

  /// At least nbytes (never null; 0 bytes gives a minimal block), aligned to kAlignment. Throws
  /// OutOfMemoryError when the system has no memory even after the cache is emptied.
  void* allocate(size_t nbytes);
  /// ptr must come from allocate(nbytes) with the same nbytes.
  void deallocate(void* ptr, size_t nbytes) noexcept;
  /// Returns every cached block to the system.
  void release_cached() noexcept;
  HostAllocatorStats stats() const;

  /// The size class of a request: a multiple of kAlignment, and at most 25% above the request
  /// beyond that (four classes per power of two), so blocks of nearby sizes are shared.
  static size_t size_class(size_t nbytes);

 private:
  void release_cached_locked() noexcept;

  const bool caching_;
  const size_t cache_limit_;
  mutable std::mutex mutex_;
  std::unordered_map<size_t, std::vector<void*>> free_;  // size class -> free blocks
  HostAllocatorStats stats_;
};

/// The allocator behind CpuBackend::allocate: caching unless built with a sanitizer or
/// EMBER_CPU_ALLOCATOR=system is set; EMBER_CPU_CACHE_LIMIT_MB sets the limit (default 1024).
CachingHostAllocator& host_allocator();

}  // namespace ember::cpu
