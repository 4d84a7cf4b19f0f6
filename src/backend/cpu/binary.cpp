// CPU element-wise kernels of two or three operands: the binary ops, add_scaled and where
// (elementwise_loop.h loops; the math is kernels/elementwise_ops.h, shared with CUDA's binary.cu).
#include <cstdint>

#include "backend/cpu/cpu_backend.h"
#include "backend/cpu/elementwise_loop.h"
#include "backend/op_visit.h"
#include "kernels/elementwise_dispatch.h"
#include "kernels/scalar_as.h"

namespace ember::cpu {
namespace {

using namespace elementwise;

template <typename Op>
void run_binary(const char* op, const TensorView& a, const TensorView& b, const TensorView& out) {
  check_dtype(b.dtype, a.dtype, op, "second input");
  dispatch_all(a.dtype, op, [&]<typename T>() {
    if constexpr (!kernels::accepts_v<Op, T>) {
      fail_not_implemented(op, a.dtype);
    } else {
      using C = compute_t<T>;
      using O = output_t<Op, T, C, C>;
      check_dtype(out.dtype, dtype_v<O>, op, "output");
      binary_loop<T, C, O>(op, a, b, out, Op{});
    }
  });
}

/// where() moves whole elements, so it only needs an unsigned type of the element's width; the
/// per-element choice is kernels::Where, as on CUDA.
template <typename U>
void where_loop(const TensorView& cond, const TensorView& a, const TensorView& b, const TensorView& out) {
  const auto* cp = cond.ptr<const uint8_t>();  // bool elements are stored as 0 / 1 bytes
  const U* ap = a.ptr<const U>();
  const U* bp = b.ptr<const U>();
  U* op = out.ptr<U>();
  constexpr kernels::Where where{};
  for_each_element<4>("where", {&out, &cond, &a, &b}, [=](const int64_t* off, const int64_t* st, int64_t n) {
    U* o = op + off[0];
    const uint8_t* c = cp + off[1];
    const U* x = ap + off[2];
    const U* y = bp + off[3];
    if (st[0] == 1 && st[1] == 1 && st[2] == 1 && st[3] == 1) {
      for (int64_t i = 0; i < n; ++i) o[i] = where(c[i], x[i], y[i]);
    } else if (st[0] == 1 && st[1] == 1 && st[2] == 1 && st[3] == 0) {
      const U yv = y[0];
      for (int64_t i = 0; i < n; ++i) o[i] = where(c[i], x[i], yv);
    } else if (st[0] == 1 && st[1] == 1 && st[2] == 0 && st[3] == 1) {
      const U xv = x[0];
      for (int64_t i = 0; i < n; ++i) o[i] = where(c[i], xv, y[i]);
    } else {
      for (int64_t i = 0; i < n; ++i) o[i * st[0]] = where(c[i * st[1]], x[i * st[2]], y[i * st[3]]);
    }
  });
}

}  // namespace

void CpuBackend::binary(BinaryOp op, const TensorView& a, const TensorView& b, const TensorView& out) {
  visit_op(op, [&]<typename Op>(const char* name) { run_binary<Op>(name, a, b, out); });
}

void CpuBackend::add_scaled(const TensorView& a, const TensorView& b, const Scalar& alpha, const TensorView& out) {
  kernels::check_add_scaled_dtypes(a.dtype, b.dtype, out.dtype);
  dispatch_all(out.dtype, "add", [&]<typename T>() {
    using C = compute_t<T>;
    binary_loop<T, C, T>("add", a, b, out, kernels::AddScaled<C>{alpha.to<C>()});
  });
}

void CpuBackend::where(const TensorView& cond, const TensorView& a, const TensorView& b, const TensorView& out) {
  kernels::check_where_dtypes(cond.dtype, a.dtype, b.dtype, out.dtype);
  kernels::dispatch_bits(out.dtype, "where", [&]<typename U>() { where_loop<U>(cond, a, b, out); });
}

}  // namespace ember::cpu
