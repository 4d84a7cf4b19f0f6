// ember::models::EfficientNet against torchvision's efficientnet_b0 (tools/gen_models_efficientnet_golden.py
// runs torchvision itself): state_dict keys, order and shapes of the default model and of scaled
// stage tables; the real-width B0 with 10 classes matched in float64 to 1e-10 in train mode
// (stochastic_depth_prob 0, dropout 0) and eval mode (the defaults, calibrated running
// statistics): logits, loss, the input's and every parameter's gradient (as summaries: sum, sum
// of |g| and 16 spread entries); torchvision's initialisation from the same seed; StochasticDepth
// (eval identity, rows dropped with probability p and survivors scaled by 1/(1-p), p = 0 and 1,
// its gradient, torchvision's messages); a few Adam steps that lower the loss.
#include <gtest/gtest.h>

#include <cmath>
#include <string>
#include <vector>

#include "core/check.h"
#include "ember/ember.h"
#include "ember/io/safetensors.h"
#include "ember/models/efficientnet.h"
#include "models/model_pattern.h"
#include "support/error_of.h"
#include "support/gradcheck.h"

namespace {

using namespace ember;
using ember_models_test::keys_and_shapes;
using ember_models_test::split;
using ember_test::error_of;
namespace F = ember::nn::functional;

const io::SafetensorsData& golden() {
  static const io::SafetensorsData data =
      io::load_safetensors(EMBER_SOURCE_DIR "/tests/models/golden/models_efficientnet_golden.safetensors");
  return data;
}

std::vector<std::string> reference_keys(const std::string& name) {
  return split(golden().metadata.at("keys." + name), ';');
}

TEST(ModelsEfficientNet, StateDictKeysOrderAndShapesAreTorchvisions) {
  EXPECT_EQ(keys_and_shapes(models::efficientnet_b0()->state_dict()), reference_keys("default"));
  EXPECT_EQ(keys_and_shapes(
                models::EfficientNet(models::efficientnet_b_setting(1.2, 1.4), {.num_classes = 10, .dropout = 0.3})
                    .state_dict()),
            reference_keys("b3_table"));
  EXPECT_EQ(keys_and_shapes(
                models::EfficientNet(models::efficientnet_b_setting(0.25, 0.5), {.num_classes = 10}, 64).state_dict()),
            reference_keys("small"));
}

TEST(ModelsEfficientNet, B0MatchesTorchvisionInFloat64) {
  auto model = models::efficientnet_b0({.num_classes = 10, .dropout = 0.0, .stochastic_depth_prob = 0.0});
  auto evaluated = models::efficientnet_b0({.num_classes = 10});
  ember_models_test::expect_classifier_parity(*model, *evaluated, golden(), 200u);
}

TEST(ModelsEfficientNet, InitialDrawsAreTorchvisionsFromTheSameSeed) {
  manual_seed(0);
  ember_models_test::expect_init_summary(
      models::EfficientNet(models::efficientnet_b_setting(0.25, 0.5), {.num_classes = 10}), golden(), "init");
}

TEST(ModelsEfficientNet, StructureAndInitialisationAreTorchvisions) {
  manual_seed(0);
  auto model = models::efficientnet_b0({.num_classes = 10});
  EXPECT_EQ(model->name(), "EfficientNet");
  EXPECT_EQ(model->features->size(), 9u);
  // Stochastic depth grows linearly with the block index: 0.2 * i / 16.
  std::vector<std::string> probabilities;
  for (const auto& module : model->modules()) {
    if (auto block = std::dynamic_pointer_cast<models::MBConv>(module)) {
      EXPECT_EQ(block->stochastic_depth->mode, "row");
      probabilities.push_back(detail::python_float(block->stochastic_depth->p));
    }
  }
  EXPECT_EQ(probabilities, split(golden().metadata.at("sd_probs"), ';'));
  auto first = std::dynamic_pointer_cast<models::MBConv>(model->get_submodule("features.1.0"));
  ASSERT_TRUE(first);
  EXPECT_EQ(first->name(), "MBConv");
  EXPECT_FALSE(first->use_res_connect);  // 32 → 16 channels
  EXPECT_TRUE(std::dynamic_pointer_cast<models::MBConv>(model->get_submodule("features.2.1"))->use_res_connect);
  EXPECT_EQ(model->get_submodule("features.1.0.block.1")->name(), "SqueezeExcitation");
  EXPECT_EQ(model->get_submodule("features.1.0.block.1.activation")->name(), "SiLU");
  EXPECT_EQ(model->get_submodule("features.1.0.block.1.scale_activation")->name(), "Sigmoid");
  EXPECT_EQ(model->get_submodule("features.1.0.stochastic_depth")->name(), "StochasticDepth");
  const auto depthwise = std::dynamic_pointer_cast<nn::Conv2d>(model->get_submodule("features.3.0.block.1.0"));
  ASSERT_TRUE(depthwise);
  EXPECT_EQ(depthwise->groups, depthwise->in_channels);
  EXPECT_EQ(depthwise->kernel_size[0], 5);
  EXPECT_EQ(depthwise->padding[0], 2);
  // Linear: uniform(±1/sqrt(out_features)); SE biases zero; BatchNorm ones and zeros.
  const Tensor fc = model->get_parameter("classifier.1.weight");
  EXPECT_LE(fc.abs().max().item<double>(), 1.0 / std::sqrt(10.0));
  EXPECT_GT(fc.abs().max().item<double>(), 0.9 / std::sqrt(10.0));
  EXPECT_EQ(model->get_parameter("features.2.0.block.2.fc1.bias").abs().sum().item<double>(), 0.0);
  EXPECT_EQ(model->get_parameter("features.8.1.weight").sum().item<double>(), 1280.0);
  const Tensor w = model->get_parameter("features.8.0.weight");  // [1280, 320, 1, 1]
  EXPECT_NEAR(w.std().item<double>(), std::sqrt(2.0 / 1280.0), 0.02 * std::sqrt(2.0 / 1280.0));
  EXPECT_EQ(models::MBConvConfig::adjust_depth(3, 1.1), 4);
  EXPECT_EQ(models::MBConvConfig::adjust_channels(40, 0.25), 16);
}

TEST(ModelsEfficientNet, TorchvisionsMessages) {
  const auto& meta = golden().metadata;
  EXPECT_EQ(error_of([] { models::EfficientNet({}, {}); }), meta.at("msg.empty_setting"));
  EXPECT_EQ(error_of([] { models::MBConv(models::MBConvConfig(6, 3, 3, 16, 24, 1), 0.0, {}); }), meta.at("msg.stride"));
  auto model = models::EfficientNet(models::efficientnet_b_setting(0.25, 0.5), {.num_classes = 3});
  EXPECT_EQ(error_of([&] {
              model(randn({2, 1, 32, 32}));
            }),
            "Given groups=1, weight of size [8, 3, 3, 3], expected input[2, 1, 32, 32] to have 3 channels, but got "
            "1 channels instead");
}

TEST(ModelsEfficientNet, StochasticDepthDropsRowsAndScalesTheRest) {
  manual_seed(0);
  const Tensor x = ones({4000, 3, 2});
  models::StochasticDepth layer(0.25, "row");
  EXPECT_EQ(layer.name(), "StochasticDepth");
  layer.eval();
  EXPECT_EQ((layer(x) - x).abs().max().item<double>(), 0.0);  // identity in eval mode
  layer.train();
  const Tensor y = layer(x);
  // Each row is all zeros or all 1 / (1 - p); about p of them are zeros.
  const Tensor row_min = y.amin({1, 2}), row_max = y.amax({1, 2});
  EXPECT_EQ((row_max - row_min).abs().max().item<double>(), 0.0);
  const Tensor kept = row_max > 0.0;
  EXPECT_EQ((row_max - kept.to(kFloat32) / 0.75).abs().max().item<double>(), 0.0);
  const double dropped = 1.0 - kept.to(kFloat64).mean().item<double>();
  EXPECT_NEAR(dropped, 0.25, 0.03);  // 4000 rows: the standard deviation is 0.007
  // "batch": one draw for the whole input.
  int64_t all_dropped = 0;
  for (int i = 0; i < 200; ++i) {
    const Tensor z = models::stochastic_depth(ones({3, 4}), 0.5, "batch");
    const double lo = z.min().item<double>(), hi = z.max().item<double>();
    EXPECT_EQ(lo, hi);
    EXPECT_TRUE(hi == 0.0 || hi == 2.0) << hi;
    all_dropped += hi == 0.0;
  }
  EXPECT_GT(all_dropped, 60);
  EXPECT_LT(all_dropped, 140);
}

TEST(ModelsEfficientNet, StochasticDepthEdgeCasesAndGradient) {
  const Tensor x = randn({5, 3, 2, 2});
  // p = 0 returns the input itself; p = 1 drops every row (no division by 1 - p = 0).
  EXPECT_TRUE(models::stochastic_depth(x, 0.0, "row").is_same(x));
  EXPECT_EQ(models::stochastic_depth(x, 1.0, "row").abs().sum().item<double>(), 0.0);
  EXPECT_EQ(models::stochastic_depth(x, 1.0, "batch").abs().sum().item<double>(), 0.0);
  EXPECT_TRUE(models::stochastic_depth(x, 0.7, "row", false).is_same(x));
  // The gradient is the mask: zero on dropped rows, 1 / (1 - p) on kept ones.
  manual_seed(3);
  const Tensor input = ones({64, 2}, TensorOptions().dtype(kFloat64)).requires_grad_(true);
  const Tensor y = models::stochastic_depth(input * 3.0, 0.5, "row");
  y.sum().backward();
  EXPECT_EQ((input.grad() - y.detach()).abs().max().item<double>(), 0.0);  // d(3 x mask)/dx at x = 1
  ember::test::gradcheck("stochastic_depth",
                         [](const std::vector<Tensor>& in) {
                           manual_seed(11);  // the same rows on every evaluation
                           return models::stochastic_depth(in[0], 0.4, "row");
                         },
                         {randn({6, 3}, TensorOptions().dtype(kFloat64))});
  const auto& meta = golden().metadata;
  const Tensor small = ones({4, 3});
  EXPECT_EQ(error_of([&] { models::stochastic_depth(small, 1.5, "row"); }), meta.at("msg.p_high"));
  EXPECT_EQ(error_of([&] { models::stochastic_depth(small, -0.1, "row"); }), meta.at("msg.p_low"));
  EXPECT_EQ(error_of([&] { models::stochastic_depth(small, 2.0, "batch", false); }), meta.at("msg.p_two"));
  EXPECT_EQ(error_of([&] { models::stochastic_depth(small, 0.5, "column"); }), meta.at("msg.mode"));
  models::StochasticDepth bad(0.5, "column");  // checked when it runs, as torchvision's
  EXPECT_EQ(error_of([&] { bad(small); }), meta.at("msg.mode"));
}

TEST(ModelsEfficientNet, AdamStepsLowerTheLoss) {
  manual_seed(0);
  auto model = models::EfficientNet(models::efficientnet_b_setting(0.25, 0.5), {.num_classes = 4});
  const Tensor x = randn({8, 3, 32, 32});
  const Tensor y = tensor(std::vector<int64_t>{0, 1, 2, 3, 0, 1, 2, 3});
  // SGD at lr 0.05 with momentum is erratic on 8 images here (BatchNorm over 8 values per
  // channel at the 1x1 last stage); Adam lowers the loss well in PyTorch for every seed tried.
  optim::Adam optimizer(model.parameters(), {.lr = 1e-3});
  double first = 0.0, last = 0.0;
  for (int step = 0; step < 8; ++step) {
    const Tensor loss = F::cross_entropy(model(x), y);
    if (step == 0) first = loss.item<double>();
    last = loss.item<double>();
    optimizer.zero_grad();
    loss.backward();
    optimizer.step();
  }
  EXPECT_LT(last, 0.5 * first);
}

}  // namespace
