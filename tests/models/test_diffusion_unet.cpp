// ember::models::UNet2DModel against diffusers 0.42.1's own UNet2DModel
// (tools/gen_models_diffusion_unet_golden.py): state_dict keys, order and shapes (a small model,
// four levels of the default block types, the default configuration's keys); in float64 with two
// levels and two layers per block (DownBlock2D, AttnDownBlock2D, UNetMidBlock2D, AttnUpBlock2D,
// UpBlock2D; two attention heads) the timestep embedding, the output, the MSE loss, the sample's
// and every parameter's gradient; a variant with the other options; diffusers' initial draws
// from the same seed and its messages; a few AdamW steps of DDPM noise prediction.
#include <gtest/gtest.h>

#include <string>
#include <vector>

#include "ember/ember.h"
#include "ember/io/safetensors.h"
#include "ember/models/diffusion_unet.h"
#include "models/model_pattern.h"
#include "support/error_of.h"
#include "support/gradcheck.h"

namespace {

using namespace ember;
using ember_models_test::fill_state;
using ember_models_test::keys_and_shapes;
using ember_models_test::pattern;
using ember_models_test::relative_error;
using ember_models_test::split;
using ember_test::error_of;
namespace F = ember::nn::functional;

const io::SafetensorsData& golden() {
  static const io::SafetensorsData data =
      io::load_safetensors(EMBER_SOURCE_DIR "/tests/models/golden/models_diffusion_unet_golden.safetensors");
  return data;
}

/// The script's SMALL configuration.
models::UNet2DModelOptions small_config() {
  return {.sample_size = 16,
          .down_block_types = {"DownBlock2D", "AttnDownBlock2D"},
          .up_block_types = {"AttnUpBlock2D", "UpBlock2D"},
          .block_out_channels = {4, 8},
          .layers_per_block = 2,
          .attention_head_dim = 4,
          .norm_num_groups = 2};
}

std::shared_ptr<models::UNet2DModel> golden_model(const models::UNet2DModelOptions& config) {
  auto model = std::make_shared<models::UNet2DModel>(config);
  model->to(kFloat64);
  fill_state(*model);
  return model;
}

TEST(ModelsDiffusionUNet, StateDictKeysOrderAndShapesAreDiffusers) {
  EXPECT_EQ(keys_and_shapes(models::UNet2DModel(small_config()).state_dict()),
            split(golden().metadata.at("keys.small"), ';'));
  // The default block types with fewer channels: the default configuration's keys, in order.
  const auto four_levels =
      keys_and_shapes(models::UNet2DModel({.block_out_channels = {8, 16, 24, 32}, .norm_num_groups = 8}).state_dict());
  EXPECT_EQ(four_levels, split(golden().metadata.at("keys.four_levels"), ';'));
  std::vector<std::string> keys;
  for (const std::string& item : four_levels) keys.push_back(item.substr(0, item.find(':')));
  EXPECT_EQ(keys, split(golden().metadata.at("keys.default"), ';'));
}

TEST(ModelsDiffusionUNet, TimestepEmbeddingIsDiffusersInFloat32) {
  auto model = golden_model(small_config());
  const Tensor t_emb = (*model->time_proj)(tensor(std::vector<int64_t>{3, 250}));
  EXPECT_EQ(t_emb.dtype(), kFloat32);
  EXPECT_LT(relative_error(t_emb, golden().at("t_emb")), 1e-7);
}

TEST(ModelsDiffusionUNet, MatchesDiffusersInFloat64) {
  const auto& g = golden();
  auto model = golden_model(small_config());
  const Tensor sample = pattern({2, 3, 16, 16}, 1000, 0.0, 4.0).requires_grad_();
  const Tensor out = model->forward(sample, tensor(std::vector<int64_t>{3, 250}));
  const Tensor loss = F::mse_loss(out, pattern(out.sizes(), 2000, 0.0, 2.0));
  loss.backward();
  EXPECT_LT(relative_error(out, g.at("out")), 1e-10);
  EXPECT_LT(relative_error(loss, g.at("loss")), 1e-12);
  EXPECT_LT(relative_error(sample.grad(), g.at("gx")), 1e-10);
  const auto parameters = model->named_parameters();
  const auto grads = ember_models_test::unpack(g.at("grads"), parameters);
  for (size_t i = 0; i < parameters.size(); ++i) {
    const auto& [key, p] = parameters[i];
    ASSERT_TRUE(p.grad().defined()) << key;
    EXPECT_LT(relative_error(p.grad(), grads[i]), 1e-10) << key;
  }
  EXPECT_GT(parameters.size(), 100u);
}

TEST(ModelsDiffusionUNet, OneTimestepIsBroadcastAndEvalDropsNothing) {
  auto model = golden_model(small_config());
  const Tensor sample = pattern({2, 3, 16, 16}, 1000, 0.0, 4.0);
  NoGradGuard no_grad;
  const Tensor each = model->forward(sample, tensor(std::vector<int64_t>{10, 10}));
  EXPECT_EQ(relative_error(model->forward(sample, 10), each), 0.0);
  EXPECT_EQ(relative_error(model->forward(sample, tensor(std::vector<int64_t>{10}).view({})), each), 0.0);
  // Dropout in the resnets is the identity in eval mode.
  auto config = small_config();
  config.dropout = 0.1;
  auto with_dropout = golden_model(config);
  with_dropout->eval();
  EXPECT_LT(relative_error(with_dropout->forward(sample, tensor(std::vector<int64_t>{3, 250})), golden().at("out")),
            1e-10);
}

TEST(ModelsDiffusionUNet, OtherOptionsMatchDiffusers) {
  auto config = small_config();
  config.center_input_sample = true;
  config.flip_sin_to_cos = false;
  config.freq_shift = 1;
  config.mid_block_scale_factor = 2.0;
  config.downsample_padding = 0;
  config.time_embedding_dim = 12;
  config.act_fn = "mish";
  config.add_attention = false;
  config.attn_norm_num_groups = 1;
  auto model = golden_model(config);
  NoGradGuard no_grad;
  const Tensor out = model->forward(pattern({2, 3, 16, 16}, 1000, 0.0, 4.0), tensor(std::vector<int64_t>{3, 250}));
  EXPECT_LT(relative_error(out, golden().at("variant.out")), 1e-10);
}

TEST(ModelsDiffusionUNet, Float32MatchesTheFloat64ReferenceToItsPrecision) {
  auto model = golden_model(small_config());
  model->to(kFloat32);
  NoGradGuard no_grad;
  const Tensor out =
      model->forward(pattern({2, 3, 16, 16}, 1000, 0.0, 4.0).to(kFloat32), tensor(std::vector<int64_t>{3, 250}));
  EXPECT_EQ(out.dtype(), kFloat32);
  EXPECT_LT(relative_error(out, golden().at("out")), 2e-5);
}

TEST(ModelsDiffusionUNet, BlocksGradcheck) {
  using namespace models::diffusers;
  auto attention = std::make_shared<Attention>(4, 2, 2, 1.0, 1e-5, 2);
  auto resnet = std::make_shared<ResnetBlock2D>(4, 6, 5, 1e-5, 2, 0.0, "silu", 1.0);
  for (const std::shared_ptr<nn::Module>& m :
       {std::static_pointer_cast<nn::Module>(attention), std::static_pointer_cast<nn::Module>(resnet)}) {
    m->to(kFloat64);
    fill_state(*m);
  }
  ember::test::gradcheck("Attention", [&](const std::vector<Tensor>& in) { return (*attention)(in[0]); },
                         {pattern({2, 4, 3, 3}, 5, 0.0, 2.0)});
  ember::test::gradcheck("ResnetBlock2D", [&](const std::vector<Tensor>& in) { return resnet->forward(in[0], in[1]); },
                         {pattern({2, 4, 3, 3}, 6, 0.0, 2.0), pattern({2, 5}, 7, 0.0, 2.0)});
}

TEST(ModelsDiffusionUNet, InitialDrawsAreDiffusersFromTheSameSeed) {
  manual_seed(0);
  models::UNet2DModel model(small_config());
  const Tensor expected = golden().at("init");
  int64_t offset = 0;
  for (const auto& [key, p] : model.named_parameters()) {
    const Tensor flat = p.detach().reshape({-1}).to(kFloat64);
    const double magnitude = flat.abs().sum().item<double>();
    EXPECT_NEAR(flat.sum().item<double>(), expected[offset].item<double>(), 1e-7 * (magnitude + 1.0)) << key;
    const int64_t shown = std::min<int64_t>(4, flat.numel());
    for (int64_t i = 0; i < shown; ++i) {
      const double want = expected[offset + 1 + i].item<double>();
      EXPECT_NEAR(flat[i].item<double>(), want, 2e-7 * std::abs(want)) << key << "[" << i << "]";
    }
    offset += 1 + shown;
  }
  EXPECT_EQ(offset, expected.numel());
}

TEST(ModelsDiffusionUNet, DiffusersMessagesAndUnsupportedBlocks) {
  const auto& meta = golden().metadata;
  auto with = [](auto change) {
    return error_of([&] {
      auto config = small_config();
      change(config);
      models::UNet2DModel model(config);
    });
  };
  EXPECT_EQ(with([](auto& c) { c.up_block_types = {"UpBlock2D"}; }), meta.at("error.lengths"));
  EXPECT_EQ(with([](auto& c) { c.block_out_channels = {4, 8, 8}; }), meta.at("error.channels"));
  EXPECT_EQ(with([](auto& c) {
              c.down_block_types = {"DownBlock2D", "CrossAttnDownBlock2D"};
            }),
            "UNet2DModel: the down block type CrossAttnDownBlock2D is not supported by ember (it supports "
            "DownBlock2D and AttnDownBlock2D)");
  EXPECT_EQ(with([](auto& c) {
              c.up_block_types = {"SkipUpBlock2D", "UpBlock2D"};
            }),
            "UNet2DModel: the up block type SkipUpBlock2D is not supported by ember (it supports UpBlock2D and "
            "AttnUpBlock2D)");
  EXPECT_EQ(with([](auto& c) { c.time_embedding_type = "fourier"; }),
            "UNet2DModel: time_embedding_type 'fourier' is not supported by ember (it supports 'positional')");
  EXPECT_EQ(with([](auto& c) { c.downsample_type = "resnet"; }),
            "UNet2DModel: downsample_type and upsample_type other than 'conv' are not supported by ember, got "
            "'resnet' and 'conv'");
  EXPECT_EQ(with([](auto& c) { c.act_fn = "tanh"; }),
            "activation function tanh not found in ACT2FN mapping ['swish', 'silu', 'mish', 'gelu', 'relu']");
  EXPECT_EQ(with([](auto& c) { c.num_class_embeds = 10; }),
            "UNet2DModel: class embeddings (class_embed_type, num_class_embeds) are not supported by ember");
  // Wrong samples: diffusers' messages (from the convolution, cat and the timesteps' broadcast).
  auto model = golden_model(small_config());
  const Tensor timesteps = tensor(std::vector<int64_t>{3, 250});
  const TensorOptions f64 = TensorOptions().dtype(kFloat64);
  EXPECT_EQ(error_of([&] { model->forward(zeros({2, 4, 16, 16}, f64), timesteps); }), meta.at("error.sample_channels"));
  EXPECT_EQ(error_of([&] { model->forward(zeros({2, 3, 15, 15}, f64), timesteps); }), meta.at("error.sample_size"));
  EXPECT_EQ(error_of([&] { model->forward(zeros({3, 3, 16, 16}, f64), timesteps); }), meta.at("error.batch"));
}

TEST(ModelsDiffusionUNet, AdamwStepsLowerTheNoisePredictionLoss) {
  manual_seed(0);
  models::UNet2DModel model({.sample_size = 8,
                             .in_channels = 1,
                             .out_channels = 1,
                             .down_block_types = {"DownBlock2D", "AttnDownBlock2D"},
                             .up_block_types = {"AttnUpBlock2D", "UpBlock2D"},
                             .block_out_channels = {8, 16},
                             .layers_per_block = 1,
                             .norm_num_groups = 4});
  // DDPM's forward process at fixed timesteps: x_t = sqrt(abar) x0 + sqrt(1 - abar) noise.
  const Tensor x0 = randn({4, 1, 8, 8}).sign();
  const Tensor noise = randn({4, 1, 8, 8});
  const Tensor abar = tensor(std::vector<double>{0.9, 0.6, 0.3, 0.1}).to(kFloat32).view({4, 1, 1, 1});
  const Tensor noisy = abar.sqrt() * x0 + (1.0 - abar).sqrt() * noise;
  const Tensor timesteps = tensor(std::vector<int64_t>{50, 200, 500, 800});
  optim::AdamW optimizer(model.parameters(), {.lr = 3e-3});
  double first = 0.0, last = 0.0;
  for (int step = 0; step < 12; ++step) {
    const Tensor loss = F::mse_loss(model.forward(noisy, timesteps), noise);
    if (step == 0) first = loss.item<double>();
    last = loss.item<double>();
    optimizer.zero_grad();
    loss.backward();
    optimizer.step();
  }
  EXPECT_LT(last, 0.7 * first);
}

}  // namespace
