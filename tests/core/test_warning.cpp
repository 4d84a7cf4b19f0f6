// ember::warn and its handler: the default writes each distinct message once to stderr; an
// installed handler sees every warning and may throw.
#include <gtest/gtest.h>

#include <stdexcept>
#include <string>
#include <vector>

#include "ember/warning.h"
#include "support/collect_warnings.h"

namespace {

TEST(Warning, DefaultWritesEachDistinctMessageOnceToStderr) {
  // A message no other test issues, so that the process-wide "already shown" set is ours alone.
  const std::string message = "Warning.DefaultWritesEachDistinctMessageOnceToStderr: first";
  testing::internal::CaptureStderr();
  ember::warn(message);
  ember::warn(message);
  ember::warn(message + " and another");
  const std::string written = testing::internal::GetCapturedStderr();
  EXPECT_EQ(written, "UserWarning: " + message + "\nUserWarning: " + message + " and another\n");
}

TEST(Warning, HandlerSeesEveryWarningAndIsRestored) {
  {
    ember_test::CollectWarnings warnings;
    ember::warn("one");
    ember::warn("one");
    EXPECT_EQ(warnings.messages(), (std::vector<std::string>{"one", "one"}));
  }
  // Back to the default: written to stderr, no longer collected.
  testing::internal::CaptureStderr();
  ember::warn("Warning.HandlerSeesEveryWarningAndIsRestored: after");
  EXPECT_EQ(testing::internal::GetCapturedStderr(),
            "UserWarning: Warning.HandlerSeesEveryWarningAndIsRestored: after\n");
}

TEST(Warning, SetReturnsThePreviousHandler) {
  std::vector<std::string> first, second;
  ember::WarningHandler original = ember::set_warning_handler([&](const std::string& m) { first.push_back(m); });
  ember::WarningHandler replaced = ember::set_warning_handler([&](const std::string& m) { second.push_back(m); });
  ember::warn("x");
  ASSERT_TRUE(replaced);
  replaced("y");
  ember::set_warning_handler(std::move(original));
  EXPECT_EQ(first, std::vector<std::string>{"y"});
  EXPECT_EQ(second, std::vector<std::string>{"x"});
}

TEST(Warning, AThrowingHandlerTurnsWarningsIntoErrors) {
  ember::WarningHandler previous =
      ember::set_warning_handler([](const std::string& m) { throw std::runtime_error("warning: " + m); });
  std::string caught;
  try {
    ember::warn("z");
  } catch (const std::runtime_error& e) {
    caught = e.what();
  }
  ember::set_warning_handler(std::move(previous));
  EXPECT_EQ(caught, "warning: z");
}

}  // namespace
