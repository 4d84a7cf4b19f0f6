// grid_sample on the CPU, float32 [8, 16, 64, 64] (a spatial transformer's feature map) sampled
// at a 64x64 grid of an affine warp (align_corners false): bilinear, nearest and bicubic with
// zeros padding, forward alone and forward + backward (of the sum weighted by a fixed gradient;
// both the input's and the grid's gradients), as in a training step. grid_sample is one kernel
// each way (src/backend/cpu/grid_sample.cpp), against PyTorch's grid_sampler_2d kernels;
// docs/PERFORMANCE.md has the figures.
//
// bench/grid_sample_pytorch.py times the same in PyTorch. Run both with the same
// OMP_NUM_THREADS, alternating.
#include <benchmark/benchmark.h>

#include <cstdint>
#include <string>
#include <vector>

#include "ember/ember.h"
#include "ember/nn/vision.h"

namespace {

using ember::Tensor;
namespace F = ember::nn::functional;

// A mild rotation, scaling and shift: most points inside, some outside the input.
Tensor warp_grid() {
  const Tensor theta = ember::tensor(std::vector<float>{0.9F, -0.2F, 0.05F, 0.25F, 0.95F, -0.1F}).reshape({1, 2, 3});
  return F::affine_grid(theta.expand({8, 2, 3}).contiguous(), {8, 16, 64, 64}, false);
}

void forward(benchmark::State& state, const char* mode) {
  ember::manual_seed(0);
  const Tensor x = ember::randn({8, 16, 64, 64});
  const Tensor grid = warp_grid();
  for (auto _ : state) {
    Tensor y = F::grid_sample(x, grid, mode, "zeros", false);
    benchmark::DoNotOptimize(y.data_ptr());
  }
  state.SetItemsProcessed(state.iterations() * 8 * 16 * 64 * 64);
}

void forward_backward(benchmark::State& state, const char* mode) {
  ember::manual_seed(0);
  Tensor x = ember::randn({8, 16, 64, 64}).requires_grad_();
  Tensor grid = warp_grid().requires_grad_();
  const Tensor g = ember::randn({8, 16, 64, 64});
  for (auto _ : state) {
    F::grid_sample(x, grid, mode, "zeros", false).backward(g);
    benchmark::DoNotOptimize(x.grad().data_ptr());
    benchmark::DoNotOptimize(grid.grad().data_ptr());
    x.set_grad(Tensor());
    grid.set_grad(Tensor());
  }
  state.SetItemsProcessed(state.iterations() * 8 * 16 * 64 * 64);
}

void register_all() {
  for (const char* mode : {"bilinear", "nearest", "bicubic"}) {
    benchmark::RegisterBenchmark((std::string(mode) + "/8x16x64x64").c_str(), forward, mode)
        ->UseRealTime()
        ->Unit(benchmark::kMillisecond);
    benchmark::RegisterBenchmark((std::string(mode) + "_fwd_bwd/8x16x64x64").c_str(), forward_backward, mode)
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
