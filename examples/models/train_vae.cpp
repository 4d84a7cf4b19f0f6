// Training ember::models::VAE (pytorch/examples' VAE, 784 -> 400 -> 20) from C++ on 28x28 binary
// pictures it draws itself: a lit rectangle of random position and size on a dark field. The
// loss (the example's: binary cross-entropy summed over pixels plus the KL divergence, reported
// per image as the example does) falls within a few Adam steps; then the decoder draws new
// pictures from the prior. The state_dict has the example's keys (fc1.weight, ..., fc4.bias).
//   usage: train_vae [STEPS]   (default 300)
#include <ember/ember.h>
#include <ember/models/vae.h>

#include <algorithm>
#include <cstdio>
#include <iostream>
#include <string>
#include <vector>

namespace {

/// `n` pictures [n, 1, 28, 28] with values 0 and 1: each a lit rectangle on a dark field.
ember::Tensor rectangles(int64_t n) {
  using namespace ember;
  Tensor images = zeros({n, 1, 28, 28});
  const Tensor corners = randint(0, 18, {n, 2});
  const Tensor sizes = randint(6, 11, {n, 2});
  for (int64_t i = 0; i < n; ++i) {
    images[i][0]
        .narrow(0, corners[i][0].item<int64_t>(), sizes[i][0].item<int64_t>())
        .narrow(1, corners[i][1].item<int64_t>(), sizes[i][1].item<int64_t>())
        .fill_(1.0);
  }
  return images;
}

}  // namespace

int main(int argc, char** argv) try {
  using namespace ember;
  const int steps = argc > 1 ? std::stoi(argv[1]) : 300;
  const Device device = best_device();
  manual_seed(1);  // the example's default --seed

  auto model = std::make_shared<models::VAE>();
  model->to(device);
  optim::Adam optimizer(model->parameters(), {.lr = 1e-3});  // the example's optimizer
  const int64_t batch_size = 64;

  model->train();
  std::vector<double> losses;
  for (int step = 0; step < steps; ++step) {
    const Tensor data = rectangles(batch_size).to(device);
    optimizer.zero_grad();
    const auto [recon, mu, logvar] = model->forward(data, Tensor());
    const Tensor loss = models::vae_loss(recon, data, mu, logvar);
    loss.backward();
    optimizer.step();
    losses.push_back(loss.item<double>() / static_cast<double>(batch_size));
    if (step % 25 == 0 || step == steps - 1) std::printf("step %4d  loss per image %.2f\n", step, losses.back());
  }

  // A picture from the prior: the decoder on z ~ N(0, 1), printed with four shades (every other row).
  {
    NoGradGuard no_grad;
    model->eval();
    const Tensor sample = model->decode(randn({1, 20}).to(device)).cpu().view({28, 28});
    for (int64_t r = 0; r < 28; r += 2) {
      std::string row;
      for (int64_t c = 0; c < 28; ++c) {
        const double value = sample[r][c].item<double>();
        row += value > 0.6 ? '#' : value > 0.35 ? '+' : value > 0.15 ? '.' : ' ';
      }
      std::printf("%s\n", row.c_str());
    }
  }
  io::save_safetensors("vae_rectangles.safetensors", model->state_dict().items());

  const size_t window = std::max<size_t>(1, std::min<size_t>(5, losses.size() / 2));
  double first = 0.0, last = 0.0;
  for (size_t i = 0; i < window; ++i) {
    first += losses[i] / static_cast<double>(window);
    last += losses[losses.size() - 1 - i] / static_cast<double>(window);
  }
  std::printf("mean loss of the first %zu steps %.2f, of the last %zu %.2f\n", window, first, window, last);
  if (!(last < first)) {
    std::fprintf(stderr, "the loss did not fall\n");
    return 1;
  }
  return 0;
} catch (const ember::Error& e) {
  std::cerr << "error: " << e.what() << "\n";
  return 1;
}
