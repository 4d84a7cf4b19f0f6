// Training ember::models::TextCNN (the sentiment-analysis tutorial's convolutional classifier)
// on made-up reviews: sentences of 8 to 24 random filler words in which a few "positive" or
// "negative" words are planted; the label says which kind is in the majority. The loss
// (BCEWithLogitsLoss on one logit, Adam, as the tutorial) falls from ln 2 toward zero, and the
// state_dict has the tutorial's keys (embedding.weight, convs.<i>.*, fc.*).
//   usage: train_text_cnn [STEPS]   (default 150)
#include <ember/ember.h>
#include <ember/models/text_cnn.h>

#include <algorithm>
#include <cstdio>
#include <iostream>
#include <string>
#include <vector>

int main(int argc, char** argv) try {
  using namespace ember;
  const int steps = argc > 1 ? std::stoi(argv[1]) : 150;
  const Device device = best_device();
  manual_seed(0);

  // Tokens: 0 <unk>, 1 <pad>, 2..9 positive words, 10..17 negative words, 18.. filler.
  constexpr int64_t kVocab = 400, kPad = 1, kBatch = 32, kMaxLen = 24;
  auto make_batch = [&] {
    const Tensor lengths = randint(8, kMaxLen + 1, {kBatch});
    const Tensor filler = randint(18, kVocab, {kBatch, kMaxLen});
    const Tensor planted = randint(0, 8, {kBatch, 5});
    const Tensor majority = randint(0, 2, {kBatch});
    std::vector<int64_t> ids(kBatch * kMaxLen);
    std::vector<double> labels(kBatch);
    for (int64_t b = 0; b < kBatch; ++b) {
      const int64_t length = lengths[b].item<int64_t>();
      const bool positive = majority[b].item<int64_t>() == 1;
      labels[b] = positive ? 1.0 : 0.0;
      for (int64_t t = 0; t < kMaxLen; ++t) ids[b * kMaxLen + t] = t < length ? filler[b][t].item<int64_t>() : kPad;
      // Three words of the majority kind and one of the other, at the first positions.
      for (int64_t k = 0; k < 4; ++k) {
        const bool kind = k < 3 ? positive : !positive;
        ids[b * kMaxLen + k * 2] = (kind ? 2 : 10) + planted[b][k].item<int64_t>();
      }
    }
    return std::pair{tensor(ids).view({kBatch, kMaxLen}).to(device), tensor(labels).to(device)};
  };

  auto model = std::make_shared<models::TextCNN>(models::TextCNNOptions{.vocab_size = kVocab,
                                                                        .embedding_dim = 32,
                                                                        .n_filters = 16,
                                                                        .filter_sizes = {3, 4, 5},
                                                                        .output_dim = 1,
                                                                        .dropout = 0.5,
                                                                        .pad_index = kPad});
  model->to(device);
  optim::Adam optimizer(model->parameters(), {.lr = 3e-3});
  model->train();
  std::vector<double> losses;
  for (int step = 0; step < steps; ++step) {
    auto [ids, label] = make_batch();
    const Tensor loss = nn::functional::binary_cross_entropy_with_logits(model->forward(ids).squeeze(1), label);
    optimizer.zero_grad();
    loss.backward();
    optimizer.step();
    losses.push_back(loss.item<double>());
    if (step % 25 == 0 || step == steps - 1) std::printf("step %4d  loss %.4f\n", step, losses.back());
  }
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
