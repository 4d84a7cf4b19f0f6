// ember::models::GPT against nanoGPT's model.py (re-written in tools/gen_models_golden.py):
// state_dict keys, order and shapes (both tied keys), named_parameters (the tied weight once),
// and, in float64 with pattern() weights (n_layer 2, n_head 2, n_embd 32, vocab 64, block 16),
// logits, the loss (one target ignored) and every parameter's gradient to 1e-10, in train mode
// (dropout 0) and eval mode; the inference path (last position only), nanoGPT's
// initialisation, its message for a too-long sequence, generate, and AdamW steps that lower
// the loss.
#include <gtest/gtest.h>

#include <cmath>
#include <string>
#include <vector>

#include "ember/ember.h"
#include "ember/io/safetensors.h"
#include "ember/models/gpt2.h"
#include "models/model_pattern.h"
#include "support/error_of.h"

namespace {

using namespace ember;
using ember_models_test::fill_state;
using ember_models_test::keys_and_shapes;
using ember_models_test::relative_error;
using ember_models_test::split;
using ember_test::error_of;

const io::SafetensorsData& golden() {
  static const io::SafetensorsData data =
      io::load_safetensors(EMBER_SOURCE_DIR "/tests/models/golden/models_gpt2_golden.safetensors");
  return data;
}

const models::GPTConfig kSmall{.block_size = 16, .vocab_size = 64, .n_layer = 2, .n_head = 2, .n_embd = 32};

TEST(ModelsGPT2, StateDictKeysAndParametersAreNanoGPTs) {
  manual_seed(0);
  auto model = std::make_shared<models::GPT>(kSmall);
  EXPECT_EQ(keys_and_shapes(model->state_dict()), split(golden().metadata.at("keys"), ';'));
  std::vector<std::string> names;
  for (const auto& [key, p] : model->named_parameters()) names.push_back(key);
  EXPECT_EQ(names, split(golden().metadata.at("param_keys"), ';'));
  // One tensor under two names.
  const auto state = model->state_dict();
  EXPECT_EQ(state.at("lm_head.weight").data_ptr(), state.at("transformer.wte.weight").data_ptr());
  EXPECT_EQ(model->lm_head->name(), "Linear");
  EXPECT_EQ(model->transformer->name(), "ModuleDict");
  EXPECT_EQ(model->get_submodule("transformer.h.1.attn")->name(), "CausalSelfAttention");
  // Without biases: no bias keys, as nanoGPT's bias=False.
  auto no_bias = std::make_shared<models::GPT>(
      models::GPTConfig{.block_size = 8, .vocab_size = 10, .n_layer = 1, .n_head = 2, .n_embd = 4, .bias = false});
  for (const auto& [key, value] : no_bias->state_dict()) EXPECT_EQ(key.find("bias"), std::string::npos) << key;
  EXPECT_EQ(no_bias->state_dict().size(), 10u);  // wte, wpe, 6 per block, ln_f, lm_head
}

TEST(ModelsGPT2, MatchesNanoGPTInFloat64) {
  const auto& g = golden();
  auto model = std::make_shared<models::GPT>(kSmall);
  model->to(kFloat64);
  fill_state(*model);
  for (const bool training : {true, false}) {
    SCOPED_TRACE(training ? "train" : "eval");
    model->train(training);
    model->zero_grad();
    const auto [logits, loss] = model->forward(g.at("idx"), g.at("targets"));
    loss.backward();
    EXPECT_LT(relative_error(logits, g.at("logits")), 1e-10);
    EXPECT_LT(relative_error(loss, g.at("loss")), 1e-12);
    const auto parameters = model->named_parameters();
    const auto grads = ember_models_test::unpack(g.at("grads"), parameters);
    for (size_t i = 0; i < parameters.size(); ++i) {
      const auto& [key, p] = parameters[i];
      ASSERT_TRUE(p.grad().defined()) << key;
      EXPECT_LT(relative_error(p.grad(), grads[i]), 1e-10) << key;
    }
    EXPECT_EQ(parameters.size(), 28u);  // wte (= lm_head), wpe, 12 per block, ln_f's 2
  }
  NoGradGuard no_grad;
  const Tensor last = model->forward(g.at("idx").narrow(1, 0, 9), Tensor()).logits;
  EXPECT_EQ(last.sizes().vec(), (std::vector<int64_t>{2, 1, 64}));
  EXPECT_LT(relative_error(last, g.at("logits_last")), 1e-10);
}

TEST(ModelsGPT2, InitialDrawsAreNanoGPTsFromTheSameSeed) {
  manual_seed(0);
  ember_models_test::expect_init_summary(models::GPT(kSmall), golden(), "init");
}

TEST(ModelsGPT2, InitialisationIsNanoGPTs) {
  manual_seed(0);
  const models::GPTConfig config{.block_size = 64, .vocab_size = 256, .n_layer = 4, .n_head = 4, .n_embd = 64};
  auto model = std::make_shared<models::GPT>(config);
  auto std_of = [&](const std::string& key) { return model->get_parameter(key).std().item<double>(); };
  EXPECT_NEAR(std_of("transformer.wte.weight"), 0.02, 0.002);
  EXPECT_NEAR(std_of("transformer.h.0.attn.c_attn.weight"), 0.02, 0.002);
  EXPECT_NEAR(std_of("transformer.h.3.attn.c_proj.weight"), 0.02 / std::sqrt(8.0), 0.001);
  EXPECT_NEAR(std_of("transformer.h.2.mlp.c_proj.weight"), 0.02 / std::sqrt(8.0), 0.001);
  EXPECT_EQ(model->get_parameter("transformer.h.0.mlp.c_fc.bias").abs().sum().item<double>(), 0.0);
  EXPECT_EQ(model->get_parameter("transformer.ln_f.weight").sum().item<double>(), 64.0);
  // nanoGPT's get_num_params: the tied weight once, without the position embedding.
  const int64_t per_block = 2 * 2 * 64 + (64 * 192 + 192) + (64 * 64 + 64) + (64 * 256 + 256) + (256 * 64 + 64);
  EXPECT_EQ(model->get_num_params(), 256 * 64 + 4 * per_block + 2 * 64);
  EXPECT_EQ(model->get_num_params(false), model->get_num_params() + 64 * 64);
}

TEST(ModelsGPT2, MessagesAndGenerate) {
  manual_seed(0);
  auto model = std::make_shared<models::GPT>(kSmall);
  const Tensor idx = randint(0, 64, {1, 17});
  EXPECT_EQ(error_of([&] { model->forward(idx, Tensor()); }),
            "Cannot forward sequence of length 17, block size is only 16");
  EXPECT_EQ(error_of([] { models::GPT(models::GPTConfig{.n_head = 5, .n_embd = 32}); }),
            "GPT: n_embd must be a multiple of n_head, got n_embd=32, n_head=5");
  model->eval();
  const Tensor out = model->generate(idx.narrow(1, 0, 12), 10, 0.8, 5);
  EXPECT_EQ(out.sizes().vec(), (std::vector<int64_t>{1, 22}));
  EXPECT_EQ(relative_error(out.narrow(1, 0, 12), idx.narrow(1, 0, 12)), 0.0);
  EXPECT_FALSE(out.requires_grad());
}

TEST(ModelsGPT2, AdamWStepsLowerTheLoss) {
  manual_seed(0);
  auto model = std::make_shared<models::GPT>(
      models::GPTConfig{.block_size = 16, .vocab_size = 16, .n_layer = 1, .n_head = 2, .n_embd = 16, .dropout = 0.1});
  // A periodic sequence: the next token is (token + 3) mod 16.
  std::vector<int64_t> tokens(17 * 4);
  for (size_t i = 0; i < tokens.size(); ++i) tokens[i] = static_cast<int64_t>((i * 3) % 16);
  const Tensor data = tensor(tokens).view({4, 17});
  // nanoGPT views the targets, so they must be contiguous (as its get_batch stacks them).
  const Tensor x = data.narrow(1, 0, 16).contiguous(), y = data.narrow(1, 1, 16).contiguous();
  optim::AdamW optimizer(model->parameters(), {.lr = 1e-2});
  double first = 0.0, last = 0.0;
  for (int step = 0; step < 25; ++step) {
    const Tensor loss = model->forward(x, y).loss;
    if (step == 0) first = loss.item<double>();
    last = loss.item<double>();
    optimizer.zero_grad();
    loss.backward();
    optimizer.step();
  }
  EXPECT_LT(last, 0.5 * first) << "first " << first;  // 2.79 to 0.78 with seed 0
}

}  // namespace
