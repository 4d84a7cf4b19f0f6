#pragma once
/// Free-function forms of tensor operations (the same ones Tensor's methods call).
#include <optional>
#include <span>
#include <string_view>
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

// Rounding and sign: integer tensors come back unchanged (a copy); the gradient is zero.
Tensor floor(const Tensor& x);
Tensor ceil(const Tensor& x);
/// Rounds half to even (round(2.5) = 2); with `decimals`, to that many decimal places (negative:
/// to tens, hundreds, ...), as torch.round(x, decimals=d). Floating inputs only when decimals != 0.
Tensor round(const Tensor& x, int64_t decimals = 0);
Tensor trunc(const Tensor& x);
/// x - trunc(x); floating types only.
Tensor frac(const Tensor& x);
/// -1, 0 or 1 (0 for NaN, as PyTorch's CPU); bool stays bool.
Tensor sign(const Tensor& x);
/// x * x, as torch.square (integer tensors stay integer).
Tensor square(const Tensor& x);

// Floating functions: integer and bool inputs are computed in the default float type.
Tensor log1p(const Tensor& x);
Tensor expm1(const Tensor& x);
Tensor log2(const Tensor& x);
Tensor log10(const Tensor& x);
Tensor exp2(const Tensor& x);
Tensor reciprocal(const Tensor& x);
Tensor tan(const Tensor& x);
Tensor asin(const Tensor& x);
Tensor acos(const Tensor& x);
Tensor atan(const Tensor& x);
Tensor sinh(const Tensor& x);
Tensor cosh(const Tensor& x);
Tensor asinh(const Tensor& x);
Tensor acosh(const Tensor& x);
Tensor atanh(const Tensor& x);
Tensor erfc(const Tensor& x);
/// The inverse of erf: ±inf at ±1, NaN outside [-1, 1].
Tensor erfinv(const Tensor& x);
/// log |Gamma(x)|.
Tensor lgamma(const Tensor& x);
/// d/dx log Gamma(x): -inf at +0, NaN at the negative integers. Differentiable once (ember has no
/// polygamma(2, x) for the second derivative).
Tensor digamma(const Tensor& x);

/// Python's modulus: the result takes the divisor's sign (torch.remainder). Integer division by
/// zero raises ZeroDivisionError on the CPU.
Tensor remainder(const Tensor& a, const Tensor& b);
Tensor remainder(const Tensor& a, const Scalar& b);
/// C's modulus: the result takes the dividend's sign (torch.fmod).
Tensor fmod(const Tensor& a, const Tensor& b);
Tensor fmod(const Tensor& a, const Scalar& b);
/// The angle of the point (b, a), in (-pi, pi]; integer inputs give float.
Tensor atan2(const Tensor& a, const Tensor& b);
/// sqrt(a^2 + b^2) without overflow; floating inputs only.
Tensor hypot(const Tensor& a, const Tensor& b);
/// a + weight * (b - a), in PyTorch's two-sided form (exact at weight 1).
Tensor lerp(const Tensor& a, const Tensor& b, const Scalar& weight);
Tensor lerp(const Tensor& a, const Tensor& b, const Tensor& weight);
/// clamp's other name.
inline Tensor clip(const Tensor& x, std::optional<Scalar> min, std::optional<Scalar> max = std::nullopt) {
  return clamp(x, min, max);
}

