#pragma once
/// ember::models::GPT: GPT-2 as nanoGPT's model.py writes it (karpathy/nanoGPT), with its module
/// names, so that a state_dict moves between the two unchanged:
///   transformer.wte.weight, transformer.wpe.weight,
///   transformer.h.<i>.ln_1.{weight,bias}, .attn.c_attn.{weight,bias}, .attn.c_proj.{weight,bias},
///   transformer.h.<i>.ln_2.{weight,bias}, .mlp.c_fc.{weight,bias}, .mlp.c_proj.{weight,bias},
///   transformer.ln_f.{weight,bias}, lm_head.weight
/// lm_head.weight is transformer.wte.weight (one tensor, weight tying): state_dict lists both
/// keys, named_parameters and parameters() list it once, as transformer.wte.weight, as PyTorch.
///
///   auto model = std::make_shared<ember::models::GPT>(ember::models::GPTConfig{.vocab_size = 65, .n_layer = 4});
///   auto [logits, loss] = model->forward(idx, targets);   // idx, targets: int64 [B, T]
///
/// Initialisation as nanoGPT's: every Linear weight and Embedding N(0, 0.02), biases zero,
/// LayerNorms ones/zeros, then each c_proj.weight N(0, 0.02 / sqrt(2 n_layer)).
#include <cstdint>
#include <memory>
#include <string>

#include "ember/nn/containers.h"
#include "ember/nn/modules.h"

namespace ember::models {

/// nanoGPT's GPTConfig, with its defaults (GPT-2 small, vocabulary padded to 50304).
struct GPTConfig {
  int64_t block_size = 1024;
  int64_t vocab_size = 50304;
  int64_t n_layer = 12;
  int64_t n_head = 12;
  int64_t n_embd = 768;
  double dropout = 0.0;
  /// Biases in the Linears and LayerNorms, as GPT-2; false is nanoGPT's faster variant.
  bool bias = true;
};

/// Multi-head causal self-attention with the three projections in one Linear (c_attn) and the
/// output projection c_proj; attention by scaled_dot_product_attention(is_causal = true).
class CausalSelfAttention : public nn::Module {
 public:
  explicit CausalSelfAttention(const GPTConfig& config);
  std::string name() const override { return "CausalSelfAttention"; }
  /// x [B, T, n_embd] → [B, T, n_embd].
  Tensor forward(const Tensor& x) override;

  std::shared_ptr<nn::Linear> c_attn, c_proj;
  std::shared_ptr<nn::Dropout> attn_dropout, resid_dropout;
  int64_t n_head, n_embd;
  double dropout;
};

/// c_fc (n_embd → 4 n_embd), exact GELU, c_proj (4 n_embd → n_embd), dropout.
class MLP : public nn::Module {
 public:
  explicit MLP(const GPTConfig& config);
  std::string name() const override { return "MLP"; }
  Tensor forward(const Tensor& x) override;

  std::shared_ptr<nn::Linear> c_fc, c_proj;
  std::shared_ptr<nn::GELU> gelu;
  std::shared_ptr<nn::Dropout> dropout;
};

/// Pre-norm residual block: x + attn(ln_1(x)), then + mlp(ln_2(.)).
class Block : public nn::Module {
 public:
  explicit Block(const GPTConfig& config);
  std::string name() const override { return "Block"; }
  Tensor forward(const Tensor& x) override;

  std::shared_ptr<nn::LayerNorm> ln_1, ln_2;
  std::shared_ptr<CausalSelfAttention> attn;
  std::shared_ptr<MLP> mlp;
};

/// A bias-free Linear whose weight is a tensor it is given (the token embedding), so that the
/// output projection shares it. name() is "Linear", as nanoGPT's lm_head is an nn.Linear.
class TiedLinear : public nn::Module {
 public:
  /// `weight` [out_features, in_features] is registered as this module's "weight", shared.
  explicit TiedLinear(Tensor weight);
  std::string name() const override { return "Linear"; }
  Tensor forward(const Tensor& input) override;
  Tensor weight;
};

/// What GPT::forward returns: logits [B, T, vocab_size] ([B, 1, vocab_size] without targets) and
/// the mean cross-entropy over targets that are not -1 (undefined without targets).
struct GPTOutput {
  Tensor logits;
  Tensor loss;
};

class GPT : public nn::Module {
 public:
  explicit GPT(GPTConfig config);
  std::string name() const override { return "GPT"; }
  /// idx int64 [B, T] with T <= block_size. With targets (int64 [B, T], -1 = ignore): logits at
  /// every position and the loss; without (undefined targets): logits of the last position only
  /// and no loss, as nanoGPT's inference shortcut.
  GPTOutput forward(const Tensor& idx, const Tensor& targets);
  /// forward(idx, {}).logits, so that the model can be called as a one-input module.
  Tensor forward(const Tensor& idx) override { return forward(idx, Tensor()).logits; }
  /// Appends max_new_tokens tokens to idx [B, T], each sampled from softmax(logits / temperature)
  /// of the last block_size tokens (restricted to the top_k most likely when top_k > 0), as
  /// nanoGPT's generate. Runs without recording gradients.
  Tensor generate(const Tensor& idx, int64_t max_new_tokens, double temperature = 1.0, int64_t top_k = 0);
  /// The number of parameters (the tied weight once); without the position embedding when
  /// non_embedding, as nanoGPT's get_num_params.
  int64_t get_num_params(bool non_embedding = true) const;

  GPTConfig config;
  std::shared_ptr<nn::ModuleDict> transformer;  // wte, wpe, drop, h, ln_f
  std::shared_ptr<nn::Embedding> wte, wpe;
  std::shared_ptr<nn::Dropout> drop;
  std::shared_ptr<nn::ModuleList> h;
  std::shared_ptr<nn::LayerNorm> ln_f;
  std::shared_ptr<TiedLinear> lm_head;
};

}  // namespace ember::models
