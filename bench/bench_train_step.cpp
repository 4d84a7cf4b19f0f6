// One training step of the two `ember train` networks, in-process: zero_grad, forward,
// cross-entropy, backward and the optimizer's update on a fixed batch of 64 random images, with
// no data loading, logging or checks around it. This is the part of `ember train`'s time that the
// library owns, and the program to profile it with (docs/PERFORMANCE.md §6):
//
//   perf record -g build-cpu/bench/bench_train_step --benchmark_filter=mlp --benchmark_min_time=5
//
// The recipes are those of bench/compare_pytorch.sh: mlp with SGD (lr 1e-3), cnn with Adadelta
// (lr 1.0), batch 64. "+verdict" adds what `ember train` does at each step to test that the loss
// and the gradients are finite: the check folded into a flag on the device, the optimizer step
// conditioned on it, the flag copied out and read a step later (train/step_verdicts.h), and the
// optimizer's host state kept. "+check" is the test it replaced (ember::all_finite, its bool read
// back before the step), "+sums" the one before that (one sum per gradient, each read back).
#include <benchmark/benchmark.h>

#include <memory>
#include <vector>

#include "ember/ember.h"
#include "ember/nn/functional.h"
#include "ember/optim/optimizers.h"
#include "train/models.h"
#include "train/step_verdicts.h"

