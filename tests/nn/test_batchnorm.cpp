// Batch norm against PyTorch: training steps with running statistics, eval, momentum=None,
// affine=false and track_running_stats=false from tests/nn/golden/bn_golden.safetensors
// (tools/gen_pool_bn_golden.py); float64 gradchecks; messages; state_dict keys.
#include <gtest/gtest.h>

#include <memory>
#include <string>
#include <vector>

#include "ember/ember.h"
#include "ember/io/safetensors.h"
#include "ember/nn/batchnorm.h"
#include "support/error_of.h"
#include "support/gradcheck.h"

namespace {

using namespace ember;
namespace nn = ember::nn;
namespace F = ember::nn::functional;
using ember_test::error_of;

const io::SafetensorsData& golden() {
  static const io::SafetensorsData data =
      io::load_safetensors(EMBER_SOURCE_DIR "/tests/nn/golden/bn_golden.safetensors");
  return data;
}

const Tensor& g(const std::string& key) { return golden().at(key); }

// One forward/backward of `m` on the step's input, compared with PyTorch's output, gradients
// and (when tracked) running statistics after the step.
void check_step(nn::BatchNormBase& m, const std::string& step) {
  SCOPED_TRACE(step);
  constexpr double tol = 1e-10;
  const Tensor x = g(step + ".x").clone().requires_grad_();
  if (m.weight.defined()) m.zero_grad();
  const Tensor out = m(x);
  EXPECT_EQ(out.grad_fn_name(), "NativeBatchNormBackward0");
  EXPECT_TRUE(allclose(out, g(step + ".out"), tol, tol)) << out << "\n" << g(step + ".out");
  (out * g(step + ".w")).sum().backward();
  EXPECT_TRUE(allclose(x.grad(), g(step + ".gx"), tol, tol)) << x.grad() << "\n" << g(step + ".gx");
  if (m.weight.defined()) {
    EXPECT_TRUE(allclose(m.weight.grad(), g(step + ".gweight"), tol, tol));
    EXPECT_TRUE(allclose(m.bias.grad(), g(step + ".gbias"), tol, tol));
  }
  if (m.running_mean.defined()) {
    EXPECT_TRUE(allclose(m.running_mean, g(step + ".running_mean"), tol, tol)) << m.running_mean;
    EXPECT_TRUE(allclose(m.running_var, g(step + ".running_var"), tol, tol)) << m.running_var;
  }
}

void set_affine(nn::BatchNormBase& m, const std::string& prefix) {
  NoGradGuard no_grad;
  m.weight.copy_(g(prefix + ".weight"));
  m.bias.copy_(g(prefix + ".bias"));
}

TEST(BatchNorm2d, TrainTwoStepsThenEvalMatchesPyTorch) {
  nn::BatchNorm2d m(3);
  m.to(kFloat64);
  set_affine(m, "bn2d");
  check_step(m, "bn2d.train1");
  check_step(m, "bn2d.train2");
  EXPECT_EQ(m.num_batches_tracked.item<int64_t>(), 2);
  m.eval();
  check_step(m, "bn2d.eval");
  EXPECT_EQ(m.num_batches_tracked.item<int64_t>(), 2);  // eval leaves the statistics alone
}

// The default float32 module against the float64 goldens.
TEST(BatchNorm2d, Float32MatchesPyTorch) {
  nn::BatchNorm2d m(3);
  {
    NoGradGuard no_grad;
    m.weight.copy_(g("bn2d.weight"));
    m.bias.copy_(g("bn2d.bias"));
  }
  const Tensor x = g("bn2d.train1.x").to(kFloat32).requires_grad_();
  const Tensor out = m(x);
  EXPECT_EQ(out.dtype(), kFloat32);
  EXPECT_TRUE(allclose(out.to(kFloat64), g("bn2d.train1.out"), 1e-4, 1e-4));
  (out * g("bn2d.train1.w").to(kFloat32)).sum().backward();
  EXPECT_TRUE(allclose(x.grad().to(kFloat64), g("bn2d.train1.gx"), 1e-4, 1e-4));
  EXPECT_TRUE(allclose(m.weight.grad().to(kFloat64), g("bn2d.train1.gweight"), 1e-4, 1e-4));
  EXPECT_TRUE(allclose(m.running_var.to(kFloat64), g("bn2d.train1.running_var"), 1e-5, 1e-5));
}

TEST(BatchNorm1d, MomentumNoneIsCumulativeAverage) {
  nn::BatchNorm1d m(4, 1e-5, std::nullopt);
  m.to(kFloat64);
  set_affine(m, "bn1d_cma");
  check_step(m, "bn1d_cma.train1");  // [N, C]
  check_step(m, "bn1d_cma.train2");  // [N, C, L]
  check_step(m, "bn1d_cma.train3");
  EXPECT_EQ(m.num_batches_tracked.item<int64_t>(), 3);
}

TEST(BatchNorm1d, NoAffineAndNoRunningStats) {
  nn::BatchNorm1d plain(4, 1e-5, 0.3, /*affine=*/false);
  plain.to(kFloat64);
  EXPECT_FALSE(plain.weight.defined());
  check_step(plain, "bn1d_noaffine.train1");

  nn::BatchNorm2d batch_only(3, 1e-5, 0.1, true, /*track_running_stats=*/false);
  batch_only.to(kFloat64);
  set_affine(batch_only, "bn2d_nostats");
  batch_only.eval();
  check_step(batch_only, "bn2d_nostats.eval");  // batch statistics even in eval()
}

TEST(BatchNormModule, StateDictKeysAndDefaults) {
  nn::BatchNorm2d m(3);
  EXPECT_EQ(m.name(), "BatchNorm2d");
  EXPECT_EQ(m.state_dict().keys(),
            (std::vector<std::string>{"weight", "bias", "running_mean", "running_var", "num_batches_tracked"}));
  EXPECT_TRUE(equal(m.weight, ones({3})));
  EXPECT_TRUE(equal(m.bias, zeros({3})));
  EXPECT_TRUE(equal(m.running_mean, zeros({3})));
  EXPECT_TRUE(equal(m.running_var, ones({3})));
  EXPECT_EQ(m.num_batches_tracked.dtype(), kInt64);
  EXPECT_EQ(m.num_batches_tracked.dim(), 0);
  EXPECT_EQ(m.parameters().size(), 2u);
  EXPECT_EQ(nn::BatchNorm1d(3, 1e-5, 0.1, false).state_dict().keys(),
            (std::vector<std::string>{"running_mean", "running_var", "num_batches_tracked"}));
  EXPECT_EQ(nn::BatchNorm1d(3, 1e-5, 0.1, true, false).state_dict().keys(),
            (std::vector<std::string>{"weight", "bias"}));
  EXPECT_EQ(nn::BatchNorm1d(3).name(), "BatchNorm1d");
  // A module moved to float64 keeps num_batches_tracked int64.
  m.to(kFloat64);
  EXPECT_EQ(m.num_batches_tracked.dtype(), kInt64);
  EXPECT_EQ(m.running_var.dtype(), kFloat64);
  m(randn({2, 3, 2, 2}, kFloat64));
  m.reset_running_stats();
  EXPECT_EQ(m.num_batches_tracked.item<int64_t>(), 0);
  EXPECT_TRUE(equal(m.running_var, ones({3}, kFloat64)));
}

TEST(BatchNormFunctional, EvalUsesRunningStatsAndTrainUpdatesThem) {
  const Tensor x = tensor({{1.0, 10.0}, {3.0, 20.0}, {5.0, 60.0}}, kFloat64);
  Tensor rm = tensor({1.0, 2.0}, kFloat64), rv = tensor({4.0, 9.0}, kFloat64);
  const Tensor eval = F::batch_norm(x, rm, rv, Tensor(), Tensor(), false, 0.1, 0.0);
  EXPECT_TRUE(allclose(eval, tensor({{0.0, 8.0 / 3}, {1.0, 6.0}, {2.0, 58.0 / 3}}, kFloat64)));
  F::batch_norm(x, rm, rv, Tensor(), Tensor(), true, 0.5);
  // Batch means 3 and 30, unbiased variances 4 and 700.
  EXPECT_TRUE(allclose(rm, tensor({2.0, 16.0}, kFloat64)));
  EXPECT_TRUE(allclose(rv, tensor({4.0, 354.5}, kFloat64)));
  EXPECT_FALSE(rm.requires_grad());
  // Without running statistics, training mode still works.
  const Tensor y = F::batch_norm(x, Tensor(), Tensor(), Tensor(), Tensor(), true);
  EXPECT_TRUE(allclose(y.mean({0}), zeros({2}, kFloat64), 0, 1e-12));
  // An empty batch: an empty result, running statistics untouched.
  Tensor rm0 = zeros({2}), rv0 = ones({2});
  EXPECT_EQ(F::batch_norm(zeros({0, 2}), rm0, rv0, Tensor(), Tensor(), true).sizes().vec(),
            (std::vector<int64_t>{0, 2}));
  EXPECT_TRUE(equal(rm0, zeros({2})) && equal(rv0, ones({2})));
  // float16 input with float32 parameters (PyTorch's mixed-type path) computes in float.
  const Tensor h = F::batch_norm(x.to(kFloat16), zeros({2}), ones({2}), ones({2}), zeros({2}), true);
  EXPECT_EQ(h.dtype(), kFloat16);
  EXPECT_TRUE(allclose(h.to(kFloat64), y, 1e-2, 1e-2));
}

TEST(BatchNormGradcheck, TrainAndEvalFloat64) {
  manual_seed(5);
  const Tensor x = randn({4, 3, 2, 3}, kFloat64) * 2 + 1;
  const Tensor w = randn({3}, kFloat64), b = randn({3}, kFloat64);
  const Tensor rm = randn({3}, kFloat64), rv = rand({3}, kFloat64) + 0.5;
  test::gradcheck(
      "batch_norm train",
      [](const std::vector<Tensor>& in) { return F::batch_norm(in[0], Tensor(), Tensor(), in[1], in[2], true); },
      {x, w, b});
  test::gradcheck("batch_norm eval",
                  [rm, rv](const std::vector<Tensor>& in) { return F::batch_norm(in[0], rm, rv, in[1], in[2], false); },
                  {x, w, b});
  test::gradcheck(
      "batch_norm train, no affine, 2-D",
      [](const std::vector<Tensor>& in) { return F::batch_norm(in[0], Tensor(), Tensor(), Tensor(), Tensor(), true); },
      {randn({5, 3}, kFloat64)});
  // Only the weight requires grad: the input's gradient is skipped, the weight's still right.
  test::gradcheck(
      "batch_norm weight only",
      [x](const std::vector<Tensor>& in) { return F::batch_norm(x, Tensor(), Tensor(), in[0], Tensor(), true); }, {w});
}

TEST(BatchNormErrors, PyTorchMessages) {
  const Tensor rm = zeros({3}), rv = ones({3});
  EXPECT_EQ(error_of([&] {
              F::batch_norm(randn({1, 3}), rm, rv, Tensor(), Tensor(), true);
            }),
            "Expected more than 1 value per channel when training, got input size torch.Size([1, 3])");
  EXPECT_EQ(error_of([&] {
              F::batch_norm(randn({2, 4}), rm, rv, Tensor(), Tensor(), true);
            }),
            "running_mean should contain 4 elements not 3");
  EXPECT_EQ(error_of([&] {
              F::batch_norm(randn({2, 3}), rm, rv, ones({4}), Tensor(), true);
            }),
            "weight should contain 3 elements not 4");
  EXPECT_EQ(error_of([&] {
              F::batch_norm(randn({2, 3}), rm, rv, Tensor(), ones({4}), true);
            }),
            "bias should contain 3 elements not 4");
  EXPECT_EQ(error_of([&] {
              F::batch_norm(randn({2, 3}), rm, ones({4}), Tensor(), Tensor(), true);
            }),
            "running_var should contain 3 elements not 4");
  EXPECT_EQ(error_of([&] {
              F::batch_norm(randn({2, 3}), Tensor(), Tensor());
            }),
            "running_mean must be defined in evaluation mode");
  EXPECT_EQ(error_of([&] {
              F::batch_norm(arange(6).view({2, 3}), rm, rv, Tensor(), Tensor(), true);
            }),
            "\"batch_norm\" not implemented for 'Long'");
  EXPECT_EQ(error_of([&] {
              F::batch_norm(randn({2, 3}), rm, rv, ones({3}, kFloat64), Tensor(), true);
            }),
            "mixed dtype (CPU): expect parameter to have scalar type of Float");

  nn::BatchNorm1d bn1(3);
  EXPECT_EQ(error_of([&] { bn1(randn({2, 3, 4, 4})); }), "expected 2D or 3D input (got 4D input)");
  EXPECT_EQ(error_of([&] { bn1(randn({3})); }), "expected 2D or 3D input (got 1D input)");
  nn::BatchNorm2d bn2(3);
  EXPECT_EQ(error_of([&] { bn2(randn({2, 3, 4})); }), "expected 4D input (got 3D input)");
  EXPECT_EQ(error_of([&] {
              bn2(randn({1, 3, 1, 1}));
            }),
            "Expected more than 1 value per channel when training, got input size torch.Size([1, 3, 1, 1])");
  bn2.eval();
  EXPECT_EQ(bn2(randn({1, 3, 1, 1})).sizes().vec(), (std::vector<int64_t>{1, 3, 1, 1}));  // fine in eval
}

}  // namespace
