// The CPU backend's caching allocator: size classes, reuse, the limits on what it keeps, and
// use from several threads at once.
#include <gtest/gtest.h>

#include <algorithm>
#include <cstdint>
#include <cstring>
#include <thread>
#include <vector>

#include "backend/cpu/host_allocator.h"
#include "ember/error.h"

namespace ember::cpu {
namespace {

using Allocator = CachingHostAllocator;

TEST(CpuAllocator, SizeClassesAreAlignedAndWasteLittle) {
  size_t previous = 0;
  for (size_t n = 1; n < (size_t{1} << 22); n = n < 4096 ? n + 1 : n + n / 7 + 1) {
    const size_t c = Allocator::size_class(n);
    EXPECT_GE(c, n);
    EXPECT_EQ(c % Allocator::kAlignment, 0u) << n;
    const size_t aligned = (n + Allocator::kAlignment - 1) / Allocator::kAlignment * Allocator::kAlignment;
    EXPECT_LE(c, std::max(n + n / 4, aligned)) << n;
    EXPECT_GE(c, previous) << n;  // monotonic
    previous = c;
  }
  EXPECT_EQ(Allocator::size_class(0), 64u);
  EXPECT_EQ(Allocator::size_class(65), 128u);
  EXPECT_EQ(Allocator::size_class(1024), 1024u);
  EXPECT_EQ(Allocator::size_class(1025), 1280u);
  EXPECT_EQ(Allocator::size_class(200704), 229376u);  // a 64x784 float32 batch: 196 KiB -> 224 KiB
}

TEST(CpuAllocator, AFreedBlockIsReusedForTheSameSizeClass) {
  Allocator a(/*caching=*/true, size_t{1} << 30);
  void* p = a.allocate(200000);
  EXPECT_EQ(reinterpret_cast<uintptr_t>(p) % Allocator::kAlignment, 0u);
  std::memset(p, 1, 200000);  // usable to its full size
  a.deallocate(p, 200000);
  EXPECT_EQ(a.stats().cached_bytes, Allocator::size_class(200000));
  void* q = a.allocate(199999);  // same class
  EXPECT_EQ(q, p);
  void* r = a.allocate(400000);  // another class: a new block
  EXPECT_NE(r, p);
  const HostAllocatorStats s = a.stats();
  EXPECT_EQ(s.reused, 1);
  EXPECT_EQ(s.from_system, 2);
  EXPECT_EQ(s.cached_bytes, 0u);
  EXPECT_EQ(s.in_use_bytes, Allocator::size_class(200000) + Allocator::size_class(400000));
  a.deallocate(q, 199999);
  a.deallocate(r, 400000);
  EXPECT_EQ(a.stats().in_use_bytes, 0u);
}

TEST(CpuAllocator, KeepsNothingBeyondItsLimitsAndReleasesOnRequest) {
  Allocator a(/*caching=*/true, /*cache_limit=*/1 << 20);
  void* big = a.allocate(Allocator::kMaxCachedBlock + 1);  // too big to keep
  a.deallocate(big, Allocator::kMaxCachedBlock + 1);
  EXPECT_EQ(a.stats().cached_bytes, 0u);

  std::vector<void*> blocks;
  for (int i = 0; i < 3; ++i) blocks.push_back(a.allocate(400 << 10));  // 3 x 400 KiB > 1 MiB
  for (void* p : blocks) a.deallocate(p, 400 << 10);
  EXPECT_EQ(a.stats().cached_bytes, 2 * Allocator::size_class(400 << 10));  // the third went back
  a.release_cached();
  EXPECT_EQ(a.stats().cached_bytes, 0u);
}

TEST(CpuAllocator, WithoutCachingEveryBlockGoesBack) {
  Allocator a(/*caching=*/false, size_t{1} << 30);
  void* p = a.allocate(1000);
  a.deallocate(p, 1000);
  EXPECT_EQ(a.stats().cached_bytes, 0u);
  a.deallocate(a.allocate(1000), 1000);
  EXPECT_EQ(a.stats().reused, 0);
}

TEST(CpuAllocator, ImpossibleRequestsAreOutOfMemoryErrors) {
  Allocator a(/*caching=*/true, size_t{1} << 30);
  EXPECT_THROW(a.allocate(SIZE_MAX - 10), OutOfMemoryError);
  // ASan and TSan end the process on a request this size instead of failing it.
  if (!kSanitizedBuild) {
    EXPECT_THROW(a.allocate(size_t{1} << 62), OutOfMemoryError);  // aligned_alloc refuses
  }
  EXPECT_EQ(a.stats().in_use_bytes, 0u);
}

TEST(CpuAllocator, ThreadsAllocatingAndFreeingAtOnceGetDistinctBlocks) {
  // Like the DataLoader's worker allocating batches that the training thread frees.
  Allocator a(/*caching=*/true, size_t{1} << 30);
  auto work = [&](unsigned char tag) {
    for (int i = 0; i < 2000; ++i) {
      const size_t n = 1000 + static_cast<size_t>(i % 7) * 500;
      auto* p = static_cast<unsigned char*>(a.allocate(n));
      std::memset(p, tag, n);
      for (size_t j = 0; j < n; j += 97) ASSERT_EQ(p[j], tag);  // nobody else wrote into it
      a.deallocate(p, n);
    }
  };
  std::thread other(work, 0xAB);
  work(0x5C);
  other.join();
  EXPECT_EQ(a.stats().in_use_bytes, 0u);
}

}  // namespace
}  // namespace ember::cpu
