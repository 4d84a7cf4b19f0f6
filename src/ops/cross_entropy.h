#pragma once
// The fused class-index cross-entropy behind nn::functional::cross_entropy: log_softmax and
// nll_loss's per-sample terms in one backend call each way (Backend::cross_entropy). Internal:
// the public op is nn::functional::cross_entropy, which reduces the rows.
#include <cstdint>

#include "ember/tensor.h"

namespace ember::detail {

struct ClassLossRows {
  // [N]: -log_softmax(logits[n])[t] * w[t] (with label smoothing's share, Backend::cross_entropy),
  // 0 where t == ignore_index; differentiable
  Tensor loss;
  Tensor weight;  // [N]: w[t] (1 without weights), 0 where ignored: the mean's denominator terms
};

/// Whether cross_entropy_rows computes cross_entropy(input, target, weight, label_smoothing) for
/// these (already validated) arguments: a batch [N, C] or one sample [C] of float32 or float64
/// logits with at least one element, and a weight that needs no gradient. Everything else (N-d
/// inputs, 16-bit floats) takes the op-by-op path.
bool cross_entropy_rows_apply(const Tensor& input, const Tensor& weight);

/// The rows of a [N, C] batch against int64 targets [N]; `weight` is undefined or [C].
ClassLossRows cross_entropy_rows(const Tensor& logits, const Tensor& target, const Tensor& weight, int64_t ignore_index,
                                 double label_smoothing);

}  // namespace ember::detail
