// CPU element-wise kernels of one operand: the unary ops and clamp (elementwise_loop.h loops;
// the math is kernels/elementwise_ops.h, shared with CUDA's unary.cu).
#include <limits>

#include "backend/cpu/cpu_backend.h"
#include "backend/cpu/elementwise_loop.h"
#include "backend/op_visit.h"
#include "kernels/elementwise_dispatch.h"
#include "kernels/scalar_as.h"

namespace ember::cpu {
namespace {

using namespace elementwise;

template <typename Op>
void run_unary(const char* op, const TensorView& x, const TensorView& out) {
  dispatch_all(x.dtype, op, [&]<typename T>() {
    if constexpr (!kernels::accepts_v<Op, T>) {
      fail_not_implemented(op, x.dtype);
    } else {
      using C = compute_t<T>;
      using O = output_t<Op, T, C>;
      check_dtype(out.dtype, dtype_v<O>, op, "output");
      unary_loop<T, C, O>(op, x, out, Op{});
    }
  });
}

}  // namespace

void CpuBackend::unary(UnaryOp op, const TensorView& x, const TensorView& out) {
  visit_op(op, [&]<typename Op>(const char* name) { run_unary<Op>(name, x, out); });
}

void CpuBackend::clamp(const TensorView& x, const Scalar& lo, const Scalar& hi, bool has_lo, bool has_hi,
                       const TensorView& out) {
  check_dtype(out.dtype, x.dtype, "clamp", "output");
  dispatch_all(x.dtype, "clamp", [&]<typename T>() {
    if constexpr (!kernels::accepts_v<kernels::Clamp<T>, T>) {
      fail_not_implemented("clamp", x.dtype);
    } else {
      using C = compute_t<T>;
      const kernels::Clamp<C> bounds = kernels::clamp_bounds<T>(lo, hi, has_lo, has_hi);
      if (kmath::isnan(bounds.lo) || kmath::isnan(bounds.hi)) {
        // A NaN bound in use makes every element NaN (torch.clamp's documented behaviour).
        check_shape("clamp", x, out);
        fill(out, Scalar(std::numeric_limits<double>::quiet_NaN()));
        return;
      }
      unary_loop<T, C, T>("clamp", x, out, bounds);
    }
  });
}

}  // namespace ember::cpu
