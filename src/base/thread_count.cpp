#include "base/thread_count.h"

#include <algorithm>
#include <charconv>
#include <cmath>
#include <cstdlib>
#include <fstream>
#include <sstream>
#include <string>

#include "base/parallel.h"

#ifdef _OPENMP
#include <omp.h>
#endif

namespace ember::base {
namespace {

std::string_view trim(std::string_view s) {
  while (!s.empty() && (s.front() == ' ' || s.front() == '\t')) s.remove_prefix(1);
  while (!s.empty() && (s.back() == ' ' || s.back() == '\n' || s.back() == '\t')) s.remove_suffix(1);
  return s;
}

std::optional<long long> whole_number(std::string_view s) {
  s = trim(s);
  long long value = 0;
  const auto [end, error] = std::from_chars(s.data(), s.data() + s.size(), value);
  if (error != std::errc() || end != s.data() + s.size()) return std::nullopt;
  return value;
}

std::optional<std::string> read_text(const std::string& path) {
  std::ifstream file(path);
  if (!file) return std::nullopt;
  std::ostringstream text;
  text << file.rdbuf();
  return text.str();
}

std::optional<double> smaller(std::optional<double> a, std::optional<double> b) {
  if (!a) return b;
  if (!b) return a;
  return std::min(*a, *b);
}

}  // namespace

std::optional<double> cpu_limit_from_cgroup_v2(std::string_view cpu_max) {
  cpu_max = trim(cpu_max);
  const size_t space = cpu_max.find(' ');
  if (space == std::string_view::npos) return std::nullopt;
  const std::optional<long long> quota = whole_number(cpu_max.substr(0, space));  // "max" is no number
  const std::optional<long long> period = whole_number(cpu_max.substr(space + 1));
  if (!quota || !period || *quota <= 0 || *period <= 0) return std::nullopt;
  return static_cast<double>(*quota) / static_cast<double>(*period);
}

std::optional<double> cpu_limit_from_cgroup_v1(std::string_view quota_us, std::string_view period_us) {
  const std::optional<long long> quota = whole_number(quota_us);
  const std::optional<long long> period = whole_number(period_us);
  if (!quota || !period || *quota <= 0 || *period <= 0) return std::nullopt;
  return static_cast<double>(*quota) / static_cast<double>(*period);
}

int capped_thread_count(int available, std::optional<double> cpu_limit) {
  int n = std::max(available, 1);
  // A quota of 1.5 CPUs still lets two threads run half the time each: round up.
  if (cpu_limit) n = std::min(n, std::max(1, static_cast<int>(std::ceil(*cpu_limit - 1e-9))));
  return n;
}

std::optional<double> process_cpu_limit() {
  std::optional<double> limit;
  // cgroup v2: the line "0::/path" of /proc/self/cgroup; a limit may sit on any ancestor.
  if (std::optional<std::string> groups = read_text("/proc/self/cgroup")) {
    std::istringstream lines(*groups);
    for (std::string line; std::getline(lines, line);) {
      if (line.rfind("0::", 0) != 0) continue;
      std::string path = line.substr(3);
      for (;;) {
        const std::string dir = "/sys/fs/cgroup" + (path == "/" ? std::string() : path);
        if (std::optional<std::string> cpu_max = read_text(dir + "/cpu.max")) {
          limit = smaller(limit, cpu_limit_from_cgroup_v2(*cpu_max));
        }
        if (path.empty() || path == "/") break;
        path = path.substr(0, path.find_last_of('/'));
        if (path.empty()) path = "/";
      }
    }
  }
  // cgroup v1: the cpu controller's files at its mount (a container sees its own group there).
  for (const char* dir : {"/sys/fs/cgroup/cpu", "/sys/fs/cgroup/cpu,cpuacct"}) {
    const std::string base(dir);
    std::optional<std::string> quota = read_text(base + "/cpu.cfs_quota_us");
    std::optional<std::string> period = read_text(base + "/cpu.cfs_period_us");
    if (quota && period) limit = smaller(limit, cpu_limit_from_cgroup_v1(*quota, *period));
  }
  return limit;
}

void apply_default_thread_count() {
#ifdef _OPENMP
  static const bool applied = [] {
    const char* requested = std::getenv("OMP_NUM_THREADS");
    if (requested != nullptr && *requested != '\0') return false;  // the user's choice stands
    const int available = omp_get_max_threads();
    const int capped = capped_thread_count(available, process_cpu_limit());
    if (capped < available) omp_set_num_threads(capped);
    return true;
  }();
  (void)applied;
#endif
}

int num_threads() {
#ifdef _OPENMP
  apply_default_thread_count();
  // Read on every call (a thread-local value, nanoseconds): set_num_threads() changes it.
  return omp_get_max_threads();
#else
  return 1;
#endif
}

}  // namespace ember::base
