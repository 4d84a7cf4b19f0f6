// torchvision's ResNet-18 and ResNet-50 (ember::models::resnet18/50): one SGD step (momentum 0.9,
// weight decay 5e-4) with cross-entropy on a fixed batch; bench/models/resnet_pytorch.py is the
// same step in PyTorch.
#include "ember/models/resnet.h"
#include "ember/nn/functional.h"
#include "ember/optim/optimizers.h"
#include "step_registry.h"

namespace {

ember_bench::Step resnet_step(std::shared_ptr<ember::models::ResNet> model, const ember::Device& device, int64_t batch,
                              int64_t size) {
  model->to(device);
  model->train();
  auto optimizer = std::make_shared<ember::optim::SGD>(
      model->parameters(), ember::optim::SGDOptions{.lr = 0.01, .momentum = 0.9, .weight_decay = 5e-4});
  const ember::Tensor images = ember::randn({batch, 3, size, size}).to(device);
  const ember::Tensor labels = ember::randint(10, {batch}).to(device);
  return [=] {
    optimizer->zero_grad();
    ember::nn::functional::cross_entropy((*model)(images), labels).backward();
    optimizer->step();
  };
}

}  // namespace

EMBER_BENCH_MODEL_STEP(resnet18, "ResNet-18, 10 classes, batch 16 of 3x64x64, SGD momentum 0.9") {
  return resnet_step(ember::models::resnet18({.num_classes = 10}), device, 16, 64);
}

EMBER_BENCH_MODEL_STEP(resnet50, "ResNet-50, 10 classes, batch 8 of 3x64x64, SGD momentum 0.9") {
  return resnet_step(ember::models::resnet50({.num_classes = 10}), device, 8, 64);
}
