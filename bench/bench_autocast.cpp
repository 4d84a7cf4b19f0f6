// Mixed precision on the CPU: what an autocast region costs or saves against float32.
//   matmul/<dtype>: Linear's product x @ w.t() at the mlp's first layer ([64, 784] @ [784, 512])
//     and at a transformer's feed-forward size ([1024, 1024] @ [1024, 4096]), operands already in
//     the dtype (bfloat16 runs natively on CPUs with AVX512-BF16, docs/PERFORMANCE.md §14).
//   mlp_step/<float32|autocast>: `ember train`'s mlp step (SGD, batch 64) as bench_train_step
//     runs it, in float32 or with forward and loss under amp::autocast(kCPU) (bfloat16).
//   cnn_step/...: `ember train`'s cnn step (Adadelta, batch 64), its convolutions in bfloat16.
//   wide_mlp_step/...: the mlp with 4096 hidden units and batch 256, where products dominate.
// bench/autocast_pytorch.py times the same in PyTorch; run both with OMP_NUM_THREADS=1 and 2.
#include <benchmark/benchmark.h>

#include <memory>
#include <optional>
#include <vector>

#include "ember/ember.h"
#include "ember/nn/functional.h"
#include "ember/optim/optimizers.h"
#include "train/models.h"

namespace {

using ember::Tensor;

void product(benchmark::State& state, int64_t m, int64_t k, int64_t n, ember::Dtype dtype) {
  ember::manual_seed(0);
  const Tensor x = ember::randn({m, k}).to(dtype), w = ember::randn({n, k}).to(dtype);
  for (auto _ : state) {
    Tensor y = ember::matmul(x, w.t());
    benchmark::DoNotOptimize(y.data_ptr());
  }
  state.SetItemsProcessed(state.iterations() * 2 * m * n * k);  // FLOPs
}

void step(benchmark::State& state, const std::shared_ptr<ember::nn::Module>& model, int64_t batch, bool autocast,
          bool adadelta = false) {
  const Tensor images = ember::randn({batch, 1, 28, 28});
  const Tensor labels = ember::randint(10, {batch});
  std::unique_ptr<ember::optim::Optimizer> optimizer;
  if (adadelta) {
    optimizer = std::make_unique<ember::optim::Adadelta>(model->parameters(), ember::optim::AdadeltaOptions{.lr = 1.0});
  } else {
    optimizer = std::make_unique<ember::optim::SGD>(model->parameters(), ember::optim::SGDOptions{.lr = 1e-3});
  }
  for (auto _ : state) {
    Tensor loss;
    {
      std::optional<ember::amp::autocast> region;
      if (autocast) region.emplace(ember::kCPU);
      loss = ember::nn::functional::cross_entropy(model->forward(images), labels);
    }
    optimizer->zero_grad();
    loss.backward();
    optimizer->step();
  }
  state.SetItemsProcessed(state.iterations() * batch);
}

void mlp_step(benchmark::State& state, bool autocast) {
  ember::manual_seed(0);
  step(state, ember::train::make_model("mlp"), 64, autocast);
}

void cnn_step(benchmark::State& state, bool autocast) {
  ember::manual_seed(0);
  step(state, ember::train::make_model("cnn"), 64, autocast, /*adadelta=*/true);
}

void wide_mlp_step(benchmark::State& state, bool autocast) {
  ember::manual_seed(0);
  namespace nn = ember::nn;
  auto model = std::make_shared<nn::Sequential>(
      std::make_shared<nn::Flatten>(), std::make_shared<nn::Linear>(784, 4096), std::make_shared<nn::ReLU>(),
      std::make_shared<nn::Linear>(4096, 4096), std::make_shared<nn::ReLU>(), std::make_shared<nn::Linear>(4096, 10));
  step(state, model, 256, autocast);
}

void register_all() {
  for (ember::Dtype dtype : {ember::kFloat32, ember::kBFloat16}) {
    const std::string name(ember::dtype_name(dtype).substr(6));  // without "torch."
    benchmark::RegisterBenchmark(("matmul/64x784x512/" + name).c_str(), product, 64, 784, 512, dtype)
        ->UseRealTime()
        ->Unit(benchmark::kMicrosecond);
    benchmark::RegisterBenchmark(("matmul/1024x1024x4096/" + name).c_str(), product, 1024, 1024, 4096, dtype)
        ->UseRealTime()
        ->Unit(benchmark::kMicrosecond);
  }
  for (bool autocast : {false, true}) {
    const char* mode = autocast ? "autocast" : "float32";
    benchmark::RegisterBenchmark((std::string("mlp_step/") + mode).c_str(), mlp_step, autocast)
        ->UseRealTime()
        ->Unit(benchmark::kMicrosecond);
    benchmark::RegisterBenchmark((std::string("cnn_step/") + mode).c_str(), cnn_step, autocast)
        ->UseRealTime()
        ->Unit(benchmark::kMillisecond);
    benchmark::RegisterBenchmark((std::string("wide_mlp_step/") + mode).c_str(), wide_mlp_step, autocast)
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
