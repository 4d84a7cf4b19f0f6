#pragma once
// Keeps asynchronous signals off the threads that run oneDNN's GEMM kernels.
//
// oneDNN 2.x's JIT-generated float32 GEMM kernels (behind dnnl_sgemm and the GEMM-based
// primitives) point the stack pointer into a heap workspace while they run. When a signal handler
// runs on such a thread, the kernel writes the handler's frame below that pointer, over heap memory
// that belongs to someone else; glibc later aborts with "corrupted size vs. prev_size" or the
// process crashes somewhere unrelated (oneDNN issue #4845, fixed upstream in 2026; Debian 12
// ships oneDNN 2.6.3). Any installed handler triggers it: ember's own Ctrl-C handler in
// `ember train`, a user's SIGTERM handler, a sampling profiler.
//
// While a DeferSignals lives, the calling thread blocks asynchronous signals, and the OpenMP
// workers that oneDNN may run on block them for good (they never need them). A signal sent in the
// meantime stays pending and is handled when the guard ends, or by another thread of the process
// that is not running oneDNN. Signals that report a fault of the thread itself (SIGSEGV, SIGBUS,
// SIGFPE, SIGILL, SIGTRAP, SIGSYS) stay unblocked: blocking them would kill the process without
// its handlers running.
#include <signal.h>

namespace ember::cpu {

class DeferSignals {
 public:
  DeferSignals();
  ~DeferSignals();
  DeferSignals(const DeferSignals&) = delete;
  DeferSignals& operator=(const DeferSignals&) = delete;

 private:
  sigset_t saved_{};
  bool outermost_ = false;  // nested guards on one thread leave the mask to the outermost
};

}  // namespace ember::cpu
