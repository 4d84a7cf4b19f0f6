#pragma once
// The message of the ember::Error a callable throws, or "no error": lets a test compare messages.
#include <functional>
#include <string>

#include "ember/error.h"

namespace ember_test {

inline std::string error_of(const std::function<void()>& f) {
  try {
    f();
  } catch (const ember::Error& e) {
    return e.what();
  }
  return "no error";
}

}  // namespace ember_test
