// ember::models::DCGANGenerator and DCGANDiscriminator against pytorch/examples' dcgan/main.py
// (re-written in tools/gen_models_dcgan_golden.py): the default networks' state_dict keys and
// shapes, weights_init's draws from manual_seed(0), and one iteration of the example's training
// loop in float64 on narrow networks at the fixed 64x64 size (G(z), D(real), D(G(z)), the three
// BCE losses, every gradient of both networks, the weights after each Adam step and the running
// statistics after), matched to 1e-10; PyTorch's messages, and a few iterations that train D.
#include <gtest/gtest.h>

#include <string>
#include <vector>

#include "ember/ember.h"
#include "ember/io/safetensors.h"
#include "ember/models/dcgan.h"
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

const io::SafetensorsData& golden() {
  static const io::SafetensorsData data =
      io::load_safetensors(EMBER_SOURCE_DIR "/tests/models/golden/models_dcgan_golden.safetensors");
  return data;
}

void expect_packed(const std::vector<std::pair<std::string, Tensor>>& actual, const std::string& key, double tolerance,
                   bool grads) {
  SCOPED_TRACE(key);
  const auto expected = ember_models_test::unpack(golden().at(key), actual);
  for (size_t i = 0; i < actual.size(); ++i) {
    const Tensor value = grads ? actual[i].second.grad() : actual[i].second;
    ASSERT_TRUE(value.defined()) << actual[i].first;
    EXPECT_LT(relative_error(value, expected[i]), tolerance) << actual[i].first;
  }
}

/// The default networks (nz 100, ngf = ndf = 64, nc 3), built once: 6.3M draws.
models::DCGANGenerator& default_generator() {
  static models::DCGANGenerator netG;
  return netG;
}

TEST(ModelsDCGAN, StateDictKeysOrderAndShapesAreTheExamples) {
  const models::DCGANGenerator& netG = default_generator();
  const models::DCGANDiscriminator netD;
  EXPECT_EQ(keys_and_shapes(netG.state_dict()), split(golden().metadata.at("keys.G"), ';'));
  EXPECT_EQ(keys_and_shapes(netD.state_dict()), split(golden().metadata.at("keys.D"), ';'));
  EXPECT_EQ(netG.name(), "Generator");
  EXPECT_EQ(netD.name(), "Discriminator");
  EXPECT_EQ((*netG.main)[0]->name(), "ConvTranspose2d");
  EXPECT_EQ((*netD.main)[-1]->name(), "Sigmoid");
}

TEST(ModelsDCGAN, WeightsInitDrawsArePyTorchsFromTheSameSeed) {
  manual_seed(0);
  const models::DCGANOptions options{.nz = 8, .ngf = 4, .ndf = 4, .nc = 3};
  const models::DCGANGenerator netG(options);
  const models::DCGANDiscriminator netD(options);
  for (const auto& [prefix, parameters] : {std::pair{std::string("init.G."), netG.named_parameters()},
                                           std::pair{std::string("init.D."), netD.named_parameters()}}) {
    for (const auto& [key, p] : parameters) {
      const Tensor expected = golden().at(prefix + key);
      const Tensor flat = p.detach().reshape({-1}).to(kFloat64);
      EXPECT_NEAR(flat.sum().item<double>(), expected[0].item<double>(), 1e-7 * (flat.abs().sum().item<double>() + 1.0))
          << prefix << key;
      for (int64_t i = 0; i < std::min<int64_t>(4, flat.numel()); ++i) {
        const double want = expected[i + 1].item<double>();
        EXPECT_NEAR(flat[i].item<double>(), want, 2e-7 * std::abs(want)) << prefix << key << "[" << i << "]";
      }
    }
  }
  // normal(0, 0.02) for the convolutions, normal(1, 0.02) and zeros for the BatchNorms.
  EXPECT_EQ(netG.main->get_parameter("1.bias").abs().sum().item<double>(), 0.0);
  EXPECT_NEAR(netG.main->get_parameter("1.weight").mean().item<double>(), 1.0, 0.02);
}

TEST(ModelsDCGAN, OneTrainingIterationMatchesTheExampleInFloat64) {
  const auto& g = golden();
  const models::DCGANOptions options{.nz = 4, .ngf = 2, .ndf = 2, .nc = 1};
  auto netG = std::make_shared<models::DCGANGenerator>(options);
  auto netD = std::make_shared<models::DCGANDiscriminator>(options);
  netG->to(kFloat64);
  netD->to(kFloat64);
  fill_state(*netG);
  fill_state(*netD);
  const Tensor real = pattern({2, 1, 64, 64}, 1000, 0.0, 2.0);
  const Tensor noise = pattern({2, 4, 1, 1}, 1001, 0.0, 2.0);
  optim::Adam optimizerD(netD->parameters(), {.lr = 0.0002, .beta1 = 0.5, .beta2 = 0.999});
  optim::Adam optimizerG(netG->parameters(), {.lr = 0.0002, .beta1 = 0.5, .beta2 = 0.999});
  nn::BCELoss criterion;

  // (1) D: real with label 1, fake.detach() with label 0.
  netD->zero_grad();
  Tensor label = full({2}, 1.0, kFloat64);
  Tensor output = (*netD)(real);
  const Tensor errD_real = criterion(output, label);
  errD_real.backward();
  EXPECT_LT(relative_error(output, g.at("d_real")), 1e-12);
  EXPECT_LT(relative_error(errD_real, g.at("err_d_real")), 1e-12);
  const Tensor fake = (*netG)(noise);
  EXPECT_EQ(fake.sizes().vec(), (std::vector<int64_t>{2, 1, 64, 64}));
  EXPECT_LT(relative_error(fake, g.at("fake")), 1e-12);
  label.fill_(0.0);
  output = (*netD)(fake.detach());
  const Tensor errD_fake = criterion(output, label);
  errD_fake.backward();
  EXPECT_LT(relative_error(output, g.at("d_fake1")), 1e-12);
  EXPECT_LT(relative_error(errD_fake, g.at("err_d_fake")), 1e-12);
  expect_packed(netD->named_parameters(), "d.grads", 1e-10, true);
  optimizerD.step();
  expect_packed(netD->named_parameters(), "d.after", 1e-12, false);

  // (2) G: through the stepped D with label 1.
  netG->zero_grad();
  label.fill_(1.0);
  output = (*netD)(fake);
  const Tensor errG = criterion(output, label);
  errG.backward();
  EXPECT_LT(relative_error(output, g.at("d_fake2")), 1e-12);
  EXPECT_LT(relative_error(errG, g.at("err_g")), 1e-12);
  expect_packed(netG->named_parameters(), "g.grads", 1e-10, true);
  expect_packed(netD->named_parameters(), "d.grads_end", 1e-10, true);  // errG's part added
  optimizerG.step();
  expect_packed(netG->named_parameters(), "g.after", 1e-12, false);
  expect_packed(netD->named_buffers(), "d.buffers", 1e-12, false);
  expect_packed(netG->named_buffers(), "g.buffers", 1e-12, false);
}

