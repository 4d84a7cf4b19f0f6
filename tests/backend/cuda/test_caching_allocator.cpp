// The caching allocator's bookkeeping, checked on the host: a fake RawDeviceMemory hands out
// host memory up to a chosen capacity and counts the driver calls.
#include <gtest/gtest.h>

#include <algorithm>
#include <cstdint>
#include <cstdlib>
#include <cstring>
#include <limits>
#include <map>
#include <random>
#include <thread>
#include <vector>

#include "backend/cuda/caching_allocator.h"
#include "ember/error.h"
#include "support/error_of.h"

namespace {

using ember::cuda_impl::CachingAllocator;
using ember::cuda_impl::MemoryStats;
using ember::cuda_impl::RawDeviceMemory;
using ember::cuda_impl::StreamHandle;

constexpr size_t KiB = size_t{1} << 10;
constexpr size_t MiB = size_t{1} << 20;

struct FakeCounters {
  size_t capacity = 0;
  size_t used = 0;
  int mallocs = 0;  // successful
  int failed_mallocs = 0;
  int frees = 0;
  int bad_frees = 0;  // pointers the fake never handed out
  int syncs = 0;
  std::map<void*, size_t> live;
  // Events: each is an index into `completed`, recorded on `event_streams[i]`. A test completes
  // them by hand; a synchronize completes them all, as the device's would.
  std::vector<bool> completed;
  std::vector<StreamHandle> event_streams;
  int live_events = 0;
  bool fail_record = false;  // record() throws, as when the driver cannot create an event
  bool fail_query = false;   // done() throws, as for an error earlier work left

