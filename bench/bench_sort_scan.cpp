// Sorting, top-k and running sums on the CPU, float32, in the shapes they take in models:
//   sort along the last dimension of [256, 4096]; argsort of 1M elements;
//   topk(50) over an LM's vocabulary, [64, 32000] (top-k sampling);
//   cumsum along the last dimension of [256, 4096] and along the first of [4096, 256], forward
//   and forward + backward (a reversed cumsum).
// bench/sort_scan_pytorch.py times the same in PyTorch. Run both with the same OMP_NUM_THREADS,
// alternating.
#include <benchmark/benchmark.h>

#include <cstdint>
#include <string>

#include "ember/ember.h"

namespace {

using ember::Tensor;

void sort_rows(benchmark::State& state) {
  ember::manual_seed(0);
  const Tensor x = ember::randn({256, 4096});
  for (auto _ : state) {
    auto [values, indices] = ember::sort(x, -1);
    benchmark::DoNotOptimize(values.data_ptr());
  }
}

void argsort_vector(benchmark::State& state) {
  ember::manual_seed(0);
  const Tensor x = ember::randn({1 << 20});
  for (auto _ : state) {
    Tensor order = ember::argsort(x);
    benchmark::DoNotOptimize(order.data_ptr());
  }
}

void topk_vocabulary(benchmark::State& state) {
  ember::manual_seed(0);
  const Tensor logits = ember::randn({64, 32000});
  for (auto _ : state) {
    auto [values, indices] = ember::topk(logits, 50);
    benchmark::DoNotOptimize(values.data_ptr());
  }
}

void cumsum_forward(benchmark::State& state, int64_t rows, int64_t cols, int64_t dim) {
  ember::manual_seed(0);
  const Tensor x = ember::randn({rows, cols});
  for (auto _ : state) {
    Tensor y = ember::cumsum(x, dim);
    benchmark::DoNotOptimize(y.data_ptr());
  }
}

void cumsum_forward_backward(benchmark::State& state, int64_t rows, int64_t cols, int64_t dim) {
  ember::manual_seed(0);
  Tensor x = ember::randn({rows, cols}).requires_grad_();
  const Tensor g = ember::randn({rows, cols});
  for (auto _ : state) {
    ember::cumsum(x, dim).backward(g);
    benchmark::DoNotOptimize(x.grad().data_ptr());
    x.set_grad(Tensor());
  }
}

template <typename F>
void add(const std::string& name, F f) {
  benchmark::RegisterBenchmark(name.c_str(), f)->UseRealTime()->Unit(benchmark::kMillisecond);
}

void register_all() {
  add("sort/256x4096", sort_rows);
  add("argsort/1048576", argsort_vector);
  add("topk50/64x32000", topk_vocabulary);
  add("cumsum_last/256x4096", [](benchmark::State& s) { cumsum_forward(s, 256, 4096, 1); });
  add("cumsum_last_fwd_bwd/256x4096", [](benchmark::State& s) { cumsum_forward_backward(s, 256, 4096, 1); });
  add("cumsum_first/4096x256", [](benchmark::State& s) { cumsum_forward(s, 4096, 256, 0); });
  add("cumsum_first_fwd_bwd/4096x256", [](benchmark::State& s) { cumsum_forward_backward(s, 4096, 256, 0); });
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
