// Replays tools/gen_optim_golden.py's problems in ember and compares with what PyTorch computed.
#include <gtest/gtest.h>

#include <cmath>
#include <fstream>
#include <memory>
#include <nlohmann/json.hpp>
#include <string>
#include <vector>

#include "ember/ember.h"
#include "ember/optim/clip_grad.h"
#include "ember/optim/lr_scheduler.h"
#include "ember/optim/optimizers.h"
#include "support/json_golden.h"

namespace ember::optim {
namespace {

using nlohmann::json;

const json& golden() {
  static const json data = ember_test::read_json_golden("tests/optim/golden/optim_golden.json");
  return data;
}

std::vector<float> flat(const std::vector<Tensor>& tensors) {
  std::vector<float> out;
  for (const Tensor& t : tensors) {
    Tensor c = t.detach().contiguous();
    const float* p = c.data_ptr<float>();
    out.insert(out.end(), p, p + c.numel());
  }
  return out;
}

std::unique_ptr<Optimizer> make_optimizer(const std::string& kind, std::vector<Tensor> params, const Options& options) {
  std::vector<ParamGroup> groups{ParamGroup(std::move(params), options)};
  if (kind == "SGD") return std::make_unique<SGD>(groups);
  if (kind == "Adam") return std::make_unique<Adam>(groups);
  if (kind == "AdamW") return std::make_unique<AdamW>(groups);
  if (kind == "Adadelta") return std::make_unique<Adadelta>(groups);
  if (kind == "RMSprop") return std::make_unique<RMSprop>(groups);
  ADD_FAILURE() << "unknown optimizer " << kind;
  return nullptr;
}

TEST(OptimGolden, OptimizerTrajectoriesMatchPyTorch) {
  const json& g = golden();
  const Tensor X = ember_test::matrix_from(g["X"]), Y = ember_test::matrix_from(g["Y"]);
  ASSERT_FALSE(g["optimizers"].empty());
  for (const auto& c : g["optimizers"]) {
    SCOPED_TRACE(c["name"].get<std::string>());
    Tensor w = ember_test::matrix_from(g["W0"]).requires_grad_();
    Tensor b = ember_test::matrix_from(g["B0"]).requires_grad_();
    Options options;
    for (const auto& [key, value] : c["options"].items()) options[key] = value.get<double>();
    auto opt = make_optimizer(c["kind"].get<std::string>(), {w, b}, options);
    ASSERT_TRUE(opt);
    int step = 0;
    for (const auto& expected : c["trajectory"]) {
      opt->zero_grad();
      Tensor diff = w.mm(X) + b - Y;
      (diff * diff).mean().backward();
      opt->step();
      std::vector<float> got = flat({w, b});
      ASSERT_EQ(got.size(), expected.size());
      for (size_t i = 0; i < got.size(); ++i) {
        float want = expected[i].get<float>();
        EXPECT_NEAR(got[i], want, 2e-6 + 2e-5 * std::fabs(want)) << "step " << step << " element " << i;
      }
      ++step;
    }
    EXPECT_EQ(step, g["steps"].get<int>());
  }
}

std::unique_ptr<LRScheduler> make_scheduler(const json& c, Optimizer& opt) {
  const std::string kind = c["kind"];
  const json& a = c["args"];
  if (kind == "StepLR") return std::make_unique<StepLR>(opt, a["step_size"].get<int64_t>(), a["gamma"].get<double>());
  if (kind == "CosineAnnealingLR")
    return std::make_unique<CosineAnnealingLR>(opt, a["T_max"].get<int64_t>(), a["eta_min"].get<double>());
  if (kind == "LinearLR")
    return std::make_unique<LinearLR>(opt, a["start_factor"].get<double>(), a["end_factor"].get<double>(),
                                      a["total_iters"].get<int64_t>());
  if (kind == "OneCycleLR") {
    OneCycleLROptions o;
    o.total_steps = a["total_steps"].get<int64_t>();
    if (a.contains("pct_start")) o.pct_start = a["pct_start"].get<double>();
    if (a.contains("anneal_linear")) o.anneal_strategy = "linear";
    if (a.contains("three_phase")) o.three_phase = true;
    return std::make_unique<OneCycleLR>(opt, a["max_lr"].get<double>(), o);
  }
  ADD_FAILURE() << "unknown scheduler " << kind;
  return nullptr;
}

TEST(OptimGolden, SchedulerSequencesMatchPyTorch) {
  const json& g = golden();
  ASSERT_FALSE(g["schedulers"].empty());
  for (const auto& c : g["schedulers"]) {
    SCOPED_TRACE(c["name"].get<std::string>());
    std::vector<ParamGroup> groups{ParamGroup({zeros({1}).requires_grad_()}, {{"lr", 0.1}}),
                                   ParamGroup({zeros({1}).requires_grad_()}, {{"lr", 0.02}})};
    std::unique_ptr<Optimizer> opt;
    const bool sgd = c["optimizer"] == "SGD";
    if (sgd) {
      opt = std::make_unique<SGD>(groups, SGDOptions{.momentum = 0.9});
    } else {
      opt = std::make_unique<Adam>(groups);
    }
    auto sched = make_scheduler(c, *opt);
    ASSERT_TRUE(sched);
    const json& lrs = c["lrs"];
    const json& momenta = c["momenta"];
    for (size_t s = 0; s < lrs.size(); ++s) {
      if (s > 0) {
        opt->step();
        sched->step();
      }
      const auto& got = sched->get_last_lr();
      ASSERT_EQ(got.size(), lrs[s].size());
      for (size_t i = 0; i < got.size(); ++i) {
        EXPECT_EQ(got[i], lrs[s][i].get<double>()) << "step " << s << " group " << i;
        EXPECT_EQ(opt->param_groups()[i].lr(), got[i]);
        double momentum = opt->param_groups()[i].get(sgd ? "momentum" : "beta1");
        EXPECT_EQ(momentum, momenta[s][i].get<double>()) << "momentum at step " << s;
      }
    }
  }
}

TEST(OptimGolden, ClipGradNormMatchesPyTorch) {
  const json& clip = golden()["clip"];
  ASSERT_FALSE(clip["cases"].empty());
  for (const auto& c : clip["cases"]) {
    double norm_type = c["norm_type"].is_string() ? kInfNorm : c["norm_type"].get<double>();
    SCOPED_TRACE("norm_type " + std::to_string(norm_type) + " max_norm " + std::to_string(c["max_norm"].get<double>()));
    Tensor a = zeros({2, 3}).requires_grad_(), b = zeros({2}).requires_grad_();
    std::vector<float> g0, g1;
    for (const auto& v : clip["grads"][0]) g0.push_back(v.get<float>());
    for (const auto& v : clip["grads"][1]) g1.push_back(v.get<float>());
    a.set_grad(tensor(g0).reshape({2, 3}));
    b.set_grad(tensor(g1));
    Tensor total = clip_grad_norm_({a, b}, c["max_norm"].get<double>(), norm_type);
    EXPECT_EQ(total.dim(), 0);
    EXPECT_NEAR(total.item<double>(), c["total_norm"].get<double>(), 1e-5 * c["total_norm"].get<double>());
    std::vector<float> got = flat({a.grad(), b.grad()});
    for (size_t i = 0; i < got.size(); ++i) {
      float want = c["grads"][i].get<float>();
      EXPECT_NEAR(got[i], want, 1e-6 + 1e-5 * std::fabs(want)) << "element " << i;
    }
  }
}

}  // namespace
}  // namespace ember::optim
