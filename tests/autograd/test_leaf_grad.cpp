// How a leaf's .grad is formed: taken over from the backward pass when nothing else holds it (no
// copy per parameter per step), copied when something does, and laid out like PyTorch's.
#include <gtest/gtest.h>

#include "ember/ember.h"

namespace ember {
namespace {

TEST(LeafGrad, LinearWeightGradIsContiguousAndRight) {
  manual_seed(3);
  nn::Linear layer(5, 4);
  const Tensor x = randn({3, 5});
  layer.forward(x).sum().backward();
  const Tensor w_grad = layer.weight.grad();
  // PyTorch: weight.grad of a Linear is contiguous (addmm computes it in weight.t()'s layout).
  EXPECT_TRUE(w_grad.is_contiguous());
  // d(sum(x W^T + b))/dW = ones[3,4]^T @ x: every row is the column sums of x.
  const Tensor expected = x.sum(std::vector<int64_t>{0}, true).expand({4, 5});
  EXPECT_TRUE(allclose(w_grad, expected, 1e-6, 1e-6)) << w_grad << "\n" << expected;
  EXPECT_TRUE(equal(layer.bias.grad(), full({4}, 3.0)));
}

TEST(LeafGrad, TransposedOperandGradientsMatchThePlainOnes) {
  // mm computes the gradient of an operand stored transposed in that layout; the values must be
  // those of the plain computation (to rounding), for either operand and for vector operands.
  manual_seed(5);
  const Tensor a0 = randn({6, 7}), b0 = randn({7, 3}), v0 = randn({7});
  auto grads = [&](bool transposed) {
    Tensor a = (transposed ? a0.t().contiguous().t() : a0.clone()).requires_grad_(true);
    Tensor b = (transposed ? b0.t().contiguous().t() : b0.clone()).requires_grad_(true);
    Tensor v = v0.clone().requires_grad_(true);
    (sin(matmul(a, b)).sum() + cos(matmul(a, v)).sum() + exp(matmul(v, b)).sum()).backward();
    return std::vector<Tensor>{a.grad(), b.grad(), v.grad()};
  };
  const std::vector<Tensor> plain = grads(false), transposed = grads(true);
  for (size_t i = 0; i < plain.size(); ++i) {
    EXPECT_TRUE(allclose(plain[i], transposed[i], 1e-5, 1e-6)) << i << "\n" << plain[i] << "\n" << transposed[i];
  }
}

TEST(LeafGrad, AGradientHeldElsewhereIsCopiedNotShared) {
  // The gradient flowing into x is `g` itself (y = x + 0 passes it through); g stays the user's,
  // so x.grad must be a copy that later in-place changes to g do not reach.
  const Tensor x = zeros({3}).requires_grad_(true);
  const Tensor y = x + 0.0;
  Tensor g = full({3}, 2.0);
  y.backward(g);
  g.fill_(7.0);
  EXPECT_TRUE(equal(x.grad(), full({3}, 2.0))) << x.grad();
}

TEST(LeafGrad, AccumulatesAcrossBackwardCalls) {
  nn::Linear layer(2, 2);
  const Tensor x = ones({1, 2});
  layer.forward(x).sum().backward();
  const Tensor first = layer.weight.grad().clone();
  layer.forward(x).sum().backward();
  EXPECT_TRUE(equal(layer.weight.grad(), first * 2.0));
}

}  // namespace
}  // namespace ember
