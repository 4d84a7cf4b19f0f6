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

/// Keeps a BLAS call made inside an OpenMP parallel region (ember's own batch or sample loop) on
/// its calling thread: oneDNN and OpenBLAS size their teams from omp_get_max_threads(), whose
/// value is per task, so lowering it here affects this thread's calls only. Outside a parallel
/// region it does nothing.
class SingleThreadedInParallelRegion {
 public:
  SingleThreadedInParallelRegion() {
#ifdef _OPENMP
    if (omp_in_parallel()) {
      saved_ = omp_get_max_threads();
      omp_set_num_threads(1);
    }
#endif
  }
  ~SingleThreadedInParallelRegion() {
#ifdef _OPENMP
    if (saved_ > 0) omp_set_num_threads(saved_);
#endif
  }
  SingleThreadedInParallelRegion(const SingleThreadedInParallelRegion&) = delete;
  SingleThreadedInParallelRegion& operator=(const SingleThreadedInParallelRegion&) = delete;

 private:
  int saved_ = 0;
};

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
