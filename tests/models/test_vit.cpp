// ember::models::VisionTransformer against torchvision's own (tools/gen_models_vit_golden.py runs
// torchvision 0.29): state_dict keys, order and shapes of small models and of vit_b_16's
// structure; in float64 with pattern() weights (image 32, patch 8, 2 layers, 2 heads, hidden 16,
// mlp 32, with and without representation_size) the logits, the loss, every parameter's gradient
// and the input's to 1e-10; torchvision's initial draws from manual_seed(0); its messages; and a
// few AdamW steps that lower the loss.
#include <gtest/gtest.h>

#include <cmath>
#include <string>
#include <vector>

#include "ember/ember.h"
#include "ember/io/safetensors.h"
#include "ember/models/vit.h"
#include "models/model_pattern.h"
#include "support/error_of.h"

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
      io::load_safetensors(EMBER_SOURCE_DIR "/tests/models/golden/models_vit_golden.safetensors");
  return data;
}

std::vector<std::string> reference_keys(const std::string& name) {
  return split(golden().metadata.at("keys." + name), ';');
}

std::shared_ptr<models::VisionTransformer> small_vit(std::optional<int64_t> representation_size = std::nullopt) {
  return std::make_shared<models::VisionTransformer>(
      32, 8, 2, 2, 16, 32,
      models::VisionTransformerOptions{.num_classes = 10, .representation_size = representation_size});
}

TEST(ModelsViT, StateDictKeysAreTorchvisions) {
  EXPECT_EQ(keys_and_shapes(small_vit()->state_dict()), reference_keys("small"));
  EXPECT_EQ(keys_and_shapes(small_vit(8)->state_dict()), reference_keys("rep"));
  auto model = small_vit(8);
  EXPECT_EQ(model->get_submodule("encoder.layers")->name(), "Sequential");
  EXPECT_EQ(model->get_submodule("encoder.layers.encoder_layer_1")->name(), "EncoderBlock");
  EXPECT_EQ(model->get_submodule("encoder.layers.encoder_layer_1.mlp")->name(), "MLPBlock");
  EXPECT_EQ(model->get_submodule("encoder.layers.encoder_layer_1.mlp.1")->name(), "GELU");
  EXPECT_EQ(model->get_submodule("heads.act")->name(), "Tanh");
  EXPECT_EQ(model->seq_length, 17);
}

TEST(ModelsViT, FullSizeKeysAreTorchvisions) {
  // vit_b_16 has 86M parameters, too many to draw in a unit test: its depth, heads, patch and
  // image size with a narrow width (hidden 24, mlp 96) match torchvision's exactly, and the
  // full model's key list has the same names with vit_b_16's widths.
  const auto narrow = std::make_shared<models::VisionTransformer>(224, 16, 12, 12, 24, 96);
  EXPECT_EQ(keys_and_shapes(narrow->state_dict()), reference_keys("vit_b_16_narrow"));
  auto names_of = [](std::vector<std::string> items) {
    for (std::string& item : items) item = item.substr(0, item.find(':'));
    return items;
  };
  const auto full = reference_keys("vit_b_16");
  EXPECT_EQ(names_of(full), names_of(reference_keys("vit_b_16_narrow")));
  EXPECT_EQ(full[0], "class_token:1,1,768");
  EXPECT_EQ(full[1], "conv_proj.weight:768,3,16,16");
  EXPECT_EQ(full[3], "encoder.pos_embedding:1,197,768");
  EXPECT_EQ(full[12], "encoder.layers.encoder_layer_0.mlp.0.weight:3072,768");
  EXPECT_EQ(full.back(), "heads.head.bias:1000");
}

