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

/// a + alpha * b as Tensor::add_(b, alpha) computes it: one fused multiply-add with alpha
/// rounded to C. (For alpha 1 the front end adds instead; fma(1, b, a) rounds a + b once, the
/// same bits, so no branch is needed here, which keeps the CPU loops vectorisable.)
template <typename C>
EMBER_HD C add_alpha(C a, C b, double alpha) {
  return AddScaled<C>{static_cast<C>(alpha)}(a, b);
}

/// torch.optim.SGD's update of one element (momentum buffer included). Like AdamStep, each option
/// selects between values computed either way, so that the CPU loops vectorise.
struct SgdStep {
  double lr = 0, weight_decay = 0, momentum = 0, dampening = 0;
  bool nesterov = false, maximize = false;
  bool first_step = false;  // the momentum buffer is created from this step's gradient

  template <typename C>
  EMBER_HD void operator()(C& param, C grad, C& buffer) const {
    C g = maximize ? Neg{}(grad) : grad;
    const C decayed = add_alpha(g, param, weight_decay);
    g = weight_decay != 0 ? decayed : g;
    // On the first step the buffer holds no value yet: what is computed from it is not used.
    const C continued = add_alpha(Mul{}(buffer, static_cast<C>(momentum)), g, 1.0 - dampening);
    const C new_buffer = first_step ? g : continued;
    const C nesterov_g = add_alpha(g, new_buffer, momentum);
    buffer = momentum != 0 ? new_buffer : buffer;
    g = momentum != 0 ? (nesterov ? nesterov_g : new_buffer) : g;
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

  // Each option picks between values computed either way, without branches: the CPU loop then
  // vectorises (GCC will not if-convert this many loop-invariant branches), and a GPU warp never
  // diverges on them anyway.
  template <typename C>
  EMBER_HD void operator()(C& param, C grad, C& exp_avg, C& exp_avg_sq, C& max_exp_avg_sq) const {
    C g = maximize ? Neg{}(grad) : grad;
    const C decayed_param = Mul{}(param, static_cast<C>(1.0 - lr * weight_decay));  // AdamW
    const C l2_grad = add_alpha(g, param, weight_decay);                            // Adam
    param = weight_decay != 0 && decoupled ? decayed_param : param;
    g = weight_decay != 0 && !decoupled ? l2_grad : g;
    // exp_avg.lerp_(g, 1 - beta1), with the CPU formula that switches form at weight 0.5.
    const double weight = 1.0 - beta1;
    const C diff = Sub{}(g, exp_avg);
    const C from_start = add_alpha(exp_avg, diff, weight);
    const C from_end = add_alpha(g, diff, -(1.0 - weight));
    exp_avg = weight < 0.5 ? from_start : from_end;
    // exp_avg_sq.mul_(beta2).addcmul_(g, g, value=1 - beta2)
    exp_avg_sq = add_alpha(Mul{}(exp_avg_sq, static_cast<C>(beta2)), Mul{}(g, g), 1.0 - beta2);
    const C running_max = Maximum{}(max_exp_avg_sq, exp_avg_sq);
    max_exp_avg_sq = amsgrad ? running_max : max_exp_avg_sq;
    const C second_moment = amsgrad ? running_max : exp_avg_sq;
    const C denom = Add{}(Div{}(Sqrt{}(second_moment), static_cast<C>(bias_correction2_sqrt)), static_cast<C>(eps));
    param = add_alpha(param, Div{}(exp_avg, denom), -step_size);
  }
};

/// torch.optim.Adadelta's update of one element.
struct AdadeltaStep {
  double lr = 0, rho = 0, eps = 0, weight_decay = 0;
  bool maximize = false;

  template <typename C>
  EMBER_HD void operator()(C& param, C grad, C& square_avg, C& acc_delta) const {
    C g = maximize ? Neg{}(grad) : grad;
    const C l2_grad = add_alpha(g, param, weight_decay);
    g = weight_decay != 0 ? l2_grad : g;
    square_avg = add_alpha(Mul{}(square_avg, static_cast<C>(rho)), Mul{}(g, g), 1.0 - rho);
    const C std_dev = Sqrt{}(Add{}(square_avg, static_cast<C>(eps)));
    const C delta = Mul{}(Div{}(Sqrt{}(Add{}(acc_delta, static_cast<C>(eps))), std_dev), g);
    acc_delta = add_alpha(Mul{}(acc_delta, static_cast<C>(rho)), Mul{}(delta, delta), 1.0 - rho);
    param = add_alpha(param, delta, -lr);
  }
};

/// torch.optim.RMSprop's update of one element (centered and momentum variants included).
struct RmspropStep {
  double lr = 0, alpha = 0, eps = 0, weight_decay = 0, momentum = 0;
  bool centered = false, maximize = false;

  // grad_avg is read and written only when centered, momentum_buffer only with momentum > 0.
  template <typename C>
  EMBER_HD void operator()(C& param, C grad, C& square_avg, C& grad_avg, C& momentum_buffer) const {
    C g = maximize ? Neg{}(grad) : grad;
    const C l2_grad = add_alpha(g, param, weight_decay);
    g = weight_decay != 0 ? l2_grad : g;
    square_avg = add_alpha(Mul{}(square_avg, static_cast<C>(alpha)), Mul{}(g, g), 1.0 - alpha);
    // grad_avg.lerp_(g, 1 - alpha), with the CPU formula that switches form at weight 0.5.
    const double weight = 1.0 - alpha;
    const C diff = Sub{}(g, grad_avg);
    const C from_start = add_alpha(grad_avg, diff, weight);
    const C from_end = add_alpha(g, diff, -(1.0 - weight));
    grad_avg = centered ? (weight < 0.5 ? from_start : from_end) : grad_avg;
    // avg = (centered ? square_avg - grad_avg^2 : square_avg).sqrt() + eps
    const C variance = Sub{}(square_avg, Mul{}(grad_avg, grad_avg));
    const C avg = Add{}(Sqrt{}(centered ? variance : square_avg), static_cast<C>(eps));
    const C step = Div{}(g, avg);
    // buf.mul_(momentum).add_(g / avg); param.add_(momentum > 0 ? buf : g / avg, alpha=-lr)
    const C buffered = Add{}(Mul{}(momentum_buffer, static_cast<C>(momentum)), step);
    momentum_buffer = momentum > 0 ? buffered : momentum_buffer;
    param = add_alpha(param, momentum > 0 ? buffered : step, -lr);
  }
};

}  // namespace ember::kernels
