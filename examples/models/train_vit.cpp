// Training ember::models::VisionTransformer (torchvision's ViT) from C++ on 32x32 pictures it
// draws itself: four classes, a red, green, blue or white square at a random place on a noisy
// field. A small ViT (patch 8: 16 patches and a class token, 2 encoder blocks, hidden 64) learns
// them with AdamW in a few dozen steps; the state_dict has torchvision's keys (class_token,
// conv_proj.weight, encoder.layers.encoder_layer_0.self_attention.in_proj_weight, ...), so
// torchvision.models.VisionTransformer(32, 8, 2, 4, 64, 128, num_classes=4) loads it.
//   usage: train_vit [STEPS]   (default 60)
#include <ember/ember.h>
#include <ember/models/vit.h>

#include <algorithm>
#include <cstdio>
#include <iostream>
#include <utility>
#include <vector>

namespace {

/// `n` pictures [n, 3, 32, 32] and their classes [n]: a 12x12 square at a random place on a
/// noisy field, red, green, blue or white for classes 0 to 3.
std::pair<ember::Tensor, ember::Tensor> coloured_squares(int64_t n) {
  using namespace ember;
  Tensor images = randn({n, 3, 32, 32}) * 0.2;
  const Tensor labels = randint(0, 4, {n});
  const Tensor corners = randint(0, 21, {n, 2});
  NoGradGuard no_grad;
  for (int64_t i = 0; i < n; ++i) {
    const int64_t label = labels[i].item<int64_t>();
    const int64_t top = corners[i][0].item<int64_t>(), left = corners[i][1].item<int64_t>();
    for (int64_t c = 0; c < 3; ++c) {
      if (label == 3 || label == c) images[i][c].narrow(0, top, 12).narrow(1, left, 12).add_(1.0);
    }
  }
  return {images, labels};
}

}  // namespace

int main(int argc, char** argv) try {
  using namespace ember;
  const int steps = argc > 1 ? std::stoi(argv[1]) : 60;
  const Device device = best_device();
  manual_seed(0);

  // image 32, patch 8, 2 layers, 4 heads, hidden 64, mlp 128.
  auto model = std::make_shared<models::VisionTransformer>(32, 8, 2, 4, 64, 128,
                                                           models::VisionTransformerOptions{.num_classes = 4});
  model->to(device);
  int64_t parameters = 0;
  for (const Tensor& p : model->parameters()) parameters += p.numel();
  std::printf("ViT: %lld parameters, %lld tokens per image\n", static_cast<long long>(parameters),
              static_cast<long long>(model->seq_length));
  optim::AdamW optimizer(model->parameters(), {.lr = 3e-3, .weight_decay = 0.05});

  model->train();
  std::vector<double> losses;
  for (int step = 0; step < steps; ++step) {
    const auto [images, labels] = coloured_squares(32);
    const Tensor logits = (*model)(images.to(device));
    const Tensor loss = nn::functional::cross_entropy(logits, labels.to(device));
    optimizer.zero_grad();
    loss.backward();
    optimizer.step();
    losses.push_back(loss.item<double>());
    if (step % 10 == 0 || step == steps - 1) {
      const double accuracy = logits.argmax(1).eq(labels.to(device)).to(kFloat32).mean().item<double>();
      std::printf("step %4d  loss %.4f  batch accuracy %.2f\n", step, losses.back(), accuracy);
    }
  }

  model->eval();
  {
    NoGradGuard no_grad;
    const auto [images, labels] = coloured_squares(128);
    const double accuracy =
        (*model)(images.to(device)).argmax(1).eq(labels.to(device)).to(kFloat32).mean().item<double>();
    std::printf("accuracy on 128 new pictures: %.2f\n", accuracy);
  }
  io::save_safetensors("vit_squares.safetensors", model->state_dict().items());

  const size_t window = std::max<size_t>(1, std::min<size_t>(5, losses.size() / 2));
  double first = 0.0, last = 0.0;
  for (size_t i = 0; i < window; ++i) {
    first += losses[i] / static_cast<double>(window);
    last += losses[losses.size() - 1 - i] / static_cast<double>(window);
  }
  std::printf("mean loss of the first %zu steps %.4f, of the last %zu %.4f\n", window, first, window, last);
  if (!(last < first)) {
    std::fprintf(stderr, "the loss did not fall\n");
    return 1;
  }
  return 0;
} catch (const ember::Error& e) {
  std::cerr << "error: " << e.what() << "\n";
  return 1;
}
