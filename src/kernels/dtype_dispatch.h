#pragma once
// Turns a runtime Dtype into a compile-time element type, for the CPU loops and the CUDA
// kernels alike:
//   dispatch_all(dtype, "add", [&]<typename T>() { ... });
#include "core/check.h"
#include "ember/dtype.h"
#include "ember/half.h"

namespace ember::kernels {

// The failures below name ::ember::detail in full: kernels::detail (elementwise_ops.h) would
// otherwise hide it whenever that header comes first.

template <typename F>
decltype(auto) dispatch_all(Dtype dtype, const char* op, F&& f) {
  switch (dtype) {
    case Dtype::Bool:
      return f.template operator()<bool>();
    case Dtype::UInt8:
      return f.template operator()<uint8_t>();
    case Dtype::Int8:
      return f.template operator()<int8_t>();
    case Dtype::Int16:
      return f.template operator()<int16_t>();
    case Dtype::Int32:
      return f.template operator()<int32_t>();
    case Dtype::Int64:
      return f.template operator()<int64_t>();
    case Dtype::Float16:
      return f.template operator()<Half>();
    case Dtype::BFloat16:
      return f.template operator()<BFloat16>();
    case Dtype::Float32:
      return f.template operator()<float>();
    case Dtype::Float64:
      return f.template operator()<double>();
  }
  ::ember::detail::fail("[", op, "] unsupported dtype ", dtype_name(dtype));
}

/// Floating types only; others are an error naming the op.
template <typename F>
decltype(auto) dispatch_floating(Dtype dtype, const char* op, F&& f) {
  switch (dtype) {
    case Dtype::Float16:
      return f.template operator()<Half>();
    case Dtype::BFloat16:
      return f.template operator()<BFloat16>();
    case Dtype::Float32:
      return f.template operator()<float>();
    case Dtype::Float64:
      return f.template operator()<double>();
    default:
      break;
  }
  ::ember::detail::fail("\"", op, "\" not implemented for '", scalar_type_name(dtype), "'");
}

/// The type arithmetic on T is done in: float for the 16-bit floats, T otherwise.
template <typename T>
struct compute_type {
  using type = T;
};
template <>
struct compute_type<Half> {
  using type = float;
};
template <>
struct compute_type<BFloat16> {
  using type = float;
};
template <typename T>
using compute_t = typename compute_type<T>::type;

}  // namespace ember::kernels
