// Meta's LLaMA decoder (ember::models::llama::Transformer) in a small configuration with
// grouped-query attention: one AdamW step of next-token cross-entropy on a fixed batch;
// bench/models/llama_pytorch.py is the same step with tools/gen_models_llama_golden.py's reference.
#include "ember/models/llama.h"
#include "ember/nn/functional.h"
#include "ember/optim/optimizers.h"
#include "step_registry.h"

EMBER_BENCH_MODEL_STEP(llama,
                       "LLaMA: dim 256, 4 layers, 8 heads, 4 kv heads, vocab 4096, batch 8 of 128 tokens, AdamW") {
  const ember::models::llama::ModelArgs args{
      .dim = 256, .n_layers = 4, .n_heads = 8, .n_kv_heads = 4, .vocab_size = 4096, .max_seq_len = 128};
  auto model = std::make_shared<ember::models::llama::Transformer>(args);
  model->to(device);
  model->train();
  auto optimizer = std::make_shared<ember::optim::AdamW>(model->parameters(), ember::optim::AdamWOptions{.lr = 3e-4});
  const ember::Tensor tokens = ember::randint(4096, {8, 128}).to(device);
  const ember::Tensor targets = ember::randint(4096, {8 * 128}).to(device);
  return [=] {
    optimizer->zero_grad();
    const ember::Tensor logits = (*model)(tokens);
    ember::nn::functional::cross_entropy(logits.view({-1, 4096}), targets).backward();
    optimizer->step();
  };
}
