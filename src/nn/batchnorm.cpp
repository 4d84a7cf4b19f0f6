// Batch normalisation. The forward is composed from ember ops under NoGradGuard and recorded as
// ONE node, NativeBatchNormBackward0, as in PyTorch: the closed-form backward needs only the
// per-channel mean and 1/std, which is far cheaper than differentiating through the mean and
// variance reductions op by op.
#include "ember/nn/batchnorm.h"

#include <vector>

#include "amp/autocast_policy.h"
#include "autograd/node.h"
#include "core/check.h"
#include "core/tensor_internal.h"
#include "ember/autograd.h"
#include "ember/factories.h"
#include "ember/ops.h"

namespace ember::nn {

namespace functional {

namespace {

bool is_16bit(Dtype d) { return d == kFloat16 || d == kBFloat16; }

void check_numel(const Tensor& p, const char* what, int64_t channels) {
  EMBER_CHECK(!p.defined() || p.numel() == channels, what, " should contain ", channels, " elements not ", p.numel());
}

void check_dtype(const Tensor& p, Dtype input_dtype) {
  if (!p.defined()) return;
  // 16-bit inputs may come with float32 parameters (PyTorch's mixed-type CPU path).
  const bool ok = p.dtype() == input_dtype || (is_16bit(input_dtype) && p.dtype() == kFloat32);
  EMBER_CHECK(ok, "mixed dtype (CPU): expect parameter to have scalar type of ",
              scalar_type_name(is_16bit(input_dtype) ? kFloat32 : input_dtype));
}

// The sizes [1, C, 1, ...] that broadcast a per-channel vector against the input.
std::vector<int64_t> channel_shape(const Tensor& input) {
  std::vector<int64_t> shape(static_cast<size_t>(input.dim()), 1);
  shape[1] = input.size(1);
  return shape;
}

/// The running statistics' update factor: a number, or a 0-dim float64 tensor on the module's
/// device (BatchNorm with momentum=None, whose factor 1/num_batches_tracked the host would have to
/// wait for the device to read).
struct Momentum {
  double value = 0;
  Tensor tensor;
};

/// running * (1 - m) + batch * (m * scale). The tensor form rounds as the number form does: the
/// factor's arithmetic is in float64 as on the host, and the 0-dim float64 operands are converted
/// to the statistics' dtype (a 0-dim tensor does not promote a dimensioned one) exactly as a
/// number is.
Tensor running_update(const Tensor& running, const Tensor& batch, const Momentum& m, double scale) {
  if (m.tensor.defined()) {
    return running * (1.0 - m.tensor) + batch * (scale == 1.0 ? m.tensor : m.tensor * scale);
  }
  return running * (1.0 - m.value) + batch * (m.value * scale);
}

Tensor batch_norm_impl(const Tensor& input, const Tensor& running_mean, const Tensor& running_var, const Tensor& weight,
                       const Tensor& bias, bool training, const Momentum& momentum, double eps) {
  amp::detail::NoAutocastGuard no_autocast;  // one op in PyTorch, not in autocast's lists
  ember::detail::OpContext context(
      "batch_norm", {{"input", &input}, {"running_mean", &running_mean}, {"weight", &weight}, {"bias", &bias}});
  detail::check_defined(input, "batch_norm");
  EMBER_CHECK(input.dim() >= 2, "batch_norm: expected an input with at least 2 dimensions [N, C, *], got ", input.dim(),
              "D input");
  const int64_t channels = input.size(1);
  const int64_t count = channels == 0 ? 0 : input.numel() / channels;  // values per channel
  if (training) {
    EMBER_CHECK(count != 1, "Expected more than 1 value per channel when training, got input size torch.Size(",
                detail::shape_str(input.sizes()), ")");
  }
  if (input.numel() == 0) {
    // Nothing to normalise and no statistics to update (PyTorch returns before its other
    // checks); the affine part is still applied so that the graph stays connected.
    Tensor out = input.clone();
    if (weight.defined() && weight.numel() > 0) out = out * weight[0];
    if (bias.defined() && bias.numel() > 0) out = out + bias[0];
    return out;
  }
  EMBER_CHECK(running_mean.defined() || training, "running_mean must be defined in evaluation mode");
  EMBER_CHECK(running_var.defined() || training, "running_var must be defined in evaluation mode");
  check_numel(running_mean, "running_mean", channels);
  check_numel(running_var, "running_var", channels);
  check_numel(weight, "weight", channels);
  check_numel(bias, "bias", channels);
  EMBER_CHECK(input.is_floating_point(), "\"batch_norm\" not implemented for '", scalar_type_name(input.dtype()), "'");
  for (const Tensor* p : {&running_mean, &running_var, &weight, &bias}) check_dtype(*p, input.dtype());

  const std::vector<int64_t> bshape = channel_shape(input);

  std::vector<int64_t> dims{0};
  for (int64_t d = 2; d < input.dim(); ++d) dims.push_back(d);
  const Dtype compute = is_16bit(input.dtype()) ? kFloat32 : input.dtype();

  Tensor out, mean, invstd;
  {
    NoGradGuard no_grad;
    const Tensor x = input.to(compute);
    if (training) {
      mean = x.mean(dims);
      const Tensor var = x.var(dims, /*correction=*/0);
      invstd = rsqrt(var + eps);
      if (running_mean.defined()) Tensor(running_mean).copy_(running_update(running_mean, mean, momentum, 1.0));
      if (running_var.defined()) {
        const double bessel = static_cast<double>(count) / static_cast<double>(count - 1);
        Tensor(running_var).copy_(running_update(running_var, var, momentum, bessel));
      }
    } else {
      // A copy, so that a later in-place update of the running mean cannot change the backward.
      mean = running_mean.to(compute, false, true);
      invstd = rsqrt(running_var.to(compute) + eps);
    }
    // y = x * scale + shift with per-channel scale = w/std and shift = b - mean*scale: two
    // passes over the input instead of four.
    Tensor scale = weight.defined() ? invstd * weight.to(compute) : invstd;
    Tensor shift = bias.defined() ? bias.to(compute) - mean * scale : -(mean * scale);
    out = (x * scale.view(bshape) + shift.view(bshape)).to(input.dtype());
  }

  if (autograd::needs_grad({&input, &weight, &bias})) {
    const bool need_input = input.requires_grad(), need_weight = weight.defined() && weight.requires_grad(),
               need_bias = bias.defined() && bias.requires_grad();
    autograd::record(out, "NativeBatchNormBackward0", {&input, &weight, &bias},
                     [training, count, compute, dims, bshape, need_input, need_weight, need_bias, eps,
                      saved_mean = mean, saved_invstd = invstd, saved_input = autograd::SavedTensor(input),
                      saved_weight = autograd::SavedTensor(weight)](const Tensor& grad) {
                       const Tensor g = grad.to(compute);
                       const Tensor x = saved_input.get().to(compute);
                       const Tensor w = saved_weight.get();
                       Tensor batch_mean = saved_mean, batch_invstd = saved_invstd;
                       if (training && GradMode::is_enabled()) {
                         // A backward pass that records itself (create_graph): the batch statistics again, as
                         // functions of x, so that the formula below is one of x and differentiates again.
                         batch_mean = x.mean(dims);
                         batch_invstd = rsqrt(x.var(dims, /*correction=*/0) + eps);
                       }
                       std::vector<Tensor> grads(3);
                       Tensor sum_g, sum_g_xhat, xhat;
                       if (need_bias || (training && need_input)) sum_g = g.sum(dims);
                       if (need_weight || (training && need_input)) {
                         xhat = (x - batch_mean.view(bshape)) * batch_invstd.view(bshape);
                         sum_g_xhat = (g * xhat).sum(dims);
                       }
                       if (need_input) {
                         const Tensor scale = w.defined() ? batch_invstd * w.to(compute) : batch_invstd;
                         if (training) {
                           // d/dx of w*(x-mean)/std with mean and std from this batch:
                           // w/std * (g - mean(g) - xhat * mean(g*xhat)).
                           const double inv_count = 1.0 / static_cast<double>(count);
                           const Tensor centred =
                               g - (sum_g * inv_count).view(bshape) - xhat * (sum_g_xhat * inv_count).view(bshape);
                           grads[0] = centred * scale.view(bshape);
                         } else {
                           grads[0] = g * scale.view(bshape);
                         }
                       }
                       if (need_weight) grads[1] = sum_g_xhat;
                       if (need_bias) grads[2] = sum_g;
                       return grads;
                     });
  }
  return out;
}

}  // namespace

Tensor batch_norm(const Tensor& input, const Tensor& running_mean, const Tensor& running_var, const Tensor& weight,
                  const Tensor& bias, bool training, double momentum, double eps) {
  return batch_norm_impl(input, running_mean, running_var, weight, bias, training, Momentum{momentum, Tensor()}, eps);
}

}  // namespace functional

BatchNormBase::BatchNormBase(int64_t num_features, double eps, std::optional<double> momentum, bool affine,
                             bool track_running_stats)
    : num_features(num_features),
      eps(eps),
      momentum(momentum),
      affine(affine),
      track_running_stats(track_running_stats) {
  EMBER_CHECK(num_features >= 0, "num_features must be non-negative, got ", num_features);
  if (affine) {
    weight = register_parameter("weight", ones({num_features}));
    bias = register_parameter("bias", zeros({num_features}));
  }
  if (track_running_stats) {
    running_mean = register_buffer("running_mean", zeros({num_features}));
    running_var = register_buffer("running_var", ones({num_features}));
    num_batches_tracked = register_buffer("num_batches_tracked", zeros({}, kInt64));
  }
}

void BatchNormBase::reset_running_stats() {
  if (!track_running_stats) return;
  NoGradGuard no_grad;
  running_mean.zero_();
  running_var.fill_(1);
  num_batches_tracked.zero_();
}

Tensor BatchNormBase::forward(const Tensor& input) {
  check_input_dim(input);
  functional::Momentum factor{momentum.value_or(0.0), Tensor()};
  if (is_training() && track_running_stats) {
    NoGradGuard no_grad;
    num_batches_tracked.add_(1);
    // momentum=None: a cumulative average, factor 1/num_batches_tracked (float64, as PyTorch's
    // Python float), computed where the count lives: reading the count back would make the host
    // wait for the device at every forward.
    if (!momentum) factor.tensor = 1.0 / num_batches_tracked.to(kFloat64);
  }
  // Without running statistics the batch's own are used in eval() as well.
  const bool use_batch_stats = is_training() || !track_running_stats;
  return functional::batch_norm_impl(input, running_mean, running_var, weight, bias, use_batch_stats, factor, eps);
}

void BatchNorm1d::check_input_dim(const Tensor& input) const {
  detail::check_defined(input, "BatchNorm1d");
  EMBER_CHECK(input.dim() == 2 || input.dim() == 3, "expected 2D or 3D input (got ", input.dim(), "D input)");
}

void BatchNorm2d::check_input_dim(const Tensor& input) const {
  detail::check_defined(input, "BatchNorm2d");
  EMBER_CHECK(input.dim() == 4, "expected 4D input (got ", input.dim(), "D input)");
}

}  // namespace ember::nn
