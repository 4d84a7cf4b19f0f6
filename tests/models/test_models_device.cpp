// One training step of each model family of ember::models on each accelerator against the CPU:
// the same small float32 model built twice from one seed, the CPU copy's state_dict loaded into
// the second copy, which is then moved with Module::to(device); both fed the same inputs (made on
// the CPU, then copied to the device). The loss, the output, every parameter's gradient (by name)
// and every buffer after the step (BatchNorm's running statistics) are compared with the CPU's,
// and every parameter, buffer and output is checked to be on the device.
//
// On the stand-in device (support/devices.h) this runs the CPU's kernels again, so it mostly
// checks device handling: an op inside a model that makes a tensor on the CPU, or hands a CPU
// tensor to a device kernel, fails here as it would on a GPU.
#include <gtest/gtest.h>

#include <functional>
#include <memory>
#include <string>
#include <utility>
#include <vector>

#include "ember/ember.h"
#include "ember/models/dcgan.h"
#include "ember/models/diffusion_unet.h"
#include "ember/models/efficientnet.h"
#include "ember/models/gpt2.h"
#include "ember/models/llama.h"
#include "ember/models/mobilenet.h"
#include "ember/models/resnet.h"
#include "ember/models/seq2seq.h"
#include "ember/models/text_cnn.h"
#include "ember/models/unet.h"
#include "ember/models/vae.h"
#include "ember/models/vit.h"
#include "ember/nn/nn.h"
#include "support/devices.h"

namespace {

using namespace ember;
namespace nn = ember::nn;
namespace F = ember::nn::functional;
using ember_test::close_to_cpu;

struct Tolerance {
  double rtol, atol;
};
// float32 with the same math on both sides: only the order of accumulation may differ.
constexpr Tolerance kFloat32Tolerance{1e-4, 1e-5};
// cuDNN may pick Winograd or FFT convolution algorithms, exact only to about 1e-5 of the
// operands' scale (as in tests/nn/test_device_parity_nn.cpp); the stand-in runs the CPU's
// kernels and keeps kFloat32Tolerance.
constexpr Tolerance kCudaConvTolerance{1e-4, 5e-4};

class DeviceParityModels : public ember_test::DeviceTest {
 protected:
  void SetUp() override {
    DeviceTest::SetUp();
    if (IsSkipped()) return;
    manual_seed(7);
  }
  // Always a copy, so that nothing done on the device side touches the CPU's inputs.
  Tensor on(const Tensor& cpu) const { return cpu.to(device(), false, true); }
  Tolerance conv_tolerance() const { return device().is_cuda() ? kCudaConvTolerance : kFloat32Tolerance; }

  /// Two copies of make()'s model from one seed: the CPU one and one with the CPU one's
  /// state_dict, moved to the device. Both in train mode (the families' dropouts are set to 0 by
  /// the callers) or both in eval mode.
  template <class Model>
  std::pair<std::shared_ptr<Model>, std::shared_ptr<Model>> twins(const std::function<std::shared_ptr<Model>()>& make,
                                                                  bool training = true) {
    manual_seed(11);
    std::shared_ptr<Model> cpu = make();
    manual_seed(11);
    std::shared_ptr<Model> dev = make();
    EXPECT_EQ(dev->load_state_dict(cpu->state_dict()).to_string(), "<All keys matched successfully>");
    dev->to(device());
    cpu->train(training);
    dev->train(training);
    expect_on_device(*dev);
    return {cpu, dev};
  }

  void expect_on_device(const nn::Module& model) const {
    for (const auto& [name, p] : model.named_parameters()) {
      EXPECT_EQ(p.device(), device()) << "parameter " << name << " after to(" << device() << ")";
    }
    for (const auto& [name, b] : model.named_buffers()) {
      if (b.defined()) {
        EXPECT_EQ(b.device(), device()) << "buffer " << name << " after to(" << device() << ")";
      }
    }
  }

