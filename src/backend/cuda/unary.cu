// CUDA unary element-wise ops and clamp. The math is kernels/elementwise_ops.h's, the same
// functors the CPU loops call; this file only picks types and launches (elementwise.cuh: 16-byte
// vectors on contiguous tensors, 32-bit index math on strided ones when it fits).
#include <limits>
#include <type_traits>

#include "backend/cuda/cuda_backend.h"
#include "backend/cuda/elementwise.cuh"
#include "backend/op_visit.h"
#include "kernels/dtype_dispatch.h"
#include "kernels/elementwise_ops.h"
#include "kernels/scalar_as.h"

namespace ember::cuda_impl {
namespace {

/// out = f(x): x of type T, computed in C, stored as O.
template <typename T, typename C, typename O, typename F>
void unary_launch(const char* op, const TensorView& x, const TensorView& out, const F& f) {
  launch_map<O, T>(op, ConvertedUnary<T, C, O, F>{f}, out, x);
}

template <typename Op>
void run_unary(const char* op, const TensorView& x, const TensorView& out) {
  kernels::dispatch_all(x.dtype, op, [&]<typename T>() {
    if constexpr (!kernels::accepts_v<Op, T>) {
      fail_not_implemented(op, x.dtype);
    } else {
      using C = kernels::compute_t<T>;
      using O = std::conditional_t<std::is_same_v<std::invoke_result_t<Op, C>, bool>, bool, T>;
      check_dtype(out.dtype, dtype_v<O>, op, "output");
      unary_launch<T, C, O>(op, x, out, Op{});
    }
  });
}

}  // namespace

void CudaBackend::unary(UnaryOp op, const TensorView& x, const TensorView& out) {
  visit_op(op, [&]<typename Op>(const char* name) { run_unary<Op>(name, x, out); });
}

void CudaBackend::clamp(const TensorView& x, const Scalar& lo, const Scalar& hi, bool has_lo, bool has_hi,
                        const TensorView& out) {
  check_dtype(out.dtype, x.dtype, "clamp", "output");
  kernels::dispatch_all(x.dtype, "clamp", [&]<typename T>() {
    if constexpr (!kernels::accepts_v<kernels::Clamp<T>, T>) {
      fail_not_implemented("clamp", x.dtype);
    } else {
      using C = kernels::compute_t<T>;
      const kernels::Clamp<C> bounds = kernels::clamp_bounds<T>(lo, hi, has_lo, has_hi);
      if (kmath::isnan(bounds.lo) || kmath::isnan(bounds.hi)) {
        // A NaN bound in use makes every element NaN (torch.clamp's documented behaviour).
        EMBER_CHECK(x.sizes == out.sizes, "[clamp] operand of shape ", detail::shape_str(x.sizes),
                    " was not broadcast to the output shape ", detail::shape_str(out.sizes));
        fill(out, Scalar(std::numeric_limits<double>::quiet_NaN()));
        return;
      }
      unary_launch<T, C, T>("clamp", x, out, bounds);
    }
  });
}

}  // namespace ember::cuda_impl
