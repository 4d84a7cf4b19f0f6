// GPT-2 as nanoGPT's model.py (see include/ember/models/gpt2.h), built from ember::nn layers.
#include "ember/models/gpt2.h"

#include <algorithm>
#include <cmath>
#include <limits>
#include <utility>

#include "core/check.h"
#include "ember/factories.h"
#include "ember/grad_mode.h"
#include "ember/nn/init.h"
#include "ember/nn/transformer.h"
#include "ember/ops.h"
#include "ember/sampling.h"
#include "ember/sort.h"

namespace ember::models {

namespace F = nn::functional;

CausalSelfAttention::CausalSelfAttention(const GPTConfig& config)
    : n_head(config.n_head), n_embd(config.n_embd), dropout(config.dropout) {
  EMBER_CHECK(config.n_head >= 1 && config.n_embd % config.n_head == 0,
              "GPT: n_embd must be a multiple of n_head, got n_embd=", config.n_embd, ", n_head=", config.n_head);
  c_attn = register_module("c_attn", std::make_shared<nn::Linear>(n_embd, 3 * n_embd, config.bias));
  c_proj = register_module("c_proj", std::make_shared<nn::Linear>(n_embd, n_embd, config.bias));
  attn_dropout = register_module("attn_dropout", std::make_shared<nn::Dropout>(config.dropout));
  resid_dropout = register_module("resid_dropout", std::make_shared<nn::Dropout>(config.dropout));
}

Tensor CausalSelfAttention::forward(const Tensor& x) {
  const int64_t batch = x.size(0), time = x.size(1), channels = x.size(2);
  const std::vector<Tensor> qkv = (*c_attn)(x).split(n_embd, 2);
  // [B, T, C] → [B, n_head, T, head_size]: heads become a batch dimension.
  auto heads = [&](const Tensor& t) { return t.view({batch, time, n_head, channels / n_head}).transpose(1, 2); };
  const Tensor q = heads(qkv[0]), k = heads(qkv[1]), v = heads(qkv[2]);
  Tensor y = F::scaled_dot_product_attention(q, k, v, Tensor(), is_training() ? dropout : 0.0, /*is_causal=*/true);
  y = y.transpose(1, 2).contiguous().view({batch, time, channels});
  return (*resid_dropout)((*c_proj)(y));
}

MLP::MLP(const GPTConfig& config) {
  c_fc = register_module("c_fc", std::make_shared<nn::Linear>(config.n_embd, 4 * config.n_embd, config.bias));
  gelu = register_module("gelu", std::make_shared<nn::GELU>());
  c_proj = register_module("c_proj", std::make_shared<nn::Linear>(4 * config.n_embd, config.n_embd, config.bias));
  dropout = register_module("dropout", std::make_shared<nn::Dropout>(config.dropout));
}

Tensor MLP::forward(const Tensor& x) { return (*dropout)((*c_proj)((*gelu)((*c_fc)(x)))); }

Block::Block(const GPTConfig& config) {
  // nanoGPT's LayerNorm(ndim, bias): eps 1e-5, weight and (with bias) bias, the same keys as nn.LayerNorm.
  ln_1 = register_module("ln_1", std::make_shared<nn::LayerNorm>(config.n_embd, 1e-5, true, config.bias));
  attn = register_module("attn", std::make_shared<CausalSelfAttention>(config));
  ln_2 = register_module("ln_2", std::make_shared<nn::LayerNorm>(config.n_embd, 1e-5, true, config.bias));
  mlp = register_module("mlp", std::make_shared<MLP>(config));
}

Tensor Block::forward(const Tensor& x) {
  const Tensor y = x + (*attn)((*ln_1)(x));
  return y + (*mlp)((*ln_2)(y));
}

TiedLinear::TiedLinear(Tensor shared_weight) : weight(register_parameter("weight", std::move(shared_weight))) {}

Tensor TiedLinear::forward(const Tensor& input) { return F::linear(input, weight); }

GPT::GPT(GPTConfig config_) : config(config_) {
  EMBER_CHECK(config.vocab_size >= 1 && config.block_size >= 1 && config.n_layer >= 0 && config.n_embd >= 1,
              "GPT: vocab_size, block_size and n_embd must be positive and n_layer not negative");
  wte = std::make_shared<nn::Embedding>(config.vocab_size, config.n_embd);
  wpe = std::make_shared<nn::Embedding>(config.block_size, config.n_embd);
  drop = std::make_shared<nn::Dropout>(config.dropout);
  h = std::make_shared<nn::ModuleList>();
  for (int64_t i = 0; i < config.n_layer; ++i) h->push_back(std::make_shared<Block>(config));
  ln_f = std::make_shared<nn::LayerNorm>(config.n_embd, 1e-5, true, config.bias);
  transformer =
      register_module("transformer", std::make_shared<nn::ModuleDict>(std::vector<nn::ModuleDict::Item>{
                                         {"wte", wte}, {"wpe", wpe}, {"drop", drop}, {"h", h}, {"ln_f", ln_f}}));
  // nanoGPT builds lm_head as a Linear and then assigns its weight to wte: one tensor under both
  // names. wte registered it first, so named_parameters() reaches it as transformer.wte.weight.
  // The Linear nanoGPT builds draws its initial weight; one is built and dropped here so that the
  // generator stays in step with PyTorch's and manual_seed gives nanoGPT's initial values.
  { nn::Linear draws_as_nanogpt(config.n_embd, config.vocab_size, false); }
  lm_head = register_module("lm_head", std::make_shared<TiedLinear>(wte->weight));

  // nanoGPT's _init_weights through apply() (children before parents, so the shared weight is
  // drawn for wte and again for lm_head), then the scaled residual projections.
  apply([](nn::Module& module) {
    if (auto* linear = dynamic_cast<nn::Linear*>(&module)) {
      nn::init::normal_(linear->weight, 0.0, 0.02);
      if (linear->bias.defined()) nn::init::zeros_(linear->bias);
    } else if (auto* tied = dynamic_cast<TiedLinear*>(&module)) {
      nn::init::normal_(tied->weight, 0.0, 0.02);
    } else if (auto* embedding = dynamic_cast<nn::Embedding*>(&module)) {
      nn::init::normal_(embedding->weight, 0.0, 0.02);
    }
  });
  const double residual_std = 0.02 / std::sqrt(2.0 * static_cast<double>(config.n_layer));
  for (const auto& [key, parameter] : named_parameters()) {
    if (key.size() >= 13 && key.compare(key.size() - 13, 13, "c_proj.weight") == 0)
      nn::init::normal_(parameter, 0.0, residual_std);
  }
}

GPTOutput GPT::forward(const Tensor& idx, const Tensor& targets) {
  EMBER_CHECK(idx.dim() == 2, "GPT: idx must be [batch, time], got ", idx.dim(), " dimensions");
  const int64_t time = idx.size(1);
  EMBER_CHECK(time <= config.block_size, "Cannot forward sequence of length ", time, ", block size is only ",
              config.block_size);
  const Tensor pos = arange(0, time, 1, TensorOptions().dtype(kInt64).device(idx.device()));
  Tensor x = (*drop)((*wte)(idx) + (*wpe)(pos));
  for (const auto& item : *h) x = (*item.second)(x);
  x = (*ln_f)(x);
  if (targets.defined()) {
    const Tensor logits = (*lm_head)(x);
    const Tensor loss = F::cross_entropy(logits.view({-1, logits.size(-1)}), targets.view({-1}), nn::Reduction::Mean,
                                         0.0, Tensor(), /*ignore_index=*/-1);
    return {logits, loss};
  }
  // Inference: only the last position's logits, keeping the time dimension (x[:, [-1], :]).
  return {(*lm_head)(x.narrow(1, time - 1, 1)), Tensor()};
}

Tensor GPT::generate(const Tensor& idx, int64_t max_new_tokens, double temperature, int64_t top_k) {
  EMBER_CHECK(temperature > 0.0, "GPT::generate: temperature must be positive, got ", temperature);
  NoGradGuard no_grad;
  Tensor out = idx;
  for (int64_t step = 0; step < max_new_tokens; ++step) {
    const int64_t time = out.size(1);
    const Tensor context = time <= config.block_size ? out : out.narrow(1, time - config.block_size, config.block_size);
    Tensor logits = forward(context, Tensor()).logits.select(1, 0) / temperature;
    if (top_k > 0) {
      const auto [values, indices] = topk(logits, std::min(top_k, logits.size(-1)));
      const Tensor kth = values.narrow(1, values.size(1) - 1, 1);
      logits = logits.masked_fill(lt(logits, kth), -std::numeric_limits<double>::infinity());
    }
    const Tensor next = multinomial(F::softmax(logits, -1), 1);
    out = cat({out, next}, 1);
  }
  return out;
}

int64_t GPT::get_num_params(bool non_embedding) const {
  int64_t count = 0;
  for (const Tensor& p : parameters()) count += p.numel();
  if (non_embedding) count -= wpe->weight.numel();
  return count;
}

}  // namespace ember::models
