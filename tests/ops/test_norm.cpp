// vector_norm, matrix_norm, cdist, logsumexp, nansum/nanmean, addmm/baddbmm and the composed
// reductions (src/ops/norm.cpp): values and gradients against PyTorch's
// (tools/gen_transform_norm_golden.py) — including the gradient at a zero norm and at ties of the
// infinity norms — special values, errors, and the stand-in device against the CPU.
#include <gtest/gtest.h>

#include <cmath>
#include <limits>
#include <string>
#include <vector>

#include "ember/ember.h"
#include "support/devices.h"
#include "support/error_of.h"
#include "support/gradcheck.h"
#include "support/transform_norm_golden.h"

namespace {

using namespace ember;
using ember_test::error_of;
using ember_test::GoldenCase;
using ember_test::GoldenOp;
using ember_test::int_list;
using Inputs = std::map<std::string, Tensor>;

double ord_of(const GoldenCase& c) { return std::stod(c.options.at("ord")); }

std::map<std::string, std::function<GoldenOp(const GoldenCase&)>> norm_ops() {
  return {
      {"vector_norm",
       [](const GoldenCase& c) -> GoldenOp {
         return [o = ord_of(c), d = int_list(c.options.at("dims")), k = c.flag("keepdim")](const Inputs& in) {
           return vector_norm(in.at("x"), o, d, k);
         };
       }},
      {"matrix_norm",
       [](const GoldenCase& c) -> GoldenOp {
         const std::string ord = c.options.at("ord");
         if (ord == "fro") return [](const Inputs& in) { return matrix_norm(in.at("x")); };
         return [o = std::stod(ord)](const Inputs& in) { return matrix_norm(in.at("x"), o); };
       }},
      {"cdist",
       [](const GoldenCase& c) -> GoldenOp {
         return [p = c.real("p")](const Inputs& in) { return cdist(in.at("a"), in.at("b"), p); };
       }},
      {"logsumexp",
       [](const GoldenCase& c) -> GoldenOp {
         return [d = int_list(c.options.at("dims")), k = c.flag("keepdim")](const Inputs& in) {
           return d.empty() ? logsumexp(in.at("x"), {0, 1, 2}, k) : in.at("x").logsumexp(d, k);
         };
       }},
      {"nansum",
       [](const GoldenCase& c) -> GoldenOp {
         return [d = int_list(c.options.at("dims"))](const Inputs& in) { return nansum(in.at("x"), d); };
       }},
      {"nanmean",
       [](const GoldenCase& c) -> GoldenOp {
         return [d = int_list(c.options.at("dims"))](const Inputs& in) { return nanmean(in.at("x"), d); };
       }},
      {"addmm",
       [](const GoldenCase& c) -> GoldenOp {
         return [b = c.real("beta"), a = c.real("alpha")](const Inputs& in) {
           return addmm(in.at("input"), in.at("a"), in.at("b"), b, a);
         };
       }},
      {"baddbmm",
       [](const GoldenCase& c) -> GoldenOp {
         return [b = c.real("beta"), a = c.real("alpha")](const Inputs& in) {
           return baddbmm(in.at("input"), in.at("a"), in.at("b"), b, a);
         };
       }},
  };
}

TEST(Norm, MatchesPyTorchValuesAndGradients) {
  // The 3-norm's and 0.5-norm's gradients go through pow: a few ulp of difference, so 1e-11.
  EXPECT_GE(ember_test::check_golden_cases(norm_ops(), 1e-11, 1e-13), 40);
}

TEST(Norm, GradientsMatchFiniteDifferences) {
  const Tensor x = tensor({{0.5, -1.5, 2.0}, {3.0, 0.25, -0.75}}, kFloat64);
  for (double ord : {2.0, 1.0, 3.0, 0.5}) {
    ember::test::gradcheck("vector_norm " + std::to_string(ord),
                           [ord](const std::vector<Tensor>& in) { return vector_norm(in[0], ord, {1}); }, {x});
  }
  ember::test::gradcheck("logsumexp", [](const std::vector<Tensor>& in) { return logsumexp(in[0], {1}); }, {x});
  ember::test::gradgradcheck("vector_norm 2",
                             [](const std::vector<Tensor>& in) { return vector_norm(in[0], 2.0, {1}); }, {x});
}

TEST(Norm, ComposedReductions) {
  const double inf = std::numeric_limits<double>::infinity();
  EXPECT_EQ(logsumexp(tensor({-inf, -inf}, kFloat64), {0}).item<double>(), -inf);
  EXPECT_EQ(logsumexp(tensor({inf, 1.0}, kFloat64), {0}).item<double>(), inf);
  EXPECT_NEAR(logsumexp(tensor({1000.0, 1000.0}, kFloat64), {0}).item<double>(), 1000.0 + std::log(2.0), 1e-12);
  const Tensor m = tensor({{0, 2, 0}, {1, 1, 0}});
  EXPECT_TRUE(equal(any(m, {1}), tensor({true, true})));
  EXPECT_TRUE(equal(all(m, {0}), tensor({false, true, false})));
  EXPECT_TRUE(m.any().item<bool>());
  EXPECT_FALSE(m.all().item<bool>());
  EXPECT_TRUE(equal(count_nonzero(m, {1}), tensor({1, 2})));
  auto [lo, hi] = aminmax(tensor({3.0, -1.0, 7.0}));
  EXPECT_EQ(lo.item<float>(), -1.0f);
  EXPECT_EQ(hi.item<float>(), 7.0f);
  auto [v, mean_] = var_mean(tensor({1.0, 2.0, 3.0, 4.0}, kFloat64));
  EXPECT_DOUBLE_EQ(v.item<double>(), 5.0 / 3.0);
  EXPECT_DOUBLE_EQ(mean_.item<double>(), 2.5);
  EXPECT_EQ(vector_norm(tensor({3.0, 0.0, 4.0}), 0.0).item<float>(), 2.0f);
  EXPECT_EQ(norm(tensor({3.0, 4.0})).item<float>(), 5.0f);
  // beta = 0 ignores the input's NaN, as PyTorch's BLAS call does.
  const Tensor nan_input = full({2, 2}, std::nan(""), kFloat64);
  EXPECT_FALSE(
      isnan(addmm(nan_input, eye(2, std::nullopt, kFloat64), eye(2, std::nullopt, kFloat64), 0.0)).any().item<bool>());
}

TEST(Norm, ErrorsNameTheProblem) {
  EXPECT_EQ(error_of([] { vector_norm(zeros({0}), -1.0); }),
            "linalg.vector_norm cannot compute the -1.0 norm on an empty tensor because the operation does not have an "
            "identity");
  EXPECT_EQ(error_of([] {
              vector_norm(tensor({1, 2}));
            }),
            "linalg.vector_norm: Expected a floating point or complex tensor as input. Got Long");
  EXPECT_EQ(error_of([] { matrix_norm(ones({2, 2}), "abc"); }), "linalg.matrix_norm: Order abc not supported.");
  EXPECT_EQ(error_of([] { matrix_norm(ones({3})); }),
            "linalg.matrix_norm: The input tensor A must have at least 2 dimensions.");
  EXPECT_EQ(error_of([] {
              cdist(ones({2, 3}), ones({2, 4}));
            }),
            "X1 and X2 must have the same number of columns. X1: 3 X2: 4");
}

class NormDevice : public ember_test::DeviceTest {};

TEST_P(NormDevice, MatchesTheCpu) {
  const Tensor x = randn({4, 6}, kFloat64);
  for (double ord : {2.0, 1.0, 3.0, std::numeric_limits<double>::infinity()}) {
    EXPECT_CLOSE_TO_CPU(vector_norm(x.to(device()), ord, {1}), vector_norm(x, ord, {1}), 1e-13, 1e-14);
  }
  EXPECT_CLOSE_TO_CPU(logsumexp(x.to(device()), {0}), logsumexp(x, {0}), 1e-13, 1e-14);
  EXPECT_CLOSE_TO_CPU(cdist(x.to(device()), x.narrow(0, 0, 2).to(device())), cdist(x, x.narrow(0, 0, 2)), 1e-13, 1e-14);
  Tensor leaf_cpu = x.clone().requires_grad_(), leaf_dev = x.to(device()).requires_grad_();
  vector_norm(leaf_cpu, 2.0, {1}).sum().backward();
  vector_norm(leaf_dev, 2.0, {1}).sum().backward();
  EXPECT_CLOSE_TO_CPU(leaf_dev.grad(), leaf_cpu.grad(), 1e-13, 1e-14);
}

EMBER_INSTANTIATE_DEVICE_SUITE(NormDevice);

}  // namespace
