// The sentiment-analysis tutorial's convolutional classifier (ember::models::TextCNN) in its own
// configuration: one Adam step on a fixed batch of 64 sentences of 200 tokens (BCEWithLogitsLoss
// on one logit, dropout 0.5 in train mode); bench/models/text_cnn_pytorch.py is the same in PyTorch.
#include "ember/models/text_cnn.h"
#include "ember/optim/optimizers.h"
#include "step_registry.h"

EMBER_BENCH_MODEL_STEP(text_cnn,
                       "CNN1d, vocab 20000, embedding 100, 100 filters of 3/4/5, batch 64 of 200 tokens, BCE, Adam") {
  auto model = std::make_shared<ember::models::TextCNN>(ember::models::TextCNNOptions{
      .vocab_size = 20000, .embedding_dim = 100, .n_filters = 100, .filter_sizes = {3, 4, 5}, .output_dim = 1});
  model->to(device);
  model->train();
  auto optimizer = std::make_shared<ember::optim::Adam>(model->parameters());
  const ember::Tensor ids = ember::randint(20000, {64, 200}).to(device);
  const ember::Tensor label = ember::randint(2, {64}).to(ember::kFloat32).to(device);
  return [=] {
    optimizer->zero_grad();
    ember::nn::functional::binary_cross_entropy_with_logits(model->forward(ids).squeeze(1), label).backward();
    optimizer->step();
  };
}
