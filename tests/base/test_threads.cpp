// The CPU thread count: the container quota that caps the default, and set_num_threads taking
// effect for the kernels' own loops at any time, not only before the first op.
#include <gtest/gtest.h>
#include <omp.h>

#include <mutex>
#include <set>

#include "base/parallel.h"
#include "base/thread_count.h"
#include "ember/ember.h"

namespace ember::base {
namespace {

TEST(CpuThreads, CgroupV2CpuMaxIsParsed) {
  EXPECT_EQ(cpu_limit_from_cgroup_v2("max 100000\n"), std::nullopt);
  EXPECT_EQ(cpu_limit_from_cgroup_v2("150000 100000\n"), 1.5);
  EXPECT_EQ(cpu_limit_from_cgroup_v2("200000 100000"), 2.0);
  EXPECT_EQ(cpu_limit_from_cgroup_v2(""), std::nullopt);
  EXPECT_EQ(cpu_limit_from_cgroup_v2("garbage"), std::nullopt);
  EXPECT_EQ(cpu_limit_from_cgroup_v2("0 100000"), std::nullopt);
  EXPECT_EQ(cpu_limit_from_cgroup_v2("100000 0"), std::nullopt);
}

TEST(CpuThreads, CgroupV1QuotaIsParsed) {
  EXPECT_EQ(cpu_limit_from_cgroup_v1("-1\n", "100000\n"), std::nullopt);
  EXPECT_EQ(cpu_limit_from_cgroup_v1("50000\n", "100000\n"), 0.5);
  EXPECT_EQ(cpu_limit_from_cgroup_v1("400000", "100000"), 4.0);
  EXPECT_EQ(cpu_limit_from_cgroup_v1("x", "100000"), std::nullopt);
}

TEST(CpuThreads, TheQuotaCapsTheDefaultRoundedUp) {
  EXPECT_EQ(capped_thread_count(8, std::nullopt), 8);
  EXPECT_EQ(capped_thread_count(8, 2.0), 2);
  EXPECT_EQ(capped_thread_count(8, 1.5), 2);
  EXPECT_EQ(capped_thread_count(8, 0.5), 1);
  EXPECT_EQ(capped_thread_count(2, 16.0), 2);
  EXPECT_EQ(capped_thread_count(0, std::nullopt), 1);
}

TEST(CpuThreads, ThisProcessLimitIsPositiveWhenThere) {
  const std::optional<double> limit = process_cpu_limit();
  if (limit) {
    EXPECT_GT(*limit, 0.0);
  }
}

/// Distinct OpenMP threads that ran parts of one large parallel_for.
size_t threads_used() {
  std::mutex mutex;
  std::set<int> seen;
  parallel_for(64 * kGrainSize, kGrainSize, [&](int64_t, int64_t) {
    std::lock_guard lock(mutex);
    seen.insert(omp_get_thread_num());
  });
  return seen.size();
}

TEST(CpuThreads, SetNumThreadsAppliesToLaterLoops) {
  const int before = get_num_threads();
  set_num_threads(2);
  (void)threads_used();  // the loops have run with 2 threads
  set_num_threads(1);
  EXPECT_EQ(get_num_threads(), 1);
  EXPECT_EQ(threads_used(), 1u);
  if (omp_get_num_procs() >= 2) {
    set_num_threads(2);
    EXPECT_EQ(threads_used(), 2u);
  }
  set_num_threads(before);
}

}  // namespace
}  // namespace ember::base
