// The bookkeeping of the caching allocator, modelled on PyTorch's CUDACachingAllocator with the
// parts ember does not need (expandable segments, graph pools) left out. Plain host C++: every
// device call goes through RawDeviceMemory.
#include "backend/cuda/caching_allocator.h"

#include <algorithm>
#include <cstdio>
#include <functional>
#include <limits>
#include <mutex>
#include <set>
#include <string>
#include <unordered_map>
#include <utility>
#include <vector>

#include "ember/error.h"

namespace ember::cuda_impl {
namespace {

// A piece of a segment (one driver allocation). The blocks of a segment form a list in address
// order so that a freed block can find and absorb free neighbours.
struct Block {
  char* ptr = nullptr;
  size_t size = 0;
  StreamHandle stream = nullptr;
  bool small = false;      // which pool the segment belongs to
  bool allocated = false;  // handed out, or freed but awaiting other streams: not cached
  size_t requested = 0;    // the rounded request while allocated: what `allocated` counts
  // Other streams that used the block while it was handed out (record_stream); usually none.
  std::vector<StreamHandle> stream_uses;
  int pending_events = 0;  // events recorded at its free that have not completed yet
  Block* prev = nullptr;
  Block* next = nullptr;
};

// Orders cached blocks by stream, then size, then address: lower_bound on {stream, size, null}
// finds the smallest block of that stream that fits (best fit), the lowest address on ties.
struct BlockLess {
  bool operator()(const Block* a, const Block* b) const {
    if (a->stream != b->stream) return std::less<StreamHandle>()(a->stream, b->stream);
    if (a->size != b->size) return a->size < b->size;
    return std::less<char*>()(a->ptr, b->ptr);
  }
};

using FreeBlocks = std::set<Block*, BlockLess>;

// Requests this close to SIZE_MAX cannot be rounded without overflow and no device holds them.
constexpr size_t kMaxRequest = std::numeric_limits<size_t>::max() / 2;

std::string format_size(size_t bytes) {
  static constexpr const char* kUnits[] = {"B", "KiB", "MiB", "GiB"};
  double value = static_cast<double>(bytes);
  int unit = 0;
  while (value >= 1024.0 && unit < 3) {
    value /= 1024.0;
    ++unit;
  }
  char buf[64];
  std::snprintf(buf, sizeof buf, "%.2f %s", value, kUnits[unit]);
  return buf;
}

}  // namespace

struct CachingAllocator::State {
  std::unique_ptr<RawDeviceMemory> raw;
  int device = 0;
  mutable std::mutex mutex;
  FreeBlocks small_blocks;
  FreeBlocks large_blocks;
  std::unordered_map<void*, Block*> active;
  // Events recorded on other streams when a block they used was freed, oldest first.
  std::vector<std::pair<RawDeviceMemory::Event, Block*>> awaiting;
  MemoryStats stats;

  FreeBlocks& pool(bool small) { return small ? small_blocks : large_blocks; }

  Block* find_free(bool small, size_t size, StreamHandle stream) {
    FreeBlocks& blocks = pool(small);
    Block key;
    key.stream = stream;
    key.size = size;
    auto it = blocks.lower_bound(&key);
    if (it == blocks.end() || (*it)->stream != stream) return nullptr;
    Block* block = *it;
    blocks.erase(it);
    return block;
  }

  // A new whole-segment block from the driver, or nullptr when the device is out of memory.
  Block* new_segment(bool small, size_t size, StreamHandle stream) {
    void* ptr = raw->malloc(size);
    ++stats.driver_allocs;
    if (ptr == nullptr) return nullptr;
    auto* block = new Block;
    block->ptr = static_cast<char*>(ptr);
    block->size = size;
    block->stream = stream;
    block->small = small;
    stats.reserved += size;
    stats.max_reserved = std::max(stats.max_reserved, stats.reserved);
    return block;
  }

  // Gives every cached whole segment back to the driver; partly used segments stay.
  void release_unused_segments() noexcept {
    std::vector<Block*> segments;
    for (FreeBlocks* blocks : {&small_blocks, &large_blocks}) {
      for (Block* block : *blocks) {
        if (block->prev == nullptr && block->next == nullptr) segments.push_back(block);
      }
    }
    if (segments.empty()) return;
    // Work queued earlier on any stream may still use this memory.
    raw->synchronize();
    for (Block* block : segments) {
      pool(block->small).erase(block);
      raw->free(block->ptr);
      stats.reserved -= block->size;
      delete block;
    }
  }

