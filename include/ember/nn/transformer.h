#pragma once
/// Attention and Transformer layers with torch.nn's semantics: scaled_dot_product_attention,
/// MultiheadAttention, TransformerEncoderLayer, TransformerEncoder, TransformerDecoderLayer,
/// TransformerDecoder and Transformer. Parameter names, shapes,
/// initialisation order and masks' meanings are PyTorch's, so a state_dict moves between the two.
/// Everything is composed of recorded ops (linear, matmul, softmax, dropout, layer_norm), so
/// autograd (higher order included) and every device work as for any other op.
///
/// Masks, as in PyTorch (mind the opposite meanings of a boolean mask):
///   scaled_dot_product_attention's attn_mask: bool, true = may attend; or float, added.
///   MultiheadAttention's attn_mask and key_padding_mask: bool, true = may NOT attend; or float,
///   added. A query that may attend to nothing gets zeros from scaled_dot_product_attention (and
///   from MultiheadAttention without weights), NaN from MultiheadAttention with need_weights, as
///   in PyTorch.
#include <cstdint>
#include <memory>
#include <optional>
#include <string>
#include <utility>

#include "ember/nn/module.h"
#include "ember/nn/modules.h"
#include "ember/tensor_options.h"

namespace ember::nn {

namespace functional {

/// softmax(q k^T * scale + mask) v over the last two dimensions: query [..., L, E], key
/// [..., S, E], value [..., S, Ev] → [..., L, Ev]. attn_mask broadcasts to [..., L, S];
/// is_causal lets query i attend to keys 0..i (and then attn_mask must be undefined); scale
/// defaults to 1/√E; dropout_p drops attention weights (always, as in PyTorch: pass 0 when not
/// training). enable_gqa lets key and value have fewer heads (dimension -3) than the query,
/// each shared by query heads in groups.
Tensor scaled_dot_product_attention(const Tensor& query, const Tensor& key, const Tensor& value,
                                    const Tensor& attn_mask = Tensor(), double dropout_p = 0.0, bool is_causal = false,
                                    std::optional<double> scale = std::nullopt, bool enable_gqa = false);

/// The optional arguments of scaled_dot_product_attention, PyTorch's names and defaults.
struct ScaledDotProductAttentionOptions {
  nn::detail::DesignatedOnly designated_only = {};
  Tensor attn_mask = Tensor();
  double dropout_p = 0.0;
  bool is_causal = false;
  std::optional<double> scale = std::nullopt;
  bool enable_gqa = false;
};

/// scaled_dot_product_attention(q, k, v, {.is_causal = true}).
inline Tensor scaled_dot_product_attention(const Tensor& query, const Tensor& key, const Tensor& value,
                                           const ScaledDotProductAttentionOptions& options) {
  return scaled_dot_product_attention(query, key, value, options.attn_mask, options.dropout_p, options.is_causal,
                                      options.scale, options.enable_gqa);
}

}  // namespace functional

/// The options of nn.MultiheadAttention after embed_dim and num_heads, with PyTorch's defaults.
struct MultiheadAttentionOptions {
  detail::DesignatedOnly designated_only = {};
  double dropout = 0.0;  // on the attention weights, while training
  bool bias = true;      // in_proj_bias and out_proj.bias
  bool add_bias_kv = false;
  bool add_zero_attn = false;
  int64_t kdim = 0;  // key features; 0: embed_dim
  int64_t vdim = 0;  // value features; 0: embed_dim
  bool batch_first = false;
};

/// The optional arguments of MultiheadAttention::forward, with PyTorch's defaults.
struct MultiheadAttentionArgs {
  detail::DesignatedOnly designated_only = {};
  Tensor key_padding_mask = Tensor();  // [N, S] ([S] unbatched): true (or -inf) marks keys to ignore
  bool need_weights = true;
  Tensor attn_mask = Tensor();  // [L, S] or [N * num_heads, L, S]
  bool average_attn_weights = true;
  /// A hint that attn_mask is causal (it must still be given, as in PyTorch).
  bool is_causal = false;
};

struct MultiheadAttentionOutput {
  Tensor output;  // [L, N, E] ([N, L, E] with batch_first, [L, E] unbatched)
  /// [N, L, S] averaged over heads, or [N, num_heads, L, S] ([L, S] or [num_heads, L, S]
  /// unbatched); after dropout while training, as in PyTorch; undefined without need_weights.
  Tensor weights;
};

/// nn.MultiheadAttention. With kdim == vdim == embed_dim the three input projections are one
/// parameter, in_proj_weight [3E, E]; otherwise q_proj_weight, k_proj_weight and
/// v_proj_weight. in_proj_bias [3E], out_proj (a Linear), and with add_bias_kv bias_k and
/// bias_v [1, 1, E]. Initialised as PyTorch: out_proj drawn as a Linear, then xavier_uniform_ of
/// the input projections, zero biases, xavier_normal_ of bias_k and bias_v.
class MultiheadAttention : public Module {
 public:
  MultiheadAttention(int64_t embed_dim, int64_t num_heads, MultiheadAttentionOptions options = {});
  std::string name() const override { return "MultiheadAttention"; }
  /// query [L, N, E], key [S, N, kdim], value [S, N, vdim] ([N, L, E] ... with batch_first), or
  /// unbatched [L, E], [S, kdim], [S, vdim].
  MultiheadAttentionOutput forward(const Tensor& query, const Tensor& key, const Tensor& value,
                                   const MultiheadAttentionArgs& args = {});
  /// Self-attention's output alone: forward(x, x, x, {.need_weights = false}).output.
  Tensor forward(const Tensor& x) override;
  /// PyTorch's _reset_parameters: redraws the input projections (and bias_k, bias_v) and zeroes
  /// the biases; out_proj.weight keeps its values.
  void reset_parameters();

