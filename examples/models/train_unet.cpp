// Training ember::models::UNet (milesial's Pytorch-UNet) from C++ for segmentation on images it
// draws itself: noise with one brighter rectangle of a random colour, the mask being the
// rectangle. Per-pixel cross-entropy falls within a few Adam steps; then the pixel accuracy and
// the rectangle's intersection over union on fresh images. The weights are saved under the
// reference's keys, so Pytorch-UNet's UNet (with 8 instead of 64 channels in its first level)
// reads them.
//   usage: train_unet [STEPS]   (default 60)
#include <ember/ember.h>
#include <ember/models/unet.h>

#include <algorithm>
#include <cstdio>
#include <iostream>
#include <string>
#include <utility>
#include <vector>

namespace {

constexpr int64_t kSize = 32;

/// `n` images [n, 3, 32, 32] and their masks [n, 32, 32] (int64, 1 inside the rectangle).
std::pair<ember::Tensor, ember::Tensor> synthetic_batch(int64_t n) {
  using namespace ember;
  Tensor images = randn({n, 3, kSize, kSize}) * 0.5;
  Tensor masks = zeros({n, kSize, kSize}, TensorOptions().dtype(kInt64));
  const Tensor corners = randint(0, kSize / 2, {n, 2});
  const Tensor extents = randint(6, kSize / 2, {n, 2});
  const Tensor colours = rand({n, 3}) + 0.5;
  for (int64_t i = 0; i < n; ++i) {
    const int64_t y = corners[i][0].item<int64_t>(), x = corners[i][1].item<int64_t>();
    const int64_t h = extents[i][0].item<int64_t>(), w = extents[i][1].item<int64_t>();
    masks[i].narrow(0, y, h).narrow(1, x, w).fill_(1);
    for (int64_t c = 0; c < 3; ++c) images[i][c].narrow(0, y, h).narrow(1, x, w).add_(colours[i][c].item<double>());
  }
  return {images, masks};
}

}  // namespace

int main(int argc, char** argv) try {
  using namespace ember;
  const int steps = argc > 1 ? std::stoi(argv[1]) : 60;
  const Device device = best_device();
  manual_seed(0);

  models::UNet model(3, 2, {.base_channels = 8});
  model.to(device);
  optim::Adam optimizer(model.parameters(), {.lr = 2e-3});

  model.train();
  std::vector<double> losses;
  for (int step = 1; step <= steps; ++step) {
    auto [images, masks] = synthetic_batch(8);
    const Tensor loss = nn::functional::cross_entropy(model(images.to(device)), masks.to(device));
    optimizer.zero_grad();
    loss.backward();
    optimizer.step();
    losses.push_back(loss.item<double>());
    std::printf("step %3d  per-pixel cross-entropy %.4f\n", step, losses.back());
  }

  NoGradGuard no_grad;
  model.eval();
  auto [images, masks] = synthetic_batch(64);
  const Tensor predicted = model(images.to(device)).argmax(1).to(Device(kCPU));
  const double accuracy = predicted.eq(masks).to(kFloat32).mean().item<double>();
  const double intersection = (predicted * masks).sum().item<double>();
  const double union_ = (predicted + masks).clamp(0, 1).sum().item<double>();
  std::printf("on 64 fresh images: pixel accuracy %.1f%%, IoU %.3f\n", 100.0 * accuracy, intersection / union_);
  io::save_safetensors("unet_synthetic.safetensors", model.state_dict().items());

  // The loss fell: the mean of the last few steps below that of the first few.
  const size_t window = std::max<size_t>(1, std::min<size_t>(3, losses.size() / 2));
  double first = 0.0, last = 0.0;
  for (size_t i = 0; i < window; ++i) {
    first += losses[i] / static_cast<double>(window);
    last += losses[losses.size() - 1 - i] / static_cast<double>(window);
  }
  if (!(last < first)) {
    std::fprintf(stderr, "the loss did not fall: %.4f at first, %.4f at last\n", first, last);
    return 1;
  }
} catch (const ember::Error& e) {
  std::cerr << "error: " << e.what() << "\n";
  return 1;
}
