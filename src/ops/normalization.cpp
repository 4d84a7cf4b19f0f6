// The normalisation ops with a front end of their own: batch_norm and group_norm
// (nn::functional's and the BatchNorm / GroupNorm layers call these).
//
// batch_norm runs the channel_norm kernels (backend/*/channel_norm.*: the statistics in one
// pass of sums and one of squared deviations, the normalisation in one more) under NoGradGuard
// and is recorded as ONE node, NativeBatchNormBackward0, as in PyTorch: the closed-form backward
// needs only the per-channel mean and 1/std, and runs the kernels too (one pass for the sums, one
// for grad_input). A backward that records itself (create_graph) composes the same formula from
// ember ops instead, so that it differentiates again.
//
// group_norm runs the same kernels over each sample's group of channels (the [1, N*G, C/G * S]
// view's channels) and is recorded as one node, NativeGroupNormBackward0, whose backward runs
// them too; 16-bit inputs are computed in float32. A create_graph backward composes the formula.
#include "ops/normalization.h"

#include <vector>

#include "amp/autocast_policy.h"
#include "autograd/node.h"
#include "backend/backend.h"
#include "core/check.h"
#include "core/tensor_internal.h"
#include "ember/autograd.h"
#include "ember/factories.h"
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

// The input as a contiguous [N, C, S] tensor of the compute dtype (S = 1 for [N, C]).
Tensor as_channels(const Tensor& input, Dtype compute) {
  const int64_t n = input.size(0), c = input.size(1);
  const int64_t s = n * c == 0 ? 0 : input.numel() / (n * c);
  return input.to(compute).contiguous().view({n, c, s});
}

// A per-channel vector [C] as the channel_affine kernel's [N, C] coefficient view (stride 0 along N).
TensorView per_channel(const Tensor& v, const Tensor& x) {
  return view_of(v.view({1, x.size(1)}).expand({x.size(0), x.size(1)}));
}

// batch_norm's gradients by the channel_norm kernels (a backward that records nothing): two
// passes over the batch, one for the sums of g and g * (x - mean) per channel, one for grad_input.
std::vector<Tensor> batch_norm_backward(const Tensor& grad, const Tensor& input, const Tensor& weight,
                                        const Tensor& mean, const Tensor& invstd, bool training, Dtype compute,
                                        bool need_input, bool need_weight, bool need_bias) {
  const Tensor g = as_channels(grad, compute);
  const int64_t channels = g.size(1);
  const double count = static_cast<double>(g.size(0) * g.size(2));
  Backend& backend = backend_for(g.device());
  std::vector<Tensor> grads(3);
  const bool centred_input = training && need_input;
  Tensor x, sum_g, sum_g_xhat;
  if (need_weight || need_bias || centred_input) {
    x = as_channels(input, compute);
    sum_g = empty({channels}, g.options());
    const Tensor sum_gxm = empty({channels}, g.options());
    backend.channel_grad_sums(view_of(g), view_of(x), view_of(mean), view_of(sum_g), view_of(sum_gxm));
    sum_g_xhat = sum_gxm * invstd;
  }
  if (need_input) {
    const Tensor scale = weight.defined() ? invstd * weight.to(compute) : invstd;
    Tensor gx = empty(g.sizes(), g.options());
    if (training) {
      // w/std * (g - mean(g) - xhat * mean(g * xhat)), with xhat = (x - mean) / std:
      // d * g + a * (x - mean) + b per channel.
      const Tensor a = -(scale * invstd * sum_g_xhat) / count, b = -(scale * sum_g) / count;
      backend.channel_affine(view_of(x), per_channel(mean, g), per_channel(a, g), per_channel(b, g), view_of(g),
                             per_channel(scale, g), view_of(gx));
    } else {
      backend.channel_affine(view_of(g), TensorView(), per_channel(scale, g), TensorView(), TensorView(), TensorView(),
                             view_of(gx));
    }
    grads[0] = gx.view(grad.sizes());
  }
  if (need_weight) grads[1] = sum_g_xhat;
  if (need_bias) grads[2] = sum_g;
  return grads;
}

// group_norm's sizes: input [N, C, S...] in G groups of C/G channels, computed in `compute`.
struct GroupNormGeometry {
  int64_t n, c, groups, s;  // s: values per channel and sample
  Dtype compute;
  int64_t group_channels() const { return c / groups; }
  // A per-(sample, group) vector [N*G] as a contiguous per-(sample, channel) [N, C].
  Tensor per_channel(const Tensor& v) const {
    return v.view({n, groups, 1}).expand({n, groups, group_channels()}).reshape({n, c});
  }
  // A per-(sample, channel) [N, C] summed over each group's channels: [N*G].
  Tensor per_group(const Tensor& v) const { return v.reshape({n, groups, group_channels()}).sum({2}).reshape({-1}); }
};