  int64_t embed_dim, num_heads, head_dim, kdim, vdim;
  MultiheadAttentionOptions options;
  Tensor in_proj_weight;                               // undefined when kdim or vdim differ
  Tensor q_proj_weight, k_proj_weight, v_proj_weight;  // defined only then
  Tensor in_proj_bias, bias_k, bias_v;                 // undefined without bias / add_bias_kv
  std::shared_ptr<Linear> out_proj;
};

/// A float [size, size] mask of -inf above the diagonal and 0 elsewhere: position i attends to
/// 0..i (nn.Transformer.generate_square_subsequent_mask).
Tensor generate_square_subsequent_mask(int64_t size, const TensorOptions& options = {});

/// The options of nn.TransformerEncoderLayer after d_model and nhead, with PyTorch's defaults.
struct TransformerEncoderLayerOptions {
  detail::DesignatedOnly designated_only = {};
  int64_t dim_feedforward = 2048;
  double dropout = 0.1;
  std::string activation = "relu";  // or "gelu"
  double layer_norm_eps = 1e-5;
  bool batch_first = false;
  bool norm_first = false;  // pre-norm: x + sa(norm1(x)), then x + ff(norm2(x))
  bool bias = true;         // of the linear layers, the attention and the norms
};

/// The optional arguments of TransformerEncoderLayer::forward, PyTorch's names and defaults.
struct TransformerEncoderLayerArgs {
  detail::DesignatedOnly designated_only = {};
  Tensor src_mask = Tensor();
  Tensor src_key_padding_mask = Tensor();
  bool is_causal = false;  // a hint that src_mask is causal
};

/// The optional arguments of TransformerEncoder::forward, PyTorch's names and defaults.
struct TransformerEncoderArgs {
  detail::DesignatedOnly designated_only = {};
  Tensor mask = Tensor();
  Tensor src_key_padding_mask = Tensor();
  bool is_causal = false;  // a hint that mask is causal
};

/// nn.TransformerEncoderLayer: self-attention and a feed-forward block, each with dropout and a
/// residual connection, and LayerNorm after each (or before, with norm_first). Submodules (and
/// state_dict keys) as PyTorch's: self_attn, linear1, dropout, linear2, norm1, norm2, dropout1,
/// dropout2.
class TransformerEncoderLayer : public Module {
 public:
  TransformerEncoderLayer(int64_t d_model, int64_t nhead, TransformerEncoderLayerOptions options = {});
  std::string name() const override { return "TransformerEncoderLayer"; }
  /// src [S, N, E] ([N, S, E] with batch_first, [S, E] unbatched); src_mask and
  /// src_key_padding_mask as MultiheadAttention's attn_mask and key_padding_mask.
  Tensor forward(const Tensor& src, const Tensor& src_mask, const Tensor& src_key_padding_mask = Tensor(),
                 bool is_causal = false);
  Tensor forward(const Tensor& src) override { return forward(src, Tensor()); }
  /// forward(src, {.src_key_padding_mask = padding}).
  Tensor forward(const Tensor& src, const TransformerEncoderLayerArgs& args) {
    return forward(src, args.src_mask, args.src_key_padding_mask, args.is_causal);
  }