  void complete_events_on(StreamHandle s) {
    for (size_t i = 0; i < completed.size(); ++i) {
      if (event_streams[i] == s) completed[i] = true;
    }
  }
};

class FakeDeviceMemory final : public RawDeviceMemory {
 public:
  explicit FakeDeviceMemory(FakeCounters* c) : c_(c) {}
  ~FakeDeviceMemory() override {
    for (auto& [ptr, size] : c_->live) std::free(ptr);
    c_->live.clear();
  }
  void* malloc(size_t nbytes) override {
    if (nbytes > c_->capacity - c_->used) {
      ++c_->failed_mallocs;
      return nullptr;
    }
    void* ptr = std::aligned_alloc(256, nbytes);
    if (ptr == nullptr) throw ember::Error("host allocation failed");
    ++c_->mallocs;
    c_->used += nbytes;
    c_->live[ptr] = nbytes;
    return ptr;
  }
  void free(void* ptr) noexcept override {
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
  void mem_info(size_t& free_bytes, size_t& total_bytes) noexcept override {
    free_bytes = c_->capacity - c_->used;
    total_bytes = c_->capacity;
  }
  void synchronize() noexcept override {
    ++c_->syncs;
    std::fill(c_->completed.begin(), c_->completed.end(), true);
  }
  Event record(StreamHandle stream) override {
    if (c_->fail_record) throw ember::Error("cudaEventRecord failed");
    c_->completed.push_back(false);
    c_->event_streams.push_back(stream);
    ++c_->live_events;
    return reinterpret_cast<Event>(c_->completed.size());  // 1-based: never nullptr
  }
  bool done(Event event) override {
    if (c_->fail_query) throw ember::Error("an illegal memory access was encountered");
    return c_->completed.at(reinterpret_cast<uintptr_t>(event) - 1);
  }
  void destroy(Event) noexcept override { --c_->live_events; }

 private:
  FakeCounters* c_;
};

// The counters outlive the allocator so a test can read them after destroying it.
struct Fixture {
  FakeCounters counters;
  std::unique_ptr<CachingAllocator> alloc;
  explicit Fixture(size_t capacity = size_t{1} << 40) {
    counters.capacity = capacity;
    alloc = std::make_unique<CachingAllocator>(std::make_unique<FakeDeviceMemory>(&counters), 0);
  }
};

StreamHandle stream(uintptr_t id) { return reinterpret_cast<StreamHandle>(id); }
char* as_bytes(void* p) { return static_cast<char*>(p); }

TEST(CachingAllocator, RoundingAndSegmentSizes) {
  EXPECT_EQ(CachingAllocator::round_size(1), 512u);
  EXPECT_EQ(CachingAllocator::round_size(512), 512u);
  EXPECT_EQ(CachingAllocator::round_size(513), 1024u);
  EXPECT_EQ(CachingAllocator::round_size(MiB + 1), MiB + 512);
  EXPECT_EQ(CachingAllocator::segment_size(512), 2 * MiB);
  EXPECT_EQ(CachingAllocator::segment_size(MiB), 2 * MiB);
  EXPECT_EQ(CachingAllocator::segment_size(MiB + 512), 2 * MiB);
  EXPECT_EQ(CachingAllocator::segment_size(2 * MiB), 2 * MiB);
  EXPECT_EQ(CachingAllocator::segment_size(2 * MiB + 512), 4 * MiB);
  EXPECT_EQ(CachingAllocator::segment_size(5 * MiB), 6 * MiB);
}

TEST(CachingAllocator, FreedBlockIsReusedOnTheSameStream) {
  Fixture f;
  void* a = f.alloc->allocate(1000, stream(1));
  ASSERT_NE(a, nullptr);
  EXPECT_EQ(reinterpret_cast<uintptr_t>(a) % 256, 0u);
  EXPECT_EQ(f.counters.mallocs, 1);
  f.alloc->free(a);
  void* b = f.alloc->allocate(900, stream(1));
  EXPECT_EQ(b, a);
  EXPECT_EQ(f.counters.mallocs, 1);
  EXPECT_EQ(f.alloc->stats().driver_allocs, 1u);
  f.alloc->free(b);
}

TEST(CachingAllocator, FreedBlockIsNotReusedOnAnotherStream) {
  Fixture f;
  void* a = f.alloc->allocate(4 * KiB, stream(1));
  f.alloc->free(a);
  void* b = f.alloc->allocate(4 * KiB, stream(2));
  EXPECT_EQ(f.counters.mallocs, 2);
  EXPECT_NE(b, a);
  // The cached block of stream 1 is still there for stream 1.
  void* c = f.alloc->allocate(4 * KiB, stream(1));
  EXPECT_EQ(c, a);
  EXPECT_EQ(f.counters.mallocs, 2);
  f.alloc->free(b);
  f.alloc->free(c);
}

TEST(CachingAllocator, SmallBlocksSplitAndMergeInEveryFreeOrder) {
  const std::vector<std::vector<int>> orders = {{0, 1, 2}, {0, 2, 1}, {1, 0, 2}, {1, 2, 0}, {2, 0, 1}, {2, 1, 0}};
  for (const auto& order : orders) {
    Fixture f;
    // 512 KiB + 512 KiB + 1 MiB fill one 2 MiB segment exactly.
    void* blocks[3] = {f.alloc->allocate(512 * KiB, stream(1)), f.alloc->allocate(512 * KiB, stream(1)),
                       f.alloc->allocate(MiB, stream(1))};
    ASSERT_EQ(f.counters.mallocs, 1);
    EXPECT_EQ(as_bytes(blocks[1]), as_bytes(blocks[0]) + 512 * KiB);
    EXPECT_EQ(as_bytes(blocks[2]), as_bytes(blocks[0]) + MiB);
    for (int i : order) f.alloc->free(blocks[i]);
    EXPECT_EQ(f.alloc->stats().allocated, 0u);
    // Coalesced back into one block: two 1 MiB requests fit without the driver, in address order.
    void* x = f.alloc->allocate(MiB, stream(1));
    void* y = f.alloc->allocate(MiB, stream(1));
    EXPECT_EQ(x, blocks[0]);
    EXPECT_EQ(as_bytes(y), as_bytes(blocks[0]) + MiB);
    EXPECT_EQ(f.counters.mallocs, 1);
    f.alloc->free(y);
    f.alloc->free(x);
    // A whole free segment is what empty_cache gives back.
    f.alloc->empty_cache();
    EXPECT_EQ(f.counters.frees, 1);
    EXPECT_EQ(f.counters.used, 0u);
    EXPECT_EQ(f.alloc->stats().reserved, 0u);
  }
}

TEST(CachingAllocator, NonAdjacentFreeBlocksDoNotMerge) {
  Fixture f;
  void* a = f.alloc->allocate(512 * KiB, stream(1));
  void* b = f.alloc->allocate(512 * KiB, stream(1));
  void* c = f.alloc->allocate(512 * KiB, stream(1));
  f.alloc->free(b);
  // 512 KiB free between a and c, 512 KiB free after c: no 1 MiB hole.
  void* d = f.alloc->allocate(MiB, stream(1));
  EXPECT_EQ(f.counters.mallocs, 2);
  // The best fit for 512 KiB is the hole b left (lowest address among equal sizes).
  void* e = f.alloc->allocate(512 * KiB, stream(1));
  EXPECT_EQ(e, b);
  for (void* p : {a, c, d, e}) f.alloc->free(p);
  f.alloc->empty_cache();
  EXPECT_EQ(f.counters.used, 0u);
}

TEST(CachingAllocator, BestFitPicksTheSmallestCachedBlock) {
  Fixture f;
  void* big = f.alloc->allocate(MiB, stream(1));               // segment A: 1 MiB used, 1 MiB free
  void* filler = f.alloc->allocate(MiB, stream(1));            // fills segment A
  void* other = f.alloc->allocate(1536 * KiB / 2, stream(1));  // segment B
  f.alloc->free(big);  // A has a 1 MiB hole; B has 2 MiB - 768 KiB = 1280 KiB free
  void* p = f.alloc->allocate(MiB, stream(1));
  EXPECT_EQ(p, big);
  EXPECT_EQ(f.counters.mallocs, 2);
  for (void* q : {filler, other, p}) f.alloc->free(q);
}

TEST(CachingAllocator, LargePoolSplitsOnlyBigRemaindersAndMerges) {
  Fixture f;
  void* seg = f.alloc->allocate(8 * MiB, stream(1));
  EXPECT_EQ(f.alloc->stats().reserved, 8 * MiB);
  f.alloc->free(seg);
  // 3 MiB from the cached 8 MiB block leaves 5 MiB: split off.
  void* a = f.alloc->allocate(3 * MiB, stream(1));
  EXPECT_EQ(a, seg);
  void* b = f.alloc->allocate(2 * MiB, stream(1));
  EXPECT_EQ(as_bytes(b), as_bytes(seg) + 3 * MiB);
  // 3 MiB remain: a 2.5 MiB request takes them whole (a 512 KiB remainder is not split off).
  void* c = f.alloc->allocate(2 * MiB + 512 * KiB, stream(1));
  EXPECT_EQ(as_bytes(c), as_bytes(seg) + 5 * MiB);
  EXPECT_EQ(f.counters.mallocs, 1);
  // `allocated` counts the rounded requests, not the unsplit block.
  EXPECT_EQ(f.alloc->stats().allocated, 7 * MiB + 512 * KiB);
  f.alloc->free(b);
  f.alloc->free(a);
  f.alloc->free(c);
  // Merged back: a full-segment request reuses it.
  void* whole = f.alloc->allocate(8 * MiB, stream(1));
  EXPECT_EQ(whole, seg);
  EXPECT_EQ(f.counters.mallocs, 1);
  f.alloc->free(whole);
}

TEST(CachingAllocator, SmallAndLargePoolsAreSeparate) {
  Fixture f;
  void* large = f.alloc->allocate(MiB + 1, stream(1));
  EXPECT_EQ(f.alloc->stats().reserved, 2 * MiB);
  EXPECT_EQ(f.alloc->stats().allocated, MiB + 512);
  f.alloc->free(large);
  // A small request never takes a block of the large pool, nor the other way round.
  void* small = f.alloc->allocate(512 * KiB, stream(1));
  EXPECT_EQ(f.counters.mallocs, 2);
  f.alloc->free(small);
  void* large2 = f.alloc->allocate(5 * MiB, stream(1));
  EXPECT_EQ(f.counters.mallocs, 3);
  EXPECT_EQ(f.counters.live.at(large2), 6 * MiB);
  f.alloc->free(large2);
}

TEST(CachingAllocator, StatsAndPeaks) {
  Fixture f;
  void* a = f.alloc->allocate(1000, stream(1));     // 1024
  void* b = f.alloc->allocate(3 * MiB, stream(1));  // 3 MiB in a 4 MiB segment
  MemoryStats s = f.alloc->stats();
  EXPECT_EQ(s.allocated, 1024 + 3 * MiB);
  EXPECT_EQ(s.reserved, 6 * MiB);
  EXPECT_EQ(s.max_allocated, 1024 + 3 * MiB);
  EXPECT_EQ(s.max_reserved, 6 * MiB);
  EXPECT_EQ(s.driver_allocs, 2u);
  EXPECT_EQ(s.retries, 0u);
  EXPECT_EQ(s.ooms, 0u);
  f.alloc->free(b);
  s = f.alloc->stats();
  EXPECT_EQ(s.allocated, 1024u);
  EXPECT_EQ(s.reserved, 6 * MiB);
  EXPECT_EQ(s.max_allocated, 1024 + 3 * MiB);
  f.alloc->reset_peak();
  s = f.alloc->stats();
  EXPECT_EQ(s.max_allocated, 1024u);
  EXPECT_EQ(s.max_reserved, 6 * MiB);
  f.alloc->empty_cache();
  s = f.alloc->stats();
  EXPECT_EQ(s.reserved, 2 * MiB);
  EXPECT_EQ(s.max_reserved, 6 * MiB);
  f.alloc->reset_peak();
  EXPECT_EQ(f.alloc->stats().max_reserved, 2 * MiB);
  void* c = f.alloc->allocate(2048, stream(1));
  EXPECT_EQ(f.alloc->stats().max_allocated, 1024u + 2048u);
  f.alloc->free(a);
  f.alloc->free(c);
  EXPECT_EQ(f.alloc->stats().allocated, 0u);
}

TEST(CachingAllocator, EmptyCacheReturnsOnlyUnusedSegments) {
  Fixture f;
  void* unused_small = f.alloc->allocate(4 * KiB, stream(1));
  void* used_small = f.alloc->allocate(4 * KiB, stream(2));
  void* unused_large = f.alloc->allocate(4 * MiB, stream(1));
  f.alloc->free(unused_small);
  f.alloc->free(unused_large);
  f.alloc->empty_cache();
  EXPECT_EQ(f.counters.frees, 2);
  EXPECT_EQ(f.counters.syncs, 1);
  EXPECT_EQ(f.counters.live.size(), 1u);
  EXPECT_EQ(f.counters.live.count(used_small), 1u);
  EXPECT_EQ(f.alloc->stats().reserved, 2 * MiB);
  // The partly used segment still serves its stream.
  void* more = f.alloc->allocate(4 * KiB, stream(2));
  EXPECT_EQ(as_bytes(more), as_bytes(used_small) + 4 * KiB);
  EXPECT_EQ(f.counters.mallocs, 3);
  // Nothing to give back: no synchronisation either.
  f.alloc->empty_cache();
  EXPECT_EQ(f.counters.syncs, 1);
  EXPECT_EQ(f.counters.frees, 2);
  f.alloc->free(used_small);
  f.alloc->free(more);
  f.alloc->empty_cache();
  EXPECT_EQ(f.counters.used, 0u);
  EXPECT_EQ(f.counters.bad_frees, 0);
}

TEST(CachingAllocator, OutOfMemoryEmptiesTheCacheRetriesOnceThenThrows) {
  Fixture f(9 * MiB);
  void* a = f.alloc->allocate(3 * MiB, stream(1));         // 4 MiB segment
  f.alloc->free(f.alloc->allocate(512 * KiB, stream(1)));  // a cached 2 MiB segment
  EXPECT_EQ(f.counters.used, 6 * MiB);
  // 4 more MiB do not fit beside 6: the cached segment goes back and the retry succeeds.
  void* b = f.alloc->allocate(4 * MiB, stream(1));
  ASSERT_NE(b, nullptr);
  MemoryStats s = f.alloc->stats();
  EXPECT_EQ(s.retries, 1u);
  EXPECT_EQ(s.ooms, 0u);
  EXPECT_EQ(s.reserved, 8 * MiB);
  EXPECT_EQ(f.counters.frees, 1);
  EXPECT_EQ(f.counters.failed_mallocs, 1);

  // Now nothing can be freed: one retry, then OutOfMemoryError.
  EXPECT_THROW(f.alloc->allocate(3 * MiB + 5, stream(1)), ember::OutOfMemoryError);
  s = f.alloc->stats();
  EXPECT_EQ(s.retries, 2u);
  EXPECT_EQ(s.ooms, 1u);
  EXPECT_EQ(f.counters.failed_mallocs, 3);
  EXPECT_EQ(s.allocated, 7 * MiB);
  EXPECT_EQ(s.reserved, 8 * MiB);

  const std::string msg = ember_test::error_of([&] { f.alloc->allocate(3 * MiB + 5, stream(1)); });
  EXPECT_EQ(msg,
            "CUDA out of memory. Tried to allocate 3.00 MiB. GPU 0 has a total capacity of 9.00 MiB of which "
            "1.00 MiB is free. Of the allocated memory 7.00 MiB is allocated by ember, and 1.00 MiB is reserved by "
            "ember but unallocated. If reserved but unallocated memory is large, call ember::cuda::empty_cache(); "
            "otherwise reduce the batch size.");
  EXPECT_EQ(f.alloc->stats().ooms, 2u);

  // The allocator is still usable after the error.
  f.alloc->free(b);
  void* c = f.alloc->allocate(3 * MiB + 5, stream(1));
  EXPECT_EQ(c, b);
  f.alloc->free(a);
  f.alloc->free(c);
  EXPECT_EQ(f.alloc->stats().allocated, 0u);
}

TEST(CachingAllocator, OutOfMemoryMessageUsesTheDeviceAndLargeUnits) {
  FakeCounters counters;
  counters.capacity = 3 * MiB;
  CachingAllocator alloc(std::make_unique<FakeDeviceMemory>(&counters), 3);
  const std::string msg = ember_test::error_of([&] { alloc.allocate((size_t{5} << 30) / 2, stream(1)); });
  EXPECT_NE(msg.find("Tried to allocate 2.50 GiB."), std::string::npos) << msg;
  EXPECT_NE(msg.find("GPU 3 has a total capacity of 3.00 MiB of which 3.00 MiB is free."), std::string::npos) << msg;
  EXPECT_NE(msg.find("0.00 B is allocated by ember, and 0.00 B is reserved"), std::string::npos) << msg;
  // A size no rounding can hold is an out-of-memory error too, not an overflow.
  EXPECT_THROW(alloc.allocate(std::numeric_limits<size_t>::max(), stream(1)), ember::OutOfMemoryError);
  EXPECT_EQ(alloc.stats().ooms, 2u);
  EXPECT_EQ(alloc.stats().reserved, 0u);
}

TEST(CachingAllocator, FreeingUnknownPointersIsHarmless) {
  Fixture f;
  void* a = f.alloc->allocate(4 * KiB, stream(1));
  const MemoryStats before = f.alloc->stats();
  int local = 0;
  f.alloc->free(nullptr);
  f.alloc->free(&local);
  f.alloc->free(as_bytes(a) + 512);  // inside a live block, but not its start
  const MemoryStats after = f.alloc->stats();
  EXPECT_EQ(after.allocated, before.allocated);
  EXPECT_EQ(after.reserved, before.reserved);
  f.alloc->free(a);
  f.alloc->free(a);  // a second free of the same block
  EXPECT_EQ(f.alloc->stats().allocated, 0u);
  void* b = f.alloc->allocate(4 * KiB, stream(1));
  void* c = f.alloc->allocate(4 * KiB, stream(1));
  EXPECT_NE(b, c);
  f.alloc->free(b);
  f.alloc->free(c);
  EXPECT_EQ(f.counters.bad_frees, 0);
}

TEST(CachingAllocator, ZeroBytesAllocateNothing) {
  Fixture f;
  EXPECT_EQ(f.alloc->allocate(0, stream(1)), nullptr);
  const MemoryStats s = f.alloc->stats();
  EXPECT_EQ(s.allocated, 0u);
  EXPECT_EQ(s.reserved, 0u);
  EXPECT_EQ(s.driver_allocs, 0u);
  EXPECT_EQ(f.counters.mallocs, 0);
}

TEST(CachingAllocator, DestructorReturnsEverySegment) {
  FakeCounters counters;
  counters.capacity = size_t{1} << 30;
  {
    CachingAllocator alloc(std::make_unique<FakeDeviceMemory>(&counters), 0);
    void* a = alloc.allocate(4 * KiB, stream(1));
    alloc.allocate(4 * KiB, stream(1));  // never freed
    alloc.allocate(5 * MiB, stream(2));  // never freed
    alloc.free(a);
  }
  EXPECT_EQ(counters.frees, 2);
  EXPECT_EQ(counters.bad_frees, 0);
  EXPECT_EQ(counters.used, 0u);
}

struct Live {
  char* ptr;
  size_t nbytes;
  size_t rounded;
  uint64_t tag;
};

// Tags the first and last bytes of a block so that an overlap would overwrite another's tag.
void write_tag(const Live& l) {
  std::memcpy(l.ptr, &l.tag, sizeof l.tag);
  std::memcpy(l.ptr + l.nbytes - sizeof l.tag, &l.tag, sizeof l.tag);
}
bool tag_intact(const Live& l) {
  uint64_t head = 0, tail = 0;
  std::memcpy(&head, l.ptr, sizeof head);
  std::memcpy(&tail, l.ptr + l.nbytes - sizeof tail, sizeof tail);
  return head == l.tag && tail == l.tag;
}

TEST(CachingAllocator, RandomSequencesKeepStatsConsistentAndBlocksDisjoint) {
  Fixture f(64 * MiB);
  std::mt19937_64 rng(20240611);
  std::vector<Live> live;
  uint64_t next_tag = 1;
  for (int step = 0; step < 4000; ++step) {
    const uint64_t r = rng() % 100;
    if (r < 55 || live.empty()) {
      size_t nbytes = 8 + rng() % (r % 4 == 0 ? 6 * MiB : 256 * KiB);
      StreamHandle s = stream(1 + rng() % 3);
      void* p = nullptr;
      try {
        p = f.alloc->allocate(nbytes, s);
      } catch (const ember::OutOfMemoryError&) {
        continue;
      }
      ASSERT_NE(p, nullptr);
      ASSERT_EQ(reinterpret_cast<uintptr_t>(p) % 256, 0u);
      Live l{as_bytes(p), nbytes, CachingAllocator::round_size(nbytes), next_tag++};
      for (const Live& o : live) {
        ASSERT_TRUE(l.ptr + l.nbytes <= o.ptr || o.ptr + o.nbytes <= l.ptr) << "overlap at step " << step;
      }
      write_tag(l);
      live.push_back(l);
    } else if (r < 97) {
      const size_t i = rng() % live.size();
      ASSERT_TRUE(tag_intact(live[i])) << "block overwritten at step " << step;
      f.alloc->free(live[i].ptr);
      live[i] = live.back();
      live.pop_back();
    } else {
      f.alloc->empty_cache();
    }
    size_t sum = 0;
    for (const Live& l : live) sum += l.rounded;
    const MemoryStats s = f.alloc->stats();
    ASSERT_EQ(s.allocated, sum) << "step " << step;
    ASSERT_EQ(s.reserved, f.counters.used) << "step " << step;
    ASSERT_LE(s.allocated, s.reserved);
    ASSERT_GE(s.max_allocated, s.allocated);
    ASSERT_GE(s.max_reserved, s.reserved);
  }
  EXPECT_GT(f.alloc->stats().retries, 0u);  // the capacity was tight enough to need the cache emptied
  for (const Live& l : live) {
    EXPECT_TRUE(tag_intact(l));
    f.alloc->free(l.ptr);
  }
  EXPECT_EQ(f.alloc->stats().allocated, 0u);
  f.alloc->empty_cache();
  EXPECT_EQ(f.alloc->stats().reserved, 0u);
  EXPECT_EQ(f.counters.used, 0u);
  EXPECT_EQ(f.counters.bad_frees, 0);
}

TEST(CachingAllocator, ConcurrentThreadsKeepStatsConsistent) {
  Fixture f;
  std::vector<std::thread> threads;
  for (int t = 0; t < 4; ++t) {
    threads.emplace_back([&f, t] {
      std::mt19937 rng(static_cast<unsigned>(t));
      std::vector<void*> mine;
      for (int i = 0; i < 2000; ++i) {
        if (mine.empty() || rng() % 2 == 0) {
          mine.push_back(f.alloc->allocate(1 + rng() % (64 * KiB), stream(1 + t % 2)));
        } else {
          f.alloc->free(mine.back());
          mine.pop_back();
        }
        if (i % 500 == 0) f.alloc->empty_cache();
      }
      for (void* p : mine) f.alloc->free(p);
    });
  }
  for (auto& th : threads) th.join();
  EXPECT_EQ(f.alloc->stats().allocated, 0u);
  f.alloc->empty_cache();
  EXPECT_EQ(f.alloc->stats().reserved, 0u);
  EXPECT_EQ(f.counters.used, 0u);
}

}  // namespace

// ---- memory used by other streams (record_stream) ----

TEST(CachingAllocatorStreams, BlockUsedOnAnotherStreamIsReusedOnlyAfterThatStreamsWork) {
  Fixture f;
  void* a = f.alloc->allocate(4 * KiB, stream(1));
  EXPECT_TRUE(f.alloc->record_stream(a, stream(2)));
  f.alloc->free(a);
  EXPECT_EQ(f.counters.live_events, 1);
  EXPECT_EQ(f.counters.event_streams.at(0), stream(2));
  // Freed as far as the tensors go; not yet reusable.
  EXPECT_EQ(f.alloc->stats().allocated, 0u);
  EXPECT_EQ(f.alloc->stats().awaiting_streams, 1u);
  void* b = f.alloc->allocate(4 * KiB, stream(1));
  EXPECT_NE(b, a);
  // Stream 2's work up to the free completes: the next allocation may have the block back.
  f.counters.complete_events_on(stream(2));
  void* c = f.alloc->allocate(4 * KiB, stream(1));
  EXPECT_EQ(c, a);
  EXPECT_EQ(f.counters.live_events, 0);
  EXPECT_EQ(f.alloc->stats().awaiting_streams, 0u);
  EXPECT_EQ(f.counters.syncs, 0);  // the host never waited
  EXPECT_EQ(f.counters.mallocs, 1);
  f.alloc->free(b);
  f.alloc->free(c);
}

TEST(CachingAllocatorStreams, EveryUsingStreamMustFinish) {
  Fixture f;
  void* a = f.alloc->allocate(64 * KiB, stream(1));
  EXPECT_TRUE(f.alloc->record_stream(a, stream(2)));
  EXPECT_TRUE(f.alloc->record_stream(a, stream(3)));
  f.alloc->free(a);
  EXPECT_EQ(f.counters.live_events, 2);
  f.counters.complete_events_on(stream(3));
  void* b = f.alloc->allocate(64 * KiB, stream(1));
  EXPECT_NE(b, a);
  EXPECT_EQ(f.counters.live_events, 1);
  f.counters.complete_events_on(stream(2));
  void* c = f.alloc->allocate(64 * KiB, stream(1));
  EXPECT_EQ(c, a);
  EXPECT_EQ(f.counters.live_events, 0);
  f.alloc->free(b);
  f.alloc->free(c);
}

TEST(CachingAllocatorStreams, RecordingTheOwnStreamOrTwiceTheSameAddsNothing) {
  Fixture f;
  void* a = f.alloc->allocate(4 * KiB, stream(1));
  EXPECT_TRUE(f.alloc->record_stream(a, stream(1)));
  f.alloc->free(a);
  EXPECT_EQ(f.counters.completed.size(), 0u);  // no event: reused at once
  void* b = f.alloc->allocate(4 * KiB, stream(1));
  EXPECT_EQ(b, a);
  EXPECT_TRUE(f.alloc->record_stream(b, stream(2)));
  EXPECT_TRUE(f.alloc->record_stream(b, stream(2)));
  f.alloc->free(b);
  EXPECT_EQ(f.counters.completed.size(), 1u);
  // The record belonged to that allocation only: once the block is back, a new user of it that
  // records nothing frees it straight into the cache.
  f.counters.complete_events_on(stream(2));
  void* c = f.alloc->allocate(4 * KiB, stream(1));
  ASSERT_EQ(c, a);
  f.alloc->free(c);
  EXPECT_EQ(f.counters.completed.size(), 1u);
  EXPECT_EQ(f.alloc->allocate(4 * KiB, stream(1)), a);
  f.alloc->free(a);
}

TEST(CachingAllocatorStreams, UnknownOrFreedPointersRecordNothing) {
  Fixture f;
  int on_host = 0;
  EXPECT_FALSE(f.alloc->record_stream(&on_host, stream(2)));
  EXPECT_FALSE(f.alloc->record_stream(nullptr, stream(2)));
  void* a = f.alloc->allocate(4 * KiB, stream(1));
  // Only the start of a block names it, as a storage's pointer does.
  EXPECT_FALSE(f.alloc->record_stream(as_bytes(a) + 512, stream(2)));
  f.alloc->free(a);
  EXPECT_FALSE(f.alloc->record_stream(a, stream(2)));
  EXPECT_EQ(f.counters.completed.size(), 0u);
  EXPECT_EQ(f.alloc->allocate(4 * KiB, stream(1)), a);
  f.alloc->free(a);
}

TEST(CachingAllocatorStreams, AwaitingBlockDoesNotMergeUntilReleased) {
  Fixture f;
  // One 2 MiB small segment: a and b of 512 KiB, then c of 1 MiB that stays allocated.
  void* a = f.alloc->allocate(512 * KiB, stream(1));
  void* b = f.alloc->allocate(512 * KiB, stream(1));
  void* c = f.alloc->allocate(MiB, stream(1));
  ASSERT_EQ(as_bytes(b), as_bytes(a) + 512 * KiB);
  ASSERT_EQ(f.counters.mallocs, 1);
  f.alloc->record_stream(b, stream(2));
  f.alloc->free(b);
  f.alloc->free(a);
  // a is cached alone: 1 MiB does not fit in it, so a new segment is needed.
  void* d = f.alloc->allocate(MiB, stream(1));
  EXPECT_EQ(f.counters.mallocs, 2);
  EXPECT_NE(d, a);
  f.alloc->free(d);
  f.counters.complete_events_on(stream(2));
  // Released, b merges with a: the exact 1 MiB hole is the best fit.
  void* e = f.alloc->allocate(MiB, stream(1));
  EXPECT_EQ(e, a);
  EXPECT_EQ(f.counters.mallocs, 2);
  for (void* p : {c, e}) f.alloc->free(p);
}

TEST(CachingAllocatorStreams, EmptyCacheWaitsForAwaitingBlocksAndReturnsThem) {
  Fixture f;
  void* a = f.alloc->allocate(3 * MiB, stream(1));
  f.alloc->record_stream(a, stream(2));
  f.alloc->free(a);
  EXPECT_EQ(f.alloc->stats().reserved, 4 * MiB);
  f.alloc->empty_cache();
  EXPECT_GE(f.counters.syncs, 1);
  EXPECT_EQ(f.counters.live_events, 0);
  EXPECT_EQ(f.counters.used, 0u);
  EXPECT_EQ(f.alloc->stats().reserved, 0u);
  EXPECT_EQ(f.alloc->stats().awaiting_streams, 0u);
}

TEST(CachingAllocatorStreams, OutOfMemoryWaitsForAwaitingBlocksBeforeGivingUp) {
  Fixture f(4 * MiB);
  void* a = f.alloc->allocate(3 * MiB, stream(1));
  f.alloc->record_stream(a, stream(2));
  f.alloc->free(a);
  // Stream 2 has not finished and the device is full: the allocator waits for the device
  // rather than failing, then has the memory back.
  void* b = f.alloc->allocate(3 * MiB, stream(1));
  EXPECT_EQ(b, a);
  EXPECT_EQ(f.counters.syncs, 1);
  EXPECT_EQ(f.alloc->stats().retries, 1u);
  EXPECT_EQ(f.alloc->stats().ooms, 0u);
  EXPECT_EQ(f.counters.live_events, 0);
  f.alloc->free(b);
}

TEST(CachingAllocatorStreams, FailingToRecordAnEventWaitsForTheDeviceInstead) {
  Fixture f;
  void* a = f.alloc->allocate(4 * KiB, stream(1));
  f.alloc->record_stream(a, stream(2));
  f.alloc->record_stream(a, stream(3));
  f.counters.fail_record = true;
  f.alloc->free(a);  // noexcept: must not throw
  EXPECT_EQ(f.counters.syncs, 1);
  EXPECT_EQ(f.alloc->stats().awaiting_streams, 0u);
  f.counters.fail_record = false;
  EXPECT_EQ(f.alloc->allocate(4 * KiB, stream(1)), a);
  f.alloc->free(a);
}

TEST(CachingAllocatorStreams, QueryErrorPropagatesAndLosesNoBlock) {
  Fixture f;
  void* blocks[3];
  for (void*& p : blocks) {
    p = f.alloc->allocate(4 * KiB, stream(1));
    f.alloc->record_stream(p, stream(2));
  }
  for (void* p : blocks) f.alloc->free(p);
  f.counters.fail_query = true;
  EXPECT_THROW(f.alloc->allocate(4 * KiB, stream(1)), ember::Error);
  f.counters.fail_query = false;
  f.counters.complete_events_on(stream(2));
  // Every block comes back once its event is seen to complete.
  std::vector<void*> again;
  for (int i = 0; i < 3; ++i) again.push_back(f.alloc->allocate(4 * KiB, stream(1)));
  for (void* p : blocks) EXPECT_NE(std::find(again.begin(), again.end(), p), again.end());
  EXPECT_EQ(f.counters.live_events, 0);
  EXPECT_EQ(f.alloc->stats().awaiting_streams, 0u);
  EXPECT_EQ(f.counters.mallocs, 1);
  for (void* p : again) f.alloc->free(p);
}

TEST(CachingAllocatorStreams, DestructorReturnsAwaitingBlocks) {
  FakeCounters* counters = nullptr;
  {
    Fixture f;
    counters = &f.counters;
    void* a = f.alloc->allocate(4 * KiB, stream(1));
    void* b = f.alloc->allocate(5 * MiB, stream(1));
    f.alloc->record_stream(a, stream(2));
    f.alloc->record_stream(b, stream(2));
    f.alloc->record_stream(b, stream(3));
    f.alloc->free(a);
    f.alloc->free(b);
    f.alloc.reset();
    EXPECT_EQ(counters->used, 0u);
    EXPECT_EQ(counters->live_events, 0);
    EXPECT_EQ(counters->bad_frees, 0);
  }
}
