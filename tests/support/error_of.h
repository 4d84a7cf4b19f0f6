#pragma once
// The message of the ember::Error a callable throws, or "no error": lets a test compare messages.
#include <functional>
#include <string>

#include "ember/error.h"

namespace ember_test {

/// The whole message, including the "\n  in op(inputs...)" line that errors from ops end with.
inline std::string full_error_of(const std::function<void()>& f) {
  try {
    f();
  } catch (const ember::Error& e) {
    return e.what();
  }
  return "no error";
}

/// The message without that context line: the op's own words, which tests compare with
/// PyTorch's. tests/core/test_error_context.cpp checks the context line itself.
inline std::string error_of(const std::function<void()>& f) {
  std::string message = full_error_of(f);
  if (const size_t context = message.rfind("\n  in "); context != std::string::npos) message.resize(context);
  return message;
}

}  // namespace ember_test
