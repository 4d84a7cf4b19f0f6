// Every differentiable op's backward against float64 central finite differences.
#include <gtest/gtest.h>

#include <cmath>
#include <functional>
#include <string>
#include <vector>

#include "ember/ember.h"
#include "support/error_of.h"
#include "support/gradcheck.h"

namespace {

using namespace ember;
using ember::test::gradcheck;

Tensor positive(IntList sizes) { return rand(sizes, kFloat64) + 0.5; }

TEST(Gradcheck, ArithmeticWithBroadcasting) {
  manual_seed(1);
  gradcheck("add", [](auto& v) { return v[0] + v[1]; }, {randn({2, 3}), randn({3})});
  gradcheck("sub alpha", [](auto& v) { return sub(v[0], v[1], 2.5); }, {randn({2, 3}), randn({2, 1})});
  gradcheck("mul", [](auto& v) { return v[0] * v[1]; }, {randn({2, 3}), randn({1, 3})});
  gradcheck("div", [](auto& v) { return v[0] / v[1]; }, {randn({2, 3}), positive({2, 3})});
  gradcheck("scalar ops", [](auto& v) { return (2 - v[0]) * 3 / 4 + 1; }, {randn({4})});
  gradcheck("pow scalar", [](auto& v) { return v[0].pow(3); }, {randn({4})});
  gradcheck("pow tensor", [](auto& v) { return pow(v[0], v[1]); }, {positive({3}), randn({3})});
  gradcheck("maximum", [](auto& v) { return maximum(v[0], v[1]); }, {randn({5}), randn({5})});
  gradcheck("minimum", [](auto& v) { return minimum(v[0], v[1]); }, {randn({5}), randn({5})});
}

TEST(Gradcheck, UnaryOps) {
  manual_seed(2);
  gradcheck("neg", [](auto& v) { return -v[0]; }, {randn({4})});
  gradcheck("abs", [](auto& v) { return abs(v[0]); }, {randn({4})});
  gradcheck("exp", [](auto& v) { return exp(v[0]); }, {randn({4})});
  gradcheck("log", [](auto& v) { return log(v[0]); }, {positive({4})});
  gradcheck("sqrt", [](auto& v) { return sqrt(v[0]); }, {positive({4})});
  gradcheck("rsqrt", [](auto& v) { return rsqrt(v[0]); }, {positive({4})});
  gradcheck("sin", [](auto& v) { return sin(v[0]); }, {randn({4})});
  gradcheck("cos", [](auto& v) { return cos(v[0]); }, {randn({4})});
  gradcheck("tanh", [](auto& v) { return tanh(v[0]); }, {randn({4})});
  gradcheck("erf", [](auto& v) { return erf(v[0]); }, {randn({4})});
  gradcheck("sigmoid", [](auto& v) { return sigmoid(v[0]); }, {randn({4})});
  gradcheck("relu", [](auto& v) { return relu(v[0]); }, {randn({6})});
  gradcheck("gelu", [](auto& v) { return gelu(v[0]); }, {randn({6})});
  gradcheck("gelu tanh", [](auto& v) { return gelu(v[0], "tanh"); }, {randn({6})});
  gradcheck("silu", [](auto& v) { return silu(v[0]); }, {randn({6})});
  gradcheck("clamp", [](auto& v) { return clamp(v[0], -0.5, 0.5); }, {randn({8})});
  gradcheck("where", [](auto& v) { return where(gt(v[0], v[1]), v[0], v[1] * 2); }, {randn({6}), randn({6})});
}

TEST(Gradcheck, Reductions) {
  manual_seed(3);
  gradcheck("sum all", [](auto& v) { return v[0].sum(); }, {randn({2, 3})});
  gradcheck("sum dims", [](auto& v) { return v[0].sum({0, 2}); }, {randn({2, 3, 4})});
  gradcheck("sum keepdim", [](auto& v) { return v[0].sum({1}, true); }, {randn({2, 3})});
  gradcheck("mean", [](auto& v) { return v[0].mean({-1}); }, {randn({2, 3})});
  gradcheck("prod", [](auto& v) { return prod(v[0], 1); }, {positive({2, 3})});
  gradcheck("amax", [](auto& v) { return amax(v[0], {1}); }, {randn({3, 4})});
  gradcheck("max all", [](auto& v) { return v[0].max(); }, {randn({3, 4})});
  gradcheck("max dim", [](auto& v) { return std::get<0>(max(v[0], 0)); }, {randn({3, 4})});
  gradcheck("min dim keepdim", [](auto& v) { return std::get<0>(min(v[0], 1, true)); }, {randn({3, 4})});
  gradcheck("var", [](auto& v) { return v[0].var({1}); }, {randn({3, 4})});
  gradcheck("std", [](auto& v) { return v[0].std(); }, {randn({5})});
}

TEST(Gradcheck, MatrixProducts) {
  manual_seed(4);
  gradcheck("mm", [](auto& v) { return mm(v[0], v[1]); }, {randn({2, 3}), randn({3, 4})});
  gradcheck("mm transposed", [](auto& v) { return mm(v[0], v[1].t()); }, {randn({2, 3}), randn({4, 3})});
  gradcheck("bmm", [](auto& v) { return bmm(v[0], v[1]); }, {randn({2, 2, 3}), randn({2, 3, 2})});
  gradcheck("dot", [](auto& v) { return matmul(v[0], v[1]); }, {randn({3}), randn({3})});
  gradcheck("mv", [](auto& v) { return matmul(v[0], v[1]); }, {randn({2, 3}), randn({3})});
  gradcheck("vm", [](auto& v) { return matmul(v[0], v[1]); }, {randn({3}), randn({3, 2})});
  gradcheck("broadcast matmul", [](auto& v) { return matmul(v[0], v[1]); }, {randn({2, 2, 3}), randn({3, 4})});
  // The folded forms: [..., n, k] @ [k, m] or [k] runs as one product over the folded rows.
  gradcheck("folded 4-D by matrix", [](auto& v) { return matmul(v[0], v[1]); }, {randn({2, 3, 2, 3}), randn({3, 4})});
  gradcheck("folded by stored-transposed", [](auto& v) { return matmul(v[0], v[1].t()); },
            {randn({2, 2, 3}), randn({4, 3})});
  gradcheck("folded by vector", [](auto& v) { return matmul(v[0], v[1]); }, {randn({2, 2, 3}), randn({3})});
  gradcheck("folded, non-contiguous rows", [](auto& v) { return matmul(v[0].transpose(0, 1), v[1]); },
            {randn({2, 3, 3}), randn({3, 2})});
  gradcheck("matrix by batch", [](auto& v) { return matmul(v[0], v[1]); }, {randn({2, 3}), randn({2, 3, 4})});
}

TEST(Gradcheck, ViewsAndJoins) {
  manual_seed(5);
  gradcheck("view", [](auto& v) { return v[0].view({3, 2}) * 2; }, {randn({2, 3})});
  gradcheck("reshape copy", [](auto& v) { return v[0].t().reshape({6}); }, {randn({2, 3})});
  gradcheck("transpose", [](auto& v) { return v[0].transpose(0, 1) * 1; }, {randn({2, 3})});
  gradcheck("permute", [](auto& v) { return v[0].permute({2, 0, 1}) * 1; }, {randn({2, 3, 4})});
  gradcheck("select", [](auto& v) { return v[0].select(1, 2) * 1; }, {randn({2, 3})});
  gradcheck("narrow", [](auto& v) { return v[0].narrow(0, 1, 2) * 1; }, {randn({4, 2})});
  gradcheck("slice step", [](auto& v) { return v[0].slice(0, 0, std::nullopt, 2) * 1; }, {randn({5})});
  gradcheck("squeeze unsqueeze", [](auto& v) { return v[0].squeeze().unsqueeze(0) * 1; }, {randn({2, 1, 3})});
  gradcheck("expand", [](auto& v) { return v[0].expand({4, 3}) * 1; }, {randn({1, 3})});
  gradcheck("flatten", [](auto& v) { return v[0].flatten() * 1; }, {randn({2, 3})});
  gradcheck("cat", [](auto& v) { return cat({v[0], v[1]}, 1); }, {randn({2, 2}), randn({2, 3})});
  gradcheck("stack", [](auto& v) { return stack({v[0], v[1]}, 0); }, {randn({3}), randn({3})});
  gradcheck("clone contiguous", [](auto& v) { return v[0].t().contiguous().clone(); }, {randn({2, 3})});
  gradcheck(
      "to float32 and back", [](auto& v) { return v[0].to(kFloat32).to(kFloat64) * 1; }, {randn({3})}, 1e-3, 1e-3);
}

TEST(Gradcheck, IndexingAndSoftmax) {
  manual_seed(6);
  Tensor idx = tensor({2, 0, 2});
  gradcheck("index_select", [idx](auto& v) { return v[0].index_select(1, idx); }, {randn({2, 3})});
  Tensor gidx = tensor({{0, 2}, {1, 1}});
  gradcheck("gather", [gidx](auto& v) { return v[0].gather(1, gidx); }, {randn({2, 3})});
  gradcheck("scatter_add", [gidx](auto& v) { return v[0].scatter_add(1, gidx, v[1]); }, {randn({2, 3}), randn({2, 2})});
  gradcheck("softmax", [](auto& v) { return softmax(v[0], 1); }, {randn({2, 4})});
  gradcheck("softmax dim0", [](auto& v) { return softmax(v[0], 0); }, {randn({3, 2})});
  gradcheck("log_softmax", [](auto& v) { return log_softmax(v[0], -1); }, {randn({2, 4})});
}

TEST(Autograd, AccumulatesAcrossCallsAndAcrossUses) {
  Tensor x = tensor({1.0, 2.0}, kFloat64).requires_grad_();
  Tensor y = (x * x + x).sum();  // dy/dx = 2x + 1
  y.backward();
  EXPECT_TRUE(equal(x.grad(), tensor({3.0, 5.0}, kFloat64)));
  (x * 2).sum().backward();
  EXPECT_TRUE(equal(x.grad(), tensor({5.0, 7.0}, kFloat64)));
  x.set_grad(Tensor());
  EXPECT_FALSE(x.grad().defined());
}

TEST(Autograd, GraphIsFreedUnlessRetained) {
  Tensor x = ones({2}).requires_grad_();
  Tensor y = (x.exp() * 2).sum();
  y.backward(Tensor(), /*retain_graph=*/true);
  y.backward();
  EXPECT_TRUE(allclose(x.grad(), full({2}, 4 * std::exp(1.0))));
  try {
    y.backward();
    ADD_FAILURE() << "expected an error";
  } catch (const Error& e) {
    EXPECT_NE(std::string(e.what()).find("Trying to backward through the graph a second time"), std::string::npos);
  }
}

TEST(Autograd, NoGradGuardAndDetachStopRecording) {
  Tensor x = ones({2}).requires_grad_();
  {
    NoGradGuard guard;
    EXPECT_FALSE((x * 2).requires_grad());
  }
  EXPECT_TRUE((x * 2).requires_grad());
  EXPECT_FALSE(x.detach().requires_grad());
  EXPECT_TRUE(x.is_leaf());
  EXPECT_FALSE((x * 2).is_leaf());
}

TEST(Autograd, ErrorsNameTheProblem) {
  auto message = ember_test::error_of;  // without the "in op(...)" context line
  Tensor x = ones({2}).requires_grad_();
  EXPECT_EQ(message([&] { ones({2}).sum().backward(); }),
            "element 0 of tensors does not require grad and does not have a grad_fn");
  EXPECT_EQ(message([&] { (x * 2).backward(); }), "grad can be implicitly created only for scalar outputs");
  EXPECT_EQ(message([&] { x.add_(ones({2})); }),
            "a leaf Variable that requires grad is being used in an in-place operation.");
  Tensor a = ones({2}).requires_grad_();
  Tensor b = ones({2});
  Tensor c = a * b;
  b.add_(ones({2}));  // b was saved by mul
  EXPECT_NE(message([&] { c.sum().backward(); }).find("modified by an inplace operation"), std::string::npos);
}

TEST(Autograd, GradFnNamesMatchPyTorch) {
  Tensor x = ones({2}).requires_grad_();
  EXPECT_EQ((x + 1).grad_fn_name(), "AddBackward0");
  EXPECT_EQ((x * x).grad_fn_name(), "MulBackward0");
  EXPECT_EQ(x.sum().grad_fn_name(), "SumBackward0");
  EXPECT_EQ(x.to(kFloat64).grad_fn_name(), "ToCopyBackward0");
  EXPECT_EQ(x.view({2, 1}).grad_fn_name(), "ViewBackward0");
  EXPECT_EQ(x.str(), "tensor([1., 1.], requires_grad=True)");
  EXPECT_EQ((x + 1).str(), "tensor([2., 2.], grad_fn=<AddBackward0>)");
  EXPECT_EQ(x.to(kFloat64).str(), "tensor([1., 1.], dtype=torch.float64, grad_fn=<ToCopyBackward0>)");
}

TEST(Autograd, GradientsKeepTheInputsDtype) {
  Tensor x = ones({2}, kFloat32).requires_grad_();
  Tensor y = ones({2}, kFloat64).requires_grad_();
  (x * y).sum().backward();
  EXPECT_EQ(x.grad().dtype(), kFloat32);
  EXPECT_EQ(y.grad().dtype(), kFloat64);
}

}  // namespace
