#pragma once
/// ember::models::VisionTransformer: torchvision's ViT (torchvision.models.vision_transformer,
/// torchvision 0.29), with its module names, registration order and initialisation, so a
/// state_dict moves between the two unchanged:
///   class_token [1, 1, hidden], conv_proj.{weight,bias}, encoder.pos_embedding [1, seq, hidden],
///   encoder.layers.encoder_layer_<i>.ln_1.{weight,bias},
///     .self_attention.in_proj_weight/in_proj_bias, .self_attention.out_proj.{weight,bias},
///     .ln_2.{weight,bias}, .mlp.0.{weight,bias}, .mlp.3.{weight,bias},
///   encoder.ln.{weight,bias}, heads.head.{weight,bias} (heads.pre_logits first with
///   representation_size)
///
///   auto model = ember::models::vit_b_16({.num_classes = 10});
///   Tensor logits = (*model)(images);           // images [N, 3, 224, 224] → [N, 10]
///
///   ember::models::VisionTransformer small(32, 8, 2, 2, 32, 64, {.num_classes = 10});
///
/// Initialisation as torchvision's: conv_proj.weight trunc_normal_(std = sqrt(1 / fan_in)) and a
/// zero bias, class_token zeros, pos_embedding N(0, 0.02), each attention as
/// nn.MultiheadAttention's, each MLPBlock Linear xavier_uniform_ with N(0, 1e-6) biases,
/// pre_logits trunc_normal_(std = sqrt(1 / fan_in)) with a zero bias, heads.head zeros. Every
/// draw happens in torchvision's order, so manual_seed(n) gives torchvision's initial values.
///
/// Not carried over: norm_layer (always LayerNorm with eps 1e-6, torchvision's default) and
/// conv_stem_configs (the patchify convolution only).
#include <cstdint>
#include <memory>
#include <optional>
#include <string>

#include "ember/nn/conv.h"
#include "ember/nn/modules.h"
#include "ember/nn/transformer.h"

namespace ember::models {

/// torchvision's VisionTransformer arguments after the six sizes, with its defaults.
struct VisionTransformerOptions {
  double dropout = 0.0;            // after the position embedding, the attention and in the MLP
  double attention_dropout = 0.0;  // on the attention weights
  int64_t num_classes = 1000;
  /// A Linear + Tanh (heads.pre_logits, heads.act) of this width before heads.head.
  std::optional<int64_t> representation_size = std::nullopt;
};

namespace vit {

/// A Sequential whose children have names of their own (as torchvision builds nn.Sequential from
/// an OrderedDict: "encoder_layer_0", "head", ...). name() is "Sequential".
class NamedSequential : public nn::Sequential {
 public:
  void add(const std::string& key, std::shared_ptr<nn::Module> module);
};

/// torchvision's MLPBlock: the children 0 Linear(in_dim, mlp_dim), 1 GELU, 2 Dropout,
/// 3 Linear(mlp_dim, in_dim), 4 Dropout (torchvision.ops.MLP, a Sequential).
class MLPBlock : public nn::Sequential {
 public:
  MLPBlock(int64_t in_dim, int64_t mlp_dim, double dropout);
  std::string name() const override { return "MLPBlock"; }
};

/// Pre-norm encoder block: x + dropout(self_attention(ln_1(x))), then + mlp(ln_2(.)).
class EncoderBlock : public nn::Module {
 public:
  EncoderBlock(int64_t num_heads, int64_t hidden_dim, int64_t mlp_dim, double dropout, double attention_dropout);
  std::string name() const override { return "EncoderBlock"; }
  /// input [batch, seq, hidden] → the same shape.
  Tensor forward(const Tensor& input) override;

  int64_t num_heads;
  std::shared_ptr<nn::LayerNorm> ln_1, ln_2;
  std::shared_ptr<nn::MultiheadAttention> self_attention;  // batch_first
  std::shared_ptr<nn::Dropout> dropout;
  std::shared_ptr<MLPBlock> mlp;
};

/// pos_embedding (a parameter), dropout, the blocks (layers.encoder_layer_<i>) and a final LayerNorm.
class Encoder : public nn::Module {
 public:
  Encoder(int64_t seq_length, int64_t num_layers, int64_t num_heads, int64_t hidden_dim, int64_t mlp_dim,
          double dropout, double attention_dropout);
  std::string name() const override { return "Encoder"; }
  Tensor forward(const Tensor& input) override;

  Tensor pos_embedding;  // [1, seq_length, hidden_dim]
  std::shared_ptr<nn::Dropout> dropout;
  std::shared_ptr<NamedSequential> layers;
  std::shared_ptr<nn::LayerNorm> ln;
};

}  // namespace vit

/// Patches (a strided convolution), a class token, the encoder, and the class token's final
/// state through the heads.
class VisionTransformer : public nn::Module {
 public:
  VisionTransformer(int64_t image_size, int64_t patch_size, int64_t num_layers, int64_t num_heads, int64_t hidden_dim,
                    int64_t mlp_dim, VisionTransformerOptions options = {});
  std::string name() const override { return "VisionTransformer"; }
  /// images [N, 3, image_size, image_size] → logits [N, num_classes].
  Tensor forward(const Tensor& images) override;
  /// torchvision's _process_input: [N, 3, H, W] → the patches' embeddings [N, (H/p)(W/p), hidden_dim].
  Tensor process_input(const Tensor& images);

  int64_t image_size, patch_size, hidden_dim, mlp_dim, seq_length;
  VisionTransformerOptions options;
  Tensor class_token;  // [1, 1, hidden_dim]
  std::shared_ptr<nn::Conv2d> conv_proj;
  std::shared_ptr<vit::Encoder> encoder;
  std::shared_ptr<vit::NamedSequential> heads;  // [pre_logits, act,] head
};

/// torchvision.models.vit_b_16, vit_b_32, vit_l_16, vit_l_32 and vit_h_14 without pretrained
/// weights (load them with load_state_dict): the patch size, depth, heads and widths of each,
/// at image_size (torchvision's default 224).
std::shared_ptr<VisionTransformer> vit_b_16(VisionTransformerOptions options = {}, int64_t image_size = 224);
std::shared_ptr<VisionTransformer> vit_b_32(VisionTransformerOptions options = {}, int64_t image_size = 224);
std::shared_ptr<VisionTransformer> vit_l_16(VisionTransformerOptions options = {}, int64_t image_size = 224);
std::shared_ptr<VisionTransformer> vit_l_32(VisionTransformerOptions options = {}, int64_t image_size = 224);
std::shared_ptr<VisionTransformer> vit_h_14(VisionTransformerOptions options = {}, int64_t image_size = 224);

}  // namespace ember::models
