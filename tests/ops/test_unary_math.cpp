// The rounding, sign, logarithm/exponential, trigonometric, hyperbolic and special-function unary
// ops, and remainder, fmod, atan2, hypot and lerp: values and gradients against PyTorch's
// (tools/gen_pointwise_golden.py), integer and bool behaviour, PyTorch's errors, and the same
// cases on every usable accelerator (and the stand-in device) against the CPU.
#include <gtest/gtest.h>

#include <cmath>
#include <functional>
#include <limits>
#include <map>
#include <string>
#include <vector>

#include "ember/ember.h"
#include "ember/io/safetensors.h"
#include "support/devices.h"
#include "support/error_of.h"
#include "support/golden_cases.h"
#include "support/gradcheck.h"

namespace {

using namespace ember;
using ember_test::error_of;
using ember_test::expect_close;
using ember_test::GoldenCase;

const io::SafetensorsData& golden() {
  static const io::SafetensorsData data =
      io::load_safetensors(EMBER_SOURCE_DIR "/tests/ops/golden/pointwise_golden.safetensors");
  return data;
}

std::vector<GoldenCase> cases_of(const std::string& kind) {
  std::vector<GoldenCase> out;
  for (GoldenCase& c : ember_test::golden_cases(golden().metadata)) {
    if (c.kind == kind) out.push_back(std::move(c));
  }
  return out;
}

using UnaryFn = std::function<Tensor(const Tensor&)>;

UnaryFn unary_op(const GoldenCase& c) {
  static const std::map<std::string, UnaryFn> ops = {
      {"floor", [](const Tensor& x) { return floor(x); }},
      {"ceil", [](const Tensor& x) { return x.ceil(); }},
      {"trunc", [](const Tensor& x) { return trunc(x); }},
      {"frac", [](const Tensor& x) { return x.frac(); }},
      {"sign", [](const Tensor& x) { return sign(x); }},
      {"log1p", [](const Tensor& x) { return log1p(x); }},
      {"expm1", [](const Tensor& x) { return x.expm1(); }},
      {"log2", [](const Tensor& x) { return log2(x); }},
      {"log10", [](const Tensor& x) { return x.log10(); }},
      {"exp2", [](const Tensor& x) { return exp2(x); }},
      {"reciprocal", [](const Tensor& x) { return x.reciprocal(); }},
      {"square", [](const Tensor& x) { return square(x); }},
      {"sin", [](const Tensor& x) { return x.sin(); }},
      {"cos", [](const Tensor& x) { return cos(x); }},
      {"tan", [](const Tensor& x) { return tan(x); }},
      {"asin", [](const Tensor& x) { return asin(x); }},
      {"acos", [](const Tensor& x) { return x.acos(); }},
      {"atan", [](const Tensor& x) { return atan(x); }},
      {"sinh", [](const Tensor& x) { return sinh(x); }},
      {"cosh", [](const Tensor& x) { return x.cosh(); }},
      {"asinh", [](const Tensor& x) { return asinh(x); }},
      {"acosh", [](const Tensor& x) { return acosh(x); }},
      {"atanh", [](const Tensor& x) { return x.atanh(); }},
      {"erf", [](const Tensor& x) { return x.erf(); }},
      {"erfc", [](const Tensor& x) { return erfc(x); }},
      {"erfinv", [](const Tensor& x) { return erfinv(x); }},
      {"lgamma", [](const Tensor& x) { return x.lgamma(); }},
      {"digamma", [](const Tensor& x) { return digamma(x); }},
  };
  const std::string& name = c.options.at("op");
  if (name == "round") {
    const int64_t decimals = c.options.count("decimals") ? c.num("decimals") : 0;
    return [decimals](const Tensor& x) { return x.round(decimals); };
  }
  return ops.at(name);
}

using BinaryFn = std::function<Tensor(const Tensor&, const Tensor&)>;

BinaryFn binary_op(const GoldenCase& c) {
  const std::string& name = c.options.at("op");
  if (name == "remainder") return [](const Tensor& a, const Tensor& b) { return remainder(a, b); };
  if (name == "fmod") return [](const Tensor& a, const Tensor& b) { return a.fmod(b); };
  if (name == "atan2") return [](const Tensor& a, const Tensor& b) { return atan2(a, b); };
  if (name == "hypot") return [](const Tensor& a, const Tensor& b) { return hypot(a, b); };
  if (name == "lerp") {
    const double weight = c.real("weight");
    return [weight](const Tensor& a, const Tensor& b) { return lerp(a, b, weight); };
  }
  ADD_FAILURE() << "no binary op " << name;
  return {};
}

/// float64 to about 1e-12 relative; float32 to its rounding (a few ulp through libm differences).
double rtol_of(const GoldenCase& c) { return c.options.at("dtype") == "float64" ? 1e-12 : 4e-6; }
double atol_of(const GoldenCase& c) { return c.options.at("dtype") == "float64" ? 1e-13 : 2e-6; }

const Tensor& at(const GoldenCase& c, const std::string& name) { return golden().at(c.prefix + name); }

TEST(UnaryMath, MatchesPyTorchValuesAndGradients) {
  const std::vector<GoldenCase> cases = cases_of("unary");
  ASSERT_GE(cases.size(), 58u);
  for (const GoldenCase& c : cases) {
    SCOPED_TRACE(c.description);
    Tensor x = at(c, "x").clone().requires_grad_();
    Tensor y = unary_op(c)(x);
    EXPECT_EQ(y.dtype(), at(c, "y").dtype());
    expect_close(y, at(c, "y"), rtol_of(c), atol_of(c), "y");
    if (!golden().contains(c.prefix + "gx")) continue;
    const std::vector<Tensor> gx = autograd::grad({y}, {x}, {at(c, "gy")});
    expect_close(gx[0], at(c, "gx"), rtol_of(c), atol_of(c), "gx");
  }
}

TEST(UnaryMath, BinaryOpsMatchPyTorchValuesAndGradients) {
  const std::vector<GoldenCase> cases = cases_of("binary");
  ASSERT_GE(cases.size(), 10u);
  for (const GoldenCase& c : cases) {
    SCOPED_TRACE(c.description);
    Tensor a = at(c, "a").clone().requires_grad_(), b = at(c, "b").clone().requires_grad_();
    Tensor y = binary_op(c)(a, b);
    expect_close(y, at(c, "y"), rtol_of(c), atol_of(c), "y");
    const std::vector<Tensor> g = autograd::grad({y}, {a, b}, {at(c, "gy")});
    expect_close(g[0], at(c, "ga"), rtol_of(c), atol_of(c), "ga");
    expect_close(g[1], at(c, "gb"), rtol_of(c), atol_of(c), "gb");
  }
}

TEST(UnaryMath, GradientsMatchFiniteDifferences) {
  const Tensor x = tensor({0.3, -0.7, 0.55, 0.9}, kFloat64);
  for (const char* name : {"asin", "atanh", "erfinv", "tan", "expm1", "sinh", "asinh"}) {
    GoldenCase c;
    c.options["op"] = name;
    const UnaryFn f = unary_op(c);
    ember::test::gradcheck(name, [&](const std::vector<Tensor>& in) { return f(in[0]); }, {x});
  }
  ember::test::gradcheck("lgamma", [](const std::vector<Tensor>& in) { return lgamma(in[0]); },
                         {tensor({0.3, 2.5, 7.0, -1.5}, kFloat64)});
  ember::test::gradcheck("digamma", [](const std::vector<Tensor>& in) { return digamma(in[0]); },
                         {tensor({0.3, 2.5, 7.0, -1.5}, kFloat64)});
  ember::test::gradcheck("atan2", [](const std::vector<Tensor>& in) { return atan2(in[0], in[1]); },
                         {tensor({0.3, -2.5, 1.0}, kFloat64), tensor({1.5, 0.5, -2.0}, kFloat64)});
  ember::test::gradcheck("hypot", [](const std::vector<Tensor>& in) { return hypot(in[0], in[1]); },
                         {tensor({0.3, -2.5, 1.0}, kFloat64), tensor({1.5, 0.5, -2.0}, kFloat64)});
}

TEST(UnaryMath, SpecialValuesFollowPyTorch) {
  const double inf = std::numeric_limits<double>::infinity();
  Tensor e = erfinv(tensor({1.0, -1.0, 1.5, 0.0}, kFloat64));
  EXPECT_EQ(e[0].item<double>(), inf);
  EXPECT_EQ(e[1].item<double>(), -inf);
  EXPECT_TRUE(std::isnan(e[2].item<double>()));
  EXPECT_EQ(e[3].item<double>(), 0.0);
  Tensor d = digamma(tensor({0.0, -0.0, -2.0, 1.0}, kFloat64));
  EXPECT_EQ(d[0].item<double>(), -inf);
  EXPECT_EQ(d[1].item<double>(), inf);
  EXPECT_TRUE(std::isnan(d[2].item<double>()));
  EXPECT_NEAR(d[3].item<double>(), -0.57721566490153286061, 1e-15);  // -Euler's gamma
  Tensor s = sign(tensor({std::nan(""), -0.0, 3.0}, kFloat64));
  EXPECT_EQ(s[0].item<double>(), 0.0);  // PyTorch's CPU: both comparisons with NaN are false
  EXPECT_EQ(s[2].item<double>(), 1.0);
  EXPECT_TRUE(
      equal(round(tensor({0.5, 1.5, 2.5, -0.5, -2.5}, kFloat32)), tensor({0.0, 2.0, 2.0, -0.0, -2.0}, kFloat32)));
}

TEST(UnaryMath, IntegerAndBoolInputs) {
  const Tensor i = tensor({-7, 7, -7, 7}, kInt64);
  const Tensor d = tensor({3, 3, -3, -3}, kInt64);
  EXPECT_TRUE(equal(remainder(i, d), tensor({2, 1, -1, -2}, kInt64)));
  EXPECT_TRUE(equal(fmod(i, d), tensor({-1, 1, -1, 1}, kInt64)));
  EXPECT_TRUE(equal(i.remainder(Scalar(int64_t{4})), tensor({1, 3, 1, 3}, kInt64)));
  EXPECT_EQ(remainder(i, Scalar(2.5)).dtype(), kFloat32);  // a float divisor makes a float result
  EXPECT_TRUE(equal(floor(i), i));
  EXPECT_EQ(floor(i).dtype(), kInt64);
  EXPECT_TRUE(equal(sign(i), tensor({-1, 1, -1, 1}, kInt64)));
  EXPECT_TRUE(equal(square(i), tensor({49, 49, 49, 49}, kInt64)));
  EXPECT_EQ(exp2(i).dtype(), kFloat32);  // integers are computed in the default float type
  EXPECT_EQ(atan2(i, d).dtype(), kFloat32);
  EXPECT_TRUE(equal(sign(tensor({true, false}, kBool)), tensor({true, false}, kBool)));
  const Tensor int32_min = tensor({std::numeric_limits<int32_t>::min()}, kInt32);
  EXPECT_EQ(remainder(int32_min, tensor({-1}, kInt32)).item<int64_t>(), 0);  // no overflow trap
}

TEST(UnaryMath, ErrorsNameTheProblem) {
  EXPECT_EQ(error_of([] { frac(tensor({1, 2}, kInt64)); }), "\"frac\" not implemented for 'Long'");
  EXPECT_EQ(error_of([] { remainder(tensor({1, 2}, kInt64), tensor({1, 0}, kInt64)); }), "ZeroDivisionError");
  EXPECT_EQ(error_of([] { fmod(tensor({1, 2}, kInt64), Scalar(int64_t{0})); }), "ZeroDivisionError");
  EXPECT_EQ(error_of([] {
              hypot(tensor({1, 2}, kInt64), tensor({1, 2}, kInt64));
            }),
            "\"hypot\" not implemented for 'Long'");
  EXPECT_EQ(error_of([] { round(tensor({1, 2}, kInt64), 2); }), "\"round_decimals\" not implemented for 'Long'");
  EXPECT_EQ(error_of([] { floor(tensor({true}, kBool)); }), "\"floor\" not implemented for 'Bool'");
  Tensor x = tensor({1.5}, kFloat64).requires_grad_();
  Tensor g = autograd::grad({digamma(x)}, {x}, {}, std::nullopt, /*create_graph=*/true)[0];
  EXPECT_NE(error_of([&] { g.backward(); }).find("polygamma(1, x)"), std::string::npos);
}

class UnaryMathDevice : public ember_test::DeviceTest {};

TEST_P(UnaryMathDevice, EveryCaseMatchesTheCpu) {
  for (const GoldenCase& c : cases_of("unary")) {
    SCOPED_TRACE(c.description);
    const UnaryFn f = unary_op(c);
    const Tensor x = at(c, "x");
    const bool f64 = c.options.at("dtype") == "float64";
    EXPECT_CLOSE_TO_CPU(f(x.to(device())), f(x), f64 ? 1e-12 : 2e-6, f64 ? 1e-13 : 1e-6);
  }
  for (const GoldenCase& c : cases_of("binary")) {
    SCOPED_TRACE(c.description);
    const BinaryFn f = binary_op(c);
    const Tensor a = at(c, "a"), b = at(c, "b");
    EXPECT_CLOSE_TO_CPU(f(a.to(device()), b.to(device())), f(a, b), 1e-12, 1e-6);
  }
}

EMBER_INSTANTIATE_DEVICE_SUITE(UnaryMathDevice);

}  // namespace
