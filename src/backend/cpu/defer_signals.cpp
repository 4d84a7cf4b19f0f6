#include "backend/cpu/defer_signals.h"

#include <pthread.h>

#include <initializer_list>

#ifdef _OPENMP
#include <omp.h>
#endif

namespace ember::cpu {
namespace {

const sigset_t& asynchronous_signals() {
  static const sigset_t set = [] {
    sigset_t s;
    sigfillset(&s);
    for (int fault : {SIGSEGV, SIGBUS, SIGFPE, SIGILL, SIGTRAP, SIGSYS}) sigdelset(&s, fault);
    return s;
  }();
  return set;
}

thread_local int t_depth = 0;

/// Makes every thread of the calling thread's OpenMP team block the signals. libgomp ends surplus
/// workers when a team shrinks and starts new ones when it grows, each inheriting the mask of the
/// thread that starts it; so workers started outside a guard may be in the pool now, and the only
/// dependable way to reach them is a region of the size oneDNN will use
/// (omp_get_max_threads()). Workers started later, while the caller blocks the signals, inherit
/// the block. A warm two-thread region costs about a microsecond.
void block_in_openmp_workers() {
#ifdef _OPENMP
  if (omp_in_parallel()) return;  // oneDNN then runs on this thread alone
  const int team = omp_get_max_threads();
  if (team <= 1) return;
#pragma omp parallel num_threads(team)
  {
    if (omp_get_thread_num() != 0) pthread_sigmask(SIG_BLOCK, &asynchronous_signals(), nullptr);
  }
#endif
}

}  // namespace

DeferSignals::DeferSignals() {
  if (t_depth++ > 0) return;
  outermost_ = true;
  pthread_sigmask(SIG_BLOCK, &asynchronous_signals(), &saved_);
  block_in_openmp_workers();
}

DeferSignals::~DeferSignals() {
  --t_depth;
  if (outermost_) pthread_sigmask(SIG_SETMASK, &saved_, nullptr);
}

}  // namespace ember::cpu
