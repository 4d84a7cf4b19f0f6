// ember::models::ResNet against torchvision's (re-written in tools/gen_models_golden.py, since
// torchvision is not installed there): the full-width resnet18/34/50 state_dict keys, order and
// shapes; a ResNet-18 and a ResNet-50, built with fewer channels per stage (stage_widths, ember's
// documented extension; same structure), matched in float64 to 1e-10 in train mode (batch
// statistics, running statistics after) and eval mode: logits, loss, every parameter's
// gradient and (ResNet-18) the input's; torchvision's initialisation, messages, and a few SGD
// steps that lower the loss.
#include <gtest/gtest.h>

#include <cmath>
#include <string>
#include <vector>

#include "ember/ember.h"
#include "ember/io/safetensors.h"
#include "ember/models/resnet.h"
#include "models/model_pattern.h"
#include "support/error_of.h"

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
      io::load_safetensors(EMBER_SOURCE_DIR "/tests/models/golden/models_resnet_golden.safetensors");
  return data;
}

std::vector<std::string> reference_keys(const std::string& model) {
  return split(golden().metadata.at("keys." + model), ';');
}

TEST(ModelsResNet, StateDictKeysOrderAndShapesAreTorchvisions) {
  EXPECT_EQ(keys_and_shapes(models::resnet18()->state_dict()), reference_keys("resnet18"));
  // ResNet-34 and -50 with an eighth of the channels (building the full ones draws 47M numbers,
  // seconds of test time): the keys and order of the full models, the shapes of the eighth.
  auto keys_only = [](const std::vector<std::string>& items) {
    std::vector<std::string> keys;
    for (const std::string& item : items) keys.push_back(item.substr(0, item.find(':')));
    return keys;
  };
  const models::ResNetOptions eighth{.stage_widths = {8, 16, 32, 64}};
  for (const auto& [name, model] : {std::pair{std::string("resnet34"), models::resnet34(eighth)},
                                    std::pair{std::string("resnet50"), models::resnet50(eighth)}}) {
    SCOPED_TRACE(name);
    const auto items = keys_and_shapes(model->state_dict());
    EXPECT_EQ(items, reference_keys(name + "_eighth"));
    EXPECT_EQ(keys_only(items), keys_only(reference_keys(name)));
  }
  // Grouped, narrower bottlenecks (ResNeXt's arguments) and the stage_widths extension.
  const auto resnext = std::make_shared<models::ResNet>(
      models::ResNetBlock::Bottleneck, std::array<int64_t, 4>{1, 1, 1, 1},
      models::ResNetOptions{.groups = 2, .width_per_group = 32, .stage_widths = {4, 8, 8, 16}});
  EXPECT_EQ(keys_and_shapes(resnext->state_dict()), reference_keys("resnext_like"));
}

/// One golden case: the model built as the script built it, with its pattern() weights.
std::shared_ptr<models::ResNet> golden_model(const std::string& name) {
  const std::string& config = golden().metadata.at(name + ".config");
  auto field = [&](const std::string& key) {
    for (const std::string& item : split(config, ';'))
      if (item.rfind(key + "=", 0) == 0) return item.substr(key.size() + 1);
    ADD_FAILURE() << "no " << key << " in " << config;
    return std::string();
  };
  auto four = [](const std::string& list) {
    const auto parts = split(list, ',');
    return std::array<int64_t, 4>{std::stoll(parts[0]), std::stoll(parts[1]), std::stoll(parts[2]),
                                  std::stoll(parts[3])};
  };
  const auto block = field("kind") == "basic" ? models::ResNetBlock::Basic : models::ResNetBlock::Bottleneck;
  auto model = std::make_shared<models::ResNet>(
      block, four(field("blocks")), models::ResNetOptions{.num_classes = 10, .stage_widths = four(field("widths"))});
  model->to(kFloat64);
  fill_state(*model);
  return model;
}

void check_case(const std::string& name, bool input_grad) {
  SCOPED_TRACE(name);
  const auto& g = golden();
  auto model = golden_model(name);
  const Tensor x = pattern({2, 3, 32, 32}, 1000, 0.0, 4.0);
  const Tensor target = g.at(name + ".target");
  for (const std::string mode : {"train", "eval"}) {
    SCOPED_TRACE(mode);
    if (mode == "eval") calibrate_running_stats(*model, x);
    model->train(mode == "train");
    model->zero_grad();
    const Tensor input = x.clone().requires_grad_(input_grad && mode == "train");
    const Tensor out = (*model)(input);
    const Tensor loss = F::cross_entropy(out, target);
    loss.backward();
    EXPECT_LT(relative_error(out, g.at(name + "." + mode + ".out")), 1e-10);
    EXPECT_LT(relative_error(loss, g.at(name + "." + mode + ".loss")), 1e-12);
    if (input_grad && mode == "train") {
      EXPECT_LT(relative_error(input.grad(), g.at(name + ".train.gx")), 1e-10);
    }
    const auto parameters = model->named_parameters();
    const auto grads = ember_models_test::unpack(g.at(name + "." + mode + ".grads"), parameters);
    for (size_t i = 0; i < parameters.size(); ++i) {
      const auto& [key, p] = parameters[i];
      ASSERT_TRUE(p.grad().defined()) << key;
      EXPECT_LT(relative_error(p.grad(), grads[i]), 1e-10) << key;
    }
    EXPECT_GT(parameters.size(), 20u);
    if (mode == "train") {
      const auto buffers = model->named_buffers();
      const auto after = ember_models_test::unpack(g.at(name + ".train.after"), buffers);
      for (size_t i = 0; i < buffers.size(); ++i) {
        EXPECT_LT(relative_error(buffers[i].second, after[i]), 1e-12) << buffers[i].first;
      }
    }
  }
}

