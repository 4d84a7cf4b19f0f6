// conv_transpose2d on a DCGAN generator's upsampling layer: N=16, 128 -> 64 channels, 16x16 ->
// 32x32 (kernel 4, stride 2, padding 1), float32; forward alone (no grad) and forward + backward
// for the input, weight and bias, on each of conv2d's CPU paths (the transposed convolution runs
// on conv2d's kernels: the forward is conv2d's input gradient). "default" is the path conv2d
// picks by itself. bench/conv_transpose_pytorch.py times the same in PyTorch.
//
// Run with OMP_NUM_THREADS set (1 or 2), --benchmark_repetitions=3; compare with
//   OMP_NUM_THREADS=... python3 bench/conv_transpose_pytorch.py
#include <benchmark/benchmark.h>

#include <algorithm>
#include <cstdint>
#include <cstdlib>
#include <string>
#include <vector>

#include "ember/conv_transpose.h"
#include "ember/ember.h"

namespace {

constexpr int64_t kBatch = 16, kIn = 128, kOut = 64, kSize = 16, kKernel = 4;

enum class Pass { Forward, ForwardBackward };

void bench_conv_transpose(benchmark::State& state, const char* path, Pass pass) {
  if (std::string(path) != "default") setenv("EMBER_CONV2D_PATH", path, 1);
  ember::manual_seed(0);
  ember::Tensor x = ember::randn({kBatch, kIn, kSize, kSize}).requires_grad_();
  ember::Tensor w = (ember::randn({kIn, kOut, kKernel, kKernel}) * 0.05).requires_grad_();
  ember::Tensor b = ember::randn({kOut}).requires_grad_();
  ember::Tensor grad = ember::randn({kBatch, kOut, 2 * kSize, 2 * kSize});
  auto run = [&] { return ember::conv_transpose2d(x, w, b, {2}, {1}); };
  run().backward(grad);  // the first call creates oneDNN's primitives; training pays that once
  for (auto _ : state) {
    if (pass == Pass::Forward) {
      ember::NoGradGuard no_grad;
      ember::Tensor y = run();
      benchmark::DoNotOptimize(y.data_ptr());
    } else {
      x.set_grad(ember::Tensor());
      w.set_grad(ember::Tensor());
      b.set_grad(ember::Tensor());
      run().backward(grad);
      benchmark::DoNotOptimize(w.grad().data_ptr());
    }
  }
  unsetenv("EMBER_CONV2D_PATH");
  // One pass is a product of 2 * N * Cin * H * W * Cout * k * k flops; backward is two more.
  const double flops = 2.0 * static_cast<double>(kBatch * kIn * kSize * kSize * kOut * kKernel * kKernel);
  state.counters["GFLOPS"] = benchmark::Counter(1e-9 * flops * (pass == Pass::Forward ? 1.0 : 3.0),
                                                benchmark::Counter::kIsIterationInvariantRate);
}

}  // namespace

int main(int argc, char** argv) {
  for (const char* path : {"default", "onednn", "im2col"}) {
    for (Pass pass : {Pass::Forward, Pass::ForwardBackward}) {
      const std::string name =
          std::string(path) + "/dcgan_128x16x16_to_64" + (pass == Pass::Forward ? "/fwd" : "/fwd_bwd");
      benchmark::RegisterBenchmark(name.c_str(), bench_conv_transpose, path, pass)
          ->UseRealTime()
          ->Unit(benchmark::kMillisecond)
          ->ComputeStatistics("min",
                              [](const std::vector<double>& v) { return *std::min_element(v.begin(), v.end()); });
    }
  }
  benchmark::Initialize(&argc, argv);
  if (benchmark::ReportUnrecognizedArguments(argc, argv)) return 1;
  benchmark::RunSpecifiedBenchmarks();
  benchmark::Shutdown();
  return 0;
}
