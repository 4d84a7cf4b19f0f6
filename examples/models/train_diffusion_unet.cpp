// Training ember::models::UNet2DModel (diffusers' UNet2DModel) from C++ as a DDPM denoiser on
// images it draws itself (16x16, one bright bar across a dark field, in [-1, 1]): each step takes
// a batch, a timestep per image, noises the images with DDPM's schedule (linear betas from 1e-4
// to 0.02 over 1000 steps: x_t = sqrt(abar_t) x_0 + sqrt(1 - abar_t) noise) and fits the noise
// with an MSE loss. The loss falls from about 1; the weights are saved under diffusers' keys, so
// diffusers.UNet2DModel(**the same config).load_state_dict(...) reads them.
//   usage: train_diffusion_unet [STEPS]   (default 150)
#include <ember/ember.h>
#include <ember/models/diffusion_unet.h>

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <iostream>
#include <string>
#include <vector>

namespace {

constexpr int64_t kSize = 16, kTimesteps = 1000;

/// abar_t = prod_{s <= t} (1 - beta_s), the betas linear from 1e-4 to 0.02 (DDPM's schedule).
std::vector<double> alphas_cumprod() {
  std::vector<double> out(kTimesteps);
  double product = 1.0;
  for (int64_t t = 0; t < kTimesteps; ++t) {
    const double beta = 1e-4 + (0.02 - 1e-4) * static_cast<double>(t) / static_cast<double>(kTimesteps - 1);
    product *= 1.0 - beta;
    out[static_cast<size_t>(t)] = product;
  }
  return out;
}

/// `n` images [n, 1, 16, 16]: -1 everywhere but a bar (a row or a column, 3 pixels wide) at +1.
ember::Tensor synthetic_images(int64_t n) {
  using namespace ember;
  Tensor images = full({n, 1, kSize, kSize}, -1.0);
  const Tensor positions = randint(0, kSize - 3, {n});
  const Tensor vertical = randint(0, 2, {n});
  for (int64_t i = 0; i < n; ++i) {
    const int64_t at = positions[i].item<int64_t>();
    images[i][0].narrow(vertical[i].item<int64_t>() ? 1 : 0, at, 3).fill_(1.0);
  }
  return images;
}

}  // namespace

int main(int argc, char** argv) try {
  using namespace ember;
  const int steps = argc > 1 ? std::stoi(argv[1]) : 150;
  const Device device = best_device();
  manual_seed(0);

  models::UNet2DModel model({.sample_size = kSize,
                             .in_channels = 1,
                             .out_channels = 1,
                             .down_block_types = {"DownBlock2D", "AttnDownBlock2D"},
                             .up_block_types = {"AttnUpBlock2D", "UpBlock2D"},
                             .block_out_channels = {16, 32},
                             .layers_per_block = 1,
                             .norm_num_groups = 8});
  model.to(device);
  optim::AdamW optimizer(model.parameters(), {.lr = 2e-3});
  const Tensor abar = tensor(alphas_cumprod()).to(kFloat32);

  model.train();
  std::vector<double> losses;
  for (int step = 1; step <= steps; ++step) {
    const int64_t batch = 16;
    const Tensor clean = synthetic_images(batch);
    const Tensor noise = randn({batch, 1, kSize, kSize});
    const Tensor timesteps = randint(0, kTimesteps, {batch});
    const Tensor a = abar.index_select(0, timesteps).view({batch, 1, 1, 1});
    const Tensor noisy = a.sqrt() * clean + (1.0 - a).sqrt() * noise;
    const Tensor loss =
        nn::functional::mse_loss(model.forward(noisy.to(device), timesteps.to(device)), noise.to(device));
    optimizer.zero_grad();
    loss.backward();
    optimizer.step();
    losses.push_back(loss.item<double>());
    std::printf("step %3d  noise-prediction MSE %.4f\n", step, losses.back());
  }
  io::save_safetensors("diffusion_unet_synthetic.safetensors", model.state_dict().items());

  // The loss fell: the mean of the last few steps below that of the first few (the timesteps
  // are random, so each step's loss is noisy; the windows smooth it).
  const size_t window = std::max<size_t>(1, std::min<size_t>(5, losses.size() / 2));
  double first = 0.0, last = 0.0;
  for (size_t i = 0; i < window; ++i) {
    first += losses[i] / static_cast<double>(window);
    last += losses[losses.size() - 1 - i] / static_cast<double>(window);
  }
  std::printf("mean MSE of the first %zu steps %.4f, of the last %zu %.4f\n", window, first, window, last);
  if (!(last < first)) {
    std::fprintf(stderr, "the loss did not fall\n");
    return 1;
  }
} catch (const ember::Error& e) {
  std::cerr << "error: " << e.what() << "\n";
  return 1;
}
