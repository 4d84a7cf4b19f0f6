// CUDA binary element-wise ops (arithmetic, comparisons, logical), add with alpha, and where.
// The math is kernels/elementwise_ops.h's, the same functors the CPU loops call (AddScaled and
// Where included); this file only picks types and launches (elementwise.cuh: 16-byte vectors on
// contiguous tensors, 32-bit index math on strided ones when it fits).
#include <type_traits>

#include "backend/cuda/cuda_backend.h"
#include "backend/cuda/elementwise.cuh"
#include "backend/op_visit.h"
#include "kernels/dtype_dispatch.h"
#include "kernels/elementwise_dispatch.h"
#include "kernels/elementwise_ops.h"

namespace ember::cuda_impl {
namespace {

/// out = f(a, b): inputs of type T, computed in C, stored as O.
template <typename T, typename C, typename O, typename F>
void binary_launch(const char* op, const TensorView& a, const TensorView& b, const TensorView& out, const F& f) {
  launch_map<O, T, T>(op, ConvertedBinary<T, C, O, F>{f}, out, a, b);
}

template <typename Op>
void run_binary(const char* op, const TensorView& a, const TensorView& b, const TensorView& out) {
  check_dtype(b.dtype, a.dtype, op, "second input");
  kernels::dispatch_all(a.dtype, op, [&]<typename T>() {
    if constexpr (!kernels::accepts_v<Op, T>) {
      fail_not_implemented(op, a.dtype);
    } else {
      using C = kernels::compute_t<T>;
      using O = std::conditional_t<std::is_same_v<std::invoke_result_t<Op, C, C>, bool>, bool, T>;
      check_dtype(out.dtype, dtype_v<O>, op, "output");
      binary_launch<T, C, O>(op, a, b, out, Op{});
    }
  });
}

}  // namespace

void CudaBackend::binary(BinaryOp op, const TensorView& a, const TensorView& b, const TensorView& out) {
  visit_op(op, [&]<typename Op>(const char* name) { run_binary<Op>(name, a, b, out); });
}

void CudaBackend::add_scaled(const TensorView& a, const TensorView& b, const Scalar& alpha, const TensorView& out) {
  kernels::check_add_scaled_dtypes(a.dtype, b.dtype, out.dtype);
  kernels::dispatch_all(out.dtype, "add", [&]<typename T>() {
    using C = kernels::compute_t<T>;
    binary_launch<T, C, T>("add", a, b, out, kernels::AddScaled<C>{alpha.to<C>()});
  });
}

void CudaBackend::where(const TensorView& cond, const TensorView& a, const TensorView& b, const TensorView& out) {
  kernels::check_where_dtypes(cond.dtype, a.dtype, b.dtype, out.dtype);
  kernels::dispatch_bits(out.dtype, "where", [&]<typename U>() {
    launch_map<U, uint8_t, U, U>("where", kernels::Where{}, out, cond, a, b);  // bool as its 0/1 byte
  });
}

}  // namespace ember::cuda_impl
