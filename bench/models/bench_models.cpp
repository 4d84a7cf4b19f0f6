// One training step per model family (bench/models/*_step.cpp), timed in this process:
//   bench_models --list
//   bench_models --family resnet18 [--device cpu] [--steps N] [--warmup N]
// prints one line "<family> ms_per_step=<median> min=<min> peak_rss_mib=<peak> cuda_peak_mib=<peak>
// steps=<N>": the median over N timed steps after the warm-up ones (which also settle the
// allocator's cache), the process's peak resident memory, and on a GPU the peak of ember's
// allocator there (0 on the CPU).
// bench/models/models_pytorch.py prints the same line for PyTorch's step and
// bench/compare_models.sh runs both alternately (docs/PERFORMANCE.md, model families).
#include <sys/resource.h>

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <string>
#include <vector>

#include "ember/cuda.h"
#include "step_registry.h"

namespace {

double peak_rss_mib() {
  rusage usage{};
  getrusage(RUSAGE_SELF, &usage);
  return static_cast<double>(usage.ru_maxrss) / 1024.0;  // Linux reports KiB
}

void wait_for(const ember::Device& device) {
  if (device.is_cuda()) ember::cuda::synchronize(device.index());
}

int usage(const char* message) {
  if (message) std::fprintf(stderr, "bench_models: error: %s\n", message);
  std::fprintf(stderr, "usage: bench_models --list | --family NAME [--device cpu|cuda[:i]] [--steps N] [--warmup N]\n");
  return 2;
}

int positive(const std::string& text) {
  try {
    size_t used = 0;
    const int value = std::stoi(text, &used);
    return used == text.size() && value > 0 ? value : -1;
  } catch (const std::exception&) {
    return -1;
  }
}

}  // namespace

int main(int argc, char** argv) try {
  std::string family, device_name = "cpu";
  int steps = 10, warmup = 3;
  for (int i = 1; i < argc; ++i) {
    const std::string arg = argv[i];
    if (arg == "--list") {
      for (const auto& step : ember_bench::model_steps())
        std::printf("%-18s %s\n", step.name.c_str(), step.config.c_str());
      return 0;
    }
    if (i + 1 >= argc) return usage((arg + " needs a value (or is unknown)").c_str());
    const std::string value = argv[++i];
    if (arg == "--family") {
      family = value;
    } else if (arg == "--device") {
      device_name = value;
    } else if (arg == "--steps" || arg == "--warmup") {
      const int n = positive(value);
      if (n < 0) return usage((arg + " must be a positive integer, got '" + value + "'").c_str());
      (arg == "--steps" ? steps : warmup) = n;
    } else {
      return usage(("unknown argument " + arg).c_str());
    }
  }
  if (family.empty()) return usage("--family is required (--list names them)");
  const auto& all = ember_bench::model_steps();
  const auto found = std::find_if(all.begin(), all.end(), [&](const auto& s) { return s.name == family; });
  if (found == all.end()) return usage(("no model family '" + family + "' (--list names them)").c_str());

  const ember::Device device(device_name);
  ember::manual_seed(0);
  ember_bench::Step step = found->setup(device);
  for (int i = 0; i < warmup; ++i) step();
  wait_for(device);
  std::vector<double> ms;
  for (int i = 0; i < steps; ++i) {
    const auto start = std::chrono::steady_clock::now();
    step();
    wait_for(device);
    ms.push_back(std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - start).count());
  }
  std::sort(ms.begin(), ms.end());
  const double cuda_peak_mib =
      device.is_cuda() ? static_cast<double>(ember::cuda::max_memory_allocated(device.index())) / (1 << 20) : 0.0;
  std::printf("%s ms_per_step=%.3f min=%.3f peak_rss_mib=%.1f cuda_peak_mib=%.1f steps=%d\n", family.c_str(),
              ms[ms.size() / 2], ms[0], peak_rss_mib(), cuda_peak_mib, steps);
  return 0;
} catch (const std::exception& e) {
  std::fprintf(stderr, "bench_models: error: %s\n", e.what());
  return 1;
}
