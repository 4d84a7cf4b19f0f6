// Optimizer::step(skip): a step whose flag holds true must change no tensor, and restoring the
// HostState taken before it must leave the optimizer exactly as if the call never happened.
// `ember train` relies on both (tools/train/step_verdicts.h): a step with non-finite gradients is
// skipped on the device and taken back on the host a step later, and any trace of it (a moved
// parameter, an Adam count one too high) would silently change the run.
#include <gtest/gtest.h>

#include <cmath>
#include <functional>
#include <memory>
#include <string>
#include <vector>

#include "ember/ember.h"
#include "ember/optim/optimizers.h"
#include "support/error_of.h"

namespace {

using namespace ember;
using Factory = std::function<std::unique_ptr<optim::Optimizer>(std::vector<Tensor>)>;

struct Case {
  std::string name;
  Factory make;
};

std::vector<Case> cases() {
  using namespace optim;
  auto sgd = [](SGDOptions o) -> Factory { return [o](auto p) { return std::make_unique<SGD>(p, o); }; };
  auto adam = [](AdamOptions o) -> Factory { return [o](auto p) { return std::make_unique<Adam>(p, o); }; };
  return {
      {"sgd", sgd({.lr = 0.1})},
      {"sgd_momentum_dampening", sgd({.lr = 0.05, .momentum = 0.9, .dampening = 0.1, .nesterov = false})},
      {"sgd_nesterov", sgd({.lr = 0.05, .momentum = 0.9, .nesterov = true})},
      {"adam", adam({.lr = 0.01})},
      {"adam_amsgrad_decay", adam({.lr = 0.01, .weight_decay = 0.1, .amsgrad = true})},
      {"adamw", [](auto p) { return std::make_unique<AdamW>(p, AdamWOptions{.lr = 0.01}); }},
      {"adadelta", [](auto p) { return std::make_unique<Adadelta>(p, AdadeltaOptions{.weight_decay = 0.1}); }},
      {"rmsprop_centered_momentum",
       [](auto p) {
         return std::make_unique<RMSprop>(
             p, RMSpropOptions{.lr = 0.01, .weight_decay = 0.1, .momentum = 0.9, .centered = true});
       }},
  };
}

// Float32/float64 contiguous parameters take the fused kernels; float16 and strided ones the
// op-by-op updates, which read the flag on the host. Both paths must honour it.
enum class Kind { kFused32, kFused64, kHalf, kStrided };
const std::vector<std::pair<Kind, std::string>> kKinds = {
    {Kind::kFused32, "float32"}, {Kind::kFused64, "float64"}, {Kind::kHalf, "float16"}, {Kind::kStrided, "strided"}};

/// Parameters of 1, 7 and 40000 elements (the last is split across the CPU's threads).
std::vector<Tensor> make_params(Kind kind) {
  manual_seed(5);
  const Dtype dtype = kind == Kind::kFused64 ? kFloat64 : kind == Kind::kHalf ? kFloat16 : kFloat32;
  std::vector<Tensor> out;
  for (std::vector<int64_t> sizes : {std::vector<int64_t>{1}, {7}, {200, 200}}) {
    Tensor p = randn(sizes).to(dtype);
    if (kind == Kind::kStrided && p.dim() == 2) p = p.t().contiguous().t();
    out.push_back(p.detach().requires_grad_());
  }
  EXPECT_EQ(out.back().is_contiguous(), kind != Kind::kStrided);
  return out;
}

/// The same deterministic gradients, step by step, for every copy of the parameters. Float16 ones
/// stay at least 1 away from 0: smaller ones underflow in Adam's and RMSprop's squares and the
/// updates turn to NaN, which would hide every difference (equal() fails on NaN, which it should).
void set_grads(std::vector<Tensor>& params, int step) {
  manual_seed(100 + step);
  for (Tensor& p : params) {
    Tensor g = randn(p.sizes());
    if (p.dtype() == kFloat16) g = where(lt(g, zeros_like(g)), g - 1.0, g + 1.0);
    p.set_grad(g.to(p.dtype()));
  }
}

Tensor flag(bool value) { return scalar_tensor(value, kBool); }

std::vector<Tensor> snapshot(const std::vector<Tensor>& params) {
  std::vector<Tensor> out;
  for (const Tensor& p : params) out.push_back(p.detach().clone());
  return out;
}

/// Bitwise equality of parameters and of every state tensor (`with_steps`: the "step" counts too).
::testing::AssertionResult same(const std::vector<Tensor>& pa, const optim::Optimizer& a, const std::vector<Tensor>& pb,
                                const optim::Optimizer& b, bool with_steps = true) {
  for (size_t i = 0; i < pa.size(); ++i) {
    if (!equal(pa[i].detach().contiguous(), pb[i].detach().contiguous())) {
      return ::testing::AssertionFailure() << "parameter " << i << " differs";
    }
  }
  const auto sa = a.state_dict().tensors, sb = b.state_dict().tensors;
  if (sa.size() != sb.size()) return ::testing::AssertionFailure() << sa.size() << " vs " << sb.size() << " entries";
  for (const auto& [key, value] : sa) {
    auto it = sb.find(key);
    if (it == sb.end()) return ::testing::AssertionFailure() << "only one has " << key;
    if (!with_steps && key.ends_with(".step")) continue;
    if (!equal(value.contiguous(), it->second.contiguous())) return ::testing::AssertionFailure() << key << " differs";
  }
  return ::testing::AssertionSuccess();
}

const std::vector<bool> kPattern = {false, true, false, true, true, false, false};

TEST(OptimSkip, RestoredSkippedStepsMatchOnlyTheTakenSteps) {
  for (const auto& [kind, kind_name] : kKinds) {
    for (const Case& c : cases()) {
      SCOPED_TRACE(c.name + " " + kind_name);
      std::vector<Tensor> pa = make_params(kind), pb = make_params(kind);
      auto oa = c.make(pa), ob = c.make(pb);
      for (size_t i = 0; i < kPattern.size(); ++i) {
        set_grads(pa, static_cast<int>(i));
        set_grads(pb, static_cast<int>(i));
        const optim::Optimizer::HostState saved = oa->host_state();
        oa->step(flag(kPattern[i]));
        if (kPattern[i]) {
          oa->restore_host_state(saved);
        } else {
          ob->step();  // the reference never sees the skipped steps
        }
        ASSERT_TRUE(same(pa, *oa, pb, *ob)) << "after step " << i;
      }
    }
  }
}

TEST(OptimSkip, ASkippedStepChangesNoTensorEvenUnrestored) {
  for (const auto& [kind, kind_name] : kKinds) {
    for (const Case& c : cases()) {
      SCOPED_TRACE(c.name + " " + kind_name);
      std::vector<Tensor> params = make_params(kind), copy = make_params(kind);
      auto opt = c.make(params), ref = c.make(copy);
      for (int i = 0; i < 2; ++i) {
        set_grads(params, i);
        set_grads(copy, i);
        opt->step(flag(false));
        ref->step();
      }
      set_grads(params, 2);
      const optim::Optimizer::HostState before = opt->host_state();
      opt->step(flag(true));
      // Nothing a kernel writes may move; only the host's counts may.
      EXPECT_TRUE(same(params, *opt, copy, *ref, /*with_steps=*/false));
      const optim::Optimizer::HostState after = opt->host_state();
      ASSERT_EQ(after.names, before.names);  // no entry appears or goes
      for (size_t p = 0; p < params.size(); ++p) {
        if (std::isnan(before.steps[p])) {
          EXPECT_TRUE(std::isnan(after.steps[p]));
        } else {
          EXPECT_EQ(before.steps[p], 2.0);
          // A kernel decides on fused paths: the host cannot know the flag, so it counts the
          // step as taken (k to k+1). The op-by-op paths may count it or not.
          const bool fused = (kind == Kind::kFused32 || kind == Kind::kFused64);
          if (fused) {
            EXPECT_EQ(after.steps[p], 3.0);
          } else {
            EXPECT_TRUE(after.steps[p] == 2.0 || after.steps[p] == 3.0) << after.steps[p];
          }
        }
      }
      opt->restore_host_state(before);
      EXPECT_TRUE(same(params, *opt, copy, *ref));  // now the counts agree too
    }
  }
}

TEST(OptimSkip, ASkippedFirstStepRestoredLeavesAFreshOptimizer) {
  for (const auto& [kind, kind_name] : kKinds) {
    for (const Case& c : cases()) {
      SCOPED_TRACE(c.name + " " + kind_name);
      std::vector<Tensor> params = make_params(kind), copy = make_params(kind);
      auto opt = c.make(params), fresh = c.make(copy);
      set_grads(params, 0);
      const optim::Optimizer::HostState saved = opt->host_state();
      opt->step(flag(true));
      opt->restore_host_state(saved);
      // The entries the skipped step created (moments, momentum buffers, counts) are gone...
      for (size_t p = 0; p < params.size(); ++p) EXPECT_TRUE(opt->state(p).empty()) << "parameter " << p;
      // ...so the first real step starts from scratch, as a fresh optimizer's does.
      set_grads(params, 1);
      set_grads(copy, 1);
      opt->step(flag(false));
      fresh->step();
      EXPECT_TRUE(same(params, *opt, copy, *fresh));
    }
  }
}

TEST(OptimSkip, AnUnrestoredSkippedFirstStepLeavesAZeroMomentumBuffer) {
  // Fused SGD fills the first buffer with zeros when the step may be skipped: a buffer of
  // uninitialised memory would poison every later step.
  std::vector<Tensor> params = make_params(Kind::kFused32);
  optim::SGD opt(params, {.lr = 0.1, .momentum = 0.9});
  set_grads(params, 0);
  const std::vector<Tensor> before = snapshot(params);
  opt.step(flag(true));
  for (size_t p = 0; p < params.size(); ++p) {
    EXPECT_TRUE(equal(params[p].detach(), before[p])) << p;
    ASSERT_TRUE(opt.state(p).count("momentum_buffer")) << p;
    EXPECT_TRUE(equal(opt.state(p).at("momentum_buffer"), zeros_like(params[p]))) << p;
  }
}

TEST(OptimSkip, AnUndefinedFlagIsThePlainStep) {
  for (const Case& c : cases()) {
    SCOPED_TRACE(c.name);
    std::vector<Tensor> pa = make_params(Kind::kFused32), pb = make_params(Kind::kFused32);
    auto oa = c.make(pa), ob = c.make(pb);
    for (int i = 0; i < 3; ++i) {
      set_grads(pa, i);
      set_grads(pb, i);
      oa->step(Tensor());
      ob->step();
    }
    EXPECT_TRUE(same(pa, *oa, pb, *ob));
  }
}

TEST(OptimSkip, AFlagThatIsAViewIsReadAtItsOwnElement) {
  // Flags often come out of a larger bool tensor (one per check); a kernel that ignored the view's
  // offset would read its neighbour.
  Tensor flags = full({3}, false, kBool);
  flags.select(0, 1).fill_(true);
  std::vector<Tensor> params = make_params(Kind::kFused32);
  optim::Adam opt(params, {.lr = 0.1});
  set_grads(params, 0);
  const std::vector<Tensor> before = snapshot(params);
  opt.step(flags.select(0, 1));
  for (size_t p = 0; p < params.size(); ++p) EXPECT_TRUE(equal(params[p].detach(), before[p])) << p;
  opt.step(flags.select(0, 2));
  for (size_t p = 0; p < params.size(); ++p) EXPECT_FALSE(equal(params[p].detach(), before[p])) << p;
}

TEST(OptimSkip, AFlagThatIsNotAZeroDimBoolThrowsBeforeAnyChange) {
  std::vector<Tensor> params = make_params(Kind::kFused32);
  optim::Adam opt(params, {.lr = 0.1});
  set_grads(params, 0);
  const std::vector<Tensor> before = snapshot(params);
  for (const Tensor& bad : {scalar_tensor(1.0, kFloat32), full({2}, true, kBool), full({1}, true, kBool)}) {
    const std::string message = ember_test::error_of([&] { opt.step(bad); });
    EXPECT_NE(message.find("0-dim bool"), std::string::npos) << message;
  }
  // The check comes first: a rejected call must not have counted a step or made state.
  for (size_t p = 0; p < params.size(); ++p) {
    EXPECT_TRUE(equal(params[p].detach(), before[p])) << p;
    EXPECT_TRUE(opt.state(p).empty()) << p;
  }
}

TEST(OptimSkip, RestoringAnotherOptimizersHostStateThrows) {
  std::vector<Tensor> two = make_params(Kind::kFused32), three = make_params(Kind::kFused32);
  two.pop_back();
  optim::Adam small(two), big(three);
  EXPECT_THROW(big.restore_host_state(small.host_state()), Error);
  EXPECT_THROW(small.restore_host_state(big.host_state()), Error);
  // A HostState with mismatched vectors (names and steps of different lengths) is refused too.
  optim::Optimizer::HostState broken = big.host_state();
  broken.steps.pop_back();
  EXPECT_THROW(big.restore_host_state(broken), Error);
}

}  // namespace
