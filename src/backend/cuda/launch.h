#pragma once
// Grid arithmetic for the CUDA kernels. Plain host C++ (no CUDA headers), so the tests check it
// on machines without a GPU: a wrong grid is the classic silent bug (elements never visited, or a
// grid dimension over the hardware limit).
#include <algorithm>
#include <cstdint>

namespace ember::cuda_impl {

/// Threads per block for the element-wise kernels: 256 keeps several blocks resident per SM on
/// every architecture ember builds for and is a multiple of the warp size.
inline constexpr int kBlockThreads = 256;
/// The largest x-dimension of a grid on every architecture since compute capability 3.0.
inline constexpr int64_t kMaxGridX = 2147483647;
/// Blocks beyond this many gain nothing for a grid-stride loop (about 16 waves of 256-thread
/// blocks on a 132-SM GPU) and cost launch time; the loop covers the rest.
inline constexpr int64_t kMaxStrideBlocks = 65536;

struct Launch1d {
  unsigned blocks = 0;  // 0 means: nothing to launch
  unsigned threads = 0;
};

/// The grid for `n` elements when each thread handles `per_thread` consecutive work items
/// (a grid-stride loop visits whatever the capped grid does not). n == 0 gives no launch.
inline Launch1d launch_1d(int64_t n, int threads = kBlockThreads, int per_thread = 1) {
  if (n <= 0) return {};
  const int64_t per_block = static_cast<int64_t>(threads) * per_thread;
  const int64_t blocks = std::min((n + per_block - 1) / per_block, kMaxStrideBlocks);
  return {static_cast<unsigned>(blocks), static_cast<unsigned>(threads)};
}

/// One block per row for row-wise kernels (softmax, block reductions): rows beyond the grid
/// limit are visited by a block-stride loop.
inline Launch1d launch_rows(int64_t rows, int threads) {
  if (rows <= 0) return {};
  return {static_cast<unsigned>(std::min(rows, kMaxGridX)), static_cast<unsigned>(threads)};
}

/// Threads per block for a row-wise kernel over rows of `row_size` elements: the smallest warp
/// multiple that covers the row, at least one warp and at most `max_threads`.
inline int threads_for_row(int64_t row_size, int max_threads = 1024) {
  int64_t t = std::max<int64_t>(32, (row_size + 31) / 32 * 32);
  return static_cast<int>(std::min<int64_t>(t, max_threads));
}

}  // namespace ember::cuda_impl
