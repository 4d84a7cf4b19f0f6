// CudaBackend::pool2d and pool2d_backward: 2-D max, average and adaptive-average pooling.
//
// Hand-written kernels rather than cuDNN's pooling: cuDNN cannot return the argmax indices that
// PyTorch's max_pool2d(return_indices=True) gives (and that ember's autograd keeps for the
// backward pass), and its average pooling has no divisor_override.
//
// The kernels' per-element bodies and all window arithmetic live in kernels/pool_window.h, where
// the host tests check them against brute-force windows and against the CPU backend itself.
//  * Forward: one thread per output element walks its window; a NaN wins, as on the CPU.
//  * Backward: one thread per input element gathers the gradients of the outputs that read it,
//    in the outputs' row-major order, the order in which the CPU adds them. No atomics, so the
//    result is deterministic (and bitwise equal to the CPU's where the types agree).
//    For Max, an input gathers the outputs whose reported index is that input; the outputs
//    examined are those whose window span holds it, which covers every index the forward pass
//    reports for a window with a tap inside the input. Other indices contribute nothing, where
//    the CPU would raise (out of the plane) or scatter them: indices not from a forward pass, and
//    those of windows that miss the input altogether (possible only when the dilation steps
//    over a tiny input; PyTorch then reports an index outside the window too). Checking them
//    here would need a round trip to the host.
// float16 and bfloat16 accumulate in float and round once, as on the CPU.
#include <cuda_runtime.h>

#include <cstdint>

#include "backend/cuda/cuda_backend.h"
#include "backend/cuda/launch.h"
#include "backend/cuda/runtime.h"
#include "core/check.h"
#include "kernels/dtype_dispatch.h"
#include "kernels/pool_window.h"

