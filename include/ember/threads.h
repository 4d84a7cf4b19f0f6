#pragma once
/// The CPU thread pool that ember's kernels (and its BLAS libraries) share.
namespace ember {

/// Threads a CPU op may use: OMP_NUM_THREADS when set, else the CPUs this process may run on
/// (its affinity mask, capped by a container's CPU quota), unless set_num_threads changed it.
int get_num_threads();
/// Sets the number of CPU threads (as torch.set_num_threads); n must be at least 1.
void set_num_threads(int n);

}  // namespace ember
