#pragma once
/// Sampling from distributions given by tensors (src/ops/sampling.cpp): torch.bernoulli, normal
/// with tensor parameters, and multinomial. They draw from ember's generator (ember/factories.h's
/// rand and randn), so a manual_seed makes them repeatable; the draws are not PyTorch's.
#include <cstdint>

#include "ember/tensor.h"

namespace ember {

/// 1 with probability p (each element of `p`, in [0, 1]) and 0 otherwise, in p's dtype.
Tensor bernoulli(const Tensor& p);
/// 1 with probability `p` for every element of `input`'s shape, in input's dtype.
Tensor bernoulli(const Tensor& input, double p);
/// Normal samples with element-wise means and standard deviations (broadcast together; std >= 0).
/// Differentiable in mean and std (the sample is mean + std * eps).
Tensor normal(const Tensor& mean, const Tensor& std);
Tensor normal(const Tensor& mean, double std = 1.0);
Tensor normal(double mean, const Tensor& std);
/// `num_samples` category indices (int64) per row of the non-negative weights `input` ([C] or
/// [N, C]), with or without replacement, as torch.multinomial.
Tensor multinomial(const Tensor& input, int64_t num_samples, bool replacement = false);

}  // namespace ember
