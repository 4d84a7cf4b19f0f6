// interpolate on the CPU, float32 [8, 64, 64, 64] (a decoder's feature map) upsampled 2x:
// bilinear (align_corners false) and nearest, forward alone and forward + backward (of the sum
// weighted by a fixed gradient), as in a training step. interpolate is one resample kernel each
// way (src/backend/cpu/resample.cpp: separable passes per (n, c) plane), against PyTorch's
// upsampling kernels; docs/PERFORMANCE.md §18 has the figures.
//
// bench/interpolate_pytorch.py times the same in PyTorch. Run both with the same
// OMP_NUM_THREADS, alternating.
#include <benchmark/benchmark.h>

#include <cstdint>
#include <string>

#include "ember/ember.h"
#include "ember/interpolate.h"

namespace {

using ember::Tensor;

void forward(benchmark::State& state, const char* mode) {
  ember::manual_seed(0);
  const Tensor x = ember::randn({8, 64, 64, 64});
  for (auto _ : state) {
    Tensor y = ember::interpolate(x, {}, {2.0}, mode);
    benchmark::DoNotOptimize(y.data_ptr());
  }
  state.SetItemsProcessed(state.iterations() * 8 * 64 * 128 * 128);
}

void forward_backward(benchmark::State& state, const char* mode) {
  ember::manual_seed(0);
  Tensor x = ember::randn({8, 64, 64, 64}).requires_grad_();
  const Tensor g = ember::randn({8, 64, 128, 128});
  for (auto _ : state) {
    ember::interpolate(x, {}, {2.0}, mode).backward(g);
    benchmark::DoNotOptimize(x.grad().data_ptr());
    x.set_grad(Tensor());
  }
  state.SetItemsProcessed(state.iterations() * 8 * 64 * 128 * 128);
}

void register_all() {
  for (const char* mode : {"bilinear", "nearest"}) {
    benchmark::RegisterBenchmark((std::string(mode) + "_2x/8x64x64x64").c_str(), forward, mode)
        ->UseRealTime()
        ->Unit(benchmark::kMillisecond);
    benchmark::RegisterBenchmark((std::string(mode) + "_2x_fwd_bwd/8x64x64x64").c_str(), forward_backward, mode)
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
