#pragma once
/// Gradient clipping, as torch.nn.utils.clip_grad_norm_.
#include <limits>
#include <vector>

#include "ember/tensor.h"

namespace ember::optim {

/// Scales the gradients of `params` in place so that their total `norm_type`-norm (the norm of the
/// per-parameter norms) is at most `max_norm`, and returns that total norm (before clipping) as a
/// 0-dim tensor. Parameters without a gradient are ignored; with none at all the result is 0.
/// `norm_type` may be infinity (the largest absolute value). With `error_if_nonfinite`, a NaN or
/// infinite total norm throws instead of scaling the gradients by it.
Tensor clip_grad_norm_(const std::vector<Tensor>& params, double max_norm, double norm_type = 2.0,
                       bool error_if_nonfinite = false);

constexpr double kInfNorm = std::numeric_limits<double>::infinity();

}  // namespace ember::optim
