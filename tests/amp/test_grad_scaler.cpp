// amp::GradScaler: scaling, unscaling, skipped steps and the scale's growth and backoff, checked
// by hand and against the runs tools/gen_grad_scaler_golden.py recorded with torch.amp.GradScaler.
#include <gtest/gtest.h>

#include <cmath>
#include <fstream>
#include <limits>
#include <map>
#include <memory>
#include <nlohmann/json.hpp>
#include <string>
#include <vector>

#include "ember/amp/grad_scaler.h"
#include "ember/ember.h"
#include "ember/optim/clip_grad.h"
#include "ember/optim/optimizers.h"
#include "support/collect_warnings.h"
#include "support/devices.h"
#include "support/error_of.h"
#include "support/json_golden.h"

namespace ember::amp {
namespace {

using ember_test::error_of;
using nlohmann::json;

constexpr double kInf = std::numeric_limits<double>::infinity();
constexpr double kNaN = std::numeric_limits<double>::quiet_NaN();

GradScalerOptions cpu_options(double init_scale = 1024.0, int64_t growth_interval = 2000) {
  return {.device = kCPU, .init_scale = init_scale, .growth_interval = growth_interval};
}

/// Writes `value` into the first element of `param`'s gradient, as an overflow in backward would.
void poison_grad(const Tensor& param, double value) {
  NoGradGuard no_grad;
  param.grad().view({-1}).select(0, 0).fill_(value);
}

/// A tiny least-squares problem; its gradients are finite and well away from float32's limits.
struct Problem {
  explicit Problem(Device device = kCPU)
      : w(tensor({{0.5f, -0.25f, 0.75f}, {-1.0f, 0.125f, 0.375f}}).to(device).requires_grad_()),
        b(tensor({0.25f, -0.5f}).to(device).requires_grad_()),
        x(tensor({{1.0f, -2.0f}, {0.25f, 1.5f}, {-0.75f, 0.5f}}).to(device)),
        y(tensor({{1.0f, 0.0f}, {0.5f, -1.5f}}).to(device)) {}

  Tensor w, b, x, y;

