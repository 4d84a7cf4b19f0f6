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
      C unused = 0;
      for (int64_t i = begin; i < end; ++i) step(p[i], g[i], b != nullptr ? b[i] : unused);
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
    parallel_for(param.numel(), kOptimGrain, [&](int64_t begin, int64_t end) {
      C unused = 0;
      for (int64_t i = begin; i < end; ++i) step(p[i], g[i], m[i], v[i], mx != nullptr ? mx[i] : unused);
    });
  };
  if (param.dtype == kFloat32) {
    run.template operator()<float>();
  } else {
    run.template operator()<double>();
  }
}

}  // namespace ember::cpu
