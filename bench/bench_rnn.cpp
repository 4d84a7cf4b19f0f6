// A training step's share of the recurrent layers: forward, then backward of the output's sum,
// for nn::LSTM and nn::GRU at the size of pytorch/examples' word_language_model (2 layers, 200
// features and hidden units, batch 20, 35 steps), and at 4x the steps, where a backward that
// grew quadratically with the length would show; and the LSTM on a packed batch of lengths 35
// down to 10 in shuffled order (pack, layer, unpack, backward). bench/rnn_pytorch.py times the
// same in PyTorch.
//
// Run with OMP_NUM_THREADS=1 and =2, --benchmark_repetitions=3; docs/PERFORMANCE.md has figures.
#include <benchmark/benchmark.h>

#include <cstdint>
#include <memory>
#include <vector>

#include "ember/ember.h"

namespace {

constexpr int64_t kFeatures = 200, kHidden = 200, kBatch = 20, kLayers = 2;

template <typename Layer>
void bench_rnn(benchmark::State& state) {
  const int64_t steps = state.range(0);
  ember::manual_seed(0);
  auto layer = std::make_shared<Layer>(kFeatures, kHidden, ember::nn::RNNOptions{.num_layers = kLayers});
  ember::Tensor x = ember::randn({steps, kBatch, kFeatures}).requires_grad_();
  for (auto _ : state) {
    ember::Tensor y = (*layer)(x);
    y.sum().backward();
    benchmark::DoNotOptimize(x.grad().data_ptr());
    layer->zero_grad();
    x.set_grad(ember::Tensor());
  }
  state.SetItemsProcessed(state.iterations() * steps * kBatch);
}

void bench_lstm_forward(benchmark::State& state) {
  const int64_t steps = state.range(0);
  ember::manual_seed(0);
  ember::nn::LSTM layer(kFeatures, kHidden, {.num_layers = kLayers});
  ember::Tensor x = ember::randn({steps, kBatch, kFeatures});
  for (auto _ : state) {
    ember::NoGradGuard no_grad;
    ember::Tensor y = layer(x);
    benchmark::DoNotOptimize(y.data_ptr());
  }
  state.SetItemsProcessed(state.iterations() * steps * kBatch);
}

/// Lengths 35, 34, ..., 16 for a batch of 20, in the order i * 7 mod 20 (not sorted).
std::vector<int64_t> packed_lengths() {
  std::vector<int64_t> lengths(kBatch);
  for (int64_t i = 0; i < kBatch; ++i) lengths[static_cast<size_t>(i)] = 35 - (i * 7) % kBatch;
  return lengths;
}

void lstm_packed_forward_backward(benchmark::State& state) {
  namespace R = ember::nn::utils::rnn;
  ember::manual_seed(0);
  ember::nn::LSTM layer(kFeatures, kHidden, {.num_layers = kLayers});
  ember::Tensor x = ember::randn({35, kBatch, kFeatures}).requires_grad_();
  const std::vector<int64_t> lengths = packed_lengths();
  int64_t steps = 0;
  for (int64_t l : lengths) steps += l;
  for (auto _ : state) {
    R::PackedSequence packed = R::pack_padded_sequence(x, lengths, false, false);
    ember::Tensor y = R::pad_packed_sequence(layer.forward(packed).output).first;
    y.sum().backward();
    benchmark::DoNotOptimize(x.grad().data_ptr());
    layer.zero_grad();
    x.set_grad(ember::Tensor());
  }
  state.SetItemsProcessed(state.iterations() * steps);
}

}  // namespace

BENCHMARK(bench_lstm_forward)->Arg(35)->Unit(benchmark::kMillisecond);
BENCHMARK(bench_rnn<ember::nn::LSTM>)->Name("lstm_forward_backward")->Arg(35)->Arg(140)->Unit(benchmark::kMillisecond);
BENCHMARK(bench_rnn<ember::nn::GRU>)->Name("gru_forward_backward")->Arg(35)->Arg(140)->Unit(benchmark::kMillisecond);
BENCHMARK(lstm_packed_forward_backward)->Unit(benchmark::kMillisecond);

BENCHMARK_MAIN();
