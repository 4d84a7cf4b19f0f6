// Front-end semantics of element-wise ops: promotion, broadcasting, scalars, errors.
#include <gtest/gtest.h>

#include <cmath>
#include <functional>
#include <limits>
#include <vector>

#include "ember/ember.h"
#include "support/error_of.h"

namespace {

using namespace ember;

std::vector<double> values(const Tensor& t) {
  Tensor c = t.to(kFloat64).contiguous();
  const double* p = c.data_ptr<double>();
  return std::vector<double>(p, p + c.numel());
}

using ember_test::error_of;

TEST(Promotion, TensorsPromoteLikePyTorch) {
  EXPECT_EQ((ones({2}, kFloat32) + ones({2}, kFloat64)).dtype(), kFloat64);
  EXPECT_EQ((ones({2}, kInt32) + ones({2}, kInt64)).dtype(), kInt64);
  EXPECT_EQ((ones({2}, kUInt8) + ones({2}, kInt8)).dtype(), kInt16);
  EXPECT_EQ((ones({2}, kBool) + ones({2}, kBool)).dtype(), kBool);
  EXPECT_EQ((ones({2}, kFloat16) + ones({2}, kBFloat16)).dtype(), kFloat32);
  EXPECT_EQ((ones({2}, kInt64) + ones({2}, kFloat16)).dtype(), kFloat16);
  EXPECT_EQ(promote_types(kBool, kUInt8), kUInt8);
}

TEST(Promotion, ScalarsAndZeroDimTensorsOnlyCountByCategory) {
  EXPECT_EQ((ones({2}, kInt32) + 2).dtype(), kInt32);
  EXPECT_EQ((ones({2}, kInt32) + 2.5).dtype(), kFloat32);
  EXPECT_EQ((ones({2}, kFloat16) + 2.5).dtype(), kFloat16);
  EXPECT_EQ((ones({2}, kBool) + 1).dtype(), kInt64);
  EXPECT_EQ((ones({2}, kFloat32) + scalar_tensor(1.0, kFloat64)).dtype(), kFloat32);
  EXPECT_EQ((ones({2}, kInt32) + scalar_tensor(1.0, kFloat64)).dtype(), kFloat64);
  EXPECT_EQ((ones({}, kInt32) + ones({}, kInt64)).dtype(), kInt64);
  EXPECT_EQ(result_type(ones({2}, kUInt8), Scalar(1)), kUInt8);
}

TEST(Elementwise, ArithmeticWithBroadcasting) {
  Tensor a = tensor({{1.f}, {2.f}});      // [2, 1]
  Tensor b = tensor({10.f, 20.f, 30.f});  // [3]
  Tensor s = a + b;
  EXPECT_EQ(s.sizes().vec(), (std::vector<int64_t>{2, 3}));
  EXPECT_EQ(values(s), (std::vector<double>{11, 21, 31, 12, 22, 32}));
  EXPECT_EQ(values(b - a), (std::vector<double>{9, 19, 29, 8, 18, 28}));
  EXPECT_EQ(values(a * b), (std::vector<double>{10, 20, 30, 20, 40, 60}));
  EXPECT_EQ(values(b / 10), (std::vector<double>{1, 2, 3}));
  EXPECT_EQ(values(1 - b), (std::vector<double>{-9, -19, -29}));
  EXPECT_EQ(values(add(b, b, 2)), (std::vector<double>{30, 60, 90}));
  EXPECT_EQ(values(sub(b, b, 0.5)), (std::vector<double>{5, 10, 15}));
  EXPECT_EQ(error_of([] { zeros({2}) + zeros({3}); }),
            "The size of tensor a (2) must match the size of tensor b (3) at non-singleton dimension 0");
}

TEST(Elementwise, TrueDivisionOfIntegersGivesFloat) {
  Tensor q = tensor({1, 2, 3}) / tensor({2, 2, 2});
  EXPECT_EQ(q.dtype(), kFloat32);
  EXPECT_EQ(values(q), (std::vector<double>{0.5, 1, 1.5}));
  EXPECT_EQ((tensor({1, 2}) / 2).dtype(), kFloat32);
}

TEST(Elementwise, InPlaceKeepsDtypeAndRejectsBadCasts) {
  Tensor x = ones({3}, kInt64);
  x += 2;
  EXPECT_EQ(values(x), (std::vector<double>{3, 3, 3}));
  EXPECT_NE(error_of([&] { x += 0.5; }).find("can't be cast"), std::string::npos);
  Tensor f = ones({2, 3});
  Tensor row = f.select(0, 1);
  row.mul_(tensor({1.f, 2.f, 3.f}));
  EXPECT_EQ(values(f), (std::vector<double>{1, 1, 1, 1, 2, 3}));
  EXPECT_NE(error_of([&] { row.add_(ones({2, 3})); }).find("doesn't match the broadcast shape"), std::string::npos);
}

TEST(Elementwise, ComparisonsGiveBool) {
  Tensor a = tensor({1, 5, 3});
  Tensor b = tensor({2.f, 5.f, 1.f});
  EXPECT_EQ((a < b).dtype(), kBool);
  EXPECT_EQ(values(a < b), (std::vector<double>{1, 0, 0}));
  EXPECT_EQ(values(a == b), (std::vector<double>{0, 1, 0}));
  EXPECT_EQ(values(a >= 3), (std::vector<double>{0, 1, 1}));
  EXPECT_EQ(values(logical_not(a > 2)), (std::vector<double>{1, 0, 0}));
}

TEST(Elementwise, FiniteNanAndInfClassifiers) {
  const float inf = std::numeric_limits<float>::infinity();
  Tensor x = tensor({1.f, -inf, std::nanf(""), inf, -0.f});
  EXPECT_EQ(isfinite(x).dtype(), kBool);
  EXPECT_EQ(values(isfinite(x)), (std::vector<double>{1, 0, 0, 0, 1}));
  EXPECT_EQ(values(isnan(x)), (std::vector<double>{0, 0, 1, 0, 0}));
  EXPECT_EQ(values(isinf(x)), (std::vector<double>{0, 1, 0, 1, 0}));
  EXPECT_EQ(values(isfinite(x.to(kFloat16))), (std::vector<double>{1, 0, 0, 0, 1}));
  EXPECT_EQ(values(isinf(x.to(kBFloat16))), (std::vector<double>{0, 1, 0, 1, 0}));
  EXPECT_EQ(values(isfinite(tensor({int64_t{-5}, int64_t{9}}))), (std::vector<double>{1, 1}));
  // Strided input, and no gradient from a bool result.
  Tensor w = x.reshape({5, 1}).expand({5, 2}).t();
  EXPECT_EQ(values(isnan(w)), (std::vector<double>{0, 0, 1, 0, 0, 0, 0, 1, 0, 0}));
  Tensor p = tensor({1.f, 2.f}).requires_grad_();
  EXPECT_FALSE(isfinite(p * 2).requires_grad());
}

TEST(Elementwise, UnaryFloatOpsPromoteIntegers) {
  Tensor i = tensor({0, 1});
  EXPECT_EQ(exp(i).dtype(), kFloat32);
  EXPECT_NEAR(values(exp(i))[1], std::exp(1.0), 1e-6);
  EXPECT_EQ(relu(tensor({-1, 2})).dtype(), kInt64);
  EXPECT_EQ(values(relu(tensor({-1.f, 2.f}))), (std::vector<double>{0, 2}));
  EXPECT_NEAR(values(sigmoid(tensor({0.f})))[0], 0.5, 1e-7);
  EXPECT_NEAR(values(gelu(tensor({1.0}, kFloat64)))[0], 0.8413447460685429, 1e-12);
  EXPECT_NEAR(values(gelu(tensor({1.0}, kFloat64), "tanh"))[0], 0.8411919906082768, 1e-12);
  EXPECT_NE(error_of([] { gelu(tensor({1})); }).find("not implemented for 'Long'"), std::string::npos);
  EXPECT_NE(error_of([] { -tensor({true}); }).find("Negation, the `-` operator, on a bool tensor"), std::string::npos);
  EXPECT_NEAR(values(tanh(tensor({0.5})))[0], std::tanh(0.5f), 1e-6);
}

TEST(Elementwise, WhereAndClamp) {
  Tensor c = tensor({true, false, true});
  EXPECT_EQ(values(where(c, tensor({1, 2, 3}), tensor({10.f}))), (std::vector<double>{1, 10, 3}));
  EXPECT_EQ(where(c, tensor({1, 2, 3}), tensor({10.f})).dtype(), kFloat32);
  EXPECT_NE(error_of([] { where(tensor({1}), tensor({1}), tensor({1})); }).find("boolean"), std::string::npos);
  EXPECT_EQ(values(clamp(tensor({-2.f, 0.5f, 3.f}), 0, 1)), (std::vector<double>{0, 0.5, 1}));
  EXPECT_EQ(values(clamp(tensor({-2, 5}), std::nullopt, 1)), (std::vector<double>{-2, 1}));
  Tensor n = clamp(tensor({NAN}), 0, 1);
  EXPECT_TRUE(std::isnan(values(n)[0]));
  EXPECT_EQ(values(maximum(tensor({1.f, 5.f}), tensor({3.f, 2.f}))), (std::vector<double>{3, 5}));
  EXPECT_TRUE(std::isnan(values(maximum(tensor({NAN}), tensor({3.f})))[0]));
  EXPECT_EQ(values(tensor({2.f, 3.f}).pow(2)), (std::vector<double>{4, 9}));
}

TEST(Elementwise, NonContiguousInputs) {
  Tensor m = arange(6, kFloat32).view({2, 3});
  Tensor t = m.t();  // [3, 2]
  EXPECT_EQ(values(t + 1), (std::vector<double>{1, 4, 2, 5, 3, 6}));
  EXPECT_EQ(values(t * t), (std::vector<double>{0, 9, 1, 16, 4, 25}));
}

TEST(Elementwise, LargeTensorsUseEveryThreadCorrectly) {
  Tensor a = arange(1 << 20, kFloat64);
  Tensor s = (a + a).sum();
  double n = 1 << 20;
  EXPECT_DOUBLE_EQ(s.item<double>(), n * (n - 1));
}

TEST(Elementwise, HalfPrecisionComputesThroughFloat) {
  Tensor h = tensor({1.f, 2.f}, kFloat16);
  Tensor r = h * 1.5;
  EXPECT_EQ(r.dtype(), kFloat16);
  EXPECT_EQ(values(r), (std::vector<double>{1.5, 3}));
  Tensor b = tensor({1.f, 2.f}, kBFloat16) + tensor({1.f, 2.f}, kBFloat16);
  EXPECT_EQ(values(b), (std::vector<double>{2, 4}));
}

}  // namespace

