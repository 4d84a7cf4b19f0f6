// The convolution, pooling and normalisation ops of ops.h (ember::conv2d, max_pool2d,
// batch_norm, ...) and the in-place random fills behind nn::init. nn::functional's functions are
// thin wrappers over these, so the numerics, gradients and messages are tested through them in
// tests/nn/; here: the ops give the same results, autograd nodes and error contexts when called
// directly, and the fills draw what the random factories draw.
#include <gtest/gtest.h>

#include <tuple>
#include <vector>

#include "ember/ember.h"
#include "ops/random.h"
#include "support/error_of.h"

namespace {

using namespace ember;
namespace F = ember::nn::functional;
using ember_test::full_error_of;

TEST(ConvPoolNormOps, ConvolutionsMatchFunctional) {
  manual_seed(1);
  const Tensor x = randn({2, 4, 9, 9});
  const Tensor w = randn({6, 2, 3, 3}).requires_grad_();
  const Tensor b = randn({6});
  const Tensor y = ember::conv2d(x, w, b, {2}, {1, 0}, {1}, 2);
  EXPECT_TRUE(equal(y, F::conv2d(x, w, b, {2}, {1, 0}, {1}, 2)));
  EXPECT_EQ(y.grad_fn_name(), "ConvolutionBackward0");

  const Tensor x1 = randn({2, 4, 11});
  const Tensor w1 = randn({3, 4, 5});
  EXPECT_TRUE(equal(ember::conv1d(x1, w1, Tensor(), 2, 1), F::conv1d(x1, w1, Tensor(), 2, 1)));
  EXPECT_TRUE(equal(ember::conv1d(x1[0], w1), F::conv1d(x1[0], w1)));
}

TEST(ConvPoolNormOps, PoolingMatchesFunctional) {
  manual_seed(2);
  const Tensor x = randn({2, 3, 7, 8}).requires_grad_();
  const Tensor max = ember::max_pool2d(x, {3}, {2}, {1});
  EXPECT_TRUE(equal(max, F::max_pool2d(x, {3}, {2}, {1})));
  EXPECT_EQ(max.grad_fn_name(), "MaxPool2DWithIndicesBackward0");
  const auto [values, indices] = ember::max_pool2d_with_indices(x, {2}, {}, {0}, {1}, true);
  const auto [f_values, f_indices] = F::max_pool2d_with_indices(x, {2}, {}, {0}, {1}, true);
  EXPECT_TRUE(equal(values, f_values));
  EXPECT_TRUE(equal(indices, f_indices));
  const Tensor avg = ember::avg_pool2d(x, {3, 2}, {1}, {1}, false, false);
  EXPECT_TRUE(equal(avg, F::avg_pool2d(x, {3, 2}, {1}, {1}, false, false)));
  EXPECT_EQ(avg.grad_fn_name(), "AvgPool2DBackward0");
  const Tensor adaptive = ember::adaptive_avg_pool2d(x, {3, 5});
  EXPECT_TRUE(equal(adaptive, F::adaptive_avg_pool2d(x, {3, 5})));
  EXPECT_EQ(adaptive.grad_fn_name(), "AdaptiveAvgPool2DBackward0");
}

TEST(ConvPoolNormOps, NormalisationsMatchFunctional) {
  manual_seed(3);
  const Tensor x = randn({4, 6, 3, 3}).requires_grad_();
  const Tensor w = randn({6}), b = randn({6});
  Tensor mean_a = zeros({6}), var_a = ones({6}), mean_b = zeros({6}), var_b = ones({6});
  const Tensor y = ember::batch_norm(x, mean_a, var_a, w, b, /*training=*/true, 0.2);
  EXPECT_TRUE(equal(y, F::batch_norm(x, mean_b, var_b, w, b, /*training=*/true, 0.2)));
  EXPECT_TRUE(equal(mean_a, mean_b));
  EXPECT_TRUE(equal(var_a, var_b));
  EXPECT_EQ(y.grad_fn_name(), "NativeBatchNormBackward0");
  EXPECT_TRUE(equal(ember::batch_norm(x, mean_a, var_a), F::batch_norm(x, mean_a, var_a)));
  EXPECT_TRUE(equal(ember::group_norm(x, 3, w, b), F::group_norm(x, 3, w, b)));
}

TEST(ConvPoolNormOps, ErrorsNameTheOpCalled) {
  EXPECT_EQ(full_error_of([] {
              ember::conv2d(zeros({1, 1, 5, 5}), zeros({2, 3, 3, 3}));
            }),
            full_error_of([] {
              F::conv2d(zeros({1, 1, 5, 5}), zeros({2, 3, 3, 3}));
            }));
  EXPECT_NE(full_error_of([] {
              ember::conv2d(zeros({1, 1, 5, 5}), zeros({2, 3, 3, 3}));
            }).find("\n  in conv2d("),
            std::string::npos);
  EXPECT_NE(full_error_of([] {
              ember::avg_pool2d(zeros({1, 1, 1, 1}), {2});
            }).find("\n  in avg_pool2d("),
            std::string::npos);
  EXPECT_NE(full_error_of([] {
              ember::batch_norm(zeros({2, 4, 3}), zeros({3}), ones({3}));
            }).find("\n  in batch_norm("),
            std::string::npos);
}

TEST(ConvPoolNormOps, RandomFillsDrawWhatTheFactoriesDraw) {
  Tensor u = empty({3, 4}).t();  // any layout: the draws land in logical order
  manual_seed(7);
  ember::detail::uniform_(u, -2.0, 2.0);
  manual_seed(7);
  EXPECT_TRUE(allclose(u, rand({4, 3}) * 4.0 - 2.0));

  Tensor n = empty({5});
  manual_seed(8);
  EXPECT_TRUE(ember::detail::normal_(n, 1.0, 0.5).is_same(n));
  manual_seed(8);
  EXPECT_TRUE(allclose(n, randn({5}) * 0.5 + 1.0));

  EXPECT_EQ(ember_test::error_of([] { ember::detail::normal_(empty({2}), 0.0, -1.0); }),
            "normal expects std >= 0.0, but found std -1");
  EXPECT_EQ(ember_test::error_of([] { ember::detail::uniform_(zeros({2}, kInt64)); }),
            "uniform_ expects a floating-point tensor, got Long");
}

}  // namespace
