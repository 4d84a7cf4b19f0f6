// The learning-rate schedulers beyond their values (test_lr_scheduler_golden.cpp holds those):
// state dict round trips, PyTorch's messages for bad arguments, step(epoch)'s warning, and how
// SequentialLR and ChainedScheduler drive the schedulers they hold.
#include <gtest/gtest.h>

#include <cmath>
#include <functional>
#include <map>
#include <memory>
#include <string>
#include <vector>

#include "ember/ember.h"
#include "ember/optim/lr_scheduler.h"
#include "ember/optim/optimizers.h"
#include "support/collect_warnings.h"
#include "support/error_of.h"

namespace ember::optim {
namespace {

using ember_test::error_of;

std::unique_ptr<SGD> two_group_sgd() {
  std::vector<ParamGroup> groups{ParamGroup({zeros({1}).requires_grad_()}, {{"lr", 0.1}}),
                                 ParamGroup({zeros({1}).requires_grad_()}, {{"lr", 0.02}})};
  return std::make_unique<SGD>(groups, SGDOptions{.momentum = 0.9});
}

std::unique_ptr<Adam> two_group_adam() {
  std::vector<ParamGroup> groups{ParamGroup({zeros({1}).requires_grad_()}, {{"lr", 0.1}}),
                                 ParamGroup({zeros({1}).requires_grad_()}, {{"lr", 0.02}})};
  return std::make_unique<Adam>(groups);
}

using Factory = std::function<std::shared_ptr<LRScheduler>(Optimizer&)>;

/// Rates and momenta of steps 13..31: straight through, or resumed from states saved at step 12.
std::vector<double> schedule_tail(const Factory& make, bool adam, bool resume) {
  auto make_optimizer = [&]() -> std::unique_ptr<Optimizer> {
    if (adam) return two_group_adam();
    return two_group_sgd();
  };
  auto opt = make_optimizer();
  auto sched = make(*opt);
  for (int i = 0; i < 12; ++i) {
    opt->step();
    sched->step();
  }
  if (resume) {
    OptimizerStateDict saved_opt = opt->state_dict();
    SchedulerStateDict saved = sched->state_dict();
    opt = make_optimizer();
    sched = make(*opt);
    opt->load_state_dict(saved_opt);
    sched->load_state_dict(saved);
  }
  std::vector<double> out;
  for (int i = 12; i < 31; ++i) {
    opt->step();
    sched->step();
    for (size_t g = 0; g < 2; ++g) {
      out.push_back(sched->get_last_lr()[g]);
      out.push_back(opt->param_groups()[g].get(adam ? "beta1" : "momentum"));
    }
  }
  return out;
}

TEST(LRSchedulers, NewSchedulersResumeFromTheirStateDicts) {
  std::vector<std::pair<std::string, Factory>> schedulers = {
      {"LambdaLR", [](Optimizer& o) { return std::make_shared<LambdaLR>(o, [](int64_t e) { return 1.0 / (e + 1); }); }},
      {"MultiplicativeLR",
       [](Optimizer& o) { return std::make_shared<MultiplicativeLR>(o, [](int64_t) { return 0.95; }); }},
      {"MultiStepLR",
       [](Optimizer& o) {
         return std::make_shared<MultiStepLR>(o, std::vector<int64_t>{5, 15, 15});
       }},
      {"ConstantLR", [](Optimizer& o) { return std::make_shared<ConstantLR>(o, 0.5, 14); }},
      {"ExponentialLR", [](Optimizer& o) { return std::make_shared<ExponentialLR>(o, 0.9); }},
      {"PolynomialLR", [](Optimizer& o) { return std::make_shared<PolynomialLR>(o, 25, 2.0); }},
      {"CosineAnnealingWarmRestarts",
       [](Optimizer& o) { return std::make_shared<CosineAnnealingWarmRestarts>(o, 3, 2, 0.001); }},
      {"CyclicLR",
       [](Optimizer& o) {
         return std::make_shared<CyclicLR>(o, 0.01, PerGroup{0.1, 0.05},
                                           CyclicLROptions{.step_size_up = 4, .mode = "triangular2"});
       }},
      {"SequentialLR",
       [](Optimizer& o) {
         auto warmup = std::make_shared<LinearLR>(o, 0.1, 1.0, 5);
         auto decay = std::make_shared<CosineAnnealingLR>(o, 20);
         return std::make_shared<SequentialLR>(o, std::vector<std::shared_ptr<LRScheduler>>{warmup, decay},
                                               std::vector<int64_t>{15});
       }},
      {"ChainedScheduler",
       [](Optimizer& o) {
         auto constant = std::make_shared<ConstantLR>(o, 0.5, 14);
         auto exponential = std::make_shared<ExponentialLR>(o, 0.95);
         return std::make_shared<ChainedScheduler>(std::vector<std::shared_ptr<LRScheduler>>{constant, exponential});
       }},
  };
  for (bool adam : {false, true}) {
    for (const auto& [name, make] : schedulers) {
      SCOPED_TRACE(name + (adam ? " with Adam" : " with SGD"));
      const std::vector<double> straight = schedule_tail(make, adam, false), resumed = schedule_tail(make, adam, true);
      ASSERT_EQ(straight.size(), resumed.size());
      for (size_t i = 0; i < straight.size(); ++i) EXPECT_EQ(straight[i], resumed[i]) << i;
    }
  }
}

TEST(LRSchedulers, ReduceLROnPlateauResumesFromItsStateDict) {
  const std::vector<double> metrics{3, 2, 2, 2, 2, 2, 1.5, 1.5, 1.5, 1.5, 1.5, 1.5, 1.5, 1.5, 1.5, 1.5};
  auto run = [&](bool resume) {
    auto opt = two_group_sgd();
    ReduceLROnPlateauOptions options{.factor = 0.5, .patience = 1, .cooldown = 2, .min_lr = {0.01, 0.001}};
    auto sched = std::make_unique<ReduceLROnPlateau>(*opt, options);
    std::vector<double> out;
    for (size_t i = 0; i < metrics.size(); ++i) {
      if (resume && i == 7) {
        SchedulerStateDict saved = sched->state_dict();
        OptimizerStateDict saved_opt = opt->state_dict();
        opt = two_group_sgd();
        sched = std::make_unique<ReduceLROnPlateau>(*opt, options);
        opt->load_state_dict(saved_opt);
        sched->load_state_dict(saved);
      }
      sched->step(metrics[i]);
      out.insert(out.end(), sched->get_last_lr().begin(), sched->get_last_lr().end());
      out.push_back(sched->best());
      out.push_back(static_cast<double>(sched->num_bad_epochs()));
    }
    return out;
  };
  EXPECT_EQ(run(false), run(true));
}

TEST(LRSchedulers, StateDictUsesPyTorchKeys) {
  auto opt = two_group_sgd();
  StepLR step(*opt, 2, 0.5);
  step.step();
  SchedulerStateDict d = step.state_dict();
  EXPECT_EQ(d.at("_last_lr.0"), 0.1);
  EXPECT_EQ(d.at("_last_lr.1"), 0.02);
  EXPECT_EQ(d.at("_is_initial"), 0);
  // A checkpoint written before the rename ("last_lr.<g>") still loads.
  d.erase("_last_lr.0");
  d.erase("_last_lr.1");
  d["last_lr.0"] = 0.05;
  d["last_lr.1"] = 0.01;
  step.load_state_dict(d);
  EXPECT_EQ(step.get_last_lr(), (std::vector<double>{0.05, 0.01}));

  auto opt2 = two_group_sgd();
  MultiStepLR multistep(*opt2, {4, 2, 4});
  SchedulerStateDict m = multistep.state_dict();
  EXPECT_EQ(m.at("milestones.2"), 1);
  EXPECT_EQ(m.at("milestones.4"), 2);
  m.erase("milestones.2");
  m["milestones.3"] = 1;
  multistep.load_state_dict(m);
  for (int i = 0; i < 3; ++i) multistep.step();  // epoch 3: the loaded milestone
  EXPECT_DOUBLE_EQ(multistep.get_last_lr()[0], 0.1 * 0.1);

  auto opt3 = two_group_sgd();
  ReduceLROnPlateau plateau(*opt3, {.mode = "max", .threshold_mode = "abs"});
  SchedulerStateDict p = plateau.state_dict();
  EXPECT_EQ(p.at("mode"), 1);
  EXPECT_EQ(p.at("threshold_mode"), 1);
  EXPECT_EQ(p.at("mode_worse"), -INFINITY);
  EXPECT_EQ(p.at("default_min_lr"), 0);
  p["mode"] = 2;
  EXPECT_EQ(error_of([&] { plateau.load_state_dict(p); }),
            "scheduler state dict: 'mode' must be a choice index below 2, got 2");
}

TEST(LRSchedulers, PyTorchMessagesForBadArguments) {
  auto opt = two_group_sgd();
  EXPECT_EQ(error_of([&] { CosineAnnealingWarmRestarts(*opt, 0); }), "Expected positive integer T_0, but got 0");
  EXPECT_EQ(error_of([&] { CosineAnnealingWarmRestarts(*opt, 2, 0); }), "Expected integer T_mult >= 1, but got 0");
  CosineAnnealingWarmRestarts restarts(*opt, 2);
  EXPECT_EQ(error_of([&] { restarts.step(-1); }), "Expected non-negative epoch, but got -1");
  EXPECT_EQ(error_of([&] { restarts.step(-0.5); }), "Expected non-negative epoch, but got -0.5");
  EXPECT_EQ(error_of([&] { ConstantLR(*opt, 1.5); }), "Constant multiplicative factor expected to be between 0 and 1.");
  EXPECT_EQ(error_of([&] { LambdaLR(*opt, std::vector<LRLambda>{[](int64_t) { return 1.0; }}); }),
            "Expected 2 lr_lambdas, but got 1");
  EXPECT_EQ(error_of([&] { MultiplicativeLR(*opt, LRLambda{}); }), "lr_lambda should be a function, but got NoneType");
  auto untouched = two_group_sgd();
  EXPECT_EQ(error_of([&] { LambdaLR(*untouched, LRLambda{}); }), "lr_lambda should be a function, but got NoneType");
  EXPECT_FALSE(untouched->param_groups()[0].has("initial_lr"));  // checked before the groups are touched
  EXPECT_EQ(error_of([&] { CyclicLR(*opt, 0.01, 0.1, {.mode = "foo"}); }), "mode is invalid and scale_fn is None");
  EXPECT_EQ(error_of([&] {
              CyclicLR(*opt, {0.1, 0.2, 0.3}, 0.1);
            }),
            "base_lr must have the same length as optimizer.param_groups. base_lr has 3 values, param_groups has 2.");
  EXPECT_EQ(error_of([&] { CyclicLR(*opt, 0.01, {0.1}); }),
            "max_lr must have the same length as optimizer.param_groups. max_lr has 1 values, param_groups has 2.");
  Adadelta no_momentum({zeros({1}).requires_grad_()});
  EXPECT_EQ(error_of([&] { CyclicLR(no_momentum, 0.01, 0.1); }),
            "optimizer must support momentum or beta1 with `cycle_momentum` option enabled");
  EXPECT_EQ(error_of([&] { ReduceLROnPlateau(*opt, {.factor = 1.0}); }), "Factor should be < 1.0.");
  EXPECT_EQ(error_of([&] { ReduceLROnPlateau(*opt, {.min_lr = {0, 0, 0}}); }), "expected 2 min_lrs, got 3");
  EXPECT_EQ(error_of([&] { ReduceLROnPlateau(*opt, {.mode = "avg"}); }), "mode avg is unknown!");
  EXPECT_EQ(error_of([&] { ReduceLROnPlateau(*opt, {.threshold_mode = "x"}); }), "threshold mode x is unknown!");
  EXPECT_EQ(error_of([&] { SequentialLR(*opt, {}, {}); }),
            "SequentialLR expects at least one scheduler, but got no scheduler.");
  auto constant = std::make_shared<ConstantLR>(*opt);
  auto exponential = std::make_shared<ExponentialLR>(*opt, 0.9);
  EXPECT_EQ(error_of([&] {
              SequentialLR(*opt, {constant, exponential}, {});
            }),
            "Sequential Schedulers expects number of schedulers provided to be one more than the number of milestone "
            "points, but got number of schedulers 2 and the number of milestones to be equal to 0");
  EXPECT_EQ(error_of([&] { ChainedScheduler({}); }),
            "ChainedScheduler expects at least one scheduler to be chained, but got no scheduler.");
  auto other = two_group_sgd();
  auto elsewhere = std::make_shared<ExponentialLR>(*other, 0.9);
  EXPECT_EQ(error_of([&] {
              ChainedScheduler({constant, elsewhere});
            })
                .rfind("ChainedScheduler expects all schedulers to belong to the same optimizer, but got scheduler "
                       "ExponentialLR at index 1",
                       0),
            0u);
  SequentialLR sequential(*opt, {constant, exponential}, {3});
  EXPECT_EQ(error_of([&] { sequential.step(2); }), "SequentialLR.step() takes 1 positional argument but 2 were given");
  auto fresh = two_group_sgd();
  EXPECT_EQ(error_of([&] { StepLR(*fresh, 3, 0.1, 4); }),
            "param 'initial_lr' is not specified in param_groups[0] when resuming scheduler with last_epoch >= 0.\n"
            "This typically happens when:\n"
            "1. You're trying to resume training from a checkpoint but haven't properly loaded the optimizer state\n"
            "2. You're using last_epoch >= 0 for a fresh training run (not recommended)");
}

TEST(LRSchedulers, ReduceLROnPlateauNeedsMinLrsForNewGroups) {
  auto opt = two_group_sgd();
  ReduceLROnPlateau listed(*opt, {.patience = 0, .min_lr = {0.0, 0.0}});
  ReduceLROnPlateau shared(*opt, {.patience = 0, .min_lr = 0.001});
  opt->add_param_group(ParamGroup({zeros({1}).requires_grad_()}, {{"lr", 0.5}}));
  listed.step(1.0);  // the first metric is always an improvement: no reduction yet
  EXPECT_EQ(error_of([&] { listed.step(2.0); }),
            "The number of param groups in the `optimizer` (3) differs from when `ReduceLROnPlateau` was initialized "
            "(2), usually due to a new param group being added to the optimizer. Please modify the `min_lrs` field to "
            "match the length of the `optimizer` param groups.");
  shared.step(1.0);
  shared.step(2.0);  // one default min_lr serves any number of groups
  EXPECT_DOUBLE_EQ(opt->param_groups()[2].lr(), 0.05);
}

TEST(LRSchedulers, StepWithAnEpochWarnsExceptForWarmRestarts) {
  auto opt = two_group_sgd();
  opt->step();
  ExponentialLR exponential(*opt, 0.5);
  {
    ember_test::CollectWarnings warnings;
    exponential.step(3);
    ASSERT_EQ(warnings.messages().size(), 1u);
    EXPECT_EQ(warnings.messages()[0].rfind("The epoch parameter in `scheduler.step()` was not necessary", 0), 0u);
  }
  EXPECT_EQ(exponential.last_epoch(), 3);
  EXPECT_EQ(exponential.get_last_lr()[0], 0.1 * std::pow(0.5, 3.0));  // the closed form, from base_lrs
  EXPECT_EQ(error_of([&] { exponential.step(2.5); }),
            "ExponentialLR.step(epoch) takes a whole epoch (only CosineAnnealingWarmRestarts takes a fraction), got "
            "2.5");

  auto opt2 = two_group_sgd();
  CosineAnnealingWarmRestarts restarts(*opt2, 4, 2);
  ember_test::CollectWarnings warnings;
  restarts.step(5.5);  // into the second period, of 8 epochs: 1.5 epochs in
  EXPECT_TRUE(warnings.messages().empty());
  EXPECT_EQ(restarts.last_epoch(), 5);
  EXPECT_EQ(restarts.T_i(), 8);
  EXPECT_EQ(restarts.T_cur(), 1.5);
}

TEST(LRSchedulers, SequentialLRHandsOverAtItsMilestones) {
  auto opt = two_group_sgd();
  auto warmup = std::make_shared<LinearLR>(*opt, 0.5, 1.0, 2);
  auto decay = std::make_shared<ExponentialLR>(*opt, 0.5);
  SequentialLR sequential(*opt, {warmup, decay}, {3});
  EXPECT_EQ(sequential.get_last_lr()[0], 0.05);  // the warm-up's first rate
  EXPECT_EQ(warmup->last_epoch(), 0);
  EXPECT_EQ(decay->last_epoch(), -1);  // each scheduler's construction step undone
  std::vector<double> lrs;
  for (int i = 0; i < 5; ++i) {
    opt->step();
    sequential.step();
    lrs.push_back(sequential.get_last_lr()[0]);
  }
  // Warm-up to 0.1 by epoch 2, then the decay restarts from its epoch 0 (the base lr) at the milestone.
  EXPECT_NEAR(lrs[0], 0.075, 1e-15);
  EXPECT_NEAR(lrs[1], 0.1, 1e-15);
  EXPECT_NEAR(lrs[2], 0.1, 1e-15);
  EXPECT_NEAR(lrs[3], 0.05, 1e-15);
  EXPECT_NEAR(lrs[4], 0.025, 1e-15);
  EXPECT_EQ(sequential.last_epoch(), 5);
}

TEST(LRSchedulers, CyclicLRWritesMomentaIntoTheGroups) {
  auto opt = two_group_adam();
  CyclicLR cyclic(*opt, 0.001, 0.01, {.step_size_up = 2, .base_momentum = {0.8, 0.85}, .max_momentum = 0.95});
  const auto& groups = opt->param_groups();
  EXPECT_EQ(groups[0].lr(), 0.001);
  EXPECT_EQ(groups[0].get("beta1"), 0.95);
  EXPECT_EQ(groups[1].get("base_momentum"), 0.85);
  EXPECT_EQ(groups[1].get("max_momentum"), 0.95);
  opt->step();
  cyclic.step();
  opt->step();
  cyclic.step();  // the top of the cycle: max lr, base momentum
  EXPECT_DOUBLE_EQ(groups[0].lr(), 0.01);
  EXPECT_DOUBLE_EQ(groups[0].get("beta1"), 0.8);
  EXPECT_DOUBLE_EQ(groups[1].get("beta1"), 0.85);
  EXPECT_EQ(groups[1].get("beta2"), 0.999);  // untouched
  EXPECT_EQ(cyclic.scale_fn(3), 1.0);
}

}  // namespace
}  // namespace ember::optim
