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
#include "ember/ops.h"

namespace ember::nn {

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
  detail::check_defined(src, "TransformerEncoderLayer");
  auto self_attention = [&](const Tensor& x) {
    MultiheadAttentionArgs args{
        .key_padding_mask = src_key_padding_mask, .need_weights = false, .attn_mask = src_mask, .is_causal = is_causal};
    return (*dropout1)(self_attn->forward(x, x, x, args).output);
  };
  auto feed_forward = [&](const Tensor& x) {
    Tensor h = (*linear1)(x);
    h = options.activation == "relu" ? functional::relu(h) : functional::gelu(h);
    return (*dropout2)((*linear2)((*dropout)(h)));
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
  // PyTorch deep-copies the layer: every copy starts with its parameters, and nothing is drawn
  // from the generator. Building a copy draws its own initial values, so the generator is put
  // back afterwards.
  const Tensor rng = get_rng_state();
  const StateDict state = encoder_layer.state_dict();
  const std::vector<Tensor> params = encoder_layer.parameters();  // the copies' device and dtype
  for (int64_t i = 0; i < num_layers; ++i) {
    auto copy =
        std::make_shared<TransformerEncoderLayer>(encoder_layer.d_model, encoder_layer.nhead, encoder_layer.options);
    if (!params.empty()) copy->to(params[0].device(), params[0].dtype());
    copy->load_state_dict(state);
    copy->train(encoder_layer.is_training());
    const auto source = encoder_layer.named_parameters();
    auto target = copy->named_parameters();
    for (size_t p = 0; p < source.size(); ++p) target[p].second.requires_grad_(source[p].second.requires_grad());
    layers->push_back(copy);
  }
  set_rng_state(rng);
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

}  // namespace ember::nn
