#pragma once
// EMBER_CHECK(cond, parts...): throws ember::Error with the parts streamed together, followed by
// the op being run and its inputs when an OpContext is active.
#include <array>
#include <cstdint>
#include <initializer_list>
#include <sstream>
#include <string>
#include <utility>

#include "ember/error.h"
#include "ember/small_vector.h"

namespace ember {
class Tensor;
}

namespace ember::detail {

/// Names the public op being run and its tensor inputs for the errors thrown inside it: they
/// end with a line such as "  in linear(input: float32 [2, 100] on cpu, weight: ...)". Only the
/// outermost context of a thread counts, since that is the call the user made (linear, not the
/// matmul it runs). It stores pointers only; the text is built when an error is thrown.
class OpContext {
 public:
  using Input = std::pair<const char*, const Tensor*>;
  OpContext(const char* op, std::initializer_list<Input> inputs);
  ~OpContext();
  OpContext(const OpContext&) = delete;
  OpContext& operator=(const OpContext&) = delete;

  /// "\n  in op(name: float32 [2, 3] on cpu, ...)" for the active context, "" without one.
  static std::string describe_current();

 private:
  static constexpr size_t kMaxInputs = 4;
  const char* op_;
  std::array<Input, kMaxInputs> inputs_{};
  size_t count_ = 0;
  bool outermost_ = false;
};

template <typename... Parts>
std::string concat(const Parts&... parts) {
  std::ostringstream os;
  (os << ... << parts);
  return os.str();
}

template <typename... Parts>
[[noreturn]] void fail(const Parts&... parts) {
  throw Error(concat(parts...) + OpContext::describe_current());
}

/// "[2, 3]" — how ember messages show sizes.
std::string shape_str(IntList sizes);

/// Python's repr() of a float ("-1.0", "1e-05"), for messages that match PyTorch's.
std::string python_float(double value);

}  // namespace ember::detail

#define EMBER_CHECK(cond, ...)                       \
  do {                                               \
    if (!(cond)) ::ember::detail::fail(__VA_ARGS__); \
  } while (0)
