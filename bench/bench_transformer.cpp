// A training step's share of a Transformer encoder layer (d_model 256, 8 heads, feed-forward
// 1024, batch 16, 64 tokens, batch_first, causal mask, dropout 0.1, training mode): forward, then
// backward of the output's sum; and the forward alone in eval mode without gradients.
// bench/transformer_pytorch.py times the same in PyTorch.
//
// Run with OMP_NUM_THREADS=1 and =2, --benchmark_repetitions=3; docs/PERFORMANCE.md has figures.
#include <benchmark/benchmark.h>

#include <cstdint>

#include "ember/ember.h"

namespace {

constexpr int64_t kModel = 256, kHeads = 8, kFeedForward = 1024, kBatch = 16, kTokens = 64;

void encoder_layer_forward_backward(benchmark::State& state) {
  ember::manual_seed(0);
  ember::nn::TransformerEncoderLayer layer(kModel, kHeads, {.dim_feedforward = kFeedForward, .batch_first = true});
  ember::Tensor x = ember::randn({kBatch, kTokens, kModel}).requires_grad_();
  const ember::Tensor mask = ember::nn::generate_square_subsequent_mask(kTokens);
  for (auto _ : state) {
    ember::Tensor y = layer.forward(x, mask, ember::Tensor(), /*is_causal=*/true);
    y.sum().backward();
    benchmark::DoNotOptimize(x.grad().data_ptr());
    layer.zero_grad();
    x.set_grad(ember::Tensor());
  }
  state.SetItemsProcessed(state.iterations() * kBatch * kTokens);
}

void encoder_layer_inference(benchmark::State& state) {
  ember::manual_seed(0);
  ember::nn::TransformerEncoderLayer layer(kModel, kHeads, {.dim_feedforward = kFeedForward, .batch_first = true});
  layer.eval();
  ember::Tensor x = ember::randn({kBatch, kTokens, kModel});
  const ember::Tensor mask = ember::nn::generate_square_subsequent_mask(kTokens);
  for (auto _ : state) {
    ember::NoGradGuard no_grad;
    ember::Tensor y = layer.forward(x, mask, ember::Tensor(), true);
    benchmark::DoNotOptimize(y.data_ptr());
  }
  state.SetItemsProcessed(state.iterations() * kBatch * kTokens);
}

}  // namespace

BENCHMARK(encoder_layer_forward_backward)->Unit(benchmark::kMillisecond);
BENCHMARK(encoder_layer_inference)->Unit(benchmark::kMillisecond);

BENCHMARK_MAIN();
