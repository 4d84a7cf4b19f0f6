// CUDA binary element-wise ops (arithmetic, comparisons, logical), add with alpha, and where.
// The math is kernels/elementwise_ops.h's, the same functors the CPU loops call.
#include <type_traits>

#include "backend/cuda/cuda_backend.h"
#include "backend/cuda/elementwise.cuh"
#include "kernels/dtype_dispatch.h"
#include "kernels/elementwise_ops.h"

namespace ember::cuda_impl {
namespace {

using kernels::convert;

/// out = f(a, b): inputs of type T, computed in C, stored as O.
template <typename T, typename C, typename O, typename F>
struct BinaryBody {
  O* out;
  const T* a;
  const T* b;
  F f;
  __device__ void operator()(const Offsets<3>& o) const {
    out[o[0]] = convert<O>(f(convert<C>(a[o[1]]), convert<C>(b[o[2]])));
  }
};

template <typename T, typename C, typename O, typename F>
void binary_launch(const char* op, const TensorView& a, const TensorView& b, const TensorView& out, const F& f) {
  launch_elementwise<3>(op, {&out, &a, &b},
                        BinaryBody<T, C, O, F>{out.ptr<O>(), a.ptr<const T>(), b.ptr<const T>(), f});
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

/// where() moves whole elements, so an unsigned type of the element's width serves every dtype.
template <typename U>
struct WhereBody {
  U* out;
  const uint8_t* cond;  // bool elements are stored as 0 / 1 bytes
  const U* a;
  const U* b;
  __device__ void operator()(const Offsets<4>& o) const { out[o[0]] = cond[o[1]] ? a[o[2]] : b[o[3]]; }
};

template <typename U>
void where_launch(const TensorView& cond, const TensorView& a, const TensorView& b, const TensorView& out) {
  launch_elementwise<4>("where", {&out, &cond, &a, &b},
                        WhereBody<U>{out.ptr<U>(), cond.ptr<const uint8_t>(), a.ptr<const U>(), b.ptr<const U>()});
}

}  // namespace

void CudaBackend::binary(BinaryOp op, const TensorView& a, const TensorView& b, const TensorView& out) {
  switch (op) {
#define EMBER_CASE(Name, str) \
  case BinaryOp::Name:        \
    return run_binary<kernels::Name>(str, a, b, out);
    EMBER_BINARY_OPS(EMBER_CASE)
#undef EMBER_CASE
  }
  detail::fail("[binary] unknown op ", static_cast<int>(op));
}

void CudaBackend::add_scaled(const TensorView& a, const TensorView& b, const Scalar& alpha, const TensorView& out) {
  check_dtype(a.dtype, out.dtype, "add", "first input");
  check_dtype(b.dtype, out.dtype, "add", "second input");
  kernels::dispatch_all(out.dtype, "add", [&]<typename T>() {
    using C = kernels::compute_t<T>;
    binary_launch<T, C, T>("add", a, b, out, kernels::AddScaled<C>{alpha.to<C>()});
  });
}

void CudaBackend::where(const TensorView& cond, const TensorView& a, const TensorView& b, const TensorView& out) {
  check_dtype(cond.dtype, kBool, "where", "condition");
  check_dtype(a.dtype, out.dtype, "where", "first input");
  check_dtype(b.dtype, out.dtype, "where", "second input");
  switch (element_size(out.dtype)) {
    case 1:
      return where_launch<uint8_t>(cond, a, b, out);
    case 2:
      return where_launch<uint16_t>(cond, a, b, out);
    case 4:
      return where_launch<uint32_t>(cond, a, b, out);
    case 8:
      return where_launch<uint64_t>(cond, a, b, out);
    default:
      detail::fail("[where] unsupported dtype ", dtype_name(out.dtype));
  }
}

}  // namespace ember::cuda_impl
