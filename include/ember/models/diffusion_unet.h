#pragma once
/// ember::models::UNet2DModel: the denoising U-Net of diffusers 0.42.1 (diffusers.UNet2DModel,
/// the DDPM model), with the block types DownBlock2D, AttnDownBlock2D, UNetMidBlock2D,
/// AttnUpBlock2D and UpBlock2D, diffusers' module names, registration and construction order,
/// config names and defaults, so that a state_dict moves between the two unchanged
/// ("conv_in.weight", "time_embedding.linear_1.weight", "down_blocks.1.attentions.0.to_q.weight",
/// "down_blocks.0.downsamplers.0.conv.bias", "mid_block.resnets.1.time_emb_proj.weight",
/// "up_blocks.0.upsamplers.0.conv.weight", "conv_out.bias", ...).
///
///   models::UNet2DModel model({.sample_size = 32, .block_out_channels = {64, 128},
///                              .down_block_types = {"DownBlock2D", "AttnDownBlock2D"},
///                              .up_block_types = {"AttnUpBlock2D", "UpBlock2D"}});
///   Tensor noise_prediction = model.forward(noisy_images, timesteps);   // timesteps: int64 [N]
///
/// Other block types, time_embedding_type other than "positional", class embeddings,
/// resnet_time_scale_shift other than "default" and the "resnet" down/upsample types are refused
/// with an ember::Error naming what is unsupported. Initialisation is each layer's PyTorch
/// default, drawn in diffusers' construction order (it sets none of its own).
#include <cstdint>
#include <memory>
#include <optional>
#include <string>
#include <utility>
#include <vector>

#include "ember/nn/conv.h"
#include "ember/nn/modules.h"

namespace ember::models {

/// UNet2DModel's configuration (diffusers' names and defaults) for what ember supports.
struct UNet2DModelOptions {
  std::optional<int64_t> sample_size = std::nullopt;  // recorded only, as in diffusers
  int64_t in_channels = 3;
  int64_t out_channels = 3;
  bool center_input_sample = false;
  std::string time_embedding_type = "positional";            // the only type ember supports
  std::optional<int64_t> time_embedding_dim = std::nullopt;  // None: block_out_channels[0] * 4
  int64_t freq_shift = 0;
  bool flip_sin_to_cos = true;
  std::vector<std::string> down_block_types = {"DownBlock2D", "AttnDownBlock2D", "AttnDownBlock2D", "AttnDownBlock2D"};
  std::string mid_block_type = "UNetMidBlock2D";  // or "" (None): no mid block
  std::vector<std::string> up_block_types = {"AttnUpBlock2D", "AttnUpBlock2D", "AttnUpBlock2D", "UpBlock2D"};
  std::vector<int64_t> block_out_channels = {224, 448, 672, 896};
  int64_t layers_per_block = 2;
  double mid_block_scale_factor = 1.0;
  int64_t downsample_padding = 1;
  std::string downsample_type = "conv";  // the only type ember supports
  std::string upsample_type = "conv";    // likewise
  double dropout = 0.0;
  std::string act_fn = "silu";                    // "silu", "swish", "mish", "gelu" or "relu"
  std::optional<int64_t> attention_head_dim = 8;  // None: one head per block
  int64_t norm_num_groups = 32;
  std::optional<int64_t> attn_norm_num_groups = std::nullopt;  // None: norm_num_groups
  double norm_eps = 1e-5;
  std::string resnet_time_scale_shift = "default";  // the only one ember supports
  bool add_attention = true;
  std::optional<std::string> class_embed_type = std::nullopt;  // refused unless None
  std::optional<int64_t> num_class_embeds = std::nullopt;      // likewise
};

namespace diffusers {

/// The sinusoidal timestep embedding of DDPM (diffusers' get_timestep_embedding): timesteps [N]
/// → [N, embedding_dim], computed in float32 whatever the model's dtype, as diffusers does.
Tensor get_timestep_embedding(const Tensor& timesteps, int64_t embedding_dim, bool flip_sin_to_cos = false,
                              double downscale_freq_shift = 1, double scale = 1, int64_t max_period = 10000);

/// get_timestep_embedding as a module (no parameters).
class Timesteps : public nn::Module {
 public:
  Timesteps(int64_t num_channels, bool flip_sin_to_cos, double downscale_freq_shift, double scale = 1)
      : num_channels(num_channels),
        flip_sin_to_cos(flip_sin_to_cos),
        downscale_freq_shift(downscale_freq_shift),
        scale(scale) {}
  std::string name() const override { return "Timesteps"; }
  Tensor forward(const Tensor& timesteps) override {
    return get_timestep_embedding(timesteps, num_channels, flip_sin_to_cos, downscale_freq_shift, scale);
  }
  int64_t num_channels;
  bool flip_sin_to_cos;
  double downscale_freq_shift, scale;
};

/// linear_1, act (SiLU), linear_2.
class TimestepEmbedding : public nn::Module {
 public:
  TimestepEmbedding(int64_t in_channels, int64_t time_embed_dim);
  std::string name() const override { return "TimestepEmbedding"; }
  Tensor forward(const Tensor& sample) override;
  std::shared_ptr<nn::Linear> linear_1, linear_2;
  std::shared_ptr<nn::Module> act;
};

/// diffusers' get_activation: SiLU for "silu" and "swish", Mish, GELU, ReLU.
std::shared_ptr<nn::Module> get_activation(const std::string& act_fn);

/// GroupNorm, activation, 3x3 conv, plus the projected time embedding, GroupNorm, activation,
/// dropout, 3x3 conv; the input (through a 1x1 conv_shortcut when the channels change) added,
/// divided by output_scale_factor.
class ResnetBlock2D : public nn::Module {
 public:
  ResnetBlock2D(int64_t in_channels, int64_t out_channels, int64_t temb_channels, double eps, int64_t groups,
                double dropout, const std::string& non_linearity, double output_scale_factor);
  std::string name() const override { return "ResnetBlock2D"; }
  Tensor forward(const Tensor& input_tensor, const Tensor& temb);
  using nn::Module::forward;