// Activations with parameters (src/ops/activation.cpp; PyTorch's torch.nn.functional names and
// defaults). Floating inputs only; each has a fused backward kernel.
/// x > 0 ? x : alpha (exp(x) - 1).
Tensor elu(const Tensor& x, double alpha = 1.0);
/// scale * elu(x, alpha) with the self-normalising constants.
Tensor selu(const Tensor& x);
/// max(0, x) + min(0, alpha (exp(x / alpha) - 1)); alpha must not be 0.
Tensor celu(const Tensor& x, double alpha = 1.0);
Tensor leaky_relu(const Tensor& x, double negative_slope = 0.01);
/// clamp(x, min_val, max_val) with a zero gradient on the bounds.
Tensor hardtanh(const Tensor& x, double min_val = -1.0, double max_val = 1.0);
/// hardtanh(x, 0, 6).
Tensor relu6(const Tensor& x);
/// log(1 + exp(beta x)) / beta, or x where beta x > threshold.
Tensor softplus(const Tensor& x, double beta = 1.0, double threshold = 20.0);
/// x where x > threshold, else value.
Tensor threshold(const Tensor& x, double threshold, double value);
Tensor hardshrink(const Tensor& x, double lambd = 0.5);
Tensor softshrink(const Tensor& x, double lambd = 0.5);
Tensor hardsigmoid(const Tensor& x);
Tensor hardswish(const Tensor& x);
Tensor mish(const Tensor& x);
/// log(sigmoid(x)), finite for every finite x.
Tensor logsigmoid(const Tensor& x);
/// x / (1 + |x|).
Tensor softsign(const Tensor& x);
/// x - tanh(x).
Tensor tanhshrink(const Tensor& x);
/// a * sigmoid(b) for the two halves a, b of x along `dim` (whose size must be even).
Tensor glu(const Tensor& x, int64_t dim = -1);
/// x > 0 ? x : weight x, weight (1 or C values) broadcast along dimension 1 (the channels).
Tensor prelu(const Tensor& x, const Tensor& weight);
/// Randomized leaky ReLU: while training, each negative element is scaled by a slope drawn
/// uniformly from [lower, upper]; otherwise by their mean (leaky_relu).
Tensor rrelu(const Tensor& x, double lower = 1.0 / 8.0, double upper = 1.0 / 3.0, bool training = false);
/// softmax(-x) along dim.
Tensor softmin(const Tensor& x, int64_t dim);
/// In-place forms (torch.nn.functional's elu_, ..., and the inplace=True of the modules): the
/// result is written into x, which must not need its old values elsewhere in the graph.
Tensor& elu_(Tensor& x, double alpha = 1.0);
Tensor& selu_(Tensor& x);
Tensor& celu_(Tensor& x, double alpha = 1.0);
Tensor& leaky_relu_(Tensor& x, double negative_slope = 0.01);
Tensor& hardtanh_(Tensor& x, double min_val = -1.0, double max_val = 1.0);
Tensor& threshold_(Tensor& x, double threshold, double value);
Tensor& hardsigmoid_(Tensor& x);
Tensor& hardswish_(Tensor& x);
Tensor& mish_(Tensor& x);
Tensor& rrelu_(Tensor& x, double lower = 1.0 / 8.0, double upper = 1.0 / 3.0, bool training = false);

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

// ---- rearranging (src/ops/transform.cpp): composed of views, index_select, where and expand ----
/// Reverses the order of elements along each of `dims` (a copy, as in PyTorch).
Tensor flip(const Tensor& x, IntList dims);
Tensor fliplr(const Tensor& x);
Tensor flipud(const Tensor& x);
/// Shifts elements along dims by shifts (wrapping around); with no dims, over the flattened tensor.
Tensor roll(const Tensor& x, IntList shifts, IntList dims = {});
/// Rotates by 90 degrees k times in the plane of dims, from the first towards the second.
Tensor rot90(const Tensor& x, int64_t k = 1, IntList dims = {0, 1});
/// The tensor repeated along each dimension (torch.Tensor.repeat; repeats may add leading dims).
Tensor repeat(const Tensor& x, IntList repeats);
/// repeat with fewer repeats than dims allowed (leading ones assumed), as torch.tile.
Tensor tile(const Tensor& x, IntList reps);
/// Each element (or slice along dim) repeated repeats[i] times; without dim, over the flattened
/// tensor. The counts are read on the host.
Tensor repeat_interleave(const Tensor& x, const Tensor& repeats, std::optional<int64_t> dim = std::nullopt);
Tensor repeat_interleave(const Tensor& x, int64_t repeats, std::optional<int64_t> dim = std::nullopt);
/// The lower (upper) triangle of the last two dims, the rest zero; `diagonal` shifts the border.
Tensor tril(const Tensor& x, int64_t diagonal = 0);
Tensor triu(const Tensor& x, int64_t diagonal = 0);
/// A view of the diagonal of the (dim1, dim2) planes, appended as the last dimension.
Tensor diagonal(const Tensor& x, int64_t offset = 0, int64_t dim1 = 0, int64_t dim2 = 1);
/// A 1-D tensor onto the `diagonal`-th diagonal of a square matrix, or a matrix's diagonal (copied).
Tensor diag(const Tensor& x, int64_t diagonal = 0);
/// The sum of a matrix's diagonal.
Tensor trace(const Tensor& x);
/// Moves dims `source` to positions `destination`, the others keeping their order (a view).
Tensor movedim(const Tensor& x, IntList source, IntList destination);
inline Tensor moveaxis(const Tensor& x, IntList source, IntList destination) { return movedim(x, source, destination); }
Tensor broadcast_to(const Tensor& x, IntList sizes);
std::vector<Tensor> broadcast_tensors(const std::vector<Tensor>& tensors);
/// Coordinate grids from 1-D tensors: indexing "ij" (matrix) or "xy" (Cartesian: the first two
/// axes swapped).
std::vector<Tensor> meshgrid(const std::vector<Tensor>& tensors, std::string_view indexing = "ij");
/// a[i] * b[j].
Tensor outer(const Tensor& a, const Tensor& b);
/// The cross product along `dim`, whose size must be 3 (torch.linalg.cross).
Tensor cross(const Tensor& a, const Tensor& b, int64_t dim = -1);

