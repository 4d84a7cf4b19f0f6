#pragma once
// EMBER_CHECK(cond, parts...): throws ember::Error with the parts streamed together.
#include <cstdint>
#include "ember/small_vector.h"
#include <sstream>
#include <string>

#include "ember/error.h"

namespace ember::detail {

template <typename... Parts>
std::string concat(const Parts&... parts) {
  std::ostringstream os;
  (os << ... << parts);
  return os.str();
}

template <typename... Parts>
[[noreturn]] void fail(const Parts&... parts) {
  throw Error(concat(parts...));
}

/// "[2, 3]" — how ember messages show sizes.
std::string shape_str(IntList sizes);

}  // namespace ember::detail

#define EMBER_CHECK(cond, ...)                    \
  do {                                            \
    if (!(cond)) ::ember::detail::fail(__VA_ARGS__); \
  } while (0)
