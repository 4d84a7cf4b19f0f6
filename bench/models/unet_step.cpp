// milesial's U-Net (ember::models::UNet): one training step as the repository's train.py takes it
// (RMSprop lr 1e-5, weight decay 1e-8, momentum 0.999; per-pixel cross-entropy on two classes)
// on a fixed batch of 4 RGB 64x64 images, with transposed-convolution and with bilinear
// upsampling. The first level has 16 channels instead of the reference's 64 (base_channels,
// ember's extension; the full model takes seconds per step on one thread).
// bench/models/unet_pytorch.py is the same step in PyTorch.
#include "ember/models/unet.h"
#include "ember/nn/functional.h"
#include "ember/optim/optimizers.h"
#include "step_registry.h"

namespace {

ember_bench::Step unet_step(bool bilinear, const ember::Device& device) {
  auto model = std::make_shared<ember::models::UNet>(
      3, 2, ember::models::UNetOptions{.bilinear = bilinear, .base_channels = 16});
  model->to(device);
  model->train();
  auto optimizer = std::make_shared<ember::optim::RMSprop>(
      model->parameters(), ember::optim::RMSpropOptions{.lr = 1e-5, .weight_decay = 1e-8, .momentum = 0.999});
  const ember::Tensor images = ember::randn({4, 3, 64, 64}).to(device);
  const ember::Tensor masks = ember::randint(2, {4, 64, 64}).to(device);
  return [=] {
    optimizer->zero_grad();
    ember::nn::functional::cross_entropy((*model)(images), masks).backward();
    optimizer->step();
  };
}

}  // namespace

EMBER_BENCH_MODEL_STEP(unet, "U-Net (transposed conv, base 16), batch 4 of 3x64x64, 2 classes per pixel, RMSprop") {
  return unet_step(false, device);
}

EMBER_BENCH_MODEL_STEP(unet_bilinear, "U-Net (bilinear, base 16), batch 4 of 3x64x64, 2 classes per pixel, RMSprop") {
  return unet_step(true, device);
}