// group_norm's gradients by the channel_norm kernels (a backward that records nothing): one pass
// for the sums of g and g * (x - mean) per sample and channel, one for grad_input:
// grad_x = (w g - mean(w g) - (x - mean) / var * mean(w g (x - mean))) / std over each group.
std::vector<Tensor> group_norm_backward(const Tensor& grad, const Tensor& input, const Tensor& weight,
                                        const Tensor& mean_nc, const Tensor& invstd_nc, const GroupNormGeometry& geo,
                                        bool need_input, bool need_weight, bool need_bias) {
  const Tensor g = as_channels(grad, geo.compute), x = as_channels(input, geo.compute);
  Backend& backend = backend_for(g.device());
  // Per (sample, channel): the [1, N*C, S] view's channels.
  const Tensor sum_g = empty({geo.n * geo.c}, g.options()), sum_gxm = empty({geo.n * geo.c}, g.options());
  backend.channel_grad_sums(view_of(g.view({1, geo.n * geo.c, geo.s})), view_of(x.view({1, geo.n * geo.c, geo.s})),
                            view_of(mean_nc.reshape({-1})), view_of(sum_g), view_of(sum_gxm));
  const Tensor sum_g_nc = sum_g.view({geo.n, geo.c}), sum_gxm_nc = sum_gxm.view({geo.n, geo.c});
  std::vector<Tensor> grads(3);
  if (need_input) {
    const Tensor w = weight.defined() ? weight.to(geo.compute).view({1, geo.c}) : Tensor();
    const Tensor wg = w.defined() ? sum_g_nc * w : sum_g_nc, wgxm = w.defined() ? sum_gxm_nc * w : sum_gxm_nc;
    const double count = static_cast<double>(geo.group_channels() * geo.s);
    const Tensor db = geo.per_channel(geo.per_group(wg)), ds = geo.per_channel(geo.per_group(wgxm));
    const Tensor d = w.defined() ? invstd_nc * w : invstd_nc;
    const Tensor a = -(invstd_nc * invstd_nc * invstd_nc * ds) / count, b = -(invstd_nc * db) / count;
    Tensor gx = empty(g.sizes(), g.options());
    backend.channel_affine(view_of(x), view_of(mean_nc), view_of(a), view_of(b), view_of(g), view_of(d), view_of(gx));
    grads[0] = gx.view(grad.sizes());
  }
  if (need_weight) grads[1] = (sum_gxm_nc * invstd_nc).sum({0});
  if (need_bias) grads[2] = sum_g_nc.sum({0});
  return grads;
}

