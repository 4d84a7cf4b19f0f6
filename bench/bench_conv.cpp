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
#include <string>
#include <vector>

#include "ember/ember.h"
#include "ember/nn/conv.h"
#include "ratio_reporter.h"

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
  // The path choice in conv.cpp rests on these ratios, from the fastest repetition.
  ember_bench::RatioReporter reporter("im2col / onednn time", "im2col", "onednn", "min", 36);
  benchmark::RunSpecifiedBenchmarks(&reporter);
  benchmark::Shutdown();
  return 0;
}
