// A recurrent model trained from C++: an LSTM reads sequences of 5 to 20 numbers and a linear
// layer tells from its last hidden state whether their sum is positive. The sequences of a batch
// have different lengths: they are padded to the longest and packed (nn::utils::rnn), so that
// each sequence's final state is the one after its own last number, not after the padding. The
// data are drawn on the fly, so the example needs no files; it prints the loss as it trains and
// the accuracy on fresh sequences at the end (above 90% within the 400 steps, on any device).
//   usage: sequence_model
#include <ember/ember.h>

#include <cstdio>
#include <iostream>
#include <utility>
#include <vector>

namespace {

constexpr int64_t kBatch = 64, kMinSteps = 5, kMaxSteps = 20, kHidden = 32;

/// A batch of sequences of random lengths, packed, and their labels (1 where the sum is positive).
std::pair<ember::nn::utils::rnn::PackedSequence, ember::Tensor> draw_batch(const ember::Device& device) {
  namespace R = ember::nn::utils::rnn;
  const ember::Tensor lengths = ember::randint(kMinSteps, kMaxSteps + 1, {kBatch});  // int64, on the CPU
  std::vector<ember::Tensor> sequences;
  for (int64_t i = 0; i < kBatch; ++i) sequences.push_back(ember::rand({lengths[i].item<int64_t>(), 1}) * 2 - 1);
  ember::Tensor padded = R::pad_sequence(sequences, /*batch_first=*/true);  // [batch, longest, 1], zeros after each end
  ember::Tensor label = (padded.sum({1, 2}) > 0).to(ember::kInt64);         // the padding adds nothing
  return {R::pack_padded_sequence(padded.to(device), lengths, /*batch_first=*/true, /*enforce_sorted=*/false),
          label.to(device)};
}

}  // namespace

int main() try {
  using namespace ember;
  const Device device = best_device();
  manual_seed(0);

  nn::LSTM lstm(/*input_size=*/1, kHidden);  // batch_first does not apply to a packed batch
  nn::Linear head(kHidden, 2);
  lstm.to(device);
  head.to(device);
  std::vector<Tensor> parameters = lstm.parameters();
  for (const Tensor& p : head.parameters()) parameters.push_back(p);
  optim::Adam optimizer(parameters, {.lr = 1e-2});

  for (int step = 1; step <= 400; ++step) {
    auto [x, label] = draw_batch(device);
    nn::PackedLSTMOutput out = lstm.forward(x);  // no initial state: zeros
    // h_n holds every sequence's state after its own last step, in the batch's order.
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
    correct += head(lstm.forward(x).h_n[0]).argmax(1).eq(label).sum().item<int64_t>();
  }
  std::printf("accuracy on %lld fresh sequences: %.1f%%\n", static_cast<long long>(10 * kBatch),
              100.0 * static_cast<double>(correct) / static_cast<double>(10 * kBatch));
  return 0;
} catch (const std::exception& e) {
  std::cerr << "error: " << e.what() << "\n";
  return 1;
}
