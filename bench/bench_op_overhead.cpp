// The fixed cost of one eager op through the public API: `a + b` on two 4-element float tensors,
// where the arithmetic is negligible and what is left is argument checking, type promotion,
// output allocation and dispatch. Target: <= 0.4 us per op (docs/PERFORMANCE.md).
//
// The in-place `a += b` next to it separates the cost of allocating the result from the rest.
#include <benchmark/benchmark.h>

#include "ember/ember.h"

namespace {

void add_4_floats(benchmark::State& state) {
  ember::Tensor a = ember::ones({4});
  ember::Tensor b = ember::full({4}, 0.5);
  for (auto _ : state) {
    ember::Tensor c = a + b;
    benchmark::DoNotOptimize(c.data_ptr());
  }
  state.SetLabel("target <= 400 ns/op");
}
BENCHMARK(add_4_floats);

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