namespace {

constexpr int64_t kBatch = 64;

std::unique_ptr<ember::optim::Optimizer> make_optimizer(const std::string& model, std::vector<ember::Tensor> params) {
  if (model == "mlp")
    return std::make_unique<ember::optim::SGD>(std::move(params), ember::optim::SGDOptions{.lr = 1e-3});
  return std::make_unique<ember::optim::Adadelta>(std::move(params), ember::optim::AdadeltaOptions{.lr = 1.0});
}

enum class Check { None, Sums, AllFinite, Verdict };

void train_step(benchmark::State& state, const std::string& model_name, Check check) {
  ember::manual_seed(0);
  const std::shared_ptr<ember::nn::Module> model = ember::train::make_model(model_name);
  model->train();
  const std::vector<ember::Tensor> params = model->parameters();
  const std::unique_ptr<ember::optim::Optimizer> optimizer = make_optimizer(model_name, params);
  const ember::Tensor images = ember::randn({kBatch, 1, 28, 28});
  const ember::Tensor labels = ember::randint(10, {kBatch});
  double finite_sum = 0;
  std::vector<ember::Tensor> checked;
  ember::train::StepVerdicts verdicts(ember::Device("cpu"), /*all_ranks=*/false);
  int previous = -1;
  for (auto _ : state) {
    const ember::optim::Optimizer::HostState before =
        check == Check::Verdict ? optimizer->host_state() : ember::optim::Optimizer::HostState();
    benchmark::DoNotOptimize(before);
    const ember::Tensor loss = ember::nn::functional::cross_entropy(model->forward(images), labels);
    optimizer->zero_grad();
    loss.backward();
    if (check == Check::Verdict) {
      checked.assign({loss.detach()});
      for (const ember::Tensor& p : params) checked.push_back(p.grad());
      optimizer->step(verdicts.check(checked));
      if (previous >= 0) finite_sum += verdicts.read(previous) ? 1 : 0;
      previous = verdicts.record();
      continue;
    }
    if (check == Check::Sums) {
      finite_sum += loss.item<double>();
      for (const ember::Tensor& p : params) finite_sum += p.grad().sum().item<double>();
    } else if (check == Check::AllFinite) {
      checked.assign({loss.detach()});
      for (const ember::Tensor& p : params) checked.push_back(p.grad());
      finite_sum += ember::all_finite(checked).item<bool>() ? 0 : 1;
    }
    optimizer->step();
  }
  benchmark::DoNotOptimize(finite_sum);
  state.SetItemsProcessed(state.iterations() * kBatch);
}
// The check alone, on the mlp's loss and gradients after one step (670k values).
void finiteness_check(benchmark::State& state, Check check) {
  ember::manual_seed(0);
  const std::shared_ptr<ember::nn::Module> model = ember::train::make_model("mlp");
  const std::vector<ember::Tensor> params = model->parameters();
  const ember::Tensor loss = ember::nn::functional::cross_entropy(model->forward(ember::randn({kBatch, 1, 28, 28})),
                                                                  ember::randint(10, {kBatch}));
  loss.backward();
  const std::unique_ptr<ember::optim::Optimizer> optimizer = make_optimizer("mlp", params);
  ember::train::StepVerdicts verdicts(ember::Device("cpu"), /*all_ranks=*/false);
  double finite_sum = 0;
  std::vector<ember::Tensor> checked;
  for (auto _ : state) {
    if (check == Check::Sums) {
      finite_sum += loss.item<double>();
      for (const ember::Tensor& p : params) finite_sum += p.grad().sum().item<double>();
    } else if (check == Check::Verdict) {
      // Without the optimizer step it conditions: the flag, its copy and its read, and the
      // optimizer's host state.
      benchmark::DoNotOptimize(optimizer->host_state());
      checked.assign({loss.detach()});
      for (const ember::Tensor& p : params) checked.push_back(p.grad());
      benchmark::DoNotOptimize(verdicts.check(checked));
      finite_sum += verdicts.read(verdicts.record()) ? 1 : 0;
    } else {
      checked.assign({loss.detach()});
      for (const ember::Tensor& p : params) checked.push_back(p.grad());
      finite_sum += ember::all_finite(checked).item<bool>() ? 0 : 1;
    }
  }
  benchmark::DoNotOptimize(finite_sum);
}
BENCHMARK_CAPTURE(finiteness_check, verdict, Check::Verdict)->Unit(benchmark::kMicrosecond);
BENCHMARK_CAPTURE(finiteness_check, all_finite, Check::AllFinite)->Unit(benchmark::kMicrosecond);
BENCHMARK_CAPTURE(finiteness_check, sums, Check::Sums)->Unit(benchmark::kMicrosecond);

// The loss of a step alone, forward and backward, on the trainers' shape ([64, 10] logits):
// cross_entropy (one fused op each way) against log_softmax then nll_loss, the op-by-op form it
// replaced; and with label smoothing 0.1, fused against the op-by-op form that [N, C, 1] logits
// still take (the form [N, C] logits took before the fused op learnt smoothing).
enum class Loss { Fused, OpByOp, SmoothedFused, SmoothedOpByOp };

void loss_step(benchmark::State& state, Loss form) {
  namespace F = ember::nn::functional;
  ember::manual_seed(0);
  const ember::Tensor logits = ember::randn({kBatch, 10}).requires_grad_();
  const ember::Tensor labels = ember::randint(10, {kBatch});
  for (auto _ : state) {
    ember::Tensor loss;
    switch (form) {
      case Loss::Fused:
        loss = F::cross_entropy(logits, labels);
        break;
      case Loss::OpByOp:
        loss = F::nll_loss(ember::log_softmax(logits, 1), labels);
        break;
      case Loss::SmoothedFused:
        loss = F::cross_entropy(logits, labels, ember::nn::Reduction::Mean, 0.1);
        break;
      case Loss::SmoothedOpByOp:
        loss = F::cross_entropy(logits.unsqueeze(2), labels.unsqueeze(1), ember::nn::Reduction::Mean, 0.1);
        break;
    }
    loss.backward();
  }
}
BENCHMARK_CAPTURE(loss_step, cross_entropy, Loss::Fused)->Unit(benchmark::kMicrosecond);
BENCHMARK_CAPTURE(loss_step, log_softmax_nll_loss, Loss::OpByOp)->Unit(benchmark::kMicrosecond);
BENCHMARK_CAPTURE(loss_step, smoothed cross_entropy, Loss::SmoothedFused)->Unit(benchmark::kMicrosecond);
BENCHMARK_CAPTURE(loss_step, smoothed op_by_op, Loss::SmoothedOpByOp)->Unit(benchmark::kMicrosecond);

BENCHMARK_CAPTURE(train_step, mlp, std::string("mlp"), Check::None)->Unit(benchmark::kMicrosecond);
BENCHMARK_CAPTURE(train_step, mlp + verdict, std::string("mlp"), Check::Verdict)->Unit(benchmark::kMicrosecond);
BENCHMARK_CAPTURE(train_step, mlp + check, std::string("mlp"), Check::AllFinite)->Unit(benchmark::kMicrosecond);
BENCHMARK_CAPTURE(train_step, mlp + sums, std::string("mlp"), Check::Sums)->Unit(benchmark::kMicrosecond);
BENCHMARK_CAPTURE(train_step, cnn, std::string("cnn"), Check::None)->Unit(benchmark::kMillisecond);

}  // namespace

BENCHMARK_MAIN();
