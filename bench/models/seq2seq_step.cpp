// The seq2seq tutorial's attention encoder-decoder with LSTMs (ember::models::Seq2Seq) at its
// hidden sizes: one Adam step (with the tutorial's gradient clipping at 1) on a fixed batch of 32
// sources of 30 to 11 tokens (sorted, packed) and targets of 30 (some padded), teacher forcing at
// every step, dropout 0.5, cross-entropy ignoring the target padding; bench/models/
// seq2seq_pytorch.py is the same in PyTorch.
#include <vector>

#include "ember/models/seq2seq.h"
#include "ember/optim/optimizers.h"
#include "step_registry.h"

EMBER_BENCH_MODEL_STEP(seq2seq,
                       "LSTM encoder-decoder with attention, vocab 5000/5000, emb 256, hidden 512, batch 32, "
                       "source 30..11 and target 30 tokens, Adam") {
  using namespace ember;
  auto model = std::make_shared<models::Seq2Seq>(models::Seq2SeqOptions{.input_dim = 5000, .output_dim = 5000});
  models::init_weights(*model);
  model->to(device);
  model->train();
  auto optimizer = std::make_shared<optim::Adam>(model->parameters());
  constexpr int64_t kBatch = 32, kLen = 30, kPad = 1;
  // Source b has 30 - b * 19 / 31 tokens (30 down to 11), the rest padding; target b has
  // 30 - b / 2 (30 down to 15).
  std::vector<int64_t> lengths(kBatch);
  Tensor src = randint(4, 5000, {kLen, kBatch}), trg = randint(4, 5000, {kLen, kBatch});
  for (int64_t b = 0; b < kBatch; ++b) {
    lengths[b] = kLen - b * 19 / (kBatch - 1);
    if (lengths[b] < kLen) src.narrow(0, lengths[b], kLen - lengths[b]).select(1, b).fill_(kPad);
    const int64_t target = kLen - b / 2;
    if (target < kLen) trg.narrow(0, target, kLen - target).select(1, b).fill_(kPad);
  }
  trg.select(0, 0).fill_(2);  // <sos>
  src = src.to(device);
  trg = trg.to(device);
  const Tensor src_len = tensor(lengths);
  return [=] {
    optimizer->zero_grad();
    const Tensor outputs = model->forward(src, src_len, trg, 1.0);
    nn::functional::cross_entropy(outputs.narrow(0, 1, kLen - 1).reshape({-1, 5000}),
                                  trg.narrow(0, 1, kLen - 1).reshape({-1}), nn::Reduction::Mean, 0.0, Tensor(),
                                  /*ignore_index=*/kPad)
        .backward();
    optim::clip_grad_norm_(model->parameters(), 1.0);
    optimizer->step();
  };
}
