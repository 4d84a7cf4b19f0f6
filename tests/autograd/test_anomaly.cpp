// Anomaly detection: the backward function that first produces a NaN is named.
#include <gtest/gtest.h>

#include <cmath>

#include "ember/ember.h"
#include "support/error_of.h"

using namespace ember;
using ember_test::error_of;

TEST(AnomalyMode, OffByDefaultAndScopedByTheGuard) {
  EXPECT_FALSE(AnomalyMode::is_enabled());
  {
    DetectAnomalyGuard guard;
    EXPECT_TRUE(AnomalyMode::is_enabled());
    {
      DetectAnomalyGuard nested;
      EXPECT_TRUE(AnomalyMode::is_enabled());
    }
    EXPECT_TRUE(AnomalyMode::is_enabled());
  }
  EXPECT_FALSE(AnomalyMode::is_enabled());
}

TEST(AnomalyMode, NamesTheBackwardFunctionThatFirstReturnsNaN) {
  // log(0) is -inf; the product with 0 hides it in the forward result's gradient, and
  // LogBackward0 then computes 0 / 0.
  auto run = [] {
    Tensor x = tensor({0.f, 2.f}).requires_grad_();
    (log(x) * 0).sum().backward();
    return x;
  };
  Tensor silent = run();
  EXPECT_TRUE(std::isnan(silent.grad()[0].item<float>()));  // without anomaly mode: a NaN gradient, no error

  DetectAnomalyGuard guard;
  const std::string message = error_of([&] { run(); });
  EXPECT_NE(message.find("Function 'LogBackward0' returned nan values in its 0th output"), std::string::npos)
      << message;
  EXPECT_NE(message.find("shape [2], torch.float32"), std::string::npos) << message;
}

TEST(AnomalyMode, NamesTheOutputIndex) {
  // x / x at x = 0: DivBackward0 gives 1/0 = inf for the numerator (not NaN) and -0*0/0 = NaN
  // for the denominator, its 1st output.
  Tensor x = tensor({0.f, 1.f}).requires_grad_();
  Tensor y = tensor({3.f, 1.f});
  DetectAnomalyGuard guard;
  const std::string message = error_of([&] { ((y * 0) / x).sum().backward(); });
  EXPECT_NE(message.find("Function 'DivBackward0' returned nan values in its 1th output"), std::string::npos)
      << message;
}

TEST(AnomalyMode, FiniteGradientsPassUnchanged) {
  Tensor x = tensor({1.f, 2.f}).requires_grad_();
  DetectAnomalyGuard guard;
  (x * x).sum().backward();
  EXPECT_FLOAT_EQ(x.grad()[1].item<float>(), 4.f);
}
