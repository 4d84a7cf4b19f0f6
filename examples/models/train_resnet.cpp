// Training ember::models::resnet18 (torchvision's ResNet-18) from C++ on images it draws itself:
// four classes of 32x32 pictures, each class a brighter channel or a brighter half, plus noise.
// The loss falls within a few SGD steps; the weights are saved under torchvision's keys, so
// torchvision.models.resnet18(num_classes=4).load_state_dict(...) reads them.
//   usage: train_resnet [STEPS]   (default 40)
#include <ember/ember.h>
#include <ember/models/resnet.h>

#include <cstdio>
#include <iostream>
#include <string>

namespace {

/// A batch of `n` images [n, 3, 32, 32] and their labels: class c brightens channel c (c < 3)
/// or the top half of every channel (c = 3).
std::pair<ember::Tensor, ember::Tensor> synthetic_batch(int64_t n) {
  using namespace ember;
  const Tensor labels = randint(0, 4, {n});
  Tensor images = randn({n, 3, 32, 32});
  for (int64_t i = 0; i < n; ++i) {
    const int64_t label = labels[i].item<int64_t>();
    Tensor image = images[i];
    if (label < 3) {
      image[label].add_(0.5);
    } else {
      image.narrow(1, 0, 16).add_(0.5);
    }
  }
  return {images, labels};
}

}  // namespace

int main(int argc, char** argv) try {
  using namespace ember;
  const int steps = argc > 1 ? std::stoi(argv[1]) : 40;
  const Device device = best_device();
  manual_seed(0);

  auto model = models::resnet18({.num_classes = 4});
  model->to(device);
  optim::SGD optimizer(model->parameters(), {.lr = 0.02, .momentum = 0.9, .weight_decay = 1e-4});

  model->train();
  for (int step = 1; step <= steps; ++step) {
    auto [images, labels] = synthetic_batch(32);
    const Tensor logits = (*model)(images.to(device));
    const Tensor loss = nn::functional::cross_entropy(logits, labels.to(device));
    optimizer.zero_grad();
    loss.backward();
    optimizer.step();
    const double accuracy = logits.argmax(1).eq(labels.to(device)).to(kFloat32).mean().item<double>();
    std::printf("step %3d  loss %.4f  batch accuracy %.0f%%\n", step, loss.item<double>(), 100.0 * accuracy);
  }

  NoGradGuard no_grad;
  model->eval();
  auto [images, labels] = synthetic_batch(256);
  const double accuracy =
      (*model)(images.to(device)).argmax(1).eq(labels.to(device)).to(kFloat32).mean().item<double>();
  std::printf("eval accuracy on 256 fresh images: %.1f%%\n", 100.0 * accuracy);
  io::save_safetensors("resnet18_synthetic.safetensors", model->state_dict().items());
} catch (const ember::Error& e) {
  std::cerr << "error: " << e.what() << "\n";
  return 1;
}
