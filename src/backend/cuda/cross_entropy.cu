// CudaBackend::cross_entropy and its backward pass: log_softmax and nll_loss fused, with the CPU
// backend's semantics (src/backend/cpu/cross_entropy.cpp), in one kernel each way instead of the
// dozen small ones (log_softmax, masks for ignore_index, gather, weights, where) the op-by-op
// loss costs on every training step.
//
// Forward: one block per row, as softmax.cu: the row's maximum, the sum of exp(x - max) (and,
// with label smoothing, the sum over classes of -log_softmax * w), then thread 0 writes the
// row's loss, weight and statistics. Backward: one thread per logit,
// recomputing log_softmax from the saved statistics.
//
// A target outside [0, C) that is not ignore_index cannot be checked without waiting for the
// device, so (as in indexing.cu) the row counts as ignored and the first such target is recorded
// for the next wait (index_error.h); EMBER_CUDA_CHECK_INDICES=1 waits and raises at the op.
#include <cub/block/block_reduce.cuh>
#include <limits>

#include "backend/cuda/cuda_backend.h"
#include "backend/cuda/index_error.cuh"
#include "backend/cuda/launch.h"
#include "backend/cuda/runtime.h"
#include "core/check.h"
#include "kernels/cross_entropy_ops.h"
#include "kernels/elementwise_ops.h"
#include "kernels/kmath.h"

