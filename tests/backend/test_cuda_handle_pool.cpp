// The bookkeeping behind the CUDA backend's per-thread cuBLAS/cuDNN handles (handle_pool.h),
// with integers for handles: it has no CUDA in it, so every build runs this, ThreadSanitizer's
// included. Every handle is taken on a thread of its own, joined before the pool goes, as a pool
// must outlive the threads that used it.
#include <gtest/gtest.h>

#include <atomic>
#include <barrier>
#include <functional>
#include <set>
#include <stdexcept>
#include <thread>
#include <vector>

#include "backend/cuda/handle_pool.h"

namespace {

using ember::cuda_impl::HandlePool;

// Handles numbered device * 1000 + n, n counting the handles made for that device.
struct Maker {
  std::atomic<int> made[4] = {};
  int operator()(int device) { return device * 1000 + made[device].fetch_add(1); }
};

std::function<int(int)> made_by(Maker& maker) {
  return [&maker](int device) { return maker(device); };
}

template <typename F>
void on_new_thread(F f) {
  std::thread t(f);
  t.join();
}

TEST(CudaHandlePool, AThreadKeepsOneHandlePerDevice) {
  Maker maker;
  HandlePool<int> pool(4, made_by(maker));
  on_new_thread([&] {
    const int h0 = pool.get(0);
    EXPECT_EQ(pool.get(0), h0);
    EXPECT_EQ(pool.get(0), h0);
    const int h2 = pool.get(2);
    EXPECT_EQ(h2 / 1000, 2);  // made for its own device
    EXPECT_EQ(pool.get(0), h0);
    EXPECT_EQ(pool.created(0), 1u);
    EXPECT_EQ(pool.created(2), 1u);
    EXPECT_EQ(pool.created(1), 0u);
  });
}

TEST(CudaHandlePool, ThreadsAtOnceHoldDifferentHandles) {
  Maker maker;
  HandlePool<int> pool(4, made_by(maker));
  constexpr int kThreads = 8;
  std::vector<int> got(kThreads);
  std::barrier all_hold(kThreads);
  std::vector<std::thread> threads;
  for (int i = 0; i < kThreads; ++i) {
    threads.emplace_back([&, i] {
      got[static_cast<size_t>(i)] = pool.get(1);
      all_hold.arrive_and_wait();  // nobody returns a handle before everyone has one
      EXPECT_EQ(pool.get(1), got[static_cast<size_t>(i)]);
    });
  }
  for (std::thread& t : threads) t.join();
  EXPECT_EQ(std::set<int>(got.begin(), got.end()).size(), static_cast<size_t>(kThreads));
  EXPECT_EQ(pool.created(1), static_cast<size_t>(kThreads));
  EXPECT_EQ(pool.idle(1), static_cast<size_t>(kThreads));  // every thread gave its handle back
}

TEST(CudaHandlePool, AThreadThatExitsLeavesItsHandlesToTheNext) {
  Maker maker;
  HandlePool<int> pool(4, made_by(maker));
  int first = -1, second = -1;
  on_new_thread([&] { first = pool.get(3); });
  EXPECT_EQ(pool.idle(3), 1u);
  on_new_thread([&] { second = pool.get(3); });
  EXPECT_EQ(second, first);
  EXPECT_EQ(pool.created(3), 1u);
  // Threads started one after another many times still share that one handle.
  for (int i = 0; i < 20; ++i) on_new_thread([&] { EXPECT_EQ(pool.get(3), first); });
  EXPECT_EQ(pool.created(3), 1u);
}

TEST(CudaHandlePool, PoolsOfOneHandleTypeKeepTheirOwnHandles) {
  Maker a_maker, b_maker;
  HandlePool<int> a(4, made_by(a_maker));
  HandlePool<int> b(4, [&b_maker](int device) { return -1 - b_maker(device); });
  on_new_thread([&] {
    const int from_a = a.get(0);
    const int from_b = b.get(0);
    EXPECT_GE(from_a, 0);
    EXPECT_LT(from_b, 0);
    EXPECT_EQ(a.get(0), from_a);
    EXPECT_EQ(b.get(0), from_b);
  });
  EXPECT_EQ(a.idle(0), 1u);
  EXPECT_EQ(b.idle(0), 1u);
}

TEST(CudaHandlePool, AFailedCreationLeavesNothingHeldAndIsRetried) {
  std::atomic<int> calls{0};
  HandlePool<int> pool(2, [&calls](int device) {
    if (calls.fetch_add(1) == 0) throw std::runtime_error("cuBLAS initialisation failed");
    return 10 + device;
  });
  on_new_thread([&] {
    EXPECT_THROW(pool.get(1), std::runtime_error);
    EXPECT_EQ(pool.created(1), 0u);
    EXPECT_EQ(pool.get(1), 11);  // the next call tries again
    EXPECT_EQ(pool.get(1), 11);
  });
  EXPECT_EQ(calls.load(), 2);
  EXPECT_EQ(pool.idle(1), 1u);
}

TEST(CudaHandlePool, DevicesOutOfRangeAreRefused) {
  Maker maker;
  HandlePool<int> pool(2, made_by(maker));
  on_new_thread([&] {
    EXPECT_THROW(pool.get(2), std::out_of_range);
    EXPECT_THROW(pool.get(-1), std::out_of_range);
    EXPECT_THROW((void)pool.created(5), std::out_of_range);
  });
  EXPECT_EQ(maker.made[0].load() + maker.made[1].load(), 0);
}

}  // namespace
