#pragma once
// What the CPU and CUDA backends' add_scaled and where share besides their math
// (kernels/elementwise_ops.h's AddScaled and Where): the dtypes each accepts, with one message,
// and where's dispatch on the element's width. Host only.
#include <cstdint>

#include "core/check.h"
#include "ember/dtype.h"

namespace ember::kernels {

/// Fails with "[op] what has dtype X, expected Y" unless actual == expected.
inline void expect_dtype(Dtype actual, Dtype expected, const char* op, const char* what) {
  if (actual != expected) [[unlikely]] {
    ::ember::detail::fail("[", op, "] ", what, " has dtype ", dtype_name(actual), ", expected ", dtype_name(expected));
  }
}

/// add_scaled(a, b, alpha, out): a, b and out of one dtype (the front end promotes first).
inline void check_add_scaled_dtypes(Dtype a, Dtype b, Dtype out) {
  expect_dtype(a, out, "add", "first input");
  expect_dtype(b, out, "add", "second input");
}

/// where(cond, a, b, out): a bool condition, a, b and out of one dtype.
inline void check_where_dtypes(Dtype cond, Dtype a, Dtype b, Dtype out) {
  expect_dtype(cond, Dtype::Bool, "where", "condition");
  expect_dtype(a, out, "where", "first input");
  expect_dtype(b, out, "where", "second input");
}

/// Calls f.template operator()<U>() with U the unsigned integer of dtype's width, for ops that
/// move elements without looking at them (where).
template <typename F>
decltype(auto) dispatch_bits(Dtype dtype, const char* op, F&& f) {
  switch (element_size(dtype)) {
    case 1:
      return f.template operator()<uint8_t>();
    case 2:
      return f.template operator()<uint16_t>();
    case 4:
      return f.template operator()<uint32_t>();
    case 8:
      return f.template operator()<uint64_t>();
    default:
      break;
  }
  ::ember::detail::fail("[", op, "] unsupported dtype ", dtype_name(dtype));
}

}  // namespace ember::kernels
