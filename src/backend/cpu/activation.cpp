// CPU kernels of the activations with parameters: elementwise_loop.h's loops around the functors
// of kernels/activation_ops.h (shared with CUDA's activation.cu).
#include "backend/cpu/cpu_backend.h"
#include "backend/cpu/elementwise_loop.h"
#include "backend/op_visit.h"

namespace ember::cpu {

using namespace elementwise;

void CpuBackend::activation(ActivationOp op, const TensorView& x, const ActivationArgs& args, const TensorView& out) {
  check_dtype(out.dtype, x.dtype, op_name(op), "output");
  dispatch_floating(x.dtype, op_name(op), [&]<typename T>() {
    using C = compute_t<T>;
    visit_activation<C>(op, args, [&](const auto& forward, const auto&, const char* name) {
      unary_loop<T, C, T>(name, x, out, forward);
    });
  });
}

void CpuBackend::activation_backward(ActivationOp op, const TensorView& grad, const TensorView& x,
                                     const ActivationArgs& args, const TensorView& grad_x) {
  check_dtype(grad.dtype, x.dtype, op_name(op), "grad");
  check_dtype(grad_x.dtype, x.dtype, op_name(op), "grad_x");
  dispatch_floating(x.dtype, op_name(op), [&]<typename T>() {
    using C = compute_t<T>;
    visit_activation<C>(op, args, [&](const auto&, const auto& backward, const char* name) {
      binary_loop<T, C, T>(name, grad, x, grad_x, backward);
    });
  });
}

}  // namespace ember::cpu
