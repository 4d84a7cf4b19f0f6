// RMSNorm, InstanceNorm1d/2d/3d, LocalResponseNorm and BatchNorm3d with their functional forms
// (include/ember/nn/normalization.h), composed of ember's ops as ATen's and torch.nn.functional's
// are: rms_norm of pow, mean and rsqrt; instance_norm of batch_norm over the input viewed as one
// sample of N C channels, its running statistics the average over the batch of the updated
// per-instance copies; local_response_norm of the squares' sums over a zero-padded channel window.
#include "ember/nn/normalization.h"

#include <cfloat>
#include <cstdint>
#include <vector>

#include "core/check.h"
#include "core/tensor_internal.h"
#include "ember/autograd.h"
#include "ember/factories.h"
#include "ember/grad_mode.h"
#include "ember/ops.h"
#include "ember/warning.h"

namespace ember::nn {
namespace functional {

Tensor rms_norm(const Tensor& input, IntList normalized_shape, const Tensor& weight, std::optional<double> eps) {
  ember::detail::OpContext context("rms_norm", {{"input", &input}, {"weight", &weight}});
  ember::detail::check_defined(input, "rms_norm");
  const int64_t k = static_cast<int64_t>(normalized_shape.size()), ndim = input.dim();
  const std::string shape = ember::detail::shape_str(normalized_shape);
  EMBER_CHECK(k >= 1,
              "Expected normalized_shape to be at least 1-dimensional, i.e., containing at least one element, but got "
              "normalized_shape = ",
              shape);
  EMBER_CHECK(!weight.defined() || weight.sizes().vec() == normalized_shape.vec(),
              "Expected weight to be of same shape as normalized_shape, but got weight of shape ",
              ember::detail::shape_str(weight.defined() ? weight.sizes() : IntList()),
              " and normalized_shape = ", shape);
  EMBER_CHECK(ndim >= k, "Input tensor must have at least ", k, " dimensions, but got ", ndim);
  bool matches = true;
  for (int64_t i = 0; i < k; ++i) matches = matches && input.size(ndim - k + i) == normalized_shape[i];
  EMBER_CHECK(matches, "Given normalized_shape=", shape, ", expected input with shape [*", shape.substr(1),
              ", but got input of size", ember::detail::shape_str(input.sizes()));
  const Dtype dtype = input.dtype();
  EMBER_CHECK(input.is_floating_point(), "\"rms_norm\" not implemented for '", scalar_type_name(dtype), "'");
  // float16 and bfloat16 compute in float32, whose epsilon is then the default; eps itself is
  // first rounded to the input's dtype, as ATen's scalar_t eps_val.
  const bool half = dtype == kFloat16 || dtype == kBFloat16;
  const Dtype compute = half ? kFloat32 : dtype;
  double eps_value = eps.value_or(compute == kFloat64 ? DBL_EPSILON : static_cast<double>(FLT_EPSILON));
  if (dtype != kFloat64) eps_value = full({}, eps_value, dtype).to(kFloat64).item<double>();
  std::vector<int64_t> dims;
  for (int64_t i = 0; i < k; ++i) dims.push_back(ndim - i - 1);
  const Tensor x = input.to(compute);
  Tensor out = (x * rsqrt(pow(x, 2).mean(dims, /*keepdim=*/true) + eps_value)).to(dtype);
  if (weight.defined()) out = out * weight;
  return out;
}

Tensor instance_norm(const Tensor& input, const Tensor& running_mean, const Tensor& running_var, const Tensor& weight,
                     const Tensor& bias, bool use_input_stats, double momentum, double eps) {
  ember::detail::OpContext context(
      "instance_norm", {{"input", &input}, {"running_mean", &running_mean}, {"weight", &weight}, {"bias", &bias}});
  ember::detail::check_defined(input, "instance_norm");
  if (use_input_stats) {  // torch.nn.functional's _verify_spatial_size
    int64_t spatial = 1;
    for (int64_t d = 2; d < input.dim(); ++d) spatial *= input.size(d);
    EMBER_CHECK(spatial != 1, "Expected more than 1 spatial element when training, got input size torch.Size(",
                ember::detail::shape_str(input.sizes()), ")");
  }
  EMBER_CHECK(use_input_stats || (running_mean.defined() && running_var.defined()),
              "Expected running_mean and running_var to be defined when use_input_stats is false");
  EMBER_CHECK(running_mean.defined() == running_var.defined(),
              "running_mean and running_var must either both be None or neither be None");
  const int64_t b = input.size(0), c = input.size(1);
  // Each per-channel tensor once per sample, as ATen's repeat_if_defined: weight and bias through
  // differentiable ops, the running statistics as fresh copies that batch_norm updates.
  auto repeated = [b](const Tensor& t) {
    const int64_t n = t.numel();
    return t.reshape({1, n}).expand({b, n}).reshape({b * n});
  };
  auto repeated_copy = [b](const Tensor& t) {
    if (!t.defined()) return t;
    NoGradGuard no_grad;
    const int64_t n = t.numel();
    Tensor copy = empty({b * n}, t.options());
    copy.view({b, n}).copy_(t.reshape({1, n}).expand({b, n}));
    return copy;
  };
  const Tensor w = weight.defined() ? repeated(weight) : Tensor();
  const Tensor bi = bias.defined() ? repeated(bias) : Tensor();
  const Tensor rm = repeated_copy(running_mean), rv = repeated_copy(running_var);
  std::vector<int64_t> shape = input.sizes().vec();
  shape[0] = 1;
  shape[1] = b * c;
  const Tensor out = ember::batch_norm(input.reshape(shape), rm, rv, w, bi, use_input_stats, momentum, eps);
  {
    NoGradGuard no_grad;
    if (running_mean.defined()) Tensor(running_mean).copy_(rm.view({b, c}).mean({0}));
    if (running_var.defined()) Tensor(running_var).copy_(rv.view({b, c}).mean({0}));
  }
  return out.view(input.sizes());
}

Tensor local_response_norm(const Tensor& input, int64_t size, double alpha, double beta, double k) {
  ember::detail::OpContext context("local_response_norm", {{"input", &input}});
  ember::detail::check_defined(input, "local_response_norm");
  const int64_t dim = input.dim();
  // (The run of spaces is PyTorch's, from a line continuation inside its f-string.)
  EMBER_CHECK(dim >= 3, "Expected 3D or higher dimensionality                          input (got ", dim,
              " dimensions)");
  if (input.numel() == 0) return input;
  // PyTorch averages with avg_pool2d (3-D input) or avg_pool3d over a window of `size` channels;
  // these are those pools' checks.
  if (dim == 3) {
    EMBER_CHECK(size > 0, "kernel size should be greater than zero, but got kH: ", size, " kW: 1");
  } else {
    EMBER_CHECK(size > 0, "kernel size should be greater than zero, but got kT: ", size, " kH: 1 kW: 1");
  }
  EMBER_CHECK(input.is_floating_point(), "\"", dim == 3 ? "avg_pool2d" : "avg_pool3d_out_frame",
              "\" not implemented for '", scalar_type_name(input.dtype()), "'");
  const Tensor squares = input * input;
  const int64_t channels = input.size(1), before = size / 2, after = (size - 1) / 2;
  std::vector<Tensor> parts;
  std::vector<int64_t> pad_sizes = input.sizes().vec();
  if (before > 0) {
    pad_sizes[1] = before;
    parts.push_back(zeros(pad_sizes, squares.options()));
  }
  parts.push_back(squares);
  if (after > 0) {
    pad_sizes[1] = after;
    parts.push_back(zeros(pad_sizes, squares.options()));
  }
  const Tensor padded = parts.size() == 1 ? squares : cat(parts, 1);
  Tensor window = padded.narrow(1, 0, channels);
  for (int64_t j = 1; j < size; ++j) window = window + padded.narrow(1, j, channels);
  const Tensor div = pow((window / static_cast<double>(size)) * alpha + k, beta);
  return input / div;
}

}  // namespace functional

// ---------------------------------------------------------------- RMSNorm

RMSNorm::RMSNorm(SizeList normalized_shape, std::optional<double> eps, bool elementwise_affine)
    : normalized_shape(normalized_shape.vec()), eps(eps), elementwise_affine(elementwise_affine) {
  if (elementwise_affine) weight = register_parameter("weight", ones(this->normalized_shape));
}

void RMSNorm::reset_parameters() {
  if (!elementwise_affine) return;
  NoGradGuard no_grad;
  weight.fill_(1);
}

// ---------------------------------------------------------------- InstanceNorm

InstanceNormBase::InstanceNormBase(int64_t num_features, double eps, std::optional<double> momentum, bool affine,
                                   bool track_running_stats, bool bias)
    : num_features(num_features),
      eps(eps),
      momentum(momentum),
      affine(affine),
      track_running_stats(track_running_stats) {
  if (affine) {
    weight = register_parameter("weight", ones({num_features}));
    if (bias) this->bias = register_parameter("bias", zeros({num_features}));
  }
  if (track_running_stats) {
    running_mean = register_buffer("running_mean", zeros({num_features}));
    running_var = register_buffer("running_var", ones({num_features}));
    num_batches_tracked = register_buffer("num_batches_tracked", zeros({}, kInt64));
  }
}

void InstanceNormBase::reset_running_stats() {
  if (!track_running_stats) return;
  NoGradGuard no_grad;
  running_mean.zero_();
  running_var.fill_(1);
  num_batches_tracked.zero_();
}

void InstanceNormBase::reset_parameters() {
  reset_running_stats();
  if (!affine) return;
  NoGradGuard no_grad;
  weight.fill_(1);
  if (bias.defined()) bias.zero_();
}

Tensor InstanceNormBase::forward(const Tensor& input) {
  check_input_dim(input);
  const int64_t feature_dim = input.dim() - no_batch_dim();
  if (input.size(feature_dim) != num_features) {
    EMBER_CHECK(!affine, "expected input's size at dim=", feature_dim, " to match num_features (", num_features,
                "), but got: ", input.size(feature_dim), ".");
    warn(ember::detail::concat("input's size at dim=", feature_dim,
                               " does not match num_features. You can silence this warning by not passing in "
                               "num_features, which is not used because affine=False"));
  }
  const bool use_input_stats = is_training() || !track_running_stats;
  const double factor = momentum.value_or(0.0);
  if (input.dim() == no_batch_dim()) {
    return functional::instance_norm(input.unsqueeze(0), running_mean, running_var, weight, bias, use_input_stats,
                                     factor, eps)
        .squeeze(0);
  }
  return functional::instance_norm(input, running_mean, running_var, weight, bias, use_input_stats, factor, eps);
}

void InstanceNorm1d::check_input_dim(const Tensor& input) const {
  ember::detail::check_defined(input, "InstanceNorm1d");
  EMBER_CHECK(input.dim() == 2 || input.dim() == 3, "expected 2D or 3D input (got ", input.dim(), "D input)");
}

void InstanceNorm2d::check_input_dim(const Tensor& input) const {
  ember::detail::check_defined(input, "InstanceNorm2d");
  EMBER_CHECK(input.dim() == 3 || input.dim() == 4, "expected 3D or 4D input (got ", input.dim(), "D input)");
}

void InstanceNorm3d::check_input_dim(const Tensor& input) const {
  ember::detail::check_defined(input, "InstanceNorm3d");
  EMBER_CHECK(input.dim() == 4 || input.dim() == 5, "expected 4D or 5D input (got ", input.dim(), "D input)");
}

// ---------------------------------------------------------------- BatchNorm3d

void BatchNorm3d::check_input_dim(const Tensor& input) const {
  ember::detail::check_defined(input, "BatchNorm3d");
  EMBER_CHECK(input.dim() == 5, "expected 5D input (got ", input.dim(), "D input)");
}

}  // namespace ember::nn
