// The scan family's front end (ember/scan.h): cumsum, cumprod, cummax, cummin, logcumsumexp on
// the scan kernels (backend/cpu/scan.cpp, backend/cuda/scan.cu), with PyTorch's backward
// formulas (torch/csrc/autograd/FunctionsManual.cpp's cumsum_backward, cumprod_backward,
// cummaxmin_backward, logcumsumexp_backward), written with ember's ops so that they are
// differentiable in turn.
#include "ember/scan.h"

#include <limits>
#include <vector>

#include "autograd/node.h"
#include "backend/backend.h"
#include "core/check.h"
#include "core/tensor_internal.h"
#include "ember/factories.h"
#include "ember/grad_mode.h"
#include "ember/ops.h"

namespace ember {

using autograd::SavedTensor;
using detail::check_defined;
using detail::make_tensor;

namespace {

// Runs the kernel on a contiguous copy in `dtype`; 0-d inputs are one element along dim 0.
Tensor run_scan(ScanOp op, const Tensor& x, int64_t dim, Dtype dtype, Tensor* indices = nullptr, bool reverse = false) {
  const Tensor in = x.to(dtype).contiguous();
  Tensor out = make_tensor(in.sizes(), dtype, in.device());
  TensorView index_view;
  index_view.data = nullptr;
  if (indices) {
    *indices = make_tensor(in.sizes(), kInt64, in.device());
    index_view = view_of(*indices);
  }
  backend_for(in.device()).scan(op, view_of(in), in.dim() == 0 ? 0 : dim, reverse, view_of(out), index_view);
  return out;
}

// The scan of w from its last position to its first along dim (reversed_cumsum: the sum over
// j >= k of w[j]). The kernel's reverse scan when no graph is being recorded through w (a
// backward pass without create_graph); otherwise PyTorch's differentiable form, w flipped, scanned
// and flipped back, which adds in the same order and so gives the same values.
Tensor reverse_scan(ScanOp op, const Tensor& w, int64_t dim) {
  if (!autograd::needs_grad({&w})) return run_scan(op, w, dim, w.dtype(), nullptr, /*reverse=*/true);
  const Tensor flipped = w.flip({dim});
  return (op == ScanOp::Sum ? cumsum(flipped, dim) : logcumsumexp(flipped, dim)).flip({dim});
}

Tensor reversed_cumsum(const Tensor& w, int64_t dim) { return reverse_scan(ScanOp::Sum, w, dim); }

// PyTorch's cumprod gradient. Without zeros in the input: reversed_cumsum(out * g) / x. With
// zeros, each slice's gradient is 0 after its first zero z1, the plain formula before it, and at
// z1 the sum over z1 <= j < z2 of g[j] * prod(x[:z1]) * prod(x[z1+1 : j+1]). The masked O(n)
// form is not differentiable in turn, so under create_graph the O(n^2) form of explicit
// products is used, as in PyTorch.
Tensor cumprod_backward(const Tensor& g, const Tensor& x, int64_t dim, const Tensor& out) {
  if (x.numel() <= 1 || x.dim() == 0 || x.size(dim) == 1) return g;
  const Tensor w = out * g;
  const Tensor is_zero = eq(x, zeros({}, x.options()));
  if (!any(is_zero).item<bool>()) return reversed_cumsum(w, dim) / x;
  const int64_t n = x.size(dim);
  if (!GradMode::is_enabled()) {
    const Tensor zeros_before = cumsum(is_zero, dim);  // int64: zeros up to and including here
    const Tensor before_first = eq(zeros_before, zeros({}, zeros_before.options()));
    const Tensor zero_g = zeros({}, g.options());
    // k < z1: the plain formula over the part before the first zero.
    const Tensor head = where(before_first, reversed_cumsum(where(before_first, w, zero_g), dim) / x, zero_g);
    // k = z1: g[j] times the products of x before z1 and of x after z1 up to j, for z1 <= j < z2.
    const Tensor in_first_run = eq(zeros_before, ones({}, zeros_before.options()));
    const Tensor first_zero = logical_and(in_first_run, is_zero);
    const Tensor after_first = logical_and(in_first_run, logical_not(is_zero));
    const Tensor one = ones({}, x.options());
    const Tensor run_products = cumprod(where(after_first, x, one), dim);
    const Tensor prefix = prod(where(before_first, x, one), dim, /*keepdim=*/true);
    const Tensor at_zero = sum(run_products * where(in_first_run, g, zero_g), {dim}, /*keepdim=*/true) * prefix;
    return head + where(first_zero, at_zero.expand(x.sizes()), zero_g);
  }
  // Differentiable form: grad[k] = sum_{j >= k} g[j] * prod_{i <= j, i != k} x[i].
  std::vector<Tensor> slices;
  slices.reserve(static_cast<size_t>(n));
  for (int64_t k = 0; k < n; ++k) {
    Tensor omitted;  // [.., n - k, ..]: prod_{i <= j, i != k} x[i] for j = k .. n-1
    const Tensor after = k + 1 < n ? cumprod(x.slice(dim, k + 1), dim) : Tensor();
    if (k == 0) {
      Dims one_sizes(x.sizes());
      one_sizes[static_cast<size_t>(dim)] = 1;
      omitted = cat({ones(one_sizes, x.options()), after}, dim);
    } else {
      const Tensor until = prod(x.slice(dim, 0, k), dim, /*keepdim=*/true);
      omitted = after.defined() ? cat({until, until * after}, dim) : until;
    }
    slices.push_back(sum(g.slice(dim, k) * omitted, {dim}));
  }
  return stack(slices, dim);
}

// PyTorch's logcumsumexp gradient: the positive and negative parts of g summed separately in log
// space (reverse logcumsumexp), so that large outputs do not overflow.
Tensor logcumsumexp_backward(const Tensor& g, const Tensor& x, const Tensor& out, int64_t dim) {
  if (g.dim() == 0 || g.numel() == 0) return g;
  const Tensor lowest = full({}, std::numeric_limits<double>::lowest(), g.options());
  const auto reverse_lcse = [dim](const Tensor& t) { return reverse_scan(ScanOp::LogSumExp, t, dim); };
  const Tensor log_abs = log(abs(g));
  const Tensor zero = zeros({}, g.options());
  const Tensor log_positive = where(gt(g, zero), log_abs, lowest);
  const Tensor log_negative = where(lt(g, zero), log_abs, lowest);
  return exp(reverse_lcse(log_positive - out) + x) - exp(reverse_lcse(log_negative - out) + x);
}

Dtype accumulating_dtype(const Tensor& x, std::optional<Dtype> dtype) {
  if (dtype) return *dtype;
  return x.is_floating_point() ? x.dtype() : kInt64;  // integers and bool accumulate in int64
}

}  // namespace

Tensor cumsum(const Tensor& input, int64_t dim, std::optional<Dtype> dtype) {
  detail::OpContext context("cumsum", {{"input", &input}});
  check_defined(input, "cumsum");
  dim = detail::wrap_dim(dim, input.dim());
  Tensor out = run_scan(ScanOp::Sum, input, dim, accumulating_dtype(input, dtype));
  if (autograd::needs_grad({&input}) && out.is_floating_point()) {
    autograd::record(out, "CumsumBackward0", {&input}, [dim, scalar = input.dim() == 0](const Tensor& g) {
      if (scalar || g.numel() <= 1 || g.size(dim) == 1) return std::vector<Tensor>{g};
      return std::vector<Tensor>{reversed_cumsum(g, dim)};
    });
  }
  return out;
}

Tensor cumprod(const Tensor& input, int64_t dim, std::optional<Dtype> dtype) {
  detail::OpContext context("cumprod", {{"input", &input}});
  check_defined(input, "cumprod");
  dim = detail::wrap_dim(dim, input.dim());
  Tensor out = run_scan(ScanOp::Prod, input, dim, accumulating_dtype(input, dtype));
  if (autograd::needs_grad({&input}) && out.is_floating_point()) {
    const Dtype computed = out.dtype();
    autograd::record(out, "CumprodBackward0", {&input},
                     [sx = SavedTensor(input), so = SavedTensor::output(out), dim, computed](const Tensor& g) {
                       return std::vector<Tensor>{cumprod_backward(g, sx.get().to(computed), dim, so.get())};
                     });
  }
  return out;
}

namespace {

std::tuple<Tensor, Tensor> cum_extreme(ScanOp op, const Tensor& input, int64_t dim, const char* name,
                                       const char* node) {
  detail::OpContext context(name, {{"input", &input}});
  check_defined(input, name);
  dim = detail::wrap_dim(dim, input.dim());
  Tensor indices;
  Tensor values = run_scan(op, input, dim, input.dtype(), &indices);
  if (autograd::needs_grad({&input})) {
    autograd::record(values, node, {&input},
                     [indices, dim, sizes = input.sizes().vec(), options = input.options()](const Tensor& g) {
                       if (g.dim() == 0) return std::vector<Tensor>{g};
                       return std::vector<Tensor>{zeros(sizes, options.dtype(g.dtype())).scatter_add(dim, indices, g)};
                     });
  }
  return {values, indices};
}

}  // namespace

std::tuple<Tensor, Tensor> cummax(const Tensor& input, int64_t dim) {
  return cum_extreme(ScanOp::Max, input, dim, "cummax", "CummaxBackward0");
}

std::tuple<Tensor, Tensor> cummin(const Tensor& input, int64_t dim) {
  return cum_extreme(ScanOp::Min, input, dim, "cummin", "CumminBackward0");
}

Tensor logcumsumexp(const Tensor& input, int64_t dim) {
  detail::OpContext context("logcumsumexp", {{"input", &input}});
  check_defined(input, "logcumsumexp");
  EMBER_CHECK(input.is_floating_point(), "\"logcumsumexp_out_cpu\" not implemented for '",
              scalar_type_name(input.dtype()), "'");
  dim = detail::wrap_dim(dim, input.dim());
  Tensor out = run_scan(ScanOp::LogSumExp, input, dim, input.dtype());
  if (autograd::needs_grad({&input})) {
    autograd::record(out, "LogcumsumexpBackward0", {&input},
                     [sx = SavedTensor(input), so = SavedTensor::output(out), dim](const Tensor& g) {
                       return std::vector<Tensor>{logcumsumexp_backward(g, sx.get(), so.get(), dim)};
                     });
  }
  return out;
}

Tensor Tensor::cumsum(int64_t dim, std::optional<Dtype> dtype) const { return ember::cumsum(*this, dim, dtype); }
Tensor Tensor::cumprod(int64_t dim, std::optional<Dtype> dtype) const { return ember::cumprod(*this, dim, dtype); }
std::tuple<Tensor, Tensor> Tensor::cummax(int64_t dim) const { return ember::cummax(*this, dim); }
std::tuple<Tensor, Tensor> Tensor::cummin(int64_t dim) const { return ember::cummin(*this, dim); }
Tensor Tensor::logcumsumexp(int64_t dim) const { return ember::logcumsumexp(*this, dim); }

}  // namespace ember
