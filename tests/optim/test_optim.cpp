// Optimizer and scheduler behaviour beyond the numbers: state dicts, zero_grad, argument checks.
#include <gtest/gtest.h>

#include <cmath>
#include <functional>
#include <limits>
#include <map>
#include <memory>
#include <string>
#include <vector>

#include "ember/ember.h"
#include "ember/optim/clip_grad.h"
#include "ember/optim/lr_scheduler.h"
#include "ember/optim/optimizers.h"
#include "support/collect_warnings.h"

namespace ember::optim {
namespace {

std::string error_of(const std::function<void()>& fn) {
  try {
    fn();
  } catch (const Error& e) {
    return e.what();
  }
  return "<no error>";
}

/// A tiny least-squares problem whose parameters the optimizers move.
struct Problem {
  Tensor w = tensor({{0.5f, -0.25f, 0.75f}, {-1.0f, 0.125f, 0.375f}}).requires_grad_();
  Tensor b = tensor({0.25f, -0.5f}).requires_grad_();
  Tensor x = tensor({{1.0f, -2.0f}, {0.25f, 1.5f}, {-0.75f, 0.5f}});
  Tensor y = tensor({{1.0f, 0.0f}, {0.5f, -1.5f}});

  std::vector<Tensor> params() const { return {w, b}; }
  void backward() const {
    Tensor diff = w.mm(x) + b.unsqueeze(1) - y;
    (diff * diff).mean().backward();
  }
};

void train(Optimizer& opt, const Problem& p, int steps, LRScheduler* sched = nullptr) {
  for (int i = 0; i < steps; ++i) {
    opt.zero_grad();
    p.backward();
    opt.step();
    if (sched) sched->step();
  }
}

using Factory = std::function<std::unique_ptr<Optimizer>(std::vector<Tensor>)>;

std::vector<std::pair<std::string, Factory>> all_optimizers() {
  return {
      {"SGD",
       [](auto p) { return std::make_unique<SGD>(p, SGDOptions{.lr = 0.05, .momentum = 0.9, .nesterov = true}); }},
      {"Adam", [](auto p) { return std::make_unique<Adam>(p, AdamOptions{.lr = 0.01, .amsgrad = true}); }},
      {"AdamW", [](auto p) { return std::make_unique<AdamW>(p, AdamWOptions{.lr = 0.01}); }},
      {"Adadelta", [](auto p) { return std::make_unique<Adadelta>(p, AdadeltaOptions{.weight_decay = 0.1}); }},
      {"RMSprop",
       [](auto p) { return std::make_unique<RMSprop>(p, RMSpropOptions{.momentum = 0.5, .centered = true}); }},
  };
}

TEST(Optim, StateDictRoundTripContinuesIdentically) {
  for (const auto& [name, make] : all_optimizers()) {
    SCOPED_TRACE(name);
    Problem straight;
    auto opt_a = make(straight.params());
    train(*opt_a, straight, 8);

    Problem first_half;
    auto opt_b = make(first_half.params());
    train(*opt_b, first_half, 4);
    OptimizerStateDict saved = opt_b->state_dict();
    Tensor saved_w = first_half.w.detach().clone(), saved_b = first_half.b.detach().clone();
    // Keep stepping the original: the saved dictionary must not change with it.
    train(*opt_b, first_half, 2);

    Problem resumed;
    resumed.w.detach().copy_(saved_w);
    resumed.b.detach().copy_(saved_b);
    auto opt_c = make(resumed.params());
    opt_c->load_state_dict(saved);
    train(*opt_c, resumed, 4);
    EXPECT_TRUE(equal(resumed.w.detach(), straight.w.detach()));
    EXPECT_TRUE(equal(resumed.b.detach(), straight.b.detach()));
    EXPECT_FALSE(saved.tensors.empty() && name != "SGD");
  }
}

TEST(Optim, StateDictLayout) {
  Problem p;
  Adam opt(p.params(), AdamOptions{.lr = 0.02, .beta1 = 0.8});
  train(opt, p, 3);
  OptimizerStateDict d = opt.state_dict();
  ASSERT_TRUE(d.tensors.count("state.0.exp_avg"));
  ASSERT_TRUE(d.tensors.count("state.1.exp_avg_sq"));
  ASSERT_TRUE(d.tensors.count("state.1.step"));
  EXPECT_EQ(d.tensors.count("state.0.max_exp_avg_sq"), 0u);
  EXPECT_EQ(d.tensors.at("state.1.step").item<double>(), 3.0);
  EXPECT_EQ(d.tensors.at("state.1.step").dtype(), kFloat32);
  EXPECT_DOUBLE_EQ(d.numbers.at("param_groups.0.lr"), 0.02);
  EXPECT_DOUBLE_EQ(d.numbers.at("param_groups.0.beta1"), 0.8);
  EXPECT_DOUBLE_EQ(d.numbers.at("param_groups.0.num_params"), 2);
  EXPECT_DOUBLE_EQ(d.numbers.at("num_param_groups"), 1);

  // Hyper-parameters come back with the state.
  Problem q;
  Adam other(q.params(), AdamOptions{.lr = 0.5});
  other.load_state_dict(d);
  EXPECT_DOUBLE_EQ(other.param_groups()[0].lr(), 0.02);
  EXPECT_DOUBLE_EQ(other.param_groups()[0].get("beta1"), 0.8);
  EXPECT_TRUE(equal(other.state(0).at("exp_avg"), d.tensors.at("state.0.exp_avg")));
  // The step count is copied as saved: the next step advances the optimizer's, not the dict's.
  EXPECT_EQ(other.state(1).at("step").dtype(), kFloat32);
  EXPECT_TRUE(other.state(1).at("step").is_cpu());
  train(other, q, 1);
  EXPECT_EQ(other.state(1).at("step").item<double>(), 4.0);
  EXPECT_EQ(d.tensors.at("state.1.step").item<double>(), 3.0);
}

TEST(Optim, LoadStateDictRejectsMismatches) {
  Problem p;
  SGD opt(p.params(), SGDOptions{.lr = 0.1, .momentum = 0.9});
  train(opt, p, 1);
  OptimizerStateDict d = opt.state_dict();

  SGD one_param({zeros({2}).requires_grad_()}, SGDOptions{.lr = 0.1});
  EXPECT_EQ(error_of([&] { one_param.load_state_dict(d); }),
            "loaded state dict contains a parameter group that doesn't match the size of optimizer's group");
  Problem q;
  std::vector<ParamGroup> groups{ParamGroup({q.w}), ParamGroup({q.b})};
  SGD two_groups(groups, SGDOptions{.lr = 0.1});
  EXPECT_EQ(error_of([&] { two_groups.load_state_dict(d); }),
            "loaded state dict has a different number of parameter groups");
  OptimizerStateDict bad = d;
  bad.tensors["state.0.momentum_buffer"] = zeros({5});
  Problem r;
  SGD same(r.params(), SGDOptions{.lr = 0.1});
  EXPECT_NE(error_of([&] { same.load_state_dict(bad); }).find("has size [5]"), std::string::npos);
}

TEST(Optim, ZeroGradClearsOrZeroes) {
  Problem p;
  SGD opt(p.params(), SGDOptions{.lr = 0.1});
  p.backward();
  ASSERT_TRUE(p.w.grad().defined());
  opt.zero_grad(/*set_to_none=*/false);
  ASSERT_TRUE(p.w.grad().defined());
  EXPECT_EQ(p.w.grad().abs().sum().item<double>(), 0.0);
  EXPECT_EQ(p.b.grad().abs().sum().item<double>(), 0.0);
  opt.zero_grad();
  EXPECT_FALSE(p.w.grad().defined());
  EXPECT_FALSE(p.b.grad().defined());
}

TEST(Optim, ParametersWithoutGradAreSkipped) {
  Problem p;
  Tensor unused = ones({3}).requires_grad_();
  Adam opt({p.w, p.b, unused}, AdamOptions{.lr = 0.1});
  train(opt, p, 2);
  EXPECT_TRUE(equal(unused.detach(), ones({3})));
  EXPECT_TRUE(opt.state(2).empty());
  EXPECT_FALSE(opt.state(0).empty());
}

TEST(Optim, StepRunsWithoutRecordingAndKeepsLeaves) {
  Problem p;
  SGD opt(p.params(), SGDOptions{.lr = 0.1, .momentum = 0.9});
  Tensor before = p.w.detach().clone();
  train(opt, p, 1);
  EXPECT_TRUE(p.w.is_leaf());
  EXPECT_TRUE(p.w.requires_grad());
  EXPECT_FALSE(equal(before, p.w.detach()));
  EXPECT_TRUE(GradMode::is_enabled());
}

TEST(Optim, GroupsTakeTheirOwnOptionsAndDefaults) {
  Problem p;
  std::vector<ParamGroup> groups{ParamGroup({p.w}, {{"lr", 0.5}}), ParamGroup({p.b})};
  SGD opt(groups, SGDOptions{.lr = 0.1, .momentum = 0.3});
  EXPECT_DOUBLE_EQ(opt.param_groups()[0].lr(), 0.5);
  EXPECT_DOUBLE_EQ(opt.param_groups()[0].get("momentum"), 0.3);
  EXPECT_DOUBLE_EQ(opt.param_groups()[1].lr(), 0.1);
  // Plain SGD: one step moves b by exactly -lr * grad.
  SGD plain(std::vector<ParamGroup>{ParamGroup({p.b}, {{"lr", 0.25}})});
  p.backward();
  Tensor expected = p.b.detach() - p.b.grad() * 0.25;
  plain.step();
  EXPECT_TRUE(allclose(p.b.detach(), expected, 0, 0));
}

TEST(Optim, ArgumentChecksUsePyTorchMessages) {
  auto params = [] { return std::vector<Tensor>{zeros({2}).requires_grad_()}; };
  EXPECT_EQ(error_of([&] { SGD(params(), SGDOptions{.lr = -1.0}); }), "Invalid learning rate: -1.0");
  EXPECT_EQ(error_of([&] { SGD(params(), SGDOptions{.momentum = -0.5}); }), "Invalid momentum value: -0.5");
  EXPECT_EQ(error_of([&] { SGD(params(), SGDOptions{.weight_decay = -1e-5}); }), "Invalid weight_decay value: -1e-05");
  EXPECT_EQ(error_of([&] { SGD(params(), SGDOptions{.nesterov = true}); }),
            "Nesterov momentum requires a momentum and zero dampening");
  EXPECT_EQ(error_of([&] { Adam(params(), AdamOptions{.eps = -1}); }), "Invalid epsilon value: -1.0");
  EXPECT_EQ(error_of([&] { Adam(params(), AdamOptions{.beta1 = 1.0}); }), "Invalid beta parameter at index 0: 1.0");
  EXPECT_EQ(error_of([&] { AdamW(params(), AdamWOptions{.beta2 = -0.1}); }), "Invalid beta parameter at index 1: -0.1");
  EXPECT_EQ(error_of([&] { Adadelta(params(), AdadeltaOptions{.rho = 1.5}); }), "Invalid rho value: 1.5");
  EXPECT_EQ(error_of([&] { RMSprop(params(), RMSpropOptions{.alpha = -0.01}); }), "Invalid alpha value: -0.01");
  EXPECT_EQ(error_of([&] { SGD(std::vector<Tensor>{}); }), "optimizer got an empty parameter list");
  Tensor leaf = ones({2}).requires_grad_();
  EXPECT_EQ(error_of([&] { SGD({leaf * 2}); }), "can't optimize a non-leaf Tensor");
  EXPECT_EQ(error_of([&] {
              SGD(std::vector<ParamGroup>{ParamGroup({leaf}), ParamGroup({leaf})});
            }),
            "some parameters appear in more than one parameter group");
}

TEST(Optim, PythonFloatFormatsLikeRepr) {
  EXPECT_EQ(python_float(-1.0), "-1.0");
  EXPECT_EQ(python_float(0.001), "0.001");
  EXPECT_EQ(python_float(1e-05), "1e-05");
  EXPECT_EQ(python_float(0.1), "0.1");
  EXPECT_EQ(python_float(1e16), "1e+16");
  EXPECT_EQ(python_float(123.0), "123.0");
  EXPECT_EQ(python_float(std::numeric_limits<double>::infinity()), "inf");
}

TEST(ClipGradNorm, ErrorsOnNonFiniteWhenAsked) {
  Tensor a = zeros({2}).requires_grad_();
  a.set_grad(tensor({1.0f, std::numeric_limits<float>::infinity()}));
  EXPECT_EQ(error_of([&] { clip_grad_norm_({a}, 1.0, 2.0, /*error_if_nonfinite=*/true); }),
            "The total norm of order 2.0 for gradients from `parameters` is non-finite, so it cannot be clipped. To "
            "disable this error and scale the gradients by the non-finite norm anyway, set "
            "`error_if_nonfinite=False`");
  Tensor total = clip_grad_norm_({a}, 1.0);
  EXPECT_TRUE(std::isinf(total.item<double>()));
}

TEST(ClipGradNorm, NoGradientsGiveZeroAndSmallNormsAreKept) {
  Tensor a = zeros({2}).requires_grad_();
  EXPECT_EQ(clip_grad_norm_({a}, 1.0).item<double>(), 0.0);
  a.set_grad(tensor({0.3f, 0.4f}));
  Tensor total = clip_grad_norm_({a}, 10.0);
  EXPECT_NEAR(total.item<double>(), 0.5, 1e-7);
  EXPECT_TRUE(allclose(a.grad(), tensor({0.3f, 0.4f})));
  clip_grad_norm_({a}, 0.05, kInfNorm);
  EXPECT_NEAR(a.grad().abs().max().item<double>(), 0.05, 1e-6);
}

using SchedulerFactory = std::function<std::unique_ptr<LRScheduler>(Optimizer&)>;

/// Learning rates and momenta of steps 11..29: straight through, or resumed from a state saved at step 10.
std::vector<double> schedule_tail(const SchedulerFactory& make, bool resume) {
  auto make_optimizer = [] {
    return std::make_unique<SGD>(std::vector<Tensor>{zeros({1}).requires_grad_()},
                                 SGDOptions{.lr = 0.1, .momentum = 0.9});
  };
  auto opt = make_optimizer();
  auto sched = make(*opt);
  for (int i = 0; i < 10; ++i) sched->step();
  if (resume) {
    OptimizerStateDict saved_opt = opt->state_dict();
    std::map<std::string, double> saved = sched->state_dict();
    opt = make_optimizer();
    sched = make(*opt);
    opt->load_state_dict(saved_opt);
    sched->load_state_dict(saved);
  }
  std::vector<double> out;
  for (int i = 10; i < 29; ++i) {
    sched->step();
    out.push_back(sched->get_last_lr()[0]);
    out.push_back(opt->param_groups()[0].get("momentum"));
  }
  EXPECT_EQ(sched->last_epoch(), 29);
  return out;
}

TEST(LRSchedulers, StateDictRoundTripContinuesIdentically) {
  std::vector<std::pair<std::string, SchedulerFactory>> schedulers = {
      {"StepLR", [](Optimizer& o) { return std::make_unique<StepLR>(o, 4, 0.5); }},
      {"CosineAnnealingLR", [](Optimizer& o) { return std::make_unique<CosineAnnealingLR>(o, 7, 0.01); }},
      {"LinearLR", [](Optimizer& o) { return std::make_unique<LinearLR>(o, 0.1, 1.0, 15); }},
      {"OneCycleLR",
       [](Optimizer& o) { return std::make_unique<OneCycleLR>(o, 1.0, OneCycleLROptions{.total_steps = 30}); }},
  };
  for (const auto& [name, make] : schedulers) {
    SCOPED_TRACE(name);
    std::vector<double> straight = schedule_tail(make, false), resumed = schedule_tail(make, true);
    ASSERT_EQ(straight.size(), resumed.size());
    for (size_t i = 0; i < straight.size(); ++i) EXPECT_EQ(straight[i], resumed[i]) << i;
  }
}

TEST(LRSchedulers, StateDictLayout) {
  Tensor p = zeros({1}).requires_grad_();
  SGD opt({p}, SGDOptions{.lr = 0.1});
  StepLR sched(opt, 2, 0.5);
  sched.step();
  auto d = sched.state_dict();
  EXPECT_DOUBLE_EQ(d.at("last_epoch"), 1);
  EXPECT_DOUBLE_EQ(d.at("_step_count"), 2);
  EXPECT_DOUBLE_EQ(d.at("base_lrs.0"), 0.1);
  EXPECT_DOUBLE_EQ(d.at("step_size"), 2);
  EXPECT_DOUBLE_EQ(d.at("gamma"), 0.5);
}

TEST(LRSchedulers, SteppingBeforeTheOptimizerWarnsOnce) {
  {
    ember_test::CollectWarnings warnings;
    Tensor w = zeros({2}).requires_grad_();
    SGD sgd({w}, {.lr = 0.1});
    StepLR scheduler(sgd, 2);
    scheduler.step();  // before any sgd.step(): the schedule's first value is lost
    scheduler.step();
    ASSERT_EQ(warnings.messages().size(), 1u);
    EXPECT_EQ(warnings.messages()[0].rfind("Detected call of `lr_scheduler.step()` before `optimizer.step()`.", 0), 0u)
        << warnings.messages()[0];
  }
  ember_test::CollectWarnings warnings;
  Tensor w = zeros({2}).requires_grad_();
  SGD sgd({w}, {.lr = 0.1});
  StepLR scheduler(sgd, 2);
  sgd.step();  // no gradient yet, but a step in the right order all the same
  scheduler.step();
  EXPECT_TRUE(warnings.messages().empty());
}

TEST(LRSchedulers, ArgumentChecks) {
  Tensor p = zeros({1}).requires_grad_();
  SGD opt({p}, SGDOptions{.lr = 0.1});
  EXPECT_EQ(error_of([&] { LinearLR(opt, 0.0); }),
            "Starting multiplicative factor expected to be greater than 0 and less or equal to 1.");
  EXPECT_EQ(error_of([&] { LinearLR(opt, 0.5, 2.0); }), "Ending multiplicative factor expected to be between 0 and 1.");
  EXPECT_EQ(error_of([&] { OneCycleLR(opt, 0.1, OneCycleLROptions{}); }),
            "You must define either total_steps OR (epochs AND steps_per_epoch)");
  EXPECT_EQ(error_of([&] { OneCycleLR(opt, 0.1, OneCycleLROptions{.total_steps = 0}); }),
            "Expected positive integer total_steps, but got 0");
  EXPECT_EQ(error_of([&] { OneCycleLR(opt, 0.1, OneCycleLROptions{.total_steps = 5, .anneal_strategy = "exp"}); }),
            "anneal_strategy must be one of 'cos' or 'linear', instead got exp");
  Adadelta no_momentum({zeros({1}).requires_grad_()});
  EXPECT_EQ(error_of([&] { OneCycleLR(no_momentum, 0.1, OneCycleLROptions{.total_steps = 5}); }),
            "optimizer must support momentum or beta1 with `cycle_momentum` option enabled");
  // A failed construction leaves the optimizer's groups as they were.
  EXPECT_DOUBLE_EQ(opt.param_groups()[0].lr(), 0.1);
  EXPECT_FALSE(opt.param_groups()[0].has("max_lr"));
  OneCycleLR cycle(opt, 0.1, OneCycleLROptions{.epochs = 2, .steps_per_epoch = 2, .cycle_momentum = false});
  EXPECT_EQ(cycle.total_steps(), 4);
  for (int i = 0; i < 4; ++i) cycle.step();
  EXPECT_EQ(error_of([&] { cycle.step(); }), "Tried to step 5 times. The specified number of total steps is 4");
}

}  // namespace
}  // namespace ember::optim
