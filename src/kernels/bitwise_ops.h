#pragma once
// The bitwise ops (torch.bitwise_and/or/xor/not and the shifts), on bool and integer elements.
// Included by elementwise_ops.h, which defines Domain and EMBER_HD.
//
// Shifts follow PyTorch's CPU and CUDA kernels, which define every case C++ leaves undefined:
// a left shift by a negative amount or by the type's width or more gives 0; a right shift by
// such an amount gives what shifting by width - 1 gives (0 or -1, the sign filled in). Left
// shifts are formed in the unsigned type, so they wrap instead of overflowing.
#include <climits>
#include <type_traits>

namespace ember::kernels {

struct BitwiseAnd {
  static constexpr Domain domain = Domain::Integral;
  template <typename C>
  EMBER_HD constexpr C operator()(C a, C b) const {
    if constexpr (std::is_same_v<C, bool>)
      return a && b;
    else
      return static_cast<C>(a & b);
  }
};

struct BitwiseOr {
  static constexpr Domain domain = Domain::Integral;
  template <typename C>
  EMBER_HD constexpr C operator()(C a, C b) const {
    if constexpr (std::is_same_v<C, bool>)
      return a || b;
    else
      return static_cast<C>(a | b);
  }
};

struct BitwiseXor {
  static constexpr Domain domain = Domain::Integral;
  template <typename C>
  EMBER_HD constexpr C operator()(C a, C b) const {
    if constexpr (std::is_same_v<C, bool>)
      return a != b;
    else
      return static_cast<C>(a ^ b);
  }
};

struct BitwiseNot {
  static constexpr Domain domain = Domain::Integral;
  template <typename C>
  EMBER_HD constexpr C operator()(C x) const {
    if constexpr (std::is_same_v<C, bool>)
      return !x;
    else
      return static_cast<C>(~x);
  }
};

struct LeftShift {
  static constexpr Domain domain = Domain::Integer;
  template <typename C>
  EMBER_HD constexpr C operator()(C a, C b) const {
    using U = std::make_unsigned_t<C>;
    constexpr int64_t width = static_cast<int64_t>(sizeof(C) * CHAR_BIT);
    const auto amount = static_cast<int64_t>(b);
    if (amount < 0 || amount >= width) return C(0);
    return static_cast<C>(static_cast<U>(static_cast<U>(a) << amount));
  }
};

struct RightShift {
  static constexpr Domain domain = Domain::Integer;
  template <typename C>
  EMBER_HD constexpr C operator()(C a, C b) const {
    constexpr int64_t width = static_cast<int64_t>(sizeof(C) * CHAR_BIT);
    const auto amount = static_cast<int64_t>(b);
    // >> of a negative signed value is arithmetic in C++20.
    if (amount < 0 || amount >= width) return static_cast<C>(a >> (width - 1));
    return static_cast<C>(a >> amount);
  }
};

}  // namespace ember::kernels