  int64_t d_model, nhead;
  TransformerEncoderLayerOptions options;
  std::shared_ptr<MultiheadAttention> self_attn;
  std::shared_ptr<Linear> linear1, linear2;
  std::shared_ptr<Dropout> dropout, dropout1, dropout2;
  std::shared_ptr<LayerNorm> norm1, norm2;
};

/// The options of nn.TransformerEncoder after encoder_layer and num_layers. ember has no nested
/// tensors, so enable_nested_tensor and mask_check (PyTorch's fast path) are kept but change
/// nothing.
struct TransformerEncoderOptions {
  detail::DesignatedOnly designated_only = {};
  std::shared_ptr<LayerNorm> norm = nullptr;  // applied after the last layer
  bool enable_nested_tensor = true;
  bool mask_check = true;
};

/// nn.TransformerEncoder: num_layers copies of `encoder_layer` (named layers.0, layers.1, ...)
/// and an optional final norm. Like PyTorch's deep copies, each copy has the layer's options,
/// parameter values, device, dtype, requires_grad flags and training mode, and making them draws
/// nothing from the generator. is_causal only says that `mask` is causal (PyTorch detects it);
/// the result is the same either way.
class TransformerEncoder : public Module {
 public:
  TransformerEncoder(const TransformerEncoderLayer& encoder_layer, int64_t num_layers,
                     std::shared_ptr<LayerNorm> norm = nullptr);
  ///   nn::TransformerEncoder(layer, 6, {.norm = std::make_shared<nn::LayerNorm>(512)});
  TransformerEncoder(const TransformerEncoderLayer& encoder_layer, int64_t num_layers,
                     TransformerEncoderOptions options)
      : TransformerEncoder(encoder_layer, num_layers, std::move(options.norm)) {
    enable_nested_tensor = options.enable_nested_tensor;
    mask_check = options.mask_check;
  }
  std::string name() const override { return "TransformerEncoder"; }
  Tensor forward(const Tensor& src, const Tensor& mask, const Tensor& src_key_padding_mask = Tensor(),
                 bool is_causal = false);
  Tensor forward(const Tensor& src) override { return forward(src, Tensor()); }
  /// forward(src, {.mask = causal_mask, .is_causal = true}).
  Tensor forward(const Tensor& src, const TransformerEncoderArgs& args) {
    return forward(src, args.mask, args.src_key_padding_mask, args.is_causal);
  }

  int64_t num_layers;
  std::shared_ptr<ModuleList> layers;
  std::shared_ptr<LayerNorm> norm;                      // may be null
  bool enable_nested_tensor = true, mask_check = true;  // PyTorch's, unused (see the options)
};

/// The options of nn.TransformerDecoderLayer after d_model and nhead: TransformerEncoderLayer's.
using TransformerDecoderLayerOptions = TransformerEncoderLayerOptions;

/// The optional arguments of TransformerDecoderLayer::forward and TransformerDecoder::forward.
/// The masks are MultiheadAttention's (bool: true = may not attend; float: added): the tgt ones
/// for the self-attention over tgt, the memory ones for the attention from tgt to memory.
struct TransformerDecoderArgs {
  detail::DesignatedOnly designated_only = {};
  Tensor tgt_mask = Tensor();                 // [T, T]
  Tensor memory_mask = Tensor();              // [T, S]
  Tensor tgt_key_padding_mask = Tensor();     // [N, T]
  Tensor memory_key_padding_mask = Tensor();  // [N, S]
  bool tgt_is_causal = false;
  bool memory_is_causal = false;
};

/// nn.TransformerDecoderLayer: self-attention over tgt, attention from tgt to memory, and a
/// feed-forward block, each with dropout, a residual connection and LayerNorm after it (before
/// it with norm_first). Submodules as PyTorch's: self_attn, multihead_attn, linear1, dropout,
/// linear2, norm1, norm2, norm3, dropout1, dropout2, dropout3.
class TransformerDecoderLayer : public Module {
 public:
  TransformerDecoderLayer(int64_t d_model, int64_t nhead, TransformerDecoderLayerOptions options = {});
  std::string name() const override { return "TransformerDecoderLayer"; }
  using Module::forward;  // one input alone is not enough: Module's forward, which throws
  /// tgt [T, N, E], memory [S, N, E] ([N, T, E] and [N, S, E] with batch_first; [T, E] and [S, E]
  /// unbatched).
  Tensor forward(const Tensor& tgt, const Tensor& memory, const TransformerDecoderArgs& args = {});

