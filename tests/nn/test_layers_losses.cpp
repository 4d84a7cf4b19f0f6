// nn layers and losses: values computed by hand, PyTorch's semantics, and gradients of a small
// network against float64 finite differences.
#include <gtest/gtest.h>

#include <cmath>
#include <memory>
#include <vector>

#include "ember/ember.h"
#include "ember/nn/nn.h"
#include "support/error_of.h"

namespace {

using namespace ember;
namespace nn = ember::nn;
namespace F = ember::nn::functional;

double log_sum_exp(const std::vector<double>& v) {
  double s = 0;
  for (double x : v) s += std::exp(x);
  return std::log(s);
}

TEST(NnLoss, CrossEntropyByHand) {
  Tensor logits = tensor({{1.0, 2.0, 3.0}, {0.5, -1.0, 0.0}}, kFloat64);
  Tensor target = tensor({2, 0});
  const double l0 = log_sum_exp({1, 2, 3}) - 3.0;
  const double l1 = log_sum_exp({0.5, -1, 0}) - 0.5;
  EXPECT_NEAR(F::cross_entropy(logits, target).item<double>(), (l0 + l1) / 2, 1e-12);
  EXPECT_NEAR(nn::CrossEntropyLoss(nn::Reduction::Sum)(logits, target).item<double>(), l0 + l1, 1e-12);
  Tensor none = F::cross_entropy(logits, target, nn::Reduction::None);
  EXPECT_TRUE(allclose(none, tensor({l0, l1}, kFloat64), 0, 1e-12));

  // Label smoothing: (1 - e) * nll + e / C * sum_c(-log p_c).
  const double e = 0.1;
  const double s0 = 3 * log_sum_exp({1, 2, 3}) - 6.0;
  const double s1 = 3 * log_sum_exp({0.5, -1, 0}) + 0.5;
  const double smoothed = ((1 - e) * l0 + e / 3 * s0 + (1 - e) * l1 + e / 3 * s1) / 2;
  EXPECT_NEAR(nn::CrossEntropyLoss(nn::Reduction::Mean, e)(logits, target).item<double>(), smoothed, 1e-12);

  // Probability targets: one-hot rows give the same loss as class indices.
  Tensor one_hot = tensor({{0.0, 0.0, 1.0}, {1.0, 0.0, 0.0}}, kFloat64);
  EXPECT_NEAR(F::cross_entropy(logits, one_hot).item<double>(), (l0 + l1) / 2, 1e-12);
  EXPECT_NEAR(F::cross_entropy(logits, one_hot, nn::Reduction::Mean, e).item<double>(), smoothed, 1e-12);

  // A single unbatched sample [C] with a 0-dim target.
  EXPECT_NEAR(F::cross_entropy(logits[0], scalar_tensor(2)).item<double>(), l0, 1e-12);

  // Spatial inputs [N, C, d]: classes along dimension 1.
  Tensor spatial = logits.unsqueeze(2);  // [2, 3, 1]
  EXPECT_NEAR(F::cross_entropy(spatial, target.unsqueeze(1)).item<double>(), (l0 + l1) / 2, 1e-12);
}

TEST(NnLoss, ClassTargetErrors) {
  Tensor logits = zeros({2, 3});
  EXPECT_THROW(F::cross_entropy(logits, tensor({0, 3})), Error);
  EXPECT_THROW(F::cross_entropy(logits, tensor({0, 1, 2})), Error);
  EXPECT_THROW(F::cross_entropy(logits, tensor({0, 1}).to(kInt32)), Error);
  EXPECT_THROW(F::cross_entropy(logits, tensor({0, 1}), nn::Reduction::Mean, 1.5), Error);
  EXPECT_EQ(ember_test::error_of([&] { F::nll_loss(logits, tensor({0, -1})); }), "Target -1 is out of bounds.");
  EXPECT_EQ(ember_test::error_of([&] {
              F::nll_loss(logits, tensor({0, 1, 1}));
            }),
            "Expected input batch_size (2) to match target batch_size (3).");
}

TEST(NnLoss, NllMseBceByHand) {
  Tensor logp = tensor({{-0.5, -1.5}, {-2.0, -0.25}}, kFloat64);
  EXPECT_NEAR(nn::NLLLoss()(logp, tensor({1, 0})).item<double>(), (1.5 + 2.0) / 2, 1e-12);
  EXPECT_NEAR(nn::NLLLoss(nn::Reduction::Sum)(logp, tensor({0, 1})).item<double>(), 0.75, 1e-12);

  Tensor x = tensor({1.0, 2.0, 3.0}, kFloat64), y = tensor({1.0, 1.0, 1.0}, kFloat64);
  EXPECT_NEAR(nn::MSELoss()(x, y).item<double>(), 5.0 / 3.0, 1e-12);
  EXPECT_NEAR(nn::MSELoss(nn::Reduction::Sum)(x, y).item<double>(), 5.0, 1e-12);
  EXPECT_TRUE(equal(nn::MSELoss(nn::Reduction::None)(x, y), tensor({0.0, 1.0, 4.0}, kFloat64)));

  // max(x, 0) - x y + log(1 + exp(-|x|)), finite even for large logits.
  Tensor logits = tensor({0.5, -2.0, 100.0, -100.0}, kFloat64);
  Tensor labels = tensor({1.0, 0.0, 1.0, 1.0}, kFloat64);
  auto expected = [](double v, double t) { return std::max(v, 0.0) - v * t + std::log1p(std::exp(-std::abs(v))); };
  const std::vector<double> each = {expected(0.5, 1), expected(-2, 0), expected(100, 1), expected(-100, 1)};
  Tensor none = nn::BCEWithLogitsLoss(nn::Reduction::None)(logits, labels);
  EXPECT_TRUE(allclose(none, tensor(each, kFloat64), 1e-12, 1e-12)) << none;
  EXPECT_NEAR(nn::BCEWithLogitsLoss()(logits, labels).item<double>(), (each[0] + each[1] + each[2] + each[3]) / 4,
              1e-12);
  // pos_weight scales the positive term: p y log(1 + e^-x) + (1 - y) log(1 + e^x).
  Tensor pos = tensor({3.0}, kFloat64);
  Tensor weighted = F::binary_cross_entropy_with_logits(tensor({0.5, -2.0}, kFloat64), tensor({1.0, 0.0}, kFloat64),
                                                        nn::Reduction::None, pos);
  EXPECT_TRUE(
      allclose(weighted, tensor({3 * std::log1p(std::exp(-0.5)), std::log1p(std::exp(-2.0))}, kFloat64), 1e-12, 1e-12));
  EXPECT_THROW(F::binary_cross_entropy_with_logits(zeros({2}), zeros({3})), Error);
}

TEST(NnLayers, ActivationsMatchTheOps) {
  Tensor x = tensor({-2.0f, -0.5f, 0.0f, 1.5f});
  EXPECT_TRUE(equal(nn::ReLU()(x), tensor({0.0f, 0.0f, 0.0f, 1.5f})));
  EXPECT_TRUE(allclose(nn::Sigmoid()(x), 1.0 / (1.0 + exp(-x))));
  EXPECT_TRUE(allclose(nn::Tanh()(x), tanh(x)));
  EXPECT_TRUE(allclose(nn::SiLU()(x), x * sigmoid(x)));
  EXPECT_NEAR(nn::GELU()(x)[3].item<double>(), 1.5 * 0.5 * (1 + std::erf(1.5 / std::sqrt(2.0))), 1e-6);
  EXPECT_NEAR(nn::GELU("tanh")(x)[3].item<double>(),
              0.5 * 1.5 * (1 + std::tanh(std::sqrt(2 / M_PI) * (1.5 + 0.044715 * 1.5 * 1.5 * 1.5))), 1e-6);
  Tensor m = tensor({{1.0f, 2.0f}, {3.0f, 5.0f}});
  EXPECT_TRUE(allclose(nn::Softmax(1)(m).sum({1}), ones({2})));
  EXPECT_TRUE(allclose(nn::LogSoftmax(0)(m).exp().sum({0}), ones({2})));
  EXPECT_EQ(nn::Flatten()(zeros({2, 3, 4})).sizes().vec(), (std::vector<int64_t>{2, 12}));
  EXPECT_EQ(nn::Flatten(0)(zeros({2, 3, 4})).sizes().vec(), (std::vector<int64_t>{24}));
  EXPECT_THROW(nn::GELU("fast"), Error);
}

TEST(NnLayers, LinearComputesXWtPlusB) {
  nn::Linear lin(2, 3);
  {
    NoGradGuard no_grad;
    lin.weight.copy_(tensor({{1.0f, 2.0f}, {0.0f, -1.0f}, {3.0f, 0.5f}}));
    lin.bias.copy_(tensor({0.5f, 0.0f, -1.0f}));
  }
  Tensor y = lin(tensor({{1.0f, 1.0f}, {2.0f, 0.0f}}));
  EXPECT_TRUE(allclose(y, tensor({{3.5f, -1.0f, 2.5f}, {2.5f, 0.0f, 5.0f}})));
  nn::Linear no_bias(2, 3, false);
  EXPECT_FALSE(no_bias.bias.defined());
  EXPECT_EQ(no_bias.named_parameters().size(), 1u);
  EXPECT_EQ(no_bias(zeros({5, 2})).sizes().vec(), (std::vector<int64_t>{5, 3}));
}

TEST(NnLayers, DropoutTrainAndEval) {
  nn::Dropout drop(0.25);
  Tensor x = ones({4000});
  manual_seed(5);
  Tensor y = drop(x);
  // Every element is either dropped or scaled by 1/(1-p).
  Tensor kept = y.ne(zeros({4000}));
  EXPECT_TRUE(allclose(where(kept, y, full({4000}, 4.0f / 3.0f)), full({4000}, 4.0f / 3.0f)));
  const double kept_fraction = kept.to(kFloat64).mean().item<double>();
  EXPECT_NEAR(kept_fraction, 0.75, 0.03);
  // The mask is ember::rand's: same seed, same mask.
  manual_seed(5);
  EXPECT_TRUE(equal(kept, rand({4000}) < 0.75));
  drop.eval();
  EXPECT_TRUE(drop(x).is_same(x));
  EXPECT_TRUE(equal(F::dropout(x, 1.0, true), zeros({4000})));
  EXPECT_THROW(nn::Dropout(1.5), Error);
}

TEST(NnLayers, EmbeddingLooksUpRowsAndGetsGradients) {
  manual_seed(0);
  nn::Embedding emb(10, 3);
  EXPECT_EQ(emb.weight.sizes().vec(), (std::vector<int64_t>{10, 3}));
  manual_seed(0);
  EXPECT_TRUE(equal(emb.weight, randn({10, 3})));  // normal_(0, 1) from the global generator
  Tensor idx = tensor({{1, 4}, {4, 9}});
  Tensor out = emb(idx);
  EXPECT_EQ(out.sizes().vec(), (std::vector<int64_t>{2, 2, 3}));
  EXPECT_TRUE(equal(out[1][0], emb.weight[4]));
  out.sum().backward();
  Tensor g = emb.weight.grad();
  EXPECT_TRUE(equal(g[4], full({3}, 2.0f)));
  EXPECT_TRUE(equal(g[1], ones({3})));
  EXPECT_TRUE(equal(g[0], zeros({3})));
}

TEST(NnLayers, LayerNormNormalisesTrailingDims) {
  nn::LayerNorm ln({4});
  Tensor x = tensor({{1.0, 2.0, 3.0, 4.0}, {-1.0, 0.0, 0.0, 1.0}}, kFloat64);
  ln.to(kFloat64);
  Tensor y = ln(x);
  // Row 0: mean 2.5, population variance 1.25.
  const double r = 1.0 / std::sqrt(1.25 + 1e-5);
  EXPECT_TRUE(allclose(y[0], tensor({-1.5 * r, -0.5 * r, 0.5 * r, 1.5 * r}, kFloat64), 1e-12, 1e-12));
  const double r1 = 1.0 / std::sqrt(0.5 + 1e-5);
  EXPECT_TRUE(allclose(y[1], tensor({-r1, 0.0, 0.0, r1}, kFloat64), 1e-12, 1e-12));
  EXPECT_EQ(ln.state_dict().keys(), (std::vector<std::string>{"weight", "bias"}));
  EXPECT_THROW(ln(zeros({2, 3}, kFloat64)), Error);
  nn::LayerNorm plain({2, 4}, 1e-5, false);
  EXPECT_TRUE(plain.parameters().empty());
  EXPECT_NEAR(plain(randn({3, 2, 4})).mean().item<double>(), 0.0, 1e-6);
}

TEST(NnLayers, ContainersIndexAndRegister) {
  nn::Sequential seq;
  seq.push_back(std::make_shared<nn::Linear>(3, 4));
  seq.push_back(std::make_shared<nn::Tanh>());
  EXPECT_EQ(seq.size(), 2u);
  EXPECT_EQ(seq[-1]->name(), "Tanh");
  EXPECT_THROW(seq[2], Error);
  nn::ModuleList list({std::make_shared<nn::Linear>(2, 2), std::make_shared<nn::Linear>(2, 1)});
  list.push_back(std::make_shared<nn::ReLU>());
  EXPECT_EQ(list.size(), 3u);
  std::vector<std::string> names;
  for (const auto& item : list.named_parameters()) names.push_back(item.first);
  EXPECT_EQ(names, (std::vector<std::string>{"0.weight", "0.bias", "1.weight", "1.bias"}));
  EXPECT_THROW(list.forward(zeros({1})), Error);
}

// Central differences of an MLP + CrossEntropy loss in float64 against backward(), for every
// parameter element.
TEST(NnGradcheck, MlpWithCrossEntropyMatchesFiniteDifferences) {
  manual_seed(11);
  auto model = std::make_shared<nn::Sequential>(std::make_shared<nn::Linear>(4, 5), std::make_shared<nn::Tanh>(),
                                                std::make_shared<nn::LayerNorm>(std::vector<int64_t>{5}),
                                                std::make_shared<nn::Linear>(5, 3));
  model->to(kFloat64);
  {
    NoGradGuard no_grad;  // move LayerNorm away from its trivial init so its gradients matter
    for (Tensor p : model->parameters()) p.copy_(p + randn(p.sizes(), kFloat64) * 0.1);
  }
  Tensor x = randn({6, 4}, kFloat64);
  Tensor target = tensor({0, 2, 1, 1, 0, 2});
  nn::CrossEntropyLoss loss_fn(nn::Reduction::Mean, 0.05);
  auto loss_value = [&] { return loss_fn(model->forward(x), target); };
  loss_value().backward();

  const double eps = 1e-6;
  for (const auto& [name, p] : model->named_parameters()) {
    Tensor grad = p.grad();
    ASSERT_TRUE(grad.defined()) << name;
    for (int64_t i = 0; i < p.numel(); ++i) {
      NoGradGuard no_grad;
      double* v = p.data_ptr<double>() + i;
      const double orig = *v;
      *v = orig + eps;
      const double up = loss_value().item<double>();
      *v = orig - eps;
      const double down = loss_value().item<double>();
      *v = orig;
      const double numeric = (up - down) / (2 * eps);
      const double analytic = grad.reshape({-1})[i].item<double>();
      EXPECT_NEAR(analytic, numeric, 1e-7 + 1e-5 * std::abs(numeric)) << name << "[" << i << "]";
    }
  }
}

}  // namespace
