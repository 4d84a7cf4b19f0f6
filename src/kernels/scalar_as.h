#pragma once
// A Scalar as an element of type T, converted like an element of the Scalar's own kind would be
// (a bool as bool, an integer as int64, a float as double), so fill(Scalar) gives what copying a
// one-element tensor of that kind would. Host code, shared by the backends.
#include "ember/scalar.h"
#include "kernels/elementwise_ops.h"

namespace ember::kernels {

template <typename T>
T scalar_as(const Scalar& value) {
  switch (value.kind()) {
    case Scalar::Kind::Bool:
      return convert<T>(value.to_bool());
    case Scalar::Kind::Int:
      return convert<T>(value.to_int64());
    case Scalar::Kind::Float:
      break;
  }
  return convert<T>(value.to_double());
}

}  // namespace ember::kernels
