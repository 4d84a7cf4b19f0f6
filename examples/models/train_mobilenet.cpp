// Training ember::models::mobilenet_v2 (torchvision's MobileNetV2, at a quarter of its width) from
// C++ on images it draws itself: 64 pictures of 32x32 in four classes, each class a brighter
// channel or a brighter top half, plus noise, in four batches of 16 taken in turn. Prints the loss as it falls and
// exits 1 if it did not (the loss over all 64 images after training against before), or on an error. The weights are
// saved under torchvision's keys: torchvision.models.mobilenet_v2(num_classes=4, width_mult=0.25) loads them.
//   usage: train_mobilenet [STEPS]   (default 30)
#include <ember/ember.h>
#include <ember/models/mobilenet.h>

#include <cstdio>
#include <iostream>
#include <string>
#include <vector>

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
      image[label].add_(1.0);
    } else {
      image.narrow(1, 0, 16).add_(1.0);
    }
  }
  return {images, labels};
}

}  // namespace

int main(int argc, char** argv) try {
  using namespace ember;
  const int steps = argc > 1 ? std::stoi(argv[1]) : 30;
  if (steps < 1) {
    std::cerr << "error: train_mobilenet needs a positive number of steps\n";
    return 1;
  }
  const Device device = best_device();
  manual_seed(0);

  auto model = models::mobilenet_v2({.num_classes = 4, .width_mult = 0.25});
  model->to(device);
  optim::Adam optimizer(model->parameters(), {.lr = 2e-3});

  model->train();
  // A fixed set of images (fresh batches every step make these ImageNet models, which shrink 32x32
  // to 1x1, learn far more slowly than a few steps show).
  std::vector<std::pair<Tensor, Tensor>> batches;
  for (int i = 0; i < 4; ++i) batches.push_back(synthetic_batch(16));
  // The mean loss over all 64 images, in train mode (batch statistics) as training sees them.
  auto dataset_loss = [&] {
    NoGradGuard no_grad;
    double total = 0.0;
    for (const auto& batch : batches) {
      total += nn::functional::cross_entropy((*model)(batch.first.to(device)), batch.second.to(device)).item<double>();
    }
    return total / static_cast<double>(batches.size());
  };
  const double before = dataset_loss();
  std::printf("loss over the 64 images before training %.4f\n", before);
  for (int step = 1; step <= steps; ++step) {
    const auto& [images, labels] = batches[static_cast<size_t>(step - 1) % batches.size()];
    const Tensor loss = nn::functional::cross_entropy((*model)(images.to(device)), labels.to(device));
    optimizer.zero_grad();
    loss.backward();
    optimizer.step();
    std::printf("step %3d  loss %.4f\n", step, loss.item<double>());
  }
  const double after = dataset_loss();
  std::printf("loss over the 64 images after %d steps %.4f\n", steps, after);
  io::save_safetensors("mobilenet_v2_synthetic.safetensors", model->state_dict().items());
  if (!(after < before)) {
    std::cerr << "error: the loss did not fall\n";
    return 1;
  }
} catch (const ember::Error& e) {
  std::cerr << "error: " << e.what() << "\n";
  return 1;
}
