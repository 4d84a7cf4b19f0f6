// LinearCrossEntropyLoss and functional::linear_cross_entropy against PyTorch 2.15
// (tools/gen_linear_cross_entropy_golden.py): initial parameters bit for bit, the loss and the
// gradients of input and parameters in float64 for class and probability targets, K-dimensional
// losses, weights, ignore_index, label smoothing and every reduction; finite differences,
// PyTorch's messages and the stand-in device.
#include <gtest/gtest.h>

#include <string>
#include <vector>

#include "ember/ember.h"
#include "ember/io/safetensors.h"
#include "ember/nn/linear_cross_entropy.h"
#include "support/devices.h"
#include "support/error_of.h"
#include "support/golden_cases.h"
#include "support/gradcheck.h"

namespace {

using namespace ember;
using ember_test::error_of;
namespace F = ember::nn::functional;

const io::SafetensorsData& golden() {
  static const io::SafetensorsData data =
      io::load_safetensors(EMBER_SOURCE_DIR "/tests/nn/golden/linear_cross_entropy_golden.safetensors");
  return data;
}

std::vector<int64_t> list_of(const std::string& text) {
  std::vector<int64_t> out;
  for (size_t start = 0; start < text.size();) {
    size_t end = text.find(';', start);
    if (end == std::string::npos) end = text.size();
    out.push_back(std::stoll(text.substr(start, end - start)));
    start = end + 1;
  }
  return out;
}

nn::Reduction reduction_of(const std::string& name) {
  if (name == "none") return nn::Reduction::None;
  return name == "sum" ? nn::Reduction::Sum : nn::Reduction::Mean;
}

TEST(LinearCrossEntropyLoss, MatchesPyTorch) {
  const io::SafetensorsData& g = golden();
  int ran = 0;
  for (const ember_test::GoldenCase& c : ember_test::golden_cases(g.metadata)) {
    SCOPED_TRACE(c.description);
    const std::string ignore = c.options.at("ignore");
    nn::LinearCrossEntropyLossOptions options{
        .out_features = list_of(c.options.at("out")),
        .bias = c.flag("bias"),
        .reduction = reduction_of(c.options.at("reduction")),
        .weight = c.flag("weight") ? g.at(c.prefix + "class_weight") : Tensor(),
        .ignore_index = ignore == "none" ? std::nullopt : std::optional<int64_t>(std::stoll(ignore)),
        .label_smoothing = c.real("smoothing"),
    };
    manual_seed(static_cast<uint64_t>(c.num("seed")));
    nn::LinearCrossEntropyLoss m(c.num("in"), c.num("classes"), options);
    EXPECT_EQ(m.name(), "LinearCrossEntropyLoss");
    ember_test::expect_parameters(m, g, c.prefix + "init.");  // PyTorch's draws, bit for bit
    m.to(kFloat64);
    nn::StateDict state;
    for (const auto& [name, p] : m.named_parameters()) state.insert(name, g.at(c.prefix + "param." + name));
    if (m.weight.defined()) state.insert("weight", m.weight);
    m.load_state_dict(state);

    const Tensor input = g.at(c.prefix + "input").clone().requires_grad_();
    const Tensor loss = m(input, g.at(c.prefix + "target"));
    ember_test::expect_close(loss, g.at(c.prefix + "loss"), 1e-12, 1e-13, "loss");
    std::vector<Tensor> leaves = {input};
    const auto params = m.named_parameters();
    for (const auto& [name, p] : params) leaves.push_back(p);
    const std::vector<Tensor> grads = autograd::grad({loss}, leaves, {g.at(c.prefix + "gloss")});
    ember_test::expect_close(grads[0], g.at(c.prefix + "ginput"), 1e-12, 1e-13, "ginput");
    for (size_t k = 0; k < params.size(); ++k)
      ember_test::expect_close(grads[k + 1], g.at(c.prefix + "grad." + params[k].first), 1e-12, 1e-13,
                               "grad." + params[k].first);
    ++ran;
  }
  EXPECT_EQ(ran, 9);
}

TEST(LinearCrossEntropyLoss, LayoutAndStateDict) {
  const Tensor class_weight = ones({4});
  nn::LinearCrossEntropyLoss m(6, 4, {.out_features = {3, 2}, .bias = true, .weight = class_weight});
  EXPECT_EQ(m.state_dict().keys(), (std::vector<std::string>{"weight", "linear.weight", "linear.bias"}));
  EXPECT_EQ(m.linear->weight.sizes().vec(), (std::vector<int64_t>{24, 6}));  // flat: C * 3 * 2 rows
  EXPECT_EQ(m.linear->bias.sizes().vec(), (std::vector<int64_t>{24}));
  nn::LinearCrossEntropyLoss plain(6, 4);
  EXPECT_EQ(plain.state_dict().keys(), (std::vector<std::string>{"linear.weight"}));
}

TEST(LinearCrossEntropyLoss, EqualsLinearThenCrossEntropy) {
  const Tensor x = randn({5, 7}, kFloat64), w = randn({3, 7}, kFloat64), b = randn({3}, kFloat64);
  const Tensor target = tensor(std::vector<int64_t>{0, 2, 1, 1, 0});
  EXPECT_TRUE(equal(F::linear_cross_entropy(x, w, target, b, Tensor(), nn::Reduction::Sum),
                    F::cross_entropy(F::linear(x, w, b), target, nn::Reduction::Sum)));
}

TEST(LinearCrossEntropyLoss, FiniteDifferences) {
  const Tensor target = tensor(std::vector<int64_t>{0, 2, 1, 3});
  ember::test::gradcheck("linear_cross_entropy",
                         [&](const std::vector<Tensor>& xs) {
                           return F::linear_cross_entropy(xs[0], xs[1], target, xs[2], Tensor(), nn::Reduction::Mean,
                                                          std::nullopt, 0.1);
                         },
                         {randn({4, 5}), randn({4, 5}), randn({4})});
}

TEST(LinearCrossEntropyLoss, PyTorchsMessages) {
  EXPECT_EQ(error_of([] { nn::LinearCrossEntropyLoss(8, 5, {.weight = ones({3})}); }),
            "expected weight shape to be (5,), got (3,)");
  EXPECT_EQ(error_of([] { nn::LinearCrossEntropyLoss(8, 5, {.label_smoothing = 1.5}); }),
            "expected label_smoothing to be in range [0, 1], got 1.5");
  EXPECT_EQ(error_of([] { nn::LinearCrossEntropyLoss(8, 5, {.label_smoothing = -0.1}); }),
            "expected label_smoothing to be in range [0, 1], got -0.1");
  const Tensor w = randn({5, 8}), target = zeros({2}, kInt64);
  EXPECT_EQ(error_of([&] {
              F::linear_cross_entropy(randn({2, 3, 8}), w, target);
            }),
            "expected input with dimensionality 1 or 2, got 3");
  EXPECT_EQ(error_of([&] {
              F::linear_cross_entropy(randn({2, 8}), randn({8}), target);
            }),
            "expected linear_weight with dimensionality at least 2, got 1");
  EXPECT_EQ(error_of([&] {
              F::linear_cross_entropy(randn({2, 7}), w, target);
            }),
            "expected equal input and linear_weight last dimensions (in_features), got 7 and 8, respectively");
  EXPECT_EQ(error_of([&] {
              F::linear_cross_entropy(randn({2, 8}), w, target, randn({4}));
            }),
            "expected linear_bias shape (5,), got (4,)");
  EXPECT_EQ(error_of([] {
              F::linear_cross_entropy(randn({8}), randn({5, 3, 8}), zeros({3}, kInt64));
            }),
            "K-dimensional loss defined by linear_weight shape (5, 3, 8) requires batched input, (N, 8), got unbatched "
            "input with shape (8,)");
  EXPECT_EQ(error_of([&] {
              F::linear_cross_entropy(randn({2, 8}), w, rand({2, 5}), Tensor(), Tensor(), nn::Reduction::Mean, 1);
            }),
            "ignore_index cannot be specified when target contains probabilities");
}

class LinearCrossEntropyDevice : public ember_test::DeviceTest {};

TEST_P(LinearCrossEntropyDevice, MatchesTheCpu) {
  nn::LinearCrossEntropyLoss m(6, 4, {.out_features = {3}, .bias = true, .label_smoothing = 0.1});
  m.to(kFloat64);
  const Tensor x = randn({2, 6}, kFloat64);
  const Tensor target = tensor(std::vector<int64_t>{0, 3, 1, 2, 2, 0}).reshape({2, 3});
  const Tensor cpu = m(x, target);
  m.to(device());
  const Tensor on_device = m(x.to(device()), target.to(device()));
  EXPECT_CLOSE_TO_CPU(on_device, cpu, 1e-14, 1e-14);
  on_device.backward();
  EXPECT_EQ(m.linear->weight.grad().device(), device());
}

EMBER_INSTANTIATE_DEVICE_SUITE(LinearCrossEntropyDevice);

}  // namespace
