// The normalisation ops with a front end of their own: batch_norm and group_norm
// (nn::functional's and the BatchNorm / GroupNorm layers call these).
//
// batch_norm's forward is composed from ember ops under NoGradGuard and recorded as ONE node,
// NativeBatchNormBackward0, as in PyTorch: the closed-form backward needs only the per-channel
// mean and 1/std, which is far cheaper than differentiating through the mean and variance
// reductions op by op.
//
// group_norm is composed of recorded ops (mean, subtraction, rsqrt), so that autograd (second
// order included) and every device come with it. Its statistics are computed in float32 or
// float64 as the input is, over each sample's group of channels.
#include "ops/normalization.h"

#include <vector>

#include "amp/autocast_policy.h"
#include "autograd/node.h"
#include "core/check.h"
#include "core/tensor_internal.h"
#include "ember/autograd.h"
#include "ember/ops.h"

namespace ember {

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

/// running * (1 - m) + batch * (m * scale). The tensor form rounds as the number form does: the
/// factor's arithmetic is in float64 as on the host, and the 0-dim float64 operands are converted
/// to the statistics' dtype (a 0-dim tensor does not promote a dimensioned one) exactly as a
/// number is.
Tensor running_update(const Tensor& running, const Tensor& batch, const detail::BatchNormMomentum& m, double scale) {
  if (m.tensor.defined()) {
    return running * (1.0 - m.tensor) + batch * (scale == 1.0 ? m.tensor : m.tensor * scale);
  }
  return running * (1.0 - m.value) + batch * (m.value * scale);
}

}  // namespace

namespace detail {

Tensor batch_norm_impl(const Tensor& input, const Tensor& running_mean, const Tensor& running_var, const Tensor& weight,
                       const Tensor& bias, bool training, const BatchNormMomentum& momentum, double eps) {
  amp::detail::NoAutocastGuard no_autocast;  // one op in PyTorch, not in autocast's lists
  detail::OpContext context("batch_norm",
                            {{"input", &input}, {"running_mean", &running_mean}, {"weight", &weight}, {"bias", &bias}});
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

}  // namespace detail

Tensor batch_norm(const Tensor& input, const Tensor& running_mean, const Tensor& running_var, const Tensor& weight,
                  const Tensor& bias, bool training, double momentum, double eps) {
  return detail::batch_norm_impl(input, running_mean, running_var, weight, bias, training,
                                 detail::BatchNormMomentum{momentum, Tensor()}, eps);
}

Tensor group_norm(const Tensor& input, int64_t num_groups, const Tensor& weight, const Tensor& bias, double eps) {
  if (const auto device = amp::detail::autocast_device(input, weight, bias); device && *device != kCPU) {
    return amp::detail::autocast_call(amp::detail::CastPolicy::Float32, *device, group_norm, input, num_groups, weight,
                                      bias, eps);
  }
  detail::check_defined(input, "group_norm");
  EMBER_CHECK(input.dim() >= 2, "Expected at least 2 dimensions for input tensor but received ", input.dim());
  const int64_t N = input.size(0), C = input.size(1);
  EMBER_CHECK(num_groups > 0, "Expected num groups to be greater than 0, got ", num_groups);
  EMBER_CHECK(C % num_groups == 0,
              "Expected number of channels in input to be divisible by num_groups, but got input of shape ",
              detail::shape_str(input.sizes()), " and num_groups=", num_groups);
  EMBER_CHECK(!weight.defined() || (weight.dim() == 1 && weight.numel() == C),
              "Expected weight to be a vector of size equal to the number of channels in input, but got weight of "
              "shape ",
              detail::shape_str(weight.sizes()), " and input of shape ", detail::shape_str(input.sizes()));
  EMBER_CHECK(!bias.defined() || (bias.dim() == 1 && bias.numel() == C),
              "Expected bias to be a vector of size equal to the number of channels in input, but got bias of shape ",
              detail::shape_str(bias.sizes()), " and input of shape ", detail::shape_str(input.sizes()));
  EMBER_CHECK(input.is_floating_point(), "\"GroupNormKernelImpl\" not implemented for '",
              scalar_type_name(input.dtype()), "'");
  // PyTorch's _verify_batch_size: a group of one value has no variance to normalise by.
  std::vector<int64_t> group_sizes{N * C / num_groups, num_groups};
  int64_t values = group_sizes[0];
  for (int64_t d = 2; d < input.dim(); ++d) {
    group_sizes.push_back(input.size(d));
    values *= input.size(d);
  }
  EMBER_CHECK(values != 1, "Expected more than 1 value per channel when training, got input size ",
              detail::shape_str(group_sizes));
  // [N, G, C/G * spatial]: each row is one sample's group.
  const Tensor grouped = input.reshape({N, num_groups, -1});
  const Tensor mean = grouped.mean({2}, true);
  const Tensor centred = grouped - mean;
  const Tensor var = (centred * centred).mean({2}, true);
  Tensor out = (centred * rsqrt(var + eps)).reshape(input.sizes());
  if (weight.defined() || bias.defined()) {
    std::vector<int64_t> per_channel(static_cast<size_t>(input.dim()), 1);
    per_channel[1] = C;
    if (weight.defined()) out = out * weight.reshape(per_channel);
    if (bias.defined()) out = out + bias.reshape(per_channel);
  }
  return out;
}

}  // namespace ember
