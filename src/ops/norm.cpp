// Norms and the reductions built from other reductions: vector_norm (with PyTorch's gradient at a
// zero norm and at ties of the infinity norms), matrix_norm (2, -2 and "nuc" from the singular
// values, ember/linalg.h), norm, cdist, logsumexp, any, all,
// count_nonzero, nansum, nanmean, var_mean, std_mean, aminmax; and addmm/baddbmm.
#include <cmath>
#include <limits>
#include <string>
#include <utility>
#include <vector>

#include "autograd/node.h"
#include "core/check.h"
#include "core/tensor_internal.h"
#include "ember/factories.h"
#include "ember/grad_mode.h"
#include "ember/linalg.h"
#include "ember/ops.h"

namespace ember {

using autograd::SavedTensor;
using detail::check_defined;

namespace {

constexpr double kInf = std::numeric_limits<double>::infinity();

std::vector<int64_t> all_dims(const Tensor& x) {
  std::vector<int64_t> dims(static_cast<size_t>(x.dim()));
  for (int64_t d = 0; d < x.dim(); ++d) dims[static_cast<size_t>(d)] = d;
  return dims;
}

/// The norm's value, computed without recording (x * x needs no |x| first).
Tensor norm_value(const Tensor& x, double ord, IntList dims, bool keepdim) {
  if (ord == 2) return sqrt(sum(x * x, dims, keepdim));
  if (ord == 0) return sum((x != 0).to(x.dtype()), dims, keepdim);
  const Tensor a = abs(x);
  if (ord == 1) return sum(a, dims, keepdim);
  if (ord == kInf) return amax(a, dims, keepdim);
  if (ord == -kInf) return amin(a, dims, keepdim);
  return pow(sum(pow(a, ord), dims, keepdim), 1.0 / ord);
}

/// d norm / dx times g, as PyTorch's norm_backward: 0 where the norm is 0 (for ord > 0), the
/// infinity norms' gradient shared evenly among the elements that reach the norm.
Tensor norm_backward(const Tensor& g, const Tensor& x, const Tensor& norm, double ord, IntList dims, bool keepdim) {
  const std::vector<int64_t> reduced = dims.empty() ? all_dims(x) : std::vector<int64_t>(dims.begin(), dims.end());
  Tensor gk = g, nk = norm;
  if (!keepdim && x.dim() > 0) {
    std::vector<int64_t> kept = x.sizes().vec();
    for (int64_t d : reduced) kept[static_cast<size_t>(detail::wrap_dim(d, x.dim()))] = 1;
    gk = g.reshape(kept);
    nk = norm.reshape(kept);
  }
  if (ord == 0) return zeros_like(x);
  if (ord == 1) return gk * sign(x);
  if (ord == 2) return where(nk == 0, zeros_like(x), gk * x / nk);
  if (ord == kInf || ord == -kInf) {
    Tensor hits = eq(abs(x), nk).to(x.dtype());
    Tensor count = sum(hits, reduced, /*keepdim=*/true);
    return gk * sign(x) * hits / count;
  }
  // |x|^(p-1) sign(x) / norm^(p-1)
  Tensor scaled = x * pow(abs(x), ord - 2) / pow(nk, ord - 1);
  if (ord < 2) scaled = where(x == 0, zeros_like(x), scaled);
  return where(nk == 0, zeros_like(x), gk * scaled);
}

}  // namespace

Tensor vector_norm(const Tensor& x, double ord, IntList dims, bool keepdim, std::optional<Dtype> dtype) {
  detail::OpContext context("linalg_vector_norm", {{"input", &x}});
  check_defined(x, "linalg.vector_norm");
  EMBER_CHECK(x.is_floating_point() || dtype,
              "linalg.vector_norm: Expected a floating point or complex tensor as input. Got ",
              scalar_type_name(x.dtype()));
  const Tensor input = dtype ? x.to(*dtype) : x;
  EMBER_CHECK(input.numel() > 0 || (ord >= 0 && ord != kInf), "linalg.vector_norm cannot compute the ",
              detail::python_float(ord), " norm on an empty tensor because the operation does not have an identity");
  Tensor out;
  {
    NoGradGuard no_grad;
    out = norm_value(input, ord, dims, keepdim);
  }
  if (autograd::needs_grad({&x})) {
    const std::vector<int64_t> dim_list(dims.begin(), dims.end());
    autograd::record(
        out, "LinalgVectorNormBackward0", {&input},
        [sx = SavedTensor(input), sout = SavedTensor::output(out), ord, dim_list, keepdim](const Tensor& g) {
          return std::vector<Tensor>{norm_backward(g, sx.get(), sout.get(), ord, dim_list, keepdim)};
        });
  }
  return out;
}

namespace {

/// The dims as PyTorch prints a std::vector in its messages: "0 1 2".
std::string spaced(IntList dims) {
  std::string s;
  for (size_t i = 0; i < dims.size(); ++i) s += (i ? " " : "") + std::to_string(dims[i]);
  return s;
}

/// PyTorch's _linalg_matrix_norm_checks, in its order: A a matrix of a floating dtype (float16
/// and bfloat16 refused where an SVD is needed), dims two distinct dimensions. Returns them wrapped.
std::pair<int64_t, int64_t> check_matrix_norm(const Tensor& a, IntList dims, bool low_precision) {
  check_defined(a, "linalg.matrix_norm");
  EMBER_CHECK(a.dim() >= 2, "linalg.matrix_norm: The input tensor A must have at least 2 dimensions.");
  EMBER_CHECK(a.is_floating_point(), "linalg.matrix_norm: Expected a floating point or complex tensor as input. Got ",
              scalar_type_name(a.dtype()));
  EMBER_CHECK(low_precision || (a.dtype() != kFloat16 && a.dtype() != kBFloat16),
              "linalg.matrix_norm: Low precision dtypes not supported. Got ", scalar_type_name(a.dtype()));
  EMBER_CHECK(dims.size() == 2, "linalg.matrix_norm: dim must be a 2-tuple. Got ", spaced(dims));
  const int64_t d0 = detail::wrap_dim(dims[0], a.dim()), d1 = detail::wrap_dim(dims[1], a.dim());
  EMBER_CHECK(d0 != d1, "linalg.matrix_norm: dims must be different. Got (", d0, ", ", d1, ")");
  return {d0, d1};
}

enum class SingularValueNorm { Largest, Smallest, Sum };

/// The norms of the singular values (ord 2, -2, "nuc"), as PyTorch computes them: the two dims
/// moved to the end, svdvals, then amax, amin or sum over them, so that the gradient is amax's,
/// amin's or sum's through svdvals'. keepdim puts the two dims back as ones.
Tensor singular_value_norm(const Tensor& a, int64_t d0, int64_t d1, SingularValueNorm which, bool keepdim) {
  std::vector<int64_t> order;
  for (int64_t d = 0; d < a.dim(); ++d) {
    if (d != d0 && d != d1) order.push_back(d);
  }
  order.push_back(d0);
  order.push_back(d1);
  const Tensor s = linalg::svdvals(a.permute(order));
  Tensor out;
  if (which == SingularValueNorm::Sum) {
    out = sum(s, {-1}, keepdim);
  } else if (s.size(-1) == 0 && which == SingularValueNorm::Largest) {
    // An empty matrix's largest singular value is 0 in PyTorch (its amax here does not refuse).
    std::vector<int64_t> sizes = s.sizes().vec();
    if (keepdim)
      sizes.back() = 1;
    else
      sizes.pop_back();
    out = zeros(sizes, TensorOptions(s.dtype()).device(s.device()));
  } else {
    EMBER_CHECK(s.size(-1) != 0, which == SingularValueNorm::Largest ? "amax" : "amin",
                "(): Expected reduction dim -1 to have non-zero size.");
    out = which == SingularValueNorm::Largest ? amax(s, {-1}, keepdim) : amin(s, {-1}, keepdim);
  }
  if (!keepdim) return out;
  std::vector<int64_t> back(order.size());
  for (size_t i = 0; i < order.size(); ++i) back[static_cast<size_t>(order[i])] = static_cast<int64_t>(i);
  return out.unsqueeze(-1).permute(back);
}

}  // namespace

Tensor matrix_norm(const Tensor& a, std::string_view ord, IntList dims, bool keepdim) {
  detail::OpContext context("linalg_matrix_norm", {{"input", &a}});
  EMBER_CHECK(ord == "fro" || ord == "nuc", "linalg.matrix_norm: Order ", ord, " not supported.");
  const auto [d0, d1] = check_matrix_norm(a, dims, /*low_precision=*/ord != "nuc");
  if (ord == "fro") return vector_norm(a, 2.0, {d0, d1}, keepdim);
  return singular_value_norm(a, d0, d1, SingularValueNorm::Sum, keepdim);
}

Tensor matrix_norm(const Tensor& a, double ord, IntList dims, bool keepdim) {
  detail::OpContext context("linalg_matrix_norm", {{"input", &a}});
  EMBER_CHECK(std::abs(ord) == 2 || std::abs(ord) == 1 || std::abs(ord) == kInf, "linalg.matrix_norm: Order ", ord,
              " not supported.");
  const auto [d0, d1] = check_matrix_norm(a, dims, /*low_precision=*/std::abs(ord) != 2);
  if (std::abs(ord) == 2) {
    return singular_value_norm(a, d0, d1, ord > 0 ? SingularValueNorm::Largest : SingularValueNorm::Smallest, keepdim);
  }
  // ord ±1: the max/min absolute column sum (sum over rows, d0); ±inf: the row sums (over d1).
  const bool columns = std::abs(ord) == 1;
  const int64_t summed = columns ? d0 : d1;
  const int64_t other = columns ? d1 : d0;
  Tensor sums = sum(abs(a), {summed}, /*keepdim=*/true);
  Tensor out = ord > 0 ? amax(sums, {other}, true) : amin(sums, {other}, true);
  if (!keepdim) out = out.squeeze(std::max(d0, d1)).squeeze(std::min(d0, d1));
  return out;
}

Tensor norm(const Tensor& x, double p, IntList dims, bool keepdim) { return vector_norm(x, p, dims, keepdim); }

Tensor cdist(const Tensor& x1, const Tensor& x2, double p) {
  detail::OpContext context("cdist", {{"x1", &x1}, {"x2", &x2}});
  check_defined(x1, "cdist");
  check_defined(x2, "cdist");
  EMBER_CHECK(x1.dim() >= 2, "cdist only supports at least 2D tensors, X1 got: ", x1.dim(), "D");
  EMBER_CHECK(x2.dim() >= 2, "cdist only supports at least 2D tensors, X2 got: ", x2.dim(), "D");
  EMBER_CHECK(x1.size(-1) == x2.size(-1), "X1 and X2 must have the same number of columns. X1: ", x1.size(-1),
              " X2: ", x2.size(-1));
  EMBER_CHECK(p >= 0, "cdist only supports non-negative p values");
  // Every pair's difference, [..., P, R, M], then its p-norm: exact, at P*R*M memory. (PyTorch
  // switches to a matrix-product form for p = 2 above 25 rows, which rounds differently.)
  return vector_norm(x1.unsqueeze(-2) - x2.unsqueeze(-3), p, {-1});
}

Tensor logsumexp(const Tensor& x, IntList dims, bool keepdim) {
  detail::OpContext context("logsumexp", {{"input", &x}});
  check_defined(x, "logsumexp");
  const Tensor input = x.is_floating_point() ? x : x.to(kFloat32);
  if (input.numel() == 0) return log(sum(exp(input), dims, keepdim));
  // Shifted by the maximum (held constant: the result does not depend on it), and by 0 where
  // the maximum is infinite, so that all -inf gives -inf and +inf gives +inf.
  Tensor shift = amax(input, dims, true).detach();
  shift = where(isinf(shift), zeros_like(shift), shift);
  Tensor out = log(sum(exp(input - shift), dims, true)) + shift;
  if (!keepdim) {
    std::vector<int64_t> kept;
    std::vector<bool> reduced(static_cast<size_t>(input.dim()), dims.empty());
    for (int64_t d : dims) reduced[static_cast<size_t>(detail::wrap_dim(d, input.dim()))] = true;
    for (int64_t d = 0; d < input.dim(); ++d) {
      if (!reduced[static_cast<size_t>(d)]) kept.push_back(input.size(d));
    }
    out = out.reshape(kept);
  }
  return out;
}

Tensor any(const Tensor& x, IntList dims, bool keepdim) {
  check_defined(x, "any");
  return sum((x != 0).to(kInt64), dims, keepdim) > 0;
}

Tensor all(const Tensor& x, IntList dims, bool keepdim) {
  check_defined(x, "all");
  return sum((x == 0).to(kInt64), dims, keepdim) == 0;
}

Tensor count_nonzero(const Tensor& x, IntList dims) {
  check_defined(x, "count_nonzero");
  return sum((x != 0).to(kInt64), dims);
}

Tensor nansum(const Tensor& x, IntList dims, bool keepdim) {
  check_defined(x, "nansum");
  if (!x.is_floating_point()) return sum(x, dims, keepdim);
  return sum(where(isnan(x), zeros_like(x), x), dims, keepdim);
}

Tensor nanmean(const Tensor& x, IntList dims, bool keepdim) {
  check_defined(x, "nanmean");
  EMBER_CHECK(x.is_floating_point(), "nanmean(): expected input to have floating point or complex dtype but got ",
              scalar_type_name(x.dtype()));
  Tensor kept = logical_not(isnan(x)).to(x.dtype());
  return nansum(x, dims, keepdim) / sum(kept, dims, keepdim);
}

std::tuple<Tensor, Tensor> var_mean(const Tensor& x, IntList dims, int64_t correction, bool keepdim) {
  return {var(x, dims, correction, keepdim), mean(x, dims, keepdim)};
}

std::tuple<Tensor, Tensor> std_mean(const Tensor& x, IntList dims, int64_t correction, bool keepdim) {
  return {ember::std(x, dims, correction, keepdim), mean(x, dims, keepdim)};
}

std::tuple<Tensor, Tensor> aminmax(const Tensor& x, std::optional<int64_t> dim, bool keepdim) {
  check_defined(x, "aminmax");
  EMBER_CHECK(x.numel() > 0 || dim,
              "aminmax(): cannot compute aminmax over an empty dimension as the operation has no identity.");
  if (!dim) return {amin(x), amax(x)};
  return {amin(x, {*dim}, keepdim), amax(x, {*dim}, keepdim)};
}

Tensor addmm(const Tensor& input, const Tensor& m1, const Tensor& m2, const Scalar& beta, const Scalar& alpha) {
  detail::OpContext context("addmm", {{"input", &input}, {"mat1", &m1}, {"mat2", &m2}});
  Tensor product = mm(m1, m2);
  if (alpha.to_double() != 1.0) product = product * alpha;
  // beta = 0 ignores the input's values (its NaN and inf too), as PyTorch's BLAS call does; its
  // shape must still broadcast to the product's.
  if (beta.to_double() == 0.0) {
    (void)input.expand(product.sizes());
    return product;
  }
  return (beta.to_double() == 1.0 ? input : input * beta) + product;
}

Tensor baddbmm(const Tensor& input, const Tensor& b1, const Tensor& b2, const Scalar& beta, const Scalar& alpha) {
  detail::OpContext context("baddbmm", {{"input", &input}, {"batch1", &b1}, {"batch2", &b2}});
  Tensor product = bmm(b1, b2);
  if (alpha.to_double() != 1.0) product = product * alpha;
  if (beta.to_double() == 0.0) {
    (void)input.expand(product.sizes());
    return product;
  }
  return (beta.to_double() == 1.0 ? input : input * beta) + product;
}

Tensor Tensor::norm(double p, IntList dims, bool keepdim) const { return ember::norm(*this, p, dims, keepdim); }
Tensor Tensor::logsumexp(IntList dims, bool keepdim) const { return ember::logsumexp(*this, dims, keepdim); }
Tensor Tensor::any() const { return ember::any(*this); }
Tensor Tensor::all() const { return ember::all(*this); }

}  // namespace ember
