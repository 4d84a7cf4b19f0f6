// register_hook and retain_grad (PyTorch's Tensor.register_hook and Tensor.retain_grad): hooks
// on leaves and on results, their order and removal, what they may not change, autograd::grad,
// create_graph, in-place writes after registering, and the warning for a non-leaf's grad().
#include <gtest/gtest.h>

#include <string>
#include <vector>

#include "ember/ember.h"
#include "support/collect_warnings.h"
#include "support/error_of.h"

namespace {

using namespace ember;
using ember_test::error_of;

double value(const Tensor& t) { return t.item<double>(); }

TEST(TensorHooks, ALeafsHookSeesAndReplacesItsGradient) {
  Tensor w = full({3}, 1.0).requires_grad_();
  std::vector<Tensor> seen;
  register_hook(w, [&](const Tensor& g) {
    seen.push_back(g.clone());
    return g * 2;
  });
  (w * 3).sum().backward();
  ASSERT_EQ(seen.size(), 1u);
  EXPECT_TRUE(equal(seen[0], full({3}, 3.0)));
  EXPECT_TRUE(equal(w.grad(), full({3}, 6.0)));
}

TEST(TensorHooks, AResultsHookChangesWhatFlowsToItsInputs) {
  Tensor x = full({2}, 1.0).requires_grad_();
  Tensor y = x * 2;
  register_hook(y, [](const Tensor& g) { return g * 10; });
  (y * 3).sum().backward();
  EXPECT_TRUE(equal(x.grad(), full({2}, 60.0)));  // 3, times 10 at y, times 2 through y = 2x
}

TEST(TensorHooks, RunInOrderEachOnThePreviousResultAndStopWhenRemoved) {
  Tensor x = full({1}, 1.0).requires_grad_();
  Tensor y = x * 1;
  HookHandle add = register_hook(y, [](const Tensor& g) { return g + 1; });
  register_hook(y, [](const Tensor& g) { return g * 2; });
  register_hook(y, [](const Tensor&) { return Tensor(); });  // observes only
  y.sum().backward();
  EXPECT_EQ(value(x.grad()), 4.0);  // (1 + 1) * 2
  add.remove();
  add.remove();  // twice does nothing
  x.set_grad(Tensor());
  y = x * 1;
  register_hook(y, [](const Tensor& g) { return g * 2; });
  y.sum().backward();
  EXPECT_EQ(value(x.grad()), 2.0);
}

TEST(TensorHooks, AHookThatRemovesItselfStillLetsTheOthersRun) {
  Tensor x = full({1}, 1.0).requires_grad_();
  Tensor y = x * 1;
  HookHandle self;
  int calls = 0;
  self = register_hook(y, [&](const Tensor& g) {
    self.remove();
    ++calls;
    return g * 3;
  });
  register_hook(y, [&](const Tensor& g) {
    ++calls;
    return g * 5;
  });
  y.sum().backward(Tensor(), /*retain_graph=*/true);
  EXPECT_EQ(value(x.grad()), 15.0);
  y.sum().backward();
  EXPECT_EQ(calls, 3);
  EXPECT_EQ(value(x.grad()), 20.0);  // 15 + 5: the first hook is gone
}

TEST(TensorHooks, MayNotChangeTheGradientsSizeDtypeOrDevice) {
  Tensor x = zeros({2, 3}).requires_grad_();
  HookHandle h = register_hook(x, [](const Tensor&) { return zeros({3}); });
  EXPECT_EQ(error_of([&] { x.sum().backward(); }),
            "hook 'hook' has changed the size of value: it returned [3] for a gradient of size [2, 3]");
  h.remove();
  register_hook(x, [](const Tensor& g) { return g.to(kFloat64); });
  EXPECT_EQ(error_of([&] { x.sum().backward(); }),
            "hook 'hook' has changed the type of value (was torch.float32 got torch.float64)");
}

TEST(TensorHooks, OnlyOnTensorsThatRequireGrad) {
  EXPECT_EQ(error_of([] { register_hook(zeros({2}), [](const Tensor& g) { return g; }); }),
            "cannot register a hook on a tensor that doesn't require gradient; call requires_grad_() first");
  EXPECT_EQ(error_of([] { register_hook(zeros({2}).requires_grad_(), nullptr); }), "register_hook: the hook is empty");
}

TEST(TensorHooks, ApplyToTheGradientsAutogradGradReturns) {
  Tensor x = full({1}, 2.0).requires_grad_();
  register_hook(x, [](const Tensor& g) { return g * 2; });
  Tensor y = x * x * x;
  // d(x^3)/dx = 3x^2 = 12, doubled by the hook; grad() fills no grad().
  std::vector<Tensor> g = autograd::grad({y.sum()}, {x}, {}, std::nullopt, /*create_graph=*/true);
  EXPECT_EQ(value(g[0]), 24.0);
  EXPECT_FALSE(x.grad().defined());
  // With create_graph the hooked gradient differentiates too: d(6x^2)/dx = 12x = 24, doubled.
  std::vector<Tensor> gg = autograd::grad({g[0].sum()}, {x});
  EXPECT_EQ(value(gg[0]), 48.0);
}

TEST(TensorHooks, ARegisteredHookSeesTheValueBeforeALaterInPlaceWrite) {
  // As in PyTorch: a hook belongs to the value the tensor had when it was registered.
  Tensor x = full({1}, 1.0).requires_grad_();
  Tensor a = x.clone();
  std::vector<double> before, after;
  register_hook(a, [&](const Tensor& g) {
    before.push_back(value(g));
    return Tensor();
  });
  a.mul_(2);
  register_hook(a, [&](const Tensor& g) {
    after.push_back(value(g));
    return Tensor();
  });
  (a * 3).sum().backward();
  EXPECT_EQ(after, std::vector<double>{3.0});   // d(3a)/da for the new a
  EXPECT_EQ(before, std::vector<double>{6.0});  // the old a: new a = 2 old a
}

TEST(RetainGrad, FillsANonLeafsGradAndAccumulates) {
  Tensor x = full({2}, 1.0).requires_grad_();
  Tensor y = x * 2;
  EXPECT_FALSE(y.retains_grad());
  y.retain_grad();
  EXPECT_TRUE(y.retains_grad());
  (y * 3).sum().backward(Tensor(), /*retain_graph=*/true);
  EXPECT_TRUE(equal(y.grad(), full({2}, 3.0)));
  EXPECT_TRUE(equal(x.grad(), full({2}, 6.0)));
  (y * 3).sum().backward();
  EXPECT_TRUE(equal(y.grad(), full({2}, 6.0)));
  // The retained gradient is its own tensor, not the one that flowed on.
  EXPECT_NE(y.grad().data_ptr(), x.grad().data_ptr());
}

TEST(RetainGrad, SeesWhatTheHooksLeftAndFollowsAnInPlaceWrite) {
  Tensor x = full({1}, 1.0).requires_grad_();
  Tensor y = x * 2;
  y.retain_grad();
  register_hook(y, [](const Tensor& g) { return g * 10; });  // registered after, runs before
  y.mul_(4);  // y's gradient is now the new value's; the hook stays with the old one
  (y * 5).sum().backward();
  EXPECT_EQ(value(y.grad()), 5.0);
  EXPECT_EQ(value(x.grad()), 5.0 * 4 * 10 * 2);
}

TEST(RetainGrad, OnALeafDoesNothingAndWithoutGradIsAnError) {
  Tensor w = full({1}, 1.0).requires_grad_();
  w.retain_grad();
  EXPECT_FALSE(w.retains_grad());
  (w * 2).sum().backward();
  EXPECT_EQ(value(w.grad()), 2.0);
  EXPECT_EQ(error_of([] { zeros({1}).retain_grad(); }), "can't retain_grad on Tensor that has requires_grad=False");
}

TEST(RetainGrad, ReadingANonLeafsGradWithoutItWarnsAsPyTorchDoes) {
  ember_test::CollectWarnings warnings;
  Tensor x = full({1}, 1.0).requires_grad_();
  Tensor y = x * 2;
  (y * 3).sum().backward();
  EXPECT_FALSE(y.grad().defined());
  ASSERT_EQ(warnings.messages().size(), 1u);
  EXPECT_EQ(
      warnings.messages()[0].rfind("The .grad attribute of a Tensor that is not a leaf Tensor is being accessed.", 0),
      0u);
  // Leaves, tensors outside autograd and retained results do not warn.
  (void)x.grad();
  (void)zeros({1}).grad();
  Tensor z = x * 2;
  z.retain_grad();
  (void)z.grad();
  EXPECT_EQ(warnings.messages().size(), 1u);
}

}  // namespace