TEST(ModelsResNet, ResNet18MatchesTorchvisionInFloat64) { check_case("r18", true); }

TEST(ModelsResNet, ResNet50MatchesTorchvisionInFloat64) { check_case("r50", false); }

TEST(ModelsResNet, StateDictRoundTripsThroughLoadStateDict) {
  auto source = golden_model("r18");
  auto target =
      std::make_shared<models::ResNet>(models::ResNetBlock::Basic, std::array<int64_t, 4>{2, 2, 2, 2},
                                       models::ResNetOptions{.num_classes = 10, .stage_widths = {1, 2, 4, 8}});
  target->to(kFloat64);
  EXPECT_EQ(target->load_state_dict(source->state_dict()).to_string(), "<All keys matched successfully>");
  target->eval();
  source->eval();
  const Tensor x = pattern({1, 3, 32, 32}, 7, 0.0, 2.0);
  EXPECT_EQ(relative_error((*target)(x), (*source)(x)), 0.0);
}

TEST(ModelsResNet, InitialDrawsAreTorchvisionsFromTheSameSeed) {
  manual_seed(0);
  ember_models_test::expect_init_summary(*models::resnet18({.num_classes = 10, .stage_widths = {4, 8, 8, 16}}),
                                         golden(), "r18init");
  manual_seed(0);
  ember_models_test::expect_init_summary(
      models::ResNet(models::ResNetBlock::Bottleneck, {1, 1, 1, 1},
                     {.num_classes = 10, .zero_init_residual = true, .stage_widths = {4, 4, 8, 8}}),
      golden(), "r50init");
}

TEST(ModelsResNet, InitialisationIsTorchvisions) {
  manual_seed(0);
  auto model = models::resnet18({.num_classes = 10, .zero_init_residual = true, .stage_widths = {16, 16, 32, 32}});
  // kaiming_normal_(fan_out, relu): std sqrt(2 / (out_channels * kh * kw)).
  const Tensor w = model->layer3->get_parameter("0.conv2.weight");
  const double expected_std = std::sqrt(2.0 / (32.0 * 9.0));
  EXPECT_NEAR(w.std().item<double>(), expected_std, 0.1 * expected_std);
  EXPECT_EQ(model->bn1->weight.sum().item<double>(), 16.0);
  EXPECT_EQ(model->bn1->bias.abs().sum().item<double>(), 0.0);
  // zero_init_residual: each BasicBlock's bn2 starts at zero, bn1 at one.
  EXPECT_EQ(model->get_parameter("layer1.1.bn2.weight").abs().sum().item<double>(), 0.0);
  EXPECT_EQ(model->get_parameter("layer1.1.bn1.weight").sum().item<double>(), 16.0);
  auto bottleneck = models::resnet50({.zero_init_residual = true, .stage_widths = {1, 1, 1, 1}});
  EXPECT_EQ(bottleneck->get_parameter("layer2.0.bn3.weight").abs().sum().item<double>(), 0.0);
  EXPECT_EQ(bottleneck->get_parameter("layer2.0.bn2.weight").sum().item<double>(), 1.0);
  EXPECT_EQ(model->name(), "ResNet");
  EXPECT_EQ(model->layer1->operator[](0)->name(), "BasicBlock");
  EXPECT_EQ(bottleneck->layer1->operator[](0)->name(), "Bottleneck");
}

TEST(ModelsResNet, TorchvisionsMessages) {
  EXPECT_EQ(error_of([] { models::resnet18({.groups = 2}); }), "BasicBlock only supports groups=1 and base_width=64");
  EXPECT_EQ(error_of([] { models::resnet34({.width_per_group = 32}); }),
            "BasicBlock only supports groups=1 and base_width=64");
  EXPECT_EQ(error_of([] {
              models::resnet18({.replace_stride_with_dilation = {false, true, false}});
            }),
            "Dilation > 1 not supported in BasicBlock");
  // Dilation works in bottlenecks: stage 4 keeps the stage 3 resolution.
  auto dilated = models::resnet50(
      {.num_classes = 3, .replace_stride_with_dilation = {false, false, true}, .stage_widths = {2, 2, 2, 2}});
  EXPECT_EQ(dilated->get_submodule("layer4.1.conv2")->name(), "Conv2d");
  EXPECT_EQ((*dilated)(randn({2, 3, 32, 32})).sizes().vec(), (std::vector<int64_t>{2, 3}));
}

TEST(ModelsResNet, SgdStepsLowerTheLoss) {
  manual_seed(0);
  auto model = models::resnet18({.num_classes = 4, .stage_widths = {4, 4, 8, 8}});
  const Tensor x = randn({8, 3, 32, 32});
  const Tensor y = tensor(std::vector<int64_t>{0, 1, 2, 3, 0, 1, 2, 3});
  optim::SGD optimizer(model->parameters(), {.lr = 0.05, .momentum = 0.9});
  double first = 0.0, last = 0.0;
  for (int step = 0; step < 8; ++step) {
    const Tensor loss = F::cross_entropy((*model)(x), y);
    if (step == 0) first = loss.item<double>();
    last = loss.item<double>();
    optimizer.zero_grad();
    loss.backward();
    optimizer.step();
  }
  EXPECT_LT(last, 0.7 * first);
}

}  // namespace
