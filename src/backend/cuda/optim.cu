// CUDA fused optimizer updates: one kernel per parameter instead of a dozen element-wise kernels
// with a temporary each. The math is kernels/optim_ops.h's, the CPU's own; this file is built
// with -fmad=false (see CMakeLists.txt) so that nvcc does not contract a multiply and an add
// that PyTorch, and the CPU, round separately.
#include "backend/cuda/cuda_backend.h"
#include "backend/cuda/launch.h"
#include "backend/cuda/runtime.h"
#include "core/check.h"
#include "kernels/optim_ops.h"

namespace ember::cuda_impl {
namespace {

template <typename C>
__global__ void sgd_kernel(C* param, const C* grad, C* buffer, int64_t n, kernels::SgdStep step) {
  const int64_t stride = static_cast<int64_t>(blockDim.x) * gridDim.x;
  for (int64_t i = static_cast<int64_t>(blockIdx.x) * blockDim.x + threadIdx.x; i < n; i += stride) {
    C unused = 0;
    step(param[i], grad[i], buffer != nullptr ? buffer[i] : unused);
  }
}

template <typename C>
__global__ void adam_kernel(C* param, const C* grad, C* exp_avg, C* exp_avg_sq, C* max_exp_avg_sq, int64_t n,
                            kernels::AdamStep step) {
  const int64_t stride = static_cast<int64_t>(blockDim.x) * gridDim.x;
  for (int64_t i = static_cast<int64_t>(blockIdx.x) * blockDim.x + threadIdx.x; i < n; i += stride) {
    C unused = 0;
    step(param[i], grad[i], exp_avg[i], exp_avg_sq[i], max_exp_avg_sq != nullptr ? max_exp_avg_sq[i] : unused);
  }
}

template <typename C>
__global__ void adadelta_kernel(C* param, const C* grad, C* square_avg, C* acc_delta, int64_t n,
                                kernels::AdadeltaStep step) {
  const int64_t stride = static_cast<int64_t>(blockDim.x) * gridDim.x;
  for (int64_t i = static_cast<int64_t>(blockIdx.x) * blockDim.x + threadIdx.x; i < n; i += stride) {
    step(param[i], grad[i], square_avg[i], acc_delta[i]);
  }
}

}  // namespace

void CudaBackend::sgd_step(const TensorView& param, const TensorView& grad, const TensorView& momentum_buffer,
                           const kernels::SgdStep& step) {
  check_fused_update_views("sgd_step", param, {&grad, &momentum_buffer});
  EMBER_CHECK(step.momentum == 0 || momentum_buffer.data != nullptr, "[sgd_step] momentum needs a buffer");
  const int64_t n = param.numel();
  const Launch1d launch = launch_1d(n);
  if (launch.blocks == 0) return;
  DeviceGuard guard(param.device_index);
  cudaStream_t stream = current_stream(param.device_index);
  if (param.dtype == kFloat32) {
    sgd_kernel<float><<<launch.blocks, launch.threads, 0, stream>>>(param.ptr<float>(), grad.ptr<const float>(),
                                                                    momentum_buffer.ptr<float>(), n, step);
  } else {
    sgd_kernel<double><<<launch.blocks, launch.threads, 0, stream>>>(param.ptr<double>(), grad.ptr<const double>(),
                                                                     momentum_buffer.ptr<double>(), n, step);
  }
  check_launch("sgd_step");
}

void CudaBackend::adam_step(const TensorView& param, const TensorView& grad, const TensorView& exp_avg,
                            const TensorView& exp_avg_sq, const TensorView& max_exp_avg_sq,
                            const kernels::AdamStep& step) {
  check_fused_update_views("adam_step", param, {&grad, &exp_avg, &exp_avg_sq, &max_exp_avg_sq});
  EMBER_CHECK(exp_avg.data != nullptr && exp_avg_sq.data != nullptr && (!step.amsgrad || max_exp_avg_sq.data),
              "[adam_step] missing state");
  const int64_t n = param.numel();
  const Launch1d launch = launch_1d(n);
  if (launch.blocks == 0) return;
  DeviceGuard guard(param.device_index);
  cudaStream_t stream = current_stream(param.device_index);
  if (param.dtype == kFloat32) {
    adam_kernel<float><<<launch.blocks, launch.threads, 0, stream>>>(param.ptr<float>(), grad.ptr<const float>(),
                                                                     exp_avg.ptr<float>(), exp_avg_sq.ptr<float>(),
                                                                     max_exp_avg_sq.ptr<float>(), n, step);
  } else {
    adam_kernel<double><<<launch.blocks, launch.threads, 0, stream>>>(param.ptr<double>(), grad.ptr<const double>(),
                                                                      exp_avg.ptr<double>(), exp_avg_sq.ptr<double>(),
                                                                      max_exp_avg_sq.ptr<double>(), n, step);
  }
  check_launch("adam_step");
}

void CudaBackend::adadelta_step(const TensorView& param, const TensorView& grad, const TensorView& square_avg,
                                const TensorView& acc_delta, const kernels::AdadeltaStep& step) {
  check_fused_update_views("adadelta_step", param, {&grad, &square_avg, &acc_delta});
  EMBER_CHECK(square_avg.data != nullptr && acc_delta.data != nullptr, "[adadelta_step] missing state");
  const int64_t n = param.numel();
  const Launch1d launch = launch_1d(n);
  if (launch.blocks == 0) return;
  DeviceGuard guard(param.device_index);
  cudaStream_t stream = current_stream(param.device_index);
  if (param.dtype == kFloat32) {
    adadelta_kernel<float><<<launch.blocks, launch.threads, 0, stream>>>(
        param.ptr<float>(), grad.ptr<const float>(), square_avg.ptr<float>(), acc_delta.ptr<float>(), n, step);
  } else {
    adadelta_kernel<double><<<launch.blocks, launch.threads, 0, stream>>>(
        param.ptr<double>(), grad.ptr<const double>(), square_avg.ptr<double>(), acc_delta.ptr<double>(), n, step);
  }
  check_launch("adadelta_step");
}

}  // namespace ember::cuda_impl