namespace ember {
namespace {

TEST(ReluBackward, PassesTheGradientOnlyWhereTheOutputIsPositiveOrNan) {
  // As aten::threshold_backward: exactly 0 where the output is <= 0, even for an infinite or NaN
  // gradient (a multiply by a 0/1 mask would give NaN there); the gradient where it is NaN.
  const double inf = std::numeric_limits<double>::infinity(), nan = std::nan("");
  const Tensor x = tensor({-1.0, 0.0, 2.0, nan, 3.0}).requires_grad_(true);
  relu(x).backward(tensor({inf, nan, 5.0, 7.0, -inf}));
  const Tensor g = x.grad();
  EXPECT_EQ(g[0].item<double>(), 0.0);
  EXPECT_EQ(g[1].item<double>(), 0.0);
  EXPECT_EQ(g[2].item<double>(), 5.0);
  EXPECT_EQ(g[3].item<double>(), 7.0);
  EXPECT_EQ(g[4].item<double>(), -inf);
}

// PyTorch 2.15: clamp's gradient is 0 on a bound as well as beyond it (values from PyTorch).
TEST(ElementwiseGrad, ClampPassesTheGradientOnlyStrictlyInsideTheBounds) {
  Tensor x = tensor({0.0, 1.0, 1.5, 2.0, 3.0}, kFloat64).requires_grad_();
  clamp(x, 1.0, 2.0).sum().backward();
  EXPECT_TRUE(equal(x.grad(), tensor({0.0, 0.0, 1.0, 0.0, 0.0}, kFloat64)));
  x.set_grad(Tensor());
  clamp(x, 1.0).sum().backward();
  EXPECT_TRUE(equal(x.grad(), tensor({0.0, 0.0, 1.0, 1.0, 1.0}, kFloat64)));
}

}  // namespace
}  // namespace ember
