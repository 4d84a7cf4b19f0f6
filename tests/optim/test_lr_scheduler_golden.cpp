// Replays tools/gen_lr_scheduler_golden.py's cases: every scheduler of torch.optim.lr_scheduler
// beyond the four of test_optim_golden.cpp, and step(epoch)'s closed forms, on an optimizer
// with two groups; the learning rates must be PyTorch's floats, and each final state dict
// PyTorch's, flattened to ember's layout.
#include <gtest/gtest.h>

#include <cmath>
#include <limits>
#include <map>
#include <memory>
#include <nlohmann/json.hpp>
#include <string>
#include <vector>

#include "ember/ember.h"
#include "ember/optim/lr_scheduler.h"
#include "ember/optim/optimizers.h"
#include "support/collect_warnings.h"
#include "support/json_golden.h"

namespace ember::optim {
namespace {

using nlohmann::json;

const json& golden() {
  static const json data = ember_test::read_json_golden("tests/optim/golden/lr_scheduler_golden.json");
  return data;
}

// The generator's named functions, the same arithmetic as its Python lambdas.
LRLambda lambda_named(const std::string& name) {
  if (name == "pow095") return [](int64_t e) { return std::pow(0.95, static_cast<double>(e)); };
  if (name == "inverse") return [](int64_t e) { return 1.0 / static_cast<double>(e + 1); };
  if (name == "pow09") return [](int64_t e) { return std::pow(0.9, static_cast<double>(e)); };
  if (name == "const095") return [](int64_t) { return 0.95; };
  if (name == "const09") return [](int64_t) { return 0.9; };
  if (name == "linear_down") return [](int64_t e) { return 1.0 - 0.01 * static_cast<double>(e); };
  ADD_FAILURE() << "unknown lambda " << name;
  return nullptr;
}

std::function<double(double)> scale_fn_named(const std::string& name) {
  if (name == "half_per_cycle") return [](double x) { return 1.0 / std::pow(2.0, x); };
  if (name == "pow099") return [](double x) { return std::pow(0.99, x); };
  ADD_FAILURE() << "unknown scale_fn " << name;
  return nullptr;
}

double real(const json& a, const char* key, double fallback) {
  return a.contains(key) ? a[key].get<double>() : fallback;
}
int64_t integer(const json& a, const char* key, int64_t fallback) {
  return a.contains(key) ? a[key].get<int64_t>() : fallback;
}
PerGroup per_group(const json& a, const char* key, double fallback) {
  if (!a.contains(key)) return fallback;
  if (a[key].is_array()) return a[key].get<std::vector<double>>();
  return a[key].get<double>();
}

std::shared_ptr<LRScheduler> build(const std::string& kind, const json& a, Optimizer& opt) {
  if (kind == "LambdaLR" || kind == "MultiplicativeLR") {
    const json& names = a["lr_lambda"];
    std::vector<LRLambda> fns;
    if (names.is_array())
      for (const auto& n : names) fns.push_back(lambda_named(n.get<std::string>()));
    if (kind == "LambdaLR") {
      if (names.is_array()) return std::make_shared<LambdaLR>(opt, fns);
      return std::make_shared<LambdaLR>(opt, lambda_named(names.get<std::string>()));
    }
    if (names.is_array()) return std::make_shared<MultiplicativeLR>(opt, fns);
    return std::make_shared<MultiplicativeLR>(opt, lambda_named(names.get<std::string>()));
  }
  if (kind == "MultiStepLR")
    return std::make_shared<MultiStepLR>(opt, a["milestones"].get<std::vector<int64_t>>(), real(a, "gamma", 0.1));
  if (kind == "ConstantLR")
    return std::make_shared<ConstantLR>(opt, real(a, "factor", 1.0 / 3), integer(a, "total_iters", 5));
  if (kind == "ExponentialLR") return std::make_shared<ExponentialLR>(opt, a["gamma"].get<double>());
  if (kind == "PolynomialLR")
    return std::make_shared<PolynomialLR>(opt, integer(a, "total_iters", 5), real(a, "power", 1.0));
  if (kind == "StepLR") return std::make_shared<StepLR>(opt, a["step_size"].get<int64_t>(), real(a, "gamma", 0.1));
  if (kind == "LinearLR")
    return std::make_shared<LinearLR>(opt, real(a, "start_factor", 1.0 / 3), real(a, "end_factor", 1.0),
                                      integer(a, "total_iters", 5));
  if (kind == "CosineAnnealingLR")
    return std::make_shared<CosineAnnealingLR>(opt, a["T_max"].get<int64_t>(), real(a, "eta_min", 0.0));
  if (kind == "CosineAnnealingWarmRestarts")
    return std::make_shared<CosineAnnealingWarmRestarts>(opt, a["T_0"].get<int64_t>(), integer(a, "T_mult", 1),
                                                         real(a, "eta_min", 0.0));
  if (kind == "CyclicLR") {
    CyclicLROptions o{
        .step_size_up = integer(a, "step_size_up", 2000),
        .mode = a.value("mode", std::string("triangular")),
        .gamma = real(a, "gamma", 1.0),
        .scale_mode = a.value("scale_mode", std::string("cycle")),
        .cycle_momentum = a.value("cycle_momentum", true),
        .base_momentum = per_group(a, "base_momentum", 0.8),
        .max_momentum = per_group(a, "max_momentum", 0.9),
    };
    if (a.contains("step_size_down")) o.step_size_down = a["step_size_down"].get<int64_t>();
    if (a.contains("scale_fn")) o.scale_fn = scale_fn_named(a["scale_fn"].get<std::string>());
    return std::make_shared<CyclicLR>(opt, per_group(a, "base_lr", 0), per_group(a, "max_lr", 0), o);
  }
  if (kind == "SequentialLR" || kind == "ChainedScheduler") {
    std::vector<std::shared_ptr<LRScheduler>> children;
    for (const auto& child : a["schedulers"])
      children.push_back(build(child["scheduler"].get<std::string>(), child["args"], opt));
    if (kind == "ChainedScheduler") return std::make_shared<ChainedScheduler>(children);
    return std::make_shared<SequentialLR>(opt, children, a["milestones"].get<std::vector<int64_t>>());
  }
  ADD_FAILURE() << "unknown scheduler " << kind;
  return nullptr;
}

ReduceLROnPlateauOptions plateau_options(const json& a) {
  return {.mode = a.value("mode", std::string("min")),
          .factor = real(a, "factor", 0.1),
          .patience = integer(a, "patience", 10),
          .threshold = real(a, "threshold", 1e-4),
          .threshold_mode = a.value("threshold_mode", std::string("rel")),
          .cooldown = integer(a, "cooldown", 0),
          .min_lr = per_group(a, "min_lr", 0.0),
          .eps = real(a, "eps", 1e-8)};
}

double golden_number(const json& v) {
  if (v.is_string())
    return v == "inf" ? std::numeric_limits<double>::infinity() : -std::numeric_limits<double>::infinity();
  return v.get<double>();
}

void expect_state(const SchedulerStateDict& got, const json& expected) {
  std::vector<std::string> missing, extra;
  for (const auto& [key, value] : expected.items()) {
    auto it = got.find(key);
    if (it == got.end()) {
      missing.push_back(key);
      continue;
    }
    EXPECT_EQ(it->second, golden_number(value)) << "state '" << key << "'";
  }
  for (const auto& [key, value] : got)
    if (!expected.contains(key)) extra.push_back(key);
  EXPECT_TRUE(missing.empty()) << "missing state keys, first " << (missing.empty() ? "" : missing.front());
  EXPECT_TRUE(extra.empty()) << "state keys PyTorch has not, first " << (extra.empty() ? "" : extra.front());
}

std::vector<double> lrs_of(const Optimizer& opt) {
  std::vector<double> out;
  for (const auto& g : opt.param_groups()) out.push_back(g.lr());
  return out;
}

TEST(LRSchedulerGolden, RatesAndStateMatchPyTorch) {
  const json& g = golden();
  ASSERT_GE(g["cases"].size(), 30u);
  ember_test::CollectWarnings quiet;  // step(epoch) warns that it is deprecated
  for (const auto& c : g["cases"]) {
    const std::string name = c["name"].get<std::string>(), kind = c["scheduler"].get<std::string>();
    SCOPED_TRACE(name);
    const bool sgd = c["optimizer"] == "SGD";
    std::vector<ParamGroup> groups{ParamGroup({zeros({1}).requires_grad_()}, {{"lr", 0.1}}),
                                   ParamGroup({zeros({1}).requires_grad_()}, {{"lr", 0.02}})};
    std::unique_ptr<Optimizer> opt;
    if (sgd) {
      opt = std::make_unique<SGD>(groups, SGDOptions{.momentum = 0.9});
    } else {
      opt = std::make_unique<Adam>(groups);
    }
    std::shared_ptr<LRScheduler> sched;
    std::unique_ptr<ReduceLROnPlateau> plateau;
    if (kind == "ReduceLROnPlateau") {
      plateau = std::make_unique<ReduceLROnPlateau>(*opt, plateau_options(c["args"]));
    } else {
      sched = build(kind, c["args"], *opt);
      ASSERT_TRUE(sched);
      EXPECT_EQ(sched->name(), kind);
    }
    const json& lrs = c["lrs"];
    size_t steps = lrs.size() - 1;
    for (size_t s = 0; s <= steps; ++s) {
      if (s > 0) {
        opt->step();
        if (plateau) {
          plateau->step(c["metrics"][s - 1].get<double>());
        } else if (c.contains("epochs")) {
          sched->step(c["epochs"][s - 1].get<double>());
        } else {
          sched->step();
        }
      }
      const std::vector<double> got = lrs_of(*opt);
      ASSERT_EQ(got.size(), 2u);
      for (size_t i = 0; i < 2; ++i) {
        EXPECT_EQ(got[i], lrs[s][i].get<double>()) << "step " << s << " group " << i;
        if (c.contains("momenta")) {
          EXPECT_EQ(opt->param_groups()[i].get(sgd ? "momentum" : "beta1"), c["momenta"][s][i].get<double>())
              << "momentum at step " << s << " group " << i;
        }
      }
      EXPECT_EQ(plateau ? plateau->get_last_lr() : sched->get_last_lr(), got) << "step " << s;
    }
    expect_state(plateau ? plateau->state_dict() : sched->state_dict(), c["state"]);
  }
}

}  // namespace
}  // namespace ember::optim
