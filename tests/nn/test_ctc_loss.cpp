// torch.nn.CTCLoss and functional::ctc_loss against PyTorch 2.15 (goldens written by
// tools/gen_ctc_loss_golden.py): losses and log_probs gradients in float64 to 1e-12 and float32
// to its precision, with padded and concatenated targets, repeated labels, impossible alignments
// with and without zero_infinity, each reduction, unbatched input and raw (not log_softmax-ed)
// input, where PyTorch's gradient is not the recursion's; finite differences through a
// log_softmax; PyTorch's error messages; and the device (stand-in) against the CPU.
#include <gtest/gtest.h>

#include <cmath>
#include <cstdint>
#include <limits>
#include <sstream>
#include <string>
#include <vector>

#include "ember/ember.h"
#include "ember/io/safetensors.h"
#include "ember/nn/ctc_loss.h"
#include "support/devices.h"
#include "support/error_of.h"
#include "support/gradcheck.h"

namespace {

using namespace ember;
namespace nn = ember::nn;
namespace F = ember::nn::functional;
using ember_test::error_of;

const io::SafetensorsData& golden() {
  static const io::SafetensorsData data =
      io::load_safetensors(EMBER_SOURCE_DIR "/tests/nn/golden/ctc_loss_golden.safetensors");
  return data;
}

std::vector<double> values_of(const Tensor& t) {
  const Tensor c = t.detach().cpu().to(kFloat64).contiguous();
  return std::vector<double>(c.data_ptr<double>(), c.data_ptr<double>() + c.numel());
}

// Equal sizes and values within `tol` (relative to 1 + |expected|), NaN matching NaN and an
// infinity matching the same infinity.
::testing::AssertionResult close(const Tensor& actual, const Tensor& expected, double tol) {
  if (actual.sizes().vec() != expected.sizes().vec()) return ::testing::AssertionFailure() << "sizes differ";
  const std::vector<double> a = values_of(actual), e = values_of(expected);
  for (size_t i = 0; i < a.size(); ++i) {
    const bool same = (std::isnan(a[i]) && std::isnan(e[i])) || a[i] == e[i] ||
                      (std::isfinite(e[i]) && std::abs(a[i] - e[i]) <= tol * (1 + std::abs(e[i])));
    if (!same) return ::testing::AssertionFailure() << "element " << i << ": " << a[i] << " vs " << e[i];
  }
  return ::testing::AssertionSuccess();
}

struct Case {
  std::string key;
  int64_t blank = 0;
  nn::Reduction reduction = nn::Reduction::Mean;
  bool zero_infinity = false;
  const Tensor& at(const std::string& name) const { return golden().at(key + "." + name); }
};

std::vector<Case> cases() {
  std::vector<Case> out;
  for (int k = 0; golden().metadata.count(std::to_string(k)); ++k) {
    Case c;
    c.key = std::to_string(k);
    std::stringstream fields(golden().metadata.at(c.key));
    std::string blank, reduction, zero_infinity;
    std::getline(fields, blank, ',');
    std::getline(fields, reduction, ',');
    std::getline(fields, zero_infinity, ',');
    c.blank = std::stoll(blank);
    c.reduction = reduction == "none"  ? nn::Reduction::None
                  : reduction == "sum" ? nn::Reduction::Sum
                                       : nn::Reduction::Mean;
    c.zero_infinity = zero_infinity == "1";
    out.push_back(c);
  }
  return out;
}

// Runs the case in `dtype` and checks the loss and the gradient against the golden `suffix`.
void check_case(const Case& c, Dtype dtype, const std::string& suffix, double tol) {
  const Tensor x = c.at("log_probs").clone().to(dtype).requires_grad_();
  const Tensor loss = F::ctc_loss(x, c.at("targets"), c.at("input_lengths"), c.at("target_lengths"), c.blank,
                                  c.reduction, c.zero_infinity);
  EXPECT_EQ(loss.dtype(), dtype) << "case " << c.key;
  EXPECT_TRUE(close(loss, c.at("loss" + suffix), tol)) << "case " << c.key << suffix << " loss";
  loss.backward(c.at("grad_out").to(dtype));
  EXPECT_TRUE(close(x.grad(), c.at("grad" + suffix), tol)) << "case " << c.key << suffix << " grad";
}

TEST(CtcLoss, MatchesPyTorchInFloat64) {
  const std::vector<Case> all = cases();
  ASSERT_EQ(all.size(), 18u);
  for (const Case& c : all) check_case(c, kFloat64, "", 1e-12);
}

TEST(CtcLoss, MatchesPyTorchInFloat32) {
  int checked = 0;
  for (const Case& c : cases()) {
    if (!golden().contains(c.key + ".loss32")) continue;
    check_case(c, kFloat32, "32", 2e-5);
    ++checked;
  }
  EXPECT_EQ(checked, 8);
}

TEST(CtcLoss, ModuleAndIntegerListsAgreeWithTheFunctional) {
  const Case c = cases()[5];  // impossible alignment, zero_infinity off, reduction none
  const Tensor x = c.at("log_probs");
  nn::CTCLoss plain;
  EXPECT_EQ(plain.name(), "CTCLoss");
  EXPECT_EQ(plain.blank, 0);
  EXPECT_EQ(plain.reduction, nn::Reduction::Mean);
  EXPECT_FALSE(plain.zero_infinity);
  EXPECT_TRUE(plain.state_dict().empty());
  nn::CTCLoss module({.reduction = nn::Reduction::None, .zero_infinity = true});
  const Tensor expected =
      F::ctc_loss(x, c.at("targets"), c.at("input_lengths"), c.at("target_lengths"), 0, nn::Reduction::None, true);
  EXPECT_TRUE(close(module(x, c.at("targets"), c.at("input_lengths"), c.at("target_lengths")), expected, 0));
  EXPECT_TRUE(close(module(x, c.at("targets"), {12, 9, 4}, {4, 0, 3}), expected, 0));
  EXPECT_EQ(values_of(expected)[2], 0.0);  // the impossible one, zeroed
  const std::vector<int64_t> input_lengths = {12, 9, 4}, target_lengths = {4, 0, 3};
  EXPECT_TRUE(
      close(F::ctc_loss(x, c.at("targets"), input_lengths, target_lengths, 0, nn::Reduction::None, true), expected, 0));
  // A different blank through the options.
  const Case other = cases()[11];  // blank 4
  nn::CTCLoss with_blank({.blank = 4, .reduction = nn::Reduction::None});
  EXPECT_TRUE(close(
      with_blank(other.at("log_probs"), other.at("targets"), other.at("input_lengths"), other.at("target_lengths")),
      other.at("loss"), 1e-12));
}

TEST(CtcLoss, FiniteDifferencesThroughLogSoftmax) {
  // PyTorch's gradient is the true one for log_softmax's output, so the composition checks out.
  manual_seed(3);
  const Tensor logits = randn({7, 2, 4}, kFloat64);
  const Tensor targets = tensor({int64_t{1}, 2, 2, 3, 3}, kInt64).view({5});  // concatenated
  for (const nn::Reduction reduction : {nn::Reduction::None, nn::Reduction::Mean, nn::Reduction::Sum}) {
    ember::test::gradcheck("ctc_loss",
                           [&](const std::vector<Tensor>& in) {
                             return F::ctc_loss(log_softmax(in[0], 2), targets, {7, 6}, {3, 2}, 0, reduction);
                           },
                           {logits});
  }
}

TEST(CtcLoss, PyTorchsErrorMessages) {
  const Tensor x = log_softmax(randn({6, 3, 5}, kFloat64), 2);
  const Tensor targets = randint(1, 5, {3, 4}, kInt64);
  const Tensor il = full({3}, 6, kInt64);
  const Tensor tl = tensor({int64_t{4}, 2, 3}, kInt64).view({3});
  auto call = [&](const Tensor& lp, const Tensor& tg, const Tensor& in, const Tensor& tgl, int64_t blank = 0) {
    return error_of([&] { F::ctc_loss(lp, tg, in, tgl, blank); });
  };
  const std::string tail = " (while checking arguments for ctc_loss_allocate_outputs)";
  EXPECT_EQ(call(x, targets, tensor({int64_t{7}, 6, 6}, kInt64).view({3}), tl),
            "Expected input_lengths to have value at most 6, but got value 7" + tail);
  EXPECT_EQ(call(x, targets, il, tensor({int64_t{5}, 2, 3}, kInt64).view({3})),
            "Expected tensor to have size at least 5 at dimension 1, but got size 4 for argument #2 'targets'" + tail);
  EXPECT_EQ(call(x, targets, il, tensor({int64_t{-1}, 2, 3}, kInt64).view({3})),
            "Expected target_lengths to have value at least 0, but got value -1" + tail);
  EXPECT_EQ(call(x, targets, tensor({int64_t{-1}, 6, 6}, kInt64).view({3}), tl),
            "Expected input_lengths to have value at least 0, but got value -1" + tail);
  EXPECT_EQ(call(x, targets.view({-1}).narrow(0, 0, 8), il, tl),
            "Expected tensor to have size 9 at dimension 0, but got size 8 for argument #2 'targets'" + tail);
  EXPECT_EQ(call(x, targets, il, tl, 5), "blank must be in label range");
  EXPECT_EQ(call(x, targets, il, tl, -1), "blank must be in label range");
  EXPECT_EQ(call(x.unsqueeze(0), targets, il, tl),
            "Expected 3-dimensional tensor, but got 5-dimensional tensor for argument #1 'log_probs'" + tail);
  EXPECT_EQ(call(x.select(0, 0).select(0, 0), targets, il, tl),
            "Expected 3-dimensional tensor, but got 2-dimensional tensor for argument #1 'log_probs'" + tail);
  EXPECT_EQ(call(x, targets, il.narrow(0, 0, 2), tl), "input_lengths must be of size batch_size");
  EXPECT_EQ(call(x, targets, il, tl.narrow(0, 0, 2)), "target_lengths must be of size batch_size");
  EXPECT_EQ(call(x, targets.narrow(0, 0, 2), il, tl),
            "Expected tensor to have size 3 at dimension 0, but got size 2 for argument #2 'targets'" + tail);
  EXPECT_EQ(call(x, targets.unsqueeze(0), il, tl),
            "Expected 1 to 2 dimensions, but got 3-dimensional tensor for argument #2 'targets'" + tail);
  EXPECT_EQ(call(x, targets, il.to(kFloat64), tl), "input_lengths must be integral");
  EXPECT_EQ(call(x, targets, il, tl.to(kFloat64)), "target_lengths must be integral");
  EXPECT_EQ(call(x.to(kInt64), targets, il, tl), "\"ctc_loss_cpu\" not implemented for 'Long'");
  EXPECT_EQ(call(x.narrow(0, 0, 0), targets, il, tl), "log_probs tensor must not be empty");
  EXPECT_EQ(error_of([&] {
              F::ctc_loss(x, targets, {7, 6, 6}, {4, 2, 3});
            }),
            "Expected input_lengths to have value at most 6, but got value 7" + tail);
  EXPECT_EQ(call(x.select(1, 0), targets, full({}, 6, kInt64), full({}, 4, kInt64)),
            "Expected tensor to have size 1 at dimension 0, but got size 3 for argument #2 'targets'" + tail);
  // PyTorch's order: the earliest failing check wins.
  EXPECT_EQ(call(x.unsqueeze(0), targets, il, tl, 9),
            "Expected 3-dimensional tensor, but got 5-dimensional tensor for argument #1 'log_probs'" + tail);
  EXPECT_EQ(call(x, targets, il.narrow(0, 0, 2), tl, 9), "blank must be in label range");
  // PyTorch reads past its memory here; ember says what is wrong.
  EXPECT_EQ(call(x, tensor({int64_t{1}, 7, 2, 3}, kInt64).view({1, 4}).expand({3, 4}), il, tl),
            "ctc_loss: target 7 of sample 0 is out of range for 5 classes");
}

class CtcLossDevice : public ember_test::DeviceTest {};

TEST_P(CtcLossDevice, MatchesTheCpu) {
  for (const Case& c : {cases()[0], cases()[6], cases()[9], cases()[15]}) {
    const Tensor cpu = c.at("log_probs").clone().requires_grad_();
    const Tensor on_device = c.at("log_probs").to(device()).requires_grad_();
    auto run = [&](const Tensor& x, const Device& where) {
      return F::ctc_loss(x, c.at("targets").to(where), c.at("input_lengths"), c.at("target_lengths"), c.blank,
                         c.reduction, c.zero_infinity);
    };
    const Tensor expected = run(cpu, Device(DeviceType::CPU));
    const Tensor actual = run(on_device, device());
    EXPECT_EQ(actual.device(), device());
    EXPECT_TRUE(close(actual, expected, 1e-12)) << "case " << c.key;
    expected.backward(c.at("grad_out"));
    actual.backward(c.at("grad_out").to(device()));
    EXPECT_EQ(on_device.grad().device(), device());
    EXPECT_TRUE(close(on_device.grad(), cpu.grad(), 1e-12)) << "case " << c.key;
  }
}

EMBER_INSTANTIATE_DEVICE_SUITE(CtcLossDevice);

}  // namespace
