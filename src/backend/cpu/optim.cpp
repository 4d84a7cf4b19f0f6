// CPU fused optimizer updates: one pass over a parameter and its state instead of a dozen
// element-wise ops with a temporary each. The math is kernels/optim_ops.h's; this file is built
// with -ffp-contract=off (see CMakeLists.txt) so the result is bit for bit the op-by-op one.
#include "backend/cpu/cpu_backend.h"
#include "backend/cpu/parallel.h"
#include "core/check.h"
#include "kernels/optim_ops.h"

namespace ember::cpu {
namespace {

// Streams of this many elements per task keep a step's few passes in L2.
constexpr int64_t kOptimGrain = 16384;

// The loops work on locals and restrict pointers so that GCC vectorises them; the functor's
// options are copied into a local so that its branches are loop-invariant and get unswitched.
template <typename C>
void sgd_loop(kernels::SgdStep step, C* __restrict p, const C* __restrict g, int64_t begin, int64_t end) {
  for (int64_t i = begin; i < end; ++i) {
    C param = p[i], unused = 0;
    step(param, g[i], unused);
    p[i] = param;
  }
}

template <typename C>
void sgd_loop(kernels::SgdStep step, C* __restrict p, const C* __restrict g, C* __restrict b, int64_t begin,
              int64_t end) {
  for (int64_t i = begin; i < end; ++i) {
    C param = p[i], buffer = b[i];
    step(param, g[i], buffer);
    p[i] = param;
    b[i] = buffer;
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

}  // namespace

void CpuBackend::sgd_step(const TensorView& param, const TensorView& grad, const TensorView& momentum_buffer,
                          const kernels::SgdStep& step) {
  check_fused_update_views("sgd_step", param, {&grad, &momentum_buffer});
  EMBER_CHECK(step.momentum == 0 || momentum_buffer.data != nullptr, "[sgd_step] momentum needs a buffer");
  auto run = [&]<typename C>() {
    C* p = param.ptr<C>();
    const C* g = grad.ptr<const C>();
    C* b = momentum_buffer.ptr<C>();
    parallel_for(param.numel(), kOptimGrain, [&](int64_t begin, int64_t end) {
      if (b == nullptr) {
        sgd_loop(step, p, g, begin, end);
      } else {
        sgd_loop(step, p, g, b, begin, end);
      }
    });
  };
  if (param.dtype == kFloat32) {
    run.template operator()<float>();
  } else {
    run.template operator()<double>();
  }
}

void CpuBackend::adam_step(const TensorView& param, const TensorView& grad, const TensorView& exp_avg,
                           const TensorView& exp_avg_sq, const TensorView& max_exp_avg_sq,
                           const kernels::AdamStep& step) {
  check_fused_update_views("adam_step", param, {&grad, &exp_avg, &exp_avg_sq, &max_exp_avg_sq});
  EMBER_CHECK(exp_avg.data != nullptr && exp_avg_sq.data != nullptr && (!step.amsgrad || max_exp_avg_sq.data),
              "[adam_step] missing state");
  auto run = [&]<typename C>() {
    C* p = param.ptr<C>();
    const C* g = grad.ptr<const C>();
    C* m = exp_avg.ptr<C>();
    C* v = exp_avg_sq.ptr<C>();
    C* mx = max_exp_avg_sq.ptr<C>();
    parallel_for(param.numel(), kOptimGrain,
                 [&](int64_t begin, int64_t end) { adam_range(step, p, g, m, v, mx, begin, end); });
  };
  if (param.dtype == kFloat32) {
    run.template operator()<float>();
  } else {
    run.template operator()<double>();
  }
}

void CpuBackend::adadelta_step(const TensorView& param, const TensorView& grad, const TensorView& square_avg,
                               const TensorView& acc_delta, const kernels::AdadeltaStep& step) {
  check_fused_update_views("adadelta_step", param, {&grad, &square_avg, &acc_delta});
  EMBER_CHECK(square_avg.data != nullptr && acc_delta.data != nullptr, "[adadelta_step] missing state");
  auto run = [&]<typename C>() {
    C* p = param.ptr<C>();
    const C* g = grad.ptr<const C>();
    C* s = square_avg.ptr<C>();
    C* a = acc_delta.ptr<C>();
    parallel_for(param.numel(), kOptimGrain, [&](int64_t begin, int64_t end) {
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

}  // namespace ember::cpu
