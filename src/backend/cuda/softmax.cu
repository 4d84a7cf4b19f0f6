// CudaBackend::softmax: softmax and log-softmax along the last dimension of a contiguous tensor,
// with the CPU backend's semantics (src/backend/cpu/softmax.cpp).
//
// One block per row (block-stride beyond the grid limit), three passes over the row: its
// maximum, the sum of exp(x - max), then the outputs. The row is re-read rather than kept in
// shared memory so any row length works; rows of a few thousand elements stay in L1/L2 between
// passes. Subtracting the maximum keeps exp in range. A row holding a NaN gives NaN everywhere,
// through the sum, and so does a row that is -inf everywhere or holds +inf (x - max is NaN
// there), as on the CPU and in PyTorch. float16 and bfloat16 are computed in float.
#include <cub/block/block_reduce.cuh>
#include <limits>

#include "backend/cuda/cuda_backend.h"
#include "backend/cuda/launch.h"
#include "backend/cuda/runtime.h"
#include "core/check.h"
#include "kernels/dtype_dispatch.h"
#include "kernels/kmath.h"

namespace ember::cuda_impl {
namespace {

using kernels::compute_t;

// NaN is not propagated here: it reaches every output through the sum anyway.
struct MaxFn {
  template <typename S>
  __device__ S operator()(const S& a, const S& b) const {
    return b > a ? b : a;
  }
};

template <typename T, int kThreads>
__global__ void __launch_bounds__(kThreads) softmax_kernel(const T* x, T* y, int64_t rows, int64_t n, bool log) {
  using S = compute_t<T>;
  using BlockReduce = cub::BlockReduce<S, kThreads>;
  __shared__ typename BlockReduce::TempStorage temp;
  __shared__ S shared_max;
  __shared__ S shared_sum;
  for (int64_t row = blockIdx.x; row < rows; row += gridDim.x) {
    const T* xr = x + row * n;
    T* yr = y + row * n;

    S local_max = -std::numeric_limits<S>::infinity();
    for (int64_t j = threadIdx.x; j < n; j += kThreads) {
      const S v = static_cast<S>(xr[j]);
      local_max = v > local_max ? v : local_max;
    }
    const S block_max = BlockReduce(temp).Reduce(local_max, MaxFn{});
    if (threadIdx.x == 0) shared_max = block_max;
    __syncthreads();  // publishes the max and frees temp for the next reduction
    const S max = shared_max;

    S local_sum = S(0);
    for (int64_t j = threadIdx.x; j < n; j += kThreads) local_sum += kmath::exp(static_cast<S>(xr[j]) - max);
    const S block_sum = BlockReduce(temp).Sum(local_sum);
    if (threadIdx.x == 0) shared_sum = block_sum;
    __syncthreads();
    const S sum = shared_sum;

    if (log) {
      const S log_sum = kmath::log(sum);
      for (int64_t j = threadIdx.x; j < n; j += kThreads) yr[j] = T(static_cast<S>(xr[j]) - max - log_sum);
    } else {
      // A reciprocal and a multiply, as the CPU backend (and PyTorch's CPU kernel) compute it.
      const S scale = S(1) / sum;
      for (int64_t j = threadIdx.x; j < n; j += kThreads) yr[j] = T(kmath::exp(static_cast<S>(xr[j]) - max) * scale);
    }
    __syncthreads();  // shared_max / shared_sum / temp are rewritten for the next row
  }
}

template <typename T, int kThreads>
void launch_softmax(const T* x, T* y, int64_t rows, int64_t n, bool log, cudaStream_t stream, const char* name) {
  const Launch1d l = launch_rows(rows, kThreads);
  softmax_kernel<T, kThreads><<<l.blocks, l.threads, 0, stream>>>(x, y, rows, n, log);
  check_launch(name);
}

// The gradient, one block per row: the row's sum (in double, as the CPU), then the outputs.
template <typename T, int kThreads>
__global__ void __launch_bounds__(kThreads)
    softmax_backward_kernel(const T* y, const T* g, T* gx, int64_t rows, int64_t n, bool log) {
  using S = compute_t<T>;
  using BlockReduce = cub::BlockReduce<double, kThreads>;
  __shared__ typename BlockReduce::TempStorage temp;
  __shared__ double shared_sum;
  for (int64_t row = blockIdx.x; row < rows; row += gridDim.x) {
    const T* yr = y + row * n;
    const T* gr = g + row * n;
    T* out = gx + row * n;
    double local = 0;
    for (int64_t j = threadIdx.x; j < n; j += kThreads) {
      const double gv = static_cast<double>(static_cast<S>(gr[j]));
      local += log ? gv : gv * static_cast<double>(static_cast<S>(yr[j]));
    }
    const double block_sum = BlockReduce(temp).Sum(local);
    if (threadIdx.x == 0) shared_sum = block_sum;
    __syncthreads();
    const S sum = static_cast<S>(shared_sum);
    for (int64_t j = threadIdx.x; j < n; j += kThreads) {
      out[j] = log ? T(static_cast<S>(gr[j]) - kmath::exp(static_cast<S>(yr[j])) * sum)
                   : T(static_cast<S>(yr[j]) * (static_cast<S>(gr[j]) - sum));
    }
    __syncthreads();  // shared_sum and temp are rewritten for the next row
  }
}

}  // namespace

void CudaBackend::softmax_backward(const TensorView& y, const TensorView& g, const TensorView& grad_x, bool log) {
  DeviceGuard guard(y.device_index);
  const char* name = log ? "log_softmax_backward" : "softmax_backward";
  EMBER_CHECK(y.is_contiguous() && g.is_contiguous() && grad_x.is_contiguous() && g.dtype == y.dtype &&
                  grad_x.dtype == y.dtype && g.sizes == y.sizes && grad_x.sizes == y.sizes,
              name, ": the kernel takes contiguous views of one dtype and y's sizes");
  const int64_t n = y.ndim() == 0 ? 1 : y.sizes[y.ndim() - 1];
  const int64_t total = y.numel();
  if (total == 0) return;
  const int64_t rows = total / n;
  const cudaStream_t stream = current_stream(y.device_index);
  kernels::dispatch_floating(y.dtype, name, [&]<typename T>() {
    const Launch1d l = launch_rows(rows, n <= 128 ? 128 : 256);
    if (n <= 128) {
      softmax_backward_kernel<T, 128>
          <<<l.blocks, l.threads, 0, stream>>>(y.ptr<const T>(), g.ptr<const T>(), grad_x.ptr<T>(), rows, n, log);
    } else {
      softmax_backward_kernel<T, 256>
          <<<l.blocks, l.threads, 0, stream>>>(y.ptr<const T>(), g.ptr<const T>(), grad_x.ptr<T>(), rows, n, log);
    }
  });
  check_launch(name);
}

void CudaBackend::softmax(const TensorView& x, const TensorView& out, bool log) {
  DeviceGuard guard(x.device_index);
  const char* name = log ? "log_softmax" : "softmax";
  check_softmax_views(x, out, log);
  const int64_t n = x.ndim() == 0 ? 1 : x.sizes[x.ndim() - 1];
  const int64_t total = x.numel();
  if (total == 0) return;
  const int64_t rows = total / n;
  const cudaStream_t stream = current_stream(x.device_index);
  kernels::dispatch_floating(x.dtype, name, [&]<typename T>() {
    const T* xp = x.ptr<const T>();
    T* yp = out.ptr<T>();
    // The smallest block that covers the row: short rows leave fewer threads idle.
    if (n <= 32) {
      launch_softmax<T, 32>(xp, yp, rows, n, log, stream, name);
    } else if (n <= 128) {
      launch_softmax<T, 128>(xp, yp, rows, n, log, stream, name);
    } else if (n <= 512) {
      launch_softmax<T, 512>(xp, yp, rows, n, log, stream, name);
    } else {
      launch_softmax<T, 1024>(xp, yp, rows, n, log, stream, name);
    }
  });
}

}  // namespace ember::cuda_impl
