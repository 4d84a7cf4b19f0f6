#pragma once
// How scatter_reduce combines a value with the element it lands on, written once for the CPU
// loop (cpu/indexing.cpp) and the CUDA kernel (cuda/indexing.cu). Arithmetic is done in the
// compute type (float for the 16-bit floats) and rounded once, as scatter_add does; bool sums
// are logical or and bool products logical and. amax/amin propagate NaN from either side, as
// PyTorch's scatter_reduce does.
#include <type_traits>

#include "kernels/dtype_dispatch.h"
#include "kernels/kmath.h"
#include "kernels/scatter_reduce_op.h"

namespace ember::kernels {

template <ScatterReduceOp Op>
struct ScatterCombine {
  template <typename T>
  EMBER_HD void operator()(T* target, T value) const {
    using C = compute_t<T>;
    const C t = static_cast<C>(*target), v = static_cast<C>(value);
    if constexpr (Op == ScatterReduceOp::Assign) {
      *target = value;
    } else if constexpr (std::is_same_v<T, bool>) {
      if constexpr (Op == ScatterReduceOp::Sum || Op == ScatterReduceOp::Amax)
        *target = t || v;
      else
        *target = t && v;  // Prod, Amin
    } else if constexpr (Op == ScatterReduceOp::Sum) {
      *target = static_cast<T>(t + v);
    } else if constexpr (Op == ScatterReduceOp::Prod) {
      if constexpr (std::is_integral_v<C> && std::is_signed_v<C>) {
        // Formed in the unsigned type: wraps like PyTorch's instead of overflowing.
        using U = std::make_unsigned_t<C>;
        *target = static_cast<T>(static_cast<C>(static_cast<U>(t) * static_cast<U>(v)));
      } else {
        *target = static_cast<T>(t * v);
      }
    } else if constexpr (Op == ScatterReduceOp::Amax) {
      *target = static_cast<T>(kmath::isnan(v) ? v : kmath::maximum(t, v));
    } else {
      *target = static_cast<T>(kmath::isnan(v) ? v : kmath::minimum(t, v));
    }
  }
};

/// Calls f(ScatterCombine<op>{}) for the runtime `op`.
template <typename F>
void visit_scatter_reduce(ScatterReduceOp op, F&& f) {
  switch (op) {
    case ScatterReduceOp::Assign:
      return f(ScatterCombine<ScatterReduceOp::Assign>{});
    case ScatterReduceOp::Sum:
      return f(ScatterCombine<ScatterReduceOp::Sum>{});
    case ScatterReduceOp::Prod:
      return f(ScatterCombine<ScatterReduceOp::Prod>{});
    case ScatterReduceOp::Amax:
      return f(ScatterCombine<ScatterReduceOp::Amax>{});
    case ScatterReduceOp::Amin:
      return f(ScatterCombine<ScatterReduceOp::Amin>{});
  }
}

}  // namespace ember::kernels
