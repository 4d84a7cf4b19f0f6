#pragma once
// The steps of the scan family (cumsum, cumprod, logcumsumexp, cummax, cummin), written once for
// the CPU (cpu/scan.cpp) and CUDA (cuda/scan.cu) kernels with PyTorch's rules.
//
// The running value is kept in an accumulation type A: on the CPU it is PyTorch's CPU
// accumulation type (double for float32 and float64, float for the 16-bit floats, int64 for
// integers), so float32 sums and products round as PyTorch's do, once per output; CUDA keeps
// the compute type (float for float32), as PyTorch's CUDA kernels do.
#include <cstdint>
#include <limits>
#include <type_traits>

#include "kernels/dtype_dispatch.h"
#include "kernels/kmath.h"

namespace ember::kernels {

/// The CPU's accumulation type for elements of type T (bool counts as an integer).
template <typename T>
using scan_host_acc_t = std::conditional_t<std::is_same_v<T, float>, double,
                                           std::conditional_t<std::is_integral_v<T>, int64_t, compute_t<T>>>;
/// CUDA's: the compute type for floating elements.
template <typename T>
using scan_device_acc_t = std::conditional_t<std::is_integral_v<T>, int64_t, compute_t<T>>;

/// Integer sums and products wrap (two's complement), formed in the unsigned type.
template <typename A>
EMBER_HD constexpr A wrapping_add(A a, A b) {
  if constexpr (std::is_integral_v<A> && std::is_signed_v<A>) {
    using U = std::make_unsigned_t<A>;
    return static_cast<A>(static_cast<U>(a) + static_cast<U>(b));
  } else {
    return a + b;
  }
}
template <typename A>
EMBER_HD constexpr A wrapping_mul(A a, A b) {
  if constexpr (std::is_integral_v<A> && std::is_signed_v<A>) {
    using U = std::make_unsigned_t<A>;
    return static_cast<A>(static_cast<U>(a) * static_cast<U>(b));
  } else {
    return a * b;
  }
}

template <typename A>
struct CumSum {
  EMBER_HD static constexpr A init() { return A(0); }
  EMBER_HD A operator()(A running, A x) const { return wrapping_add(running, x); }
};

template <typename A>
struct CumProd {
  EMBER_HD static constexpr A init() { return A(1); }
  EMBER_HD A operator()(A running, A x) const { return wrapping_mul(running, x); }
};

/// log(exp(running) + exp(x)) as PyTorch's logcumsumexp forms it: log1p(exp(min - max)) + max,
/// NaN propagating, and x itself when both are the same infinity (where min - max is NaN).
template <typename A>
struct LogCumSumExp {
  EMBER_HD static constexpr A init() { return -std::numeric_limits<A>::infinity(); }
  EMBER_HD A operator()(A running, A x) const {
    const A lo = kmath::isnan(running) ? running : (running < x ? running : x);
    const A hi = kmath::isnan(running) ? running : (x < running ? running : x);
    if (lo != hi || (lo - lo) == A(0)) return kmath::log1p(kmath::exp(lo - hi)) + hi;  // lo - lo: finite test
    return x;
  }
};

/// Whether element x takes over as the running maximum (cummax): a NaN always does and then
/// stays (nothing compares >= NaN); ties move to the later element, as in PyTorch.
template <typename C>
EMBER_HD constexpr bool cummax_takes(C x, C current) {
  return kmath::isnan(x) || (!kmath::isnan(current) && x >= current);
}
template <typename C>
EMBER_HD constexpr bool cummin_takes(C x, C current) {
  return kmath::isnan(x) || (!kmath::isnan(current) && x <= current);
}

}  // namespace ember::kernels
