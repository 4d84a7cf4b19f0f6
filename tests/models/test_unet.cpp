// ember::models::UNet against milesial's Pytorch-UNet (re-written in
// tools/gen_models_unet_golden.py): the full-size state_dict keys, order and shapes with both
// upsamplings; one-channel-wide models (base_channels, ember's documented extension; same
// structure) matched in float64 to 1e-10 in train and eval mode on an odd-sized input whose
// decoder pads: per-pixel logits, the cross-entropy loss, every parameter's gradient, the input's;
// one Up alone with a skip 3 rows and 2 columns larger; the reference's initial draws and
// messages; a few RMSprop steps that lower the loss.
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <string>
#include <vector>

#include "ember/ember.h"
#include "ember/io/safetensors.h"
#include "ember/models/unet.h"
#include "models/model_pattern.h"
#include "support/error_of.h"
#include "support/gradcheck.h"

namespace {

using namespace ember;
using ember_models_test::calibrate_running_stats;
using ember_models_test::fill_state;
using ember_models_test::keys_and_shapes;
using ember_models_test::pattern;
using ember_models_test::relative_error;
using ember_models_test::split;
using ember_test::error_of;
namespace F = ember::nn::functional;

const io::SafetensorsData& golden() {
  static const io::SafetensorsData data =
      io::load_safetensors(EMBER_SOURCE_DIR "/tests/models/golden/models_unet_golden.safetensors");
  return data;
}

std::vector<std::string> reference_keys(const std::string& name) {
  return split(golden().metadata.at("keys." + name), ';');
}

std::vector<std::string> keys_only(const std::vector<std::string>& items) {
  std::vector<std::string> keys;
  for (const std::string& item : items) keys.push_back(item.substr(0, item.find(':')));
  return keys;
}

TEST(ModelsUNet, StateDictKeysOrderAndShapesAreTheReferences) {
  // The full bilinear model (17M parameters, a few hundred ms to draw); the transposed one's keys
  // and order at full size, its shapes with an eighth of the channels.
  const auto full = models::UNet(3, 2, {.bilinear = true}).state_dict();
  EXPECT_EQ(keys_and_shapes(full), reference_keys("bilinear"));
  for (const bool bilinear : {false, true}) {
    const std::string name = bilinear ? "bilinear" : "transposed";
    SCOPED_TRACE(name);
    const auto items = keys_and_shapes(models::UNet(3, 2, {.bilinear = bilinear, .base_channels = 8}).state_dict());
    EXPECT_EQ(items, reference_keys(name + "_base8"));
    EXPECT_EQ(keys_only(items), keys_only(reference_keys(name)));
  }
}

void expect_grads(const nn::Module& model, const Tensor& packed) {
  const auto parameters = model.named_parameters();
  const auto grads = ember_models_test::unpack(packed, parameters);
  for (size_t i = 0; i < parameters.size(); ++i) {
    const auto& [key, p] = parameters[i];
    ASSERT_TRUE(p.grad().defined()) << key;
    EXPECT_LT(relative_error(p.grad(), grads[i]), 1e-10) << key;
  }
}

void check_case(const std::string& name, bool bilinear) {
  SCOPED_TRACE(name);
  const auto& g = golden();
  models::UNet model(3, 2, {.bilinear = bilinear, .base_channels = 1});
  model.to(kFloat64);
  fill_state(model);
  const Tensor x = pattern({2, 3, 17, 19}, 1000, 0.0, 4.0);
  const Tensor target = g.at(name + ".target");
  for (const std::string mode : {"train", "eval"}) {
    SCOPED_TRACE(mode);
    if (mode == "eval") calibrate_running_stats(model, x);
    model.train(mode == "train");
    model.zero_grad();
    const std::string prefix = name + "." + mode;
    const Tensor input = x.clone().requires_grad_(g.contains(prefix + ".gx"));
    const Tensor out = model(input);
    const Tensor loss = F::cross_entropy(out, target);
    loss.backward();
    EXPECT_LT(relative_error(out, g.at(prefix + ".out")), 1e-10);
    EXPECT_LT(relative_error(loss, g.at(prefix + ".loss")), 1e-12);
    if (input.requires_grad()) {
      EXPECT_LT(relative_error(input.grad(), g.at(prefix + ".gx")), 1e-10);
    }
    if (g.contains(prefix + ".grads")) {
      expect_grads(model, g.at(prefix + ".grads"));
    }
    if (mode == "train") {
      const auto buffers = model.named_buffers();
      const auto after = ember_models_test::unpack(g.at(prefix + ".after"), buffers);
      for (size_t i = 0; i < buffers.size(); ++i) {
        EXPECT_LT(relative_error(buffers[i].second, after[i]), 1e-12) << buffers[i].first;
      }
    }
  }
}

TEST(ModelsUNet, TransposedConvolutionUNetMatchesTheReferenceInFloat64) { check_case("transposed", false); }

TEST(ModelsUNet, BilinearUNetMatchesTheReferenceInFloat64) { check_case("bilinear", true); }

TEST(ModelsUNet, UpPadsTheUpsampledMapToTheSkipsSize) {
  for (const bool bilinear : {false, true}) {
    const std::string name = std::string("up.") + (bilinear ? "bilinear" : "transposed");
    SCOPED_TRACE(name);
    models::unet_parts::Up up(8, 4, bilinear);
    up.to(kFloat64);
    fill_state(up);
    const Tensor x1 = pattern({2, bilinear ? 4 : 8, 3, 3}, 11, 0.0, 2.0).requires_grad_();
    const Tensor x2 = pattern({2, 4, 9, 8}, 12, 0.0, 2.0).requires_grad_();
    const Tensor y = up.forward(x1, x2);
    (y * pattern(y.sizes(), 77, 0.0, 2.0)).sum().backward();
    EXPECT_LT(relative_error(y, golden().at(name + ".out")), 1e-10);
    EXPECT_LT(relative_error(x1.grad(), golden().at(name + ".gx1")), 1e-10);
    EXPECT_LT(relative_error(x2.grad(), golden().at(name + ".gx2")), 1e-10);
    expect_grads(up, golden().at(name + ".grads"));
  }
}

TEST(ModelsUNet, Float32MatchesTheFloat64ReferenceToItsPrecision) {
  // The bilinear case's weights rounded to float32, eval mode (running statistics as the
  // script's calibrate_running_stats leaves them): the float64 reference's logits.
  models::UNet model(3, 2, {.bilinear = true, .base_channels = 1});
  model.to(kFloat64);
  fill_state(model);
  const Tensor x = pattern({2, 3, 17, 19}, 1000, 0.0, 4.0);
  calibrate_running_stats(model, x);
  model.to(kFloat32);
  model.eval();
  NoGradGuard no_grad;
  const Tensor out = model(x.to(kFloat32));
  EXPECT_EQ(out.dtype(), kFloat32);
  EXPECT_LT(relative_error(out, golden().at("bilinear.eval.out")), 2e-5);
}

TEST(ModelsUNet, UpGradcheck) {
  // Finite differences through the pad and the concatenation (eval mode: fixed statistics).
  for (const bool bilinear : {false, true}) {
    auto up = std::make_shared<models::unet_parts::Up>(4, 2, bilinear);
    up->to(kFloat64);
    fill_state(*up);
    up->eval();
    ember::test::gradcheck(bilinear ? "Up(bilinear)" : "Up(transposed)",
                           [&](const std::vector<Tensor>& in) { return up->forward(in[0], in[1]); },
                           {pattern({1, bilinear ? 2 : 4, 2, 3}, 5, 0.0, 2.0), pattern({1, 2, 5, 7}, 6, 0.0, 2.0)});
  }
}

TEST(ModelsUNet, InitialDrawsAreTheReferencesFromTheSameSeed) {
  for (const bool bilinear : {false, true}) {
    SCOPED_TRACE(bilinear ? "bilinear" : "transposed");
    manual_seed(0);
    models::UNet model(3, 2, {.bilinear = bilinear, .base_channels = 4});
    // Per parameter: its sum, then its first four values (float32's rounding apart).
    const Tensor expected = golden().at(std::string("init.") + (bilinear ? "bilinear" : "transposed"));
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
}

TEST(ModelsUNet, StateDictRoundTripsAndNames) {
  models::UNet source(3, 2, {.base_channels = 2});
  models::UNet target(3, 2, {.base_channels = 2});
  EXPECT_EQ(target.load_state_dict(source.state_dict()).to_string(), "<All keys matched successfully>");
  source.eval();
  target.eval();
  const Tensor x = randn({1, 3, 16, 16});
  EXPECT_EQ(relative_error(target(x), source(x)), 0.0);
  EXPECT_EQ(source.name(), "UNet");
  EXPECT_EQ(source.up1->name(), "Up");
  EXPECT_EQ(source.up1->up->name(), "ConvTranspose2d");
  EXPECT_EQ(source.down1->name(), "Down");
  EXPECT_EQ(source.inc->name(), "DoubleConv");
  EXPECT_EQ(source.outc->name(), "OutConv");
  EXPECT_EQ(models::UNet(1, 1, {.bilinear = true, .base_channels = 2}).up2->up->name(), "Upsample");
  EXPECT_FALSE(source.inc->get_submodule("double_conv.0")->named_parameters().empty());
  EXPECT_EQ(source.get_parameter("outc.conv.bias").numel(), 2);
}

TEST(ModelsUNet, TheReferencesMessages) {
  models::UNet model(3, 2, {.base_channels = 4});
  model.eval();
  EXPECT_EQ(error_of([&] { model(zeros({1, 4, 32, 32})); }), golden().metadata.at("error.channels"));
  EXPECT_EQ(error_of([&] { model(zeros({1, 3, 8, 8})); }), golden().metadata.at("error.small"));
  EXPECT_EQ(error_of([] { models::UNet(3, 2, {.base_channels = 0}); }), "UNet: base_channels must be positive, got 0");
}

TEST(ModelsUNet, RmspropStepsLowerTheSegmentationLoss) {
  manual_seed(0);
  models::UNet model(1, 2, {.base_channels = 2});
  // Masks: the pixels brighter than zero.
  const Tensor x = randn({2, 1, 16, 16});
  const Tensor masks = (x > 0.0).to(kInt64).squeeze(1);
  optim::RMSprop optimizer(model.parameters(), {.lr = 3e-3, .weight_decay = 1e-8, .momentum = 0.9});
  double first = 0.0, last = 0.0;
  for (int step = 0; step < 8; ++step) {
    const Tensor loss = F::cross_entropy(model(x), masks);
    if (step == 0) first = loss.item<double>();
    last = loss.item<double>();
    optimizer.zero_grad();
    loss.backward();
    optimizer.step();
  }
  EXPECT_LT(last, 0.7 * first);
}

}  // namespace
