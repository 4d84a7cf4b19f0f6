// ember::models::VAE against pytorch/examples' vae/main.py (re-written in
// tools/gen_models_vae_golden.py): the state_dict keys and shapes, the initial draws from
// manual_seed(0), a small VAE matched in float64 to 1e-10 with the noise given (recon, mu, logvar,
// the loss, the input's and every parameter's gradient) and with the noise drawn by randn_like
// after the same seed as PyTorch, the loss's gradcheck, messages, and Adam steps that lower the loss.
#include <gtest/gtest.h>

#include <string>
#include <vector>

#include "ember/ember.h"
#include "ember/io/safetensors.h"
#include "ember/models/vae.h"
#include "models/model_pattern.h"
#include "support/error_of.h"
#include "support/gradcheck.h"

namespace {

using namespace ember;
using ember_models_test::fill_state;
using ember_models_test::keys_and_shapes;
using ember_models_test::relative_error;
using ember_models_test::split;
using ember_test::error_of;

const io::SafetensorsData& golden() {
  static const io::SafetensorsData data =
      io::load_safetensors(EMBER_SOURCE_DIR "/tests/models/golden/models_vae_golden.safetensors");
  return data;
}

/// The script's small case: VAE(30, 12, 5) in float64 with pattern() weights.
std::shared_ptr<models::VAE> golden_model() {
  auto model = std::make_shared<models::VAE>(models::VAEOptions{.input_size = 30, .hidden_size = 12, .latent_size = 5});
  model->to(kFloat64);
  fill_state(*model);
  return model;
}

TEST(ModelsVAE, StateDictKeysOrderAndShapesAreTheExamples) {
  const models::VAE model;
  EXPECT_EQ(keys_and_shapes(model.state_dict()), split(golden().metadata.at("keys"), ';'));
  EXPECT_EQ(model.name(), "VAE");
  EXPECT_EQ(model.fc21->out_features, 20);
  EXPECT_EQ(model.fc4->out_features, 784);
}

TEST(ModelsVAE, InitialDrawsArePyTorchsFromTheSameSeed) {
  manual_seed(0);
  const models::VAE model;
  // expect_init_summary's check, for a model of ten parameters.
  for (const auto& [key, p] : model.named_parameters()) {
    const Tensor expected = golden().at("init." + key);
    const Tensor flat = p.detach().reshape({-1}).to(kFloat64);
    EXPECT_NEAR(flat.sum().item<double>(), expected[0].item<double>(), 1e-7 * (flat.abs().sum().item<double>() + 1.0))
        << key;
    for (int64_t i = 0; i < 4; ++i) EXPECT_EQ(flat[i].item<double>(), expected[i + 1].item<double>()) << key;
  }
  EXPECT_EQ(model.named_parameters().size(), 10u);
}

TEST(ModelsVAE, MatchesTheExampleInFloat64WithTheNoiseGiven) {
  const auto& g = golden();
  auto model = golden_model();
  const Tensor x = g.at("x").clone().requires_grad_(true);
  const auto [recon, mu, logvar] = model->forward(x, g.at("eps"));
  const Tensor loss = models::vae_loss(recon, x, mu, logvar);
  loss.backward();
  EXPECT_LT(relative_error(recon, g.at("recon")), 1e-12);
  EXPECT_LT(relative_error(mu, g.at("mu")), 1e-12);
  EXPECT_LT(relative_error(logvar, g.at("logvar")), 1e-12);
  EXPECT_LT(relative_error(loss, g.at("loss")), 1e-12);
  EXPECT_LT(relative_error(x.grad(), g.at("gx")), 1e-10);
  const auto parameters = model->named_parameters();
  const auto grads = ember_models_test::unpack(g.at("grads"), parameters);
  for (size_t i = 0; i < parameters.size(); ++i) {
    ASSERT_TRUE(parameters[i].second.grad().defined()) << parameters[i].first;
    EXPECT_LT(relative_error(parameters[i].second.grad(), grads[i]), 1e-10) << parameters[i].first;
  }
}

TEST(ModelsVAE, Float32MatchesToItsPrecision) {
  const auto& g = golden();
  auto model = golden_model();
  model->to(kFloat32);
  const Tensor x = g.at("x").to(kFloat32);
  const auto [recon, mu, logvar] = model->forward(x, g.at("eps").to(kFloat32));
  const Tensor loss = models::vae_loss(recon, x, mu, logvar);
  EXPECT_EQ(loss.dtype(), kFloat32);
  loss.backward();
  EXPECT_LT(relative_error(recon, g.at("recon")), 1e-6);
  EXPECT_LT(relative_error(mu, g.at("mu")), 1e-6);
  EXPECT_LT(relative_error(loss, g.at("loss")), 1e-6);
  const auto parameters = model->named_parameters();
  const auto grads = ember_models_test::unpack(g.at("grads"), parameters);
  for (size_t i = 0; i < parameters.size(); ++i) {
    EXPECT_LT(relative_error(parameters[i].second.grad(), grads[i]), 1e-5) << parameters[i].first;
  }
}

TEST(ModelsVAE, RandnLikeDrawsPyTorchsNoiseAfterTheSameSeed) {
  const auto& g = golden();
  manual_seed(7);
  EXPECT_EQ(relative_error(randn_like(zeros({4, 5}, kFloat64)), g.at("seeded.eps")), 0.0);
  // float32: the same draws, a few an ulp apart (the transform is computed in another precision).
  manual_seed(7);
  EXPECT_LT(relative_error(randn_like(zeros({4, 5})), g.at("seeded.eps32")), 2e-7);
  // So the example's forward, which draws eps itself, matches too.
  auto model = golden_model();
  NoGradGuard no_grad;
  manual_seed(7);
  const auto [recon, mu, logvar] = model->forward(g.at("x"), Tensor());
  EXPECT_LT(relative_error(recon, g.at("seeded.recon")), 1e-12);
  EXPECT_LT(relative_error(models::vae_loss(recon, g.at("x"), mu, logvar), g.at("seeded.loss")), 1e-12);
  // The one-input call (the module's forward) is the reconstruction.
  manual_seed(7);
  EXPECT_LT(relative_error((*model)(g.at("x")), g.at("seeded.recon")), 1e-12);
}

TEST(ModelsVAE, LossGradcheck) {
  manual_seed(3);
  const Tensor recon = rand({3, 6}, kFloat64) * 0.8 + 0.1;
  const Tensor x = rand({3, 1, 2, 3}, kFloat64);
  const Tensor mu = randn({3, 2}, kFloat64), logvar = randn({3, 2}, kFloat64) * 0.5;
  ember::test::gradcheck("vae_loss",
                         [](const std::vector<Tensor>& in) { return models::vae_loss(in[0], in[1], in[2], in[3]); },
                         {recon, x, mu, logvar});
}

TEST(ModelsVAE, TheExamplesMessages) {
  auto model = std::make_shared<models::VAE>();
  EXPECT_EQ(error_of([&] { (*model)(zeros({2, 100})); }), golden().metadata.at("error.view"));
  EXPECT_EQ(error_of([&] {
              model->forward(zeros({2, 784}), zeros({2, 21}));
            }),
            "VAE.reparameterize: eps must have logvar's size [2, 20], got [2, 21]");
  EXPECT_EQ(error_of([] { models::VAE({.latent_size = 0}); }),
            "VAE: input_size, hidden_size and latent_size must be positive, got 784, 400 and 0");
}

TEST(ModelsVAE, AdamStepsLowerTheLoss) {
  manual_seed(0);
  auto model = std::make_shared<models::VAE>(models::VAEOptions{.input_size = 64, .hidden_size = 32, .latent_size = 4});
  // Two kinds of 8x8 binary pictures: the top or the left half lit.
  Tensor x = zeros({16, 1, 8, 8});
  x.narrow(0, 0, 8).narrow(2, 0, 4).fill_(1.0);
  x.narrow(0, 8, 8).narrow(3, 0, 4).fill_(1.0);
  optim::Adam optimizer(model->parameters(), {.lr = 1e-2});
  double first = 0.0, last = 0.0;
  for (int step = 0; step < 30; ++step) {
    const auto [recon, mu, logvar] = model->forward(x, Tensor());
    const Tensor loss = models::vae_loss(recon, x, mu, logvar);
    if (step == 0) first = loss.item<double>();
    last = loss.item<double>();
    optimizer.zero_grad();
    loss.backward();
    optimizer.step();
  }
  EXPECT_LT(last, 0.5 * first);
}

}  // namespace
