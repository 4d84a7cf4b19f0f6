// EmbeddingBag on the CPU, float32, as a recommendation model's sparse features use it: a table
// of 100000 x 64, a batch of 512 bags of 20 indices each (offsets, 1-D input), modes "sum",
// "mean" and "max", forward alone and forward + backward (the weight's gradient, dense).
// bench/embedding_bag_pytorch.py times the same in PyTorch. Run both with the same
// OMP_NUM_THREADS, alternating.
#include <benchmark/benchmark.h>

#include <cstdint>
#include <string>

#include "ember/ember.h"

namespace {

using ember::Tensor;

constexpr int64_t kRows = 100000, kDim = 64, kBags = 512, kPerBag = 20;

struct Inputs {
  Tensor weight, indices, offsets;
};

Inputs make_inputs() {
  ember::manual_seed(0);
  return {ember::randn({kRows, kDim}), ember::randint(0, kRows, {kBags * kPerBag}),
          ember::arange(0, kBags * kPerBag, kPerBag)};
}

void forward(benchmark::State& state, const char* mode) {
  const Inputs in = make_inputs();
  for (auto _ : state) {
    Tensor y = ember::nn::functional::embedding_bag(in.indices, in.weight, in.offsets, std::nullopt, 2.0, false, mode);
    benchmark::DoNotOptimize(y.data_ptr());
  }
}

void forward_backward(benchmark::State& state, const char* mode) {
  Inputs in = make_inputs();
  in.weight.requires_grad_();
  const Tensor g = ember::randn({kBags, kDim});
  for (auto _ : state) {
    ember::nn::functional::embedding_bag(in.indices, in.weight, in.offsets, std::nullopt, 2.0, false, mode).backward(g);
    benchmark::DoNotOptimize(in.weight.grad().data_ptr());
    in.weight.set_grad(Tensor());
  }
}

void register_all() {
  for (const char* mode : {"sum", "mean", "max"}) {
    benchmark::RegisterBenchmark((std::string(mode) + "/512x20_of_100000x64").c_str(), forward, mode)
        ->UseRealTime()
        ->Unit(benchmark::kMillisecond);
    benchmark::RegisterBenchmark((std::string(mode) + "_fwd_bwd/512x20_of_100000x64").c_str(), forward_backward, mode)
        ->UseRealTime()
        ->Unit(benchmark::kMillisecond);
  }
}

}  // namespace

int main(int argc, char** argv) {
  register_all();
  benchmark::Initialize(&argc, argv);
  if (benchmark::ReportUnrecognizedArguments(argc, argv)) return 1;
  benchmark::RunSpecifiedBenchmarks();
  benchmark::Shutdown();
  return 0;
}
