#pragma once
// One thread pool for all CPU work: OpenMP's, which the OpenMP build of the BLAS shares, so
// ember's kernels and the BLAS never oversubscribe the cores. Work below `grain` elements runs
// on the calling thread: waking threads costs more than it saves.
#include <algorithm>
#include <cstdint>

#ifdef _OPENMP
#include <omp.h>
#endif

namespace ember::base {

/// Elements below which an element-wise loop stays on one thread.
inline constexpr int64_t kGrainSize = 32768;

int num_threads();

/// Calls f(begin, end) on disjoint chunks covering [0, n).
template <typename F>
void parallel_for(int64_t n, int64_t grain, const F& f) {
  if (n <= 0) return;
#ifdef _OPENMP
  if (n > grain && num_threads() > 1 && !omp_in_parallel()) {
    int64_t chunks = std::min<int64_t>(num_threads(), (n + grain - 1) / grain);
#pragma omp parallel for num_threads(static_cast <int>(chunks)) schedule(static)
    for (int64_t c = 0; c < chunks; ++c) {
      int64_t begin = n * c / chunks;
      int64_t end = n * (c + 1) / chunks;
      f(begin, end);
    }
    return;
  }
#endif
  (void)grain;
  f(int64_t{0}, n);
}

}  // namespace ember::base
