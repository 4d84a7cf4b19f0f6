// conv2d's two float32 paths, oneDNN's convolution primitives and im2col + sgemm, on the two
// convolutions of the MNIST CNN (batch 64): conv1 [64,1,28,28] -> 32 channels 3x3 and conv2
// [64,32,26,26] -> 64 channels 3x3, each as one training step sees it: forward, then backward
// for the weight and bias (and for the input of conv2, whose input comes from conv1).
// Everything goes through ember's public API; EMBER_CONV2D_PATH picks the path.
//
// Run with OMP_NUM_THREADS=1 and =2; repeat with --benchmark_repetitions=3. After the usual table
// the program prints im2col/oneDNN time ratios (of the fastest repetition when repeated: on a
// machine shared with compiles, the fastest run is the one least disturbed).
#include <benchmark/benchmark.h>

#include <algorithm>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <map>
#include <string>
#include <vector>

#include "ember/ember.h"
#include "ember/nn/conv.h"

namespace {

struct Layer {
  const char* name;
  int64_t batch, in_channels, size, out_channels;
  bool input_needs_grad;
};

const Layer kLayers[] = {
    {"conv1_1x28x28_to_32", 64, 1, 28, 32, false},
    {"conv2_32x26x26_to_64", 64, 32, 26, 64, true},
};

enum class Pass { Forward, ForwardBackward };

void bench_conv(benchmark::State& state, Layer layer, const char* path, Pass pass) {
  setenv("EMBER_CONV2D_PATH", path, 1);
  ember::manual_seed(0);
  ember::Tensor x = ember::randn({layer.batch, layer.in_channels, layer.size, layer.size});
  ember::Tensor w = ember::randn({layer.out_channels, layer.in_channels, 3, 3}).requires_grad_();
  ember::Tensor b = ember::randn({layer.out_channels}).requires_grad_();
  if (layer.input_needs_grad && pass == Pass::ForwardBackward) x.requires_grad_();
  const int64_t out = layer.size - 2;
  ember::Tensor grad = ember::randn({layer.batch, layer.out_channels, out, out});
  // The first call creates oneDNN's primitives; a training loop pays that once.
  ember::nn::functional::conv2d(x, w, b).backward(grad);
  for (auto _ : state) {
    if (pass == Pass::Forward) {
      ember::NoGradGuard no_grad;
      ember::Tensor y = ember::nn::functional::conv2d(x, w, b);
      benchmark::DoNotOptimize(y.data_ptr());
    } else {
      ember::Tensor y = ember::nn::functional::conv2d(x, w, b);
      y.backward(grad);
      benchmark::DoNotOptimize(w.grad().data_ptr());
    }
  }
  unsetenv("EMBER_CONV2D_PATH");
  // Forward is one product of 2*N*O*Ho*Wo*C*9 flops; each wanted gradient is one more.
  const double forward_flops =
      2.0 * static_cast<double>(layer.batch * layer.out_channels * out * out * layer.in_channels * 9);
  const double passes = pass == Pass::Forward ? 1.0 : (layer.input_needs_grad ? 3.0 : 2.0);
  state.counters["GFLOPS"] =
      benchmark::Counter(1e-9 * forward_flops * passes, benchmark::Counter::kIsIterationInvariantRate);
}

/// The console table, then im2col / oneDNN per layer and pass from the fastest (or only) time.
class RatioReporter : public benchmark::ConsoleReporter {
 public:
  RatioReporter() : ConsoleReporter(OO_Tabular) {}  // no colour codes: the output goes to logs

  void ReportRuns(const std::vector<Run>& runs) override {
    ConsoleReporter::ReportRuns(runs);
    for (const Run& run : runs) {
      const bool single = run.run_type == Run::RT_Iteration && run.repetitions <= 1;
      const bool fastest = run.run_type == Run::RT_Aggregate && run.aggregate_name == "min";
      if (!single && !fastest) continue;
      const std::string& name = run.run_name.function_name;  // "<path>/<layer>/<pass>"
      const size_t slash = name.find('/');
      times_[name.substr(slash + 1)][name.substr(0, slash)] = run.GetAdjustedRealTime();
    }
  }
  void Finalize() override {
    ConsoleReporter::Finalize();
    const char* threads = std::getenv("OMP_NUM_THREADS");
    std::printf("\nim2col / onednn time (OMP_NUM_THREADS=%s)\n", threads ? threads : "unset");
    for (const auto& [what, by_path] : times_) {
      auto im2col = by_path.find("im2col"), onednn = by_path.find("onednn");
      if (im2col == by_path.end() || onednn == by_path.end()) continue;
      std::printf("  %-36s %.3f\n", what.c_str(), im2col->second / onednn->second);
    }
  }

 private:
  std::map<std::string, std::map<std::string, double>> times_;
};

}  // namespace

int main(int argc, char** argv) {
  for (const Layer& layer : kLayers) {
    for (const char* path : {"onednn", "im2col"}) {
      for (Pass pass : {Pass::Forward, Pass::ForwardBackward}) {
        const std::string name = std::string(path) + "/" + layer.name + (pass == Pass::Forward ? "/fwd" : "/fwd_bwd");
        benchmark::RegisterBenchmark(name.c_str(), bench_conv, layer, path, pass)
            ->UseRealTime()
            ->Unit(benchmark::kMillisecond)
            ->ComputeStatistics("min",
                                [](const std::vector<double>& v) { return *std::min_element(v.begin(), v.end()); });
      }
    }
  }
  benchmark::Initialize(&argc, argv);
  if (benchmark::ReportUnrecognizedArguments(argc, argv)) return 1;
  RatioReporter reporter;
  benchmark::RunSpecifiedBenchmarks(&reporter);
  benchmark::Shutdown();
  return 0;
}