  /// Compares one step's results: `outputs` pairs (device, CPU) by name, then every parameter's
  /// gradient and every buffer of the two models.
  void compare_step(const nn::Module& cpu, const nn::Module& dev, const Tensor& cpu_loss, const Tensor& dev_loss,
                    const std::vector<std::pair<std::string, std::pair<Tensor, Tensor>>>& outputs,
                    Tolerance tolerance) const {
    EXPECT_EQ(dev_loss.device(), device()) << "the loss";
    EXPECT_TRUE(close_to_cpu(dev_loss.detach(), cpu_loss.detach(), tolerance.rtol, tolerance.atol, "loss"));
    for (const auto& [what, pair] : outputs) {
      const auto& [on_device, reference] = pair;
      EXPECT_EQ(on_device.device(), device()) << what;
      EXPECT_TRUE(close_to_cpu(on_device.detach(), reference.detach(), tolerance.rtol, tolerance.atol, what));
    }
    const auto cpu_parameters = cpu.named_parameters();
    const auto dev_parameters = dev.named_parameters();
    ASSERT_EQ(cpu_parameters.size(), dev_parameters.size());
    size_t with_gradient = 0;
    for (size_t i = 0; i < cpu_parameters.size(); ++i) {
      const auto& [name, cpu_p] = cpu_parameters[i];
      const auto& [dev_name, dev_p] = dev_parameters[i];
      ASSERT_EQ(dev_name, name);
      ASSERT_EQ(dev_p.grad().defined(), cpu_p.grad().defined()) << "gradient of " << name;
      if (!cpu_p.grad().defined()) continue;
      ++with_gradient;
      EXPECT_EQ(dev_p.grad().device(), device()) << "gradient of " << name;
      EXPECT_TRUE(close_to_cpu(dev_p.grad(), cpu_p.grad(), tolerance.rtol, tolerance.atol, "gradient of " + name));
    }
    EXPECT_GT(with_gradient, 0u) << "no parameter has a gradient";
    const auto cpu_buffers = cpu.named_buffers();
    const auto dev_buffers = dev.named_buffers();
    ASSERT_EQ(cpu_buffers.size(), dev_buffers.size());
    for (size_t i = 0; i < cpu_buffers.size(); ++i) {
      const auto& [name, cpu_b] = cpu_buffers[i];
      const auto& [dev_name, dev_b] = dev_buffers[i];
      ASSERT_EQ(dev_name, name);
      if (!cpu_b.defined()) continue;
      EXPECT_EQ(dev_b.device(), device()) << "buffer " << name << " after the step";
      EXPECT_TRUE(close_to_cpu(dev_b, cpu_b, tolerance.rtol, tolerance.atol, "buffer " + name + " after the step"));
    }
  }