  // Hands out the first `size` bytes of `block` and caches the rest when it is worth a block of
  // its own: any remainder in the small pool, only more than a small request in the large one
  // (a large block is never cut into pieces too small to serve large requests).
  void split(Block* block, size_t size) {
    const size_t remainder = block->size - size;
    const bool worth = block->small ? remainder >= kRoundBytes : remainder > kSmallRequest;
    if (!worth) return;
    auto* rest = new Block;
    rest->ptr = block->ptr + size;
    rest->size = remainder;
    rest->stream = block->stream;
    rest->small = block->small;
    rest->prev = block;
    rest->next = block->next;
    if (block->next != nullptr) block->next->prev = rest;
    block->next = rest;
    block->size = size;
    pool(rest->small).insert(rest);
  }

  // Absorbs the cached neighbour `other` (block->prev or block->next) into `block`.
  void merge(Block* block, Block* other) {
    if (other == nullptr || other->allocated) return;
    pool(other->small).erase(other);
    if (other == block->prev) {
      block->ptr = other->ptr;
      block->prev = other->prev;
      if (block->prev != nullptr) block->prev->next = block;
    } else {
      block->next = other->next;
      if (block->next != nullptr) block->next->prev = block;
    }
    block->size += other->size;
    delete other;
  }

  // Caches a block nobody uses any more, absorbing cached neighbours.
  void cache(Block* block) {
    block->allocated = false;
    block->stream_uses.clear();
    merge(block, block->prev);
    merge(block, block->next);
    pool(block->small).insert(block);
  }

  // A freed block that other streams used: an event on each of them now, and the block is
  // cached when the last completes. Where an event cannot be had, waits for the device instead.
  void await_streams(Block* block) noexcept {
    try {
      for (StreamHandle stream : block->stream_uses) {
        awaiting.emplace_back(raw->record(stream), block);
        ++block->pending_events;
      }
      ++stats.awaiting_streams;
      return;
    } catch (...) {
    }
    // Events already recorded for it are dropped: after the wait every one has completed.
    raw->synchronize();
    std::erase_if(awaiting, [&](const auto& entry) {
      if (entry.second != block) return false;
      raw->destroy(entry.first);
      return true;
    });
    block->pending_events = 0;
    cache(block);
  }

  // Caches the awaiting blocks whose events have all completed. When a query throws (an error
  // earlier work left), the entries not yet looked at stay for the next call.
  void process_events() {
    size_t kept = 0;
    for (size_t i = 0; i < awaiting.size(); ++i) {
      const auto [event, block] = awaiting[i];
      bool completed = false;
      try {
        completed = raw->done(event);
      } catch (...) {
        awaiting.erase(awaiting.begin() + static_cast<std::ptrdiff_t>(kept),
                       awaiting.begin() + static_cast<std::ptrdiff_t>(i));
        throw;
      }
      if (completed) {
        raw->destroy(event);
        release_awaited(block);
      } else {
        awaiting[kept++] = awaiting[i];
      }
    }
    awaiting.resize(kept);
  }

  // Waits for the device, then caches every awaiting block.
  void synchronize_and_process_events() noexcept {
    if (awaiting.empty()) return;
    raw->synchronize();
    for (auto& [event, block] : awaiting) {
      raw->destroy(event);
      release_awaited(block);
    }
    awaiting.clear();
  }

  void release_awaited(Block* block) {
    if (--block->pending_events > 0) return;
    --stats.awaiting_streams;
    cache(block);
  }

