#pragma once
// The scalar math of the activations that take parameters (EMBER_ACTIVATION_OPS), written once
// for the CPU loops (cpu/activation.cpp) and the CUDA kernels (cuda/activation.cu).
//
// Each op has a forward functor Name<C>, x -> y, and a backward functor NameBackward<C>,
// (grad, x) -> grad_input, both holding the op's parameters in the computation type C (float for
// the 16-bit types). The formulas and their edge cases (which side of a threshold a tie falls on,
// NaN) are those of PyTorch's CPU kernels (ATen's Activation.cpp); the backward passes read the
// input, as aten's *_backward functions do. Their own namespace keeps ThresholdBackward apart
// from ReLU's binary op of that name in elementwise_ops.h. backend/op_visit.h maps each
// ActivationOp to its pair.
#include "ember/half.h"
#include "kernels/kmath.h"

namespace ember::kernels::activation {

/// ELU, SELU and CELU: x > 0 ? scale x : alpha scale (exp(input_scale x) - 1).
template <typename C>
struct Elu {
  C negative_coef, positive_coef, input_scale;  // alpha * scale, scale, input_scale
  EMBER_HD C operator()(C x) const {
    return x <= C(0) ? kmath::expm1(x * input_scale) * negative_coef : x * positive_coef;
  }
};
template <typename C>
struct EluBackward {
  C negative_coef, positive_coef, input_scale;
  EMBER_HD C operator()(C grad, C x) const {
    return x <= C(0) ? grad * input_scale * negative_coef * kmath::exp(x * input_scale) : grad * positive_coef;
  }
};

template <typename C>
struct LeakyRelu {
  C negative_slope;
  EMBER_HD C operator()(C x) const { return x > C(0) ? x : x * negative_slope; }
};
template <typename C>
struct LeakyReluBackward {
  C negative_slope;
  EMBER_HD C operator()(C grad, C x) const { return x > C(0) ? grad : grad * negative_slope; }
};

/// clamp(x, min_val, max_val), NaN kept; the gradient is 0 on and beyond either bound.
template <typename C>
struct Hardtanh {
  C min_val, max_val;
  EMBER_HD C operator()(C x) const { return x < min_val ? min_val : (x > max_val ? max_val : x); }
};
template <typename C>
struct HardtanhBackward {
  C min_val, max_val;
  EMBER_HD C operator()(C grad, C x) const { return (x <= min_val || x >= max_val) ? C(0) : grad; }
};

/// log(1 + exp(beta x)) / beta, and x itself where beta x > threshold (where the two agree to
/// the type's precision and the exponential would overflow).
template <typename C>
struct Softplus {
  C beta, threshold;
  EMBER_HD C operator()(C x) const { return x * beta > threshold ? x : kmath::log1p(kmath::exp(x * beta)) / beta; }
};
template <typename C>
struct SoftplusBackward {
  C beta, threshold;
  EMBER_HD C operator()(C grad, C x) const {
    const C z = kmath::exp(x * beta);
    return x * beta > threshold ? grad : grad * z / (z + C(1));
  }
};

/// x where x > threshold, else value.
template <typename C>
struct Threshold {
  C threshold, value;
  EMBER_HD C operator()(C x) const { return x <= threshold ? value : x; }
};
template <typename C>
struct ThresholdBackward {
  C threshold, value;
  EMBER_HD C operator()(C grad, C x) const { return x <= threshold ? C(0) : grad; }
};

/// 0 on [-lambd, lambd], x elsewhere.
template <typename C>
struct Hardshrink {
  C lambd;
  EMBER_HD C operator()(C x) const { return (x >= -lambd && x <= lambd) ? C(0) : x; }
};
template <typename C>
struct HardshrinkBackward {
  C lambd;
  EMBER_HD C operator()(C grad, C x) const { return (x >= -lambd && x <= lambd) ? C(0) : grad; }
};

/// x moved toward 0 by lambd, and 0 on [-lambd, lambd] (x * 0 there, so that NaN stays NaN).
template <typename C>
struct Softshrink {
  C lambd;
  EMBER_HD C operator()(C x) const { return x > lambd ? x - lambd : (x < -lambd ? x + lambd : x * C(0)); }
};
template <typename C>
struct SoftshrinkBackward {
  C lambd;
  EMBER_HD C operator()(C grad, C x) const { return (x >= -lambd && x <= lambd) ? C(0) : grad; }
};

/// min(max(x + 3, 0), 6) / 6, written as std::min/std::max are, so that NaN passes through.
template <typename C>
EMBER_HD C relu6_of_shifted(C x) {
  const C shifted = x + C(3);
  const C low = shifted < C(0) ? C(0) : shifted;
  return C(6) < low ? C(6) : low;
}

template <typename C>
struct Hardsigmoid {
  EMBER_HD C operator()(C x) const { return relu6_of_shifted(x) / C(6); }
};
template <typename C>
struct HardsigmoidBackward {
  // PyTorch multiplies by 1/6 rounded to float, for double inputs too; so does ember, to match it.
  EMBER_HD C operator()(C grad, C x) const { return (x > C(-3) && x < C(3)) ? grad * C(1.0f / 6.0f) : C(0); }
};

/// x * hardsigmoid(x).
template <typename C>
struct Hardswish {
  EMBER_HD C operator()(C x) const { return x * relu6_of_shifted(x) / C(6); }
};
template <typename C>
struct HardswishBackward {
  EMBER_HD C operator()(C grad, C x) const {
    if (x <= C(-3)) return C(0);
    return x < C(3) ? grad * (x / C(3) + C(0.5)) : grad;
  }
};

/// x * tanh(softplus(x)), softplus without a threshold (as PyTorch's mish).
template <typename C>
struct Mish {
  EMBER_HD C operator()(C x) const { return x * kmath::tanh(kmath::log1p(kmath::exp(x))); }
};
template <typename C>
struct MishBackward {
  EMBER_HD C operator()(C grad, C x) const {
    const C sigmoid = C(1) / (C(1) + kmath::exp(-x));
    const C t = kmath::tanh(kmath::log1p(kmath::exp(x)));
    return grad * (t + x * sigmoid * (C(1) - t * t));
  }
};

/// log(sigmoid(x)) = min(x, 0) - log(1 + exp(-|x|)), finite in both tails.
template <typename C>
struct LogSigmoid {
  EMBER_HD C operator()(C x) const {
    const C low = x < C(0) ? x : C(0);
    return low - kmath::log1p(kmath::exp(-kmath::abs(x)));
  }
};
template <typename C>
struct LogSigmoidBackward {
  EMBER_HD C operator()(C grad, C x) const {
    // d/dx log(sigmoid(x)) = sigmoid(-x) = (x < 0 ? 1 : 0) - (x < 0 ? 1 : -1) z / (1 + z), z = exp(-|x|).
    const C z = kmath::exp(-kmath::abs(x));
    const bool negative = x < C(0);
    return grad * ((negative ? C(1) : C(0)) - (negative ? C(1) : C(-1)) * (z / (C(1) + z)));
  }
};

}  // namespace ember::kernels::activation
