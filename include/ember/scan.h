#pragma once
/// Running reductions along a dimension: torch.cumsum, cumprod, cummax, cummin and logcumsumexp
/// (src/ops/scan.cpp), on the scan family's kernels, with PyTorch's gradients.
#include <optional>
#include <tuple>

#include "ember/dtype.h"
#include "ember/tensor.h"

namespace ember {

/// Running sums along `dim`. Integer and bool inputs give int64, as in PyTorch, unless `dtype`
/// says otherwise (the input is converted to it first). The CPU adds float32 in double and rounds
/// each output once, as PyTorch's CPU kernel does.
Tensor cumsum(const Tensor& input, int64_t dim, std::optional<Dtype> dtype = std::nullopt);
/// Running products along `dim` (integers and bool give int64). The gradient handles zeros in
/// the input as PyTorch's does, and is itself differentiable.
Tensor cumprod(const Tensor& input, int64_t dim, std::optional<Dtype> dtype = std::nullopt);
/// Running maximum along `dim` and the position it came from (the latest among equal values; a
/// NaN, once met, is the maximum from there on).
std::tuple<Tensor, Tensor> cummax(const Tensor& input, int64_t dim);
std::tuple<Tensor, Tensor> cummin(const Tensor& input, int64_t dim);
/// log(cumsum(exp(input))) along `dim`, computed stably (floating inputs only).
Tensor logcumsumexp(const Tensor& input, int64_t dim);

}  // namespace ember
