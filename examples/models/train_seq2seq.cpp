// Training ember::models::Seq2Seq (the seq2seq tutorial's attention encoder-decoder, with LSTMs)
// to reverse made-up sentences: sources of 3 to 10 random tokens, packed by their lengths (each
// batch sorted longest first, as the tutorial's iterator sorts it), targets <sos>, the source
// reversed, <eos>, padded. Teacher forcing ratio 0.5 (the tutorial's), Adam, gradient clipping
// at 1, and the tutorial's cross-entropy ignoring the target padding; the loss falls from
// ln(vocabulary) toward zero.
//   usage: train_seq2seq [STEPS]   (default 300)
#include <ember/ember.h>
#include <ember/models/seq2seq.h>

#include <algorithm>
#include <cstdio>
#include <iostream>
#include <string>
#include <vector>

int main(int argc, char** argv) try {
  using namespace ember;
  const int steps = argc > 1 ? std::stoi(argv[1]) : 300;
  const Device device = best_device();
  manual_seed(0);

  // Tokens: 0 <unk>, 1 <pad>, 2 <sos>, 3 <eos>, 4.. words; the same vocabulary on both sides.
  constexpr int64_t kVocab = 20, kPad = 1, kSos = 2, kEos = 3, kBatch = 16, kMinLen = 3, kMaxLen = 10;
  auto make_batch = [&] {
    std::vector<int64_t> lengths(kBatch);
    const Tensor drawn = randint(kMinLen, kMaxLen + 1, {kBatch});
    for (int64_t b = 0; b < kBatch; ++b) lengths[b] = drawn[b].item<int64_t>();
    std::sort(lengths.begin(), lengths.end(), std::greater<>());
    const int64_t src_len = lengths[0], trg_len = lengths[0] + 2;
    const Tensor words = randint(4, kVocab, {kBatch, kMaxLen});
    std::vector<int64_t> src(src_len * kBatch, kPad), trg(trg_len * kBatch, kPad);
    for (int64_t b = 0; b < kBatch; ++b) {
      trg[b] = kSos;
      for (int64_t t = 0; t < lengths[b]; ++t) {
        const int64_t word = words[b][t].item<int64_t>();
        src[t * kBatch + b] = word;
        trg[(lengths[b] - t) * kBatch + b] = word;  // reversed, after <sos>
      }
      trg[(lengths[b] + 1) * kBatch + b] = kEos;
    }
    return std::tuple{tensor(src).view({src_len, kBatch}).to(device), tensor(lengths),
                      tensor(trg).view({trg_len, kBatch}).to(device)};
  };

  auto model = std::make_shared<models::Seq2Seq>(models::Seq2SeqOptions{.input_dim = kVocab,
                                                                        .output_dim = kVocab,
                                                                        .enc_emb_dim = 32,
                                                                        .dec_emb_dim = 32,
                                                                        .enc_hid_dim = 64,
                                                                        .dec_hid_dim = 64,
                                                                        .enc_dropout = 0.1,
                                                                        .dec_dropout = 0.1,
                                                                        .src_pad_idx = kPad});
  models::init_weights(*model);
  model->to(device);
  optim::Adam optimizer(model->parameters(), {.lr = 3e-3});
  model->train();
  std::vector<double> losses;
  for (int step = 0; step < steps; ++step) {
    auto [src, src_len, trg] = make_batch();
    const Tensor outputs = model->forward(src, src_len, trg, 0.5);
    const int64_t trg_len = outputs.size(0);
    const Tensor loss = nn::functional::cross_entropy(outputs.narrow(0, 1, trg_len - 1).reshape({-1, kVocab}),
                                                      trg.narrow(0, 1, trg_len - 1).reshape({-1}), nn::Reduction::Mean,
                                                      0.0, Tensor(), /*ignore_index=*/kPad);
    optimizer.zero_grad();
    loss.backward();
    optim::clip_grad_norm_(model->parameters(), 1.0);
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
