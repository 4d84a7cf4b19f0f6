// CUDA fused optimizer updates (SGD, Adam/AdamW, Adadelta, RMSprop): one kernel per parameter instead of a dozen
// element-wise kernels with a temporary each. The math is kernels/optim_ops.h's, the CPU's own; this file is built with
// -fmad=false (see CMakeLists.txt) so that nvcc does not contract a multiply and an add that PyTorch, and the CPU,
// round separately.
#include "backend/cuda/cuda_backend.h"
#include "backend/cuda/launch.h"
#include "backend/cuda/runtime.h"
#include "core/check.h"
#include "kernels/optim_ops.h"

namespace ember::cuda_impl {
namespace {

// One element's update per loop iteration; the bodies hold the typed pointers and the step.
// `skip` (null: none) is the device-side flag of Optimizer::step(skip): every thread reads the
// same byte, and when it holds true the launch writes nothing.
template <typename Body>
__global__ void update_kernel(int64_t n, Body body, const bool* skip) {
  if (skip != nullptr && *skip) return;
  const int64_t stride = static_cast<int64_t>(blockDim.x) * gridDim.x;
  for (int64_t i = static_cast<int64_t>(blockIdx.x) * blockDim.x + threadIdx.x; i < n; i += stride) body(i);
}

template <typename C>
struct SgdBody {
  C* param;
  const C* grad;
  C* buffer;  // null without momentum
  kernels::SgdStep step;
  __device__ void operator()(int64_t i) const {
    C unused = 0;
    step(param[i], grad[i], buffer != nullptr ? buffer[i] : unused);
  }
};

template <typename C>
struct AdamBody {
  C* param;
  const C* grad;
  C* exp_avg;
  C* exp_avg_sq;
  C* max_exp_avg_sq;  // null without amsgrad
  kernels::AdamStep step;
  __device__ void operator()(int64_t i) const {
    C unused = 0;
    step(param[i], grad[i], exp_avg[i], exp_avg_sq[i], max_exp_avg_sq != nullptr ? max_exp_avg_sq[i] : unused);
  }
};

template <typename C>
struct AdadeltaBody {
  C* param;
  const C* grad;
  C* square_avg;
  C* acc_delta;
  kernels::AdadeltaStep step;
  __device__ void operator()(int64_t i) const { step(param[i], grad[i], square_avg[i], acc_delta[i]); }
};

template <typename C>
struct RmspropBody {
  C* param;
  const C* grad;
  C* square_avg;
  C* grad_avg;         // null unless centered
  C* momentum_buffer;  // null without momentum
  kernels::RmspropStep step;
  __device__ void operator()(int64_t i) const {
    C unused_avg = 0, unused_buffer = 0;
    step(param[i], grad[i], square_avg[i], grad_avg != nullptr ? grad_avg[i] : unused_avg,
         momentum_buffer != nullptr ? momentum_buffer[i] : unused_buffer);
  }
};

/// Runs `make_body.template operator()<C>()`'s body over param's elements, C being float or
/// double as param's dtype says, on param's device and current stream.
template <typename MakeBody>
void launch_update(const char* op, const TensorView& param, const TensorView& skip, const MakeBody& make_body) {
  const int64_t n = param.numel();
  const Launch1d launch = launch_1d(n);
  if (launch.blocks == 0) return;
  DeviceGuard guard(param.device_index);
  cudaStream_t stream = current_stream(param.device_index);
  if (param.dtype == kFloat32) {
    update_kernel<<<launch.blocks, launch.threads, 0, stream>>>(n, make_body.template operator()<float>(),
                                                                skip.ptr<const bool>());
  } else {
    update_kernel<<<launch.blocks, launch.threads, 0, stream>>>(n, make_body.template operator()<double>(),
                                                                skip.ptr<const bool>());
  }
  check_launch(op);
}

}  // namespace

void CudaBackend::sgd_step(const TensorView& param, const TensorView& grad, const TensorView& momentum_buffer,
                           const kernels::SgdStep& step, const TensorView& skip) {
  check_fused_update_views("sgd_step", param, {&grad, &momentum_buffer}, skip);
  EMBER_CHECK(step.momentum == 0 || momentum_buffer.data != nullptr, "[sgd_step] momentum needs a buffer");
  launch_update("sgd_step", param, skip, [&]<typename C>() {
    return SgdBody<C>{param.ptr<C>(), grad.ptr<const C>(), momentum_buffer.ptr<C>(), step};
  });
}

void CudaBackend::adam_step(const TensorView& param, const TensorView& grad, const TensorView& exp_avg,
                            const TensorView& exp_avg_sq, const TensorView& max_exp_avg_sq,
                            const kernels::AdamStep& step, const TensorView& skip) {
  check_fused_update_views("adam_step", param, {&grad, &exp_avg, &exp_avg_sq, &max_exp_avg_sq}, skip);
  EMBER_CHECK(exp_avg.data != nullptr && exp_avg_sq.data != nullptr && (!step.amsgrad || max_exp_avg_sq.data),
              "[adam_step] missing state");
  launch_update("adam_step", param, skip, [&]<typename C>() {
    return AdamBody<C>{param.ptr<C>(),      grad.ptr<const C>(),     exp_avg.ptr<C>(),
                       exp_avg_sq.ptr<C>(), max_exp_avg_sq.ptr<C>(), step};
  });
}

void CudaBackend::adadelta_step(const TensorView& param, const TensorView& grad, const TensorView& square_avg,
                                const TensorView& acc_delta, const kernels::AdadeltaStep& step,
                                const TensorView& skip) {
  check_fused_update_views("adadelta_step", param, {&grad, &square_avg, &acc_delta}, skip);
  EMBER_CHECK(square_avg.data != nullptr && acc_delta.data != nullptr, "[adadelta_step] missing state");
  launch_update("adadelta_step", param, skip, [&]<typename C>() {
    return AdadeltaBody<C>{param.ptr<C>(), grad.ptr<const C>(), square_avg.ptr<C>(), acc_delta.ptr<C>(), step};
  });
}

void CudaBackend::rmsprop_step(const TensorView& param, const TensorView& grad, const TensorView& square_avg,
                               const TensorView& grad_avg, const TensorView& momentum_buffer,
                               const kernels::RmspropStep& step, const TensorView& skip) {
  check_fused_update_views("rmsprop_step", param, {&grad, &square_avg, &grad_avg, &momentum_buffer}, skip);
  EMBER_CHECK(square_avg.data != nullptr && (!step.centered || grad_avg.data != nullptr) &&
                  (step.momentum <= 0 || momentum_buffer.data != nullptr),
              "[rmsprop_step] missing state");
  launch_update("rmsprop_step", param, skip, [&]<typename C>() {
    return RmspropBody<C>{param.ptr<C>(),    grad.ptr<const C>(),      square_avg.ptr<C>(),
                          grad_avg.ptr<C>(), momentum_buffer.ptr<C>(), step};
  });
}

}  // namespace ember::cuda_impl