  std::vector<Tensor> params() const { return {w, b}; }
  Tensor loss() const {
    Tensor diff = w.mm(x) + b.unsqueeze(1) - y;
    return (diff * diff).mean();
  }
};

void expect_state_equal(const optim::OptimizerStateDict& got, const optim::OptimizerStateDict& want) {
  EXPECT_EQ(got.numbers, want.numbers);
  ASSERT_EQ(got.tensors.size(), want.tensors.size());
  for (const auto& [key, tensor] : want.tensors) {
    ASSERT_TRUE(got.tensors.count(key)) << key;
    EXPECT_TRUE(equal(got.tensors.at(key), tensor)) << key;
  }
}

// ---- scale() ----

TEST(GradScaler, ScaleMultipliesByTheScale) {
  GradScaler scaler(cpu_options(1024.0));
  EXPECT_FALSE(scaler.scale_tensor().defined());  // created lazily, on the first output's device
  EXPECT_EQ(scaler.get_scale(), 1024.0);
  Tensor x = tensor({1.5f, -2.0f, 0.0f});
  Tensor scaled = scaler.scale(x);
  EXPECT_TRUE(equal(scaled, tensor({1536.0f, -2048.0f, 0.0f})));
  EXPECT_EQ(scaled.dtype(), kFloat32);
  ASSERT_TRUE(scaler.scale_tensor().defined());
  EXPECT_EQ(scaler.scale_tensor().dtype(), kFloat32);
  EXPECT_EQ(scaler.scale_tensor().dim(), 0);
  EXPECT_TRUE(scaler.scale_tensor().is_cpu());
  EXPECT_EQ(scaler.growth_tracker_tensor().dtype(), kInt32);
  EXPECT_EQ(scaler.growth_tracker_tensor().dim(), 0);
  EXPECT_EQ(scaler.get_growth_tracker(), 0);
}

TEST(GradScaler, ScaleFollowsTypePromotionWithAFloat32Scalar) {
  GradScaler scaler(cpu_options(8.0));
  // As PyTorch: a 0-dim float32 tensor does not promote a float16 tensor with dimensions, but two
  // 0-dim tensors promote to float32 (a float16 loss comes back float32).
  EXPECT_EQ(scaler.scale(tensor({1.0f, 2.0f}).to(kFloat16)).dtype(), kFloat16);
  Tensor loss16 = scalar_tensor(0.75).to(kFloat16);
  Tensor scaled16 = scaler.scale(loss16);
  EXPECT_EQ(scaled16.dtype(), kFloat32);
  EXPECT_EQ(scaled16.item<double>(), 6.0);
  EXPECT_EQ(scaler.scale(tensor({0.1}, kFloat64)).dtype(), kFloat64);
  EXPECT_EQ(scaler.scale(tensor({3}, kInt64)).dtype(), kFloat32);
}

TEST(GradScaler, ScaleIsRecordedForBackward) {
  GradScaler scaler(cpu_options(4096.0));
  Tensor p = tensor({1.0f, -3.0f}).requires_grad_();
  scaler.scale((p * p).sum()).backward();
  EXPECT_TRUE(equal(p.grad(), tensor({2.0f * 4096, -6.0f * 4096})));
}

TEST(GradScaler, ScaleOfSeveralOutputs) {
  GradScaler scaler(cpu_options(2.0));
  EXPECT_TRUE(scaler.scale(std::vector<Tensor>{}).empty());
  EXPECT_FALSE(scaler.scale_tensor().defined());  // nothing scaled, nothing created
  Tensor a = tensor({1.0f, 2.0f}).requires_grad_(), b = tensor({{3.0}}, kFloat64).requires_grad_();
  std::vector<Tensor> scaled = scaler.scale(std::vector<Tensor>{a * 1.0, b * 1.0});
  ASSERT_EQ(scaled.size(), 2u);
  EXPECT_TRUE(equal(scaled[0], tensor({2.0f, 4.0f})));
  EXPECT_TRUE(equal(scaled[1], tensor({{6.0}}, kFloat64)));
  // Each call multiplies by its own copy of the scale (PyTorch's per-device replicas), so an
  // update() before backward() does not disturb these products' graph.
  scaler.update(16.0);
  (scaled[0].sum() + scaled[1].sum()).backward();
  EXPECT_TRUE(equal(a.grad(), tensor({2.0f, 2.0f})));
  EXPECT_TRUE(equal(b.grad(), tensor({{2.0}}, kFloat64)));
  EXPECT_EQ(scaler.get_scale(), 16.0);
}

// ---- unscale_() and step() ----

TEST(GradScaler, UnscaleDividesGradientsExactly) {
  const double s = 65536.0;  // a power of two: dividing by it is exact
  GradScaler scaler(cpu_options(s));
  manual_seed(3);
  Tensor w = randn({4, 5}).requires_grad_(), d = randn({3}, kFloat64).requires_grad_();
  Tensor unused = randn({2}).requires_grad_();  // no gradient: left alone
  Tensor gw = randn({4, 5}), gd = randn({3}, kFloat64);
  w.set_grad(gw * s);
  d.set_grad(gd * s);
  optim::SGD opt(std::vector<Tensor>{w, d, unused}, {.lr = 0.1});
  scaler.scale(scalar_tensor(1.0));
  scaler.unscale_(opt);
  EXPECT_TRUE(equal(w.grad(), gw));
  EXPECT_TRUE(equal(d.grad(), gd));
  EXPECT_EQ(d.grad().dtype(), kFloat64);
  EXPECT_FALSE(unused.grad().defined());
}

TEST(GradScaler, UnscaleUsesTheFloat32RoundedReciprocal) {
  // 1/3 rounds to float32 first (PyTorch: scale.double().reciprocal().float()), then multiplies.
  GradScaler scaler(cpu_options(3.0));
  Tensor p = tensor({0.0f}).requires_grad_();
  p.set_grad(tensor({7.0f}));
  optim::SGD opt(std::vector<Tensor>{p});
  scaler.scale(scalar_tensor(1.0));
  scaler.unscale_(opt);
  EXPECT_EQ(p.grad().item<float>(), 7.0f * static_cast<float>(1.0 / 3.0));
}

TEST(GradScaler, StepWithFiniteGradientsIsTaken) {
  Problem scaled_problem, plain_problem;
  optim::SGD scaled_opt(scaled_problem.params(), {.lr = 0.1});
  optim::SGD plain_opt(plain_problem.params(), {.lr = 0.1});
  GradScaler scaler(cpu_options(1024.0));
  scaler.scale(scaled_problem.loss()).backward();
  EXPECT_TRUE(scaler.step(scaled_opt));
  scaler.update();
  plain_problem.loss().backward();
  plain_opt.step();
  EXPECT_TRUE(equal(scaled_problem.w, plain_problem.w));
  EXPECT_TRUE(equal(scaled_problem.b, plain_problem.b));
}

TEST(GradScaler, StepWithInfOrNanIsSkippedAndTheScaleBacksOff) {
  for (double bad : {kInf, -kInf, kNaN}) {
    SCOPED_TRACE(bad);
    // One clean step on both copies, so that Adam has state (moments, a step count) to disturb.
    Problem scaled_problem, reference_problem;
    optim::Adam scaled_opt(scaled_problem.params(), {.lr = 0.01});
    optim::Adam reference_opt(reference_problem.params(), {.lr = 0.01});
    GradScaler scaler(cpu_options(1024.0));
    scaler.scale(scaled_problem.loss()).backward();
    ASSERT_TRUE(scaler.step(scaled_opt));
    scaler.update();
    reference_problem.loss().backward();
    reference_opt.step();
    ASSERT_TRUE(equal(scaled_problem.w, reference_problem.w));

    scaled_opt.zero_grad();
    scaler.scale(scaled_problem.loss()).backward();
    poison_grad(scaled_problem.b, bad);
    EXPECT_FALSE(scaler.step(scaled_opt));
    // Nothing moved, and Adam's state (its step count on the host included) is the one-step state.
    EXPECT_TRUE(equal(scaled_problem.w, reference_problem.w));
    EXPECT_TRUE(equal(scaled_problem.b, reference_problem.b));
    expect_state_equal(scaled_opt.state_dict(), reference_opt.state_dict());
    EXPECT_EQ(scaled_opt.state(0).at("step").item<double>(), 1.0);

    scaler.update();
    EXPECT_EQ(scaler.get_scale(), 512.0);
    EXPECT_EQ(scaler.get_growth_tracker(), 0);
  }
}

TEST(GradScaler, SkippedFirstStepLeavesTheOptimizerUnstepped) {
  Problem problem;
  optim::Adam opt(problem.params(), {.lr = 0.01});
  GradScaler scaler(cpu_options(1024.0));
  scaler.scale(problem.loss()).backward();
  poison_grad(problem.w, kInf);
  EXPECT_FALSE(scaler.step(opt));
  EXPECT_FALSE(opt.has_stepped());  // a scheduler stepped now warns, as PyTorch's does
  EXPECT_TRUE(opt.state(0).empty());
  EXPECT_TRUE(opt.state(1).empty());
}

TEST(GradScaler, FinitenessIsJudgedBeforeUnscaling) {
  // As PyTorch's kernel: a finite scaled gradient passes even if unscaling (by a scale below 1)
  // overflows it.
  GradScaler scaler(cpu_options(0.5));
  Tensor p = tensor({0.0f}).requires_grad_();
  p.set_grad(tensor({3e38f}));
  optim::SGD opt(std::vector<Tensor>{p}, {.lr = 0.0});
  scaler.scale(scalar_tensor(1.0));
  EXPECT_TRUE(scaler.step(opt));
  EXPECT_TRUE(std::isinf(p.grad().item<float>()));
}

TEST(GradScaler, ExplicitUnscaleIsNotRepeatedByStep) {
  Problem problem;
  optim::SGD opt(problem.params(), {.lr = 0.1});
  GradScaler scaler(cpu_options(256.0));
  scaler.scale(problem.loss()).backward();
  scaler.unscale_(opt);
  Tensor unscaled = problem.w.grad().clone();
  EXPECT_TRUE(scaler.step(opt));
  EXPECT_TRUE(equal(problem.w.grad(), unscaled));
}

// ---- update() ----

TEST(GradScaler, ScaleGrowsAfterGrowthIntervalCleanSteps) {
  Problem problem;
  optim::SGD opt(problem.params(), {.lr = 0.01});
  GradScaler scaler(cpu_options(1024.0, /*growth_interval=*/3));
  auto iteration = [&](bool overflow) {
    opt.zero_grad();
    scaler.scale(problem.loss()).backward();
    if (overflow) poison_grad(problem.w, kInf);
    scaler.step(opt);
    scaler.update();
    return std::pair(scaler.get_scale(), scaler.get_growth_tracker());
  };
  using Expected = std::pair<double, int64_t>;
  EXPECT_EQ(iteration(false), Expected(1024.0, 1));
  EXPECT_EQ(iteration(false), Expected(1024.0, 2));
  EXPECT_EQ(iteration(false), Expected(2048.0, 0));
  EXPECT_EQ(iteration(false), Expected(2048.0, 1));
  EXPECT_EQ(iteration(true), Expected(1024.0, 0));  // an overflow restarts the count
  EXPECT_EQ(iteration(false), Expected(1024.0, 1));
  EXPECT_EQ(iteration(false), Expected(1024.0, 2));
  EXPECT_EQ(iteration(false), Expected(2048.0, 0));
}

TEST(GradScaler, GrowthThatWouldOverflowIsDropped) {
  Tensor p = tensor({0.0f}).requires_grad_();
  optim::SGD opt(std::vector<Tensor>{p}, {.lr = 0.0});
  GradScaler scaler(cpu_options(std::ldexp(1.0, 127), /*growth_interval=*/1));
  scaler.scale(scalar_tensor(1.0f));
  for (int i = 0; i < 2; ++i) {
    p.set_grad(tensor({1.0f}));
    ASSERT_TRUE(scaler.step(opt));
    scaler.update();
    EXPECT_EQ(scaler.get_scale(), std::ldexp(1.0, 127));
    EXPECT_EQ(scaler.get_growth_tracker(), 0);
  }
}

TEST(GradScaler, BackoffAndGrowthRoundLikePyTorch) {
  // PyTorch's kernels multiply the float32 scale by the factor in float64 and round once. These
  // values tell that apart from a float32 product: 1002 * 1.1 gives 1102.2f, not 1102.2001f, and
  // 1102.2f * 0.3 gives 330.65997f, not 330.66f.
  Tensor p = tensor({0.0f}).requires_grad_();
  optim::SGD opt(std::vector<Tensor>{p}, {.lr = 0.0});
  GradScaler scaler(
      {.device = kCPU, .init_scale = 1002.0, .growth_factor = 1.1, .backoff_factor = 0.3, .growth_interval = 1});
  scaler.scale(scalar_tensor(1.0f));
  p.set_grad(tensor({1.0f}));
  scaler.step(opt);
  scaler.update();
  const float grown = static_cast<float>(1002.0 * 1.1);
  ASSERT_NE(grown, 1002.0f * 1.1f);
  EXPECT_EQ(scaler.get_scale(), static_cast<double>(grown));
  p.set_grad(tensor({static_cast<float>(kNaN)}));
  EXPECT_FALSE(scaler.step(opt));
  scaler.update();
  const float backed_off = static_cast<float>(static_cast<double>(grown) * 0.3);
  ASSERT_NE(backed_off, grown * 0.3f);
  EXPECT_EQ(scaler.get_scale(), static_cast<double>(backed_off));
}

TEST(GradScaler, BackoffWhenAnyOptimizerFoundAnInf) {
  Problem problem;
  optim::SGD opt_w(std::vector<Tensor>{problem.w}, {.lr = 0.1});
  optim::SGD opt_b(std::vector<Tensor>{problem.b}, {.lr = 0.1});
  GradScaler scaler(cpu_options(64.0));
  scaler.scale(problem.loss()).backward();
  poison_grad(problem.b, kNaN);
  Tensor w_before = problem.w.detach().clone(), b_before = problem.b.detach().clone();
  EXPECT_TRUE(scaler.step(opt_w));
  EXPECT_FALSE(scaler.step(opt_b));
  EXPECT_FALSE(equal(problem.w, w_before));
  EXPECT_TRUE(equal(problem.b, b_before));
  scaler.update();
  EXPECT_EQ(scaler.get_scale(), 32.0);
}

TEST(GradScaler, UpdateWithANewScale) {
  Problem problem;
  optim::SGD opt(problem.params(), {.lr = 0.1});
  GradScaler scaler(cpu_options(1024.0, /*growth_interval=*/5));
  scaler.scale(problem.loss()).backward();
  scaler.step(opt);
  scaler.update();
  ASSERT_EQ(scaler.get_growth_tracker(), 1);
  scaler.update(0.1);  // needs no step since the last update()
  EXPECT_EQ(scaler.get_scale(), static_cast<double>(0.1f));
  EXPECT_EQ(scaler.get_growth_tracker(), 1);  // kept, as in PyTorch
  // The iteration is over: the optimizer may be stepped again.
  opt.zero_grad();
  Tensor scaled = scaler.scale(problem.loss());
  EXPECT_EQ(scaled.item<float>(), problem.loss().item<float>() * 0.1f);
  scaled.backward();
  EXPECT_TRUE(scaler.step(opt));
}

// ---- errors ----

TEST(GradScaler, ErrorsMatchPyTorch) {
  Problem problem;
  optim::SGD opt(problem.params(), {.lr = 0.1});
  GradScaler scaler(cpu_options());
  const std::string fix =
      "  This may indicate your script did not use scaler.scale(loss or outputs) earlier in the iteration.";
  EXPECT_EQ(error_of([&] { scaler.unscale_(opt); }), "Attempted unscale_ but _scale is None." + fix);
  EXPECT_EQ(error_of([&] { scaler.step(opt); }), "Attempted step but _scale is None." + fix);
  EXPECT_EQ(error_of([&] { scaler.update(); }), "Attempted update but _scale is None." + fix);
  EXPECT_EQ(error_of([&] { scaler.update(2.0); }), "Attempted update but _scale is None." + fix);

  scaler.scale(problem.loss());
  EXPECT_EQ(error_of([&] { scaler.update(); }), "No inf checks were recorded prior to update.");
  // No gradient yet: unscale_ finds nothing to check, and step refuses to guess.
  EXPECT_EQ(error_of([&] { scaler.step(opt); }), "No inf checks were recorded for this optimizer.");
  scaler.update(1024.0);

  scaler.scale(problem.loss()).backward();
  scaler.unscale_(opt);
  EXPECT_EQ(error_of([&] { scaler.unscale_(opt); }),
            "unscale_() has already been called on this optimizer since the last update().");
  scaler.step(opt);
  EXPECT_EQ(error_of([&] { scaler.unscale_(opt); }), "unscale_() is being called after step().");
  EXPECT_EQ(error_of([&] { scaler.step(opt); }), "step() has already been called since the last update().");
  scaler.update();
  opt.zero_grad();
  scaler.scale(problem.loss()).backward();
  EXPECT_TRUE(scaler.step(opt));  // update() made the optimizer ready again
}

TEST(GradScaler, Float16GradientsAreRefusedBeforeAnyIsUnscaled) {
  Tensor p32 = tensor({1.0f}).requires_grad_();
  Tensor p16 = tensor({1.0f}).to(kFloat16).requires_grad_();
  p32.set_grad(tensor({1024.0f}));
  p16.set_grad(tensor({1024.0f}).to(kFloat16));
  optim::SGD opt(std::vector<Tensor>{p32, p16});
  GradScaler scaler(cpu_options(1024.0));
  scaler.scale(scalar_tensor(1.0));
  EXPECT_EQ(error_of([&] { scaler.unscale_(opt); }), "Attempting to unscale FP16 gradients.");
  EXPECT_EQ(error_of([&] { scaler.step(opt); }), "Attempting to unscale FP16 gradients.");
  EXPECT_EQ(p32.grad().item<float>(), 1024.0f);
  EXPECT_EQ(p16.grad().item<float>(), 1024.0f);
}

TEST(GradScaler, ConstructorChecksItsArguments) {
  auto make = [](GradScalerOptions options) { return [options] { GradScaler scaler(options); }; };
  EXPECT_EQ(error_of(make({.device = kCPU, .growth_factor = 1.0})), "The growth factor must be > 1.0, got 1.0");
  EXPECT_EQ(error_of(make({.device = kCPU, .growth_factor = kNaN})), "The growth factor must be > 1.0, got nan");
  EXPECT_EQ(error_of(make({.device = kCPU, .backoff_factor = 1.5})), "The backoff factor must be < 1.0, got 1.5");
  EXPECT_EQ(error_of(make({.device = kCPU, .growth_interval = 0})),
            "The growth interval must be between 1 and 2147483647 (the count of clean steps is an int32 tensor), "
            "got 0");
  EXPECT_EQ(error_of(make({.device = kCPU, .growth_interval = int64_t{1} << 31})),
            "The growth interval must be between 1 and 2147483647 (the count of clean steps is an int32 tensor), "
            "got 2147483648");
  // A disabled scaler checks nothing, as in PyTorch.
  EXPECT_EQ(error_of(make({.device = kCPU, .growth_factor = 0.5, .enabled = false})), "no error");

  GradScaler scaler(cpu_options());
  EXPECT_EQ(error_of([&] { scaler.set_growth_interval(-1); }),
            "The growth interval must be between 1 and 2147483647 (the count of clean steps is an int32 tensor), "
            "got -1");
  scaler.set_growth_interval(7);
  scaler.set_growth_factor(1.0);  // unchecked, as in PyTorch
  scaler.set_backoff_factor(0.25);
  EXPECT_EQ(scaler.get_growth_interval(), 7);
  EXPECT_EQ(scaler.get_growth_factor(), 1.0);
  EXPECT_EQ(scaler.get_backoff_factor(), 0.25);
}

// ---- state_dict() ----

TEST(GradScaler, StateDictRoundTrip) {
  Problem problem;
  optim::SGD opt(problem.params(), {.lr = 0.01});
  GradScaler scaler(
      {.device = kCPU, .init_scale = 512.0, .growth_factor = 4.0, .backoff_factor = 0.25, .growth_interval = 3});
  for (int i = 0; i < 5; ++i) {  // grows once (after 3 steps), then counts 2
    opt.zero_grad();
    scaler.scale(problem.loss()).backward();
    scaler.step(opt);
    scaler.update();
  }
  const std::map<std::string, double> saved = scaler.state_dict();
  const std::map<std::string, double> want = {{"scale", 2048.0},
                                              {"growth_factor", 4.0},
                                              {"backoff_factor", 0.25},
                                              {"growth_interval", 3.0},
                                              {"_growth_tracker", 2.0}};
  EXPECT_EQ(saved, want);

  // Into a fresh scaler: held until its first scale() creates the tensors from it.
  GradScaler fresh(cpu_options());
  fresh.load_state_dict(saved);
  EXPECT_EQ(fresh.state_dict(), want);
  EXPECT_EQ(fresh.scale(scalar_tensor(1.0f)).item<double>(), 2048.0);
  EXPECT_EQ(fresh.get_growth_tracker(), 2);
  // One more clean step completes the interval in both.
  opt.zero_grad();
  fresh.scale(problem.loss()).backward();
  fresh.step(opt);
  fresh.update();
  EXPECT_EQ(fresh.get_scale(), 8192.0);

  // Into a scaler whose tensors exist: written in place.
  GradScaler used(cpu_options(2.0));
  used.scale(scalar_tensor(1.0f));
  const Tensor scale_tensor = used.scale_tensor();
  used.load_state_dict(saved);
  EXPECT_EQ(scale_tensor.item<double>(), 2048.0);
  EXPECT_EQ(used.state_dict(), want);
}

TEST(GradScaler, LoadStateDictChecksTheDictionary) {
  GradScaler scaler(cpu_options());
  EXPECT_EQ(error_of([&] { scaler.load_state_dict({}); }),
            "The source state dict is empty, possibly because it was saved from a disabled instance of GradScaler.");
  std::map<std::string, double> good = GradScaler(cpu_options(8.0)).state_dict();
  auto without = [&](const std::string& key) {
    auto d = good;
    d.erase(key);
    return d;
  };
  for (const char* key : {"scale", "growth_factor", "backoff_factor", "growth_interval", "_growth_tracker"}) {
    EXPECT_EQ(error_of([&] { scaler.load_state_dict(without(key)); }),
              std::string("GradScaler state dict is missing '") + key + "'");
  }
  auto with = [&](const std::string& key, double value) {
    auto d = good;
    d[key] = value;
    return d;
  };
  EXPECT_EQ(error_of([&] { scaler.load_state_dict(with("growth_interval", 2.5)); }),
            "GradScaler state dict entry 'growth_interval' must be a whole number in [1, 2147483647], got 2.5");
  EXPECT_EQ(error_of([&] { scaler.load_state_dict(with("_growth_tracker", -1.0)); }),
            "GradScaler state dict entry '_growth_tracker' must be a whole number in [0, 2147483647], got -1.0");
  EXPECT_EQ(scaler.get_scale(), 1024.0);  // a refused dictionary changes nothing
}

// ---- disabled ----

TEST(GradScaler, DisabledScalerIsAPassThrough) {
  GradScaler scaler({.device = kCPU, .enabled = false});
  EXPECT_FALSE(scaler.is_enabled());
  Tensor x = tensor({3.0f});
  EXPECT_TRUE(scaler.scale(x).is_same(x));
  std::vector<Tensor> xs = scaler.scale(std::vector<Tensor>{x});
  ASSERT_EQ(xs.size(), 1u);
  EXPECT_TRUE(xs[0].is_same(x));
  EXPECT_FALSE(scaler.scale_tensor().defined());

  Tensor p = tensor({1.0f}).requires_grad_();
  p.set_grad(tensor({static_cast<float>(kInf)}));
  optim::SGD opt(std::vector<Tensor>{p}, {.lr = 0.5});
  scaler.unscale_(opt);  // no-op: the gradient stays as it is
  EXPECT_TRUE(std::isinf(p.grad().item<float>()));
  p.set_grad(tensor({2.0f}));
  scaler.unscale_(opt);
  EXPECT_TRUE(scaler.step(opt));  // always steps
  EXPECT_EQ(p.item<float>(), 0.0f);
  scaler.update();
  scaler.update(5.0);
  EXPECT_EQ(scaler.get_scale(), 1.0);
  EXPECT_EQ(scaler.get_growth_tracker(), 0);
  EXPECT_TRUE(scaler.state_dict().empty());
  scaler.load_state_dict({});  // a no-op, even when empty
}

TEST(GradScaler, CudaScalerWithoutAGpuDisablesItselfWithAWarning) {
  ember_test::CollectWarnings warnings;
  GradScaler scaler;  // device cuda, as PyTorch's default
  if (cuda::is_available()) {
    EXPECT_TRUE(scaler.is_enabled());
    EXPECT_TRUE(warnings.messages().empty());
    return;
  }
  EXPECT_FALSE(scaler.is_enabled());
  ASSERT_EQ(warnings.messages().size(), 1u);
  EXPECT_EQ(warnings.messages()[0], "ember::amp::GradScaler is enabled, but CUDA is not available.  Disabling.");
  GradScaler disabled({.enabled = false});  // asked for nothing: no warning
  EXPECT_EQ(warnings.messages().size(), 1u);
}

// ---- end to end ----

TEST(GradScaler, ScaledTrainingMatchesPlainTrainingBitForBit) {
  // Scaling by powers of two is exact while nothing overflows or goes subnormal, so SGD through
  // the scaler, whose scale grows along the way, moves the parameters exactly as plain SGD.
  manual_seed(11);
  auto plain = std::make_shared<nn::Linear>(4, 3), scaled = std::make_shared<nn::Linear>(4, 3);
  {
    NoGradGuard no_grad;
    scaled->weight.copy_(plain->weight);
    scaled->bias.copy_(plain->bias);
  }
  const Tensor x = randn({8, 4}), target = randn({8, 3});
  optim::SGD plain_opt(plain->parameters(), {.lr = 0.1, .momentum = 0.9});
  optim::SGD scaled_opt(scaled->parameters(), {.lr = 0.1, .momentum = 0.9});
  GradScaler scaler(cpu_options(65536.0, /*growth_interval=*/2));
  for (int step = 0; step < 6; ++step) {
    plain_opt.zero_grad();
    nn::functional::mse_loss(plain->forward(x), target).backward();
    plain_opt.step();

    scaled_opt.zero_grad();
    scaler.scale(nn::functional::mse_loss(scaled->forward(x), target)).backward();
    EXPECT_TRUE(scaler.step(scaled_opt));
    scaler.update();

    EXPECT_TRUE(equal(scaled->weight, plain->weight)) << "step " << step;
    EXPECT_TRUE(equal(scaled->bias, plain->bias)) << "step " << step;
  }
  EXPECT_EQ(scaler.get_scale(), 65536.0 * 8);
}

// ---- on an accelerator (or the stand-in device) ----

class GradScalerOnDevice : public ember_test::DeviceTest {};

struct Trace {
  std::vector<bool> taken;
  std::vector<double> scales;
  std::vector<int64_t> trackers;
  std::vector<double> adam_steps;
  Tensor w, b;  // the final parameters, on the CPU
};

/// Adam through a scaler for six steps, with an inf written into a gradient at step 2 and a NaN
/// at step 4.
Trace train_on(Device device) {
  Problem problem(device);
  optim::Adam opt(problem.params(), {.lr = 0.01});
  GradScaler scaler({.device = device.type(), .init_scale = 1024.0, .growth_interval = 2});
  Trace run;
  for (int step = 0; step < 6; ++step) {
    opt.zero_grad();
    scaler.scale(problem.loss()).backward();
    if (step == 2) poison_grad(problem.w, kInf);
    if (step == 4) poison_grad(problem.b, kNaN);
    run.taken.push_back(scaler.step(opt));
    scaler.update();
    EXPECT_EQ(scaler.scale_tensor().device(), problem.w.device());
    EXPECT_EQ(scaler.growth_tracker_tensor().device(), problem.w.device());
    run.scales.push_back(scaler.get_scale());
    run.trackers.push_back(scaler.get_growth_tracker());
    run.adam_steps.push_back(opt.state(0).at("step").item<double>());
  }
  run.w = problem.w.detach().cpu();
  run.b = problem.b.detach().cpu();
  return run;
}

TEST_P(GradScalerOnDevice, TrainingMatchesTheCpu) {
  const Trace cpu = train_on(kCPU);
  const Trace dev = train_on(device());
  EXPECT_EQ(dev.taken, (std::vector<bool>{true, true, false, true, false, true}));
  EXPECT_EQ(dev.taken, cpu.taken);
  EXPECT_EQ(dev.scales, (std::vector<double>{1024, 2048, 1024, 1024, 512, 512}));
  EXPECT_EQ(dev.scales, cpu.scales);
  EXPECT_EQ(dev.trackers, cpu.trackers);
  EXPECT_EQ(dev.adam_steps, (std::vector<double>{1, 2, 2, 3, 3, 4}));
  EXPECT_TRUE(ember_test::close_to_cpu(dev.w, cpu.w, 1e-5, 1e-6, "w"));
  EXPECT_TRUE(ember_test::close_to_cpu(dev.b, cpu.b, 1e-5, 1e-6, "b"));
}

TEST_P(GradScalerOnDevice, GradientsOnTwoDevices) {
  // One optimizer over a CPU parameter and a device parameter; the scale lives where the first
  // output scaled is (the device), and each device's gradients are checked where they are.
  Tensor on_cpu = tensor({1.5f, -2.0f}).requires_grad_();
  Tensor on_dev = tensor({0.5f, 3.0f}).to(device()).requires_grad_();
  optim::SGD opt(std::vector<Tensor>{on_cpu, on_dev}, {.lr = 0.25});
  GradScaler scaler({.device = device().type(), .init_scale = 256.0});
  auto backward = [&] {
    opt.zero_grad();
    std::vector<Tensor> losses = scaler.scale(std::vector<Tensor>{(on_dev * on_dev).sum(), (on_cpu * on_cpu).sum()});
    ASSERT_EQ(scaler.scale_tensor().device(), device());
    (losses[0] + losses[1].to(device())).backward();
  };

  backward();
  poison_grad(on_cpu, kInf);  // only the CPU's gradients overflow
  EXPECT_FALSE(scaler.step(opt));
  scaler.update();
  EXPECT_EQ(scaler.get_scale(), 128.0);
  EXPECT_TRUE(equal(on_cpu, tensor({1.5f, -2.0f})));
  EXPECT_TRUE(equal(on_dev.cpu(), tensor({0.5f, 3.0f})));

  backward();
  scaler.unscale_(opt);
  EXPECT_TRUE(equal(on_cpu.grad(), tensor({3.0f, -4.0f})));
  EXPECT_TRUE(equal(on_dev.grad().cpu(), tensor({1.0f, 6.0f})));
  EXPECT_TRUE(scaler.step(opt));
  scaler.update();
  EXPECT_TRUE(equal(on_cpu, tensor({0.75f, -1.0f})));
  EXPECT_TRUE(equal(on_dev.cpu(), tensor({0.25f, 1.5f})));
  EXPECT_EQ(scaler.get_scale(), 128.0);
  EXPECT_EQ(scaler.get_growth_tracker(), 1);
}

EMBER_INSTANTIATE_DEVICE_SUITE(GradScalerOnDevice);

// ---- against PyTorch ----

const json& golden() {
  static const json data = ember_test::read_json_golden("tests/amp/golden/grad_scaler_golden.json");
  return data;
}

std::unique_ptr<optim::Optimizer> make_optimizer(const std::string& kind, std::vector<Tensor> params,
                                                 const optim::Options& options) {
  std::vector<optim::ParamGroup> groups{optim::ParamGroup(std::move(params), options)};
  if (kind == "SGD") return std::make_unique<optim::SGD>(groups);
  if (kind == "Adam") return std::make_unique<optim::Adam>(groups);
  ADD_FAILURE() << "unknown optimizer " << kind;
  return nullptr;
}

double golden_number(const json& value) {
  if (value.is_string()) {
    const std::string text = value.get<std::string>();
    if (text == "nan") return kNaN;
    return text[0] == '-' ? -kInf : kInf;
  }
  return value.get<double>();
}

TEST(GradScaler, RunsMatchPyTorch) {
  const json& g = golden();
  const Tensor X = ember_test::matrix_from(g["X"]), Y = ember_test::matrix_from(g["Y"]);
  ASSERT_FALSE(g["cases"].empty());
  for (const auto& c : g["cases"]) {
    SCOPED_TRACE(c["name"].get<std::string>());
    std::map<std::string, Tensor> params = {{"w", ember_test::matrix_from(g["W0"]).requires_grad_()},
                                            {"b", ember_test::matrix_from(g["B0"]).requires_grad_()}};
    std::vector<std::unique_ptr<optim::Optimizer>> optimizers;
    for (const auto& o : c["optimizers"]) {
      std::vector<Tensor> mine;
      for (const auto& name : o["params"]) mine.push_back(params.at(name.get<std::string>()));
      optim::Options options;
      for (const auto& [key, value] : o["options"].items()) options[key] = value.get<double>();
      optimizers.push_back(make_optimizer(o["kind"].get<std::string>(), mine, options));
      ASSERT_TRUE(optimizers.back());
    }
    GradScalerOptions options{.device = kCPU};
    const json& s = c["scaler"];
    options.init_scale = s.at("init_scale").get<double>();
    if (s.contains("growth_factor")) options.growth_factor = s["growth_factor"].get<double>();
    if (s.contains("backoff_factor")) options.backoff_factor = s["backoff_factor"].get<double>();
    options.growth_interval = s.at("growth_interval").get<int64_t>();
    GradScaler scaler(options);

    int step = 0;
    for (const auto& expected : c["steps"]) {
      SCOPED_TRACE("step " + std::to_string(step));
      for (auto& opt : optimizers) opt->zero_grad();
      Tensor diff = params["w"].mm(X) + params["b"] - Y;
      Tensor loss = (diff * diff).mean() * c["loss_factor"].get<double>();
      scaler.scale(loss).backward();
      for (const auto& inject : c["inject"]) {
        if (inject["step"].get<int>() == step) {
          poison_grad(params.at(inject["param"].get<std::string>()), golden_number(inject["value"]));
        }
      }
      if (c.contains("clip")) {
        for (auto& opt : optimizers) scaler.unscale_(*opt);
        optim::clip_grad_norm_({params["w"], params["b"]}, c["clip"].get<double>());
      }
      std::vector<bool> taken;
      for (auto& opt : optimizers) taken.push_back(scaler.step(*opt));
      scaler.update();

      EXPECT_EQ(taken, expected["taken"].get<std::vector<bool>>());
      EXPECT_EQ(scaler.get_scale(), expected["scale"].get<double>());
      EXPECT_EQ(scaler.get_growth_tracker(), expected["growth_tracker"].get<int64_t>());
      std::vector<float> got;
      for (const char* name : {"w", "b"}) {
        Tensor t = params[name].detach().contiguous();
        got.insert(got.end(), t.data_ptr<float>(), t.data_ptr<float>() + t.numel());
      }
      const auto want = expected["params"].get<std::vector<float>>();
      ASSERT_EQ(got.size(), want.size());
      for (size_t i = 0; i < got.size(); ++i) {
        EXPECT_NEAR(got[i], want[i], 2e-6 + 2e-5 * std::fabs(want[i])) << "element " << i;
      }
      std::vector<double> state_steps;
      for (auto& opt : optimizers) {
        size_t index = 0;
        for (const auto& group : opt->param_groups()) {
          for (size_t i = 0; i < group.params.size(); ++i, ++index) {
            auto& state = opt->state(index);
            state_steps.push_back(state.count("step") ? state.at("step").item<double>() : 0.0);
          }
        }
      }
      EXPECT_EQ(state_steps, expected["state_steps"].get<std::vector<double>>());
      ++step;
    }
    EXPECT_EQ(step, static_cast<int>(c["steps"].size()));
    std::map<std::string, double> want_state;
    for (const auto& [key, value] : c["state_dict"].items()) want_state[key] = value.get<double>();
    EXPECT_EQ(scaler.state_dict(), want_state);
  }
}

}  // namespace
}  // namespace ember::amp
