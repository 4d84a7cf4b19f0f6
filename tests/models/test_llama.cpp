// ember::models::llama::Transformer against Meta's llama/model.py (re-written with torch.nn layers
// in tools/gen_models_llama_golden.py): state_dict keys, order and shapes; in float64 with
// pattern() weights and grouped-query attention (dim 24, 2 layers, 4 heads, 2 key/value heads,
// vocab 48, ffn_dim_multiplier 0.9) the logits, the cross-entropy loss and every parameter's
// gradient to 1e-10, and the logits in float32; the hidden-size rule of the released shapes;
// initial draws from manual_seed(0); finite differences through RMSNorm and the rotary
// embedding; messages; greedy generation; and AdamW steps that lower the loss.
#include <gtest/gtest.h>

#include <cmath>
#include <string>
#include <vector>

#include "ember/ember.h"
#include "ember/io/safetensors.h"
#include "ember/models/llama.h"
#include "models/model_pattern.h"
#include "support/error_of.h"
#include "support/gradcheck.h"

namespace {

using namespace ember;
using ember_models_test::fill_state;
using ember_models_test::keys_and_shapes;
using ember_models_test::relative_error;
using ember_models_test::split;
using ember_test::error_of;
namespace F = ember::nn::functional;
namespace llama = ember::models::llama;

const io::SafetensorsData& golden() {
  static const io::SafetensorsData data =
      io::load_safetensors(EMBER_SOURCE_DIR "/tests/models/golden/models_llama_golden.safetensors");
  return data;
}

const llama::ModelArgs kSmall{.dim = 24,
                              .n_layers = 2,
                              .n_heads = 4,
                              .n_kv_heads = 2,
                              .vocab_size = 48,
                              .multiple_of = 16,
                              .ffn_dim_multiplier = 0.9,
                              .norm_eps = 1e-5,
                              .max_seq_len = 16};

std::vector<std::string> names_of(const std::vector<std::string>& keys_and_shapes) {
  std::vector<std::string> out;
  for (const std::string& item : keys_and_shapes) out.push_back(item.substr(0, item.find(':')));
  return out;
}

TEST(ModelsLlama, StateDictKeysAreTheReferences) {
  EXPECT_EQ(keys_and_shapes(llama::Transformer(kSmall).state_dict()), split(golden().metadata.at("keys"), ';'));
  const llama::ModelArgs gqa{.dim = 64,
                             .n_layers = 4,
                             .n_heads = 8,
                             .n_kv_heads = 2,
                             .vocab_size = 100,
                             .multiple_of = 32,
                             .ffn_dim_multiplier = 1.5};
  EXPECT_EQ(keys_and_shapes(llama::Transformer(gqa).state_dict()), split(golden().metadata.at("keys.gqa"), ';'));
  // ModelArgs' defaults (Llama 2 7B, 6.7e9 parameters, not built here): the names from a narrow
  // model of the same depth, the SwiGLU width from the rule.
  const auto reference = split(golden().metadata.at("keys.default_shape"), ';');
  EXPECT_EQ(names_of(keys_and_shapes(llama::Transformer({.dim = 8, .n_heads = 4, .vocab_size = 4}).state_dict())),
            names_of(reference));
  EXPECT_EQ(reference[5], "layers.0.feed_forward.w1.weight:11008,4096");
  EXPECT_EQ(llama::FeedForward::hidden_size(4 * 4096, 256, std::nullopt), 11008);
  EXPECT_EQ(llama::FeedForward::hidden_size(4 * 5120, 256, std::nullopt), 13824);  // 13B
  EXPECT_EQ(llama::FeedForward::hidden_size(4 * 8192, 4096, 1.3), 28672);          // 70B
  EXPECT_EQ(llama::Transformer(kSmall).get_submodule("layers.1.feed_forward")->name(), "FeedForward");
  EXPECT_EQ(llama::Transformer(kSmall).get_submodule("norm")->name(), "RMSNorm");
}

TEST(ModelsLlama, MatchesTheReferenceInFloat64WithGroupedQueryAttention) {
  const auto& g = golden();
  llama::Transformer model(kSmall);
  model.to(kFloat64);
  fill_state(model);
  model.train();
  const Tensor logits = model(g.at("tokens"));
  const Tensor loss = F::cross_entropy(logits.view({-1, logits.size(-1)}), g.at("targets").view({-1}));
  loss.backward();
  EXPECT_LT(relative_error(logits, g.at("logits")), 1e-10);
  EXPECT_LT(relative_error(loss, g.at("loss")), 1e-12);
  const auto parameters = model.named_parameters();
  const auto grads = ember_models_test::unpack(g.at("grads"), parameters);
  for (size_t i = 0; i < parameters.size(); ++i) {
    const auto& [key, p] = parameters[i];
    ASSERT_TRUE(p.grad().defined()) << key;
    EXPECT_LT(relative_error(p.grad(), grads[i]), 1e-10) << key;
  }
  EXPECT_EQ(parameters.size(), 21u);  // tok_embeddings, 9 per block, norm, output
  // In float32 (the reference's dtype): to float32's precision.
  model.to(kFloat32);
  NoGradGuard no_grad;
  const Tensor logits32 = model(g.at("tokens"));
  EXPECT_EQ(logits32.dtype(), kFloat32);
  EXPECT_LT(relative_error(logits32, g.at("logits32")), 2e-6);
}

TEST(ModelsLlama, InitialDrawsAreTorchNnsFromTheSameSeed) {
  manual_seed(0);
  ember_models_test::expect_init_summary(llama::Transformer(kSmall), golden(), "init");
}

TEST(ModelsLlama, RMSNormAndRotaryEmbeddingGradients) {
  manual_seed(0);
  llama::RMSNorm norm(6, 1e-5);
  norm.to(kFloat64);
  test::gradcheck("RMSNorm", [&](const std::vector<Tensor>& in) { return norm(in[0]); }, {randn({2, 3, 6})});
  const llama::RotaryTables freqs = llama::precompute_freqs_cis(4, 3, 10000.0, kFloat64);
  test::gradcheck("apply_rotary_emb",
                  [&](const std::vector<Tensor>& in) {
                    auto [q, k] = llama::apply_rotary_emb(in[0], in[1], freqs);
                    return cat({q.reshape({-1}), k.reshape({-1})});
                  },
                  {randn({2, 3, 2, 4}), randn({2, 3, 1, 4})});
  // A rotation: each pair keeps its length; position 0 is unchanged.
  const Tensor x = randn({1, 3, 2, 4}, kFloat64);
  const Tensor rotated = llama::apply_rotary_emb(x, x, freqs).first;
  EXPECT_LT(relative_error(rotated.pow(2).view({1, 3, 2, 2, 2}).sum({-1}), x.pow(2).view({1, 3, 2, 2, 2}).sum({-1})),
            1e-15);
  EXPECT_EQ(relative_error(rotated.narrow(1, 0, 1), x.narrow(1, 0, 1)), 0.0);
  // repeat_kv is repeat_interleave along the heads.
  EXPECT_EQ(relative_error(llama::repeat_kv(x, 3), repeat_interleave(x, 3, 2)), 0.0);
}

TEST(ModelsLlama, Messages) {
  llama::Transformer model(kSmall);
  EXPECT_EQ(error_of([&] { model(zeros({5}, kInt64)); }), "not enough values to unpack (expected 2, got 1)");
  EXPECT_EQ(error_of([&] { model(zeros({1, 2, 5}, kInt64)); }), "too many values to unpack (expected 2)");
  EXPECT_EQ(error_of([&] {
              model(zeros({1, 33}, kInt64));
            }),
            "llama: a sequence of 33 tokens is longer than the rotary tables (2 * max_seq_len = 32)");
  EXPECT_EQ(error_of([] { llama::Transformer(llama::ModelArgs{.dim = 8, .n_layers = 1, .n_heads = 2}); }),
            "llama: ModelArgs.vocab_size must be set (the tokenizer's), got -1");
  EXPECT_EQ(
      error_of([] {
        llama::Transformer(llama::ModelArgs{.dim = 24, .n_layers = 1, .n_heads = 4, .n_kv_heads = 3, .vocab_size = 8});
      }),
      "llama: n_heads must be a multiple of n_kv_heads, got n_heads=4, n_kv_heads=3");
}

TEST(ModelsLlama, GreedyGenerate) {
  manual_seed(0);
  llama::Transformer model(kSmall);
  const Tensor prompt = randint(0, 48, {2, 5});
  const Tensor out = model.generate(prompt, 4);
  EXPECT_EQ(out.sizes().vec(), (std::vector<int64_t>{2, 9}));
  EXPECT_FALSE(out.requires_grad());
  EXPECT_EQ(relative_error(out.narrow(1, 0, 5), prompt), 0.0);
  // Each new token is the argmax of the logits of the prefix before it.
  NoGradGuard no_grad;
  const Tensor logits = model(out.narrow(1, 0, 8));
  EXPECT_EQ(relative_error(argmax(logits.narrow(1, 4, 4), -1), out.narrow(1, 5, 4)), 0.0);
  // Causal: a prefix (one token: no mask at all) gives the same logits as the longer sequence.
  EXPECT_LT(relative_error(model(out.narrow(1, 0, 1)), logits.narrow(1, 0, 1)), 1e-6);
  EXPECT_LT(relative_error(model(out.narrow(1, 0, 6)), logits.narrow(1, 0, 6)), 1e-6);
}

TEST(ModelsLlama, AdamWStepsLowerTheLoss) {
  manual_seed(0);
  llama::Transformer model(
      {.dim = 16, .n_layers = 1, .n_heads = 2, .n_kv_heads = 1, .vocab_size = 16, .multiple_of = 8, .max_seq_len = 16});
  // A periodic sequence: the next token is (token + 3) mod 16.
  std::vector<int64_t> tokens(17 * 4);
  for (size_t i = 0; i < tokens.size(); ++i) tokens[i] = static_cast<int64_t>((i * 3) % 16);
  const Tensor data = tensor(tokens).view({4, 17});
  const Tensor x = data.narrow(1, 0, 16), y = data.narrow(1, 1, 16).reshape({-1});
  optim::AdamW optimizer(model.parameters(), {.lr = 1e-2});
  double first = 0.0, last = 0.0;
  for (int step = 0; step < 25; ++step) {
    const Tensor loss = F::cross_entropy(model(x).view({-1, 16}), y);
    if (step == 0) first = loss.item<double>();
    last = loss.item<double>();
    optimizer.zero_grad();
    loss.backward();
    optimizer.step();
  }
  EXPECT_LT(last, 0.5 * first) << "first " << first;
}

}  // namespace
