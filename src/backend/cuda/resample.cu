// CudaBackend::resample and resample_backward: interpolate's modes over contiguous views, with the
// CPU's arithmetic (kernels/resample_ops.h; cpu/resample.cpp runs the same sums as separable
// passes, which give each partial sum the same rounding).
//
// Forward: one thread per output element, which reads its taps' input elements directly (at most
// 4 x 4 of them for bicubic) and combines the last dimension first; neighbouring threads read
// neighbouring inputs, so the loads coalesce through the cache.
//
// Backward, interpolating modes: one thread per output-gradient element, adding its gradient
// times the weights into the input positions it read with atomicAdd into grad_x (zeroed first),
// which is what PyTorch's CUDA kernels do. The gather form (one thread per input element, summing
// the outputs that read it) would need the tables inverted, and a per-plane form would leave the
// GPU idle on the usual small batches. The atomics make the order of additions, and so a float
// sum's last bit, vary from run to run; under use_deterministic_algorithms the call is refused
// (or warned about) as PyTorch's upsample backward kernels are.
//
// Backward, nearest modes (one tap, no weights): a gather, one thread per input element summing
// the outputs that read it in row-major order, found by binary search in the table, which must
// therefore never decrease (interpolate's nearest tables do not). The sum is deterministic, as
// PyTorch's nearest backward is, and needs no atomics.
//
// grad_x is float or double, the computation type (the front end rounds a 16-bit gradient
// afterwards), which the hardware adds atomically.
#include <cuda_runtime.h>

#include <cstdint>
#include <span>
#include <string>

#include "backend/cuda/cuda_backend.h"
#include "backend/cuda/launch.h"
#include "backend/cuda/runtime.h"
#include "core/check.h"
#include "core/determinism.h"
#include "kernels/dtype_dispatch.h"
#include "kernels/resample_ops.h"

