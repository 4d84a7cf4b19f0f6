// A recurrent model trained from C++: an LSTM reads sequences of 20 numbers and a linear layer
// tells from its last hidden state whether their sum is positive. The data are drawn on the fly,
// so the example needs no files; it prints the loss as it trains and the accuracy on fresh
// sequences at the end (above 90% within the 400 steps, on any device).
//   usage: sequence_model
#include <ember/ember.h>

#include <cstdio>
#include <iostream>

namespace {

constexpr int64_t kBatch = 64, kSteps = 20, kHidden = 32;

/// A batch of sequences [batch, steps, 1] and their labels (1 where the sum is positive).
std::pair<ember::Tensor, ember::Tensor> draw_batch(const ember::Device& device) {
  ember::Tensor x = ember::rand({kBatch, kSteps, 1}) * 2 - 1;
  ember::Tensor label = (x.sum({1, 2}) > 0).to(ember::kInt64);
  return {x.to(device), label.to(device)};
}

}  // namespace

int main() try {
  using namespace ember;
  const Device device = best_device();
  manual_seed(0);

  nn::LSTM lstm(/*input_size=*/1, kHidden, {.batch_first = true});
  nn::Linear head(kHidden, 2);
  lstm.to(device);
  head.to(device);
  std::vector<Tensor> parameters = lstm.parameters();
  for (const Tensor& p : head.parameters()) parameters.push_back(p);
  optim::Adam optimizer(parameters, {.lr = 1e-2});

  for (int step = 1; step <= 400; ++step) {
    auto [x, label] = draw_batch(device);
    nn::LSTMOutput out = lstm.forward(x, Tensor(), Tensor());  // no initial state: zeros
    Tensor loss = nn::functional::cross_entropy(head(out.h_n[0]), label);
    optimizer.zero_grad();
    loss.backward();
    optimizer.step();
    if (step % 100 == 0) std::printf("step %3d  loss %.4f\n", step, loss.item<double>());
  }

  NoGradGuard no_grad;
  int64_t correct = 0;
  for (int i = 0; i < 10; ++i) {
    auto [x, label] = draw_batch(device);
    correct += head(lstm.forward(x, Tensor(), Tensor()).h_n[0]).argmax(1).eq(label).sum().item<int64_t>();
  }
  std::printf("accuracy on %lld fresh sequences: %.1f%%\n", static_cast<long long>(10 * kBatch),
              100.0 * static_cast<double>(correct) / static_cast<double>(10 * kBatch));
  return 0;
} catch (const std::exception& e) {
  std::cerr << "error: " << e.what() << "\n";
  return 1;
}