  /// The image classifiers' step: cross-entropy of model(x) against y.
  void classifier_step(nn::Module& cpu, nn::Module& dev, const Tensor& x, const Tensor& y, Tolerance tolerance) {
    const Tensor cpu_out = cpu.forward(x);
    const Tensor dev_out = dev.forward(on(x));
    const Tensor cpu_loss = F::cross_entropy(cpu_out, y);
    const Tensor dev_loss = F::cross_entropy(dev_out, on(y));
    cpu_loss.backward();
    dev_loss.backward();
    compare_step(cpu, dev, cpu_loss, dev_loss, {{"logits", {dev_out, cpu_out}}}, tolerance);
  }
};

Tensor labels(std::vector<int64_t> values) { return tensor(values); }

TEST_P(DeviceParityModels, ResNet) {
  auto [cpu, dev] = twins<models::ResNet>([] {
    return models::resnet18({.num_classes = 4, .stage_widths = {4, 4, 8, 8}});
  });
  classifier_step(*cpu, *dev, randn({2, 3, 32, 32}), labels({1, 3}), conv_tolerance());
}

TEST_P(DeviceParityModels, ResNetBottleneck) {
  auto [cpu, dev] = twins<models::ResNet>([] {
    return std::make_shared<models::ResNet>(models::ResNetBlock::Bottleneck, std::array<int64_t, 4>{1, 1, 1, 1},
                                            models::ResNetOptions{.num_classes = 3, .stage_widths = {2, 4, 4, 8}});
  });
  classifier_step(*cpu, *dev, randn({2, 3, 32, 32}), labels({0, 2}), conv_tolerance());
}

TEST_P(DeviceParityModels, MobileNetV2) {
  auto [cpu, dev] = twins<models::MobileNetV2>(
      [] { return models::mobilenet_v2({.num_classes = 4, .width_mult = 0.25, .dropout = 0.0}); });
  classifier_step(*cpu, *dev, randn({2, 3, 32, 32}), labels({2, 0}), conv_tolerance());
}

TEST_P(DeviceParityModels, EfficientNet) {
  auto [cpu, dev] = twins<models::EfficientNet>([] {
    return std::make_shared<models::EfficientNet>(
        models::efficientnet_b_setting(0.25, 0.5),
        models::EfficientNetOptions{.num_classes = 4, .dropout = 0.0, .stochastic_depth_prob = 0.0}, 64);
  });
  classifier_step(*cpu, *dev, randn({2, 3, 32, 32}), labels({3, 1}), conv_tolerance());
}

TEST_P(DeviceParityModels, VisionTransformer) {
  auto [cpu, dev] = twins<models::VisionTransformer>([] {
    return std::make_shared<models::VisionTransformer>(16, 4, 2, 2, 16, 32,
                                                       models::VisionTransformerOptions{.num_classes = 5});
  });
  classifier_step(*cpu, *dev, randn({2, 3, 16, 16}), labels({4, 0}), conv_tolerance());
}

TEST_P(DeviceParityModels, UNet) {
  for (const bool bilinear : {false, true}) {
    SCOPED_TRACE(bilinear ? "bilinear" : "transposed convolutions");
    auto [cpu, dev] = twins<models::UNet>([bilinear] {
      return std::make_shared<models::UNet>(3, 2, models::UNetOptions{bilinear, 4});
    });
    // Segmentation: per-pixel cross-entropy over the two classes.
    const Tensor x = randn({2, 3, 16, 16});
    const Tensor y = randint(0, 2, {2, 16, 16});
    const Tensor cpu_out = cpu->forward(x);
    const Tensor dev_out = dev->forward(on(x));
    const Tensor cpu_loss = F::cross_entropy(cpu_out, y);
    const Tensor dev_loss = F::cross_entropy(dev_out, on(y));
    cpu_loss.backward();
    dev_loss.backward();
    compare_step(*cpu, *dev, cpu_loss, dev_loss, {{"logits", {dev_out, cpu_out}}}, conv_tolerance());
  }
}

TEST_P(DeviceParityModels, DiffusionUNet) {
  auto [cpu, dev] = twins<models::UNet2DModel>([] {
    return std::make_shared<models::UNet2DModel>(
        models::UNet2DModelOptions{.sample_size = 8,
                                   .in_channels = 1,
                                   .out_channels = 1,
                                   .down_block_types = {"DownBlock2D", "AttnDownBlock2D"},
                                   .up_block_types = {"AttnUpBlock2D", "UpBlock2D"},
                                   .block_out_channels = {4, 8},
                                   .layers_per_block = 1,
                                   .attention_head_dim = 4,
                                   .norm_num_groups = 2});
  });
  // The noise-prediction loss at one timestep per sample.
  const Tensor noisy = randn({2, 1, 8, 8});
  const Tensor noise = randn({2, 1, 8, 8});
  const Tensor timesteps = labels({50, 700});
  const Tensor cpu_out = cpu->forward(noisy, timesteps);
  const Tensor dev_out = dev->forward(on(noisy), on(timesteps));
  const Tensor cpu_loss = F::mse_loss(cpu_out, noise);
  const Tensor dev_loss = F::mse_loss(dev_out, on(noise));
  cpu_loss.backward();
  dev_loss.backward();
  compare_step(*cpu, *dev, cpu_loss, dev_loss, {{"predicted noise", {dev_out, cpu_out}}}, conv_tolerance());
  // One integer timestep for the whole batch: the embedding is made inside the model, on the
  // sample's device.
  const Tensor cpu_single = cpu->forward(noisy, 300);
  const Tensor dev_single = dev->forward(on(noisy), 300);
  EXPECT_EQ(dev_single.device(), device());
  EXPECT_TRUE(close_to_cpu(dev_single.detach(), cpu_single.detach(), conv_tolerance().rtol, conv_tolerance().atol,
                           "predicted noise at one timestep"));
}

TEST_P(DeviceParityModels, GPT2) {
  auto [cpu, dev] = twins<models::GPT>([] {
    return std::make_shared<models::GPT>(
        models::GPTConfig{.block_size = 16, .vocab_size = 64, .n_layer = 2, .n_head = 2, .n_embd = 32});
  });
  const Tensor idx = randint(0, 64, {2, 12});
  const Tensor targets = randint(0, 64, {2, 12});
  const models::GPTOutput cpu_out = cpu->forward(idx, targets);
  const models::GPTOutput dev_out = dev->forward(on(idx), on(targets));
  cpu_out.loss.backward();
  dev_out.loss.backward();
  compare_step(*cpu, *dev, cpu_out.loss, dev_out.loss, {{"logits", {dev_out.logits, cpu_out.logits}}},
               kFloat32Tolerance);
}

TEST_P(DeviceParityModels, Llama) {
  auto [cpu, dev] = twins<models::llama::Transformer>([] {
    return std::make_shared<models::llama::Transformer>(models::llama::ModelArgs{.dim = 24,
                                                                                 .n_layers = 2,
                                                                                 .n_heads = 4,
                                                                                 .n_kv_heads = 2,
                                                                                 .vocab_size = 48,
                                                                                 .multiple_of = 16,
                                                                                 .ffn_dim_multiplier = 0.9,
                                                                                 .max_seq_len = 32});
  });
  const Tensor tokens = randint(0, 48, {2, 10});
  const Tensor targets = randint(0, 48, {20});
  const Tensor cpu_out = cpu->forward(tokens);
  const Tensor dev_out = dev->forward(on(tokens));
  const Tensor cpu_loss = F::cross_entropy(cpu_out.view({-1, 48}), targets);
  const Tensor dev_loss = F::cross_entropy(dev_out.view({-1, 48}), on(targets));
  cpu_loss.backward();
  dev_loss.backward();
  compare_step(*cpu, *dev, cpu_loss, dev_loss, {{"logits", {dev_out, cpu_out}}}, kFloat32Tolerance);
}

TEST_P(DeviceParityModels, VAE) {
  auto [cpu, dev] = twins<models::VAE>([] {
    return std::make_shared<models::VAE>(models::VAEOptions{.input_size = 30, .hidden_size = 12, .latent_size = 5});
  });
  const Tensor x = rand({2, 30});  // in [0, 1): the loss's binary cross-entropy needs it
  const Tensor eps = randn({2, 5});
  const models::VAEOutput cpu_out = cpu->forward(x, eps);
  const models::VAEOutput dev_out = dev->forward(on(x), on(eps));
  const Tensor cpu_loss = models::vae_loss(cpu_out.recon, x, cpu_out.mu, cpu_out.logvar);
  const Tensor dev_loss = models::vae_loss(dev_out.recon, on(x), dev_out.mu, dev_out.logvar);
  cpu_loss.backward();
  dev_loss.backward();
  compare_step(*cpu, *dev, cpu_loss, dev_loss,
               {{"recon", {dev_out.recon, cpu_out.recon}},
                {"mu", {dev_out.mu, cpu_out.mu}},
                {"logvar", {dev_out.logvar, cpu_out.logvar}}},
               kFloat32Tolerance);
}

TEST_P(DeviceParityModels, DCGAN) {
  const models::DCGANOptions options{.nz = 4, .ngf = 2, .ndf = 2, .nc = 1};
  const auto make_generator = [&] {
    auto netG = std::make_shared<models::DCGANGenerator>(options);
    models::dcgan_weights_init(*netG);
    return netG;
  };
  const auto make_discriminator = [&] {
    auto netD = std::make_shared<models::DCGANDiscriminator>(options);
    models::dcgan_weights_init(*netD);
    return netD;
  };
  auto [cpu_g, dev_g] = twins<models::DCGANGenerator>(make_generator);
  auto [cpu_d, dev_d] = twins<models::DCGANDiscriminator>(make_discriminator);
  // The example's generator step: the discriminator's BCE on G(z) against the "real" label,
  // back-propagated through both networks.
  const Tensor noise = randn({2, 4, 1, 1});
  const Tensor real_label = full({2}, 1.0);
  const Tensor cpu_fake = cpu_g->forward(noise);
  const Tensor dev_fake = dev_g->forward(on(noise));
  const Tensor cpu_score = cpu_d->forward(cpu_fake).view({-1});
  const Tensor dev_score = dev_d->forward(dev_fake).view({-1});
  const Tensor cpu_loss = F::binary_cross_entropy(cpu_score, real_label);
  const Tensor dev_loss = F::binary_cross_entropy(dev_score, on(real_label));
  cpu_loss.backward();
  dev_loss.backward();
  {
    SCOPED_TRACE("generator");
    compare_step(*cpu_g, *dev_g, cpu_loss, dev_loss, {{"G(z)", {dev_fake, cpu_fake}}}, conv_tolerance());
  }
  {
    SCOPED_TRACE("discriminator");
    compare_step(*cpu_d, *dev_d, cpu_loss, dev_loss, {{"D(G(z))", {dev_score, cpu_score}}}, conv_tolerance());
  }
}

TEST_P(DeviceParityModels, TextCNN) {
  auto [cpu, dev] = twins<models::TextCNN>([] {
    return std::make_shared<models::TextCNN>(models::TextCNNOptions{.vocab_size = 50,
                                                                    .embedding_dim = 8,
                                                                    .n_filters = 4,
                                                                    .filter_sizes = {2, 3, 4},
                                                                    .output_dim = 1,
                                                                    .dropout = 0.0,
                                                                    .pad_index = 1});
  });
  const Tensor ids = randint(0, 50, {2, 9});
  const Tensor label = tensor(std::vector<double>{1.0, 0.0}).to(kFloat32);
  const Tensor cpu_out = cpu->forward(ids);
  const Tensor dev_out = dev->forward(on(ids));
  const Tensor cpu_loss = F::binary_cross_entropy_with_logits(cpu_out.squeeze(1), label);
  const Tensor dev_loss = F::binary_cross_entropy_with_logits(dev_out.squeeze(1), on(label));
  cpu_loss.backward();
  dev_loss.backward();
  compare_step(*cpu, *dev, cpu_loss, dev_loss, {{"logits", {dev_out, cpu_out}}}, conv_tolerance());
}

TEST_P(DeviceParityModels, Seq2Seq) {
  auto [cpu, dev] = twins<models::Seq2Seq>([] {
    auto model = std::make_shared<models::Seq2Seq>(models::Seq2SeqOptions{.input_dim = 13,
                                                                          .output_dim = 11,
                                                                          .enc_emb_dim = 6,
                                                                          .dec_emb_dim = 6,
                                                                          .enc_hid_dim = 5,
                                                                          .dec_hid_dim = 7,
                                                                          .enc_dropout = 0.0,
                                                                          .dec_dropout = 0.0,
                                                                          .src_pad_idx = 1});
    models::init_weights(*model);
    return model;
  });
  // Sources of lengths 6 and 4, padded with 1; targets start with <sos> 2.
  Tensor src = randint(3, 13, {6, 2});
  src.narrow(0, 4, 2).select(1, 1).fill_(1);
  const Tensor src_len = labels({6, 4});  // stays on the CPU, as pack_padded_sequence's lengths
  const Tensor trg = cat({full({1, 2}, 2, TensorOptions().dtype(kInt64)), randint(3, 11, {4, 2})}, 0);
  // Teacher forcing at every step, so both sides decode the same tokens.
  const Tensor cpu_out = cpu->forward(src, src_len, trg, 1.0);
  const Tensor dev_out = dev->forward(on(src), src_len, on(trg), 1.0);
  // The tutorial's loss: cross-entropy over the steps after <sos>, ignoring the padding (1).
  const auto loss_of = [](const Tensor& outputs, const Tensor& target) {
    const int64_t steps = outputs.size(0) - 1, vocab = outputs.size(2);
    return F::cross_entropy(outputs.narrow(0, 1, steps).reshape({-1, vocab}), target.narrow(0, 1, steps).reshape({-1}),
                            nn::Reduction::Mean, 0.0, Tensor(), /*ignore_index=*/1);
  };
  const Tensor cpu_loss = loss_of(cpu_out, trg);
  const Tensor dev_loss = loss_of(dev_out, on(trg));
  cpu_loss.backward();
  dev_loss.backward();
  compare_step(*cpu, *dev, cpu_loss, dev_loss, {{"outputs", {dev_out, cpu_out}}}, kFloat32Tolerance);
}

EMBER_INSTANTIATE_DEVICE_SUITE(DeviceParityModels);

}  // namespace