namespace ember::cuda_impl {
namespace {

using kernels::kMaxResampleDims;
using kernels::ResampleGeometry;

__device__ inline int64_t grid_start() { return static_cast<int64_t>(blockIdx.x) * blockDim.x + threadIdx.x; }
__device__ inline int64_t grid_stride() { return static_cast<int64_t>(gridDim.x) * blockDim.x; }

// Output element i's positions in the resized dimensions (j) and its plane.
template <int K, typename C>
__device__ inline int64_t split_position(const ResampleGeometry<C>& g, int64_t i, int64_t* j) {
  for (int d = K - 1; d >= 0; --d) {
    j[d] = i % g.axis[d].out;
    i /= g.axis[d].out;
  }
  return i;
}

template <int K, typename S, typename C>
__global__ void __launch_bounds__(kBlockThreads)
    resample_kernel(const S* x, S* y, ResampleGeometry<C> g, int64_t total) {
  for (int64_t i = grid_start(); i < total; i += grid_stride()) {
    int64_t j[kMaxResampleDims] = {};
    const int64_t plane = split_position<K>(g, i, j);
    y[i] = static_cast<S>(kernels::resample_combine<0, K, S, C>(g, x + plane * g.in_plane, 0, j));
  }
}

template <typename C>
struct AtomicAddInto {
  C* base;
  EMBER_HD void operator()(int64_t at, C v) const {
#ifdef __CUDA_ARCH__
    atomicAdd(base + at, v);
#else
    base[at] += v;
#endif
  }
};

template <int K, typename S, typename C>
__global__ void __launch_bounds__(kBlockThreads)
    resample_backward_kernel(const S* gy, C* gx, ResampleGeometry<C> g, int64_t total) {
  for (int64_t i = grid_start(); i < total; i += grid_stride()) {
    int64_t j[kMaxResampleDims] = {};
    const int64_t plane = split_position<K>(g, i, j);
    kernels::resample_spread<0, K, C>(g, static_cast<C>(gy[i]), 0, j, AtomicAddInto<C>{gx + plane * g.in_plane});
  }
}

// The outputs [lo, hi) that read input position i through a one-tap table that never decreases
// (interpolate's nearest tables: floor of a non-negative multiple of j, capped).
__device__ inline void reading_range(const int64_t* index, int64_t out, int64_t i, int64_t& lo, int64_t& hi) {
  int64_t a = 0, b = out;
  while (a < b) {  // the first j with index[j] >= i
    const int64_t m = (a + b) / 2;
    if (index[m] < i)
      a = m + 1;
    else
      b = m;
  }
  lo = a;
  b = out;
  while (a < b) {  // the first j with index[j] > i
    const int64_t m = (a + b) / 2;
    if (index[m] <= i)
      a = m + 1;
    else
      b = m;
  }
  hi = a;
}

// The nearest modes' backward pass as a gather: one thread per input element sums the output
// gradients that read it, in row-major order, so the result is deterministic (PyTorch's nearest
// backward kernels gather too). The leading dimensions of a 1-D or 2-D call count as size 1.
template <int K, typename S, typename C>
__global__ void __launch_bounds__(kBlockThreads)
    nearest_backward_kernel(const S* gy, C* gx, ResampleGeometry<C> g, int64_t total) {
  for (int64_t i = grid_start(); i < total; i += grid_stride()) {
    int64_t lo[3] = {0, 0, 0}, hi[3] = {1, 1, 1}, out[3] = {1, 1, 1}, rest = i;
    for (int d = K - 1; d >= 0; --d) {
      const auto& a = g.axis[d];
      const int at = 3 - K + d;
      out[at] = a.out;
      reading_range(a.index, a.out, rest % a.in, lo[at], hi[at]);
      rest /= a.in;
    }
    const S* plane = gy + rest * g.out_plane;
    C sum = 0;
    for (int64_t j0 = lo[0]; j0 < hi[0]; ++j0) {
      for (int64_t j1 = lo[1]; j1 < hi[1]; ++j1) {
        const S* row = plane + (j0 * out[1] + j1) * out[2];
        for (int64_t j2 = lo[2]; j2 < hi[2]; ++j2) sum += static_cast<C>(row[j2]);
      }
    }
    gx[i] = sum;
  }
}

Dtype computation_dtype(Dtype dtype) { return dtype == kFloat64 ? kFloat64 : kFloat32; }

// Checks the views against each other (x: the input side, y: the output side) and fills the
// geometry with their device pointers.
template <typename C>
ResampleGeometry<C> geometry_of(const char* op, const TensorView& x, const TensorView& y,
                                std::span<const TensorView> index, std::span<const TensorView> weight, Dtype compute) {
  const int64_t k = static_cast<int64_t>(index.size());
  EMBER_CHECK(k >= 1 && k <= kMaxResampleDims && weight.size() == index.size(), "[", op,
              "] takes 1 to 3 resized dimensions, each with an index and a weight view");
  EMBER_CHECK(x.ndim() == y.ndim() && x.ndim() >= k, "[", op, "] input and output ranks differ");
  EMBER_CHECK(x.is_contiguous() && y.is_contiguous(), "[", op, "] expects contiguous tensors");
  const int64_t lead = x.ndim() - k;
  for (int64_t d = 0; d < lead; ++d) {
    EMBER_CHECK(x.sizes[d] == y.sizes[d], "[", op, "] input and output differ outside the resized dimensions");
  }
  ResampleGeometry<C> g;
  g.dims = static_cast<int>(k);
  for (int64_t i = 0; i < k; ++i) {
    const TensorView& idx = index[static_cast<size_t>(i)];
    const TensorView& w = weight[static_cast<size_t>(i)];
    auto& a = g.axis[i];
    a.in = x.sizes[lead + i];
    a.out = y.sizes[lead + i];
    EMBER_CHECK(
        idx.dtype == kInt64 && idx.ndim() == 2 && idx.sizes[0] >= 1 && idx.sizes[1] == a.out && idx.is_contiguous(),
        "[", op, "] index ", i, " must be a contiguous int64 [taps, ", a.out, "] view");
    EMBER_CHECK(w.data == nullptr ? idx.sizes[0] == 1
                                  : (w.dtype == compute && w.ndim() == 2 && w.sizes[0] == idx.sizes[0] &&
                                     w.sizes[1] == a.out && w.is_contiguous()),
                "[", op, "] weight ", i, " must be a contiguous ", dtype_name(compute), " view of index ", i,
                "'s shape (or absent for one tap)");
    a.taps = idx.sizes[0];
    a.index = idx.ptr<const int64_t>();
    a.weight = w.data == nullptr ? nullptr : w.ptr<const C>();
    g.in_plane *= a.in;
    g.out_plane *= a.out;
  }
  return g;
}

// PyTorch's name for the backward kernel that refuses to run deterministically.
std::string backward_kernel_name(std::span<const TensorView> index) {
  const size_t k = index.size();
  const std::string dims = std::to_string(k) + "d";
  if (index[0].sizes[0] == 4) return "upsample_bicubic" + dims + "_backward_out_cuda";
  const char* linear = k == 1 ? "upsample_linear" : k == 2 ? "upsample_bilinear" : "upsample_trilinear";
  return linear + dims + "_backward_out_cuda";
}

template <typename S, typename C>
void launch_forward(const TensorView& x, const TensorView& out, const ResampleGeometry<C>& g, cudaStream_t stream) {
  const int64_t total = out.numel();
  const Launch1d l = launch_1d(total);
  const S* xs = x.ptr<const S>();
  S* ys = out.ptr<S>();
  switch (g.dims) {
    case 1:
      resample_kernel<1, S, C><<<l.blocks, l.threads, 0, stream>>>(xs, ys, g, total);
      break;
    case 2:
      resample_kernel<2, S, C><<<l.blocks, l.threads, 0, stream>>>(xs, ys, g, total);
      break;
    default:
      resample_kernel<3, S, C><<<l.blocks, l.threads, 0, stream>>>(xs, ys, g, total);
      break;
  }
}

template <typename S, typename C>
void launch_nearest_backward(const TensorView& grad_out, const TensorView& grad_x, const ResampleGeometry<C>& g,
                             cudaStream_t stream) {
  const int64_t total = grad_x.numel();
  const Launch1d l = launch_1d(total);
  const S* gys = grad_out.ptr<const S>();
  C* gxs = grad_x.ptr<C>();
  switch (g.dims) {
    case 1:
      nearest_backward_kernel<1, S, C><<<l.blocks, l.threads, 0, stream>>>(gys, gxs, g, total);
      break;
    case 2:
      nearest_backward_kernel<2, S, C><<<l.blocks, l.threads, 0, stream>>>(gys, gxs, g, total);
      break;
    default:
      nearest_backward_kernel<3, S, C><<<l.blocks, l.threads, 0, stream>>>(gys, gxs, g, total);
      break;
  }
}

template <typename S, typename C>
void launch_backward(const TensorView& grad_out, const TensorView& grad_x, const ResampleGeometry<C>& g,
                     cudaStream_t stream) {
  const int64_t total = grad_out.numel();
  const Launch1d l = launch_1d(total);
  if (l.blocks == 0) return;
  const S* gys = grad_out.ptr<const S>();
  C* gxs = grad_x.ptr<C>();
  switch (g.dims) {
    case 1:
      resample_backward_kernel<1, S, C><<<l.blocks, l.threads, 0, stream>>>(gys, gxs, g, total);
      break;
    case 2:
      resample_backward_kernel<2, S, C><<<l.blocks, l.threads, 0, stream>>>(gys, gxs, g, total);
      break;
    default:
      resample_backward_kernel<3, S, C><<<l.blocks, l.threads, 0, stream>>>(gys, gxs, g, total);
      break;
  }
}

}  // namespace

void CudaBackend::resample(const TensorView& x, std::span<const TensorView> index, std::span<const TensorView> weight,
                           const TensorView& out) {
  EMBER_CHECK(x.dtype == out.dtype, "[resample] input and output dtypes differ");
  const Dtype compute = computation_dtype(x.dtype);
  if (out.numel() == 0) return;
  DeviceGuard guard(x.device_index);
  const cudaStream_t stream = current_stream(x.device_index);
  if (x.dtype == kUInt8) {
    const auto g = geometry_of<float>("resample", x, out, index, weight, compute);
    for (int i = 0; i < g.dims; ++i) {
      EMBER_CHECK(g.axis[i].weight == nullptr, "[resample] uint8 takes the nearest modes only (no weights)");
    }
    launch_forward<uint8_t, float>(x, out, g, stream);
  } else {
    kernels::dispatch_floating(x.dtype, "resample", [&]<typename S>() {
      using C = kernels::compute_t<S>;
      launch_forward<S, C>(x, out, geometry_of<C>("resample", x, out, index, weight, compute), stream);
    });
  }
  check_launch("resample");
}

void CudaBackend::resample_backward(const TensorView& grad_out, std::span<const TensorView> index,
                                    std::span<const TensorView> weight, const TensorView& grad_x) {
  const Dtype compute = computation_dtype(grad_out.dtype);
  EMBER_CHECK(grad_x.dtype == compute, "[resample_backward] grad_x must be ", dtype_name(compute), " for a ",
              dtype_name(grad_out.dtype), " gradient");
  if (grad_x.numel() == 0) return;
  DeviceGuard guard(grad_x.device_index);
  const cudaStream_t stream = current_stream(grad_x.device_index);
  kernels::dispatch_floating(grad_out.dtype, "resample_backward", [&]<typename S>() {
    using C = kernels::compute_t<S>;
    const ResampleGeometry<C> g = geometry_of<C>("resample_backward", grad_x, grad_out, index, weight, compute);
    bool weighted = false;
    for (int d = 0; d < g.dims; ++d) weighted = weighted || g.axis[d].weight != nullptr || g.axis[d].taps != 1;
    if (!weighted) {
      launch_nearest_backward<S, C>(grad_out, grad_x, g, stream);
      return;
    }
    detail::alert_not_deterministic(backward_kernel_name(index));
    EMBER_CUDA_CHECK(cudaMemsetAsync(grad_x.data, 0, static_cast<size_t>(grad_x.numel()) * sizeof(C), stream),
                     "resample_backward");
    launch_backward<S, C>(grad_out, grad_x, g, stream);
  });
  check_launch("resample_backward");
}

}  // namespace ember::cuda_impl
