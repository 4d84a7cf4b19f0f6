// CTC loss on the CPU, float32, in a speech-like shape: T = 200 frames, a batch of N = 16,
// C = 30 classes (blank and 29 characters), padded targets of S = 40 labels (lengths 20 to 40,
// input lengths 150 to 200), reduction 'mean'; forward alone and forward + backward.
// ember composes the loss from ops, one time step at a time (a dedicated kernel, as PyTorch has,
// would be faster). bench/ctc_loss_pytorch.py times the same in PyTorch. Run both with the same
// OMP_NUM_THREADS, alternating.
#include <benchmark/benchmark.h>

#include <cstdint>
#include <vector>

#include "ember/ember.h"
#include "ember/nn/ctc_loss.h"

namespace {

using ember::Tensor;

constexpr int64_t kFrames = 200, kBatch = 16, kClasses = 30, kTargetLength = 40;

struct Inputs {
  Tensor logits, targets, input_lengths, target_lengths;
};

// The same lengths as ctc_loss_pytorch.py: deterministic, spread over the batch.
Inputs make_inputs() {
  ember::manual_seed(0);
  Inputs in;
  in.logits = ember::randn({kFrames, kBatch, kClasses});
  in.targets = ember::randint(1, kClasses, {kBatch, kTargetLength}, ember::kInt64);
  std::vector<int64_t> input_lengths, target_lengths;
  for (int64_t n = 0; n < kBatch; ++n) {
    input_lengths.push_back(kFrames - (n * 50) / kBatch);
    target_lengths.push_back(kTargetLength - (n * 20) / kBatch);
  }
  in.input_lengths = ember::tensor(input_lengths);
  in.target_lengths = ember::tensor(target_lengths);
  return in;
}

void ctc_forward(benchmark::State& state) {
  const Inputs in = make_inputs();
  const Tensor log_probs = ember::log_softmax(in.logits, 2);
  for (auto _ : state) {
    Tensor loss = ember::nn::functional::ctc_loss(log_probs, in.targets, in.input_lengths, in.target_lengths);
    benchmark::DoNotOptimize(loss.data_ptr());
  }
}

void ctc_forward_backward(benchmark::State& state) {
  const Inputs in = make_inputs();
  Tensor log_probs = ember::log_softmax(in.logits, 2).detach().requires_grad_();
  for (auto _ : state) {
    ember::nn::functional::ctc_loss(log_probs, in.targets, in.input_lengths, in.target_lengths).backward();
    benchmark::DoNotOptimize(log_probs.grad().data_ptr());
    log_probs.set_grad(Tensor());
  }
}

void register_all() {
  benchmark::RegisterBenchmark("ctc_loss/T200_N16_C30_S40", ctc_forward)->UseRealTime()->Unit(benchmark::kMillisecond);
  benchmark::RegisterBenchmark("ctc_loss_fwd_bwd/T200_N16_C30_S40", ctc_forward_backward)
      ->UseRealTime()
      ->Unit(benchmark::kMillisecond);
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