  int64_t d_model, nhead;
  TransformerDecoderLayerOptions options;
  std::shared_ptr<MultiheadAttention> self_attn, multihead_attn;
  std::shared_ptr<Linear> linear1, linear2;
  std::shared_ptr<Dropout> dropout, dropout1, dropout2, dropout3;
  std::shared_ptr<LayerNorm> norm1, norm2, norm3;
};

/// The options of nn.TransformerDecoder after decoder_layer and num_layers.
struct TransformerDecoderOptions {
  detail::DesignatedOnly designated_only = {};
  std::shared_ptr<LayerNorm> norm = nullptr;  // applied after the last layer
};

/// nn.TransformerDecoder: num_layers copies of `decoder_layer` (as TransformerEncoder copies its
/// layer) and an optional final norm.
class TransformerDecoder : public Module {
 public:
  TransformerDecoder(const TransformerDecoderLayer& decoder_layer, int64_t num_layers,
                     std::shared_ptr<LayerNorm> norm = nullptr);
  TransformerDecoder(const TransformerDecoderLayer& decoder_layer, int64_t num_layers,
                     TransformerDecoderOptions options)
      : TransformerDecoder(decoder_layer, num_layers, std::move(options.norm)) {}
  std::string name() const override { return "TransformerDecoder"; }
  using Module::forward;  // one input alone is not enough: Module's forward, which throws
  Tensor forward(const Tensor& tgt, const Tensor& memory, const TransformerDecoderArgs& args = {});

  int64_t num_layers;
  std::shared_ptr<ModuleList> layers;
  std::shared_ptr<LayerNorm> norm;  // may be null
};

/// The options of nn.Transformer, with PyTorch's defaults.
struct TransformerOptions {
  detail::DesignatedOnly designated_only = {};
  int64_t d_model = 512;
  int64_t nhead = 8;
  int64_t num_encoder_layers = 6;
  int64_t num_decoder_layers = 6;
  int64_t dim_feedforward = 2048;
  double dropout = 0.1;
  std::string activation = "relu";  // or "gelu"
  double layer_norm_eps = 1e-5;
  bool batch_first = false;
  bool norm_first = false;
  bool bias = true;
};

/// The optional arguments of Transformer::forward: the encoder's (src_*), the decoder's, and
/// memory_* for the decoder's attention to the encoder's output.
struct TransformerArgs {
  detail::DesignatedOnly designated_only = {};
  Tensor src_mask = Tensor();
  Tensor tgt_mask = Tensor();
  Tensor memory_mask = Tensor();
  Tensor src_key_padding_mask = Tensor();
  Tensor tgt_key_padding_mask = Tensor();
  Tensor memory_key_padding_mask = Tensor();
  bool src_is_causal = false;
  bool tgt_is_causal = false;
  bool memory_is_causal = false;
};

/// nn.Transformer: a TransformerEncoder and a TransformerDecoder, each with a final LayerNorm
/// (submodules encoder, decoder). As in PyTorch, every parameter with more than one dimension is
/// redrawn with xavier_uniform_ after construction.
class Transformer : public Module {
 public:
  explicit Transformer(TransformerOptions options = {});
  std::string name() const override { return "Transformer"; }
  using Module::forward;  // one input alone is not enough: Module's forward, which throws
  /// src [S, N, E] and tgt [T, N, E] ([N, S, E], [N, T, E] with batch_first; unbatched [S, E],
  /// [T, E]) → [T, N, E].
  Tensor forward(const Tensor& src, const Tensor& tgt, const TransformerArgs& args = {});
  /// generate_square_subsequent_mask, as the static method nn.Transformer offers it.
  static Tensor generate_square_subsequent_mask(int64_t size, const TensorOptions& options = {}) {
    return nn::generate_square_subsequent_mask(size, options);
  }

  TransformerOptions options;
  std::shared_ptr<TransformerEncoder> encoder;
  std::shared_ptr<TransformerDecoder> decoder;
};

}  // namespace ember::nn
