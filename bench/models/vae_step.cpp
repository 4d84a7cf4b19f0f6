// pytorch/examples' VAE (ember::models::VAE, 784 -> 400 -> 20): one Adam step (lr 1e-3) with the
// example's loss (BCE summed + KLD) on a fixed batch of 128 images in [0, 1]; the noise is drawn
// each step as the example draws it. bench/models/vae_pytorch.py is the same step in PyTorch.
#include "ember/models/vae.h"
#include "ember/optim/optimizers.h"
#include "step_registry.h"

EMBER_BENCH_MODEL_STEP(vae, "VAE 784-400-20, batch 128 of 784 in [0, 1], BCE sum + KLD, Adam lr 1e-3") {
  auto model = std::make_shared<ember::models::VAE>();
  model->to(device);
  model->train();
  auto optimizer = std::make_shared<ember::optim::Adam>(model->parameters(), ember::optim::AdamOptions{.lr = 1e-3});
  const ember::Tensor data = ember::rand({128, 1, 28, 28}).to(device);
  return [=] {
    optimizer->zero_grad();
    const auto [recon, mu, logvar] = model->forward(data, ember::Tensor());
    ember::models::vae_loss(recon, data, mu, logvar).backward();
    optimizer->step();
  };
}
