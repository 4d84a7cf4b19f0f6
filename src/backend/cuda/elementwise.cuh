#pragma once
// The element-wise launchers behind copy, fill, unary, binary, where and clamp on CUDA.
//
// Operand 0 is the output; the inputs arrive with its sizes (broadcast dims have stride 0). The
// shared shape is simplified by kernels::StridedIndexer (the same code the CPU loops use), in the
// output's memory order, and elementwise_plan.h picks the path: contiguous (16-byte vectors, no
// index math) or strided (32-bit offsets; a shape too large for them is cut into pieces that
// fit, one launch each). The kernels below only hand blockIdx/threadIdx to elementwise_plan.h's
// bodies, which the tests run on the host.
//
// Two interfaces:
//  * launch_map<Out, In...>(op, f, out, in...): out = f(in...) with f a typed EMBER_HD functor
//    (ConvertedUnary/ConvertedBinary around kernels/elementwise_ops.h's math, kernels::Where).
//    The launcher does the loads and stores, so it can vectorise them;
//  * launch_elementwise<N>(op, views, body): body(offsets) loads, computes and stores one element
//    itself (copy and fill); the strided path only.
#include <array>
#include <cstdint>

#include "backend/backend.h"
#include "backend/cuda/elementwise_plan.h"
#include "backend/cuda/launch.h"
#include "backend/cuda/runtime.h"
#include "core/check.h"
#include "kernels/indexer.h"
#include "kernels/indexer32.h"

namespace ember::cuda_impl {

template <int N>
using Indexer = kernels::StridedIndexer<N>;
template <int N>
using Offsets = typename Indexer<N>::Offsets;

template <int V, typename M>
__global__ void __launch_bounds__(kBlockThreads) contiguous_kernel(M m, int64_t n) {
  contiguous_thread<V>(m, n, blockIdx.x, static_cast<int>(threadIdx.x), gridDim.x, static_cast<int>(blockDim.x));
}

template <int N, typename M>
__global__ void __launch_bounds__(kBlockThreads)
    strided_kernel(kernels::StridedIndexer32<N> ix, Offsets<N> base, M m, uint32_t n) {
  strided_thread<N>(ix, base, m, n, blockIdx.x, static_cast<int>(threadIdx.x), gridDim.x, static_cast<int>(blockDim.x));
}

template <int N, typename Body>
__global__ void __launch_bounds__(kBlockThreads)
    body_kernel(kernels::StridedIndexer32<N> ix, Offsets<N> base, Body body, uint32_t n) {
  body_thread<N>(ix, base, body, n, blockIdx.x, static_cast<int>(threadIdx.x), gridDim.x, static_cast<int>(blockDim.x));
}

/// Calls launch(ix32, base, n, grid) for each piece of `ix` that 32-bit offsets can walk (one
/// piece, base 0, unless ix has more than 2^31 - 1 elements or offsets).
template <int N, typename Launch>
void for_each_piece(const Indexer<N>& ix, Launch&& launch) {
  split_for_32bit(ix, Offsets<N>{}, [&](const Indexer<N>& part, const Offsets<N>& base) {
    const int64_t n = part.numel();
    if (n > 0) launch(kernels::StridedIndexer32<N>(part), base, static_cast<uint32_t>(n), grid_for(n, kStridedItems));
  });
}

/// The simplified shape of `views` (views[0] the output), after checking the inputs were
/// broadcast to the output's sizes. False when there is nothing to do (no elements).
template <int N>
bool build_indexer(const char* op, const std::array<const TensorView*, N>& views, Indexer<N>& ix) {
  const TensorView& out = *views[0];
  for (int k = 1; k < N; ++k) {
    EMBER_CHECK(views[k]->sizes == out.sizes, "[", op, "] operand of shape ", detail::shape_str(views[k]->sizes),
                " was not broadcast to the output shape ", detail::shape_str(out.sizes));
  }
  if (out.numel() == 0) return false;
  const int64_t* strides[N];
  for (int k = 0; k < N; ++k) strides[k] = views[k]->strides.data();
  EMBER_CHECK(ix.build(out.ndim(), out.sizes.data(), strides, /*memory_order=*/true), "[", op,
              "] too many non-mergeable dimensions in shape ", detail::shape_str(out.sizes));
  return true;
}

/// Runs body(offsets) for every element of views[0]'s shape on its device's current stream.
template <int N, typename Body>
void launch_elementwise(const char* op, const std::array<const TensorView*, N>& views, const Body& body) {
  Indexer<N> ix;
  if (!build_indexer<N>(op, views, ix)) return;
  const int device = views[0]->device_index;
  DeviceGuard guard(device);
  const cudaStream_t stream = current_stream(device);
  for_each_piece<N>(ix, [&](const kernels::StridedIndexer32<N>& ix32, const Offsets<N>& base, uint32_t n, Launch1d l) {
    body_kernel<N><<<l.blocks, l.threads, 0, stream>>>(ix32, base, body, n);
    check_launch(op);
  });
}

/// out = f(in...) for every element of out's shape, on out's device's current stream. Out and
/// In... are the element types of out and the inputs (each view's dtype must match).
template <typename Out, typename... In, typename F, typename... Views>
void launch_map(const char* op, const F& f, const TensorView& out, const Views&... in) {
  static_assert(sizeof...(In) == sizeof...(Views), "one element type per input view");
  using M = MapArgs<F, Out, In...>;
  constexpr int N = M::N;
  const std::array<const TensorView*, N> views{&out, &in...};
  Indexer<N> ix;
  if (!build_indexer<N>(op, views, ix)) return;
  const int elem_size[N] = {static_cast<int>(sizeof(Out)), static_cast<int>(sizeof(In))...};
  uintptr_t addr[N];
  for (int k = 0; k < N; ++k) addr[k] = reinterpret_cast<uintptr_t>(views[k]->data);
  const ElementwisePlan<N> plan = plan_elementwise(ix, elem_size, addr, M::kMaxVec);
  M m{f, out.ptr<Out>(), {static_cast<const void*>(in.data)...}, 0};
  for (int k = 1; k < N && plan.path == ElementwisePath::Contiguous; ++k) {
    if (plan.flat[k] == 0) m.broadcast |= 1u << (k - 1);
  }
  const int device = out.device_index;
  DeviceGuard guard(device);
  const cudaStream_t stream = current_stream(device);
  if (plan.path == ElementwisePath::Contiguous) {
    static_assert(M::kMaxVec > 1, "every element type is at most 8 bytes");
    const Launch1d l = plan.launch;
    contiguous_kernel<M::kMaxVec, M><<<l.blocks, l.threads, 0, stream>>>(m, plan.n);
    check_launch(op);
    return;
  }
  for_each_piece<N>(ix, [&](const kernels::StridedIndexer32<N>& ix32, const Offsets<N>& base, uint32_t n, Launch1d l) {
    strided_kernel<N, M><<<l.blocks, l.threads, 0, stream>>>(ix32, base, m, n);
    check_launch(op);
  });
}

[[noreturn]] inline void fail_dtype(const char* op, const char* what, Dtype actual, Dtype expected) {
  detail::fail("[", op, "] ", what, " has dtype ", dtype_name(actual), ", expected ", dtype_name(expected));
}
inline void check_dtype(Dtype actual, Dtype expected, const char* op, const char* what) {
  if (actual != expected) fail_dtype(op, what, actual, expected);
}
[[noreturn]] inline void fail_not_implemented(const char* op, Dtype dtype) {
  detail::fail("\"", op, "\" not implemented for '", scalar_type_name(dtype), "'");
}

}  // namespace ember::cuda_impl
