#pragma once
/// ember::models::llama: the LLaMA decoder as Meta's reference llama/model.py writes it
/// (github.com/meta-llama/llama, the Llama 2 version with grouped-query attention), with its
/// module names, so that a state_dict moves between the two unchanged:
///   tok_embeddings.weight,
///   layers.<i>.attention.{wq,wk,wv,wo}.weight, layers.<i>.feed_forward.{w1,w2,w3}.weight,
///   layers.<i>.attention_norm.weight, layers.<i>.ffn_norm.weight, norm.weight, output.weight
///
///   ember::models::llama::ModelArgs args{.dim = 256, .n_layers = 4, .n_heads = 8, .n_kv_heads = 4,
///                                        .vocab_size = 4096};
///   auto model = std::make_shared<ember::models::llama::Transformer>(args);
///   Tensor logits = (*model)(tokens);     // tokens int64 [B, T] → [B, T, vocab_size]
///
/// Where this departs from the reference, and why:
/// - Training, not serving: forward has no start_pos and no KV cache (cache_k, cache_v); every
///   call attends causally from position 0, which is the reference's computation at start_pos 0.
///   generate() is greedy decoding that recomputes the whole prefix.
/// - The reference builds fairscale's ColumnParallelLinear, RowParallelLinear and
///   ParallelEmbedding with an identity init_method (the weights come from a checkpoint). Here
///   they are nn::Linear (bias = false) and nn::Embedding, initialised as those are by default,
///   so that manual_seed(n) gives the values of the same model built with torch.nn's layers
///   (tools/gen_models_llama_golden.py's reference) — one process, no model parallelism.
/// - The reference computes RMSNorm, the rotary embedding (freqs_cis) and the attention softmax
///   in float32 (x.float()) and casts back (type_as). Here they are computed in
///   promote_types(dtype, float32): the same for float32, float16 and bfloat16, and float64 for
///   a float64 model (where x.float() would round to float32), so float64 checks are exact.
/// - The rotary embedding multiplies interleaved pairs (x[2j], x[2j+1]) by cos and sin of
///   position * theta^(-2j / head_dim) as real arithmetic, the reference's complex product
///   (view_as_complex, polar) written out; the tables are made for the positions used.
/// - The reference returns the logits as float32 (.float()); here they keep the model's dtype.
#include <cstdint>
#include <memory>
#include <optional>
#include <string>
#include <utility>

#include "ember/nn/containers.h"
#include "ember/nn/modules.h"

namespace ember::models::llama {

/// The reference's ModelArgs with its defaults (Llama 2 7B's shape; vocab_size must be set).
struct ModelArgs {
  int64_t dim = 4096;
  int64_t n_layers = 32;
  int64_t n_heads = 32;
  /// Key/value heads, shared by n_heads / n_kv_heads query heads each (grouped-query
  /// attention); unset: n_heads.
  std::optional<int64_t> n_kv_heads = std::nullopt;
  int64_t vocab_size = -1;  // defined by the tokenizer in the reference
  /// The SwiGLU hidden size is rounded up to a multiple of this.
  int64_t multiple_of = 256;
  std::optional<double> ffn_dim_multiplier = std::nullopt;
  double norm_eps = 1e-5;
  int64_t max_batch_size = 32;  // the reference's KV-cache size; unused here
  /// Positions up to 2 * max_seq_len have rotary tables, as the reference precomputes them.
  int64_t max_seq_len = 2048;
};

/// x * rsqrt(mean(x^2, -1) + eps) * weight, the normalisation computed in at least float32.
class RMSNorm : public nn::Module {
 public:
  explicit RMSNorm(int64_t dim, double eps = 1e-6);
  std::string name() const override { return "RMSNorm"; }
  Tensor forward(const Tensor& x) override;

