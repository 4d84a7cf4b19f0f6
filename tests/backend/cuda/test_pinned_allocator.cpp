// The pinned allocator's bookkeeping, checked on the host: a fake RawPinnedMemory hands out host
// memory up to a chosen capacity, and its events complete only when the test says so.
#include <gtest/gtest.h>

#include <atomic>
#include <cstdint>
#include <cstdlib>
#include <initializer_list>
#include <limits>
#include <map>
#include <memory>
#include <mutex>
#include <thread>
#include <utility>
#include <vector>

#include "backend/cuda/pinned_allocator.h"
#include "ember/error.h"

namespace {

using ember::cuda_impl::PinnedAllocator;
using ember::cuda_impl::PinnedStats;
using ember::cuda_impl::RawPinnedMemory;

struct FakeEvent {
  bool done = false, waited = false;
  int destroys = 0;
  RawPinnedMemory::Stream stream = nullptr;
  int device = -1;
};

// Owned by the test, so it outlives the fake (which the allocator owns and destroys).
struct FakeCounters {
  std::mutex mutex;  // the fake is called from several threads in one test
  size_t capacity = size_t{1} << 40;
  size_t used = 0;
  int allocs = 0, frees = 0, bad_frees = 0, waits = 0;
  int bad_event_ops = 0;  // done/wait/destroy of an event unknown or already destroyed
  bool fake_destroyed = false;
  std::map<void*, size_t> live;
  std::vector<FakeEvent> events;  // event i is handed out as (void*)(i + 1)

  void complete(size_t id) {
    std::lock_guard lock(mutex);
    events.at(id).done = true;
  }
  void complete_all() {
    std::lock_guard lock(mutex);
    for (FakeEvent& e : events) e.done = true;
  }
};

class FakePinnedMemory final : public RawPinnedMemory {
 public:
  explicit FakePinnedMemory(FakeCounters* c) : c_(c) {}
  // The allocator gives nothing back at destruction: release the rest here so ASan sees no leak.
  ~FakePinnedMemory() override {
    for (auto& [ptr, size] : c_->live) std::free(ptr);
    c_->live.clear();
    c_->fake_destroyed = true;
  }
  void* alloc(size_t nbytes) override {
    std::lock_guard lock(c_->mutex);
    if (nbytes > c_->capacity - c_->used) throw ember::Error("fake pinned memory exhausted");
    void* ptr = std::aligned_alloc(64, (nbytes + 63) / 64 * 64);  // a multiple of the alignment, whatever asked
    if (ptr == nullptr) throw ember::Error("host allocation failed");
    ++c_->allocs;
    c_->used += nbytes;
    c_->live[ptr] = nbytes;
    return ptr;
  }
  void free(void* ptr) noexcept override {
    std::lock_guard lock(c_->mutex);
    auto it = c_->live.find(ptr);
    if (it == c_->live.end()) {
      ++c_->bad_frees;
      return;
    }
    ++c_->frees;
    c_->used -= it->second;
    c_->live.erase(it);
    std::free(ptr);
  }
  Event record(Stream stream, int device) override {
    std::lock_guard lock(c_->mutex);
    c_->events.push_back(FakeEvent{false, false, 0, stream, device});
    return reinterpret_cast<Event>(c_->events.size());
  }
  bool done(Event event) override {
    std::lock_guard lock(c_->mutex);
    FakeEvent* e = find(event);
    return e == nullptr || e->done;
  }
  void wait(Event event) noexcept override {
    std::lock_guard lock(c_->mutex);
    ++c_->waits;
    if (FakeEvent* e = find(event)) e->done = e->waited = true;
  }
  void destroy(Event event) noexcept override {
    std::lock_guard lock(c_->mutex);
    if (FakeEvent* e = find(event)) ++e->destroys;
  }