namespace ember::cuda_impl {
namespace {

struct MaxFn {
  template <typename T>
  __device__ T operator()(const T& a, const T& b) const {
    return b > a ? b : a;
  }
};

template <typename T, int kThreads>
__global__ void __launch_bounds__(kThreads)
    cross_entropy_kernel(const T* x, const int64_t* target, const T* weight, int64_t ignore_index, bool smooth,
                         kernels::LabelSmoothing<T> smoothing, T* loss, T* row_weight, T* stats, int64_t rows,
                         int64_t n, IndexErrorRecord* record) {
  using BlockReduce = cub::BlockReduce<T, kThreads>;
  __shared__ typename BlockReduce::TempStorage temp;
  __shared__ T shared_max;
  __shared__ T shared_log_sum;
  for (int64_t row = blockIdx.x; row < rows; row += gridDim.x) {
    const T* xr = x + row * n;
    T local_max = -std::numeric_limits<T>::infinity();
    for (int64_t j = threadIdx.x; j < n; j += kThreads) local_max = xr[j] > local_max ? xr[j] : local_max;
    const T block_max = BlockReduce(temp).Reduce(local_max, MaxFn{});
    if (threadIdx.x == 0) shared_max = block_max;
    __syncthreads();  // publishes the max and frees temp for the sum
    const T max = shared_max;
    T local_sum = T(0);
    for (int64_t j = threadIdx.x; j < n; j += kThreads) local_sum += kmath::exp(xr[j] - max);
    const T sum = BlockReduce(temp).Sum(local_sum);
    if (threadIdx.x == 0) shared_log_sum = kmath::log(sum);
    // Label smoothing's sum over every class, -log_softmax(x)[c] * w[c]: a third pass over the
    // row once log_sum is known (`smooth` is the same for the whole block).
    T smoothing_sum = T(0);
    if (smooth) {
      __syncthreads();  // publishes log_sum and frees temp
      const T log_sum = shared_log_sum;
      T local = T(0);
      for (int64_t j = threadIdx.x; j < n; j += kThreads) {
        const T term = -(xr[j] - max - log_sum);
        local += weight != nullptr ? term * weight[j] : term;
      }
      smoothing_sum = BlockReduce(temp).Sum(local);
    }
    if (threadIdx.x == 0) {
      const T log_sum = shared_log_sum;
      stats[2 * row] = max;
      stats[2 * row + 1] = log_sum;
      const int64_t c = target[row];
      const bool in_range = c >= 0 && c < n;
      if (c != ignore_index && !in_range) record_bad_index(record, IndexOp::ClassTarget, c, row, n);
      if (c == ignore_index || !in_range) {
        loss[row] = T(0);
        row_weight[row] = T(0);
      } else {
        const T nll = -(xr[c] - max - log_sum);
        const T weighted = weight != nullptr ? nll * weight[c] : nll;
        loss[row] = smooth ? kernels::smoothed_row_loss(weighted, smoothing_sum, smoothing) : weighted;
        row_weight[row] = weight != nullptr ? weight[c] : T(1);
      }
    }
    __syncthreads();  // shared values and temp are rewritten for the next row
  }
}

// W = sum_c w[c], which the smoothed gradient needs (one block; C is a class count).
template <typename T, int kThreads>
__global__ void __launch_bounds__(kThreads) weight_total_kernel(const T* weight, int64_t n, T* total) {
  using BlockReduce = cub::BlockReduce<T, kThreads>;
  __shared__ typename BlockReduce::TempStorage temp;
  T local = T(0);
  for (int64_t j = threadIdx.x; j < n; j += kThreads) local += weight[j];
  const T sum = BlockReduce(temp).Sum(local);
  if (threadIdx.x == 0) *total = sum;
}

// The CPU's formula (softmax.cpp, cross_entropy_backward_rows), one logit per iteration. A
// target out of range was recorded by the forward pass; here its row is simply ignored.
// `weight_total` is W on the device, or null for C (no weight).
template <typename T>
__global__ void __launch_bounds__(kBlockThreads)
    cross_entropy_backward_kernel(const T* grad_loss, const T* x, const int64_t* target, const T* weight,
                                  int64_t ignore_index, bool smooth, kernels::LabelSmoothing<T> smoothing,
                                  const T* weight_total, const T* stats, T* grad_x, int64_t total, int64_t n) {
  const int64_t stride = static_cast<int64_t>(blockDim.x) * gridDim.x;
  for (int64_t i = static_cast<int64_t>(blockIdx.x) * blockDim.x + threadIdx.x; i < total; i += stride) {
    const int64_t row = i / n, j = i - row * n;
    const int64_t c = target[row];
    const bool ignored = c == ignore_index || c < 0 || c >= n;
    const T y = x[i] - stats[2 * row] - stats[2 * row + 1];
    if (smooth && !ignored) {
      grad_x[i] = kernels::smoothed_logit_grad(
          grad_loss[row], kernels::Exp{}(y), weight != nullptr ? weight[c] : T(1), weight != nullptr ? weight[j] : T(1),
          weight_total != nullptr ? *weight_total : static_cast<T>(n), j == c, smoothing);
      continue;
    }
    const int64_t column = ignored ? 0 : c;
    const T g = ignored ? T(0) : grad_loss[row];
    const T s = -(weight != nullptr && !ignored ? g * weight[c] : g);
    grad_x[i] = (j == column ? s : T(0)) - kernels::Exp{}(y)*s;
  }
}

template <typename T, int kThreads>
void launch_forward(const TensorView& logits, const TensorView& target, const TensorView& weight, int64_t ignore_index,
                    double label_smoothing, const TensorView& loss, const TensorView& row_weight,
                    const TensorView& stats, IndexErrorRecord* record, cudaStream_t stream) {
  const int64_t rows = logits.sizes[0], n = logits.sizes[1];
  const Launch1d l = launch_rows(rows, kThreads);
  cross_entropy_kernel<T, kThreads><<<l.blocks, l.threads, 0, stream>>>(
      logits.ptr<const T>(), target.ptr<const int64_t>(), weight.ptr<const T>(), ignore_index, label_smoothing > 0.0,
      kernels::LabelSmoothing<T>::make(label_smoothing, n), loss.ptr<T>(), row_weight.ptr<T>(), stats.ptr<T>(), rows, n,
      record);
  check_launch("cross_entropy");
}

template <typename T>
void forward_for_row_length(const TensorView& logits, const TensorView& target, const TensorView& weight,
                            int64_t ignore_index, double label_smoothing, const TensorView& loss,
                            const TensorView& row_weight, const TensorView& stats, IndexErrorRecord* record,
                            cudaStream_t stream) {
  // The smallest block that covers the row, as softmax.cu chooses.
  const int64_t n = logits.sizes[1];
  if (n <= 32) {
    launch_forward<T, 32>(logits, target, weight, ignore_index, label_smoothing, loss, row_weight, stats, record,
                          stream);
  } else if (n <= 128) {
    launch_forward<T, 128>(logits, target, weight, ignore_index, label_smoothing, loss, row_weight, stats, record,
                           stream);
  } else if (n <= 512) {
    launch_forward<T, 512>(logits, target, weight, ignore_index, label_smoothing, loss, row_weight, stats, record,
                           stream);
  } else {
    launch_forward<T, 1024>(logits, target, weight, ignore_index, label_smoothing, loss, row_weight, stats, record,
                            stream);
  }
}

}  // namespace

void CudaBackend::cross_entropy(const TensorView& logits, const TensorView& target, const TensorView& weight,
                                int64_t ignore_index, double label_smoothing, const TensorView& loss,
                                const TensorView& row_weight, const TensorView& stats) {
  check_cross_entropy_views("cross_entropy", logits, target, weight);
  if (logits.sizes[0] == 0) return;
  EMBER_CHECK(logits.sizes[1] > 0, "[cross_entropy] expects at least one class");
  DeviceGuard guard(logits.device_index);
  const cudaStream_t stream = current_stream(logits.device_index);
  IndexErrorRecord* record = index_error_record(logits.device_index);
  if (logits.dtype == kFloat32) {
    forward_for_row_length<float>(logits, target, weight, ignore_index, label_smoothing, loss, row_weight, stats,
                                  record, stream);
  } else {
    forward_for_row_length<double>(logits, target, weight, ignore_index, label_smoothing, loss, row_weight, stats,
                                   record, stream);
  }
  if (check_indices_enabled()) {
    EMBER_CUDA_CHECK(cudaStreamSynchronize(stream), "cross_entropy");
    raise_pending_index_error(logits.device_index);
  }
}

namespace {

template <typename T>
void launch_backward(const TensorView& grad_loss, const TensorView& logits, const TensorView& target,
                     const TensorView& weight, int64_t ignore_index, double label_smoothing, const TensorView& stats,
                     const TensorView& grad_logits, const Launch1d& l, cudaStream_t stream) {
  const int64_t total = logits.numel(), n = logits.sizes[1];
  const bool smooth = label_smoothing > 0.0;
  // W on the device, for the smoothed gradient with weights; the stream orders the scratch
  // memory's reuse after the kernel that reads it.
  Workspace weight_total(smooth && weight.data != nullptr ? sizeof(T) : 0, logits.device_index);
  if (weight_total.data() != nullptr) {
    weight_total_kernel<T, 256><<<1, 256, 0, stream>>>(weight.ptr<const T>(), n, static_cast<T*>(weight_total.data()));
    check_launch("cross_entropy_backward");
  }
  cross_entropy_backward_kernel<T><<<l.blocks, l.threads, 0, stream>>>(
      grad_loss.ptr<const T>(), logits.ptr<const T>(), target.ptr<const int64_t>(), weight.ptr<const T>(), ignore_index,
      smooth, kernels::LabelSmoothing<T>::make(label_smoothing, n), static_cast<const T*>(weight_total.data()),
      stats.ptr<const T>(), grad_logits.ptr<T>(), total, n);
  check_launch("cross_entropy_backward");
}

}  // namespace

void CudaBackend::cross_entropy_backward(const TensorView& grad_loss, const TensorView& logits,
                                         const TensorView& target, const TensorView& weight, int64_t ignore_index,
                                         double label_smoothing, const TensorView& stats,
                                         const TensorView& grad_logits) {
  check_cross_entropy_views("cross_entropy_backward", logits, target, weight);
  const Launch1d l = launch_1d(logits.numel());
  if (l.blocks == 0) return;
  DeviceGuard guard(logits.device_index);
  const cudaStream_t stream = current_stream(logits.device_index);
  if (logits.dtype == kFloat32) {
    launch_backward<float>(grad_loss, logits, target, weight, ignore_index, label_smoothing, stats, grad_logits, l,
                           stream);
  } else {
    launch_backward<double>(grad_loss, logits, target, weight, ignore_index, label_smoothing, stats, grad_logits, l,
                            stream);
  }
}

}  // namespace ember::cuda_impl