  double eps;
  Tensor weight;  // [dim], ones
};

/// The reference's freqs_cis as two real tables: cos and sin of t * theta^(-2j / dim) for
/// positions t < end and j < dim / 2, [end, dim / 2], computed in `dtype` (the reference:
/// float32) as the reference computes them.
struct RotaryTables {
  Tensor cos, sin;
};
RotaryTables precompute_freqs_cis(int64_t dim, int64_t end, double theta = 10000.0, Dtype dtype = kFloat32);

/// Rotates each interleaved pair (x[..., 2j], x[..., 2j+1]) of xq [B, T, H, D] and xk
/// [B, T, Hkv, D] by the angle of position t and frequency j (tables [T, D / 2]); computed in
/// promote_types(dtype, float32), returned in the inputs' dtypes.
std::pair<Tensor, Tensor> apply_rotary_emb(const Tensor& xq, const Tensor& xk, const RotaryTables& freqs);

/// [B, T, Hkv, D] → [B, T, Hkv * n_rep, D], each head repeated n_rep times in place
/// (repeat_interleave along dimension 2).
Tensor repeat_kv(const Tensor& x, int64_t n_rep);

/// Multi-head attention with n_kv_heads key/value heads, the rotary embedding on queries and
/// keys, and bias-free projections wq, wk, wv, wo.
class Attention : public nn::Module {
 public:
  explicit Attention(const ModelArgs& args);
  std::string name() const override { return "Attention"; }
  /// x [B, T, dim], freqs for positions 0..T-1, mask added to the scores (undefined: none) →
  /// [B, T, dim].
  Tensor forward(const Tensor& x, const RotaryTables& freqs, const Tensor& mask);

  int64_t n_heads, n_kv_heads, n_rep, head_dim;
  std::shared_ptr<nn::Linear> wq, wk, wv, wo;
};

/// SwiGLU: w2(silu(w1(x)) * w3(x)), hidden size int(2 hidden_dim / 3), times ffn_dim_multiplier
/// (truncated), rounded up to a multiple of multiple_of.
class FeedForward : public nn::Module {
 public:
  FeedForward(int64_t dim, int64_t hidden_dim, int64_t multiple_of, std::optional<double> ffn_dim_multiplier);
  std::string name() const override { return "FeedForward"; }
  Tensor forward(const Tensor& x) override;

  /// The reference's hidden-size rule.
  static int64_t hidden_size(int64_t hidden_dim, int64_t multiple_of, std::optional<double> ffn_dim_multiplier);

  std::shared_ptr<nn::Linear> w1, w2, w3;
};

/// Pre-norm block: h = x + attention(attention_norm(x)), out = h + feed_forward(ffn_norm(h)).
class TransformerBlock : public nn::Module {
 public:
  TransformerBlock(int64_t layer_id, const ModelArgs& args);
  std::string name() const override { return "TransformerBlock"; }
  Tensor forward(const Tensor& x, const RotaryTables& freqs, const Tensor& mask);

  int64_t layer_id;
  std::shared_ptr<Attention> attention;
  std::shared_ptr<FeedForward> feed_forward;
  std::shared_ptr<RMSNorm> attention_norm, ffn_norm;
};

class Transformer : public nn::Module {
 public:
  explicit Transformer(ModelArgs params);
  std::string name() const override { return "Transformer"; }
  /// tokens int64 [B, T] with T <= 2 max_seq_len → logits [B, T, vocab_size], each position
  /// attending to itself and the positions before it.
  Tensor forward(const Tensor& tokens) override;
  /// Appends max_new_tokens tokens to tokens [B, T], each the most likely next token (greedy
  /// decoding, the reference's temperature 0), without recording gradients.
  Tensor generate(const Tensor& tokens, int64_t max_new_tokens);

  ModelArgs params;
  std::shared_ptr<nn::Embedding> tok_embeddings;
  std::shared_ptr<nn::ModuleList> layers;
  std::shared_ptr<RMSNorm> norm;
  std::shared_ptr<nn::Linear> output;
};

}  // namespace ember::models::llama