// The same gradients composed from ember ops, for a backward that records itself (create_graph).
std::vector<Tensor> group_norm_backward_composed(const Tensor& grad, const Tensor& input, const Tensor& weight,
                                                 const GroupNormGeometry& geo, double eps, bool need_input,
                                                 bool need_weight, bool need_bias) {
  const std::vector<int64_t> grouped{geo.n, geo.groups, geo.group_channels(), geo.s};
  const Tensor x = input.to(geo.compute).reshape(grouped), g = grad.to(geo.compute).reshape(grouped);
  const int64_t stat_dims[2] = {2, 3};
  const Tensor mean = x.mean(stat_dims, true);
  const Tensor invstd = rsqrt((x - mean).square().mean(stat_dims, true) + eps);
  const Tensor xhat = (x - mean) * invstd;
  std::vector<Tensor> grads(3);
  if (need_input) {
    const Tensor wg = weight.defined() ? g * weight.to(geo.compute).view({1, geo.groups, geo.group_channels(), 1}) : g;
    grads[0] =
        (invstd * (wg - wg.mean(stat_dims, true) - xhat * (wg * xhat).mean(stat_dims, true))).reshape(input.sizes());
  }
  const int64_t param_dims[2] = {0, 3};
  if (need_weight) grads[1] = (g * xhat).sum(param_dims).reshape({geo.c});
  if (need_bias) grads[2] = g.sum(param_dims).reshape({geo.c});
  return grads;
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
    const Tensor x = as_channels(input, compute);
    if (training) {
      mean = empty({channels}, x.options());
      const Tensor var = empty({channels}, x.options());
      backend_for(x.device()).channel_moments(view_of(x), view_of(mean), view_of(var));
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
    // y = scale * (x - mean) + shift, per channel scale = w/std and shift = b: one pass.
    const Tensor scale = weight.defined() ? invstd * weight.to(compute) : invstd;
    const Tensor shift = bias.defined() ? bias.to(compute) : Tensor();  // undefined: no shift
    Tensor y = empty(x.sizes(), x.options());
    backend_for(x.device())
        .channel_affine(view_of(x), per_channel(mean, x), per_channel(scale, x),
                        shift.defined() ? per_channel(shift, x) : TensorView(), TensorView(), TensorView(), view_of(y));
    out = y.view(input.sizes()).to(input.dtype());
  }

  if (autograd::needs_grad({&input, &weight, &bias})) {
    const bool need_input = input.requires_grad(), need_weight = weight.defined() && weight.requires_grad(),
               need_bias = bias.defined() && bias.requires_grad();
    autograd::record(out, "NativeBatchNormBackward0", {&input, &weight, &bias},
                     [training, count, compute, dims, bshape, need_input, need_weight, need_bias, eps,
                      saved_mean = mean, saved_invstd = invstd, saved_input = autograd::SavedTensor(input),
                      saved_weight = autograd::SavedTensor(weight)](const Tensor& grad) {
                       if (!GradMode::is_enabled()) {
                         return batch_norm_backward(grad, saved_input.get(), saved_weight.get(), saved_mean,
                                                    saved_invstd, training, compute, need_input, need_weight,
                                                    need_bias);
                       }
                       const Tensor g = grad.to(compute);
                       const Tensor x = saved_input.get().to(compute);
                       const Tensor w = saved_weight.get();
                       Tensor batch_mean = saved_mean, batch_invstd = saved_invstd;
                       if (training) {
                         // This backward records itself (create_graph): the batch statistics again, as
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
  if (input.numel() == 0) {
    // Nothing to normalise: the composed form keeps the graph connected to the parameters.
    std::vector<int64_t> per_channel(static_cast<size_t>(input.dim()), 1);
    per_channel[1] = C;
    Tensor out = input.clone();
    if (weight.defined()) out = out * weight.reshape(per_channel);
    if (bias.defined()) out = out + bias.reshape(per_channel);
    return out;
  }
  const Dtype compute = is_16bit(input.dtype()) ? kFloat32 : input.dtype();
  const GroupNormGeometry geo{N, C, num_groups, input.numel() / (N * C), compute};
  Tensor out, mean_nc, invstd_nc;
  {
    NoGradGuard no_grad;
    const Tensor x = as_channels(input, compute);  // [N, C, S]
    // Each sample's group is one "channel" of the [1, N*G, C/G * S] view.
    const Tensor mean = empty({N * num_groups}, x.options()), var = empty({N * num_groups}, x.options());
    Backend& backend = backend_for(x.device());
    backend.channel_moments(view_of(x.view({1, N * num_groups, -1})), view_of(mean), view_of(var));
    mean_nc = geo.per_channel(mean);
    invstd_nc = geo.per_channel(rsqrt(var + eps));
    const Tensor a = weight.defined() ? invstd_nc * weight.to(compute).view({1, C}) : invstd_nc;
    const Tensor b = bias.defined() ? bias.to(compute).view({1, C}).expand({N, C}) : Tensor();  // undefined: none
    Tensor y = empty(x.sizes(), x.options());
    backend.channel_affine(view_of(x), view_of(mean_nc), view_of(a), b.defined() ? view_of(b) : TensorView(),
                           TensorView(), TensorView(), view_of(y));
    out = y.view(input.sizes()).to(input.dtype());
  }
  if (autograd::needs_grad({&input, &weight, &bias})) {
    autograd::record(
        out, "NativeGroupNormBackward0", {&input, &weight, &bias},
        [geo, eps, need_input = input.requires_grad(), need_weight = weight.defined() && weight.requires_grad(),
         need_bias = bias.defined() && bias.requires_grad(), mean_nc, invstd_nc,
         saved_input = autograd::SavedTensor(input), saved_weight = autograd::SavedTensor(weight)](const Tensor& grad) {
          if (GradMode::is_enabled()) {
            return group_norm_backward_composed(grad, saved_input.get(), saved_weight.get(), geo, eps, need_input,
                                                need_weight, need_bias);
          }
          return group_norm_backward(grad, saved_input.get(), saved_weight.get(), mean_nc, invstd_nc, geo, need_input,
                                     need_weight, need_bias);
        });
  }
  return out;
}

}  // namespace ember
