// CPU fused optimizer updates: one pass over a parameter and its state instead of a dozen
// element-wise ops with a temporary each. The math is kernels/optim_ops.h's; this file is built
// with -ffp-contract=off (see CMakeLists.txt) so the result is bit for bit the op-by-op one.
#include "backend/cpu/cpu_backend.h"
#include "base/parallel.h"
#include "core/check.h"
#include "kernels/optim_ops.h"

namespace ember::cpu {
namespace {

// Streams of this many elements per task keep a step's few passes in L2.
constexpr int64_t kOptimGrain = 16384;

// The loops work on locals and restrict pointers so that GCC vectorises them; the functor's
// options are copied into a local, and its boolean options are fixed per instantiation from
// template arguments: GCC vectorises a loop whose selects fold away, and not one that reads them
// at run time (a scalar loop ran SGD with momentum five times slower).
template <bool kMaximize, typename C>
void sgd_loop(kernels::SgdStep step, C* __restrict p, const C* __restrict g, int64_t begin, int64_t end) {
  step.maximize = kMaximize;
  step.momentum = 0;
  for (int64_t i = begin; i < end; ++i) {
    C param = p[i], unused = 0;
    step(param, g[i], unused);
    p[i] = param;
  }
}

template <bool kMaximize, bool kFirstStep, bool kNesterov, typename C>
void sgd_momentum_loop(kernels::SgdStep step, C* __restrict p, const C* __restrict g, C* __restrict b, int64_t begin,
                       int64_t end) {
  step.maximize = kMaximize;
  step.first_step = kFirstStep;
  step.nesterov = kNesterov;
  for (int64_t i = begin; i < end; ++i) {
    C param = p[i], buffer = kFirstStep ? C(0) : b[i];
    step(param, g[i], buffer);
    p[i] = param;
    b[i] = buffer;
  }
}

template <typename C>
void sgd_range(const kernels::SgdStep& step, C* p, const C* g, C* b, int64_t begin, int64_t end) {
  if (b == nullptr) {
    return step.maximize ? sgd_loop<true>(step, p, g, begin, end) : sgd_loop<false>(step, p, g, begin, end);
  }
  const int flags = (step.maximize ? 4 : 0) | (step.first_step ? 2 : 0) | (step.nesterov ? 1 : 0);
  switch (flags) {
    case 0:
      return sgd_momentum_loop<false, false, false>(step, p, g, b, begin, end);
    case 1:
      return sgd_momentum_loop<false, false, true>(step, p, g, b, begin, end);
    case 2:
      return sgd_momentum_loop<false, true, false>(step, p, g, b, begin, end);
    case 3:
      return sgd_momentum_loop<false, true, true>(step, p, g, b, begin, end);
    case 4:
      return sgd_momentum_loop<true, false, false>(step, p, g, b, begin, end);
    case 5:
      return sgd_momentum_loop<true, false, true>(step, p, g, b, begin, end);
    case 6:
      return sgd_momentum_loop<true, true, false>(step, p, g, b, begin, end);
    default:
      return sgd_momentum_loop<true, true, true>(step, p, g, b, begin, end);
  }
}

// Adam's boolean options are fixed per instantiation: set from template arguments in the local
// copy, they fold away, and GCC vectorises the loop (it will not with them read at run time).
template <bool kMaximize, bool kDecoupled, bool kAmsgrad, typename C>
void adam_loop(kernels::AdamStep step, C* __restrict p, const C* __restrict g, C* __restrict m, C* __restrict v,
               C* __restrict mx, int64_t begin, int64_t end) {
  step.maximize = kMaximize;
  step.decoupled = kDecoupled;
  step.amsgrad = kAmsgrad;
  for (int64_t i = begin; i < end; ++i) {
    C param = p[i], exp_avg = m[i], exp_avg_sq = v[i], max_sq = kAmsgrad ? mx[i] : C(0);
    step(param, g[i], exp_avg, exp_avg_sq, max_sq);
    p[i] = param;
    m[i] = exp_avg;
    v[i] = exp_avg_sq;
    if constexpr (kAmsgrad) mx[i] = max_sq;
  }
}

template <typename C>
void adam_range(const kernels::AdamStep& step, C* p, const C* g, C* m, C* v, C* mx, int64_t begin, int64_t end) {
  const int flags = (step.maximize ? 4 : 0) | (step.decoupled ? 2 : 0) | (step.amsgrad ? 1 : 0);
  switch (flags) {
    case 0:
      return adam_loop<false, false, false>(step, p, g, m, v, mx, begin, end);
    case 1:
      return adam_loop<false, false, true>(step, p, g, m, v, mx, begin, end);
    case 2:
      return adam_loop<false, true, false>(step, p, g, m, v, mx, begin, end);
    case 3:
      return adam_loop<false, true, true>(step, p, g, m, v, mx, begin, end);
    case 4:
      return adam_loop<true, false, false>(step, p, g, m, v, mx, begin, end);
    case 5:
      return adam_loop<true, false, true>(step, p, g, m, v, mx, begin, end);
    case 6:
      return adam_loop<true, true, false>(step, p, g, m, v, mx, begin, end);
    default:
      return adam_loop<true, true, true>(step, p, g, m, v, mx, begin, end);
  }
}

template <bool kMaximize, typename C>
void adadelta_loop(kernels::AdadeltaStep step, C* __restrict p, const C* __restrict g, C* __restrict s, C* __restrict a,
                   int64_t begin, int64_t end) {
  step.maximize = kMaximize;
  for (int64_t i = begin; i < end; ++i) {
    C param = p[i], square_avg = s[i], acc_delta = a[i];
    step(param, g[i], square_avg, acc_delta);
    p[i] = param;
    s[i] = square_avg;
    a[i] = acc_delta;
  }
}

// As for Adam: the boolean options as template arguments (the state a variant does not use is a
// local that the compiler drops).
template <bool kMaximize, bool kCentered, bool kMomentum, typename C>
void rmsprop_loop(kernels::RmspropStep step, C* __restrict p, const C* __restrict g, C* __restrict s, C* __restrict ga,
                  C* __restrict b, int64_t begin, int64_t end) {
  step.maximize = kMaximize;
  step.centered = kCentered;
  if constexpr (!kMomentum) step.momentum = 0;
  for (int64_t i = begin; i < end; ++i) {
    C param = p[i], square_avg = s[i], grad_avg = kCentered ? ga[i] : C(0), buffer = kMomentum ? b[i] : C(0);
    step(param, g[i], square_avg, grad_avg, buffer);
    p[i] = param;
    s[i] = square_avg;
    if constexpr (kCentered) ga[i] = grad_avg;
    if constexpr (kMomentum) b[i] = buffer;
  }
}

template <typename C>
void rmsprop_range(const kernels::RmspropStep& step, C* p, const C* g, C* s, C* ga, C* b, int64_t begin, int64_t end) {
  const int flags = (step.maximize ? 4 : 0) | (step.centered ? 2 : 0) | (step.momentum > 0 ? 1 : 0);
  switch (flags) {
    case 0:
      return rmsprop_loop<false, false, false>(step, p, g, s, ga, b, begin, end);
    case 1:
      return rmsprop_loop<false, false, true>(step, p, g, s, ga, b, begin, end);
    case 2:
      return rmsprop_loop<false, true, false>(step, p, g, s, ga, b, begin, end);
    case 3:
      return rmsprop_loop<false, true, true>(step, p, g, s, ga, b, begin, end);
    case 4:
      return rmsprop_loop<true, false, false>(step, p, g, s, ga, b, begin, end);
    case 5:
      return rmsprop_loop<true, false, true>(step, p, g, s, ga, b, begin, end);
    case 6:
      return rmsprop_loop<true, true, false>(step, p, g, s, ga, b, begin, end);
    default:
      return rmsprop_loop<true, true, true>(step, p, g, s, ga, b, begin, end);
  }
}

/// Whether a step's skip flag (null: none) holds true. On the CPU the flag is host memory,
/// written by ops that have finished, so reading it waits for nothing.
bool skipped(const TensorView& skip) { return skip.data != nullptr && *skip.ptr<const bool>(); }

}  // namespace

void CpuBackend::sgd_step(const TensorView& param, const TensorView& grad, const TensorView& momentum_buffer,
                          const kernels::SgdStep& step, const TensorView& skip) {
  check_sgd_step("sgd_step", param, grad, momentum_buffer, step, skip);
  if (skipped(skip)) return;
  auto run = [&]<typename C>() {
    C* p = param.ptr<C>();
    const C* g = grad.ptr<const C>();
    C* b = momentum_buffer.ptr<C>();
    base::parallel_for(param.numel(), kOptimGrain,
                       [&](int64_t begin, int64_t end) { sgd_range(step, p, g, b, begin, end); });
  };
  if (param.dtype == kFloat32) {
    run.template operator()<float>();
  } else {
    run.template operator()<double>();
  }
}

void CpuBackend::adam_step(const TensorView& param, const TensorView& grad, const TensorView& exp_avg,
                           const TensorView& exp_avg_sq, const TensorView& max_exp_avg_sq,
                           const kernels::AdamStep& step, const TensorView& skip) {
  check_adam_step("adam_step", param, grad, exp_avg, exp_avg_sq, max_exp_avg_sq, step, skip);
  if (skipped(skip)) return;
  auto run = [&]<typename C>() {
    C* p = param.ptr<C>();
    const C* g = grad.ptr<const C>();
    C* m = exp_avg.ptr<C>();
    C* v = exp_avg_sq.ptr<C>();
    C* mx = max_exp_avg_sq.ptr<C>();
    base::parallel_for(param.numel(), kOptimGrain,
                       [&](int64_t begin, int64_t end) { adam_range(step, p, g, m, v, mx, begin, end); });
  };
  if (param.dtype == kFloat32) {
    run.template operator()<float>();
  } else {
    run.template operator()<double>();
  }
}

void CpuBackend::adadelta_step(const TensorView& param, const TensorView& grad, const TensorView& square_avg,
                               const TensorView& acc_delta, const kernels::AdadeltaStep& step, const TensorView& skip) {
  check_adadelta_step("adadelta_step", param, grad, square_avg, acc_delta, skip);
  if (skipped(skip)) return;
  auto run = [&]<typename C>() {
    C* p = param.ptr<C>();
    const C* g = grad.ptr<const C>();
    C* s = square_avg.ptr<C>();
    C* a = acc_delta.ptr<C>();
    base::parallel_for(param.numel(), kOptimGrain, [&](int64_t begin, int64_t end) {
      if (step.maximize) {
        adadelta_loop<true>(step, p, g, s, a, begin, end);
      } else {
        adadelta_loop<false>(step, p, g, s, a, begin, end);
      }
    });
  };
  if (param.dtype == kFloat32) {
    run.template operator()<float>();
  } else {
    run.template operator()<double>();
  }
}

void CpuBackend::rmsprop_step(const TensorView& param, const TensorView& grad, const TensorView& square_avg,
                              const TensorView& grad_avg, const TensorView& momentum_buffer,
                              const kernels::RmspropStep& step, const TensorView& skip) {
  check_rmsprop_step("rmsprop_step", param, grad, square_avg, grad_avg, momentum_buffer, step, skip);
  if (skipped(skip)) return;
  auto run = [&]<typename C>() {
    C* p = param.ptr<C>();
    const C* g = grad.ptr<const C>();
    C* s = square_avg.ptr<C>();
    C* ga = grad_avg.ptr<C>();
    C* b = momentum_buffer.ptr<C>();
    base::parallel_for(param.numel(), kOptimGrain,
                       [&](int64_t begin, int64_t end) { rmsprop_range(step, p, g, s, ga, b, begin, end); });
  };
  if (param.dtype == kFloat32) {
    run.template operator()<float>();
  } else {
    run.template operator()<double>();
  }
}

// The multi-tensor forms loop over the single-tensor updates: on the CPU a call costs no launch,
// and each parameter's pass is already spread over the threads. Every tensor is checked before
// any is written, as a GPU launch would fail before writing anything.

void CpuBackend::multi_tensor_sgd_step(std::span<const OptimTensors> tensors, std::span<const kernels::SgdStep> steps,
                                       const TensorView& skip) {
  check_multi_tensor_step("multi_tensor_sgd_step", tensors, steps, skip);
  for (size_t i = 0; i < tensors.size(); ++i) {
    const OptimTensors& t = tensors[i];
    sgd_step(t.param, t.grad, t.state[0], steps[i], skip);
  }
}

void CpuBackend::multi_tensor_adam_step(std::span<const OptimTensors> tensors, std::span<const kernels::AdamStep> steps,
                                        const TensorView& skip) {
  check_multi_tensor_step("multi_tensor_adam_step", tensors, steps, skip);
  for (size_t i = 0; i < tensors.size(); ++i) {
    const OptimTensors& t = tensors[i];
    adam_step(t.param, t.grad, t.state[0], t.state[1], t.state[2], steps[i], skip);
  }
}

void CpuBackend::multi_tensor_adadelta_step(std::span<const OptimTensors> tensors,
                                            std::span<const kernels::AdadeltaStep> steps, const TensorView& skip) {
  check_multi_tensor_step("multi_tensor_adadelta_step", tensors, steps, skip);
  for (size_t i = 0; i < tensors.size(); ++i) {
    const OptimTensors& t = tensors[i];
    adadelta_step(t.param, t.grad, t.state[0], t.state[1], steps[i], skip);
  }
}

void CpuBackend::multi_tensor_rmsprop_step(std::span<const OptimTensors> tensors,
                                           std::span<const kernels::RmspropStep> steps, const TensorView& skip) {
  check_multi_tensor_step("multi_tensor_rmsprop_step", tensors, steps, skip);
  for (size_t i = 0; i < tensors.size(); ++i) {
    const OptimTensors& t = tensors[i];
    rmsprop_step(t.param, t.grad, t.state[0], t.state[1], t.state[2], steps[i], skip);
  }
}

}  // namespace ember::cpu
