#include "backend/cuda/pinned_allocator.h"

#include <bit>
#include <map>
#include <mutex>
#include <string>
#include <utility>
#include <vector>

#include "ember/error.h"

namespace ember::cuda_impl {

struct PinnedAllocator::State {
  struct Block {
    size_t size = 0;
    bool allocated = false;
    // Copies that used the block since it was handed out; it is reused once all have completed.
    std::vector<RawPinnedMemory::Event> uses;
  };

  std::unique_ptr<RawPinnedMemory> raw;
  mutable std::mutex mutex;
  std::map<uintptr_t, Block> blocks;       // every block obtained, by address
  std::multimap<size_t, uintptr_t> ready;  // free blocks whose copies have completed, by size
  std::vector<uintptr_t> waiting;          // free blocks with copies that may still run
  PinnedStats stats;

  /// Destroys the events of the block's completed uses.
  void drop_completed(Block& block) {
    std::erase_if(block.uses, [&](RawPinnedMemory::Event event) {
      if (!raw->done(event)) return false;
      raw->destroy(event);
      return true;
    });
  }

  /// Drops the completed uses of each waiting block; those left with none become ready.
  void collect() {
    std::erase_if(waiting, [&](uintptr_t address) {
      Block& block = blocks.at(address);
      drop_completed(block);
      if (!block.uses.empty()) return false;
      ready.emplace(block.size, address);
      return true;
    });
  }
};

PinnedAllocator::PinnedAllocator(std::unique_ptr<RawPinnedMemory> raw) : state_(std::make_unique<State>()) {
  state_->raw = std::move(raw);
}

PinnedAllocator::~PinnedAllocator() = default;

size_t PinnedAllocator::block_size(size_t nbytes) { return std::bit_ceil(nbytes < kMinBlock ? kMinBlock : nbytes); }

void* PinnedAllocator::allocate(size_t nbytes) {
  if (nbytes == 0) return nullptr;
  // Beyond this, rounding up to a power of two would overflow.
  constexpr size_t kLargest = size_t{1} << (sizeof(size_t) * 8 - 1);
  if (nbytes > kLargest) {
    throw Error("pin_memory: cannot pin " + std::to_string(nbytes) + " bytes, more than any block can hold");
  }
  const size_t size = block_size(nbytes);
  State& s = *state_;
  std::lock_guard lock(s.mutex);
  s.collect();
  uintptr_t address = 0;
  if (auto it = s.ready.find(size); it != s.ready.end()) {
    address = it->second;
    s.ready.erase(it);
  } else {
    address = reinterpret_cast<uintptr_t>(s.raw->alloc(size));
    s.blocks[address].size = size;
    s.stats.reserved += size;
    ++s.stats.host_allocs;
  }
  s.blocks.at(address).allocated = true;
  s.stats.allocated += size;
  return reinterpret_cast<void*>(address);
}

void PinnedAllocator::free(void* ptr) noexcept {
  State& s = *state_;
  std::lock_guard lock(s.mutex);
  auto it = s.blocks.find(reinterpret_cast<uintptr_t>(ptr));
  if (it == s.blocks.end() || !it->second.allocated) return;
  State::Block& block = it->second;
  block.allocated = false;
  s.stats.allocated -= block.size;
  if (block.uses.empty()) {
    s.ready.emplace(block.size, it->first);
  } else {
    s.waiting.push_back(it->first);
  }
}

bool PinnedAllocator::record_use(const void* ptr, RawPinnedMemory::Stream stream, int device) {
  State& s = *state_;
  const auto address = reinterpret_cast<uintptr_t>(ptr);
  std::lock_guard lock(s.mutex);
  auto it = s.blocks.upper_bound(address);
  if (it == s.blocks.begin()) return false;
  --it;
  State::Block& block = it->second;
  if (address >= it->first + block.size || !block.allocated) return false;
  // A block that lives long (a buffer reused for a copy every step) would otherwise pile up one
  // event per copy until it is freed.
  s.drop_completed(block);
  block.uses.push_back(s.raw->record(stream, device));
  return true;
}

void PinnedAllocator::empty_cache() noexcept {
  State& s = *state_;
  std::lock_guard lock(s.mutex);
  for (uintptr_t address : s.waiting) {
    State::Block& block = s.blocks.at(address);
    for (RawPinnedMemory::Event event : block.uses) {
      s.raw->wait(event);
      s.raw->destroy(event);
    }
    block.uses.clear();
    s.ready.emplace(block.size, address);
  }
  s.waiting.clear();
  for (const auto& [size, address] : s.ready) {
    s.raw->free(reinterpret_cast<void*>(address));
    s.blocks.erase(address);
    s.stats.reserved -= size;
  }
  s.ready.clear();
}

PinnedStats PinnedAllocator::stats() const {
  std::lock_guard lock(state_->mutex);
  return state_->stats;
}

}  // namespace ember::cuda_impl
