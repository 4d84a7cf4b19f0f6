// nanoGPT's GPT (ember::models::GPT) in a small configuration: one AdamW step on a fixed batch of
// token sequences (next-token cross-entropy); bench/models/gpt2_pytorch.py is the same in PyTorch.
#include "ember/models/gpt2.h"
#include "ember/optim/optimizers.h"
#include "step_registry.h"

EMBER_BENCH_MODEL_STEP(gpt2, "GPT, 4 layers, 4 heads, 256 wide, vocab 4096, batch 8 of 128 tokens, AdamW") {
  auto model = std::make_shared<ember::models::GPT>(
      ember::models::GPTConfig{.block_size = 128, .vocab_size = 4096, .n_layer = 4, .n_head = 4, .n_embd = 256});
  model->to(device);
  model->train();
  auto optimizer = std::make_shared<ember::optim::AdamW>(model->parameters(), ember::optim::AdamWOptions{.lr = 3e-4});
  const ember::Tensor idx = ember::randint(4096, {8, 128}).to(device);
  const ember::Tensor targets = ember::randint(4096, {8, 128}).to(device);
  return [=] {
    optimizer->zero_grad();
    model->forward(idx, targets).loss.backward();
    optimizer->step();
  };
}
