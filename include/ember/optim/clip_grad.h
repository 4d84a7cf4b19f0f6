#pragma once
/// torch.nn.utils' gradient clipping (clip_grad_norm_, clip_grad_value_) and the conversions
/// between parameters and one flat vector (parameters_to_vector, vector_to_parameters).
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

/// Clamps the gradients of `params` in place to [-clip_value, clip_value] (parameters without a
/// gradient are skipped), as torch.nn.utils.clip_grad_value_.
void clip_grad_value_(const std::vector<Tensor>& params, double clip_value);

/// The parameters flattened and concatenated into one vector (differentiable, as PyTorch's
/// torch.cat of their views). They must all be on one device.
Tensor parameters_to_vector(const std::vector<Tensor>& params);

/// Copies consecutive slices of `vec` into the parameters, in order (without recording autograd).
/// PyTorch rebinds each `param.data` to a view of `vec` instead, so there the parameters share
/// vec's memory afterwards; here they keep their own storage and receive its values.
void vector_to_parameters(const Tensor& vec, const std::vector<Tensor>& params);

constexpr double kInfNorm = std::numeric_limits<double>::infinity();

}  // namespace ember::optim
