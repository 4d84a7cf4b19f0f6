// nll_loss and cross_entropy with per-class `weight` and `ignore_index`, against PyTorch: values and
// input gradients from goldens written by tools/gen_loss_golden.py (float64 tightly, float32),
// the same cases on every usable accelerator against the CPU, the modules, PyTorch's error
// messages, and the unmasked fast path when nothing is ignored.
#include <gtest/gtest.h>

#include <cmath>
#include <sstream>
#include <string>
#include <vector>

#include "ember/ember.h"
#include "ember/io/safetensors.h"
#include "support/devices.h"
#include "support/error_of.h"

namespace {

using namespace ember;
namespace nn = ember::nn;
namespace F = ember::nn::functional;
using ember_test::error_of;

const io::SafetensorsData& golden() {
  static const io::SafetensorsData data =
      io::load_safetensors(EMBER_SOURCE_DIR "/tests/nn/golden/loss_golden.safetensors");
  return data;
}

/// One golden case, parsed from the metadata "fn,reduction,label_smoothing,ignore_index,name".
struct Case {
  std::string prefix, fn, name;
  nn::Reduction reduction = nn::Reduction::Mean;
  double label_smoothing = 0.0;
  int64_t ignore_index = -100;
};

std::vector<Case> all_cases() {
  std::vector<Case> out;
  const int count = std::stoi(golden().metadata.at("count"));
  for (int i = 0; i < count; ++i) {
    Case c;
    c.prefix = "case" + std::to_string(i) + ".";
    std::stringstream ss(golden().metadata.at("case" + std::to_string(i)));
    std::string reduction, smoothing, ignore;
    std::getline(ss, c.fn, ',');
    std::getline(ss, reduction, ',');
    std::getline(ss, smoothing, ',');
    std::getline(ss, ignore, ',');
    std::getline(ss, c.name);
    c.reduction = reduction == "none"  ? nn::Reduction::None
                  : reduction == "sum" ? nn::Reduction::Sum
                                       : nn::Reduction::Mean;
    c.label_smoothing = std::stod(smoothing);
    c.ignore_index = std::stoll(ignore);
    out.push_back(c);
  }
  return out;
}

struct Result {
  Tensor y, gx;
};

/// Runs one case in `dtype` on `device`: the loss and the input's gradient for the golden `gy`.
Result run_case(const Case& c, Dtype dtype, Device device) {
  const io::SafetensorsData& g = golden();
  Tensor x = g.at(c.prefix + "x").to(device, dtype).detach().requires_grad_();
  Tensor t = g.at(c.prefix + "t");
  t = t.is_floating_point() ? t.to(device, dtype) : t.to(device);
  Tensor w = g.contains(c.prefix + "w") ? g.at(c.prefix + "w").to(device, dtype) : Tensor();
  Tensor y = c.fn == "nll" ? F::nll_loss(x, t, c.reduction, w, c.ignore_index)
                           : F::cross_entropy(x, t, c.reduction, c.label_smoothing, w, c.ignore_index);
  y.backward(g.at(c.prefix + "gy").to(device, dtype));
  return {y.detach(), x.grad()};
}

void expect_matches_golden(Dtype dtype, double rtol, double atol) {
  const std::vector<Case> cases = all_cases();
  ASSERT_GT(cases.size(), 100u);
  int nan_results = 0;
  for (const Case& c : cases) {
    SCOPED_TRACE(c.name);
    const Result r = run_case(c, dtype, Device(DeviceType::CPU));
    ASSERT_EQ(r.y.dtype(), dtype);
    ASSERT_TRUE(r.gx.defined());
    const Tensor want_y = golden().at(c.prefix + "y"), want_gx = golden().at(c.prefix + "gx");
    EXPECT_TRUE(ember_test::close_to_cpu(r.y.to(kFloat64), want_y, rtol, atol, "loss"));
    EXPECT_TRUE(ember_test::close_to_cpu(r.gx.to(kFloat64), want_gx, rtol, atol, "input gradient"));
    if (want_y.numel() == 1 && std::isnan(want_y.item<double>())) ++nan_results;
  }
  // The all-ignored means are NaN (0/0, as in PyTorch): nll and cross_entropy with and without
  // weight and smoothing, and the two single samples whose target is ignored.
  EXPECT_EQ(nan_results, 8);
}

TEST(LossWeights, MatchesPyTorchInFloat64) { expect_matches_golden(kFloat64, 1e-12, 1e-13); }

TEST(LossWeights, MatchesPyTorchInFloat32) { expect_matches_golden(kFloat32, 2e-5, 2e-6); }

// The default ignore_index (-100) applies even when nobody sets it: such a target is skipped and
// left out of the mean, as in PyTorch (ember used to reject it as out of bounds).
TEST(LossWeights, DefaultIgnoreIndexIsIgnored) {
  Tensor logits = tensor({{1.0, 2.0, 0.5}, {0.3, -1.0, 2.0}, {-0.5, 0.25, 1.5}}, kFloat64);
  Tensor kept = index_select(logits, 0, tensor({0, 2}));
  const double want = F::cross_entropy(kept, tensor({1, 2})).item<double>();
  EXPECT_NEAR(F::cross_entropy(logits, tensor({1, -100, 2})).item<double>(), want, 1e-12);
  EXPECT_NEAR(nn::CrossEntropyLoss()(logits, tensor({1, -100, 2})).item<double>(), want, 1e-12);
  Tensor log_probs = F::log_softmax(logits, 1);
  EXPECT_NEAR(F::nll_loss(log_probs, tensor({1, -100, 2})).item<double>(), want, 1e-12);
  EXPECT_NEAR(nn::NLLLoss()(log_probs, tensor({1, -100, 2})).item<double>(), want, 1e-12);
  Tensor none = F::nll_loss(log_probs, tensor({1, -100, 2}), nn::Reduction::None);
  EXPECT_EQ(none[1].item<double>(), 0.0);
}

// Without weight and with nothing ignored, the CPU takes the unmasked path (a plain mean, no
// where/denominator); an ignored target switches to the masked one.
TEST(LossWeights, NothingIgnoredTakesThePlainPath) {
  Tensor logits = randn({4, 5}).requires_grad_();
  EXPECT_EQ(F::cross_entropy(logits, tensor({0, 1, 2, 3})).grad_fn_name(), "MeanBackward0");
  EXPECT_EQ(F::nll_loss(logits, tensor({0, 1, 2, 3})).grad_fn_name(), "MeanBackward0");
  EXPECT_EQ(F::cross_entropy(logits, tensor({0, -100, 2, 3})).grad_fn_name(), "DivBackward0");
  EXPECT_EQ(F::nll_loss(logits, tensor({0, 1, 2, 3}), nn::Reduction::None, Tensor(), 1).grad_fn_name(),
            "WhereBackward0");
}

TEST(LossWeights, ModulesPassWeightAndIgnoreIndex) {
  Tensor logits = randn({5, 4}, kFloat64);
  Tensor target = tensor({0, 1, 3, 1, 2});
  Tensor w = tensor({0.5, 2.0, 1.0, 3.0}, kFloat64);
  nn::CrossEntropyLoss ce(w, /*ignore_index=*/1, nn::Reduction::Sum, /*label_smoothing=*/0.1);
  EXPECT_EQ(ce.ignore_index, 1);
  EXPECT_EQ(ce.reduction, nn::Reduction::Sum);
  EXPECT_DOUBLE_EQ(ce.label_smoothing, 0.1);
  EXPECT_TRUE(allclose(ce(logits, target), F::cross_entropy(logits, target, nn::Reduction::Sum, 0.1, w, 1), 1e-12));
  // The other constructor, in ember's order, reaches the same loss.
  nn::CrossEntropyLoss ce2(nn::Reduction::Sum, 0.1, w, 1);
  EXPECT_TRUE(allclose(ce2(logits, target), ce(logits, target), 1e-12));

  // weight is a buffer (PyTorch's _WeightedLoss), so it is in state_dict and moves with the module.
  ASSERT_EQ(ce.state_dict().keys(), std::vector<std::string>{"weight"});
  EXPECT_TRUE(equal(ce.state_dict().at("weight"), w));
  EXPECT_TRUE(nn::CrossEntropyLoss().state_dict().empty());
  nn::NLLLoss nll(w.to(kFloat32), 3);
  ASSERT_EQ(nll.state_dict().keys(), std::vector<std::string>{"weight"});
  nll.to(kFloat64);
  EXPECT_EQ(nll.weight.dtype(), kFloat64);
  Tensor log_probs = F::log_softmax(logits, 1);
  EXPECT_TRUE(allclose(nll(log_probs, target), F::nll_loss(log_probs, target, nn::Reduction::Mean, w, 3), 1e-6));
  nn::NLLLoss nll2(nn::Reduction::None, w, 3);
  EXPECT_TRUE(allclose(nll2(log_probs, target), F::nll_loss(log_probs, target, nn::Reduction::None, w, 3), 1e-12));
  EXPECT_EQ(nn::NLLLoss().ignore_index, -100);
  EXPECT_FALSE(nn::NLLLoss().weight.defined());
}

TEST(LossWeights, PyTorchErrors) {
  Tensor logits = randn({3, 4}, kFloat64);
  Tensor target = tensor({0, 1, 3});
  Tensor probs = F::softmax(randn({3, 4}, kFloat64), 1);
  EXPECT_EQ(error_of([&] { F::nll_loss(logits, target, nn::Reduction::Mean, ones({3}, kFloat64)); }),
            "weight tensor should be defined either for all 4 classes or no classes but got weight tensor of shape: "
            "[3]");
  EXPECT_EQ(error_of([&] {
              F::cross_entropy(logits, target, nn::Reduction::Mean, 0.1, ones({1, 4}, kFloat64));
            }),
            "weight tensor should be defined either for all 4 classes or no classes but got weight tensor of shape: "
            "[1, 4]");
  EXPECT_EQ(error_of([&] { F::cross_entropy(logits, probs, nn::Reduction::Mean, 0.0, ones({5}, kFloat64)); }),
            "cross_entropy: weight tensor should be defined either for all 4 classes or no classes but got weight "
            "tensor of shape: [5]");
  EXPECT_EQ(error_of([&] { F::nll_loss(logits, target, nn::Reduction::Mean, ones({4}, kFloat32)); }),
            "expected scalar type Double but found Float");
  EXPECT_EQ(error_of([&] {
              nn::CrossEntropyLoss(ones({2}))(randn({3, 4}), target);
            }),
            "weight tensor should be defined either for all 4 classes or no classes but got weight tensor of shape: "
            "[2]");

  // Out of range stays an error unless the target is ignore_index, wherever that lies.
  EXPECT_EQ(error_of([&] { F::nll_loss(logits, tensor({0, 4, 1})); }), "Target 4 is out of bounds.");
  EXPECT_EQ(error_of([&] { F::cross_entropy(logits, tensor({0, -100, -3})); }), "Target -3 is out of bounds.");
  EXPECT_EQ(error_of([&] {
              F::cross_entropy(logits, tensor({0, -100, 1}), nn::Reduction::Mean, 0.0, Tensor(), 1);
            }),
            "Target -100 is out of bounds.");
  EXPECT_EQ(error_of([&] {
              F::cross_entropy(logits, tensor({0, 2, 7}), nn::Reduction::Sum, 0.1, ones({4}, kFloat64), 2);
            }),
            "Target 7 is out of bounds.");
  EXPECT_EQ(error_of([&] { F::nll_loss(logits, tensor({0, 5, 1}), nn::Reduction::Mean, Tensor(), 5); }), "no error");

  // Class probabilities take no ignore_index >= 0 (PyTorch's rule); negative ones are accepted.
  EXPECT_EQ(error_of([&] { F::cross_entropy(logits, probs, nn::Reduction::Mean, 0.0, Tensor(), 0); }),
            "ignore_index is not supported for floating point target");
  EXPECT_EQ(error_of([&] { nn::CrossEntropyLoss(nn::Reduction::Mean, 0.0, Tensor(), 3)(logits, probs); }),
            "ignore_index is not supported for floating point target");
  EXPECT_EQ(error_of([&] { F::cross_entropy(logits, probs, nn::Reduction::Mean, 0.0, Tensor(), -1); }), "no error");

  // The weight joins the error context only when it is given.
  const std::string message = ember_test::full_error_of([&] {
    F::nll_loss(logits, tensor({0, 9, 1}), nn::Reduction::Mean, ones({4}, kFloat64));
  });
  EXPECT_NE(message.find("in nll_loss(input: float64 [3, 4] on cpu, target: int64 [3] on cpu, weight: float64 [4] "
                         "on cpu)"),
            std::string::npos)
      << message;
}

// Every golden case on each usable accelerator against the CPU (where the masked path always
// runs: the targets are not read back to the host).
class LossWeightsDevice : public ember_test::DeviceTest {};

TEST_P(LossWeightsDevice, MatchesCpu) {
  for (const Case& c : all_cases()) {
    SCOPED_TRACE(c.name);
    for (Dtype dtype : {kFloat32, kFloat64}) {
      const double rtol = dtype == kFloat32 ? 1e-5 : 1e-11, atol = dtype == kFloat32 ? 1e-6 : 1e-12;
      const Result cpu = run_case(c, dtype, Device(DeviceType::CPU));
      const Result dev = run_case(c, dtype, device());
      EXPECT_TRUE(ember_test::close_to_cpu(dev.y, cpu.y, rtol, atol, "loss"));
      EXPECT_TRUE(ember_test::close_to_cpu(dev.gx, cpu.gx, rtol, atol, "input gradient"));
    }
  }
}

EMBER_INSTANTIATE_DEVICE_SUITE(LossWeightsDevice);

}  // namespace
