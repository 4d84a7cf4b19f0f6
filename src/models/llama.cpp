// The LLaMA decoder as Meta's llama/model.py (see include/ember/models/llama.h), built from
// ember::nn layers.
#include "ember/models/llama.h"

#include <cmath>
#include <limits>
#include <utility>

#include "core/check.h"
#include "ember/factories.h"
#include "ember/grad_mode.h"
#include "ember/nn/functional.h"
#include "ember/ops.h"
#include "ember/sort.h"

namespace ember::models::llama {

namespace F = nn::functional;

namespace {

/// Where the reference writes x.float(): at least float32, float64 kept (see the header).
Dtype compute_dtype(Dtype dtype) { return promote_types(dtype, kFloat32); }

}  // namespace

RMSNorm::RMSNorm(int64_t dim, double eps_) : eps(eps_) { weight = register_parameter("weight", ones({dim})); }

Tensor RMSNorm::forward(const Tensor& x) {
  const Tensor xf = x.to(compute_dtype(x.dtype()));
  // xf * xf, as PyTorch computes pow(2): ember's square() and pow(x, 2) call powf per element,
  // forward and backward (12% of a training step).
  const Tensor normed = xf * rsqrt((xf * xf).mean({-1}, /*keepdim=*/true) + eps);
  return normed.to(x.dtype()) * weight;
}

RotaryTables precompute_freqs_cis(int64_t dim, int64_t end, double theta, Dtype dtype) {
  EMBER_CHECK(dim >= 2 && dim % 2 == 0, "precompute_freqs_cis: dim must be even and positive, got ", dim);
  const TensorOptions options = TensorOptions().dtype(dtype);
  // 1 / theta^(2j / dim), each step in `dtype` as the reference's float32 steps.
  const Tensor exponents = arange(0, dim, 2, options) / static_cast<double>(dim);
  const Tensor freqs = reciprocal(pow(full_like(exponents, theta), exponents));
  const Tensor angles = outer(arange(0, end, 1, options), freqs);  // [end, dim / 2]
  return {cos(angles), sin(angles)};
}

std::pair<Tensor, Tensor> apply_rotary_emb(const Tensor& xq, const Tensor& xk, const RotaryTables& freqs) {
  auto rotate = [&](const Tensor& x) {
    EMBER_CHECK(
        x.dim() == 4 && freqs.cos.dim() == 2 && freqs.cos.size(0) == x.size(1) && freqs.cos.size(1) * 2 == x.size(3),
        "apply_rotary_emb: expected [B, T, H, D] with tables [T, D / 2], got ", x.dim(), " dimensions and tables of ",
        freqs.cos.numel(), " values");
    const Dtype dtype = compute_dtype(x.dtype());
    const int64_t batch = x.size(0), time = x.size(1), heads = x.size(2), half = x.size(3) / 2;
    const Tensor pairs = x.to(dtype).reshape({batch, time, heads, half, 2});
    const Tensor even = pairs.select(-1, 0), odd = pairs.select(-1, 1);
    // Broadcast over batch and heads: [1, T, 1, D / 2].
    const Tensor c = freqs.cos.to(dtype).view({1, time, 1, half}), s = freqs.sin.to(dtype).view({1, time, 1, half});
    // (even + i odd)(cos + i sin), the reference's complex product.
    const Tensor rotated = stack({even * c - odd * s, even * s + odd * c}, -1);
    return rotated.reshape({batch, time, heads, 2 * half}).to(x.dtype());
  };
  return {rotate(xq), rotate(xk)};
}

Tensor repeat_kv(const Tensor& x, int64_t n_rep) {
  if (n_rep == 1) return x;
  const int64_t batch = x.size(0), time = x.size(1), kv_heads = x.size(2), head_dim = x.size(3);
  return x.unsqueeze(3)
      .expand({batch, time, kv_heads, n_rep, head_dim})
      .reshape({batch, time, kv_heads * n_rep, head_dim});
}

Attention::Attention(const ModelArgs& args)
    : n_heads(args.n_heads), n_kv_heads(args.n_kv_heads.value_or(args.n_heads)) {
  EMBER_CHECK(n_heads >= 1 && args.dim % n_heads == 0, "llama: dim must be a multiple of n_heads, got dim=", args.dim,
              ", n_heads=", n_heads);
  EMBER_CHECK(n_kv_heads >= 1 && n_heads % n_kv_heads == 0,
              "llama: n_heads must be a multiple of n_kv_heads, got n_heads=", n_heads, ", n_kv_heads=", n_kv_heads);
  n_rep = n_heads / n_kv_heads;
  head_dim = args.dim / n_heads;
  wq = register_module("wq", std::make_shared<nn::Linear>(args.dim, n_heads * head_dim, false));
  wk = register_module("wk", std::make_shared<nn::Linear>(args.dim, n_kv_heads * head_dim, false));
  wv = register_module("wv", std::make_shared<nn::Linear>(args.dim, n_kv_heads * head_dim, false));
  wo = register_module("wo", std::make_shared<nn::Linear>(n_heads * head_dim, args.dim, false));
}

Tensor Attention::forward(const Tensor& x, const RotaryTables& freqs, const Tensor& mask) {
  const int64_t batch = x.size(0), time = x.size(1);
  Tensor xq = (*wq)(x).view({batch, time, n_heads, head_dim});
  Tensor xk = (*wk)(x).view({batch, time, n_kv_heads, head_dim});
  const Tensor xv = (*wv)(x).view({batch, time, n_kv_heads, head_dim});
  std::tie(xq, xk) = apply_rotary_emb(xq, xk, freqs);
  // Each key/value head serves n_rep query heads; then heads become a batch dimension.
  const Tensor q = xq.transpose(1, 2);
  const Tensor keys = repeat_kv(xk, n_rep).transpose(1, 2);
  const Tensor values = repeat_kv(xv, n_rep).transpose(1, 2);
  Tensor scores = matmul(q, keys.transpose(2, 3)) / std::sqrt(static_cast<double>(head_dim));
  if (mask.defined()) scores = scores + mask;
  scores = F::softmax(scores.to(compute_dtype(scores.dtype())), -1).to(q.dtype());
  const Tensor out = matmul(scores, values).transpose(1, 2).contiguous().view({batch, time, -1});
  return (*wo)(out);
}

int64_t FeedForward::hidden_size(int64_t hidden_dim, int64_t multiple_of, std::optional<double> ffn_dim_multiplier) {
  // Python's int() of a float: truncation toward zero.
  int64_t hidden = static_cast<int64_t>(2.0 * static_cast<double>(hidden_dim) / 3.0);
  if (ffn_dim_multiplier) hidden = static_cast<int64_t>(*ffn_dim_multiplier * static_cast<double>(hidden));
  return multiple_of * ((hidden + multiple_of - 1) / multiple_of);
}

FeedForward::FeedForward(int64_t dim, int64_t hidden_dim, int64_t multiple_of,
                         std::optional<double> ffn_dim_multiplier) {
  EMBER_CHECK(multiple_of >= 1, "llama: multiple_of must be positive, got ", multiple_of);
  const int64_t hidden = hidden_size(hidden_dim, multiple_of, ffn_dim_multiplier);
  w1 = register_module("w1", std::make_shared<nn::Linear>(dim, hidden, false));
  w2 = register_module("w2", std::make_shared<nn::Linear>(hidden, dim, false));
  w3 = register_module("w3", std::make_shared<nn::Linear>(dim, hidden, false));
}

Tensor FeedForward::forward(const Tensor& x) { return (*w2)(F::silu((*w1)(x)) * (*w3)(x)); }

TransformerBlock::TransformerBlock(int64_t layer_id_, const ModelArgs& args) : layer_id(layer_id_) {
  attention = register_module("attention", std::make_shared<Attention>(args));
  feed_forward = register_module(
      "feed_forward", std::make_shared<FeedForward>(args.dim, 4 * args.dim, args.multiple_of, args.ffn_dim_multiplier));
  attention_norm = register_module("attention_norm", std::make_shared<RMSNorm>(args.dim, args.norm_eps));
  ffn_norm = register_module("ffn_norm", std::make_shared<RMSNorm>(args.dim, args.norm_eps));
}

Tensor TransformerBlock::forward(const Tensor& x, const RotaryTables& freqs, const Tensor& mask) {
  const Tensor h = x + attention->forward((*attention_norm)(x), freqs, mask);
  return h + (*feed_forward)((*ffn_norm)(h));
}

Transformer::Transformer(ModelArgs params_) : params(params_) {
  EMBER_CHECK(params.vocab_size >= 1, "llama: ModelArgs.vocab_size must be set (the tokenizer's), got ",
              params.vocab_size);
  EMBER_CHECK(params.dim >= 1 && params.n_layers >= 0 && params.max_seq_len >= 1,
              "llama: dim and max_seq_len must be positive and n_layers not negative");
  tok_embeddings = register_module("tok_embeddings", std::make_shared<nn::Embedding>(params.vocab_size, params.dim));
  layers = register_module("layers", std::make_shared<nn::ModuleList>());
  for (int64_t i = 0; i < params.n_layers; ++i) layers->push_back(std::make_shared<TransformerBlock>(i, params));
  norm = register_module("norm", std::make_shared<RMSNorm>(params.dim, params.norm_eps));
  output = register_module("output", std::make_shared<nn::Linear>(params.dim, params.vocab_size, false));
  EMBER_CHECK(params.dim % params.n_heads == 0 && (params.dim / params.n_heads) % 2 == 0,
              "llama: the head size dim / n_heads must be even (the rotary embedding rotates pairs), got ",
              params.dim / params.n_heads);
}

Tensor Transformer::forward(const Tensor& tokens) {
  // The reference unpacks `_bsz, seqlen = tokens.shape`.
  EMBER_CHECK(tokens.dim() >= 2, "not enough values to unpack (expected 2, got ", tokens.dim(), ")");
  EMBER_CHECK(tokens.dim() == 2, "too many values to unpack (expected 2)");
  const int64_t seqlen = tokens.size(1);
  EMBER_CHECK(seqlen <= 2 * params.max_seq_len, "llama: a sequence of ", seqlen,
              " tokens is longer than the rotary tables (2 * max_seq_len = ", 2 * params.max_seq_len, ")");
  Tensor h = (*tok_embeddings)(tokens);
  RotaryTables freqs = precompute_freqs_cis(params.dim / params.n_heads, seqlen, 10000.0, compute_dtype(h.dtype()));
  freqs.cos = freqs.cos.to(h.device());
  freqs.sin = freqs.sin.to(h.device());
  Tensor mask;
  if (seqlen > 1) {
    // -inf above the diagonal: position i attends to 0..i.
    mask = full({1, 1, seqlen, seqlen}, -std::numeric_limits<double>::infinity(),
                TensorOptions().dtype(h.dtype()).device(h.device()))
               .triu(1);
  }
  for (const auto& item : *layers) h = std::static_pointer_cast<TransformerBlock>(item.second)->forward(h, freqs, mask);
  return (*output)((*norm)(h));
}

Tensor Transformer::generate(const Tensor& tokens, int64_t max_new_tokens) {
  NoGradGuard no_grad;
  Tensor out = tokens;
  for (int64_t step = 0; step < max_new_tokens; ++step) {
    const Tensor logits = forward(out);
    const Tensor last = logits.select(1, logits.size(1) - 1);  // [B, vocab]
    out = cat({out, argmax(last, -1, /*keepdim=*/true)}, 1);
  }
  return out;
}

}  // namespace ember::models::llama
