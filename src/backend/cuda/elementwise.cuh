#pragma once
// The one element-wise launcher behind copy, fill, unary, binary, where and clamp on CUDA.
//
// Operand 0 is the output; the inputs arrive with its sizes (broadcast dims have stride 0). The
// shared shape is simplified by kernels::StridedIndexer (the same code the CPU loops use), in the
// output's memory order, and each thread maps its linear index to one element offset per
// operand. A body functor holds the typed pointers and the scalar math (from
// kernels/elementwise_ops.h), so every op is one small struct and one instantiation of the
// grid-stride kernel below.
#include <array>

#include "backend/backend.h"
#include "backend/cuda/launch.h"
#include "backend/cuda/runtime.h"
#include "core/check.h"
#include "kernels/indexer.h"

namespace ember::cuda_impl {

template <int N>
using Indexer = kernels::StridedIndexer<N>;
template <int N>
using Offsets = typename Indexer<N>::Offsets;

template <int N, typename Body>
__global__ void elementwise_kernel(Indexer<N> ix, int64_t n, Body body) {
  const int64_t step = static_cast<int64_t>(blockDim.x) * gridDim.x;
  for (int64_t i = static_cast<int64_t>(blockIdx.x) * blockDim.x + threadIdx.x; i < n; i += step) {
    body(ix.offsets(i));
  }
}

/// Runs body(offsets) for every element of views[0]'s shape on its device's current stream.
template <int N, typename Body>
void launch_elementwise(const char* op, const std::array<const TensorView*, N>& views, const Body& body) {
  const TensorView& out = *views[0];
  for (int k = 1; k < N; ++k) {
    EMBER_CHECK(views[k]->sizes == out.sizes, "[", op, "] operand of shape ", detail::shape_str(views[k]->sizes),
                " was not broadcast to the output shape ", detail::shape_str(out.sizes));
  }
  const int64_t n = out.numel();
  if (n == 0) return;
  Indexer<N> ix;
  const int64_t* strides[N];
  for (int k = 0; k < N; ++k) strides[k] = views[k]->strides.data();
  EMBER_CHECK(ix.build(out.ndim(), out.sizes.data(), strides, /*memory_order=*/true), "[", op,
              "] too many non-mergeable dimensions in shape ", detail::shape_str(out.sizes));
  const Launch1d launch = launch_1d(n);
  DeviceGuard guard(out.device_index);
  elementwise_kernel<N, Body><<<launch.blocks, launch.threads, 0, current_stream(out.device_index)>>>(ix, n, body);
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
