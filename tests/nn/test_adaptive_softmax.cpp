// AdaptiveLogSoftmaxWithLoss against PyTorch 2.15 (tools/gen_adaptive_softmax_golden.py): the
// initial parameters bit for bit, output, loss, log_prob, predict and the gradients of input and
// every parameter in float64, finite differences, PyTorch's messages and the stand-in device.
#include <gtest/gtest.h>

#include <string>
#include <vector>

#include "ember/ember.h"
#include "ember/io/safetensors.h"
#include "ember/nn/adaptive_softmax.h"
#include "support/devices.h"
#include "support/error_of.h"
#include "support/golden_cases.h"
#include "support/gradcheck.h"

namespace {

using namespace ember;
using ember_test::error_of;

const io::SafetensorsData& golden() {
  static const io::SafetensorsData data =
      io::load_safetensors(EMBER_SOURCE_DIR "/tests/nn/golden/adaptive_softmax_golden.safetensors");
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

TEST(AdaptiveLogSoftmaxWithLoss, MatchesPyTorch) {
  const io::SafetensorsData& g = golden();
  int ran = 0;
  for (const ember_test::GoldenCase& c : ember_test::golden_cases(g.metadata)) {
    SCOPED_TRACE(c.description);
    manual_seed(static_cast<uint64_t>(c.num("seed")));
    nn::AdaptiveLogSoftmaxWithLoss m(c.num("in"), c.num("classes"), list_of(c.options.at("cutoffs")),
                                     {.div_value = c.real("div"), .head_bias = c.flag("head_bias")});
    ember_test::expect_parameters(m, g, c.prefix + "init.");  // PyTorch's draws, bit for bit
    m.to(kFloat64);
    nn::StateDict state;
    for (const auto& [name, p] : m.named_parameters()) state.insert(name, g.at(c.prefix + "param." + name));
    m.load_state_dict(state);

    const Tensor input = g.at(c.prefix + "input").clone().requires_grad_();
    const nn::ASMOutput out = m(input, g.at(c.prefix + "target"));
    ember_test::expect_close(out.output, g.at(c.prefix + "output"), 1e-12, 1e-13, "output");
    ember_test::expect_close(out.loss, g.at(c.prefix + "loss"), 1e-12, 1e-13, "loss");
    const Tensor total = (out.output * g.at(c.prefix + "gy")).sum() + out.loss;
    std::vector<Tensor> leaves = {input};
    const auto params = m.named_parameters();
    for (const auto& [name, p] : params) leaves.push_back(p);
    const std::vector<Tensor> grads = autograd::grad({total}, leaves, {}, std::nullopt, false, /*allow_unused=*/true);
    ember_test::expect_close(grads[0], g.at(c.prefix + "ginput"), 1e-12, 1e-13, "ginput");
    for (size_t k = 0; k < params.size(); ++k) {
      const Tensor want = g.at(c.prefix + "grad." + params[k].first);
      // A cluster no target reaches gets no gradient (PyTorch: None).
      ember_test::expect_close(grads[k + 1].defined() ? grads[k + 1] : zeros_like(want), want, 1e-12, 1e-13,
                               "grad." + params[k].first);
    }
    if (g.contains(c.prefix + "log_prob")) {
      NoGradGuard no_grad;
      const Tensor x = g.at(c.prefix + "input");
      ember_test::expect_close(m.log_prob(x), g.at(c.prefix + "log_prob"), 1e-12, 1e-13, "log_prob");
      EXPECT_TRUE(equal(m.predict(x), g.at(c.prefix + "predict"))) << m.predict(x);
    }
    ++ran;
  }
  EXPECT_EQ(ran, 5);
}

TEST(AdaptiveLogSoftmaxWithLoss, LayoutAndNames) {
  nn::AdaptiveLogSoftmaxWithLoss m(16, 20, {4, 10}, 2.0, true);
  EXPECT_EQ(m.name(), "AdaptiveLogSoftmaxWithLoss");
  EXPECT_EQ(m.cutoffs, (std::vector<int64_t>{4, 10, 20}));
  EXPECT_EQ(m.shortlist_size, 4);
  EXPECT_EQ(m.n_clusters, 2);
  EXPECT_EQ(m.head_size, 6);
  EXPECT_EQ(m.state_dict().keys(), (std::vector<std::string>{"head.weight", "head.bias", "tail.0.0.weight",
                                                             "tail.0.1.weight", "tail.1.0.weight", "tail.1.1.weight"}));
  EXPECT_EQ(m.get_parameter("tail.1.0.weight").sizes().vec(), (std::vector<int64_t>{4, 16}));  // 16 // 2^2
  EXPECT_EQ(m.get_parameter("tail.1.1.weight").sizes().vec(), (std::vector<int64_t>{10, 4}));
}

TEST(AdaptiveLogSoftmaxWithLoss, LogProbIsNormalised) {
  nn::AdaptiveLogSoftmaxWithLoss m(8, 12, {3, 7});
  m.to(kFloat64);
  const Tensor x = randn({4, 8}, kFloat64);
  const Tensor log_prob = m.log_prob(x);
  EXPECT_TRUE(allclose(log_prob.exp().sum({1}), ones({4}, kFloat64), 1e-12, 1e-12));
  EXPECT_TRUE(equal(m.predict(x), log_prob.argmax(1)));
}

TEST(AdaptiveLogSoftmaxWithLoss, FiniteDifferences) {
  nn::AdaptiveLogSoftmaxWithLoss m(6, 10, {3, 6}, 2.0, true);
  m.to(kFloat64);
  const Tensor target = tensor(std::vector<int64_t>{0, 4, 8, 2, 9});
  ember::test::gradcheck("output", [&](const std::vector<Tensor>& xs) { return m(xs[0], target).output; },
                         {randn({5, 6})});
}

TEST(AdaptiveLogSoftmaxWithLoss, PyTorchsMessages) {
  EXPECT_EQ(error_of([] { nn::AdaptiveLogSoftmaxWithLoss(8, 10, std::vector<int64_t>{}); }),
            "cutoffs should be a sequence of length larger than 0");
  const std::string bad_cutoffs =
      "cutoffs should be a sequence of unique, positive integers sorted in an increasing order, where each value is "
      "between 1 and n_classes-1";
  EXPECT_EQ(error_of([] { nn::AdaptiveLogSoftmaxWithLoss(8, 10, {5, 3}); }), bad_cutoffs);
  EXPECT_EQ(error_of([] { nn::AdaptiveLogSoftmaxWithLoss(8, 10, {0, 3}); }), bad_cutoffs);
  EXPECT_EQ(error_of([] { nn::AdaptiveLogSoftmaxWithLoss(8, 10, {3, 10}); }), bad_cutoffs);
  EXPECT_EQ(error_of([] { nn::AdaptiveLogSoftmaxWithLoss(8, 10, {3, 3}); }), bad_cutoffs);
  nn::AdaptiveLogSoftmaxWithLoss m(8, 10, {3, 6});
  EXPECT_EQ(error_of([&] {
              m(randn({4, 8}), tensor(std::vector<int64_t>{1, 2, 3}));
            }),
            "Input and target should have the same size in the batch dimension.");
  EXPECT_EQ(error_of([&] {
              m(randn({3, 8, 1}), tensor(std::vector<int64_t>{1, 2, 3}));
            }),
            "1D target tensor expects 2D input tensors, but found inputs with size torch.Size([3, 8, 1])");
  EXPECT_EQ(error_of([&] {
              m(randn({2, 8}), tensor(std::vector<int64_t>{1}).reshape({}));
            }),
            "0D target tensor expects 1D input tensors, but found inputs with size torch.Size([2, 8])");
  EXPECT_EQ(error_of([&] {
              m(randn({2, 8}), zeros({2, 1}, kInt64));
            }),
            "0D or 1D target tensor expected, multi-target not supported");
  EXPECT_EQ(error_of([&] {
              m(randn({3, 8}), tensor(std::vector<int64_t>{1, 10, -2}));
            }),
            "Target values should be in [0, 9], but values in range [-2, 10] were found. ");
}

class AdaptiveSoftmaxDevice : public ember_test::DeviceTest {};

TEST_P(AdaptiveSoftmaxDevice, MatchesTheCpu) {
  nn::AdaptiveLogSoftmaxWithLoss m(8, 12, {3, 7}, 2.0, true);
  m.to(kFloat64);
  const Tensor x = randn({5, 8}, kFloat64);
  const Tensor target = tensor(std::vector<int64_t>{0, 4, 11, 2, 8});
  const nn::ASMOutput cpu = m(x, target);
  const Tensor cpu_log_prob = m.log_prob(x), cpu_predict = m.predict(x);
  m.to(device());
  const nn::ASMOutput on_device = m(x.to(device()), target.to(device()));
  EXPECT_CLOSE_TO_CPU(on_device.output, cpu.output, 1e-14, 1e-14);
  EXPECT_CLOSE_TO_CPU(on_device.loss, cpu.loss, 1e-14, 1e-14);
  EXPECT_CLOSE_TO_CPU(m.log_prob(x.to(device())), cpu_log_prob, 1e-14, 1e-14);
  EXPECT_CLOSE_TO_CPU(m.predict(x.to(device())), cpu_predict, 0, 0);
  on_device.loss.backward();
  EXPECT_EQ(m.head->weight.grad().device(), device());
}

EMBER_INSTANTIATE_DEVICE_SUITE(AdaptiveSoftmaxDevice);

}  // namespace
