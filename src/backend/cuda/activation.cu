// CUDA kernels of the activations with parameters: elementwise.cuh's launchers around the functors
// of kernels/activation_ops.h, the same math the CPU loops call (cpu/activation.cpp).
#include "backend/cuda/cuda_backend.h"
#include "backend/cuda/elementwise.cuh"
#include "backend/op_visit.h"
#include "kernels/dtype_dispatch.h"

namespace ember::cuda_impl {

void CudaBackend::activation(ActivationOp op, const TensorView& x, const ActivationArgs& args, const TensorView& out) {
  check_dtype(out.dtype, x.dtype, op_name(op), "output");
  kernels::dispatch_floating(x.dtype, op_name(op), [&]<typename T>() {
    using C = kernels::compute_t<T>;
    visit_activation<C>(
        op, args, [&]<typename Forward, typename Backward>(const Forward& forward, const Backward&, const char* name) {
          launch_map<T, T>(name, ConvertedUnary<T, C, T, Forward>{forward}, out, x);
        });
  });
}

void CudaBackend::activation_backward(ActivationOp op, const TensorView& grad, const TensorView& x,
                                      const ActivationArgs& args, const TensorView& grad_x) {
  check_dtype(grad.dtype, x.dtype, op_name(op), "grad");
  check_dtype(grad_x.dtype, x.dtype, op_name(op), "grad_x");
  kernels::dispatch_floating(x.dtype, op_name(op), [&]<typename T>() {
    using C = kernels::compute_t<T>;
    visit_activation<C>(
        op, args, [&]<typename Forward, typename Backward>(const Forward&, const Backward& backward, const char* name) {
          launch_map<T, T, T>(name, ConvertedBinary<T, C, T, Backward>{backward}, grad_x, grad, x);
        });
  });
}

}  // namespace ember::cuda_impl
