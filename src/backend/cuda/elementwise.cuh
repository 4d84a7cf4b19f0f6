#pragma once
// The element-wise launchers behind copy, fill, unary, binary, where and clamp on CUDA.
//
// Operand 0 is the output; the inputs arrive with its sizes (broadcast dims have stride 0). The
// shared shape is simplified by kernels::StridedIndexer (the same code the CPU loops use), in the
// output's memory order, and elementwise_plan.h picks the path: contiguous (no index math, 16-byte
// vectors when aligned), strided with 32-bit offsets, or strided with 64-bit offsets. The kernels
// below only hand blockIdx/threadIdx to elementwise_plan.h's bodies, which the tests run on the
// host.
//
// Two interfaces:
//  * launch_map<Out, In...>(op, f, out, in...): out = f(in...) with f a typed EMBER_HD functor
//    (ConvertedUnary/ConvertedBinary around kernels/elementwise_ops.h's math, kernels::Where).
//    The launcher does the loads and stores, so it can vectorise them;
//  * launch_elementwise<N>(op, views, body): body(offsets) loads, computes and stores one element
//    itself (copy and fill); 32- or 64-bit offsets, no vectors.
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

template <typename Index, typename Ix, typename M>
__global__ void __launch_bounds__(kBlockThreads) strided_kernel(Ix ix, M m, Index n) {
  strided_thread<Index>(ix, m, n, static_cast<Index>(blockIdx.x), static_cast<int>(threadIdx.x),
                        static_cast<Index>(gridDim.x), static_cast<int>(blockDim.x));
}

template <typename Index, int N, typename Ix, typename Body>
__global__ void __launch_bounds__(kBlockThreads) body_kernel(Ix ix, Body body, Index n) {
  body_thread<Index, N>(ix, body, n, static_cast<Index>(blockIdx.x), static_cast<int>(threadIdx.x),
                        static_cast<Index>(gridDim.x), static_cast<int>(blockDim.x));
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
  int elem_size[N];
  uintptr_t addr[N];
  for (int k = 0; k < N; ++k) {
    elem_size[k] = static_cast<int>(element_size(views[k]->dtype));
    addr[k] = reinterpret_cast<uintptr_t>(views[k]->data);
  }
  const ElementwisePlan<N> plan = plan_elementwise(ix, elem_size, addr, /*max_vec=*/1);
  const int device = views[0]->device_index;
  DeviceGuard guard(device);
  const cudaStream_t stream = current_stream(device);
  const Launch1d l = plan.launch;
  if (plan.path == ElementwisePath::Strided32) {
    body_kernel<uint32_t, N>
        <<<l.blocks, l.threads, 0, stream>>>(kernels::StridedIndexer32<N>(ix), body, static_cast<uint32_t>(plan.n));
  } else {
    body_kernel<int64_t, N><<<l.blocks, l.threads, 0, stream>>>(ix, body, plan.n);
  }
  check_launch(op);
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
  for (int k = 1; k < N; ++k) {
    if (plan.flat[k] == 0) m.broadcast |= 1u << (k - 1);
  }
  const int device = out.device_index;
  DeviceGuard guard(device);
  const cudaStream_t stream = current_stream(device);
  const Launch1d l = plan.launch;
  switch (plan.path) {
    case ElementwisePath::Contiguous:
      if constexpr (M::kMaxVec > 1) contiguous_kernel<M::kMaxVec, M><<<l.blocks, l.threads, 0, stream>>>(m, plan.n);
      break;
    case ElementwisePath::Strided32:
      strided_kernel<uint32_t>
          <<<l.blocks, l.threads, 0, stream>>>(kernels::StridedIndexer32<N>(ix), m, static_cast<uint32_t>(plan.n));
      break;
    case ElementwisePath::Strided64:
      strided_kernel<int64_t><<<l.blocks, l.threads, 0, stream>>>(ix, m, plan.n);
      break;
  }
  check_launch(op);
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
