// The fused class-index cross-entropy (src/ops/cross_entropy.cpp) against the op-by-op form it
// replaces, log_softmax then nll_loss (and label smoothing's extra term): the same losses and
// input gradients over row lengths that cross the CPU's blocks and the CUDA block sizes, with and
// without weights and ignored targets, for every reduction; which calls take it; and what it shares with the ops it
// replaces (NaN rows, saved-tensor checks, the out-of-range error). tests/nn/test_loss_weights.cpp checks both paths
// against PyTorch's own numbers.
#include <gtest/gtest.h>

#include <cmath>
#include <limits>
#include <string>
#include <vector>

#include "ember/ember.h"
#include "ember/nn/functional.h"
#include "support/devices.h"
#include "support/error_of.h"

namespace {

using namespace ember;
namespace F = ember::nn::functional;
using nn::Reduction;

struct Outcome {
  Tensor loss, grad;
};

Outcome fused(const Tensor& logits, const Tensor& target, Reduction reduction, const Tensor& weight,
              int64_t ignore_index, double label_smoothing = 0.0) {
  Tensor x = logits.detach().requires_grad_();
  Tensor loss = F::cross_entropy(x, target, reduction, label_smoothing, weight, ignore_index);
  // The mean divides by the summed weights when there are weights or ignored targets (always on a
  // GPU, which cannot tell without waiting); otherwise it is a plain mean.
  const bool masked = weight.defined() || !target.is_cpu() || (target == ignore_index).sum().item<int64_t>() > 0;
  EXPECT_EQ(loss.grad_fn_name(), reduction == Reduction::None  ? "CrossEntropyLossBackward0"
                                 : reduction == Reduction::Sum ? "SumBackward0"
                                 : masked                      ? "DivBackward0"
                                                               : "MeanBackward0");
  loss.backward(ones_like(loss) * 0.75);
  return {loss.detach(), x.grad()};
}

Outcome op_by_op(const Tensor& logits, const Tensor& target, Reduction reduction, const Tensor& weight,
                 int64_t ignore_index) {
  Tensor x = logits.detach().requires_grad_();
  Tensor loss = F::nll_loss(F::log_softmax(x, 1), target, reduction, weight, ignore_index);
  loss.backward(ones_like(loss) * 0.75);
  return {loss.detach(), x.grad()};
}

// The op-by-op form of label smoothing: cross_entropy on the batch as [N, C, 1] against [N, 1]
// targets, which the fused rows do not take (tests/nn/test_loss_weights.cpp checks that form
// against PyTorch).
Outcome smoothed_op_by_op(const Tensor& logits, const Tensor& target, Reduction reduction, const Tensor& weight,
                          int64_t ignore_index, double label_smoothing) {
  Tensor x = logits.detach().requires_grad_();
  Tensor loss = F::cross_entropy(x.unsqueeze(2), target.unsqueeze(1), reduction, label_smoothing, weight, ignore_index);
  EXPECT_NE(loss.grad_fn_name(), "CrossEntropyLossBackward0");
  if (reduction == Reduction::None) loss = loss.squeeze(1);
  loss.backward(ones_like(loss) * 0.75);
  return {loss.detach(), x.grad()};
}

void expect_same(const Outcome& got, const Outcome& want, double rtol, double atol, const std::string& what) {
  EXPECT_TRUE(ember_test::close_to_cpu(got.loss, want.loss, rtol, atol, what + " loss"));
  EXPECT_TRUE(ember_test::close_to_cpu(got.grad, want.grad, rtol, atol, what + " gradient"));
}

TEST(CrossEntropyFused, MatchesLogSoftmaxThenNllLoss) {
  manual_seed(11);
  for (Dtype dtype : {kFloat64, kFloat32}) {
    // float64 agrees to rounding; float32 to a few ulps (exp and the sums run in another order
    // in the fused backward pass).
    const double rtol = dtype == kFloat64 ? 1e-13 : 2e-6, atol = dtype == kFloat64 ? 1e-15 : 1e-7;
    for (int64_t rows : {1, 3, 64, 700}) {
      for (int64_t classes : {1, 2, 10, 33, 1000, 5000}) {
        const Tensor logits = randn({rows, classes}, dtype) * 3.0;
        Tensor target = randint(classes, {rows});
        // Every third row ignored, in the cases that ask for it (ignore_index 0 is a real class).
        Tensor ignored = target.clone();
        for (int64_t r = 0; r < rows; r += 3) ignored.select(0, r).fill_(-1);
        const Tensor weight = rand({classes}, dtype) + 0.25;
        for (Reduction reduction : {Reduction::None, Reduction::Sum, Reduction::Mean}) {
          const std::string what = std::string(dtype_name(dtype)) + " " + std::to_string(rows) + "x" +
                                   std::to_string(classes) + " reduction " +
                                   std::to_string(static_cast<int>(reduction));
          expect_same(fused(logits, target, reduction, Tensor(), -100),
                      op_by_op(logits, target, reduction, Tensor(), -100), rtol, atol, what);
          expect_same(fused(logits, target, reduction, weight, -100), op_by_op(logits, target, reduction, weight, -100),
                      rtol, atol, what + " weighted");
          expect_same(fused(logits, ignored, reduction, Tensor(), -1),
                      op_by_op(logits, ignored, reduction, Tensor(), -1), rtol, atol, what + " ignoring");
          expect_same(fused(logits, ignored, reduction, weight, -1), op_by_op(logits, ignored, reduction, weight, -1),
                      rtol, atol, what + " weighted, ignoring");
        }
      }
    }
  }
}

TEST(CrossEntropyFused, LabelSmoothingMatchesTheOpByOpForm) {
  manual_seed(12);
  for (Dtype dtype : {kFloat64, kFloat32}) {
    // The smoothing sum runs over the row in another order than the op-by-op reduction.
    const double rtol = dtype == kFloat64 ? 1e-12 : 1e-5, atol = dtype == kFloat64 ? 1e-14 : 1e-6;
    for (int64_t rows : {1, 5, 130}) {
      for (int64_t classes : {1, 2, 10, 33, 1000}) {
        const Tensor logits = randn({rows, classes}, dtype) * 3.0;
        const Tensor target = randint(classes, {rows});
        Tensor ignored = target.clone();
        for (int64_t r = 0; r < rows; r += 2) ignored.select(0, r).fill_(-1);
        const Tensor weight = rand({classes}, dtype) + 0.25;
        for (double smoothing : {0.1, 0.5, 1.0}) {
          for (Reduction reduction : {Reduction::None, Reduction::Sum, Reduction::Mean}) {
            const std::string what = std::string(dtype_name(dtype)) + " " + std::to_string(rows) + "x" +
                                     std::to_string(classes) + " smoothing " + std::to_string(smoothing) +
                                     " reduction " + std::to_string(static_cast<int>(reduction));
            expect_same(fused(logits, target, reduction, Tensor(), -100, smoothing),
                        smoothed_op_by_op(logits, target, reduction, Tensor(), -100, smoothing), rtol, atol, what);
            expect_same(fused(logits, target, reduction, weight, -100, smoothing),
                        smoothed_op_by_op(logits, target, reduction, weight, -100, smoothing), rtol, atol,
                        what + " weighted");
            expect_same(fused(logits, ignored, reduction, Tensor(), -1, smoothing),
                        smoothed_op_by_op(logits, ignored, reduction, Tensor(), -1, smoothing), rtol, atol,
                        what + " ignoring");
            expect_same(fused(logits, ignored, reduction, weight, -1, smoothing),
                        smoothed_op_by_op(logits, ignored, reduction, weight, -1, smoothing), rtol, atol,
                        what + " weighted, ignoring");
          }
        }
      }
    }
  }
}

TEST(CrossEntropyFused, LabelSmoothingWithExtremeLogitsBehavesAsTheOpsDo) {
  constexpr double kInf = std::numeric_limits<double>::infinity();
  constexpr double kNaN = std::numeric_limits<double>::quiet_NaN();
  // A -inf logit makes the smoothing term infinite (as in PyTorch); an ignored NaN row has loss 0
  // and a NaN gradient, a counted one NaN in both.
  const Tensor logits = tensor({{1e4, -1e4, 3.0}, {-kInf, 0.0, 1.0}, {kNaN, 1.0, 2.0}, {0.5, kNaN, 1.0}}, kFloat64);
  const Tensor target = tensor({0, 2, -100, 1});
  for (Reduction reduction : {Reduction::None, Reduction::Sum, Reduction::Mean}) {
    expect_same(fused(logits, target, reduction, Tensor(), -100, 0.2),
                smoothed_op_by_op(logits, target, reduction, Tensor(), -100, 0.2), 1e-13, 1e-15,
                "reduction " + std::to_string(static_cast<int>(reduction)));
  }
  const Tensor none = F::cross_entropy(logits, target, Reduction::None, 0.2);
  EXPECT_TRUE(std::isinf(none[1].item<double>()));
  EXPECT_EQ(none[2].item<double>(), 0.0);
  EXPECT_TRUE(std::isnan(none[3].item<double>()));
}

TEST(CrossEntropyFused, ExtremeLogitsAndNansBehaveAsTheOpsDo) {
  constexpr double kInf = std::numeric_limits<double>::infinity();
  constexpr double kNaN = std::numeric_limits<double>::quiet_NaN();
  // Huge logits (exp would overflow without the max), a -inf logit, a NaN row whose target is
  // ignored (its loss is 0 but its gradient NaN, as log_softmax's backward makes it in PyTorch),
  // and a NaN row that counts.
  const Tensor logits = tensor({{1e4, -1e4, 3.0}, {-kInf, 0.0, 1.0}, {kNaN, 1.0, 2.0}, {0.5, kNaN, 1.0}}, kFloat64);
  const Tensor target = tensor({0, 2, -100, 1});
  for (Reduction reduction : {Reduction::None, Reduction::Sum, Reduction::Mean}) {
    expect_same(fused(logits, target, reduction, Tensor(), -100), op_by_op(logits, target, reduction, Tensor(), -100),
                1e-13, 1e-15, "reduction " + std::to_string(static_cast<int>(reduction)));
  }
  const Tensor none = F::cross_entropy(logits, target, Reduction::None);
  EXPECT_EQ(none[2].item<double>(), 0.0);
  EXPECT_TRUE(std::isnan(none[3].item<double>()));
}

TEST(CrossEntropyFused, TakenForBatchesAndSingleSamplesOfFloat32AndFloat64Only) {
  const Tensor batch = randn({4, 5}).requires_grad_();
  const Tensor target = tensor({0, 1, 2, 3});
  EXPECT_EQ(F::cross_entropy(batch, target, Reduction::None).grad_fn_name(), "CrossEntropyLossBackward0");
  // One sample [C] with a 0-dim target: a 0-dim loss, through the fused rows.
  const Tensor sample = randn({5}, kFloat64).requires_grad_();
  const Tensor one = F::cross_entropy(sample, tensor(3), Reduction::None);
  EXPECT_EQ(one.dim(), 0);
  EXPECT_EQ(one.grad_fn_name(), "ViewBackward0");
  EXPECT_NEAR(one.item<double>(), -F::log_softmax(sample, 0)[3].item<double>(), 1e-14);
  // Label smoothing too; the op-by-op form for the rest: 16-bit logits, a spatial target, a
  // weight that needs its own gradient.
  EXPECT_EQ(F::cross_entropy(batch, target, Reduction::None, 0.1).grad_fn_name(), "CrossEntropyLossBackward0");
  EXPECT_NE(F::cross_entropy(batch.to(kBFloat16), target, Reduction::None).grad_fn_name(), "CrossEntropyLossBackward0");
  EXPECT_NE(F::cross_entropy(randn({2, 5, 3}).requires_grad_(), randint(5, {2, 3}), Reduction::None).grad_fn_name(),
            "CrossEntropyLossBackward0");
  const Tensor learnt_weight = rand({5}).requires_grad_();
  const Tensor weighted = F::cross_entropy(batch, target, Reduction::Sum, 0.0, learnt_weight);
  weighted.backward();
  EXPECT_TRUE(learnt_weight.grad().defined());
}

TEST(CrossEntropyFused, LogitsChangedInPlaceBeforeBackwardAreReported) {
  Tensor x = randn({3, 4}).requires_grad_();
  Tensor logits = x * 2;
  Tensor loss = F::cross_entropy(logits, tensor({0, 1, 2}));
  {
    NoGradGuard no_grad;
    logits.add_(1.0);
  }
  const std::string message = ember_test::error_of([&] { loss.backward(); });
  EXPECT_NE(message.find("modified by an inplace operation"), std::string::npos) << message;
}

TEST(CrossEntropyFused, OutOfRangeTargetsNameTheTarget) {
  const Tensor logits = randn({3, 10});
  EXPECT_EQ(ember_test::error_of([&] { F::cross_entropy(logits, tensor({1, 10, 3})); }), "Target 10 is out of bounds.");
  EXPECT_EQ(ember_test::error_of([&] { F::cross_entropy(logits, tensor({-3, 1, 3})); }), "Target -3 is out of bounds.");
  // ignore_index itself may lie outside [0, C).
  EXPECT_NO_THROW(F::cross_entropy(logits, tensor({1, 50, 3}), Reduction::Mean, 0.0, Tensor(), 50));
}

class CrossEntropyFusedOnDevice : public ember_test::DeviceTest {};

TEST_P(CrossEntropyFusedOnDevice, MatchesTheCpu) {
  manual_seed(5);
  for (int64_t classes : {3, 10, 100, 700, 3000}) {
    const Tensor logits = randn({65, classes}) * 2.0;
    Tensor target = randint(classes, {65});
    target.select(0, 7).fill_(-100);
    const Tensor weight = rand({classes}) + 0.5;
    for (Reduction reduction : {Reduction::None, Reduction::Sum, Reduction::Mean}) {
      for (bool weighted : {false, true}) {
        for (double smoothing : {0.0, 0.1}) {
          const Tensor w = weighted ? weight : Tensor();
          const Outcome cpu = fused(logits, target, reduction, w, -100, smoothing);
          const Outcome gpu = fused(logits.to(device()), target.to(device()), reduction,
                                    weighted ? weight.to(device()) : Tensor(), -100, smoothing);
          expect_same({gpu.loss.to(Device("cpu")), gpu.grad.to(Device("cpu"))}, cpu, 1e-5, 1e-6,
                      std::to_string(classes) + " classes, smoothing " + std::to_string(smoothing));
        }
      }
    }
  }
}

EMBER_INSTANTIATE_DEVICE_SUITE(CrossEntropyFusedOnDevice);

}  // namespace
