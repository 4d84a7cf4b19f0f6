// The CUDA backend's grid arithmetic, checked on the host: every element must be visited by some
// thread of a grid-stride loop, and no grid may exceed what the hardware accepts.
#include <gtest/gtest.h>

#include <cstdint>

#include "backend/cuda/launch.h"

namespace {

using namespace ember::cuda_impl;

TEST(CudaLaunch, NothingToLaunchForNoElements) {
  EXPECT_EQ(launch_1d(0).blocks, 0u);
  EXPECT_EQ(launch_1d(-3).blocks, 0u);
  EXPECT_EQ(launch_rows(0, 256).blocks, 0u);
}

TEST(CudaLaunch, OneDimensionalGridsCoverEveryElement) {
  for (int64_t n : {int64_t{1}, int64_t{255}, int64_t{256}, int64_t{257}, int64_t{1} << 20, (int64_t{1} << 31) + 5,
                    int64_t{1} << 40}) {
    for (int per_thread : {1, 4}) {
      const Launch1d l = launch_1d(n, kBlockThreads, per_thread);
      ASSERT_GT(l.blocks, 0u) << n;
      EXPECT_EQ(l.threads, static_cast<unsigned>(kBlockThreads));
      EXPECT_LE(static_cast<int64_t>(l.blocks), kMaxStrideBlocks);
      // Without the cap the grid is exactly large enough; with it, the grid-stride loop visits
      // the rest, which it does whenever the grid has at least one thread.
      const int64_t covered = static_cast<int64_t>(l.blocks) * l.threads * per_thread;
      if (static_cast<int64_t>(l.blocks) < kMaxStrideBlocks) {
        EXPECT_GE(covered, n) << n;
        EXPECT_LT(covered - n, static_cast<int64_t>(l.threads) * per_thread) << "one block too many for " << n;
      }
    }
  }
}

TEST(CudaLaunch, RowGridsStayWithinTheHardwareLimit) {
  EXPECT_EQ(launch_rows(10, 128).blocks, 10u);
  EXPECT_EQ(launch_rows(int64_t{1} << 40, 128).blocks, static_cast<unsigned>(kMaxGridX));
}

TEST(CudaLaunch, RowThreadsAreWholeWarps) {
  EXPECT_EQ(threads_for_row(1), 32);
  EXPECT_EQ(threads_for_row(33), 64);
  EXPECT_EQ(threads_for_row(500), 512);
  EXPECT_EQ(threads_for_row(1000), 1024);
  EXPECT_EQ(threads_for_row(100000), 1024);
  EXPECT_EQ(threads_for_row(100000, 256), 256);
  for (int64_t n = 1; n < 3000; n += 7) EXPECT_EQ(threads_for_row(n) % 32, 0);
}

}  // namespace
