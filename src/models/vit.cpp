// torchvision's Vision Transformer (see include/ember/models/vit.h), built from ember::nn layers.
#include "ember/models/vit.h"

#include <cmath>
#include <sstream>
#include <utility>

#include "core/check.h"
#include "ember/factories.h"
#include "ember/grad_mode.h"
#include "ember/nn/init.h"
#include "ember/ops.h"

namespace ember::models {

namespace {

/// Python's repr of a shape, torch.Size([2, 5]), for torchvision's assertion messages.
std::string torch_size(const Tensor& t) {
  std::ostringstream os;
  os << "torch.Size([";
  for (int64_t d = 0; d < t.dim(); ++d) os << (d ? ", " : "") << t.size(d);
  os << "])";
  return os.str();
}

/// torchvision's LayerNorm for ViT: partial(nn.LayerNorm, eps=1e-6).
std::shared_ptr<nn::LayerNorm> vit_layer_norm(int64_t hidden_dim) {
  return std::make_shared<nn::LayerNorm>(hidden_dim, 1e-6);
}

}  // namespace

namespace vit {

void NamedSequential::add(const std::string& key, std::shared_ptr<nn::Module> module) {
  register_module(key, std::move(module));
}

MLPBlock::MLPBlock(int64_t in_dim, int64_t mlp_dim, double dropout) {
  // torchvision.ops.MLP(in_dim, [mlp_dim, in_dim], activation_layer=GELU, dropout=dropout): the
  // Linears draw their default initial values as they are built ...
  auto first = std::make_shared<nn::Linear>(in_dim, mlp_dim);
  push_back(first);
  push_back(std::make_shared<nn::GELU>());
  push_back(std::make_shared<nn::Dropout>(dropout));
  auto second = std::make_shared<nn::Linear>(mlp_dim, in_dim);
  push_back(second);
  push_back(std::make_shared<nn::Dropout>(dropout));
  // ... and MLPBlock then redraws each, in order.
  NoGradGuard no_grad;
  for (const auto& linear : {first, second}) {
    nn::init::xavier_uniform_(linear->weight);
    nn::init::normal_(linear->bias, 0.0, 1e-6);
  }
}

EncoderBlock::EncoderBlock(int64_t num_heads_, int64_t hidden_dim, int64_t mlp_dim, double dropout_p,
                           double attention_dropout)
    : num_heads(num_heads_) {
  ln_1 = register_module("ln_1", vit_layer_norm(hidden_dim));
  self_attention = register_module(
      "self_attention",
      std::make_shared<nn::MultiheadAttention>(
          hidden_dim, num_heads, nn::MultiheadAttentionOptions{.dropout = attention_dropout, .batch_first = true}));
  dropout = register_module("dropout", std::make_shared<nn::Dropout>(dropout_p));
  ln_2 = register_module("ln_2", vit_layer_norm(hidden_dim));
  mlp = register_module("mlp", std::make_shared<MLPBlock>(hidden_dim, mlp_dim, dropout_p));
}

Tensor EncoderBlock::forward(const Tensor& input) {
  EMBER_CHECK(input.dim() == 3, "Expected (batch_size, seq_length, hidden_dim) got ", torch_size(input));
  Tensor x = (*ln_1)(input);
  x = self_attention->forward(x, x, x, {.need_weights = false}).output;
  x = (*dropout)(x) + input;
  return x + (*mlp)((*ln_2)(x));
}

Encoder::Encoder(int64_t seq_length, int64_t num_layers, int64_t num_heads, int64_t hidden_dim, int64_t mlp_dim,
                 double dropout_p, double attention_dropout) {
  // BERT's position embedding: N(0, 0.02), drawn before the blocks.
  pos_embedding = register_parameter("pos_embedding", empty({1, seq_length, hidden_dim}));
  {
    NoGradGuard no_grad;
    nn::init::normal_(pos_embedding, 0.0, 0.02);
  }
  dropout = register_module("dropout", std::make_shared<nn::Dropout>(dropout_p));
  layers = register_module("layers", std::make_shared<NamedSequential>());
  for (int64_t i = 0; i < num_layers; ++i)
    layers->add("encoder_layer_" + std::to_string(i),
                std::make_shared<EncoderBlock>(num_heads, hidden_dim, mlp_dim, dropout_p, attention_dropout));
  ln = register_module("ln", vit_layer_norm(hidden_dim));
}

Tensor Encoder::forward(const Tensor& input) {
  EMBER_CHECK(input.dim() == 3, "Expected (batch_size, seq_length, hidden_dim) got ", torch_size(input));
  return (*ln)((*layers)((*dropout)(input + pos_embedding)));
}

}  // namespace vit

VisionTransformer::VisionTransformer(int64_t image_size_, int64_t patch_size_, int64_t num_layers, int64_t num_heads,
                                     int64_t hidden_dim_, int64_t mlp_dim_, VisionTransformerOptions options_)
    : image_size(image_size_), patch_size(patch_size_), hidden_dim(hidden_dim_), mlp_dim(mlp_dim_), options(options_) {
  EMBER_CHECK(patch_size >= 1 && image_size >= 1, "VisionTransformer: image_size and patch_size must be positive, got ",
              image_size, " and ", patch_size);
  EMBER_CHECK(image_size % patch_size == 0, "Input shape indivisible by patch size!");
  conv_proj = register_module(
      "conv_proj", std::make_shared<nn::Conv2d>(3, hidden_dim, patch_size, nn::Conv2dOptions{.stride = patch_size}));
  seq_length = (image_size / patch_size) * (image_size / patch_size) + 1;  // the patches and the class token
  class_token = register_parameter("class_token", zeros({1, 1, hidden_dim}));
  encoder =
      register_module("encoder", std::make_shared<vit::Encoder>(seq_length, num_layers, num_heads, hidden_dim, mlp_dim,
                                                                options.dropout, options.attention_dropout));
  heads = register_module("heads", std::make_shared<vit::NamedSequential>());
  std::shared_ptr<nn::Linear> pre_logits, head;
  if (options.representation_size) {
    pre_logits = std::make_shared<nn::Linear>(hidden_dim, *options.representation_size);
    heads->add("pre_logits", pre_logits);
    heads->add("act", std::make_shared<nn::Tanh>());
    head = std::make_shared<nn::Linear>(*options.representation_size, options.num_classes);
  } else {
    head = std::make_shared<nn::Linear>(hidden_dim, options.num_classes);
  }
  heads->add("head", head);

  // torchvision's initialisation after building everything, in its order.
  NoGradGuard no_grad;
  const double patch_fan_in = 3.0 * static_cast<double>(patch_size * patch_size);
  nn::init::trunc_normal_(conv_proj->weight, 0.0, std::sqrt(1.0 / patch_fan_in));
  nn::init::zeros_(conv_proj->bias);
  if (pre_logits) {
    nn::init::trunc_normal_(pre_logits->weight, 0.0, std::sqrt(1.0 / static_cast<double>(hidden_dim)));
    nn::init::zeros_(pre_logits->bias);
  }
  nn::init::zeros_(head->weight);
  nn::init::zeros_(head->bias);
}

Tensor VisionTransformer::process_input(const Tensor& images) {
  EMBER_CHECK(images.dim() == 4, "VisionTransformer: expected images [N, 3, H, W], got ", torch_size(images));
  const int64_t n = images.size(0), h = images.size(2), w = images.size(3);
  EMBER_CHECK(h == image_size, "Wrong image height! Expected ", image_size, " but got ", h, "!");
  EMBER_CHECK(w == image_size, "Wrong image width! Expected ", image_size, " but got ", w, "!");
  const int64_t patches = (h / patch_size) * (w / patch_size);
  // [n, hidden, n_h, n_w] → [n, hidden, n_h n_w] → [n, n_h n_w, hidden]: one token per patch.
  return (*conv_proj)(images).reshape({n, hidden_dim, patches}).permute({0, 2, 1});
}

Tensor VisionTransformer::forward(const Tensor& images) {
  Tensor x = process_input(images);
  const int64_t n = x.size(0);
  x = cat({class_token.expand({n, -1, -1}), x}, 1);
  x = (*encoder)(x);
  return (*heads)(x.select(1, 0));  // the class token's final state
}

namespace {

std::shared_ptr<VisionTransformer> make_vit(int64_t patch_size, int64_t num_layers, int64_t num_heads,
                                            int64_t hidden_dim, int64_t mlp_dim, VisionTransformerOptions options,
                                            int64_t image_size) {
  return std::make_shared<VisionTransformer>(image_size, patch_size, num_layers, num_heads, hidden_dim, mlp_dim,
                                             options);
}

}  // namespace

std::shared_ptr<VisionTransformer> vit_b_16(VisionTransformerOptions options, int64_t image_size) {
  return make_vit(16, 12, 12, 768, 3072, options, image_size);
}
std::shared_ptr<VisionTransformer> vit_b_32(VisionTransformerOptions options, int64_t image_size) {
  return make_vit(32, 12, 12, 768, 3072, options, image_size);
}
std::shared_ptr<VisionTransformer> vit_l_16(VisionTransformerOptions options, int64_t image_size) {
  return make_vit(16, 24, 16, 1024, 4096, options, image_size);
}
std::shared_ptr<VisionTransformer> vit_l_32(VisionTransformerOptions options, int64_t image_size) {
  return make_vit(32, 24, 16, 1024, 4096, options, image_size);
}
std::shared_ptr<VisionTransformer> vit_h_14(VisionTransformerOptions options, int64_t image_size) {
  return make_vit(14, 32, 16, 1280, 5120, options, image_size);
}

}  // namespace ember::models