  [[noreturn]] void throw_oom(size_t nbytes) {
    ++stats.ooms;
    size_t free_bytes = 0, total_bytes = 0;
    raw->mem_info(free_bytes, total_bytes);
    std::string msg = "CUDA out of memory. Tried to allocate " + format_size(nbytes) + ". GPU " +
                      std::to_string(device) + " has a total capacity of " + format_size(total_bytes) + " of which " +
                      format_size(free_bytes) + " is free. Of the allocated memory " + format_size(stats.allocated) +
                      " is allocated by ember, and " + format_size(stats.reserved - stats.allocated) +
                      " is reserved by ember but unallocated. If reserved but unallocated memory is large, call "
                      "ember::cuda::empty_cache(); otherwise reduce the batch size.";
    throw OutOfMemoryError(msg);
  }
};

size_t CachingAllocator::round_size(size_t nbytes) { return (nbytes + kRoundBytes - 1) / kRoundBytes * kRoundBytes; }

size_t CachingAllocator::segment_size(size_t rounded) {
  if (rounded <= kSmallRequest) return kSmallSegment;
  return (rounded + kLargeRound - 1) / kLargeRound * kLargeRound;
}

CachingAllocator::CachingAllocator(std::unique_ptr<RawDeviceMemory> raw, int device) : state_(new State) {
  state_->raw = std::move(raw);
  state_->device = device;
}

// Only allocators owned by tests are destroyed (device_allocator's live until exit), so every
// segment goes back, including those whose blocks were never freed.
CachingAllocator::~CachingAllocator() {
  State& s = *state_;
  std::vector<Block*> blocks;
  for (FreeBlocks* pool : {&s.small_blocks, &s.large_blocks}) blocks.insert(blocks.end(), pool->begin(), pool->end());
  for (auto& entry : s.active) blocks.push_back(entry.second);
  for (auto& [event, block] : s.awaiting) {
    s.raw->destroy(event);
    if (block->pending_events > 0) {
      block->pending_events = 0;  // listed once however many events it awaits
      blocks.push_back(block);
    }
  }
  if (!blocks.empty()) s.raw->synchronize();
  for (Block* block : blocks) {
    if (block->prev == nullptr) s.raw->free(block->ptr);
  }
  for (Block* block : blocks) delete block;
}

void* CachingAllocator::allocate(size_t nbytes, StreamHandle stream) {
  if (nbytes == 0) return nullptr;
  State& s = *state_;
  std::lock_guard<std::mutex> lock(s.mutex);
  if (nbytes > kMaxRequest) s.throw_oom(nbytes);
  const size_t size = round_size(nbytes);
  const bool small = size <= kSmallRequest;

  s.process_events();
  Block* block = s.find_free(small, size, stream);
  if (block == nullptr) {
    const size_t seg = segment_size(size);
    block = s.new_segment(small, seg, stream);
    if (block == nullptr) {
      // Blocks awaiting other streams are free once the device has caught up; failing that,
      // the driver may succeed once the cache's unused segments are back in its hands.
      ++s.stats.retries;
      s.synchronize_and_process_events();
      block = s.find_free(small, size, stream);
      if (block == nullptr) {
        s.release_unused_segments();
        block = s.new_segment(small, seg, stream);
        if (block == nullptr) s.throw_oom(nbytes);
      }
    }
  }
  s.split(block, size);
  block->allocated = true;
  block->requested = size;
  s.active.emplace(block->ptr, block);
  s.stats.allocated += size;
  s.stats.max_allocated = std::max(s.stats.max_allocated, s.stats.allocated);
  return block->ptr;
}

void CachingAllocator::free(void* ptr) noexcept {
  if (ptr == nullptr) return;
  State& s = *state_;
  std::lock_guard<std::mutex> lock(s.mutex);
  auto it = s.active.find(ptr);
  if (it == s.active.end()) return;
  Block* block = it->second;
  s.active.erase(it);
  s.stats.allocated -= block->requested;
  block->requested = 0;
  if (block->stream_uses.empty()) {
    s.cache(block);
  } else {
    s.await_streams(block);
  }
}

bool CachingAllocator::record_stream(void* ptr, StreamHandle stream) {
  State& s = *state_;
  std::lock_guard<std::mutex> lock(s.mutex);
  auto it = s.active.find(ptr);
  if (it == s.active.end()) return false;
  Block* block = it->second;
  if (stream != block->stream &&
      std::find(block->stream_uses.begin(), block->stream_uses.end(), stream) == block->stream_uses.end()) {
    block->stream_uses.push_back(stream);
  }
  return true;
}

void CachingAllocator::empty_cache() noexcept {
  State& s = *state_;
  std::lock_guard<std::mutex> lock(s.mutex);
  s.synchronize_and_process_events();
  s.release_unused_segments();
}

MemoryStats CachingAllocator::stats() const {
  std::lock_guard<std::mutex> lock(state_->mutex);
  return state_->stats;
}

void CachingAllocator::reset_peak() noexcept {
  State& s = *state_;
  std::lock_guard<std::mutex> lock(s.mutex);
  s.stats.max_allocated = s.stats.allocated;
  s.stats.max_reserved = s.stats.reserved;
}

}  // namespace ember::cuda_impl