TEST(ModelsDCGAN, Float32MatchesToItsPrecision) {
  // The golden case's networks built in float64, filled, then converted: the same weights
  // rounded once; outputs and the first losses as float32 computes them.
  const auto& g = golden();
  const models::DCGANOptions options{.nz = 4, .ngf = 2, .ndf = 2, .nc = 1};
  auto netG = std::make_shared<models::DCGANGenerator>(options);
  auto netD = std::make_shared<models::DCGANDiscriminator>(options);
  netG->to(kFloat64);
  netD->to(kFloat64);
  fill_state(*netG);
  fill_state(*netD);
  netG->to(kFloat32);
  netD->to(kFloat32);
  const Tensor real = pattern({2, 1, 64, 64}, 1000, 0.0, 2.0).to(kFloat32);
  const Tensor noise = pattern({2, 4, 1, 1}, 1001, 0.0, 2.0).to(kFloat32);
  const Tensor d_real = (*netD)(real);
  EXPECT_EQ(d_real.dtype(), kFloat32);
  EXPECT_LT(relative_error(d_real, g.at("d_real")), 1e-5);
  const Tensor fake = (*netG)(noise);
  EXPECT_LT(relative_error(fake, g.at("fake")), 1e-5);
  EXPECT_LT(relative_error((*netD)(fake), g.at("d_fake1")), 1e-5);
}

TEST(ModelsDCGAN, GeneratorGradcheck) {
  // The generator's gradient with respect to z (train mode: batch statistics in every BatchNorm).
  manual_seed(0);
  auto netG = std::make_shared<models::DCGANGenerator>(models::DCGANOptions{.nz = 2, .ngf = 1, .nc = 1});
  netG->to(kFloat64);
  ember::test::gradcheck("Generator", [&](const std::vector<Tensor>& in) { return (*netG)(in[0]); },
                         {randn({2, 2, 1, 1}, kFloat64)});
}

TEST(ModelsDCGAN, StateDictRoundTripsThroughLoadStateDict) {
  const models::DCGANOptions options{.nz = 4, .ngf = 2, .ndf = 2, .nc = 3};
  auto source = std::make_shared<models::DCGANGenerator>(options);
  auto target = std::make_shared<models::DCGANGenerator>(options);
  EXPECT_EQ(target->load_state_dict(source->state_dict()).to_string(), "<All keys matched successfully>");
  source->eval();
  target->eval();
  const Tensor z = randn({3, 4, 1, 1});
  EXPECT_EQ(relative_error((*target)(z), (*source)(z)), 0.0);
}

TEST(ModelsDCGAN, PyTorchsMessages) {
  const models::DCGANOptions narrow{.ngf = 1, .ndf = 1};
  EXPECT_EQ(error_of([] { default_generator()(zeros({2, 50, 1, 1})); }), golden().metadata.at("error.G"));
  EXPECT_EQ(error_of([&] {
              models::DCGANDiscriminator{narrow}(zeros({2, 3, 32, 32}));
            }),
            golden().metadata.at("error.D"));
  EXPECT_EQ(error_of([] { models::DCGANGenerator({.nz = 0}); }),
            "DCGAN: nz, ngf, ndf and nc must be positive, got 0, 64, 64 and 3");
}

TEST(ModelsDCGAN, AdamStepsTeachTheDiscriminator) {
  manual_seed(0);
  const models::DCGANOptions options{.nz = 8, .ngf = 2, .ndf = 2, .nc = 1};
  auto netG = std::make_shared<models::DCGANGenerator>(options);
  auto netD = std::make_shared<models::DCGANDiscriminator>(options);
  optim::Adam optimizerD(netD->parameters(), {.lr = 0.002, .beta1 = 0.5});
  nn::BCELoss criterion;
  // "Real" images: a bright square in the middle of a dark picture.
  Tensor real = full({4, 1, 64, 64}, -1.0);
  real.narrow(2, 16, 32).narrow(3, 16, 32).fill_(1.0);
  const Tensor fake = (*netG)(randn({4, 8, 1, 1})).detach();
  double first = 0.0, last = 0.0;
  for (int step = 0; step < 6; ++step) {
    netD->zero_grad();
    const Tensor errD = criterion((*netD)(real), ones({4})) + criterion((*netD)(fake), zeros({4}));
    errD.backward();
    optimizerD.step();
    if (step == 0) first = errD.item<double>();
    last = errD.item<double>();
  }
  EXPECT_LT(last, 0.7 * first);
}

}  // namespace