// ---- norms and composed reductions (src/ops/norm.cpp) ----
/// The ord-norm of x over dims (all when empty), as torch.linalg.vector_norm: ord 0 counts
/// non-zeros, ±inf is the max/min of |x|. Its gradient is PyTorch's: 0 at a zero norm, shared
/// evenly among the elements that reach an infinity norm.
Tensor vector_norm(const Tensor& x, double ord = 2.0, IntList dims = {}, bool keepdim = false,
                   std::optional<Dtype> dtype = std::nullopt);
/// torch.linalg.matrix_norm: ord "fro", "nuc" (the sum of the singular values), ±1 / ±inf (the max/min
/// absolute column / row sum) or ±2 (the largest / smallest singular value; ember/linalg.h).
Tensor matrix_norm(const Tensor& a, std::string_view ord = "fro", IntList dims = {-2, -1}, bool keepdim = false);
Tensor matrix_norm(const Tensor& a, double ord, IntList dims = {-2, -1}, bool keepdim = false);
/// torch.norm with a numeric p (vector_norm over dims).
Tensor norm(const Tensor& x, double p = 2.0, IntList dims = {}, bool keepdim = false);
/// The p-norm distance between every row of x1 [..., P, M] and of x2 [..., R, M]: [..., P, R].
Tensor cdist(const Tensor& x1, const Tensor& x2, double p = 2.0);
/// log(sum(exp(x))) over dims, without overflow.
Tensor logsumexp(const Tensor& x, IntList dims, bool keepdim = false);
/// Whether any (all) elements over dims are non-zero; bool.
Tensor any(const Tensor& x, IntList dims = {}, bool keepdim = false);
Tensor all(const Tensor& x, IntList dims = {}, bool keepdim = false);
Tensor count_nonzero(const Tensor& x, IntList dims = {});
/// sum and mean that skip NaNs.
Tensor nansum(const Tensor& x, IntList dims = {}, bool keepdim = false);
Tensor nanmean(const Tensor& x, IntList dims = {}, bool keepdim = false);
std::tuple<Tensor, Tensor> var_mean(const Tensor& x, IntList dims = {}, int64_t correction = 1, bool keepdim = false);
std::tuple<Tensor, Tensor> std_mean(const Tensor& x, IntList dims = {}, int64_t correction = 1, bool keepdim = false);
/// (amin, amax) over dim, or over everything.
std::tuple<Tensor, Tensor> aminmax(const Tensor& x, std::optional<int64_t> dim = std::nullopt, bool keepdim = false);
/// beta * input + alpha * (m1 @ m2); with beta = 0 the input's values are ignored.
Tensor addmm(const Tensor& input, const Tensor& m1, const Tensor& m2, const Scalar& beta = 1, const Scalar& alpha = 1);
/// beta * input + alpha * bmm(b1, b2).
Tensor baddbmm(const Tensor& input, const Tensor& b1, const Tensor& b2, const Scalar& beta = 1,
               const Scalar& alpha = 1);

}  // namespace ember

// Op families declared in headers of their own, part of the same public surface.
#include "ember/bitwise.h"         // IWYU pragma: export
#include "ember/conv_transpose.h"  // IWYU pragma: export
#include "ember/einsum.h"          // IWYU pragma: export
#include "ember/indexing.h"        // IWYU pragma: export
#include "ember/interpolate.h"     // IWYU pragma: export
#include "ember/linalg.h"          // IWYU pragma: export
#include "ember/pad.h"             // IWYU pragma: export
#include "ember/pool1d.h"          // IWYU pragma: export
#include "ember/sampling.h"        // IWYU pragma: export
#include "ember/scan.h"            // IWYU pragma: export
#include "ember/sort.h"            // IWYU pragma: export
