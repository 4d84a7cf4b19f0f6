#include "backend/cpu/host_allocator.h"

#include <algorithm>
#include <bit>
#include <cstdlib>
#include <limits>
#include <string>

#include "core/check.h"
#include "ember/error.h"

namespace ember::cpu {

size_t CachingHostAllocator::size_class(size_t nbytes) {
  if (nbytes <= kAlignment) return kAlignment;
  // 2^k < nbytes <= 2^(k+1); classes every 2^(k-2), and never finer than the alignment.
  const int k = static_cast<int>(std::bit_width(nbytes - 1)) - 1;
  const size_t step = std::max(kAlignment, size_t{1} << std::max(k - 2, 0));
  return (nbytes + step - 1) / step * step;
}

CachingHostAllocator::CachingHostAllocator(bool caching, size_t cache_limit)
    : caching_(caching), cache_limit_(cache_limit) {}

CachingHostAllocator::~CachingHostAllocator() { release_cached(); }

void* CachingHostAllocator::allocate(size_t nbytes) {
  if (nbytes > std::numeric_limits<size_t>::max() / 2) {
    throw OutOfMemoryError(detail::concat("[cpu] out of memory: tried to allocate ", nbytes, " bytes"));
  }
  const size_t bytes = size_class(nbytes);
  {
    std::lock_guard lock(mutex_);
    stats_.in_use_bytes += bytes;
    if (auto it = free_.find(bytes); it != free_.end() && !it->second.empty()) {
      void* p = it->second.back();
      it->second.pop_back();
      stats_.cached_bytes -= bytes;
      ++stats_.reused;
      return p;
    }
    ++stats_.from_system;
  }
  void* p = std::aligned_alloc(kAlignment, bytes);
  if (p == nullptr) {
    release_cached();  // memory held for reuse may be what the system is missing
    p = std::aligned_alloc(kAlignment, bytes);
  }
  if (p == nullptr) {
    std::lock_guard lock(mutex_);
    stats_.in_use_bytes -= bytes;
    throw OutOfMemoryError(detail::concat("[cpu] out of memory: tried to allocate ", nbytes, " bytes"));
  }
  return p;
}

void CachingHostAllocator::deallocate(void* ptr, size_t nbytes) noexcept {
  if (ptr == nullptr) return;
  const size_t bytes = size_class(nbytes);
  {
    std::lock_guard lock(mutex_);
    stats_.in_use_bytes -= bytes;
    if (caching_ && bytes <= kMaxCachedBlock && stats_.cached_bytes + bytes <= cache_limit_) {
      try {
        free_[bytes].push_back(ptr);
        stats_.cached_bytes += bytes;
        return;
      } catch (...) {  // no memory for the bookkeeping: give the block back instead
      }
    }
  }
  std::free(ptr);
}

void CachingHostAllocator::release_cached() noexcept {
  std::lock_guard lock(mutex_);
  release_cached_locked();
}

void CachingHostAllocator::release_cached_locked() noexcept {
  for (auto& [bytes, blocks] : free_) {
    for (void* p : blocks) std::free(p);
    blocks.clear();
  }
  free_.clear();
  stats_.cached_bytes = 0;
}

HostAllocatorStats CachingHostAllocator::stats() const {
  std::lock_guard lock(mutex_);
  return stats_;
}

namespace {

size_t cache_limit_from_environment() {
  constexpr size_t kDefaultMiB = 1024;
  const char* text = std::getenv("EMBER_CPU_CACHE_LIMIT_MB");
  if (text == nullptr || *text == '\0') return kDefaultMiB << 20;
  char* end = nullptr;
  const unsigned long long mib = std::strtoull(text, &end, 10);
  EMBER_CHECK(*end == '\0' && text[0] != '-', "EMBER_CPU_CACHE_LIMIT_MB must be a whole number of MiB, got '", text,
              "'");
  return static_cast<size_t>(std::min<unsigned long long>(mib, std::numeric_limits<size_t>::max() >> 20)) << 20;
}

bool caching_from_environment() {
  const char* text = std::getenv("EMBER_CPU_ALLOCATOR");
  const std::string choice = text ? text : "";
  EMBER_CHECK(choice.empty() || choice == "caching" || choice == "system",
              "EMBER_CPU_ALLOCATOR must be 'caching' or 'system', got '", choice, "'");
  return choice != "system" && !kSanitizedBuild;
}

}  // namespace

CachingHostAllocator& host_allocator() {
  // Never destroyed: tensors in other static objects may be freed after it would be.
  static auto* allocator = new CachingHostAllocator(caching_from_environment(), cache_limit_from_environment());
  return *allocator;
}

}  // namespace ember::cpu
