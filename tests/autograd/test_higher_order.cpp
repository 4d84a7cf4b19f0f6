// Higher-order gradients: autograd::grad and create_graph (torch.autograd.grad semantics), and
// every differentiable op's double backward against float64 finite differences (gradgradcheck).
#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <cmath>
#include <memory>
#include <optional>
#include <string>
#include <tuple>
#include <vector>

#include "ember/ember.h"
#include "support/error_of.h"
#include "support/gradcheck.h"

namespace {

using namespace ember;
using ember::test::gradgradcheck;
using ember_test::error_of;
using testing::HasSubstr;
namespace F = ember::nn::functional;

Tensor f64(std::initializer_list<NestedList> values) { return tensor(values, kFloat64); }

bool close(const Tensor& a, const Tensor& b) { return allclose(a, b, 1e-10, 1e-10); }

// ---------------------------------------------------------------------------------------------
// Engine semantics
// ---------------------------------------------------------------------------------------------

TEST(HigherOrderEngine, DerivativesOfACubeToThirdOrder) {
  Tensor x = f64({1.0, -2.0, 0.5}).requires_grad_();
  Tensor y = x.pow(3).sum();
  Tensor g1 = autograd::grad({y}, {x}, {}, std::nullopt, /*create_graph=*/true)[0];
  EXPECT_TRUE(g1.requires_grad());
  EXPECT_TRUE(close(g1, f64({3.0, 12.0, 0.75}))) << g1;  // 3x^2
  Tensor g2 = autograd::grad({g1.sum()}, {x}, {}, std::nullopt, /*create_graph=*/true)[0];
  EXPECT_TRUE(g2.requires_grad());
  EXPECT_TRUE(close(g2, f64({6.0, -12.0, 3.0}))) << g2;  // 6x
  Tensor g3 = autograd::grad({g2.sum()}, {x})[0];
  EXPECT_FALSE(g3.requires_grad());
  EXPECT_TRUE(close(g3, f64({6.0, 6.0, 6.0}))) << g3;  // 6
}

TEST(HigherOrderEngine, GradLeavesDotGradAndHooksAlone) {
  Tensor x = f64({1.0, 2.0}).requires_grad_();
  Tensor other = f64({3.0, -1.0}).requires_grad_();
  int hook_calls = 0;
  register_post_accumulate_grad_hook(x, [&](const Tensor&) { ++hook_calls; });
  Tensor y = (x * x * other).sum();
  Tensor g = autograd::grad({y}, {x}, {}, /*retain_graph=*/true)[0];
  EXPECT_TRUE(close(g, f64({6.0, -4.0}))) << g;  // 2 x other
  autograd::grad({y}, {x}, {}, std::nullopt, /*create_graph=*/true);
  EXPECT_FALSE(x.grad().defined());
  EXPECT_FALSE(other.grad().defined());  // in the graph, but not asked for
  EXPECT_EQ(hook_calls, 0);
  // The hook is live: a plain backward runs it and fills grad().
  y.backward();
  EXPECT_EQ(hook_calls, 1);
  EXPECT_TRUE(close(x.grad(), f64({6.0, -4.0}))) << x.grad();
}

TEST(HigherOrderEngine, GradWithRespectToAnIntermediate) {
  Tensor x = f64({1.0, -3.0}).requires_grad_();
  Tensor y = x * 2;
  Tensor z = (y * y).sum();
  Tensor gy = autograd::grad({z}, {y}, {}, /*retain_graph=*/true)[0];
  EXPECT_TRUE(close(gy, f64({4.0, -12.0}))) << gy;  // 2y
  std::vector<Tensor> both = autograd::grad({z}, {y, x}, {}, /*retain_graph=*/true);
  ASSERT_EQ(both.size(), 2u);
  EXPECT_TRUE(close(both[0], f64({4.0, -12.0}))) << both[0];
  EXPECT_TRUE(close(both[1], f64({8.0, -24.0}))) << both[1];  // 8x
  EXPECT_FALSE(x.grad().defined());
  // Through the intermediate to second order: d/dx sum(2y) = d/dx sum(4x) = 4.
  Tensor gy2 = autograd::grad({z}, {y}, {}, std::nullopt, /*create_graph=*/true)[0];
  EXPECT_TRUE(gy2.requires_grad());
  Tensor gx = autograd::grad({gy2.sum()}, {x})[0];
  EXPECT_TRUE(close(gx, f64({4.0, 4.0}))) << gx;
}

TEST(HigherOrderEngine, TheSameInputTwice) {
  Tensor x = f64({0.5, -1.5}).requires_grad_();
  std::vector<Tensor> gs = autograd::grad({(x * x).sum()}, {x, x});
  ASSERT_EQ(gs.size(), 2u);
  EXPECT_TRUE(close(gs[0], f64({1.0, -3.0}))) << gs[0];
  EXPECT_TRUE(close(gs[1], f64({1.0, -3.0}))) << gs[1];
}

TEST(HigherOrderEngine, SeveralOutputsWithGradOutputs) {
  Tensor x = f64({0.2, -0.9, 1.4}).requires_grad_();
  Tensor a = f64({1.0, 2.0, -1.0}), b = f64({0.5, -3.0, 2.0});
  Tensor g = autograd::grad({x * x, sin(x)}, {x}, {a, b})[0];
  Tensor xd = x.detach();
  EXPECT_TRUE(close(g, 2 * xd * a + cos(xd) * b)) << g;
}

TEST(HigherOrderEngine, InputsOutsideTheGraph) {
  Tensor x = f64({1.0, 2.0}).requires_grad_();
  Tensor unused = f64({1.0, 2.0}).requires_grad_();
  Tensor unused_result = unused * 2;
  Tensor constant = f64({1.0, 2.0});
  Tensor y = (x * 3).sum();
  EXPECT_THAT(error_of([&] { autograd::grad({y}, {constant}, {}, true); }),
              HasSubstr("One of the differentiated Tensors does not require grad"));
  EXPECT_THAT(error_of([&] {
                autograd::grad({y}, {x, unused}, {}, true);
              }),
              HasSubstr("One of the differentiated Tensors appears to not have been used in the graph. "
                        "Set allow_unused=True if this is the desired behavior."));
  EXPECT_THAT(error_of([&] { autograd::grad({y}, {unused_result}, {}, true); }),
              HasSubstr("One of the differentiated Tensors appears to not have been used in the graph."));
  std::vector<Tensor> gs = autograd::grad({y}, {x, unused, unused_result}, {}, true, false, /*allow_unused=*/true);
  ASSERT_EQ(gs.size(), 3u);
  EXPECT_TRUE(close(gs[0], f64({3.0, 3.0}))) << gs[0];
  EXPECT_FALSE(gs[1].defined());
  EXPECT_FALSE(gs[2].defined());
}

TEST(HigherOrderEngine, MaterializeGradsReturnsZerosForUnusedInputs) {
  Tensor x = f64({1.0, 2.0}).requires_grad_();
  Tensor unused = f64({1.0, 2.0, 3.0}).requires_grad_();
  Tensor y = (x * x).sum();
  // allow_unused defaults to materialize_grads, as in PyTorch.
  std::vector<Tensor> gs = autograd::grad({y}, {x, unused}, {}, true, /*create_graph=*/true, std::nullopt,
                                          /*materialize_grads=*/true);
  ASSERT_EQ(gs.size(), 2u);
  EXPECT_TRUE(close(gs[0], f64({2.0, 4.0}))) << gs[0];
  ASSERT_TRUE(gs[1].defined());
  EXPECT_TRUE(close(gs[1], f64({0.0, 0.0, 0.0}))) << gs[1];
  EXPECT_TRUE(gs[1].requires_grad());  // a leaf of its own, so that it can be differentiated further
  EXPECT_TRUE(gs[1].is_leaf());
  // The zeros take part in a second derivative like any gradient: d/dx of sum(2x) + sum(0).
  std::vector<Tensor> second = autograd::grad({gs[0].sum() + gs[1].sum()}, {x});
  EXPECT_TRUE(close(second[0], f64({2.0, 2.0}))) << second[0];
  EXPECT_EQ(error_of([&] { autograd::grad({y}, {unused}, {}, true, false, /*allow_unused=*/false, true); }),
            "Expected allow_unused to be True or not passed when materialize_grads=True, but got: "
            "allow_unused=False.");
}

TEST(HigherOrderEngine, RetainGraphDefaultsToCreateGraph) {
  Tensor x = f64({0.5, 1.5}).requires_grad_();
  const char* second_time = "Trying to backward through the graph a second time";
  Tensor y = x.exp().sum();  // exp saves its result, which the first pass frees
  autograd::grad({y}, {x});
  EXPECT_THAT(error_of([&] { autograd::grad({y}, {x}); }), HasSubstr(second_time));

  Tensor y2 = x.exp().sum();
  autograd::grad({y2}, {x}, {}, std::nullopt, /*create_graph=*/true);   // retains
  EXPECT_EQ(error_of([&] { autograd::grad({y2}, {x}); }), "no error");  // frees
  EXPECT_THAT(error_of([&] { autograd::grad({y2}, {x}); }), HasSubstr(second_time));

  Tensor y3 = x.exp().sum();
  autograd::grad({y3}, {x}, {}, /*retain_graph=*/true);
  EXPECT_EQ(error_of([&] { autograd::grad({y3}, {x}); }), "no error");

  Tensor y4 = x.exp().sum();
  y4.backward(Tensor(), std::nullopt, /*create_graph=*/true);
  EXPECT_EQ(error_of([&] { y4.backward(); }), "no error");
}

TEST(HigherOrderEngine, BackwardWithCreateGraphRecordsTheLeafGrad) {
  Tensor x = f64({1.0, 2.0, -1.0}).requires_grad_();
  x.pow(3).sum().backward(Tensor(), std::nullopt, /*create_graph=*/true);
  ASSERT_TRUE(x.grad().defined());
  EXPECT_TRUE(x.grad().requires_grad());
  EXPECT_TRUE(close(x.grad(), f64({3.0, 12.0, 3.0}))) << x.grad();  // 3x^2
  // Backward of the recorded grad accumulates d/dx sum(3x^2) = 6x into it: 3x^2 + 6x.
  x.grad().sum().backward();
  EXPECT_TRUE(close(x.grad(), f64({9.0, 24.0, -3.0}))) << x.grad();
}

TEST(HigherOrderEngine, CreateGraphAccumulatesOutOfPlace) {
  Tensor x = f64({0.5, -2.0}).requires_grad_();
  ember::backward({x.pow(3).sum()}, {}, std::nullopt, /*create_graph=*/true);
  Tensor first = x.grad();
  // As PyTorch with grad mode on: grad = grad + new, a new tensor; `first` keeps its value.
  ember::backward({x.pow(2).sum()}, {}, std::nullopt, /*create_graph=*/true);
  EXPECT_TRUE(close(first, f64({0.75, 12.0}))) << first;       // 3x^2
  EXPECT_TRUE(close(x.grad(), f64({1.75, 8.0}))) << x.grad();  // 3x^2 + 2x
  ASSERT_TRUE(x.grad().requires_grad());
  Tensor second = autograd::grad({x.grad().sum()}, {x})[0];
  EXPECT_TRUE(close(second, f64({5.0, -10.0}))) << second;  // 6x + 2
}

TEST(HigherOrderEngine, GradientsWithoutCreateGraphAreNotRecorded) {
  Tensor x = f64({0.3, -0.7}).requires_grad_();
  Tensor g = autograd::grad({sin(x).sum()}, {x})[0];
  EXPECT_FALSE(g.requires_grad());
  EXPECT_TRUE(close(g, cos(x.detach()))) << g;
  // Not even when the grad_output itself requires grad.
  Tensor w = f64({1.0, 2.0}).requires_grad_();
  Tensor gw = autograd::grad({sin(x)}, {x}, {w})[0];
  EXPECT_FALSE(gw.requires_grad());
  EXPECT_TRUE(close(gw, cos(x.detach()) * w.detach())) << gw;
  sin(x).sum().backward();
  EXPECT_FALSE(x.grad().requires_grad());
}

TEST(HigherOrderEngine, HessianOfASeparableFunction) {
  // f(x) = sum(x^2 sin x): f' = 2x sin x + x^2 cos x, f'' = 2 sin x + 4x cos x - x^2 sin x,
  // and the Hessian is diagonal.
  Tensor x = f64({0.3, -1.2, 2.0, 0.7}).requires_grad_();
  Tensor xd = x.detach();
  Tensor f = (x.pow(2) * sin(x)).sum();
  Tensor g = autograd::grad({f}, {x}, {}, std::nullopt, /*create_graph=*/true)[0];
  EXPECT_TRUE(close(g, 2 * xd * sin(xd) + xd.pow(2) * cos(xd))) << g;
  Tensor d2 = 2 * sin(xd) + 4 * xd * cos(xd) - xd.pow(2) * sin(xd);
  // A Hessian-vector product.
  Tensor v = f64({1.0, -0.5, 2.0, 0.25});
  Tensor hv = autograd::grad({(g * v).sum()}, {x}, {}, /*retain_graph=*/true)[0];
  EXPECT_TRUE(close(hv, d2 * v)) << hv << "\n" << d2 * v;
  // Row by row: the whole Hessian.
  Tensor identity = eye(4, std::nullopt, kFloat64);
  for (int64_t i = 0; i < 4; ++i) {
    Tensor row = autograd::grad({g.select(0, i)}, {x}, {}, /*retain_graph=*/true)[0];
    EXPECT_TRUE(close(row, d2 * identity[i])) << "row " << i << ": " << row;
  }
}

TEST(HigherOrderEngine, GradientPenaltyReachesTheCriticsParameters) {
  // WGAN-GP: penalty = mean((||d critic / d input||_2 - 1)^2), back-propagated to the critic.
  manual_seed(21);
  auto critic = std::make_shared<nn::Sequential>(std::make_shared<nn::Linear>(3, 5), std::make_shared<nn::Tanh>(),
                                                 std::make_shared<nn::Linear>(5, 1));
  critic->to(kFloat64);
  const Tensor samples = randn({4, 3}, kFloat64);
  auto penalty_of = [&](bool create_graph) {
    Tensor x = samples.detach().requires_grad_();
    Tensor score = critic->forward(x);
    Tensor g = autograd::grad({score}, {x}, {ones_like(score)}, std::nullopt, create_graph)[0];
    return (g.pow(2).sum({1}).sqrt() - 1).pow(2).mean();
  };
  Tensor penalty = penalty_of(true);
  ASSERT_TRUE(penalty.requires_grad());
  penalty.backward();
  std::vector<std::pair<std::string, Tensor>> params = critic->named_parameters();
  ASSERT_EQ(params.size(), 4u);
  for (const auto& [name, p] : params) {
    if (name == "2.bias") {
      // The gradient with respect to the input does not depend on the last bias: PyTorch leaves
      // its grad None.
      EXPECT_TRUE(!p.grad().defined() || equal(p.grad(), zeros_like(p))) << p.grad();
      continue;
    }
    ASSERT_TRUE(p.grad().defined()) << name;
    EXPECT_TRUE(all_finite(std::vector<Tensor>{p.grad()}).item<bool>()) << name << p.grad();
  }
  // Finite differences of the penalty for every element of both weights.
  const double eps = 1e-6;
  for (const char* name : {"0.weight", "2.weight"}) {
    Tensor p;
    for (const auto& [n, t] : params)
      if (n == name) p = t;
    double* data = p.detach().data_ptr<double>();
    std::vector<double> numeric;
    for (int64_t i = 0; i < p.numel(); ++i) {
      const double orig = data[i];
      data[i] = orig + eps;
      const double up = penalty_of(false).item<double>();
      data[i] = orig - eps;
      const double down = penalty_of(false).item<double>();
      data[i] = orig;
      numeric.push_back((up - down) / (2 * eps));
    }
    Tensor expected = tensor(numeric, kFloat64).reshape(p.sizes());
    EXPECT_TRUE(allclose(p.grad(), expected, 1e-5, 1e-5)) << name << "\n" << p.grad() << "\n" << expected;
  }
}

// ---------------------------------------------------------------------------------------------
// gradgradcheck over the op families
// ---------------------------------------------------------------------------------------------

Tensor positive(IntList sizes) { return rand(sizes, kFloat64) + 0.5; }

// Normal values at least 0.2 from zero, so relu and abs have no kink within a finite difference.
Tensor away_from_zero(IntList sizes) {
  Tensor r = randn(sizes, kFloat64);
  return where(r >= 0.0, r + 0.2, r - 0.2);
}

// Values 0.1 apart in random order: max, amax and max_pool have no ties.
Tensor distinct(IntList sizes) {
  int64_t n = 1;
  for (int64_t s : sizes) n *= s;
  return (randperm(n).to(kFloat64) * 0.1 - 0.05 * static_cast<double>(n)).reshape(sizes);
}

TEST(HigherOrderGradgrad, ArithmeticWithBroadcasting) {
  manual_seed(1);
  gradgradcheck("add", [](auto& v) { return v[0] + v[1]; }, {randn({2, 3}), randn({3})});
  gradgradcheck("sub alpha", [](auto& v) { return sub(v[0], v[1], 2.5); }, {randn({2, 3}), randn({2, 1})});
  gradgradcheck("mul", [](auto& v) { return v[0] * v[1]; }, {randn({2, 3}), randn({1, 3})});
  gradgradcheck("square", [](auto& v) { return v[0] * v[0]; }, {randn({3})});
  gradgradcheck("div", [](auto& v) { return v[0] / v[1]; }, {randn({2, 3}), positive({3})});
  gradgradcheck("scalar ops", [](auto& v) { return (2 - v[0]) * 3 / 4 + 1 / v[0]; }, {positive({4})});
  gradgradcheck("pow scalar", [](auto& v) { return v[0].pow(3); }, {randn({4})});
  gradgradcheck("pow fractional", [](auto& v) { return v[0].pow(2.5); }, {positive({4})});
  gradgradcheck("pow negative", [](auto& v) { return pow(v[0], -1.5); }, {positive({4})});
  gradgradcheck("pow tensor", [](auto& v) { return pow(v[0], v[1]); }, {positive({2, 3}), randn({3})});
  // distinct values are multiples of 0.1 (offset by 0.05 for the 6 here), the others end in 5:
  // no two within 0.05 of each other.
  Tensor other = f64({0.05, -0.15, 0.25});
  gradgradcheck("maximum", [](auto& v) { return maximum(v[0], v[1]); }, {distinct({2, 3}), other});
  gradgradcheck("minimum", [](auto& v) { return minimum(v[0], v[1]) * v[0]; }, {distinct({2, 3}), other});
}

TEST(HigherOrderGradgrad, UnaryOps) {
  manual_seed(2);
  gradgradcheck("neg", [](auto& v) { return -v[0]; }, {randn({4})});
  gradgradcheck("abs", [](auto& v) { return abs(v[0]) * v[0]; }, {away_from_zero({6})});
  gradgradcheck("exp", [](auto& v) { return exp(v[0]); }, {randn({4})});
  gradgradcheck("log", [](auto& v) { return log(v[0]); }, {positive({4})});
  gradgradcheck("sqrt", [](auto& v) { return sqrt(v[0]); }, {positive({4})});
  gradgradcheck("rsqrt", [](auto& v) { return rsqrt(v[0]); }, {positive({4})});
  gradgradcheck("sin", [](auto& v) { return sin(v[0]); }, {randn({4})});
  gradgradcheck("cos", [](auto& v) { return cos(v[0]); }, {randn({4})});
  gradgradcheck("tanh", [](auto& v) { return tanh(v[0]); }, {randn({4})});
  gradgradcheck("erf", [](auto& v) { return erf(v[0]); }, {randn({4})});
  gradgradcheck("composition", [](auto& v) { return exp(sin(v[0])) * v[0]; }, {randn({4})});
}

TEST(HigherOrderGradgrad, Activations) {
  manual_seed(3);
  gradgradcheck("sigmoid", [](auto& v) { return sigmoid(v[0]); }, {randn({5})});
  gradgradcheck("relu", [](auto& v) { return relu(v[0]) * v[0]; }, {away_from_zero({6})});
  gradgradcheck("gelu", [](auto& v) { return gelu(v[0]); }, {randn({6})});
  gradgradcheck("gelu tanh", [](auto& v) { return gelu(v[0], "tanh"); }, {randn({6})});
  gradgradcheck("functional gelu tanh", [](auto& v) { return F::gelu(v[0], "tanh"); }, {randn({6})});
  gradgradcheck("silu", [](auto& v) { return silu(v[0]); }, {randn({6})});
}

// An activation's backward runs as one fused kernel, or as ops when create_graph records it: the
// two give the same gradient, in float32 and float64.
TEST(HigherOrderGradgrad, ActivationGradientsAreTheSameRecordedOrNot) {
  manual_seed(5);
  const std::pair<const char*, Tensor (*)(const Tensor&)> activations[] = {
      {"tanh", [](const Tensor& x) { return tanh(x); }}, {"sigmoid", [](const Tensor& x) { return sigmoid(x); }},
      {"gelu", [](const Tensor& x) { return gelu(x); }}, {"gelu tanh", [](const Tensor& x) { return gelu(x, "tanh"); }},
      {"silu", [](const Tensor& x) { return silu(x); }},
  };
  for (Dtype dtype : {kFloat32, kFloat64}) {
    Tensor x = (randn({257}) * 4).to(dtype).requires_grad_();
    Tensor w = randn({257}).to(dtype);
    for (const auto& [name, f] : activations) {
      Tensor fused = autograd::grad({(f(x) * w).sum()}, {x})[0];
      Tensor recorded = autograd::grad({(f(x) * w).sum()}, {x}, {}, std::nullopt, /*create_graph=*/true)[0];
      EXPECT_FALSE(fused.requires_grad()) << name;
      EXPECT_TRUE(recorded.requires_grad()) << name;
      const double tol = dtype == kFloat32 ? 1e-5 : 1e-12;
      EXPECT_TRUE(allclose(fused, recorded.detach(), tol, tol)) << name << " in " << dtype_name(dtype);
    }
  }
}

TEST(HigherOrderGradgrad, WhereAndClamp) {
  manual_seed(4);
  gradgradcheck("where", [](auto& v) { return where(gt(v[0], v[1]), v[0].pow(2), v[1] * v[0]); },
                {randn({6}), randn({6})});
  // No value within 0.15 of the bounds.
  Tensor x = f64({-1.2, -0.3, 0.1, 0.35, 0.8, 1.5});
  gradgradcheck("clamp", [](auto& v) { return clamp(v[0], -0.5, 0.5) * v[0]; }, {x});
  gradgradcheck("clamp min", [](auto& v) { return clamp(v[0], -0.5).pow(2); }, {x});
  gradgradcheck("clamp max", [](auto& v) { return clamp(v[0], std::nullopt, 0.5).pow(2); }, {x});
}

TEST(HigherOrderGradgrad, SumMeanProd) {
  manual_seed(5);
  gradgradcheck("sum all", [](auto& v) { return v[0].sum(); }, {randn({2, 3})});
  gradgradcheck("sum dims", [](auto& v) { return v[0].pow(2).sum({0, 2}); }, {randn({2, 3, 2})});
  gradgradcheck("sum keepdim", [](auto& v) { return v[0].pow(3).sum({1}, true); }, {randn({2, 3})});
  gradgradcheck("mean all", [](auto& v) { return v[0].pow(2).mean(); }, {randn({2, 3})});
  gradgradcheck("mean dims", [](auto& v) { return v[0].pow(2).mean({-1}); }, {randn({2, 3})});
  gradgradcheck("mean keepdim", [](auto& v) { return mean(v[0], {0, 1}, true); }, {randn({2, 3, 2})});
  gradgradcheck("prod all", [](auto& v) { return v[0].prod(); }, {positive({2, 3})});
  gradgradcheck("prod dim", [](auto& v) { return prod(v[0], 1); }, {away_from_zero({2, 3})});
  gradgradcheck("prod keepdim", [](auto& v) { return prod(v[0], 0, true); }, {away_from_zero({3, 2})});
}

TEST(HigherOrderGradgrad, MaxMinVar) {
  manual_seed(6);
  gradgradcheck("amax", [](auto& v) { return amax(v[0], {1}) * v[0].sum({1}); }, {distinct({3, 4})});
  gradgradcheck("amax dims", [](auto& v) { return amax(v[0], {0, 2}); }, {distinct({2, 3, 2})});
  gradgradcheck("amin keepdim", [](auto& v) { return amin(v[0], {1}, true); }, {distinct({3, 4})});
  gradgradcheck("max all", [](auto& v) { return v[0].max().pow(2); }, {distinct({3, 4})});
  gradgradcheck("max dim", [](auto& v) { return std::get<0>(max(v[0], 0)).pow(2); }, {distinct({3, 4})});
  gradgradcheck("min dim keepdim", [](auto& v) { return std::get<0>(min(v[0], 1, true)).pow(2); }, {distinct({3, 4})});
  gradgradcheck("var dim", [](auto& v) { return v[0].var({1}); }, {randn({3, 4})});
  gradgradcheck("var all", [](auto& v) { return v[0].var(); }, {randn({5})});
  gradgradcheck("var population keepdim", [](auto& v) { return v[0].var({0}, 0, true); }, {randn({4, 2})});
  gradgradcheck("std", [](auto& v) { return v[0].std({1}); }, {randn({2, 4})});
}

TEST(HigherOrderGradgrad, MatrixProducts) {
  manual_seed(7);
  gradgradcheck("mm", [](auto& v) { return mm(v[0], v[1]); }, {randn({2, 3}), randn({3, 2})});
  gradgradcheck("mm transposed", [](auto& v) { return mm(v[0], v[1].t()); }, {randn({2, 3}), randn({4, 3})});
  gradgradcheck("mm square", [](auto& v) { return mm(v[0], v[0]); }, {randn({3, 3})});
  gradgradcheck("matmul 2-D", [](auto& v) { return matmul(v[0], v[1]); }, {randn({2, 3}), randn({3, 2})});
  gradgradcheck("bmm", [](auto& v) { return bmm(v[0], v[1]); }, {randn({2, 2, 3}), randn({2, 3, 2})});
  gradgradcheck("matmul batched", [](auto& v) { return matmul(v[0], v[1]); }, {randn({2, 2, 3}), randn({2, 3, 2})});
  gradgradcheck("matmul broadcast", [](auto& v) { return matmul(v[0], v[1]); }, {randn({2, 2, 3}), randn({3, 2})});
  gradgradcheck("dot", [](auto& v) { return matmul(v[0], v[1]); }, {randn({3}), randn({3})});
  gradgradcheck("mv", [](auto& v) { return matmul(v[0], v[1]); }, {randn({2, 3}), randn({3})});
  gradgradcheck("vm", [](auto& v) { return matmul(v[0], v[1]); }, {randn({3}), randn({3, 2})});
  gradgradcheck("batched mv", [](auto& v) { return matmul(v[0], v[1]); }, {randn({2, 2, 3}), randn({3})});
}

TEST(HigherOrderGradgrad, Linear) {
  manual_seed(8);
  gradgradcheck("x @ w.t() + b", [](auto& v) { return matmul(v[0], v[1].t()) + v[2]; },
                {randn({3, 4}), randn({2, 4}), randn({2})});
  gradgradcheck("functional linear", [](auto& v) { return F::linear(v[0], v[1], v[2]); },
                {randn({3, 4}), randn({2, 4}), randn({2})});
  gradgradcheck("functional linear no bias", [](auto& v) { return F::linear(v[0], v[1]); },
                {randn({2, 3, 4}), randn({2, 4})});
  gradgradcheck("two-layer mlp", [](auto& v) { return F::linear(tanh(F::linear(v[0], v[1], v[2])), v[3]); },
                {randn({3, 2}), randn({4, 2}), randn({4}), randn({1, 4})});
}

TEST(HigherOrderGradgrad, SoftmaxAndLogSoftmax) {
  manual_seed(9);
  gradgradcheck("softmax", [](auto& v) { return softmax(v[0], 1); }, {randn({2, 4})});
  gradgradcheck("softmax dim0", [](auto& v) { return softmax(v[0], 0); }, {randn({3, 2})});
  gradgradcheck("softmax 3-d", [](auto& v) { return v[0].softmax(1); }, {randn({2, 3, 2})});
  gradgradcheck("log_softmax", [](auto& v) { return log_softmax(v[0], -1); }, {randn({2, 4})});
  gradgradcheck("log_softmax dim0", [](auto& v) { return v[0].log_softmax(0); }, {randn({3, 2})});
}

TEST(HigherOrderGradgrad, Views) {
  manual_seed(10);
  gradgradcheck("view", [](auto& v) { return v[0].view({3, 2}).pow(2); }, {randn({2, 3})});
  gradgradcheck("view linear", [](auto& v) { return v[0].view({3, 2}); }, {randn({2, 3})});
  gradgradcheck("reshape copy", [](auto& v) { return v[0].t().reshape({6}).pow(2); }, {randn({2, 3})});
  gradgradcheck("transpose", [](auto& v) { return v[0].transpose(0, 1).pow(2); }, {randn({2, 3})});
  gradgradcheck("permute", [](auto& v) { return v[0].permute({2, 0, 1}).pow(2); }, {randn({2, 3, 2})});
  gradgradcheck("select", [](auto& v) { return v[0].select(1, 2).pow(2); }, {randn({2, 3})});
  gradgradcheck("slice step", [](auto& v) { return v[0].slice(0, 0, std::nullopt, 2).pow(2); }, {randn({5})});
  gradgradcheck("narrow", [](auto& v) { return v[0].narrow(0, 1, 2).pow(2); }, {randn({4, 2})});
  gradgradcheck("squeeze", [](auto& v) { return v[0].squeeze().pow(2); }, {randn({2, 1, 3})});
  gradgradcheck("squeeze dim", [](auto& v) { return v[0].squeeze(1).pow(2); }, {randn({2, 1, 3})});
  gradgradcheck("unsqueeze", [](auto& v) { return v[0].unsqueeze(0).pow(2); }, {randn({2, 3})});
  gradgradcheck("expand", [](auto& v) { return v[0].expand({4, 3}).pow(2); }, {randn({1, 3})});
  gradgradcheck("flatten", [](auto& v) { return v[0].flatten().pow(2); }, {randn({2, 3})});
  gradgradcheck("clone", [](auto& v) { return v[0].clone().pow(2); }, {randn({2, 3})});
  gradgradcheck("contiguous", [](auto& v) { return v[0].t().contiguous().pow(2); }, {randn({2, 3})});
  gradgradcheck(
      "to float32 and back", [](auto& v) { return v[0].to(kFloat32).pow(2).to(kFloat64); }, {randn({3})}, 1e-3, 1e-3);
}

TEST(HigherOrderGradgrad, Joins) {
  manual_seed(11);
  gradgradcheck("cat", [](auto& v) { return cat({v[0], v[1]}, 1).pow(2); }, {randn({2, 2}), randn({2, 3})});
  gradgradcheck("cat dim0", [](auto& v) { return cat({v[0], v[1] * v[0]}, 0); }, {randn({2, 2}), randn({2, 2})});
  gradgradcheck("stack", [](auto& v) { return stack({v[0], v[1]}, 0).pow(2); }, {randn({3}), randn({3})});
  gradgradcheck("stack dim1",
                [](auto& v) {
                  return stack({v[0], v[1]}, 1) * v[0].unsqueeze(1);
                },
                {randn({3}), randn({3})});
}

TEST(HigherOrderGradgrad, Indexing) {
  manual_seed(12);
  Tensor idx = tensor({2, 0, 2});
  gradgradcheck("index_select", [idx](auto& v) { return v[0].index_select(1, idx).pow(2); }, {randn({2, 3})});
  Tensor gidx = tensor({{0, 2}, {1, 1}});
  gradgradcheck("gather", [gidx](auto& v) { return v[0].gather(1, gidx).pow(2); }, {randn({2, 3})});
  gradgradcheck("scatter_add", [gidx](auto& v) { return v[0].scatter_add(1, gidx, v[1]).pow(2); },
                {randn({2, 3}), randn({2, 2})});
}

TEST(HigherOrderGradgrad, CrossEntropy) {
  manual_seed(13);
  using R = nn::Reduction;
  Tensor target = tensor({1, 0, 3});
  Tensor weight = f64({0.5, 1.0, 2.0, 1.5});
  auto logits = [] { return randn({3, 4}); };
  gradgradcheck("mean", [=](auto& v) { return F::cross_entropy(v[0], target); }, {logits()});
  gradgradcheck("sum", [=](auto& v) { return F::cross_entropy(v[0], target, R::Sum); }, {logits()});
  gradgradcheck("none", [=](auto& v) { return F::cross_entropy(v[0], target, R::None); }, {logits()});
  gradgradcheck("weight", [=](auto& v) { return F::cross_entropy(v[0], target, R::Mean, 0.0, weight); }, {logits()});
  gradgradcheck("label smoothing", [=](auto& v) { return F::cross_entropy(v[0], target, R::Mean, 0.1); }, {logits()});
  gradgradcheck("label smoothing weight sum",
                [=](auto& v) { return F::cross_entropy(v[0], target, R::Sum, 0.2, weight); }, {logits()});
  Tensor ignored = tensor({1, -100, 3});
  gradgradcheck("ignore_index default", [=](auto& v) { return F::cross_entropy(v[0], ignored); }, {logits()});
  gradgradcheck("ignore_index 0 weight smoothing",
                [=](auto& v) { return F::cross_entropy(v[0], target, R::Mean, 0.1, weight, 0); }, {logits()});
  gradgradcheck("ignore_index none", [=](auto& v) { return F::cross_entropy(v[0], ignored, R::None, 0.1); },
                {logits()});
  Tensor probabilities = softmax(randn({3, 4}, kFloat64), 1);
  gradgradcheck("probabilities", [=](auto& v) { return F::cross_entropy(v[0], probabilities); }, {logits()});
  gradgradcheck("probabilities weight smoothing",
                [=](auto& v) { return F::cross_entropy(v[0], probabilities, R::Sum, 0.1, weight); }, {logits()});
  Tensor spatial_target = tensor({{0, 2}, {1, 1}});
  gradgradcheck("k-dimensional", [=](auto& v) { return F::cross_entropy(v[0], spatial_target); }, {randn({2, 3, 2})});
  gradgradcheck("module", [=](auto& v) { return nn::CrossEntropyLoss(weight, 1, R::Mean, 0.05)(v[0], target); },
                {logits()});
}

TEST(HigherOrderGradgrad, OtherLosses) {
  manual_seed(14);
  using R = nn::Reduction;
  Tensor target = tensor({1, 0, 3});
  Tensor weight = f64({0.5, 1.0, 2.0, 1.5});
  gradgradcheck("nll_loss of log_softmax", [=](auto& v) { return F::nll_loss(log_softmax(v[0], 1), target); },
                {randn({3, 4})});
  gradgradcheck("nll_loss weight ignore", [=](auto& v) { return F::nll_loss(v[0].pow(2), target, R::Mean, weight, 0); },
                {randn({3, 4})});
  gradgradcheck("nll_loss none", [=](auto& v) { return F::nll_loss(v[0], target, R::None); }, {randn({3, 4})});
  gradgradcheck("mse_loss", [](auto& v) { return F::mse_loss(v[0], v[1]); }, {randn({2, 3}), randn({2, 3})});
  gradgradcheck("mse_loss sum", [](auto& v) { return F::mse_loss(v[0], v[1], R::Sum); },
                {randn({2, 3}), randn({2, 3})});
  gradgradcheck("mse_loss none", [](auto& v) { return F::mse_loss(v[0], v[1], R::None); },
                {randn({2, 3}), randn({2, 3})});
  Tensor labels = rand({2, 3}, kFloat64);
  Tensor pos_weight = f64({0.5, 2.0, 1.0});
  gradgradcheck("bce_with_logits", [=](auto& v) { return F::binary_cross_entropy_with_logits(v[0], labels); },
                {randn({2, 3})});
  gradgradcheck("bce_with_logits pos_weight sum",
                [=](auto& v) { return F::binary_cross_entropy_with_logits(v[0], labels, R::Sum, pos_weight); },
                {randn({2, 3})});
}

TEST(HigherOrderGradgrad, LayerNormAndEmbedding) {
  manual_seed(15);
  gradgradcheck("layer_norm affine", [](auto& v) { return F::layer_norm(v[0], {4}, v[1], v[2]); },
                {randn({2, 3, 4}), randn({4}), randn({4})});
  gradgradcheck("layer_norm two dims", [](auto& v) { return F::layer_norm(v[0], {2, 3}); }, {randn({2, 2, 3})});
  Tensor idx = tensor({{0, 2}, {2, 1}});
  gradgradcheck("embedding", [idx](auto& v) { return F::embedding(idx, v[0]).pow(2); }, {randn({3, 2})});
}

TEST(HigherOrderGradgrad, Conv2d) {
  manual_seed(16);
  gradgradcheck("conv2d", [](auto& v) { return F::conv2d(v[0], v[1], v[2]); },
                {randn({2, 2, 5, 5}), randn({3, 2, 3, 3}), randn({3})});
  gradgradcheck("conv2d stride padding", [](auto& v) { return F::conv2d(v[0], v[1], v[2], {2}, {1}); },
                {randn({2, 2, 5, 5}), randn({3, 2, 3, 3}), randn({3})});
  gradgradcheck("conv2d dilation", [](auto& v) { return F::conv2d(v[0], v[1], Tensor(), {1}, {1}, {2}); },
                {randn({1, 2, 5, 5}), randn({2, 2, 3, 3})});
  gradgradcheck("conv2d groups", [](auto& v) { return F::conv2d(v[0], v[1], v[2], {1}, {0}, {1}, 2); },
                {randn({1, 4, 4, 4}), randn({4, 2, 3, 3}), randn({4})});
  gradgradcheck("conv2d rectangular",
                [](auto& v) {
                  return F::conv2d(v[0], v[1], Tensor(), {1, 2}, {0, 1});
                },
                {randn({1, 2, 4, 5}), randn({2, 2, 2, 3})});
  gradgradcheck("conv2d unbatched tanh", [](auto& v) { return tanh(F::conv2d(v[0], v[1], v[2])); },
                {randn({2, 4, 4}), randn({2, 2, 3, 3}), randn({2})});
}

TEST(HigherOrderGradgrad, Pooling) {
  manual_seed(17);
  gradgradcheck("max_pool2d", [](auto& v) { return F::max_pool2d(v[0], {2}).pow(2); }, {distinct({1, 2, 4, 4})});
  gradgradcheck("max_pool2d overlapping padded", [](auto& v) { return F::max_pool2d(v[0], {3}, {1}, {1}); },
                {distinct({1, 2, 4, 4})});
  gradgradcheck("avg_pool2d", [](auto& v) { return F::avg_pool2d(v[0], {2}).pow(2); }, {randn({1, 2, 4, 4})});
  gradgradcheck("avg_pool2d padded exclude pad",
                [](auto& v) { return F::avg_pool2d(v[0], {3}, {2}, {1}, false, false); }, {randn({1, 2, 5, 5})});
  gradgradcheck("avg_pool2d ceil divisor", [](auto& v) { return F::avg_pool2d(v[0], {2}, {2}, {0}, true, true, 3); },
                {randn({1, 1, 5, 5})});
  gradgradcheck("adaptive_avg_pool2d",
                [](auto& v) {
                  return F::adaptive_avg_pool2d(v[0], {2, 3}).pow(2);
                },
                {randn({1, 2, 5, 5})});
}

TEST(HigherOrderGradgrad, BatchNorm) {
  manual_seed(18);
  gradgradcheck("batch_norm training",
                [](auto& v) { return F::batch_norm(v[0], Tensor(), Tensor(), v[1], v[2], /*training=*/true); },
                {randn({4, 3}), randn({3}), randn({3})});
  Tensor running_mean = zeros({3}, kFloat64), running_var = ones({3}, kFloat64);
  gradgradcheck("batch_norm training 4-d with running stats",
                [=](auto& v) { return F::batch_norm(v[0], running_mean, running_var, v[1], v[2], /*training=*/true); },
                {randn({2, 3, 2, 2}), randn({3}), randn({3})});
  gradgradcheck("batch_norm training no affine",
                [](auto& v) { return F::batch_norm(v[0], Tensor(), Tensor(), Tensor(), Tensor(), true); },
                {randn({3, 2, 2})});
  Tensor mean = f64({0.1, -0.4, 0.3}), var = f64({0.5, 1.5, 2.0});
  gradgradcheck("batch_norm eval",
                [=](auto& v) { return F::batch_norm(v[0], mean, var, v[1], v[2], /*training=*/false).pow(2); },
                {randn({2, 3, 2}), randn({3}), randn({3})});
}

}  // namespace
