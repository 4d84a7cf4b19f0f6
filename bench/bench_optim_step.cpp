// One optimizer step over the quickstart mlp's parameters (669,706 float32 values, gradients
// set once and negated between steps), for each of ember's optimizers and their state-heavy variants: the update alone,
// which the fused backend passes (src/kernels/optim_ops.h) replace op by op. docs/PERFORMANCE.md §7.
#include <benchmark/benchmark.h>

#include <functional>
#include <memory>
#include <vector>

#include "ember/ember.h"
#include "ember/optim/optimizers.h"

namespace {

using Factory = std::function<std::unique_ptr<ember::optim::Optimizer>(std::vector<ember::Tensor>)>;

void optimizer_step(benchmark::State& state, const Factory& make) {
  ember::manual_seed(0);
  std::vector<ember::Tensor> params;
  for (auto sizes : {std::vector<int64_t>{512, 784}, {512}, {512, 512}, {512}, {10, 512}, {10}}) {
    ember::Tensor p = ember::randn(sizes).requires_grad_();
    (p * p).sum().backward();  // a gradient of p's shape, set once
    params.push_back(p);
  }
  const std::unique_ptr<ember::optim::Optimizer> optimizer = make(params);
  for (auto _ : state) {
    // The gradient changes sign every step, outside the timing: a constant one would drive
    // RMSprop's centered variance to zero and into subnormal numbers, which run far slower.
    state.PauseTiming();
    for (const ember::Tensor& p : params) p.grad().mul_(-1.0);
    state.ResumeTiming();
    optimizer->step();
  }
  state.SetItemsProcessed(state.iterations() * 669706);
}

template <typename O, typename Options>
Factory factory(Options options) {
  return [options](std::vector<ember::Tensor> p) { return std::make_unique<O>(std::move(p), options); };
}

using namespace ember::optim;
BENCHMARK_CAPTURE(optimizer_step, sgd, factory<SGD>(SGDOptions{.lr = 1e-3}))->Unit(benchmark::kMicrosecond);
BENCHMARK_CAPTURE(optimizer_step, sgd_momentum, factory<SGD>(SGDOptions{.lr = 1e-3, .momentum = 0.9}))
    ->Unit(benchmark::kMicrosecond);
BENCHMARK_CAPTURE(optimizer_step, adam, factory<Adam>(AdamOptions{}))->Unit(benchmark::kMicrosecond);
BENCHMARK_CAPTURE(optimizer_step, adadelta, factory<Adadelta>(AdadeltaOptions{}))->Unit(benchmark::kMicrosecond);
BENCHMARK_CAPTURE(optimizer_step, rmsprop, factory<RMSprop>(RMSpropOptions{.lr = 1e-5}))->Unit(benchmark::kMicrosecond);
BENCHMARK_CAPTURE(optimizer_step, rmsprop_centered_momentum,
                  factory<RMSprop>(RMSpropOptions{.lr = 1e-5, .momentum = 0.9, .centered = true}))
    ->Unit(benchmark::kMicrosecond);

}  // namespace

BENCHMARK_MAIN();
