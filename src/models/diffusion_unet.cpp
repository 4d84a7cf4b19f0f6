// diffusers' UNet2DModel (see include/ember/models/diffusion_unet.h), built from ember::nn layers.
#include "ember/models/diffusion_unet.h"

#include <algorithm>
#include <cctype>
#include <cmath>
#include <sstream>

#include "core/check.h"
#include "ember/factories.h"
#include "ember/nn/activation.h"
#include "ember/nn/padding.h"
#include "ember/nn/upsampling.h"
#include "ember/ops.h"

namespace ember::models {

namespace diffusers {

Tensor get_timestep_embedding(const Tensor& timesteps, int64_t embedding_dim, bool flip_sin_to_cos,
                              double downscale_freq_shift, double scale, int64_t max_period) {
  EMBER_CHECK(timesteps.dim() == 1, "Timesteps should be a 1d-array");
  const int64_t half_dim = embedding_dim / 2;
  // In float32 step by step as diffusers writes it, whatever the model's dtype: the model casts
  // the result, so a float64 model sees the same (float32-rounded) embedding as diffusers'.
  const TensorOptions f32 = TensorOptions().dtype(kFloat32).device(timesteps.device());
  Tensor exponent = arange(0, half_dim, 1, f32) * (-std::log(static_cast<double>(max_period)));
  exponent = exponent / (static_cast<double>(half_dim) - downscale_freq_shift);
  Tensor emb = timesteps.unsqueeze(1).to(kFloat32) * exponent.exp().unsqueeze(0);
  if (scale != 1.0) emb = emb * scale;
  emb = cat({emb.sin(), emb.cos()}, -1);
  if (flip_sin_to_cos) emb = cat({emb.narrow(1, half_dim, half_dim), emb.narrow(1, 0, half_dim)}, -1);
  if (embedding_dim % 2 == 1) emb = nn::functional::pad(emb, {0, 1, 0, 0});
  return emb;
}

TimestepEmbedding::TimestepEmbedding(int64_t in_channels, int64_t time_embed_dim) {
  linear_1 = register_module("linear_1", std::make_shared<nn::Linear>(in_channels, time_embed_dim));
  act = register_module("act", std::make_shared<nn::SiLU>());
  linear_2 = register_module("linear_2", std::make_shared<nn::Linear>(time_embed_dim, time_embed_dim));
}

Tensor TimestepEmbedding::forward(const Tensor& sample) { return (*linear_2)((*act)((*linear_1)(sample))); }

std::shared_ptr<nn::Module> get_activation(const std::string& act_fn) {
  std::string lower = act_fn;
  for (char& c : lower) c = static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
  if (lower == "silu" || lower == "swish") return std::make_shared<nn::SiLU>();
  if (lower == "mish") return std::make_shared<nn::Mish>();
  if (lower == "gelu") return std::make_shared<nn::GELU>();
  if (lower == "relu") return std::make_shared<nn::ReLU>();
  detail::fail("activation function ", lower, " not found in ACT2FN mapping ['swish', 'silu', 'mish', 'gelu', 'relu']");
}

ResnetBlock2D::ResnetBlock2D(int64_t in_channels, int64_t out_channels, int64_t temb_channels, double eps,
                             int64_t groups, double dropout_p, const std::string& non_linearity,
                             double output_scale_factor)
    : output_scale_factor(output_scale_factor) {
  norm1 = register_module("norm1", std::make_shared<nn::GroupNorm>(groups, in_channels, eps));
  conv1 = register_module("conv1", std::make_shared<nn::Conv2d>(in_channels, out_channels, 3,
                                                                nn::Conv2dOptions{.stride = 1, .padding = 1}));
  time_emb_proj = register_module("time_emb_proj", std::make_shared<nn::Linear>(temb_channels, out_channels));
  norm2 = register_module("norm2", std::make_shared<nn::GroupNorm>(groups, out_channels, eps));
  dropout = register_module("dropout", std::make_shared<nn::Dropout>(dropout_p));
  conv2 = register_module("conv2", std::make_shared<nn::Conv2d>(out_channels, out_channels, 3,
                                                                nn::Conv2dOptions{.stride = 1, .padding = 1}));
  nonlinearity = register_module("nonlinearity", get_activation(non_linearity));
  if (in_channels != out_channels) {
    conv_shortcut = register_module("conv_shortcut", std::make_shared<nn::Conv2d>(in_channels, out_channels, 1));
  }
}

Tensor ResnetBlock2D::forward(const Tensor& input_tensor, const Tensor& temb) {
  Tensor hidden = (*conv1)((*nonlinearity)((*norm1)(input_tensor)));
  if (temb.defined()) hidden = hidden + (*time_emb_proj)((*nonlinearity)(temb)).unsqueeze(-1).unsqueeze(-1);
  hidden = (*conv2)((*dropout)((*nonlinearity)((*norm2)(hidden))));
  const Tensor shortcut = conv_shortcut ? (*conv_shortcut)(input_tensor) : input_tensor;
  Tensor out = shortcut + hidden;
  return output_scale_factor == 1.0 ? out : out / output_scale_factor;
}

Attention::Attention(int64_t query_dim, int64_t heads, int64_t dim_head, double rescale_output_factor, double eps,
                     std::optional<int64_t> norm_num_groups)
    : heads(heads), rescale_output_factor(rescale_output_factor) {
  EMBER_CHECK(heads >= 1, "Attention: the channels (", query_dim, ") must be at least attention_head_dim (", dim_head,
              ")");
  const int64_t inner_dim = dim_head * heads;
  if (norm_num_groups) {
    group_norm = register_module("group_norm", std::make_shared<nn::GroupNorm>(*norm_num_groups, query_dim, eps));
  }
  to_q = register_module("to_q", std::make_shared<nn::Linear>(query_dim, inner_dim));
  to_k = register_module("to_k", std::make_shared<nn::Linear>(query_dim, inner_dim));
  to_v = register_module("to_v", std::make_shared<nn::Linear>(query_dim, inner_dim));
  to_out = register_module("to_out", std::make_shared<nn::ModuleList>());
  to_out->push_back(std::make_shared<nn::Linear>(inner_dim, query_dim));
  to_out->push_back(std::make_shared<nn::Dropout>(0.0));
}

Tensor Attention::forward(const Tensor& hidden_states) {
  EMBER_CHECK(hidden_states.dim() == 4, "Attention: expected hidden_states [B, C, H, W], got ", hidden_states.dim(),
              "-D");
  const int64_t batch = hidden_states.size(0), channels = hidden_states.size(1);
  const int64_t height = hidden_states.size(2), width = hidden_states.size(3);
  // [B, C, H, W] → [B, H W, C]: one token per pixel.
  Tensor tokens = hidden_states.view({batch, channels, height * width}).transpose(1, 2);
  if (group_norm) tokens = (*group_norm)(tokens.transpose(1, 2)).transpose(1, 2);
  const Tensor query = (*to_q)(tokens), key = (*to_k)(tokens), value = (*to_v)(tokens);
  const int64_t head_dim = key.size(-1) / heads;
  auto split_heads = [&](const Tensor& t) { return t.view({batch, -1, heads, head_dim}).transpose(1, 2); };
  // scaled_dot_product_attention without a mask or dropout, with the 1/sqrt(head_dim) scale
  // applied to the query ([B, heads, HW, head_dim]) rather than to the scores ([B, heads, HW, HW]):
  // at 16x16 pixels the scores are 32 times larger, and scaling them cost a pass over them forward
  // and another backward (about a tenth of a training step).
  const double scale = 1.0 / std::sqrt(static_cast<double>(head_dim));
  const Tensor weights = softmax(matmul(split_heads(query) * scale, split_heads(key).transpose(-2, -1)), -1);
  Tensor out = matmul(weights, split_heads(value));
  out = out.transpose(1, 2).reshape({batch, -1, heads * head_dim});
  out = (*(*to_out)[1])((*(*to_out)[0])(out));
  out = out.transpose(-1, -2).reshape({batch, channels, height, width}) + hidden_states;
  return rescale_output_factor == 1.0 ? out : out / rescale_output_factor;
}

Downsample2D::Downsample2D(int64_t channels, int64_t padding) : channels(channels), padding(padding) {
  conv = register_module(
      "conv", std::make_shared<nn::Conv2d>(channels, channels, 3, nn::Conv2dOptions{.stride = 2, .padding = padding}));
}

Tensor Downsample2D::forward(const Tensor& hidden_states) {
  // diffusers' padding 0 pads one zero on the right and bottom only (TensorFlow's "same").
  if (padding == 0) return (*conv)(nn::functional::pad(hidden_states, {0, 1, 0, 1}));
  return (*conv)(hidden_states);
}

Upsample2D::Upsample2D(int64_t channels) : channels(channels) {
  conv = register_module("conv", std::make_shared<nn::Conv2d>(channels, channels, 3, nn::Conv2dOptions{.padding = 1}));
}

Tensor Upsample2D::forward(const Tensor& hidden_states) {
  return (*conv)(nn::functional::interpolate(hidden_states, {}, {2.0}, "nearest"));
}

namespace {

std::shared_ptr<ResnetBlock2D> make_resnet(int64_t in_channels, int64_t out_channels, const BlockSettings& s,
                                           double output_scale_factor = 1.0) {
  return std::make_shared<ResnetBlock2D>(in_channels, out_channels, s.temb_channels, s.eps, s.groups, s.dropout,
                                         s.act_fn, output_scale_factor);
}

std::shared_ptr<Attention> make_attention(int64_t channels, const BlockSettings& s, std::optional<int64_t> groups,
                                          double output_scale_factor = 1.0) {
  return std::make_shared<Attention>(channels, channels / s.attention_head_dim, s.attention_head_dim,
                                     output_scale_factor, s.eps, groups);
}

ResnetBlock2D& resnet_at(const nn::ModuleList& list, int64_t i) { return static_cast<ResnetBlock2D&>(*list[i]); }

/// Pops the last skip state.
Tensor pop_back(std::vector<Tensor>& states) {
  EMBER_CHECK(!states.empty(), "UNet2DModel: an up block ran out of skip states");
  Tensor last = states.back();
  states.pop_back();
  return last;
}

}  // namespace

DownBlock2D::DownBlock2D(int64_t num_layers, int64_t in_channels, int64_t out_channels, bool add_downsample,
                         int64_t downsample_padding, const BlockSettings& settings) {
  resnets = register_module("resnets", std::make_shared<nn::ModuleList>());
  for (int64_t i = 0; i < num_layers; ++i)
    resnets->push_back(make_resnet(i == 0 ? in_channels : out_channels, out_channels, settings));
  if (add_downsample) {
    downsamplers = register_module("downsamplers", std::make_shared<nn::ModuleList>());
    downsamplers->push_back(std::make_shared<Downsample2D>(out_channels, downsample_padding));
  }
}

std::pair<Tensor, std::vector<Tensor>> DownBlock2D::forward(const Tensor& hidden_states, const Tensor& temb) {
  Tensor hidden = hidden_states;
  std::vector<Tensor> output_states;
  for (int64_t i = 0; i < static_cast<int64_t>(resnets->size()); ++i) {
    hidden = resnet_at(*resnets, i).forward(hidden, temb);
    output_states.push_back(hidden);
  }
  if (downsamplers) {
    hidden = (*(*downsamplers)[0])(hidden);
    output_states.push_back(hidden);
  }
  return {hidden, output_states};
}

AttnDownBlock2D::AttnDownBlock2D(int64_t num_layers, int64_t in_channels, int64_t out_channels, bool add_downsample,
                                 int64_t downsample_padding, const BlockSettings& settings) {
  // Made resnet, attention, resnet, ... (the order of the initial draws), registered attentions
  // first, as diffusers does.
  attentions = register_module("attentions", std::make_shared<nn::ModuleList>());
  resnets = register_module("resnets", std::make_shared<nn::ModuleList>());
  for (int64_t i = 0; i < num_layers; ++i) {
    resnets->push_back(make_resnet(i == 0 ? in_channels : out_channels, out_channels, settings));
    attentions->push_back(make_attention(out_channels, settings, settings.groups));
  }
  if (add_downsample) {
    downsamplers = register_module("downsamplers", std::make_shared<nn::ModuleList>());
    downsamplers->push_back(std::make_shared<Downsample2D>(out_channels, downsample_padding));
  }
}

std::pair<Tensor, std::vector<Tensor>> AttnDownBlock2D::forward(const Tensor& hidden_states, const Tensor& temb) {
  Tensor hidden = hidden_states;
  std::vector<Tensor> output_states;
  for (int64_t i = 0; i < static_cast<int64_t>(resnets->size()); ++i) {
    hidden = (*(*attentions)[i])(resnet_at(*resnets, i).forward(hidden, temb));
    output_states.push_back(hidden);
  }
  if (downsamplers) {
    hidden = (*(*downsamplers)[0])(hidden);
    output_states.push_back(hidden);
  }
  return {hidden, output_states};
}

UNetMidBlock2D::UNetMidBlock2D(int64_t in_channels, double output_scale_factor, std::optional<int64_t> attn_groups,
                               bool add_attention, const BlockSettings& settings) {
  attentions = register_module("attentions", std::make_shared<nn::ModuleList>());
  resnets = register_module("resnets", std::make_shared<nn::ModuleList>());
  resnets->push_back(make_resnet(in_channels, in_channels, settings, output_scale_factor));
  // num_layers is 1 in UNet2DModel: one attention and a second resnet.
  if (add_attention) attentions->push_back(make_attention(in_channels, settings, attn_groups, output_scale_factor));
  resnets->push_back(make_resnet(in_channels, in_channels, settings, output_scale_factor));
}

Tensor UNetMidBlock2D::forward(const Tensor& hidden_states, const Tensor& temb) {
  Tensor hidden = resnet_at(*resnets, 0).forward(hidden_states, temb);
  for (int64_t i = 1; i < static_cast<int64_t>(resnets->size()); ++i) {
    if (attentions->size() > 0) hidden = (*(*attentions)[i - 1])(hidden);
    hidden = resnet_at(*resnets, i).forward(hidden, temb);
  }
  return hidden;
}

UpBlock2D::UpBlock2D(int64_t num_layers, int64_t in_channels, int64_t prev_output_channel, int64_t out_channels,
                     bool add_upsample, const BlockSettings& settings) {
  resnets = register_module("resnets", std::make_shared<nn::ModuleList>());
  for (int64_t i = 0; i < num_layers; ++i) {
    // The last resnet takes the skip from the level above (in_channels), the others this level's.
    const int64_t res_skip_channels = i == num_layers - 1 ? in_channels : out_channels;
    const int64_t resnet_in_channels = i == 0 ? prev_output_channel : out_channels;
    resnets->push_back(make_resnet(resnet_in_channels + res_skip_channels, out_channels, settings));
  }
  if (add_upsample) {
    upsamplers = register_module("upsamplers", std::make_shared<nn::ModuleList>());
    upsamplers->push_back(std::make_shared<Upsample2D>(out_channels));
  }
}

Tensor UpBlock2D::forward(const Tensor& hidden_states, std::vector<Tensor> res_hidden_states, const Tensor& temb) {
  Tensor hidden = hidden_states;
  for (int64_t i = 0; i < static_cast<int64_t>(resnets->size()); ++i) {
    hidden = resnet_at(*resnets, i).forward(cat({hidden, pop_back(res_hidden_states)}, 1), temb);
  }
  if (upsamplers) hidden = (*(*upsamplers)[0])(hidden);
  return hidden;
}

AttnUpBlock2D::AttnUpBlock2D(int64_t num_layers, int64_t in_channels, int64_t prev_output_channel, int64_t out_channels,
                             bool add_upsample, const BlockSettings& settings) {
  attentions = register_module("attentions", std::make_shared<nn::ModuleList>());
  resnets = register_module("resnets", std::make_shared<nn::ModuleList>());
  for (int64_t i = 0; i < num_layers; ++i) {
    const int64_t res_skip_channels = i == num_layers - 1 ? in_channels : out_channels;
    const int64_t resnet_in_channels = i == 0 ? prev_output_channel : out_channels;
    resnets->push_back(make_resnet(resnet_in_channels + res_skip_channels, out_channels, settings));
    attentions->push_back(make_attention(out_channels, settings, settings.groups));
  }
  if (add_upsample) {
    upsamplers = register_module("upsamplers", std::make_shared<nn::ModuleList>());
    upsamplers->push_back(std::make_shared<Upsample2D>(out_channels));
  }
}

Tensor AttnUpBlock2D::forward(const Tensor& hidden_states, std::vector<Tensor> res_hidden_states, const Tensor& temb) {
  Tensor hidden = hidden_states;
  for (int64_t i = 0; i < static_cast<int64_t>(resnets->size()); ++i) {
    hidden = resnet_at(*resnets, i).forward(cat({hidden, pop_back(res_hidden_states)}, 1), temb);
    hidden = (*(*attentions)[i])(hidden);
  }
  if (upsamplers) hidden = (*(*upsamplers)[0])(hidden);
  return hidden;
}

}  // namespace diffusers

namespace {

/// Python's repr of a tuple of strings or ints, for diffusers' messages.
std::string python_tuple(const std::vector<std::string>& items) {
  std::ostringstream out;
  out << "(";
  for (size_t i = 0; i < items.size(); ++i) out << (i ? ", " : "") << "'" << items[i] << "'";
  out << (items.size() == 1 ? ",)" : ")");
  return out.str();
}

std::string python_tuple(const std::vector<int64_t>& items) {
  std::ostringstream out;
  out << "(";
  for (size_t i = 0; i < items.size(); ++i) out << (i ? ", " : "") << items[i];
  out << (items.size() == 1 ? ",)" : ")");
  return out.str();
}

bool is_one_of(const std::string& value, std::initializer_list<const char*> known) {
  for (const char* k : known)
    if (value == k) return true;
  return false;
}

void check_supported(const UNet2DModelOptions& c) {
  EMBER_CHECK(c.down_block_types.size() == c.up_block_types.size(),
              "Must provide the same number of `down_block_types` as `up_block_types`. `down_block_types`: ",
              python_tuple(c.down_block_types), ". `up_block_types`: ", python_tuple(c.up_block_types), ".");
  EMBER_CHECK(c.block_out_channels.size() == c.down_block_types.size(),
              "Must provide the same number of `block_out_channels` as `down_block_types`. `block_out_channels`: ",
              python_tuple(c.block_out_channels), ". `down_block_types`: ", python_tuple(c.down_block_types), ".");
  EMBER_CHECK(!c.block_out_channels.empty(), "UNet2DModel: block_out_channels must not be empty");
  for (const std::string& type : c.down_block_types) {
    EMBER_CHECK(is_one_of(type, {"DownBlock2D", "AttnDownBlock2D"}), "UNet2DModel: the down block type ", type,
                " is not supported by ember (it supports DownBlock2D and AttnDownBlock2D)");
  }
  for (const std::string& type : c.up_block_types) {
    EMBER_CHECK(is_one_of(type, {"UpBlock2D", "AttnUpBlock2D"}), "UNet2DModel: the up block type ", type,
                " is not supported by ember (it supports UpBlock2D and AttnUpBlock2D)");
  }
  EMBER_CHECK(c.mid_block_type.empty() || c.mid_block_type == "UNetMidBlock2D", "UNet2DModel: the mid block type ",
              c.mid_block_type, " is not supported by ember (it supports UNetMidBlock2D and None)");
  EMBER_CHECK(c.time_embedding_type == "positional", "UNet2DModel: time_embedding_type '", c.time_embedding_type,
              "' is not supported by ember (it supports 'positional')");
  EMBER_CHECK(c.resnet_time_scale_shift == "default", "UNet2DModel: resnet_time_scale_shift '",
              c.resnet_time_scale_shift, "' is not supported by ember (it supports 'default')");
  EMBER_CHECK(c.downsample_type == "conv" && c.upsample_type == "conv",
              "UNet2DModel: downsample_type and upsample_type other than 'conv' are not supported by ember, got '",
              c.downsample_type, "' and '", c.upsample_type, "'");
  EMBER_CHECK(!c.class_embed_type && !c.num_class_embeds,
              "UNet2DModel: class embeddings (class_embed_type, num_class_embeds) are not supported by ember");
  EMBER_CHECK(c.layers_per_block >= 1, "UNet2DModel: layers_per_block must be positive, got ", c.layers_per_block);
}

}  // namespace

UNet2DModel::UNet2DModel(UNet2DModelOptions options) : config(std::move(options)) {
  using namespace diffusers;
  const UNet2DModelOptions& c = config;
  check_supported(c);
  const std::vector<int64_t>& channels = c.block_out_channels;
  const int64_t levels = static_cast<int64_t>(channels.size());
  const int64_t time_embed_dim = c.time_embedding_dim.value_or(channels[0] * 4);

  conv_in = register_module(
      "conv_in", std::make_shared<nn::Conv2d>(c.in_channels, channels[0], 3, nn::Conv2dOptions{.padding = 1}));
  time_proj = register_module(
      "time_proj", std::make_shared<Timesteps>(channels[0], c.flip_sin_to_cos, static_cast<double>(c.freq_shift)));
  time_embedding = register_module("time_embedding", std::make_shared<TimestepEmbedding>(channels[0], time_embed_dim));
  down_blocks = register_module("down_blocks", std::make_shared<nn::ModuleList>());
  up_blocks = register_module("up_blocks", std::make_shared<nn::ModuleList>());

  auto settings_for = [&](int64_t block_channels) {
    return BlockSettings{.temb_channels = time_embed_dim,
                         .eps = c.norm_eps,
                         .groups = c.norm_num_groups,
                         .dropout = c.dropout,
                         .act_fn = c.act_fn,
                         .attention_head_dim = c.attention_head_dim.value_or(block_channels)};
  };

  int64_t output_channel = channels[0];
  for (int64_t i = 0; i < levels; ++i) {
    const int64_t input_channel = output_channel;
    output_channel = channels[i];
    const bool is_final_block = i == levels - 1;
    const BlockSettings settings = settings_for(output_channel);
    std::shared_ptr<UNetDownBlock> block;
    if (c.down_block_types[i] == "DownBlock2D") {
      block = std::make_shared<DownBlock2D>(c.layers_per_block, input_channel, output_channel, !is_final_block,
                                            c.downsample_padding, settings);
    } else {
      block = std::make_shared<AttnDownBlock2D>(c.layers_per_block, input_channel, output_channel, !is_final_block,
                                                c.downsample_padding, settings);
    }
    down_blocks->push_back(block);
    down_.push_back(block);
  }

  if (!c.mid_block_type.empty()) {
    // The mid block's attention normalises with attn_norm_num_groups, else norm_num_groups.
    mid_block = register_module("mid_block",
                                std::make_shared<UNetMidBlock2D>(channels.back(), c.mid_block_scale_factor,
                                                                 c.attn_norm_num_groups.value_or(c.norm_num_groups),
                                                                 c.add_attention, settings_for(channels.back())));
  }

  std::vector<int64_t> reversed(channels.rbegin(), channels.rend());
  output_channel = reversed[0];
  for (int64_t i = 0; i < levels; ++i) {
    const int64_t prev_output_channel = output_channel;
    output_channel = reversed[i];
    const int64_t input_channel = reversed[std::min(i + 1, levels - 1)];
    const bool is_final_block = i == levels - 1;
    const BlockSettings settings = settings_for(output_channel);
    std::shared_ptr<UNetUpBlock> block;
    if (c.up_block_types[i] == "UpBlock2D") {
      block = std::make_shared<UpBlock2D>(c.layers_per_block + 1, input_channel, prev_output_channel, output_channel,
                                          !is_final_block, settings);
    } else {
      block = std::make_shared<AttnUpBlock2D>(c.layers_per_block + 1, input_channel, prev_output_channel,
                                              output_channel, !is_final_block, settings);
    }
    up_blocks->push_back(block);
    up_.push_back(block);
  }

  conv_norm_out =
      register_module("conv_norm_out", std::make_shared<nn::GroupNorm>(c.norm_num_groups, channels[0], c.norm_eps));
  conv_act = register_module("conv_act", std::make_shared<nn::SiLU>());
  conv_out = register_module(
      "conv_out", std::make_shared<nn::Conv2d>(channels[0], c.out_channels, 3, nn::Conv2dOptions{.padding = 1}));
}

Tensor UNet2DModel::forward(const Tensor& sample_in, const Tensor& timestep) {
  EMBER_CHECK(sample_in.dim() == 4, "UNet2DModel: expected sample [N, C, H, W], got ", sample_in.dim(), "-D");
  Tensor sample = config.center_input_sample ? sample_in * 2.0 - 1.0 : sample_in;
  Tensor timesteps = timestep.dim() == 0 ? timestep.unsqueeze(0) : timestep;
  timesteps = timesteps.to(sample.device());
  // Broadcast to the batch, as diffusers does (one value for all, or one each).
  timesteps = timesteps * ones({sample.size(0)}, TensorOptions().dtype(timesteps.dtype()).device(timesteps.device()));
  const Tensor emb = (*time_embedding)((*time_proj)(timesteps).to(conv_in->weight.dtype()));

  sample = (*conv_in)(sample);
  std::vector<Tensor> down_block_res_samples{sample};
  for (const auto& block : down_) {
    auto [hidden, res_samples] = block->forward(sample, emb);
    sample = hidden;
    down_block_res_samples.insert(down_block_res_samples.end(), res_samples.begin(), res_samples.end());
  }
  if (mid_block) sample = mid_block->forward(sample, emb);
  for (const auto& block : up_) {
    // Each up block takes the last num_resnets skip states.
    const auto count = static_cast<std::ptrdiff_t>(block->num_resnets());
    std::vector<Tensor> res_samples(down_block_res_samples.end() - count, down_block_res_samples.end());
    down_block_res_samples.resize(down_block_res_samples.size() - static_cast<size_t>(count));
    sample = block->forward(sample, std::move(res_samples), emb);
  }
  return (*conv_out)((*conv_act)((*conv_norm_out)(sample)));
}

Tensor UNet2DModel::forward(const Tensor& sample, int64_t timestep) {
  return forward(sample, tensor(std::vector<int64_t>{timestep}));
}

}  // namespace ember::models
