// Element-wise activations and the softmax family on the CPU, float32: the ops whose time is
// libm's exp/tanh/erf (vectorised through glibc's libmvec, src/backend/cpu/vector_libm.h).
// Shapes: an LSTM's gates for batch 64 and hidden 512 ([64, 2048]), a transformer block's
// activations ([8 x 128 tokens, 3072]), ImageNet-sized logits ([256, 1000]) and the MNIST
// recipe's logits with their loss ([64, 10]). The activations also run forward and backward, whose
// formulas are one fused kernel each (kernels::SigmoidBackward, ...).
//
// bench/activations_pytorch.py times the same ops in PyTorch. Run both with OMP_NUM_THREADS=1
// (and 2); docs/PERFORMANCE.md records the results.
#include <benchmark/benchmark.h>

#include <cstdint>
#include <functional>
#include <string>

#include "ember/ember.h"

namespace {

using ember::Tensor;
namespace F = ember::nn::functional;

void run(benchmark::State& state, int64_t rows, int64_t cols, const std::function<Tensor(const Tensor&)>& op) {
  ember::manual_seed(0);
  Tensor x = ember::randn({rows, cols});
  for (auto _ : state) {
    Tensor y = op(x);
    benchmark::DoNotOptimize(y.data_ptr());
  }
  state.SetItemsProcessed(state.iterations() * rows * cols);
}

/// op(x) forward and backward (of the sum weighted by a fixed gradient), as in a training step.
void run_fwd_bwd(benchmark::State& state, int64_t rows, int64_t cols, const std::function<Tensor(const Tensor&)>& op) {
  ember::manual_seed(0);
  Tensor x = ember::randn({rows, cols}).requires_grad_();
  Tensor g = ember::randn({rows, cols});
  for (auto _ : state) {
    op(x).backward(g);
    x.set_grad(Tensor());
  }
  state.SetItemsProcessed(state.iterations() * rows * cols);
}

void cross_entropy_step(benchmark::State& state, int64_t rows, int64_t cols) {
  ember::manual_seed(0);
  Tensor logits = ember::randn({rows, cols}).requires_grad_();
  Tensor target = ember::randint(0, cols, {rows});
  for (auto _ : state) {
    Tensor loss = F::cross_entropy(logits, target);
    loss.backward();
    logits.set_grad(Tensor());
  }
  state.SetItemsProcessed(state.iterations() * rows * cols);
}

void register_all() {
  struct Op {
    const char* name;
    std::function<Tensor(const Tensor&)> fn;
  };
  const Op unary[] = {
      {"exp", [](const Tensor& x) { return ember::exp(x); }},
      {"tanh", [](const Tensor& x) { return ember::tanh(x); }},
      {"sigmoid", [](const Tensor& x) { return ember::sigmoid(x); }},
      {"gelu", [](const Tensor& x) { return ember::gelu(x); }},
      {"gelu_tanh", [](const Tensor& x) { return ember::gelu(x, "tanh"); }},
      {"silu", [](const Tensor& x) { return ember::silu(x); }},
  };
  for (const Op& op : unary) {
    benchmark::RegisterBenchmark((std::string(op.name) + "/64x2048").c_str(), run, 64, 2048, op.fn)
        ->UseRealTime()
        ->Unit(benchmark::kMicrosecond);
    benchmark::RegisterBenchmark((std::string(op.name) + "/1024x3072").c_str(), run, 1024, 3072, op.fn)
        ->UseRealTime()
        ->Unit(benchmark::kMicrosecond);
  }
  for (const Op& op : unary) {
    if (std::string(op.name) == "exp") continue;
    benchmark::RegisterBenchmark((std::string(op.name) + "_fwd_bwd/1024x3072").c_str(), run_fwd_bwd, 1024, 3072, op.fn)
        ->UseRealTime()
        ->Unit(benchmark::kMicrosecond);
  }
  const Op rows[] = {
      {"softmax", [](const Tensor& x) { return ember::softmax(x, 1); }},
      {"log_softmax", [](const Tensor& x) { return ember::log_softmax(x, 1); }},
  };
  for (const Op& op : rows) {
    benchmark::RegisterBenchmark((std::string(op.name) + "/256x1000").c_str(), run, 256, 1000, op.fn)
        ->UseRealTime()
        ->Unit(benchmark::kMicrosecond);
  }
  benchmark::RegisterBenchmark("cross_entropy_fwd_bwd/64x10", cross_entropy_step, 64, 10)
      ->UseRealTime()
      ->Unit(benchmark::kMicrosecond);
  benchmark::RegisterBenchmark("cross_entropy_fwd_bwd/256x1000", cross_entropy_step, 256, 1000)
      ->UseRealTime()
      ->Unit(benchmark::kMicrosecond);
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
