// torchvision's VisionTransformer (ember::models::VisionTransformer) in a ViT-Tiny-like
// configuration: one AdamW step with cross-entropy on a fixed batch; bench/models/vit_pytorch.py
// is the same step with torchvision's model.
#include "ember/models/vit.h"
#include "ember/nn/functional.h"
#include "ember/optim/optimizers.h"
#include "step_registry.h"

EMBER_BENCH_MODEL_STEP(vit,
                       "ViT: image 64, patch 8, 6 layers, 3 heads, hidden 192, mlp 768, 10 classes, batch 16, AdamW") {
  auto model = std::make_shared<ember::models::VisionTransformer>(
      64, 8, 6, 3, 192, 768, ember::models::VisionTransformerOptions{.num_classes = 10});
  model->to(device);
  model->train();
  auto optimizer = std::make_shared<ember::optim::AdamW>(model->parameters(), ember::optim::AdamWOptions{.lr = 1e-3});
  const ember::Tensor images = ember::randn({16, 3, 64, 64}).to(device);
  const ember::Tensor labels = ember::randint(10, {16}).to(device);
  return [=] {
    optimizer->zero_grad();
    ember::nn::functional::cross_entropy((*model)(images), labels).backward();
    optimizer->step();
  };
}
