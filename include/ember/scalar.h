#pragma once
/// A single number of any dtype category: what item() returns and what ops take for `t + 2`.
#include <cstdint>
#include <type_traits>

#include "ember/half.h"

namespace ember {

class Scalar {
 public:
  enum class Kind : uint8_t { Bool, Int, Float };

  Scalar() : Scalar(int64_t{0}) {}
  Scalar(bool v) : kind_(Kind::Bool), i_(v) {}  // NOLINT: implicit like a builtin number
  template <typename T, std::enable_if_t<std::is_integral_v<T> && !std::is_same_v<T, bool>, int> = 0>
  Scalar(T v) : kind_(Kind::Int), i_(static_cast<int64_t>(v)) {}  // NOLINT
  template <typename T, std::enable_if_t<std::is_floating_point_v<T>, int> = 0>
  Scalar(T v) : kind_(Kind::Float), d_(static_cast<double>(v)) {}  // NOLINT
  Scalar(Half v) : kind_(Kind::Float), d_(static_cast<float>(v)) {}  // NOLINT
  Scalar(BFloat16 v) : kind_(Kind::Float), d_(static_cast<float>(v)) {}  // NOLINT

  Kind kind() const { return kind_; }
  bool is_floating_point() const { return kind_ == Kind::Float; }
  bool is_integral() const { return kind_ == Kind::Int; }
  bool is_bool() const { return kind_ == Kind::Bool; }

  double to_double() const { return kind_ == Kind::Float ? d_ : static_cast<double>(i_); }
  int64_t to_int64() const { return kind_ == Kind::Float ? static_cast<int64_t>(d_) : i_; }
  bool to_bool() const { return kind_ == Kind::Float ? d_ != 0.0 : i_ != 0; }

  /// Converts to any arithmetic or 16-bit float type, as a C++ cast would.
  template <typename T>
  T to() const {
    if constexpr (std::is_same_v<T, bool>) {
      return to_bool();
    } else if constexpr (std::is_integral_v<T>) {
      return static_cast<T>(to_int64());
    } else if constexpr (std::is_same_v<T, Half> || std::is_same_v<T, BFloat16>) {
      return T(static_cast<float>(to_double()));
    } else {
      return static_cast<T>(to_double());
    }
  }

 private:
  Kind kind_;
  union {
    int64_t i_;
    double d_;
  };
};

}  // namespace ember
