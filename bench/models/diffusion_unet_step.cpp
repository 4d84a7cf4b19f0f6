// diffusers' UNet2DModel (ember::models::UNet2DModel): one DDPM training step, the MSE between
// the predicted and the true noise, AdamW (lr 1e-4), on a fixed batch of 8 noisy 3x32x32 images
// with their timesteps; block_out_channels (64, 128) with DownBlock2D, AttnDownBlock2D /
// AttnUpBlock2D, UpBlock2D, one or two layers per block (diffusers' other defaults: 32 groups,
// attention heads of 8). bench/models/diffusion_unet_pytorch.py is the same step in PyTorch.
#include "ember/models/diffusion_unet.h"
#include "ember/nn/functional.h"
#include "ember/optim/optimizers.h"
#include "step_registry.h"

namespace {

ember_bench::Step diffusion_step(int64_t layers_per_block, const ember::Device& device) {
  auto model = std::make_shared<ember::models::UNet2DModel>(
      ember::models::UNet2DModelOptions{.sample_size = 32,
                                        .down_block_types = {"DownBlock2D", "AttnDownBlock2D"},
                                        .up_block_types = {"AttnUpBlock2D", "UpBlock2D"},
                                        .block_out_channels = {64, 128},
                                        .layers_per_block = layers_per_block});
  model->to(device);
  model->train();
  auto optimizer = std::make_shared<ember::optim::AdamW>(model->parameters(), ember::optim::AdamWOptions{.lr = 1e-4});
  const ember::Tensor noisy = ember::randn({8, 3, 32, 32}).to(device);
  const ember::Tensor noise = ember::randn({8, 3, 32, 32}).to(device);
  const ember::Tensor timesteps = ember::randint(0, 1000, {8}).to(device);
  return [=] {
    optimizer->zero_grad();
    ember::nn::functional::mse_loss(model->forward(noisy, timesteps), noise).backward();
    optimizer->step();
  };
}

}  // namespace

EMBER_BENCH_MODEL_STEP(diffusion_unet,
                       "UNet2DModel (64, 128), 1 layer per block, batch 8 of 3x32x32, noise MSE, AdamW") {
  return diffusion_step(1, device);
}

EMBER_BENCH_MODEL_STEP(diffusion_unet_l2,
                       "UNet2DModel (64, 128), 2 layers per block, batch 8 of 3x32x32, noise MSE, AdamW") {
  return diffusion_step(2, device);
}
