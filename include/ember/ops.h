#pragma once
/// Free-function forms of tensor operations (the same ones Tensor's methods call).
#include <optional>
#include <span>
#include <tuple>
#include <vector>

#include "ember/scalar.h"
#include "ember/tensor.h"

namespace ember {

// Element-wise, with broadcasting and PyTorch's type promotion.
Tensor add(const Tensor& a, const Tensor& b, const Scalar& alpha = 1);
Tensor sub(const Tensor& a, const Tensor& b, const Scalar& alpha = 1);
Tensor mul(const Tensor& a, const Tensor& b);
/// True division: integer inputs give a floating result.
Tensor div(const Tensor& a, const Tensor& b);
Tensor maximum(const Tensor& a, const Tensor& b);
Tensor minimum(const Tensor& a, const Tensor& b);
Tensor pow(const Tensor& a, const Tensor& exponent);
Tensor pow(const Tensor& a, const Scalar& exponent);
Tensor eq(const Tensor& a, const Tensor& b);
Tensor ne(const Tensor& a, const Tensor& b);
Tensor lt(const Tensor& a, const Tensor& b);
Tensor le(const Tensor& a, const Tensor& b);
Tensor gt(const Tensor& a, const Tensor& b);
Tensor ge(const Tensor& a, const Tensor& b);
Tensor logical_and(const Tensor& a, const Tensor& b);
Tensor logical_or(const Tensor& a, const Tensor& b);
Tensor logical_not(const Tensor& a);
/// Bool tensors, as torch.isfinite / isnan / isinf: true where `x` is finite (neither NaN nor
/// ±infinity), NaN, or ±infinity. Integer and bool tensors are always finite.
Tensor isfinite(const Tensor& x);
Tensor isnan(const Tensor& x);
Tensor isinf(const Tensor& x);
/// A 0-dim bool tensor, true when every element of every tensor is finite (undefined, integer
/// and bool tensors count as finite); on the tensors' device, or the CPU when there are none.
/// One read of each element with no temporaries and, on a GPU, one kernel launch per 32 tensors
/// of a dtype without waiting for the device: `item<bool>()` waits when the answer is needed.
/// The trainer checks the loss and every gradient with it after each backward pass.
Tensor all_finite(std::span<const Tensor> tensors);
/// cond ? a : b element-wise; `cond` must be bool.
Tensor where(const Tensor& cond, const Tensor& a, const Tensor& b);
Tensor clamp(const Tensor& x, std::optional<Scalar> min, std::optional<Scalar> max = std::nullopt);
/// x with `value` where the bool `mask` (broadcast with x) is true, as torch.masked_fill; a
/// tensor value must be 0-dim, and receives the gradient of the filled positions.
Tensor masked_fill(const Tensor& x, const Tensor& mask, const Scalar& value);
Tensor masked_fill(const Tensor& x, const Tensor& mask, const Tensor& value);

Tensor neg(const Tensor& x);
Tensor abs(const Tensor& x);
Tensor exp(const Tensor& x);
Tensor log(const Tensor& x);
Tensor sqrt(const Tensor& x);
Tensor rsqrt(const Tensor& x);
Tensor sin(const Tensor& x);
Tensor cos(const Tensor& x);
Tensor tanh(const Tensor& x);
Tensor erf(const Tensor& x);
Tensor sigmoid(const Tensor& x);
Tensor relu(const Tensor& x);
/// approximate = "none" (erf, PyTorch's default) or "tanh".
Tensor gelu(const Tensor& x, const char* approximate = "none");
Tensor silu(const Tensor& x);

// Reductions. `dims` empty means all dimensions.
Tensor sum(const Tensor& x, IntList dims = {}, bool keepdim = false);
Tensor mean(const Tensor& x, IntList dims = {}, bool keepdim = false);
Tensor prod(const Tensor& x, std::optional<int64_t> dim = std::nullopt, bool keepdim = false);
Tensor amax(const Tensor& x, IntList dims = {}, bool keepdim = false);
Tensor amin(const Tensor& x, IntList dims = {}, bool keepdim = false);
/// (values, indices) along `dim`, as torch.max(x, dim).
std::tuple<Tensor, Tensor> max(const Tensor& x, int64_t dim, bool keepdim = false);
std::tuple<Tensor, Tensor> min(const Tensor& x, int64_t dim, bool keepdim = false);
Tensor argmax(const Tensor& x, std::optional<int64_t> dim = std::nullopt, bool keepdim = false);
Tensor argmin(const Tensor& x, std::optional<int64_t> dim = std::nullopt, bool keepdim = false);
/// Variance with Bessel's correction by default (correction = 1), as torch.var.
Tensor var(const Tensor& x, IntList dims = {}, int64_t correction = 1, bool keepdim = false);
Tensor std(const Tensor& x, IntList dims = {}, int64_t correction = 1, bool keepdim = false);

// Linear algebra.
Tensor matmul(const Tensor& a, const Tensor& b);
Tensor mm(const Tensor& a, const Tensor& b);
Tensor bmm(const Tensor& a, const Tensor& b);

// Joining and indexing.
Tensor cat(const std::vector<Tensor>& tensors, int64_t dim = 0);
Tensor stack(const std::vector<Tensor>& tensors, int64_t dim = 0);
Tensor index_select(const Tensor& x, int64_t dim, const Tensor& index);
Tensor gather(const Tensor& x, int64_t dim, const Tensor& index);
Tensor scatter_add(const Tensor& x, int64_t dim, const Tensor& index, const Tensor& src);

// Normalisations used by nn.
Tensor softmax(const Tensor& x, int64_t dim);
Tensor log_softmax(const Tensor& x, int64_t dim);

/// True when every element of a and b is close: |a - b| <= atol + rtol * |b| (NaNs equal if asked).
bool allclose(const Tensor& a, const Tensor& b, double rtol = 1e-5, double atol = 1e-8, bool equal_nan = false);
/// True when a and b have the same sizes and elements.
bool equal(const Tensor& a, const Tensor& b);

/// The dtype PyTorch would give the result of a binary op between these operands.
Dtype result_type(const Tensor& a, const Tensor& b);
Dtype result_type(const Tensor& a, const Scalar& b);
/// Sizes that both shapes broadcast to; throws PyTorch's message when they cannot.
Dims broadcast_shapes(IntList a, IntList b);

}  // namespace ember