namespace ember::cuda_impl {
namespace {

using kernels::PoolGeometry;

// Position of linear element `i` of [planes, rows, cols].
struct PlanePos {
  int64_t plane, row, col;
};

__device__ inline PlanePos plane_pos(int64_t i, int64_t rows, int64_t cols) {
  const int64_t plane_size = rows * cols;
  const int64_t plane = i / plane_size;
  const int64_t rest = i - plane * plane_size;
  const int64_t row = rest / cols;
  return {plane, row, rest - row * cols};
}

__device__ inline int64_t grid_start() { return static_cast<int64_t>(blockIdx.x) * blockDim.x + threadIdx.x; }
__device__ inline int64_t grid_stride() { return static_cast<int64_t>(gridDim.x) * blockDim.x; }

template <typename T>
__global__ void __launch_bounds__(kBlockThreads)
    max_pool_kernel(const T* x, T* y, int64_t* indices, PoolGeometry g, int64_t total) {
  const int64_t in_plane = g.h.in * g.w.in;
  for (int64_t o = grid_start(); o < total; o += grid_stride()) {
    const PlanePos p = plane_pos(o, g.h.out, g.w.out);
    int64_t index = 0;
    y[o] = kernels::max_pool_at(x + p.plane * in_plane, g, p.row, p.col, &index);
    if (indices != nullptr) indices[o] = index;
  }
}

template <typename T>
__global__ void __launch_bounds__(kBlockThreads) avg_pool_kernel(const T* x, T* y, PoolGeometry g, int64_t total) {
  const int64_t in_plane = g.h.in * g.w.in;
  for (int64_t o = grid_start(); o < total; o += grid_stride()) {
    const PlanePos p = plane_pos(o, g.h.out, g.w.out);
    y[o] = kernels::avg_pool_at(x + p.plane * in_plane, g, p.row, p.col);
  }
}

template <typename T>
__global__ void __launch_bounds__(kBlockThreads)
    max_pool_backward_kernel(const T* gy, const int64_t* indices, T* gx, PoolGeometry g, int64_t total) {
  const int64_t out_plane = g.h.out * g.w.out;
  for (int64_t i = grid_start(); i < total; i += grid_stride()) {
    const PlanePos p = plane_pos(i, g.h.in, g.w.in);
    gx[i] = kernels::max_pool_grad_at(gy + p.plane * out_plane, indices + p.plane * out_plane, g, p.row, p.col);
  }
}

template <typename T>
__global__ void __launch_bounds__(kBlockThreads)
    avg_pool_backward_kernel(const T* gy, T* gx, PoolGeometry g, int64_t total) {
  const int64_t out_plane = g.h.out * g.w.out;
  for (int64_t i = grid_start(); i < total; i += grid_stride()) {
    const PlanePos p = plane_pos(i, g.h.in, g.w.in);
    gx[i] = kernels::avg_pool_grad_at(gy + p.plane * out_plane, g, p.row, p.col);
  }
}

// ------------------------------------------------------------------------------- host side

PoolGeometry geometry_of(const Pool2dArgs& a, const TensorView& x, const TensorView& out) {
  PoolGeometry g;
  g.h = {x.sizes[2], out.sizes[2], a.kernel[0], a.stride[0], a.padding[0], a.dilation[0]};
  g.w = {x.sizes[3], out.sizes[3], a.kernel[1], a.stride[1], a.padding[1], a.dilation[1]};
  g.adaptive = a.kind == PoolKind::AdaptiveAvg;
  g.count_include_pad = a.count_include_pad;
  g.divisor_override = a.divisor_override;
  return g;
}

}  // namespace

void CudaBackend::pool2d(const TensorView& x, const TensorView& out, const TensorView& indices,
                         const Pool2dArgs& args) {
  const char* op = pool2d_name(args.kind, /*backward=*/false);
  check_pool2d_views(x, out, indices, args);
  const bool with_indices = args.kind == PoolKind::Max && indices.data != nullptr;
  if (out.numel() == 0) return;
  EMBER_CHECK(x.sizes[2] > 0 && x.sizes[3] > 0, "[", op, "] empty input planes");
  DeviceGuard guard(x.device_index);
  const cudaStream_t stream = current_stream(x.device_index);
  const PoolGeometry g = geometry_of(args, x, out);
  const int64_t total = out.numel();
  const Launch1d l = launch_1d(total);
  kernels::dispatch_floating(x.dtype, op, [&]<typename T>() {
    if (args.kind == PoolKind::Max) {
      max_pool_kernel<T><<<l.blocks, l.threads, 0, stream>>>(x.ptr<const T>(), out.ptr<T>(),
                                                             with_indices ? indices.ptr<int64_t>() : nullptr, g, total);
    } else {
      avg_pool_kernel<T><<<l.blocks, l.threads, 0, stream>>>(x.ptr<const T>(), out.ptr<T>(), g, total);
    }
  });
  check_launch(op);
}

void CudaBackend::pool2d_backward(const TensorView& grad_out, const TensorView& indices, const TensorView& grad_x,
                                  const Pool2dArgs& args) {
  const char* op = pool2d_name(args.kind, /*backward=*/true);
  check_pool2d_backward_views(grad_out, indices, grad_x, args);
  if (grad_x.numel() == 0) return;
  DeviceGuard guard(grad_x.device_index);
  const cudaStream_t stream = current_stream(grad_x.device_index);
  const PoolGeometry g = geometry_of(args, grad_x, grad_out);
  const int64_t total = grad_x.numel();
  const Launch1d l = launch_1d(total);
  kernels::dispatch_floating(grad_x.dtype, op, [&]<typename T>() {
    if (args.kind == PoolKind::Max) {
      max_pool_backward_kernel<T><<<l.blocks, l.threads, 0, stream>>>(
          grad_out.ptr<const T>(), indices.ptr<const int64_t>(), grad_x.ptr<T>(), g, total);
    } else {
      avg_pool_backward_kernel<T>
          <<<l.blocks, l.threads, 0, stream>>>(grad_out.ptr<const T>(), grad_x.ptr<T>(), g, total);
    }
  });
  check_launch(op);
}

}  // namespace ember::cuda_impl