void expect_matches_torchvision(const std::string& name, std::optional<int64_t> representation_size) {
  SCOPED_TRACE(name);
  const auto& g = golden();
  auto model = small_vit(representation_size);
  model->to(kFloat64);
  fill_state(*model);
  model->train();
  const Tensor x = pattern({2, 3, 32, 32}, 1000, 0.0, 4.0).requires_grad_(true);
  const Tensor out = (*model)(x);
  const Tensor loss = F::cross_entropy(out, g.at(name + ".target"));
  loss.backward();
  EXPECT_LT(relative_error(out, g.at(name + ".out")), 1e-10);
  EXPECT_LT(relative_error(loss, g.at(name + ".loss")), 1e-12);
  if (g.contains(name + ".gx")) {
    EXPECT_LT(relative_error(x.grad(), g.at(name + ".gx")), 1e-10);
  }
  const auto parameters = model->named_parameters();
  const auto grads = ember_models_test::unpack(g.at(name + ".grads"), parameters);
  for (size_t i = 0; i < parameters.size(); ++i) {
    const auto& [key, p] = parameters[i];
    ASSERT_TRUE(p.grad().defined()) << key;
    EXPECT_LT(relative_error(p.grad(), grads[i]), 1e-10) << key;
  }
  // Without dropout, eval mode computes the same; in float32 to float32's precision.
  model->eval();
  NoGradGuard no_grad;
  EXPECT_LT(relative_error((*model)(x), g.at(name + ".out")), 1e-10);
  model->to(kFloat32);
  const Tensor out32 = (*model)(x.to(kFloat32));
  EXPECT_EQ(out32.dtype(), kFloat32);
  EXPECT_LT(relative_error(out32, g.at(name + ".out")), 1e-5);
}

TEST(ModelsViT, MatchesTorchvisionInFloat64) { expect_matches_torchvision("small", std::nullopt); }

TEST(ModelsViT, WithRepresentationSizeMatchesTorchvision) { expect_matches_torchvision("rep", 8); }

TEST(ModelsViT, InitialDrawsAreTorchvisionsFromTheSameSeed) {
  manual_seed(0);
  auto model = small_vit(8);
  ember_models_test::expect_init_summary(*model, golden(), "init");
  EXPECT_EQ(model->class_token.abs().sum().item<double>(), 0.0);
  EXPECT_EQ(model->get_parameter("heads.head.weight").abs().sum().item<double>(), 0.0);
  EXPECT_EQ(model->get_parameter("conv_proj.bias").abs().sum().item<double>(), 0.0);
}

TEST(ModelsViT, TorchvisionsMessages) {
  auto model = small_vit();
  EXPECT_EQ(error_of([&] { (*model)(zeros({1, 3, 30, 32})); }), "Wrong image height! Expected 32 but got 30!");
  EXPECT_EQ(error_of([&] { (*model)(zeros({1, 3, 32, 24})); }), "Wrong image width! Expected 32 but got 24!");
  EXPECT_EQ(error_of([] { models::VisionTransformer(30, 8, 1, 2, 16, 32); }), "Input shape indivisible by patch size!");
  EXPECT_EQ(error_of([&] {
              (*model->encoder)(zeros({17, 16}));
            }),
            "Expected (batch_size, seq_length, hidden_dim) got torch.Size([17, 16])");
}

TEST(ModelsViT, AdamWStepsLowerTheLoss) {
  manual_seed(0);
  auto model = std::make_shared<models::VisionTransformer>(
      16, 4, 1, 2, 16, 32, models::VisionTransformerOptions{.dropout = 0.1, .num_classes = 4});
  // Four classes, each a bright quadrant.
  Tensor images = randn({8, 3, 16, 16}) * 0.1;
  std::vector<int64_t> labels;
  for (int64_t i = 0; i < 8; ++i) {
    const int64_t label = i % 4;
    labels.push_back(label);
    NoGradGuard no_grad;
    images[i].narrow(1, (label / 2) * 8, 8).narrow(2, (label % 2) * 8, 8).add_(1.0);
  }
  const Tensor targets = tensor(labels);
  optim::AdamW optimizer(model->parameters(), {.lr = 1e-2});
  double first = 0.0, last = 0.0;
  for (int step = 0; step < 20; ++step) {
    const Tensor loss = F::cross_entropy((*model)(images), targets);
    if (step == 0) first = loss.item<double>();
    last = loss.item<double>();
    optimizer.zero_grad();
    loss.backward();
    optimizer.step();
  }
  EXPECT_LT(last, 0.5 * first) << "first " << first;
}

}  // namespace
