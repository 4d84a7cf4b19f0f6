// CudaBackend::grid_sample and grid_sample_backward, with the CPU's arithmetic
// (kernels/grid_sample_ops.h): one thread per output point (sample and grid position), walking
// the channels, which reuses the point's taps (its corners' offsets and weights) for each.
//
// The backward pass adds into grad_x with atomicAdd, as PyTorch's CUDA kernel does, so the order
// of additions into one element (and a float sum's last bits) may change from run to run; under
// use_deterministic_algorithms it raises PyTorch's alert for grid_sampler_{2,3}d_backward_cuda.
// Each point writes its grad_grid entries once, after summing over the channels.
#include <cuda_runtime.h>

#include <cstdint>

#include "backend/cuda/cuda_backend.h"
#include "backend/cuda/launch.h"
#include "backend/cuda/runtime.h"
#include "backend/grid_sample_views.h"
#include "core/check.h"
#include "core/determinism.h"
#include "kernels/grid_sample_ops.h"

namespace ember::cuda_impl {
namespace {

using kernels::GridCorners;
using kernels::GridGeometry;

__device__ inline int64_t grid_start() { return static_cast<int64_t>(blockIdx.x) * blockDim.x + threadIdx.x; }
__device__ inline int64_t grid_stride() { return static_cast<int64_t>(gridDim.x) * blockDim.x; }

template <typename T, int S, int K>
__global__ void __launch_bounds__(kBlockThreads)
    forward_kernel(const T* x, const T* grid, T* out, GridGeometry<S> geo, GridSampleArgs args, int64_t total) {
  using Corners = GridCorners<T, S, K>;
  for (int64_t i = grid_start(); i < total; i += grid_stride()) {
    const int64_t sample = i / geo.points, p = i % geo.points;
    int64_t at[S];
    const Corners corners = kernels::grid_corners_of<T, S, K>(grid + geo.grid_offset(sample, p, at), geo, args);
    int64_t offset[Corners::kCount];
    T weight[Corners::kCount];
    int count = 0;
    for (int j = 0; j < Corners::kCount; ++j)
      if (corners.corner(j, offset + count, weight + count, nullptr)) ++count;
    const T* x_sample = x + sample * geo.x_sample;
    T* out_point = out + sample * geo.channels * geo.points + p;
    for (int64_t c = 0; c < geo.channels; ++c) {
      const T* plane = x_sample + c * geo.x_channel;
      T acc = 0;
      for (int j = 0; j < count; ++j) acc += weight[j] * plane[offset[j]];
      out_point[c * geo.points] = acc;
    }
  }
}

// grad_out's strides, for S spatial axes.
template <int S>
struct GradStrides {
  int64_t sample, channel, spatial[S];
};

template <typename T, int S, int K>
__global__ void __launch_bounds__(kBlockThreads)
    backward_kernel(const T* g, GradStrides<S> gs, const T* x, const T* grid, T* grad_x, T* grad_grid,
                    GridGeometry<S> geo, GridSampleArgs args, int64_t total) {
  using Corners = GridCorners<T, S, K>;
  for (int64_t i = grid_start(); i < total; i += grid_stride()) {
    const int64_t sample = i / geo.points, p = i % geo.points;
    int64_t at[S];
    const Corners corners = kernels::grid_corners_of<T, S, K>(grid + geo.grid_offset(sample, p, at), geo, args);
    int64_t offset[Corners::kCount];
    T weight[Corners::kCount];
    T slopes[Corners::kCount][S];
    int count = 0;
    for (int j = 0; j < Corners::kCount; ++j)
      if (corners.corner(j, offset + count, weight + count, slopes[count])) ++count;
    int64_t g_point = sample * gs.sample;
    for (int d = 0; d < S; ++d) g_point += at[d] * gs.spatial[d];
    const int64_t x_sample = sample * geo.x_sample;  // x and grad_x are both contiguous
    T grad_coord[S] = {};
    for (int64_t c = 0; c < geo.channels; ++c) {
      const T gc = g[g_point + c * gs.channel];
      const int64_t plane = x_sample + c * geo.x_channel;
      for (int j = 0; j < count; ++j) {
        if (grad_x != nullptr) atomicAdd(grad_x + plane + offset[j], weight[j] * gc);
        if (grad_grid != nullptr && K > 1) {
          const T v = x[plane + offset[j]] * gc;
          for (int d = 0; d < S; ++d) grad_coord[d] += v * slopes[j][d];
        }
      }
    }
    if (grad_grid != nullptr) {
      T* out = grad_grid + i * S;
      for (int d = 0; d < S; ++d) out[S - 1 - d] = grad_coord[d];  // x (W) first
    }
  }
}

}  // namespace

void CudaBackend::grid_sample(const TensorView& x, const TensorView& grid, const GridSampleArgs& args,
                              const TensorView& out) {
  grid_sample_views::check_forward(x, grid, out);
  if (out.numel() == 0) return;
  DeviceGuard guard(x.device_index);
  const cudaStream_t stream = current_stream(x.device_index);
  grid_sample_views::dispatch(x, args, "grid_sample", [&]<typename T, int S, int K>() {
    const GridGeometry<S> geo = kernels::grid_geometry_of<S>(x, grid);
    const int64_t total = geo.n * geo.points;
    const Launch1d l = launch_1d(total);
    forward_kernel<T, S, K>
        <<<l.blocks, l.threads, 0, stream>>>(x.ptr<const T>(), grid.ptr<const T>(), out.ptr<T>(), geo, args, total);
  });
  check_launch("grid_sample");
}

void CudaBackend::grid_sample_backward(const TensorView& grad_out, const TensorView& x, const TensorView& grid,
                                       const GridSampleArgs& args, const TensorView& grad_x,
                                       const TensorView& grad_grid) {
  grid_sample_views::check_backward(grad_out, x, grid, grad_x, grad_grid);
  if (grad_x.data == nullptr && grad_grid.data == nullptr) return;
  if (grad_x.data != nullptr) {
    detail::alert_not_deterministic(x.ndim() == 4 ? "grid_sampler_2d_backward_cuda" : "grid_sampler_3d_backward_cuda");
  }
  DeviceGuard guard(x.device_index);
  const cudaStream_t stream = current_stream(x.device_index);
  const size_t element = x.dtype == kFloat32 ? sizeof(float) : sizeof(double);
  if (grad_x.data != nullptr && grad_x.numel() > 0) {
    EMBER_CUDA_CHECK(cudaMemsetAsync(grad_x.data, 0, static_cast<size_t>(grad_x.numel()) * element, stream),
                     "grid_sample_backward");
  }
  if (grad_out.numel() == 0) {  // no channels or no points: grad_grid is zero too
    if (grad_grid.data != nullptr && grad_grid.numel() > 0) {
      EMBER_CUDA_CHECK(cudaMemsetAsync(grad_grid.data, 0, static_cast<size_t>(grad_grid.numel()) * element, stream),
                       "grid_sample_backward");
    }
    return;
  }
  grid_sample_views::dispatch(x, args, "grid_sample_backward", [&]<typename T, int S, int K>() {
    const GridGeometry<S> geo = kernels::grid_geometry_of<S>(x, grid);
    GradStrides<S> gs{grad_out.strides[0], grad_out.strides[1], {}};
    for (int d = 0; d < S; ++d) gs.spatial[d] = grad_out.strides[2 + d];
    const int64_t total = geo.n * geo.points;
    const Launch1d l = launch_1d(total);
    backward_kernel<T, S, K><<<l.blocks, l.threads, 0, stream>>>(
        grad_out.ptr<const T>(), gs, x.ptr<const T>(), grid.ptr<const T>(),
        grad_x.data == nullptr ? nullptr : grad_x.ptr<T>(), grad_grid.data == nullptr ? nullptr : grad_grid.ptr<T>(),
        geo, args, total);
  });
  check_launch("grid_sample_backward");
}

}  // namespace ember::cuda_impl
