// Mixed-precision training from C++, torch.amp's recipe: the forward pass and the loss in an
// amp::autocast region (bfloat16 on the CPU, float16 on a GPU) with float32 parameters, and on a
// GPU an amp::GradScaler that keeps float16 gradients from underflowing. The model, an MLP,
// learns which of 8 random centres in 32 dimensions a noisy point was drawn around; the data are
// drawn on the fly, so the example needs no files. It prints the loss as it trains and the
// accuracy on fresh points at the end (above 95% within the 200 steps, on any device).
//   usage: mixed_precision
#include <ember/ember.h>

#include <cstdio>
#include <iostream>
#include <utility>

namespace {

constexpr int64_t kClasses = 8, kDims = 32, kBatch = 64;

}  // namespace

int main() try {
  using namespace ember;
  const Device device = best_device();
  manual_seed(0);
  const Tensor centres = randn({kClasses, kDims}) * 0.8;
  auto draw = [&](int64_t n) {
    Tensor labels = randint(kClasses, {n});
    Tensor points = centres.index_select(0, labels) + randn({n, kDims});
    return std::make_pair(points.to(device), labels.to(device));
  };

  nn::Sequential model(std::make_shared<nn::Linear>(kDims, 128), std::make_shared<nn::ReLU>(),
                       std::make_shared<nn::Linear>(128, 128), std::make_shared<nn::ReLU>(),
                       std::make_shared<nn::Linear>(128, kClasses));
  model.to(device);
  optim::SGD optimizer(model.parameters(), {.lr = 0.05, .momentum = 0.9});
  // float16 needs loss scaling; bfloat16, the CPU's autocast dtype, has float32's range and not.
  amp::GradScaler scaler({.device = device, .enabled = !device.is_cpu()});

  for (int step = 1; step <= 200; ++step) {
    auto [points, labels] = draw(kBatch);
    Tensor loss;
    {
      amp::autocast region(device.type());  // the products in 16 bits, the loss in float32
      loss = nn::functional::cross_entropy(model.forward(points), labels);
    }
    optimizer.zero_grad();
    scaler.scale(loss).backward();  // gradients reach the float32 parameters in float32
    scaler.step(optimizer);         // on a GPU, skipped (and the scale halved) on inf or NaN
    scaler.update();
    if (step % 50 == 0) std::printf("step %3d  loss %.4f\n", step, loss.item<double>());
  }

  NoGradGuard no_grad;
  amp::autocast region(device.type());
  auto [points, labels] = draw(4096);
  const Tensor logits = model.forward(points);
  const double accuracy = logits.argmax(1).eq(labels).to(kFloat64).mean().item<double>();
  std::cout << "logits in " << dtype_name(logits.dtype()) << " on " << device << "\n";
  std::printf("accuracy on 4096 fresh points: %.1f%%\n", 100.0 * accuracy);
} catch (const ember::Error& e) {
  std::cerr << "error: " << e.what() << "\n";
  return 1;
}
