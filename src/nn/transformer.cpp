// TransformerEncoderLayer and TransformerEncoder, as torch.nn's (the training-mode path: PyTorch's
// fused inference "fast path" computes the same function, up to rounding, except that with a
// key padding mask it returns zeros at padded positions where these layers compute them).
#include "ember/nn/transformer.h"

#include <limits>
#include <string>
#include <vector>

#include "core/check.h"
#include "core/tensor_internal.h"
#include "ember/factories.h"
#include "ember/nn/functional.h"
#include "ember/nn/init.h"
#include "ember/ops.h"

namespace ember::nn {

namespace {

/// `count` copies of `layer` into `list`, as PyTorch's deep copies: the layer's options,
/// parameter values, device, dtype, requires_grad flags and training mode, with nothing drawn from
/// the generator (building a copy draws its own initial values, so the generator is put back).
template <typename Layer>
void copy_layers(const Layer& layer, int64_t count, ModuleList& list) {
  const Tensor rng = get_rng_state();
  const StateDict state = layer.state_dict();
  const auto source = layer.named_parameters();
  for (int64_t i = 0; i < count; ++i) {
    auto copy = std::make_shared<Layer>(layer.d_model, layer.nhead, layer.options);
    if (!source.empty()) copy->to(source[0].second.device(), source[0].second.dtype());
    copy->load_state_dict(state);
    copy->train(layer.is_training());
    auto target = copy->named_parameters();
    for (size_t p = 0; p < source.size(); ++p) target[p].second.requires_grad_(source[p].second.requires_grad());
    list.push_back(copy);
  }
  set_rng_state(rng);
}

Tensor activation(const Tensor& x, const std::string& name) {
  return name == "relu" ? functional::relu(x) : functional::gelu(x);
}

}  // namespace

Tensor generate_square_subsequent_mask(int64_t size, const TensorOptions& options) {
  EMBER_CHECK(size >= 0, "generate_square_subsequent_mask: size must not be negative, got ", size);
  const TensorOptions index = TensorOptions(kInt64).device(options.device());
  Tensor above = arange(size, index).unsqueeze(0) > arange(size, index).unsqueeze(1);
  Tensor mask = zeros({size, size}, options);
  return masked_fill(mask, above, -std::numeric_limits<double>::infinity());
}

// ---- TransformerEncoderLayer ----

TransformerEncoderLayer::TransformerEncoderLayer(int64_t d_model, int64_t nhead, TransformerEncoderLayerOptions options)
    : d_model(d_model), nhead(nhead), options(options) {
  const TransformerEncoderLayerOptions& o = this->options;
  // Registered and initialised in PyTorch's order, so that a seed gives PyTorch's parameters.
  self_attn = register_module(
      "self_attn", std::make_shared<MultiheadAttention>(
                       d_model, nhead,
                       MultiheadAttentionOptions{.dropout = o.dropout, .bias = o.bias, .batch_first = o.batch_first}));
  linear1 = register_module("linear1", std::make_shared<Linear>(d_model, o.dim_feedforward, o.bias));
  dropout = register_module("dropout", std::make_shared<Dropout>(o.dropout));
  linear2 = register_module("linear2", std::make_shared<Linear>(o.dim_feedforward, d_model, o.bias));
  norm1 = register_module("norm1",
                          std::make_shared<LayerNorm>(std::vector<int64_t>{d_model}, o.layer_norm_eps, true, o.bias));
  norm2 = register_module("norm2",
                          std::make_shared<LayerNorm>(std::vector<int64_t>{d_model}, o.layer_norm_eps, true, o.bias));
  dropout1 = register_module("dropout1", std::make_shared<Dropout>(o.dropout));
  dropout2 = register_module("dropout2", std::make_shared<Dropout>(o.dropout));
  EMBER_CHECK(o.activation == "relu" || o.activation == "gelu", "activation should be relu/gelu, not ", o.activation);
}

Tensor TransformerEncoderLayer::forward(const Tensor& src, const Tensor& src_mask, const Tensor& src_key_padding_mask,
                                        bool is_causal) {
  ember::detail::check_defined(src, "TransformerEncoderLayer");
  auto self_attention = [&](const Tensor& x) {
    MultiheadAttentionArgs args{
        .key_padding_mask = src_key_padding_mask, .need_weights = false, .attn_mask = src_mask, .is_causal = is_causal};
    return (*dropout1)(self_attn->forward(x, x, x, args).output);
  };
  auto feed_forward = [&](const Tensor& x) {
    return (*dropout2)((*linear2)((*dropout)(activation((*linear1)(x), options.activation))));
  };
  Tensor x = src;
  if (options.norm_first) {
    x = x + self_attention((*norm1)(x));
    x = x + feed_forward((*norm2)(x));
  } else {
    x = (*norm1)(x + self_attention(x));
    x = (*norm2)(x + feed_forward(x));
  }
  return x;
}

// ---- TransformerEncoder ----

TransformerEncoder::TransformerEncoder(const TransformerEncoderLayer& encoder_layer, int64_t num_layers,
                                       std::shared_ptr<LayerNorm> norm)
    : num_layers(num_layers) {
  EMBER_CHECK(num_layers >= 0, "TransformerEncoder: num_layers must not be negative, got ", num_layers);
  layers = register_module("layers", std::make_shared<ModuleList>());
  copy_layers(encoder_layer, num_layers, *layers);
  if (norm) this->norm = register_module("norm", std::move(norm));
}

Tensor TransformerEncoder::forward(const Tensor& src, const Tensor& mask, const Tensor& src_key_padding_mask,
                                   bool is_causal) {
  Tensor x = src;
  for (const auto& [name, layer] : *layers) {
    x = static_cast<TransformerEncoderLayer&>(*layer).forward(x, mask, src_key_padding_mask, is_causal);
  }
  return norm ? (*norm)(x) : x;
}

// ---- TransformerDecoderLayer ----

TransformerDecoderLayer::TransformerDecoderLayer(int64_t d_model, int64_t nhead, TransformerDecoderLayerOptions options)
    : d_model(d_model), nhead(nhead), options(options) {
  const TransformerDecoderLayerOptions& o = this->options;
  const MultiheadAttentionOptions attention{.dropout = o.dropout, .bias = o.bias, .batch_first = o.batch_first};
  self_attn = register_module("self_attn", std::make_shared<MultiheadAttention>(d_model, nhead, attention));
  multihead_attn = register_module("multihead_attn", std::make_shared<MultiheadAttention>(d_model, nhead, attention));
  linear1 = register_module("linear1", std::make_shared<Linear>(d_model, o.dim_feedforward, o.bias));
  dropout = register_module("dropout", std::make_shared<Dropout>(o.dropout));
  linear2 = register_module("linear2", std::make_shared<Linear>(o.dim_feedforward, d_model, o.bias));
  const std::vector<int64_t> shape{d_model};
  norm1 = register_module("norm1", std::make_shared<LayerNorm>(shape, o.layer_norm_eps, true, o.bias));
  norm2 = register_module("norm2", std::make_shared<LayerNorm>(shape, o.layer_norm_eps, true, o.bias));
  norm3 = register_module("norm3", std::make_shared<LayerNorm>(shape, o.layer_norm_eps, true, o.bias));
  dropout1 = register_module("dropout1", std::make_shared<Dropout>(o.dropout));
  dropout2 = register_module("dropout2", std::make_shared<Dropout>(o.dropout));
  dropout3 = register_module("dropout3", std::make_shared<Dropout>(o.dropout));
  EMBER_CHECK(o.activation == "relu" || o.activation == "gelu", "activation should be relu/gelu, not ", o.activation);
}

Tensor TransformerDecoderLayer::forward(const Tensor& tgt, const Tensor& memory, const TransformerDecoderArgs& args) {
  ember::detail::check_defined(tgt, "TransformerDecoderLayer");
  ember::detail::check_defined(memory, "TransformerDecoderLayer");
  auto self_attention = [&](const Tensor& x) {
    const MultiheadAttentionArgs a{.key_padding_mask = args.tgt_key_padding_mask,
                                   .need_weights = false,
                                   .attn_mask = args.tgt_mask,
                                   .is_causal = args.tgt_is_causal};
    return (*dropout1)(self_attn->forward(x, x, x, a).output);
  };
  auto memory_attention = [&](const Tensor& x) {
    const MultiheadAttentionArgs a{.key_padding_mask = args.memory_key_padding_mask,
                                   .need_weights = false,
                                   .attn_mask = args.memory_mask,
                                   .is_causal = args.memory_is_causal};
    return (*dropout2)(multihead_attn->forward(x, memory, memory, a).output);
  };
  auto feed_forward = [&](const Tensor& x) {
    return (*dropout3)((*linear2)((*dropout)(activation((*linear1)(x), options.activation))));
  };
  Tensor x = tgt;
  if (options.norm_first) {
    x = x + self_attention((*norm1)(x));
    x = x + memory_attention((*norm2)(x));
    x = x + feed_forward((*norm3)(x));
  } else {
    x = (*norm1)(x + self_attention(x));
    x = (*norm2)(x + memory_attention(x));
    x = (*norm3)(x + feed_forward(x));
  }
  return x;
}

// ---- TransformerDecoder ----

TransformerDecoder::TransformerDecoder(const TransformerDecoderLayer& decoder_layer, int64_t num_layers,
                                       std::shared_ptr<LayerNorm> norm)
    : num_layers(num_layers) {
  EMBER_CHECK(num_layers >= 0, "TransformerDecoder: num_layers must not be negative, got ", num_layers);
  layers = register_module("layers", std::make_shared<ModuleList>());
  copy_layers(decoder_layer, num_layers, *layers);
  if (norm) this->norm = register_module("norm", std::move(norm));
}

Tensor TransformerDecoder::forward(const Tensor& tgt, const Tensor& memory, const TransformerDecoderArgs& args) {
  Tensor x = tgt;
  for (const auto& [name, layer] : *layers) x = static_cast<TransformerDecoderLayer&>(*layer).forward(x, memory, args);
  return norm ? (*norm)(x) : x;
}

// ---- Transformer ----

Transformer::Transformer(TransformerOptions options) : options(std::move(options)) {
  const TransformerOptions& o = this->options;
  const TransformerEncoderLayerOptions layer{.dim_feedforward = o.dim_feedforward,
                                             .dropout = o.dropout,
                                             .activation = o.activation,
                                             .layer_norm_eps = o.layer_norm_eps,
                                             .batch_first = o.batch_first,
                                             .norm_first = o.norm_first,
                                             .bias = o.bias};
  const std::vector<int64_t> shape{o.d_model};
  // PyTorch's order: the encoder layer, its norm, the encoder (copies, no draws), then the same
  // for the decoder; then xavier_uniform_ of every parameter of two or more dimensions.
  {
    TransformerEncoderLayer encoder_layer(o.d_model, o.nhead, layer);
    auto encoder_norm = std::make_shared<LayerNorm>(shape, o.layer_norm_eps, true, o.bias);
    encoder = register_module("encoder",
                              std::make_shared<TransformerEncoder>(encoder_layer, o.num_encoder_layers, encoder_norm));
  }
  {
    TransformerDecoderLayer decoder_layer(o.d_model, o.nhead, layer);
    auto decoder_norm = std::make_shared<LayerNorm>(shape, o.layer_norm_eps, true, o.bias);
    decoder = register_module("decoder",
                              std::make_shared<TransformerDecoder>(decoder_layer, o.num_decoder_layers, decoder_norm));
  }
  for (const Tensor& p : parameters()) {
    if (p.dim() > 1) init::xavier_uniform_(p);
  }
}

Tensor Transformer::forward(const Tensor& src, const Tensor& tgt, const TransformerArgs& args) {
  ember::detail::check_defined(src, "Transformer");
  ember::detail::check_defined(tgt, "Transformer");
  const bool batched = src.dim() == 3;
  EMBER_CHECK(tgt.dim() == src.dim(), "the batch number of src and tgt must be equal");
  if (batched) {
    const int64_t batch_dim = options.batch_first ? 0 : 1;
    EMBER_CHECK(src.size(batch_dim) == tgt.size(batch_dim), "the batch number of src and tgt must be equal");
  }
  EMBER_CHECK(src.size(-1) == options.d_model && tgt.size(-1) == options.d_model,
              "the feature number of src and tgt must be equal to d_model");
  Tensor memory = encoder->forward(src, args.src_mask, args.src_key_padding_mask, args.src_is_causal);
  return decoder->forward(tgt, memory,
                          {.tgt_mask = args.tgt_mask,
                           .memory_mask = args.memory_mask,
                           .tgt_key_padding_mask = args.tgt_key_padding_mask,
                           .memory_key_padding_mask = args.memory_key_padding_mask,
                           .tgt_is_causal = args.tgt_is_causal,
                           .memory_is_causal = args.memory_is_causal});
}

}  // namespace ember::nn
