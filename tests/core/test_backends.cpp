// The switches of ember/backends.h (torch.use_deterministic_algorithms and
// torch.backends.cudnn's deterministic/benchmark/allow_tf32): PyTorch's defaults, the guards that
// set them for a scope, and what an op without a deterministic implementation does under them.
// They exist in every build, with or without CUDA, as PyTorch's do.
#include <gtest/gtest.h>

#include <string>

#include "core/determinism.h"
#include "ember/backends.h"
#include "ember/error.h"
#include "support/collect_warnings.h"
#include "support/error_of.h"

namespace {

using namespace ember;
namespace cudnn = ember::backends::cudnn;

TEST(Backends, SwitchesHavePyTorchsDefaults) {
  EXPECT_FALSE(are_deterministic_algorithms_enabled());
  EXPECT_FALSE(is_deterministic_algorithms_warn_only_enabled());
  EXPECT_FALSE(cudnn::deterministic());
  EXPECT_FALSE(cudnn::benchmark());
  EXPECT_TRUE(cudnn::allow_tf32());  // unlike the matmul switch, cuda::allow_tf32(), off by default
}

TEST(Backends, SettersAreReadBack) {
  cudnn::set_deterministic(true);
  cudnn::set_benchmark(true);
  cudnn::set_allow_tf32(false);
  EXPECT_TRUE(cudnn::deterministic());
  EXPECT_TRUE(cudnn::benchmark());
  EXPECT_FALSE(cudnn::allow_tf32());
  cudnn::set_deterministic(false);
  cudnn::set_benchmark(false);
  cudnn::set_allow_tf32(true);
  EXPECT_FALSE(cudnn::deterministic());
  EXPECT_FALSE(cudnn::benchmark());
  EXPECT_TRUE(cudnn::allow_tf32());

  use_deterministic_algorithms(true, /*warn_only=*/true);
  EXPECT_TRUE(are_deterministic_algorithms_enabled());
  EXPECT_TRUE(is_deterministic_algorithms_warn_only_enabled());
  use_deterministic_algorithms(false, /*warn_only=*/true);  // warn_only means nothing with the mode off
  EXPECT_FALSE(are_deterministic_algorithms_enabled());
  EXPECT_FALSE(is_deterministic_algorithms_warn_only_enabled());
}

TEST(Backends, FlagsGuardSetsWhatItIsGivenAndRestoresAll) {
  {
    cudnn::FlagsGuard guard({.deterministic = true, .allow_tf32 = false});
    EXPECT_TRUE(cudnn::deterministic());
    EXPECT_FALSE(cudnn::benchmark());  // not given: left as it was
    EXPECT_FALSE(cudnn::allow_tf32());
    {
      cudnn::FlagsGuard inner({.deterministic = false, .benchmark = true});
      EXPECT_FALSE(cudnn::deterministic());
      EXPECT_TRUE(cudnn::benchmark());
      EXPECT_FALSE(cudnn::allow_tf32());
      cudnn::set_allow_tf32(true);  // changed inside the scope: restored by the outer guard's value
    }
    EXPECT_TRUE(cudnn::deterministic());
    EXPECT_FALSE(cudnn::benchmark());
    EXPECT_FALSE(cudnn::allow_tf32());
  }
  EXPECT_FALSE(cudnn::deterministic());
  EXPECT_FALSE(cudnn::benchmark());
  EXPECT_TRUE(cudnn::allow_tf32());
}

TEST(Backends, DeterministicAlgorithmsGuardRestoresModeAndWarnOnly) {
  {
    DeterministicAlgorithmsGuard outer(true, /*warn_only=*/true);
    EXPECT_TRUE(are_deterministic_algorithms_enabled());
    EXPECT_TRUE(is_deterministic_algorithms_warn_only_enabled());
    {
      DeterministicAlgorithmsGuard inner(true);
      EXPECT_FALSE(is_deterministic_algorithms_warn_only_enabled());
    }
    EXPECT_TRUE(is_deterministic_algorithms_warn_only_enabled());
  }
  EXPECT_FALSE(are_deterministic_algorithms_enabled());
  EXPECT_FALSE(is_deterministic_algorithms_warn_only_enabled());
}

TEST(Backends, AnOpWithoutADeterministicImplementationRaisesNamingIt) {
  // Off: nothing happens.
  ember_test::CollectWarnings warnings;
  EXPECT_NO_THROW(detail::alert_not_deterministic("some_cuda_kernel"));
  EXPECT_TRUE(warnings.messages().empty());
  {
    DeterministicAlgorithmsGuard on(true);
    const std::string message = ember_test::error_of([] { detail::alert_not_deterministic("some_cuda_kernel"); });
    EXPECT_EQ(message.rfind("some_cuda_kernel does not have a deterministic implementation, but you set "
                            "'ember::use_deterministic_algorithms(true)'",
                            0),
              0u)
        << message;
    EXPECT_NE(message.find("warn_only=true"), std::string::npos) << message;
  }
  {
    DeterministicAlgorithmsGuard warn_only(true, /*warn_only=*/true);
    EXPECT_NO_THROW(detail::alert_not_deterministic("some_cuda_kernel"));
    ASSERT_EQ(warnings.messages().size(), 1u);
    EXPECT_NE(warnings.messages()[0].find("some_cuda_kernel does not have a deterministic implementation"),
              std::string::npos)
        << warnings.messages()[0];
  }
}

}  // namespace
