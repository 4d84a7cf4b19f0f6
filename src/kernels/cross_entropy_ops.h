#pragma once
// The fused cross-entropy's label smoothing, written once for the CPU loops
// (src/backend/cpu/cross_entropy.cpp) and the CUDA kernels (src/backend/cuda/cross_entropy.cu).
//
// PyTorch's cross_entropy with label smoothing ε over C classes is
//   (1 - ε) * nll_loss(log_softmax(x), t, w) + (ε / C) * reduce(-(log_softmax(x) * w).sum(1))
// where both terms are reduced with the same denominator (the kept rows' total weight for a
// mean), so a row's share of the loss can be combined before the reduction:
//   loss[n] = (1 - ε) * w[t] * -logp[t] + (ε / C) * sum_c w[c] * -logp[c]
// and, with p = softmax(x[n]) and W = sum_c w[c] (C without weights), its gradient is
//   dloss/dx[j] = (a + b * W) * p[j] - b * w[j] - (j == t ? a : 0),
//   a = g * (1 - ε) * w[t],  b = g * ε / C.
#include "ember/half.h"  // EMBER_HD

namespace ember::kernels {

/// ε's two shares, computed once per call in the row's dtype.
template <typename T>
struct LabelSmoothing {
  T target_share = T(1);  // 1 - ε
  T class_share = T(0);   // ε / C

  static LabelSmoothing make(double epsilon, long long classes) {
    return {static_cast<T>(1.0 - epsilon), static_cast<T>(epsilon / static_cast<double>(classes))};
  }
};

/// A kept row's loss from its target term (w[t] * -logp[t]) and its smoothing sum
/// (sum_c w[c] * -logp[c]).
template <typename T>
EMBER_HD T smoothed_row_loss(T weighted_target_nll, T smoothing_sum, LabelSmoothing<T> s) {
  return s.target_share * weighted_target_nll + s.class_share * smoothing_sum;
}

/// One logit's gradient in a kept row: `g` is the row's incoming gradient, `probability` p[j],
/// `target_weight` w[t], `class_weight` w[j], `weight_total` W.
template <typename T>
EMBER_HD T smoothed_logit_grad(T g, T probability, T target_weight, T class_weight, T weight_total, bool is_target,
                               LabelSmoothing<T> s) {
  const T a = g * s.target_share * target_weight;
  const T b = g * s.class_share;
  return (a + b * weight_total) * probability - b * class_weight - (is_target ? a : T(0));
}

}  // namespace ember::kernels
