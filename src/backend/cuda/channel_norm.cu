// CudaBackend::channel_moments, channel_grad_sums and channel_affine: the passes of batch_norm and
// group_norm over a contiguous [N, C, S] view, with the CPU's arithmetic (cpu/channel_norm.cpp,
// kernels/channel_norm_ops.h): statistics in double, in two passes.
//
// The statistics take one block per channel (CUB's block reduction over the channel's N*S
// values); a view with few channels and many values each (BatchNorm over 3 channels of a large
// image) keeps few SMs busy, and a two-level reduction would be the faster kernel there.
// channel_affine is element-wise, one thread per element with a grid-stride loop.
#include <cuda_runtime.h>

#include <cstdint>
#include <cub/block/block_reduce.cuh>

#include "backend/cuda/cuda_backend.h"
#include "backend/cuda/launch.h"
#include "backend/cuda/runtime.h"
#include "core/check.h"
#include "kernels/channel_norm_ops.h"

namespace ember::cuda_impl {
namespace {

constexpr int kThreads = 256;
using BlockReduce = cub::BlockReduce<double, kThreads>;

__device__ inline int64_t element_of(int64_t k, int64_t c, int64_t channels, int64_t s) {
  return ((k / s) * channels + c) * s + k % s;
}

template <typename T>
__global__ void __launch_bounds__(kThreads)
    moments_kernel(const T* x, T* mean, T* var, int64_t n, int64_t channels, int64_t s) {
  __shared__ typename BlockReduce::TempStorage temp;
  __shared__ double mu;
  const int64_t c = blockIdx.x, count = n * s;
  double sum = 0;
  for (int64_t k = threadIdx.x; k < count; k += kThreads) sum += static_cast<double>(x[element_of(k, c, channels, s)]);
  sum = BlockReduce(temp).Sum(sum);
  if (threadIdx.x == 0) mu = sum / static_cast<double>(count);
  __syncthreads();
  double squares = 0;
  for (int64_t k = threadIdx.x; k < count; k += kThreads) {
    const double d = static_cast<double>(x[element_of(k, c, channels, s)]) - mu;
    squares += d * d;
  }
  squares = BlockReduce(temp).Sum(squares);
  if (threadIdx.x == 0) {
    mean[c] = static_cast<T>(mu);
    var[c] = static_cast<T>(squares / static_cast<double>(count));
  }
}

template <typename T>
__global__ void __launch_bounds__(kThreads)
    grad_sums_kernel(const T* g, const T* x, const T* m, T* sum_g, T* sum_gxm, int64_t n, int64_t channels, int64_t s) {
  __shared__ typename BlockReduce::TempStorage temp;
  const int64_t c = blockIdx.x, count = n * s;
  const double mc = static_cast<double>(m[c]);
  double sg = 0, sgx = 0;
  for (int64_t k = threadIdx.x; k < count; k += kThreads) {
    const int64_t at = element_of(k, c, channels, s);
    const double gv = static_cast<double>(g[at]);
    sg += gv;
    sgx += gv * (static_cast<double>(x[at]) - mc);
  }
  sg = BlockReduce(temp).Sum(sg);
  __syncthreads();  // the temporary storage is reused
  sgx = BlockReduce(temp).Sum(sgx);
  if (threadIdx.x == 0) {
    sum_g[c] = static_cast<T>(sg);
    sum_gxm[c] = static_cast<T>(sgx);
  }
}

// An [N, C] coefficient view: its data and strides (null data reads as 0).
template <typename T>
struct Coefficients {
  const T* data;
  int64_t stride_n, stride_c;
  __device__ T at(int64_t n, int64_t c) const { return data == nullptr ? T(0) : data[n * stride_n + c * stride_c]; }
};

template <typename T>
Coefficients<T> coefficients(const TensorView& v) {
  if (v.data == nullptr) return {nullptr, 0, 0};
  return {v.ptr<const T>(), v.strides[0], v.strides[1]};
}

template <typename T>
__global__ void __launch_bounds__(kBlockThreads)
    affine_kernel(const T* x, Coefficients<T> m, Coefficients<T> a, Coefficients<T> b, const T* y, Coefficients<T> d,
                  T* out, int64_t total, int64_t channels, int64_t s) {
  for (int64_t i = static_cast<int64_t>(blockIdx.x) * blockDim.x + threadIdx.x; i < total;
       i += static_cast<int64_t>(gridDim.x) * blockDim.x) {
    const int64_t run = i / s, n = run / channels, c = run % channels;
    const T yv = y == nullptr ? T(0) : y[i];
    out[i] = kernels::channel_affine_value(x[i], m.at(n, c), a.at(n, c), b.at(n, c), yv, d.at(n, c));
  }
}

void check_view(const TensorView& x) {
  EMBER_CHECK(x.ndim() == 3 && x.is_contiguous() && (x.dtype == kFloat32 || x.dtype == kFloat64),
              "channel_norm: the kernels take a contiguous float32 or float64 [N, C, S] view");
}

template <typename F>
void dispatch_norm(Dtype dtype, const F& f) {
  if (dtype == kFloat32) {
    f.template operator()<float>();
  } else {
    f.template operator()<double>();
  }
}

}  // namespace

void CudaBackend::channel_moments(const TensorView& x, const TensorView& mean, const TensorView& var) {
  check_view(x);
  if (x.numel() == 0) return;
  DeviceGuard guard(x.device_index);
  const cudaStream_t stream = current_stream(x.device_index);
  dispatch_norm(x.dtype, [&]<typename T>() {
    moments_kernel<T><<<static_cast<unsigned>(x.sizes[1]), kThreads, 0, stream>>>(
        x.ptr<const T>(), mean.ptr<T>(), var.ptr<T>(), x.sizes[0], x.sizes[1], x.sizes[2]);
  });
  check_launch("channel_moments");
}

void CudaBackend::channel_grad_sums(const TensorView& g, const TensorView& x, const TensorView& m,
                                    const TensorView& sum_g, const TensorView& sum_gxm) {
  check_view(x);
  if (x.numel() == 0) return;
  DeviceGuard guard(x.device_index);
  const cudaStream_t stream = current_stream(x.device_index);
  dispatch_norm(x.dtype, [&]<typename T>() {
    grad_sums_kernel<T><<<static_cast<unsigned>(x.sizes[1]), kThreads, 0, stream>>>(
        g.ptr<const T>(), x.ptr<const T>(), m.ptr<const T>(), sum_g.ptr<T>(), sum_gxm.ptr<T>(), x.sizes[0], x.sizes[1],
        x.sizes[2]);
  });
  check_launch("channel_grad_sums");
}

void CudaBackend::channel_affine(const TensorView& x, const TensorView& m, const TensorView& a, const TensorView& b,
                                 const TensorView& y, const TensorView& d, const TensorView& out) {
  check_view(x);
  if (x.numel() == 0) return;
  DeviceGuard guard(x.device_index);
  const cudaStream_t stream = current_stream(x.device_index);
  const Launch1d l = launch_1d(x.numel());
  dispatch_norm(x.dtype, [&]<typename T>() {
    affine_kernel<T>
        <<<l.blocks, l.threads, 0, stream>>>(x.ptr<const T>(), coefficients<T>(m), coefficients<T>(a),
                                             coefficients<T>(b), y.data == nullptr ? nullptr : y.ptr<const T>(),
                                             coefficients<T>(d), out.ptr<T>(), x.numel(), x.sizes[1], x.sizes[2]);
  });
  check_launch("channel_affine");
}

}  // namespace ember::cuda_impl
