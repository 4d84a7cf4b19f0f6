#pragma once
// A console reporter that, after Google Benchmark's own table, prints one time ratio per case:
// benchmarks are named "<implementation>/<case...>", and the ratio is numerator's time over
// denominator's, taken from the repetition aggregate asked for ("median", "min") or from the
// only run when there are no repetitions.
#include <benchmark/benchmark.h>

#include <cstdio>
#include <cstdlib>
#include <map>
#include <string>
#include <utility>
#include <vector>

namespace ember_bench {

class RatioReporter : public benchmark::ConsoleReporter {
 public:
  RatioReporter(std::string title, std::string numerator, std::string denominator, std::string aggregate,
                int name_width)
      : ConsoleReporter(OO_Tabular),  // no colour codes: the output goes to logs
        title_(std::move(title)),
        numerator_(std::move(numerator)),
        denominator_(std::move(denominator)),
        aggregate_(std::move(aggregate)),
        name_width_(name_width) {}

  void ReportRuns(const std::vector<Run>& runs) override {
    ConsoleReporter::ReportRuns(runs);
    for (const Run& run : runs) {
      const bool single = run.run_type == Run::RT_Iteration && run.repetitions <= 1;
      const bool chosen = run.run_type == Run::RT_Aggregate && run.aggregate_name == aggregate_;
      if (!single && !chosen) continue;
      const std::string& name = run.run_name.function_name;
      const size_t slash = name.find('/');
      times_[name.substr(slash + 1)][name.substr(0, slash)] = run.GetAdjustedRealTime();
    }
  }

  void Finalize() override {
    ConsoleReporter::Finalize();
    const char* threads = std::getenv("OMP_NUM_THREADS");
    std::printf("\n%s (OMP_NUM_THREADS=%s)\n", title_.c_str(), threads ? threads : "unset");
    for (const auto& [what, by_impl] : times_) {
      auto top = by_impl.find(numerator_), bottom = by_impl.find(denominator_);
      if (top == by_impl.end() || bottom == by_impl.end()) continue;
      std::printf("  %-*s %.3f\n", name_width_, what.c_str(), top->second / bottom->second);
    }
  }

 private:
  std::string title_, numerator_, denominator_, aggregate_;
  int name_width_;
  std::map<std::string, std::map<std::string, double>> times_;  // case -> implementation -> time
};

}  // namespace ember_bench
