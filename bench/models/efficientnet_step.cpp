// torchvision's EfficientNet-B0 (ember::models::efficientnet_b0, dropout and stochastic depth 0.2):
// one SGD step (momentum 0.9, weight decay 4e-5) with cross-entropy on a fixed batch;
// bench/models/efficientnet_pytorch.py is the same step in PyTorch.
#include "ember/models/efficientnet.h"
#include "ember/nn/functional.h"
#include "ember/optim/optimizers.h"
#include "step_registry.h"

EMBER_BENCH_MODEL_STEP(efficientnet_b0, "EfficientNet-B0, 10 classes, batch 16 of 3x64x64, SGD momentum 0.9") {
  auto model = ember::models::efficientnet_b0({.num_classes = 10});
  model->to(device);
  model->train();
  auto optimizer = std::make_shared<ember::optim::SGD>(
      model->parameters(), ember::optim::SGDOptions{.lr = 0.01, .momentum = 0.9, .weight_decay = 4e-5});
  const ember::Tensor images = ember::randn({16, 3, 64, 64}).to(device);
  const ember::Tensor labels = ember::randint(10, {16}).to(device);
  return [=] {
    optimizer->zero_grad();
    ember::nn::functional::cross_entropy((*model)(images), labels).backward();
    optimizer->step();
  };
}
