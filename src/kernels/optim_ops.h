#pragma once
// One element's optimizer update, written once for the CPU loop and the CUDA kernel.
//
// ember's optimizers follow torch/optim's single-tensor implementations op for op, rounding to
// the parameter's dtype after every op as PyTorch does. A fused update must give the same bits,
// so these functors are the same sequence of the same element-wise functors (Add, Mul, Div,
// Sqrt, AddScaled, ...) with every scalar converted to C exactly as the front end converts a
// Python-style scalar (static_cast from double). Files instantiating them are compiled without
// floating-point contraction (-ffp-contract=off on the host, -fmad=false under nvcc), or a
// compiler could fuse a multiply and an add that PyTorch rounds separately.
//
// C is float or double: the fused path is taken only for float32 and float64 parameters (16-bit
// parameters would round to 16 bits between ops, which a float computation cannot reproduce).
#include "ember/half.h"  // EMBER_HD
#include "kernels/elementwise_ops.h"

namespace ember::kernels {

/// a + alpha * b as Tensor::add_(b, alpha) computes it: a plain add when alpha is 1 (the front
/// end takes that path), otherwise one fused multiply-add with alpha rounded to C.
template <typename C>
EMBER_HD C add_alpha(C a, C b, double alpha) {
  if (alpha == 1.0) return Add{}(a, b);
  return AddScaled<C>{static_cast<C>(alpha)}(a, b);
}

/// torch.optim.SGD's update of one element (momentum buffer included).
struct SgdStep {
  double lr = 0, weight_decay = 0, momentum = 0, dampening = 0;
  bool nesterov = false, maximize = false;
  bool first_step = false;  // the momentum buffer is created from this step's gradient

  template <typename C>
  EMBER_HD void operator()(C& param, C grad, C& buffer) const {
    C g = maximize ? Neg{}(grad) : grad;
    if (weight_decay != 0) g = add_alpha(g, param, weight_decay);
    if (momentum != 0) {
      if (first_step) {
        buffer = g;
      } else {
        buffer = add_alpha(Mul{}(buffer, static_cast<C>(momentum)), g, 1.0 - dampening);
      }
      g = nesterov ? add_alpha(g, buffer, momentum) : buffer;
    }
    param = add_alpha(param, g, -lr);
  }
};

/// torch.optim.Adam / AdamW's update of one element. The bias corrections are the caller's
/// (computed in double from the step count, as PyTorch computes them in Python).
struct AdamStep {
  double lr = 0, beta1 = 0, beta2 = 0, eps = 0, weight_decay = 0;
  double step_size = 0;              // lr / (1 - beta1^step)
  double bias_correction2_sqrt = 0;  // sqrt(1 - beta2^step)
  bool decoupled = false;            // AdamW's weight decay
  bool maximize = false, amsgrad = false;

  template <typename C>
  EMBER_HD void operator()(C& param, C grad, C& exp_avg, C& exp_avg_sq, C& max_exp_avg_sq) const {
    C g = maximize ? Neg{}(grad) : grad;
    if (weight_decay != 0) {
      if (decoupled) {
        param = Mul{}(param, static_cast<C>(1.0 - lr * weight_decay));
      } else {
        g = add_alpha(g, param, weight_decay);
      }
    }
    // exp_avg.lerp_(g, 1 - beta1), with the CPU formula that switches form at weight 0.5.
    const double weight = 1.0 - beta1;
    if (weight < 0.5) {
      exp_avg = add_alpha(exp_avg, Sub{}(g, exp_avg), weight);
    } else {
      exp_avg = add_alpha(g, Sub{}(g, exp_avg), -(1.0 - weight));
    }
    // exp_avg_sq.mul_(beta2).addcmul_(g, g, value=1 - beta2)
    exp_avg_sq = add_alpha(Mul{}(exp_avg_sq, static_cast<C>(beta2)), Mul{}(g, g), 1.0 - beta2);
    C second_moment = exp_avg_sq;
    if (amsgrad) {
      max_exp_avg_sq = Maximum{}(max_exp_avg_sq, exp_avg_sq);
      second_moment = max_exp_avg_sq;
    }
    const C denom = Add{}(Div{}(Sqrt{}(second_moment), static_cast<C>(bias_correction2_sqrt)), static_cast<C>(eps));
    param = add_alpha(param, Div{}(exp_avg, denom), -step_size);
  }
};

}  // namespace ember::kernels
