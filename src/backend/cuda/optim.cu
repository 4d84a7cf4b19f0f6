// CUDA fused optimizer updates (SGD, Adam/AdamW, Adadelta, RMSprop): one kernel per parameter instead of a dozen
// element-wise kernels with a temporary each, and the multi-tensor forms, one kernel per many parameters
// (multi_tensor_plan.h), which the optimizers use. The math is kernels/optim_ops.h's, the CPU's own; this file is built
// with -fmad=false (see CMakeLists.txt) so that nvcc does not contract a multiply and an add that PyTorch, and the CPU,
// round separately. Both forms apply the same per-element bodies, so they give the same bits.
#include <vector>

#include "backend/cuda/cuda_backend.h"
#include "backend/cuda/launch.h"
#include "backend/cuda/multi_tensor_plan.h"
#include "backend/cuda/runtime.h"
#include "core/check.h"
#include "kernels/optim_ops.h"

namespace ember::cuda_impl {
namespace {

// One element's update per loop iteration; the bodies hold the typed pointers and the step.
// `skip` (null: none) is the device-side flag of Optimizer::step(skip): every thread reads the
// same byte, and when it holds true the launch writes nothing.
template <typename Body>
__global__ void __launch_bounds__(kBlockThreads) update_kernel(int64_t n, Body body, const bool* skip) {
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

// ---- the multi-tensor forms ----

// Each rule's body built from one tensor's addresses in the launch's parameter block: data[0] is
// the parameter, data[1] its gradient, then the state in the single-tensor entry point's order.
template <typename C>
struct SgdRule {
  static constexpr int kDepth = 3;
  using Step = kernels::SgdStep;
  __device__ static SgdBody<C> body(C* const* data, const Step& step) { return {data[0], data[1], data[2], step}; }
};

template <typename C>
struct AdamRule {
  static constexpr int kDepth = 5;
  using Step = kernels::AdamStep;
  __device__ static AdamBody<C> body(C* const* data, const Step& step) {
    return {data[0], data[1], data[2], data[3], data[4], step};
  }
};

template <typename C>
struct AdadeltaRule {
  static constexpr int kDepth = 4;
  using Step = kernels::AdadeltaStep;
  __device__ static AdadeltaBody<C> body(C* const* data, const Step& step) {
    return {data[0], data[1], data[2], data[3], step};
  }
};

template <typename C>
struct RmspropRule {
  static constexpr int kDepth = 5;
  using Step = kernels::RmspropStep;
  __device__ static RmspropBody<C> body(C* const* data, const Step& step) {
    return {data[0], data[1], data[2], data[3], data[4], step};
  }
};

/// What one launch updates (MultiTensorLaunch, as the kernel reads it from its parameters).
template <typename C, int kDepth>
struct MultiTensorArgs {
  C* data[kDepth][kMultiTensorMaxTensors];  // null: a state the update does not use
  int64_t numel[kMultiTensorMaxTensors];
  uint32_t first_block[kMultiTensorMaxTensors + 1];
  uint8_t step_slot[kMultiTensorMaxTensors];
  int count;
};

template <typename Step>
struct StepTable {
  Step step[kMultiTensorMaxSteps];
};

// Before CUDA 12.1 (and on older drivers since) a kernel's parameters may take 4 KiB in all.
template <typename Rule>
constexpr bool fits_parameter_space() {
  return sizeof(MultiTensorArgs<double, Rule::kDepth>) + sizeof(StepTable<typename Rule::Step>) + sizeof(bool*) <= 4096;
}
static_assert(fits_parameter_space<SgdRule<double>>() && fits_parameter_space<AdamRule<double>>() &&
                  fits_parameter_space<AdadeltaRule<double>>() && fits_parameter_space<RmspropRule<double>>(),
              "a multi-tensor launch's parameters exceed 4 KiB: lower kMultiTensorMaxTensors");

// Each block updates one chunk of one tensor: its tensor is the run of blocks it falls in
// (run_of_block), its chunk its place in that run. Every thread of a block reads the same
// parameter words, which the constant cache broadcasts.
template <typename Rule, typename C>
__global__ void __launch_bounds__(kMultiTensorThreads)
    multi_update_kernel(MultiTensorArgs<C, Rule::kDepth> args, StepTable<typename Rule::Step> steps, const bool* skip) {
  if (skip != nullptr && *skip) return;
  const uint32_t block = blockIdx.x;
  const int t = run_of_block(args.first_block, args.count, block);
  C* data[Rule::kDepth];
#pragma unroll
  for (int d = 0; d < Rule::kDepth; ++d) data[d] = args.data[d][t];
  const auto body = Rule::body(data, steps.step[args.step_slot[t]]);
  const int64_t begin = static_cast<int64_t>(block - args.first_block[t]) * kMultiTensorChunk;
  const int64_t end = begin + kMultiTensorChunk < args.numel[t] ? begin + kMultiTensorChunk : args.numel[t];
  for (int64_t i = begin + threadIdx.x; i < end; i += kMultiTensorThreads) body(i);
}

/// The launches of a multi-tensor update of Rule's kind in dtype C, on the tensors' device and
/// its current stream: one per plan_multi_tensor launch.
template <template <typename> class RuleOf, typename C>
void launch_multi_typed(const char* op, std::span<const OptimTensors> tensors,
                        std::span<const typename RuleOf<C>::Step> steps, const TensorView& skip) {
  using Rule = RuleOf<C>;
  using Step = typename Rule::Step;
  std::vector<int64_t> numels;
  numels.reserve(tensors.size());
  for (const OptimTensors& t : tensors) numels.push_back(t.param.numel());
  const std::vector<int> ids = step_ids(steps, [](const Step& a, const Step& b) { return same_step(a, b); });
  const std::vector<MultiTensorLaunch> launches = plan_multi_tensor(numels, ids);
  if (launches.empty()) return;
  const int device = tensors[0].param.device_index;
  DeviceGuard guard(device);
  cudaStream_t stream = current_stream(device);
  for (const MultiTensorLaunch& launch : launches) {
    MultiTensorArgs<C, Rule::kDepth> args{};
    StepTable<Step> table{};
    args.count = static_cast<int>(launch.tensors.size());
    for (int k = 0; k < args.count; ++k) {
      const OptimTensors& t = tensors[static_cast<size_t>(launch.tensors[static_cast<size_t>(k)])];
      args.data[0][k] = t.param.ptr<C>();
      // The kernels only read the gradient (the bodies hold it as const C*).
      args.data[1][k] = const_cast<C*>(t.grad.ptr<const C>());
      for (int d = 2; d < Rule::kDepth; ++d) args.data[d][k] = t.state[d - 2].ptr<C>();
      args.numel[k] = t.param.numel();
      args.first_block[k] = launch.first_block[static_cast<size_t>(k)];
      args.step_slot[k] = launch.step_slot[static_cast<size_t>(k)];
    }
    args.first_block[args.count] = launch.blocks();
    for (size_t s = 0; s < launch.steps.size(); ++s) table.step[s] = steps[static_cast<size_t>(launch.steps[s])];
    multi_update_kernel<Rule, C>
        <<<launch.blocks(), kMultiTensorThreads, 0, stream>>>(args, table, skip.ptr<const bool>());
    check_launch(op);
  }
}

template <template <typename> class RuleOf, typename Step>
void launch_multi(const char* op, std::span<const OptimTensors> tensors, std::span<const Step> steps,
                  const TensorView& skip) {
  if (tensors.empty()) return;
  if (tensors[0].param.dtype == kFloat32) {
    launch_multi_typed<RuleOf, float>(op, tensors, steps, skip);
  } else {
    launch_multi_typed<RuleOf, double>(op, tensors, steps, skip);
  }
}

}  // namespace

void CudaBackend::sgd_step(const TensorView& param, const TensorView& grad, const TensorView& momentum_buffer,
                           const kernels::SgdStep& step, const TensorView& skip) {
  check_sgd_step("sgd_step", param, grad, momentum_buffer, step, skip);
  launch_update("sgd_step", param, skip, [&]<typename C>() {
    return SgdBody<C>{param.ptr<C>(), grad.ptr<const C>(), momentum_buffer.ptr<C>(), step};
  });
}

void CudaBackend::adam_step(const TensorView& param, const TensorView& grad, const TensorView& exp_avg,
                            const TensorView& exp_avg_sq, const TensorView& max_exp_avg_sq,
                            const kernels::AdamStep& step, const TensorView& skip) {
  check_adam_step("adam_step", param, grad, exp_avg, exp_avg_sq, max_exp_avg_sq, step, skip);
  launch_update("adam_step", param, skip, [&]<typename C>() {
    return AdamBody<C>{param.ptr<C>(),      grad.ptr<const C>(),     exp_avg.ptr<C>(),
                       exp_avg_sq.ptr<C>(), max_exp_avg_sq.ptr<C>(), step};
  });
}

void CudaBackend::adadelta_step(const TensorView& param, const TensorView& grad, const TensorView& square_avg,
                                const TensorView& acc_delta, const kernels::AdadeltaStep& step,
                                const TensorView& skip) {
  check_adadelta_step("adadelta_step", param, grad, square_avg, acc_delta, skip);
  launch_update("adadelta_step", param, skip, [&]<typename C>() {
    return AdadeltaBody<C>{param.ptr<C>(), grad.ptr<const C>(), square_avg.ptr<C>(), acc_delta.ptr<C>(), step};
  });
}

void CudaBackend::rmsprop_step(const TensorView& param, const TensorView& grad, const TensorView& square_avg,
                               const TensorView& grad_avg, const TensorView& momentum_buffer,
                               const kernels::RmspropStep& step, const TensorView& skip) {
  check_rmsprop_step("rmsprop_step", param, grad, square_avg, grad_avg, momentum_buffer, step, skip);
  launch_update("rmsprop_step", param, skip, [&]<typename C>() {
    return RmspropBody<C>{param.ptr<C>(),    grad.ptr<const C>(),      square_avg.ptr<C>(),
                          grad_avg.ptr<C>(), momentum_buffer.ptr<C>(), step};
  });
}

void CudaBackend::multi_tensor_sgd_step(std::span<const OptimTensors> tensors, std::span<const kernels::SgdStep> steps,
                                        const TensorView& skip) {
  check_multi_tensor_step("multi_tensor_sgd_step", tensors, steps, skip);
  launch_multi<SgdRule>("multi_tensor_sgd_step", tensors, steps, skip);
}

void CudaBackend::multi_tensor_adam_step(std::span<const OptimTensors> tensors,
                                         std::span<const kernels::AdamStep> steps, const TensorView& skip) {
  check_multi_tensor_step("multi_tensor_adam_step", tensors, steps, skip);
  launch_multi<AdamRule>("multi_tensor_adam_step", tensors, steps, skip);
}

void CudaBackend::multi_tensor_adadelta_step(std::span<const OptimTensors> tensors,
                                             std::span<const kernels::AdadeltaStep> steps, const TensorView& skip) {
  check_multi_tensor_step("multi_tensor_adadelta_step", tensors, steps, skip);
  launch_multi<AdadeltaRule>("multi_tensor_adadelta_step", tensors, steps, skip);
}

void CudaBackend::multi_tensor_rmsprop_step(std::span<const OptimTensors> tensors,
                                            std::span<const kernels::RmspropStep> steps, const TensorView& skip) {
  check_multi_tensor_step("multi_tensor_rmsprop_step", tensors, steps, skip);
  launch_multi<RmspropRule>("multi_tensor_rmsprop_step", tensors, steps, skip);
}

}  // namespace ember::cuda_impl