  std::shared_ptr<nn::GroupNorm> norm1, norm2;
  std::shared_ptr<nn::Conv2d> conv1, conv2, conv_shortcut;  // conv_shortcut null when the channels match
  std::shared_ptr<nn::Linear> time_emb_proj;
  std::shared_ptr<nn::Dropout> dropout;
  std::shared_ptr<nn::Module> nonlinearity;
  double output_scale_factor;
};

/// Self-attention over the pixels (diffusers' Attention as the deprecated attention block:
/// group_norm, to_q, to_k, to_v, to_out.0 (Linear), to_out.1 (Dropout), a residual connection,
/// divided by rescale_output_factor).
class Attention : public nn::Module {
 public:
  /// norm_num_groups nullopt: no group_norm.
  Attention(int64_t query_dim, int64_t heads, int64_t dim_head, double rescale_output_factor, double eps,
            std::optional<int64_t> norm_num_groups);
  std::string name() const override { return "Attention"; }
  /// hidden_states [B, C, H, W] → [B, C, H, W].
  Tensor forward(const Tensor& hidden_states) override;

  int64_t heads;
  double rescale_output_factor;
  std::shared_ptr<nn::GroupNorm> group_norm;  // may be null
  std::shared_ptr<nn::Linear> to_q, to_k, to_v;
  std::shared_ptr<nn::ModuleList> to_out;
};

/// A 3x3 convolution of stride 2 (padding 0: the input padded by one on the right and bottom).
class Downsample2D : public nn::Module {
 public:
  Downsample2D(int64_t channels, int64_t padding);
  std::string name() const override { return "Downsample2D"; }
  Tensor forward(const Tensor& hidden_states) override;
  int64_t channels, padding;
  std::shared_ptr<nn::Conv2d> conv;
};

/// Nearest-neighbour 2x interpolation, then a 3x3 convolution.
class Upsample2D : public nn::Module {
 public:
  explicit Upsample2D(int64_t channels);
  std::string name() const override { return "Upsample2D"; }
  Tensor forward(const Tensor& hidden_states) override;
  int64_t channels;
  std::shared_ptr<nn::Conv2d> conv;
};

/// The down blocks' common form: the output and the states the up blocks take as skips.
class UNetDownBlock : public nn::Module {
 public:
  virtual std::pair<Tensor, std::vector<Tensor>> forward(const Tensor& hidden_states, const Tensor& temb) = 0;
  using nn::Module::forward;
};

/// The up blocks' common form: `res_hidden_states` holds (at least) the last resnets.size()
/// skip states; each resnet takes one from the end.
class UNetUpBlock : public nn::Module {
 public:
  virtual Tensor forward(const Tensor& hidden_states, std::vector<Tensor> res_hidden_states, const Tensor& temb) = 0;
  using nn::Module::forward;
  virtual int64_t num_resnets() const = 0;
};

/// The block settings UNet2DModel hands every block.
struct BlockSettings {
  int64_t temb_channels;
  double eps;
  int64_t groups;
  double dropout;
  std::string act_fn;
  int64_t attention_head_dim;
};

/// resnets (num_layers ResnetBlock2D), then downsamplers.0 (Downsample2D) unless the last level.
class DownBlock2D : public UNetDownBlock {
 public:
  DownBlock2D(int64_t num_layers, int64_t in_channels, int64_t out_channels, bool add_downsample,
              int64_t downsample_padding, const BlockSettings& settings);
  std::string name() const override { return "DownBlock2D"; }
  std::pair<Tensor, std::vector<Tensor>> forward(const Tensor& hidden_states, const Tensor& temb) override;
  std::shared_ptr<nn::ModuleList> resnets, downsamplers;  // downsamplers may be null
};

/// DownBlock2D with an Attention after each resnet (attentions registered before resnets).
class AttnDownBlock2D : public UNetDownBlock {
 public:
  AttnDownBlock2D(int64_t num_layers, int64_t in_channels, int64_t out_channels, bool add_downsample,
                  int64_t downsample_padding, const BlockSettings& settings);
  std::string name() const override { return "AttnDownBlock2D"; }
  std::pair<Tensor, std::vector<Tensor>> forward(const Tensor& hidden_states, const Tensor& temb) override;
  std::shared_ptr<nn::ModuleList> attentions, resnets, downsamplers;
};

/// resnets.0, then (attention i, resnets.i+1) per layer.
class UNetMidBlock2D : public nn::Module {
 public:
  UNetMidBlock2D(int64_t in_channels, double output_scale_factor, std::optional<int64_t> attn_groups,
                 bool add_attention, const BlockSettings& settings);
  std::string name() const override { return "UNetMidBlock2D"; }
  Tensor forward(const Tensor& hidden_states, const Tensor& temb);
  using nn::Module::forward;
  std::shared_ptr<nn::ModuleList> attentions, resnets;  // attentions empty without add_attention
};

/// resnets (num_layers, each on cat([hidden, skip])), then upsamplers.0 unless the last level.
class UpBlock2D : public UNetUpBlock {
 public:
  UpBlock2D(int64_t num_layers, int64_t in_channels, int64_t prev_output_channel, int64_t out_channels,
            bool add_upsample, const BlockSettings& settings);
  std::string name() const override { return "UpBlock2D"; }
  Tensor forward(const Tensor& hidden_states, std::vector<Tensor> res_hidden_states, const Tensor& temb) override;
  int64_t num_resnets() const override { return static_cast<int64_t>(resnets->size()); }
  std::shared_ptr<nn::ModuleList> resnets, upsamplers;
};

/// UpBlock2D with an Attention after each resnet (attentions registered before resnets).
class AttnUpBlock2D : public UNetUpBlock {
 public:
  AttnUpBlock2D(int64_t num_layers, int64_t in_channels, int64_t prev_output_channel, int64_t out_channels,
                bool add_upsample, const BlockSettings& settings);
  std::string name() const override { return "AttnUpBlock2D"; }
  Tensor forward(const Tensor& hidden_states, std::vector<Tensor> res_hidden_states, const Tensor& temb) override;
  int64_t num_resnets() const override { return static_cast<int64_t>(resnets->size()); }
  std::shared_ptr<nn::ModuleList> attentions, resnets, upsamplers;
};

}  // namespace diffusers

/// diffusers.UNet2DModel: conv_in, time_proj, time_embedding, down_blocks, up_blocks, mid_block
/// (registered in that order, as diffusers does), conv_norm_out, conv_act, conv_out.
class UNet2DModel : public nn::Module {
 public:
  explicit UNet2DModel(UNet2DModelOptions options = {});
  std::string name() const override { return "UNet2DModel"; }
  /// sample [N, in_channels, H, W] (H and W multiples of 2^(levels - 1)), timesteps: one value
  /// (0-D or [1]) for the whole batch or one per sample [N] → [N, out_channels, H, W] (diffusers'
  /// UNet2DOutput.sample).
  Tensor forward(const Tensor& sample, const Tensor& timesteps);
  /// One integer timestep for the whole batch.
  Tensor forward(const Tensor& sample, int64_t timestep);
  using nn::Module::forward;

  UNet2DModelOptions config;
  std::shared_ptr<nn::Conv2d> conv_in, conv_out;
  std::shared_ptr<diffusers::Timesteps> time_proj;
  std::shared_ptr<diffusers::TimestepEmbedding> time_embedding;
  std::shared_ptr<nn::ModuleList> down_blocks, up_blocks;
  std::shared_ptr<diffusers::UNetMidBlock2D> mid_block;  // null when mid_block_type is None
  std::shared_ptr<nn::GroupNorm> conv_norm_out;
  std::shared_ptr<nn::SiLU> conv_act;

 private:
  std::vector<std::shared_ptr<diffusers::UNetDownBlock>> down_;
  std::vector<std::shared_ptr<diffusers::UNetUpBlock>> up_;
};

}  // namespace ember::models
