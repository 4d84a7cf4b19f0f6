// The fixed cost of one eager op through the public API: `a + b` on two 4-element float tensors,
// where the arithmetic is negligible and what is left is argument checking, type promotion,
// output allocation and dispatch. Target: <= 0.4 us per op (docs/PERFORMANCE.md).
//
// The in-place `a += b` next to it separates the cost of allocating the result from the rest; the
// recording forms add autograd's bookkeeping.
#include <benchmark/benchmark.h>

#include "ember/ember.h"

namespace {

// recording = true: `a` requires grad, so the op also builds a graph node and sets the output's
// grad_fn. Issue 5's target with recording: <= 0.6 us (libtorch 1.13: 1.2 us here).
void add_4_floats(benchmark::State& state, bool recording) {
  ember::Tensor a = ember::ones({4}).requires_grad_(recording);
  ember::Tensor b = ember::full({4}, 0.5);
  for (auto _ : state) {
    ember::Tensor c = a + b;
    benchmark::DoNotOptimize(c.data_ptr());
  }
  state.SetLabel(recording ? "target <= 600 ns/op" : "target <= 400 ns/op");
}
BENCHMARK_CAPTURE(add_4_floats, plain, false);
BENCHMARK_CAPTURE(add_4_floats, recording, true);

void mul_4_floats_recording(benchmark::State& state) {  // saves both inputs for its backward
  ember::Tensor a = ember::ones({4}).requires_grad_(true);
  ember::Tensor b = ember::full({4}, 0.5).requires_grad_(true);
  for (auto _ : state) {
    ember::Tensor c = a * b;
    benchmark::DoNotOptimize(c.data_ptr());
  }
  state.SetLabel("target <= 600 ns/op");
}
BENCHMARK(mul_4_floats_recording);

void add_in_place_4_floats(benchmark::State& state) {
  ember::Tensor a = ember::zeros({4});
  ember::Tensor b = ember::full({4}, 0.5);
  for (auto _ : state) {
    a += b;
    benchmark::DoNotOptimize(a.data_ptr());
  }
}
BENCHMARK(add_in_place_4_floats);

}  // namespace

BENCHMARK_MAIN();
