#pragma once
// How many threads ember's thread pool (parallel.h) starts with. OpenMP's default is the CPUs of the process's
// affinity mask; a container's CPU quota (cgroup cpu.max, or cfs_quota_us/cfs_period_us) is not
// in that mask, and running more threads than the quota allows makes every barrier wait for a
// thread the kernel has throttled. So when OMP_NUM_THREADS is not set, the quota (rounded up)
// caps the default.
#include <optional>
#include <string_view>

namespace ember::base {

/// CPUs allowed by a cgroup v2 `cpu.max` file ("max 100000" or "150000 100000"); nullopt when
/// unlimited or unreadable.
std::optional<double> cpu_limit_from_cgroup_v2(std::string_view cpu_max);
/// CPUs allowed by cgroup v1 `cpu.cfs_quota_us` and `cpu.cfs_period_us`; nullopt when the quota
/// is -1 (unlimited) or the text is unreadable.
std::optional<double> cpu_limit_from_cgroup_v1(std::string_view quota_us, std::string_view period_us);

/// The default thread count: `available` (OpenMP's default) capped by `cpu_limit` rounded up,
/// and at least 1.
int capped_thread_count(int available, std::optional<double> cpu_limit);

/// The CPU limit of this process's cgroup (v2 at its own cgroup and each parent, or v1 at the
/// cpu controller's mount), the smallest found; nullopt when there is none.
std::optional<double> process_cpu_limit();

/// Applies the default once, before the first use of the thread pool: when OMP_NUM_THREADS is
/// unset and the cgroup quota is below OpenMP's default, lowers it. Called by num_threads() and
/// by ember::get_num_threads()/set_num_threads(), so an explicit setting always wins.
void apply_default_thread_count();

}  // namespace ember::base
