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

// Convolution, pooling and normalisation: the ops behind nn::functional's functions of the same
// names, which call them (include/ember/nn/conv.h, pooling.h, batchnorm.h and functional.h say
// what each computes). The arguments, their order and defaults are nn::functional's. The
// padding-string forms of conv1d/conv2d ("valid", "same") are nn::functional's only.

/// As nn::functional::conv2d: input [N, C, H, W] or [C, H, W], weight [out, C / groups, kH, kW].
Tensor conv2d(const Tensor& input, const Tensor& weight, const Tensor& bias = Tensor(), IntList stride = {1},
              IntList padding = {0}, IntList dilation = {1}, int64_t groups = 1);
/// As nn::functional::conv1d: input [N, C, L] or [C, L], weight [out, C / groups, k].
Tensor conv1d(const Tensor& input, const Tensor& weight, const Tensor& bias = Tensor(), int64_t stride = 1,
              int64_t padding = 0, int64_t dilation = 1, int64_t groups = 1);
/// As nn::functional::max_pool2d; `stride` empty means kernel_size.
Tensor max_pool2d(const Tensor& input, IntList kernel_size, IntList stride = {}, IntList padding = {0},
                  IntList dilation = {1}, bool ceil_mode = false);
/// As nn::functional::max_pool2d_with_indices: also the int64 flat index h*W+w of each maximum.
std::tuple<Tensor, Tensor> max_pool2d_with_indices(const Tensor& input, IntList kernel_size, IntList stride = {},
                                                   IntList padding = {0}, IntList dilation = {1},
                                                   bool ceil_mode = false);
/// As nn::functional::avg_pool2d.
Tensor avg_pool2d(const Tensor& input, IntList kernel_size, IntList stride = {}, IntList padding = {0},
                  bool ceil_mode = false, bool count_include_pad = true,
                  std::optional<int64_t> divisor_override = std::nullopt);
/// As nn::functional::adaptive_avg_pool2d: output_size is [h, w] or one value for both.
Tensor adaptive_avg_pool2d(const Tensor& input, IntList output_size);
/// As nn::functional::batch_norm. Note the order: running statistics first, then weight and
/// bias, as torch.nn.functional.batch_norm (torch.batch_norm takes weight and bias first).
Tensor batch_norm(const Tensor& input, const Tensor& running_mean, const Tensor& running_var,
                  const Tensor& weight = Tensor(), const Tensor& bias = Tensor(), bool training = false,
                  double momentum = 0.1, double eps = 1e-5);
/// As nn::functional::group_norm: input [N, C, *], weight and bias [C] or undefined.
Tensor group_norm(const Tensor& input, int64_t num_groups, const Tensor& weight = Tensor(),
                  const Tensor& bias = Tensor(), double eps = 1e-5);

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
