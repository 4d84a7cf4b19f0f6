// 3-D layers composed of the 2-D ops (ember/nn/conv3d.h, ember/nn/pool3d.h): conv3d on a video /
// volume layer (N=2, 16 -> 32 channels, 16x32x32, kernel 3, padding 1, float32), forward alone
// (no grad) and forward + backward for the input, weight and bias; max_pool3d 2x2x2 on
// [4, 32, 16, 32, 32], forward and forward + backward; conv_transpose3d (32 -> 16, kernel 4,
// stride 2, padding 1) on [2, 32, 8, 16, 16], forward and forward + backward.
// bench/conv3d_pytorch.py times the same in PyTorch.
//
// Run with OMP_NUM_THREADS set (1 or 2), --benchmark_repetitions=3; compare with
//   OMP_NUM_THREADS=... python3 bench/conv3d_pytorch.py
#include <benchmark/benchmark.h>

#include <algorithm>
#include <cstdint>
#include <functional>
#include <string>
#include <vector>

#include "ember/ember.h"
#include "ember/nn/conv3d.h"
#include "ember/nn/pool3d.h"

namespace {

namespace F = ember::nn::functional;

enum class Pass { Forward, ForwardBackward };

/// Times `run` over `inputs` (all requiring grad), with `grad` as the upstream gradient.
void time_pass(benchmark::State& state, Pass pass, std::vector<ember::Tensor> inputs, const ember::Tensor& grad,
               const std::function<ember::Tensor()>& run) {
  run().backward(grad);  // the first call creates oneDNN's primitives; training pays that once
  for (auto _ : state) {
    if (pass == Pass::Forward) {
      ember::NoGradGuard no_grad;
      ember::Tensor y = run();
      benchmark::DoNotOptimize(y.data_ptr());
    } else {
      for (ember::Tensor& t : inputs) t.set_grad(ember::Tensor());
      run().backward(grad);
      benchmark::DoNotOptimize(inputs[0].grad().data_ptr());
    }
  }
}

void bench_conv3d(benchmark::State& state, Pass pass) {
  ember::manual_seed(0);
  ember::Tensor x = ember::randn({2, 16, 16, 32, 32}).requires_grad_();
  ember::Tensor w = (ember::randn({32, 16, 3, 3, 3}) * 0.05).requires_grad_();
  ember::Tensor b = ember::randn({32}).requires_grad_();
  ember::Tensor grad = ember::randn({2, 32, 16, 32, 32});
  time_pass(state, pass, {x, w, b}, grad, [&] { return F::conv3d(x, w, b, {1}, {1}); });
}

void bench_max_pool3d(benchmark::State& state, Pass pass) {
  ember::manual_seed(0);
  ember::Tensor x = ember::randn({4, 32, 16, 32, 32}).requires_grad_();
  ember::Tensor grad = ember::randn({4, 32, 8, 16, 16});
  time_pass(state, pass, {x}, grad, [&] { return F::max_pool3d(x, {2}); });
}

void bench_conv_transpose3d(benchmark::State& state, Pass pass) {
  ember::manual_seed(0);
  ember::Tensor x = ember::randn({2, 32, 8, 16, 16}).requires_grad_();
  ember::Tensor w = (ember::randn({32, 16, 4, 4, 4}) * 0.05).requires_grad_();
  ember::Tensor b = ember::randn({16}).requires_grad_();
  ember::Tensor grad = ember::randn({2, 16, 16, 32, 32});
  time_pass(state, pass, {x, w, b}, grad, [&] { return F::conv_transpose3d(x, w, b, {2}, {1}); });
}

}  // namespace

int main(int argc, char** argv) {
  const std::vector<std::pair<std::string, void (*)(benchmark::State&, Pass)>> cases{
      {"conv3d_16x16x32x32_to_32_k3", bench_conv3d},
      {"max_pool3d_4x32x16x32x32_k2", bench_max_pool3d},
      {"conv_transpose3d_32x8x16x16_to_16_k4s2", bench_conv_transpose3d}};
  for (const auto& [name, fn] : cases) {
    for (Pass pass : {Pass::Forward, Pass::ForwardBackward}) {
      const std::string full = name + (pass == Pass::Forward ? "/fwd" : "/fwd_bwd");
      benchmark::RegisterBenchmark(full.c_str(), fn, pass)
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