 private:
  FakeEvent* find(Event event) {  // called with the mutex held
    const auto id = reinterpret_cast<uintptr_t>(event);
    if (id == 0 || id > c_->events.size() || c_->events[id - 1].destroys > 0) {
      ++c_->bad_event_ops;
      return nullptr;
    }
    return &c_->events[id - 1];
  }
  FakeCounters* c_;
};

struct Fixture {
  FakeCounters counters;
  std::unique_ptr<PinnedAllocator> alloc;
  explicit Fixture(size_t capacity = size_t{1} << 40) {
    counters.capacity = capacity;
    alloc = std::make_unique<PinnedAllocator>(std::make_unique<FakePinnedMemory>(&counters));
  }
  bool use(const void* p) { return alloc->record_use(p, reinterpret_cast<void*>(uintptr_t{7}), 0); }
};

char* bytes(void* p) { return static_cast<char*>(p); }

// Frees `live` and empties the cache: then every block went back to the fake once, and every
// event recorded was destroyed exactly once (no leak, no double destroy).
void finish(Fixture& f, std::initializer_list<void*> live) {
  for (void* p : live) f.alloc->free(p);
  f.alloc->empty_cache();
  EXPECT_EQ(f.alloc->stats().allocated, 0u);
  EXPECT_EQ(f.alloc->stats().reserved, 0u);
  EXPECT_EQ(f.counters.used, 0u);
  EXPECT_EQ(f.counters.bad_frees, 0);
  EXPECT_EQ(f.counters.bad_event_ops, 0);
  for (size_t i = 0; i < f.counters.events.size(); ++i) EXPECT_EQ(f.counters.events[i].destroys, 1) << "event " << i;
}

TEST(PinnedAllocator, BlockSizeIsAPowerOfTwoFromMinBlock) {
  EXPECT_EQ(PinnedAllocator::block_size(1), 512u);
  EXPECT_EQ(PinnedAllocator::block_size(512), 512u);
  EXPECT_EQ(PinnedAllocator::block_size(513), 1024u);
  EXPECT_EQ(PinnedAllocator::block_size(3000), 4096u);
  EXPECT_EQ(PinnedAllocator::block_size(size_t{1} << 20), size_t{1} << 20);
  EXPECT_EQ(PinnedAllocator::block_size((size_t{1} << 20) + 1), size_t{2} << 20);
  Fixture f;
  EXPECT_EQ(f.alloc->allocate(0), nullptr);  // an empty tensor pins nothing
  EXPECT_EQ(f.alloc->stats().host_allocs, 0u);
  EXPECT_EQ(f.counters.allocs, 0);
}

TEST(PinnedAllocator, FreedBlockWithoutUsesIsReusedForTheSameSize) {
  Fixture f;
  void* a = f.alloc->allocate(1000);
  ASSERT_NE(a, nullptr);
  EXPECT_EQ(f.counters.live.at(a), 1024u);  // the raw allocation is the whole block
  f.alloc->free(a);
  void* b = f.alloc->allocate(600);  // same block size: no cudaHostAlloc
  EXPECT_EQ(b, a);
  EXPECT_EQ(f.counters.allocs, 1);
  void* c = f.alloc->allocate(2000);  // a bigger size class needs a new block
  EXPECT_NE(c, a);
  EXPECT_EQ(f.counters.allocs, 2);
  finish(f, {b, c});
}

TEST(PinnedAllocator, BlockIsNotReusedUntilEveryRecordedCopyCompletes) {
  Fixture f;
  void* a = f.alloc->allocate(4096);
  ASSERT_TRUE(f.alloc->record_use(a, reinterpret_cast<void*>(uintptr_t{42}), 3));
  ASSERT_TRUE(f.use(bytes(a) + 100));
  ASSERT_TRUE(f.use(bytes(a) + 200));
  ASSERT_EQ(f.counters.events.size(), 3u);
  EXPECT_EQ(f.counters.events[0].stream, reinterpret_cast<void*>(uintptr_t{42}));  // recorded where asked
  EXPECT_EQ(f.counters.events[0].device, 3);
  f.alloc->free(a);
  // A copy may still read the block: handing it out now would let new data race with it.
  f.counters.complete(0);
  f.counters.complete(2);
  void* b = f.alloc->allocate(4096);
  EXPECT_NE(b, a);
  EXPECT_EQ(f.counters.allocs, 2);
  EXPECT_EQ(f.counters.events[1].destroys, 0);
  f.counters.complete(1);
  void* c = f.alloc->allocate(4096);
  EXPECT_EQ(c, a);
  EXPECT_EQ(f.counters.allocs, 2);
  // Their events are no longer needed, and allocate never waits for the device.
  for (int i = 0; i < 3; ++i) EXPECT_EQ(f.counters.events[i].destroys, 1);
  EXPECT_EQ(f.counters.waits, 0);
  finish(f, {b, c});
}

TEST(PinnedAllocator, RecordUseAcceptsOnlyPointersInLiveBlocks) {
  Fixture f;
  void* a = f.alloc->allocate(1024);
  EXPECT_TRUE(f.use(a));
  EXPECT_TRUE(f.use(bytes(a) + 100));   // a tensor's storage may start inside the block
  EXPECT_TRUE(f.use(bytes(a) + 1023));  // last byte
  const size_t recorded = f.counters.events.size();
  int local = 0;
  std::unique_ptr<char[]> pageable(new char[64]);
  EXPECT_FALSE(f.use(&local));  // pageable memory: the copy is synchronous, nothing to track
  EXPECT_FALSE(f.use(pageable.get()));
  EXPECT_FALSE(f.use(nullptr));
  EXPECT_FALSE(f.use(bytes(a) + 1024));  // one past the end
  EXPECT_FALSE(f.use(bytes(a) - 1));
  EXPECT_EQ(f.counters.events.size(), recorded);  // false means nothing recorded
  f.alloc->free(a);
  EXPECT_FALSE(f.use(a));  // a freed block is no live block
  EXPECT_FALSE(f.use(bytes(a) + 100));
  EXPECT_EQ(f.counters.events.size(), recorded);
  finish(f, {});
}

TEST(PinnedAllocator, UnknownAndDoubleFreesAreIgnored) {
  Fixture f;
  void* a = f.alloc->allocate(2048);
  int local = 0;
  f.alloc->free(nullptr);
  f.alloc->free(&local);
  f.alloc->free(bytes(a) + 100);  // inside a live block, but not what allocate returned
  EXPECT_EQ(f.alloc->stats().allocated, 2048u);
  f.alloc->free(a);
  f.alloc->free(a);  // must not put the block in the cache twice, nor underflow `allocated`
  EXPECT_EQ(f.alloc->stats().allocated, 0u);
  void* b = f.alloc->allocate(2048);
  void* c = f.alloc->allocate(2048);
  EXPECT_EQ(b, a);
  EXPECT_NE(c, a);  // handed out only once
  EXPECT_EQ(f.alloc->stats().allocated, 4096u);
  finish(f, {b, c});
}

TEST(PinnedAllocator, StatsFollowAllocateFreeAndEmptyCache) {
  Fixture f;
  void* a = f.alloc->allocate(1000);  // 1024
  void* b = f.alloc->allocate(100);   // 512
  void* c = f.alloc->allocate(5000);  // 8192
  PinnedStats s = f.alloc->stats();
  EXPECT_EQ(s.allocated, 1024u + 512u + 8192u);
  EXPECT_EQ(s.reserved, 1024u + 512u + 8192u);
  EXPECT_EQ(s.host_allocs, 3u);
  f.alloc->free(b);
  ASSERT_TRUE(f.use(c));
  f.alloc->free(c);  // cached, waiting for its copy: still reserved
  s = f.alloc->stats();
  EXPECT_EQ(s.allocated, 1024u);
  EXPECT_EQ(s.reserved, 1024u + 512u + 8192u);
  void* d = f.alloc->allocate(300);  // reuses b
  EXPECT_EQ(f.alloc->stats().host_allocs, 3u);
  EXPECT_EQ(f.alloc->stats().allocated, 1024u + 512u);
  f.alloc->free(a);
  f.alloc->empty_cache();
  s = f.alloc->stats();
  EXPECT_EQ(s.allocated, 512u);
  EXPECT_EQ(s.reserved, 512u);
  EXPECT_EQ(s.host_allocs, 3u);  // a count of calls made, not of blocks held
  EXPECT_EQ(s.reserved, f.counters.used);
  finish(f, {d});
}

TEST(PinnedAllocator, EmptyCacheWaitsForFreeBlocksAndKeepsLiveOnes) {
  Fixture f;
  void* live = f.alloc->allocate(1024);
  void* busy = f.alloc->allocate(2048);
  void* idle = f.alloc->allocate(4096);
  ASSERT_TRUE(f.use(live));  // event 0
  ASSERT_TRUE(f.use(busy));  // events 1 and 2
  ASSERT_TRUE(f.use(busy));
  f.alloc->free(busy);
  f.alloc->free(idle);
  f.alloc->empty_cache();
  // cudaFreeHost of memory a copy still reads would be a use after free: wait first.
  EXPECT_TRUE(f.counters.events[1].waited);
  EXPECT_TRUE(f.counters.events[2].waited);
  EXPECT_EQ(f.counters.events[1].destroys + f.counters.events[2].destroys, 2);
  EXPECT_FALSE(f.counters.events[0].waited);  // the live block's copy is not waited for
  EXPECT_EQ(f.counters.events[0].destroys, 0);
  EXPECT_EQ(f.counters.frees, 2);
  EXPECT_EQ(f.counters.live.count(live), 1u);
  EXPECT_EQ(f.alloc->stats().reserved, 1024u);  // == allocated: only the live block is left
  // The live block still works, and goes back once freed.
  EXPECT_TRUE(f.use(bytes(live) + 10));
  finish(f, {live});
  EXPECT_EQ(f.counters.frees, 3);
}

TEST(PinnedAllocator, FailedHostAllocationPropagatesAndChangesNothing) {
  Fixture f(2048);
  void* a = f.alloc->allocate(2048);
  EXPECT_THROW(f.alloc->allocate(512), ember::Error);
  EXPECT_EQ(f.alloc->stats().allocated, 2048u);
  EXPECT_EQ(f.alloc->stats().reserved, 2048u);
  f.alloc->free(a);
  EXPECT_EQ(f.alloc->allocate(2048), a);  // still usable afterwards
  finish(f, {a});
}

TEST(PinnedAllocator, RequestNoBlockCanHoldThrows) {
  Fixture f;
  // No power of two in size_t is >= this: a rounding that wraps around would hand out a tiny
  // block for a huge request, and a copy into it would overrun the heap.
  void* p = nullptr;
  EXPECT_THROW(p = f.alloc->allocate(std::numeric_limits<size_t>::max() - 7), ember::Error);
  EXPECT_EQ(f.alloc->stats().allocated, 0u);
  finish(f, {p});
}

TEST(PinnedAllocator, DestructorGivesNothingBack) {
  FakeCounters counters;
  {
    PinnedAllocator alloc(std::make_unique<FakePinnedMemory>(&counters));
    void* a = alloc.allocate(512);
    void* b = alloc.allocate(4096);
    alloc.allocate(1024);  // never freed
    ASSERT_TRUE(alloc.record_use(b, nullptr, 0));
    alloc.free(a);
    alloc.free(b);
  }
  // At exit the driver may be gone: no cudaFreeHost and no event calls from the destructor.
  EXPECT_EQ(counters.frees, 0);
  EXPECT_EQ(counters.waits, 0);
  EXPECT_TRUE(counters.fake_destroyed);  // it owned the raw memory object
  EXPECT_EQ(counters.bad_event_ops, 0);
}

TEST(PinnedAllocator, TwoThreadsAtOnceKeepBlocksApartAndStatsConsistent) {
  Fixture f;
  // A DataLoader worker pins batches while the main thread frees them and records copies.
  std::atomic<bool> go{false};
  auto worker = [&f, &go](int t) {
    while (!go) std::this_thread::yield();  // start together, so the calls overlap
    const char tag = static_cast<char>(1 + t);
    std::vector<std::pair<char*, size_t>> mine;
    for (int i = 0; i < 20000; ++i) {
      if (mine.empty() || (mine.size() < 8 && (i + t) % 3 != 0)) {
        const size_t n = size_t{512} << ((i + t) % 4);
        char* p = bytes(f.alloc->allocate(n));
        p[0] = p[n - 1] = tag;  // a block handed to both threads would lose its tag
        if (i % 2 == 0) {
          EXPECT_TRUE(f.alloc->record_use(p + n / 2, nullptr, t));
        }
        mine.emplace_back(p, n);
      } else {
        auto [p, n] = mine.back();
        mine.pop_back();
        EXPECT_EQ(p[0], tag);
        EXPECT_EQ(p[n - 1], tag);
        f.alloc->free(p);
      }
      if (i % 64 == 0) f.counters.complete_all();
      if (i % 4999 == 0) f.alloc->empty_cache();
    }
    for (auto [p, n] : mine) f.alloc->free(p);
  };
  std::thread other(worker, 1);
  go = true;
  worker(0);
  other.join();
  EXPECT_EQ(f.alloc->stats().allocated, 0u);
  EXPECT_EQ(f.alloc->stats().reserved, f.counters.used);
  EXPECT_EQ(f.alloc->stats().host_allocs, static_cast<uint64_t>(f.counters.allocs));
  finish(f, {});
}

}  // namespace
