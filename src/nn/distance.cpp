// cosine_similarity and pairwise_distance (torch.nn.functional's), over a vector norm whose
// gradient is recorded as PyTorch's linalg_vector_norm backward, so that the subgradients at a
// zero norm and at ties of the infinity norm are PyTorch's.
#include "ember/nn/distance.h"

#include <cmath>
#include <cstdint>
#include <limits>
#include <vector>

#include "amp/autocast_policy.h"
#include "autograd/node.h"
#include "core/check.h"
#include "core/tensor_internal.h"
#include "ember/factories.h"
#include "ember/grad_mode.h"
#include "ember/nn/functional.h"
#include "ember/ops.h"

namespace ember::nn::functional {

namespace {

// sign(x) as x's dtype: 1, 0 or -1 (PyTorch's sgn for real tensors).
Tensor sign_of(const Tensor& x) { return (x > 0).to(x.dtype()) - (x < 0).to(x.dtype()); }

Tensor zero_like_0d(const Tensor& like) { return zeros({}, like.options()); }

// The p-norm of x over dimension `dim` (x has at least one dimension), as linalg_vector_norm.
Tensor norm_values(const Tensor& x, double p, int64_t dim, bool keepdim) {
  const int64_t dims[1] = {dim};
  if (p == 2.0) return (x * x).sum(dims, keepdim).sqrt();
  if (p == 1.0) return abs(x).sum(dims, keepdim);
  if (std::isinf(p)) return p > 0 ? abs(x).amax(dims, keepdim) : abs(x).amin(dims, keepdim);
  if (p == 0.0) return (x != 0).to(x.dtype()).sum(dims, keepdim);
  return pow(pow(abs(x), p).sum(dims, keepdim), 1.0 / p);
}

// PyTorch's norm_backward: the gradient of the p-norm `norm` (kept dimension) of x.
Tensor norm_gradient(const Tensor& g, const Tensor& x, const Tensor& norm, double p, int64_t dim) {
  const int64_t dims[1] = {dim};
  if (p == 0.0) return Tensor();  // no gradient, as PyTorch
  if (p == 1.0) return sign_of(x) * g;
  if (p == 2.0) return g * where(norm == 0, zero_like_0d(x), x / norm);
  if (std::isinf(p)) {
    // amax(|x|)'s gradient, shared evenly by the ties (and given to NaNs).
    Tensor ax = abs(x);
    Tensor mask = logical_or(ax == norm, isnan(ax)).to(x.dtype());
    return sign_of(x) * ((g / mask.sum(dims, true)) * mask);
  }
  if (p < 1.0) {
    Tensor scaled = sign_of(x) * where(x == 0, zero_like_0d(x), pow(abs(x), p - 1.0));
    return scaled * g * pow(norm, 1.0 - p);
  }
  Tensor scaled = p < 2.0 ? sign_of(x) * pow(abs(x), p - 1.0) : x * pow(abs(x), p - 2.0);
  Tensor scale = where(norm == 0, zero_like_0d(x), g / pow(norm, p - 1.0));
  return scaled * scale;
}

// The p-norm of x over `dim` with PyTorch's gradient recorded as one node.
Tensor vector_norm(const Tensor& x, double p, int64_t dim, bool keepdim) {
  Tensor out;
  {
    NoGradGuard no_grad;
    out = norm_values(x, p, dim, keepdim);
  }
  if (autograd::needs_grad({&x})) {
    autograd::record(
        out, "LinalgVectorNormBackward0", {&x},
        [sx = autograd::SavedTensor(x), sn = autograd::SavedTensor::output(out), p, dim, keepdim](const Tensor& g) {
          Tensor grad = keepdim ? g : g.unsqueeze(dim);
          Tensor norm = keepdim ? sn.get() : sn.get().unsqueeze(dim);
          return std::vector<Tensor>{norm_gradient(grad, sx.get(), norm, p, dim)};
        });
  }
  return out;
}

// `value` with the gradient of `like` passed straight through: PyTorch's in-place clamp under
// no_grad, which changes the values autograd divides by but not the graph.
Tensor straight_through(const Tensor& value, const Tensor& like) {
  Tensor out = value.detach();
  if (autograd::needs_grad({&like})) {
    autograd::record(out, "CloneBackward0", {&like}, [](const Tensor& g) { return std::vector<Tensor>{g}; });
  }
  return out;
}

}  // namespace

Tensor cosine_similarity(const Tensor& x1, const Tensor& x2, int64_t dim, double eps) {
  if (const auto device = amp::detail::autocast_device(x1, x2)) {
    return amp::detail::autocast_call(
        amp::detail::CastPolicy::Float32, *device,
        [&](const Tensor& a, const Tensor& b) { return cosine_similarity(a, b, dim, eps); }, x1, x2);
  }
  ember::detail::OpContext context("cosine_similarity", {{"x1", &x1}, {"x2", &x2}});
  ember::detail::check_defined(x1, "cosine_similarity");
  ember::detail::check_defined(x2, "cosine_similarity");
  const Dtype common = result_type(x1, x2);
  EMBER_CHECK(is_floating_point(common), "expected common dtype to be floating point, yet common dtype is ",
              scalar_type_name(common));
  EMBER_CHECK(eps >= 0, "eps must be non-negative, got: ", eps);
  const Dims shape = broadcast_shapes(x1.sizes(), x2.sizes());
  const int64_t rank = static_cast<int64_t>(shape.size());
  const int64_t lo = rank == 0 ? -1 : -rank, hi = rank == 0 ? 0 : rank - 1;
  EMBER_CHECK(dim >= lo && dim <= hi, "Dimension out of range (expected to be in range of [", lo, ", ", hi,
              "], but got ", dim, ")");
  const int64_t d = dim < 0 ? dim + (rank == 0 ? 1 : rank) : dim;
  Tensor a = x1.to(common).expand(shape), b = x2.to(common).expand(shape);
  if (rank == 0) {
    a = a.reshape({1});
    b = b.reshape({1});
  }
  // Each input divided by its own norm, clamped at eps: PyTorch 2's formulation.
  Tensor n1 = vector_norm(a, 2.0, d, true), n2 = vector_norm(b, 2.0, d, true);
  Tensor n1c, n2c;
  {
    NoGradGuard no_grad;
    n1c = clamp(n1, eps);
    n2c = clamp(n2, eps);
  }
  n1c = straight_through(n1c, n1);
  n2c = straight_through(n2c, n2);
  const int64_t dims[1] = {d};
  Tensor out = ((a / n1c) * (b / n2c)).sum(dims);
  return rank == 0 ? out.reshape({}) : out;
}

Tensor pairwise_distance(const Tensor& x1, const Tensor& x2, double p, double eps, bool keepdim) {
  ember::detail::OpContext context("pairwise_distance", {{"x1", &x1}, {"x2", &x2}});
  ember::detail::check_defined(x1, "pairwise_distance");
  ember::detail::check_defined(x2, "pairwise_distance");
  // The last dimension of the broadcast shape, as PyTorch's: norm(x1 - x2 + eps, p, -1).
  Tensor diff = x1 - x2 + eps;
  if (diff.dim() == 0) {
    Tensor out = vector_norm(diff.reshape({1}), p, 0, keepdim);
    return out.reshape({});
  }
  return vector_norm(diff, p, diff.dim() - 1, keepdim);
}

}  // namespace ember::nn::functional

namespace ember::nn {

PairwiseDistance::PairwiseDistance(double p, double eps, bool keepdim) : norm(p), eps(eps), keepdim(keepdim) {}

Tensor PairwiseDistance::forward(const Tensor& x1, const Tensor& x2) {
  return functional::pairwise_distance(x1, x2, norm, eps, keepdim);
}

CosineSimilarity::CosineSimilarity(int64_t dim, double eps) : dim(dim), eps(eps) {}

Tensor CosineSimilarity::forward(const Tensor& x1, const Tensor& x2) {
  return functional::cosine_similarity(x1, x2, dim, eps);
}

}  // namespace ember::nn
