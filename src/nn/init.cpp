// Initialisers, with PyTorch's formulas (torch/nn/init.py), checks, messages and order of
// generator draws (the in-place random fills of src/ops/random.cpp).
#include "ember/nn/init.h"

#include <algorithm>
#include <cctype>
#include <cmath>
#include <vector>

#include "core/check.h"
#include "core/tensor_internal.h"
#include "ember/autograd.h"
#include "ember/factories.h"
#include "ember/ops.h"
#include "ember/warning.h"
#include "ops/random.h"

namespace ember::nn::init {

namespace {

int64_t chosen_fan(const Tensor& tensor, std::string mode) {
  std::transform(mode.begin(), mode.end(), mode.begin(), [](unsigned char c) { return std::tolower(c); });
  EMBER_CHECK(mode == "fan_in" || mode == "fan_out", "Mode ", mode,
              " not supported, please use one of ['fan_in', 'fan_out']");
  auto [fan_in, fan_out] = calculate_fan_in_and_fan_out(tensor);
  return mode == "fan_in" ? fan_in : fan_out;
}

/// The tensor's values as a contiguous float64 host array, row-major.
std::vector<double> host_values(const Tensor& tensor) {
  Tensor host = tensor.detach().to(kFloat64).to(Device("cpu")).contiguous();
  const double* data = host.data_ptr<double>();
  return std::vector<double>(data, data + host.numel());
}

/// Writes row-major float64 `values` of shape `sizes` into `tensor` (any dtype and device).
void assign(const Tensor& tensor, const std::vector<double>& values, IntList sizes) {
  Tensor host = ember::tensor(values, kFloat64).reshape(sizes);  // without a dtype: float32, as torch.tensor
  Tensor target = tensor;
  target.copy_(host.to(tensor.dtype()).to(tensor.device()));
}

/// Python's math.ceil of a float, as an integer.
int64_t python_ceil(double x) { return static_cast<int64_t>(std::ceil(x)); }

/// Householder QR of the row-major m x n matrix `a` (m >= n), in float64 on the host: returns
/// the reduced Q (m x n, row-major) and writes R's diagonal to `r_diagonal`. ember has no QR op
/// (torch.linalg.qr) yet; orthogonal_ needs only this, and Q with R's diagonal made positive is
/// unique, so it matches LAPACK's Householder QR, which PyTorch calls, to rounding.
std::vector<double> householder_qr(std::vector<double> a, int64_t m, int64_t n, std::vector<double>& r_diagonal) {
  auto at = [&](std::vector<double>& x, int64_t i, int64_t j) -> double& { return x[i * n + j]; };
  std::vector<std::vector<double>> reflectors;  // v_k over rows k..m-1; H_k = I - 2 v v^T / (v^T v)
  r_diagonal.assign(n, 0.0);
  for (int64_t k = 0; k < n; ++k) {
    double norm = 0;
    for (int64_t i = k; i < m; ++i) norm = std::hypot(norm, at(a, i, k));
    const double x0 = at(a, k, k);
    const double alpha = x0 >= 0 ? -norm : norm;  // the sign that avoids cancellation in v[0]
    std::vector<double> v(m - k);
    for (int64_t i = k; i < m; ++i) v[i - k] = at(a, i, k);
    v[0] -= alpha;
    double v_norm2 = 0;
    for (double e : v) v_norm2 += e * e;
    if (v_norm2 > 0) {
      for (int64_t j = k; j < n; ++j) {
        double dot = 0;
        for (int64_t i = k; i < m; ++i) dot += v[i - k] * at(a, i, j);
        const double scale = 2 * dot / v_norm2;
        for (int64_t i = k; i < m; ++i) at(a, i, j) -= scale * v[i - k];
      }
    }
    r_diagonal[k] = at(a, k, k);
    reflectors.push_back(std::move(v));
  }
  // Q = H_0 H_1 ... H_{n-1} applied to the first n columns of the identity.
  std::vector<double> q(m * n, 0.0);
  for (int64_t j = 0; j < n; ++j) at(q, j, j) = 1.0;
  for (int64_t k = n - 1; k >= 0; --k) {
    const std::vector<double>& v = reflectors[k];
    double v_norm2 = 0;
    for (double e : v) v_norm2 += e * e;
    if (v_norm2 == 0) continue;
    for (int64_t j = 0; j < n; ++j) {
      double dot = 0;
      for (int64_t i = k; i < m; ++i) dot += v[i - k] * at(q, i, j);
      const double scale = 2 * dot / v_norm2;
      for (int64_t i = k; i < m; ++i) at(q, i, j) -= scale * v[i - k];
    }
  }
  return q;
}

double sign(double x) { return x > 0 ? 1.0 : x < 0 ? -1.0 : 0.0; }

/// The standard normal distribution function, as PyTorch's norm_cdf.
double norm_cdf(double x) { return (1.0 + std::erf(x / std::sqrt(2.0))) / 2.0; }

/// `value` rounded to the tensor's dtype (PyTorch's tensor.new_tensor(value).item()).
double in_dtype(const Tensor& tensor, double value) {
  return scalar_tensor(value, TensorOptions().dtype(tensor.dtype())).item<double>();
}

/// -0.5 ((x - mean) / std)² - log_peak, op by op in the tensor's dtype, as PyTorch's in-place chain.
Tensor log_density_over_peak(const Tensor& x, double mean, double std, double log_peak) {
  Tensor z = (x - mean) / std;
  return z * z * -0.5 - log_peak;
}

void warn_deprecated(const char* name) {
  warn(std::string("`nn.init.") + name + "` is now deprecated in favor of `nn.init." + name + "_`.");
}

}  // namespace

double calculate_gain(const std::string& nonlinearity, std::optional<double> param) {
  for (const char* linear :
       {"linear", "conv1d", "conv2d", "conv3d", "conv_transpose1d", "conv_transpose2d", "conv_transpose3d", "sigmoid"})
    if (nonlinearity == linear) return 1.0;
  if (nonlinearity == "tanh") return 5.0 / 3;
  if (nonlinearity == "relu") return std::sqrt(2.0);
  if (nonlinearity == "leaky_relu") {
    const double negative_slope = param.value_or(0.01);
    return std::sqrt(2.0 / (1 + negative_slope * negative_slope));
  }
  if (nonlinearity == "selu") return 3.0 / 4;
  detail::fail("Unsupported nonlinearity ", nonlinearity);
}

std::pair<int64_t, int64_t> calculate_fan_in_and_fan_out(const Tensor& tensor) {
  EMBER_CHECK(tensor.dim() >= 2, "Fan in and fan out can not be computed for tensor with fewer than 2 dimensions");
  int64_t receptive_field = 1;
  for (int64_t d = 2; d < tensor.dim(); ++d) receptive_field *= tensor.size(d);
  return {tensor.size(1) * receptive_field, tensor.size(0) * receptive_field};
}

Tensor uniform_(const Tensor& tensor, double a, double b) {
  EMBER_CHECK(a <= b, "uniform_ expects to return a [from, to) range, but found from=", a, " > to=", b);
  return ember::detail::uniform_(tensor, a, b);
}

Tensor normal_(const Tensor& tensor, double mean, double std) { return ember::detail::normal_(tensor, mean, std); }

Tensor trunc_normal_(const Tensor& tensor, double mean, double std, double a, double b) {
  detail::check_defined(tensor, "trunc_normal_");
  if (mean < a - 2 * std || mean > b + 2 * std) {
    warn(
        "mean is more than 2 std from [a, b] in nn.init.trunc_normal_. The distribution of values may be "
        "incorrect.");
  }
  NoGradGuard no_grad;
  const double mass = norm_cdf((b - mean) / std) - norm_cdf((a - mean) / std);
  if (mass > 0.3) {
    // Most normal draws land in [a, b]: redraw (all of a fresh tensor, as PyTorch) where they did not.
    const double lo = in_dtype(tensor, a), hi = in_dtype(tensor, b);
    Tensor result = normal_(tensor, mean, std);
    while (true) {
      Tensor outside = logical_or(result<lo, result> hi);
      if (!outside.any().item<bool>()) break;
      result = where(outside, normal_(empty_like(result), mean, std), result);
    }
    if (!result.is_same(tensor)) {
      Tensor target = tensor;
      target.copy_(result);
    }
    return tensor;
  }
  // A narrow or distant window: uniform proposals on [a, b], each kept with probability
  // pdf(x) / pdf(mode), i.e. when log(u) <= log_density_over_peak(x).
  const double mode = std::max(a, std::min(mean, b));
  const double log_peak = -0.5 * std::pow((mode - mean) / std, 2.0);
  Tensor candidates = empty_like(tensor);
  Tensor accept_buffer = empty_like(tensor);
  uniform_(tensor, a, b);
  Tensor pending = log(uniform_(accept_buffer)) > log_density_over_peak(tensor, mean, std, log_peak);
  if (!pending.any().item<bool>()) return tensor;
  Tensor result = tensor;
  while (true) {
    uniform_(candidates, a, b);
    result = where(pending, candidates, result);
    Tensor rejected = log(uniform_(accept_buffer)) > log_density_over_peak(candidates, mean, std, log_peak);
    pending = where(pending, rejected, pending);
    if (!pending.any().item<bool>()) break;
  }
  Tensor target = tensor;
  target.copy_(result);
  return tensor;
}

Tensor constant_(const Tensor& tensor, double val) {
  detail::check_defined(tensor, "constant_");
  NoGradGuard no_grad;
  Tensor target = tensor;
  target.fill_(val);
  return tensor;
}

Tensor ones_(const Tensor& tensor) { return constant_(tensor, 1.0); }

Tensor zeros_(const Tensor& tensor) {
  detail::check_defined(tensor, "zeros_");
  NoGradGuard no_grad;
  Tensor target = tensor;
  target.zero_();
  return tensor;
}

Tensor eye_(const Tensor& tensor) {
  detail::check_defined(tensor, "eye_");
  EMBER_CHECK(tensor.dim() == 2, "Only tensors with 2 dimensions are supported");
  NoGradGuard no_grad;
  Tensor target = tensor;
  target.copy_(ember::eye(tensor.size(0), tensor.size(1), TensorOptions().dtype(tensor.dtype())).to(tensor.device()));
  return tensor;
}

Tensor dirac_(const Tensor& tensor, int64_t groups) {
  detail::check_defined(tensor, "dirac_");
  const int64_t dims = tensor.dim();
  EMBER_CHECK(dims >= 3 && dims <= 5, "Only tensors with 3, 4, or 5 dimensions are supported");
  EMBER_CHECK(groups != 0, "integer modulo by zero");  // Python's message for sizes[0] % 0
  EMBER_CHECK(tensor.size(0) % groups == 0, "dim 0 must be divisible by groups");
  const int64_t out_channels_per_group = tensor.size(0) / groups;
  const int64_t min_dim = std::min(out_channels_per_group, tensor.size(1));
  // One 1 per (group, channel d): at [g * out_per_group + d, d, centre of each spatial dimension].
  std::vector<double> values(static_cast<size_t>(tensor.numel()), 0.0);
  for (int64_t g = 0; g < groups; ++g) {
    for (int64_t d = 0; d < min_dim; ++d) {
      int64_t offset = g * out_channels_per_group + d;
      offset = offset * tensor.size(1) + d;
      for (int64_t s = 2; s < dims; ++s) offset = offset * tensor.size(s) + tensor.size(s) / 2;
      values[static_cast<size_t>(offset)] = 1.0;
    }
  }
  NoGradGuard no_grad;
  assign(tensor, values, tensor.sizes());
  return tensor;
}

Tensor xavier_uniform_(const Tensor& tensor, double gain) {
  auto [fan_in, fan_out] = calculate_fan_in_and_fan_out(tensor);
  const double std = gain * std::sqrt(2.0 / static_cast<double>(fan_in + fan_out));
  const double bound = std::sqrt(3.0) * std;
  return uniform_(tensor, -bound, bound);
}

Tensor xavier_normal_(const Tensor& tensor, double gain) {
  auto [fan_in, fan_out] = calculate_fan_in_and_fan_out(tensor);
  return normal_(tensor, 0.0, gain * std::sqrt(2.0 / static_cast<double>(fan_in + fan_out)));
}

Tensor kaiming_uniform_(const Tensor& tensor, double a, const std::string& mode, const std::string& nonlinearity) {
  detail::check_defined(tensor, "kaiming_uniform_");
  if (tensor.numel() == 0) {
    warn("Initializing zero-element tensors is a no-op");
    return tensor;
  }
  const int64_t fan = chosen_fan(tensor, mode);
  const double gain = calculate_gain(nonlinearity, a);
  const double std = gain / std::sqrt(static_cast<double>(fan));
  const double bound = std::sqrt(3.0) * std;
  return uniform_(tensor, -bound, bound);
}

Tensor kaiming_normal_(const Tensor& tensor, double a, const std::string& mode, const std::string& nonlinearity) {
  detail::check_defined(tensor, "kaiming_normal_");
  if (tensor.numel() == 0) {
    warn("Initializing zero-element tensors is a no-op");
    return tensor;
  }
  const int64_t fan = chosen_fan(tensor, mode);
  const double gain = calculate_gain(nonlinearity, a);
  return normal_(tensor, 0.0, gain / std::sqrt(static_cast<double>(fan)));
}

Tensor orthogonal_(const Tensor& tensor, double gain) {
  detail::check_defined(tensor, "orthogonal_");
  EMBER_CHECK(tensor.dim() >= 2, "Only tensors with 2 or more dimensions are supported");
  if (tensor.numel() == 0) return tensor;
  NoGradGuard no_grad;
  const int64_t rows = tensor.size(0), cols = tensor.numel() / rows;
  // The draws in the tensor's dtype and on its device, as PyTorch's new_empty(...).normal_().
  std::vector<double> flattened = host_values(normal_(empty({rows, cols}, tensor.options()), 0.0, 1.0));
  const bool transposed = rows < cols;
  const int64_t m = transposed ? cols : rows, n = transposed ? rows : cols;
  std::vector<double> a(flattened.size());
  for (int64_t i = 0; i < m; ++i)
    for (int64_t j = 0; j < n; ++j) a[i * n + j] = transposed ? flattened[j * cols + i] : flattened[i * cols + j];
  std::vector<double> r_diagonal;
  std::vector<double> q = householder_qr(std::move(a), m, n, r_diagonal);
  std::vector<double> out(q.size());
  for (int64_t i = 0; i < m; ++i) {
    for (int64_t j = 0; j < n; ++j) {
      const double value = q[i * n + j] * sign(r_diagonal[j]);
      out[transposed ? j * cols + i : i * cols + j] = value;
    }
  }
  assign(tensor, out, tensor.sizes());
  Tensor target = tensor;
  target.mul_(gain);
  return tensor;
}

Tensor sparse_(const Tensor& tensor, double sparsity, double std) {
  detail::check_defined(tensor, "sparse_");
  EMBER_CHECK(tensor.dim() == 2, "Only tensors with 2 dimensions are supported");
  const int64_t rows = tensor.size(0), cols = tensor.size(1);
  // row_indices[:num_zeros] in Python: a negative count drops that many from the end.
  int64_t num_zeros = python_ceil(sparsity * static_cast<double>(rows));
  num_zeros = num_zeros < 0 ? std::max<int64_t>(0, rows + num_zeros) : std::min(rows, num_zeros);
  NoGradGuard no_grad;
  normal_(tensor, 0.0, std);
  // One randperm of the rows per column, from the CPU generator as PyTorch's torch.randperm(rows).
  std::vector<uint8_t> zero(static_cast<size_t>(rows * cols), 0);
  for (int64_t col = 0; col < cols; ++col) {
    Tensor perm = randperm(rows).contiguous();
    const int64_t* row_indices = perm.data_ptr<int64_t>();
    for (int64_t k = 0; k < num_zeros; ++k) zero[static_cast<size_t>(row_indices[k] * cols + col)] = 1;
  }
  Tensor mask = ember::tensor(std::vector<double>(zero.begin(), zero.end())).reshape({rows, cols}) != 0.0;
  Tensor target = tensor;
  target.masked_fill_(mask.to(tensor.device()), 0.0);
  return tensor;
}

Tensor uniform(const Tensor& tensor, double a, double b) {
  warn_deprecated("uniform");
  return uniform_(tensor, a, b);
}
Tensor normal(const Tensor& tensor, double mean, double std) {
  warn_deprecated("normal");
  return normal_(tensor, mean, std);
}
Tensor constant(const Tensor& tensor, double val) {
  warn_deprecated("constant");
  return constant_(tensor, val);
}
Tensor eye(const Tensor& tensor) {
  warn_deprecated("eye");
  return eye_(tensor);
}
Tensor dirac(const Tensor& tensor, int64_t groups) {
  warn_deprecated("dirac");
  return dirac_(tensor, groups);
}
Tensor xavier_uniform(const Tensor& tensor, double gain) {
  warn_deprecated("xavier_uniform");
  return xavier_uniform_(tensor, gain);
}
Tensor xavier_normal(const Tensor& tensor, double gain) {
  warn_deprecated("xavier_normal");
  return xavier_normal_(tensor, gain);
}
Tensor kaiming_uniform(const Tensor& tensor, double a, const std::string& mode, const std::string& nonlinearity) {
  warn_deprecated("kaiming_uniform");
  return kaiming_uniform_(tensor, a, mode, nonlinearity);
}
Tensor kaiming_normal(const Tensor& tensor, double a, const std::string& mode, const std::string& nonlinearity) {
  warn_deprecated("kaiming_normal");
  return kaiming_normal_(tensor, a, mode, nonlinearity);
}
Tensor orthogonal(const Tensor& tensor, double gain) {
  warn_deprecated("orthogonal");
  return orthogonal_(tensor, gain);
}
Tensor sparse(const Tensor& tensor, double sparsity, double std) {
  warn_deprecated("sparse");
  return sparse_(tensor, sparsity, std);
}

}  // namespace ember::nn::init
