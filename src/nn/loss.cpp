// The losses of torch.nn.functional beyond functional.cpp's (nll, cross-entropy, mse, BCE with
// logits), composed from differentiable ops as PyTorch composes most of them. Where PyTorch's
// kernel has a gradient of its own that composition would not give (BCE's clamped logs and
// denominator, soft margin's and logsigmoid's), the forward runs without recording and one node
// carries PyTorch's backward formula, itself written with ops so that it can be differentiated.
// The hinges max(0, v) are relu(v): PyTorch's clamp_min passes no gradient at v == 0, nor does
// relu, where ember::clamp's gradient passes at the bound.
#include "ember/nn/loss.h"

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <initializer_list>
#include <numbers>
#include <optional>
#include <string>
#include <utility>
#include <vector>

#include "amp/autocast_policy.h"
#include "autograd/node.h"
#include "core/check.h"
#include "core/tensor_internal.h"
#include "ember/factories.h"
#include "ember/grad_mode.h"
#include "ember/nn/functional.h"
#include "ember/ops.h"
#include "ember/warning.h"
#include "nn/reduce_loss.h"

namespace ember::nn::functional {

namespace {

using amp::detail::CastPolicy;
using Inputs = std::initializer_list<ember::detail::OpContext::Input>;

Tensor zero_of(const Tensor& like) { return zeros({}, like.options()); }

std::string torch_size(IntList sizes) { return "torch.Size(" + ember::detail::shape_str(sizes) + ")"; }

// PyTorch's UserWarning for a target whose size differs from the input's (l1, smooth l1, huber).
void warn_if_sizes_differ(const Tensor& input, const Tensor& target) {
  if (input.sizes().vec() == target.sizes().vec()) return;
  warn("Using a target size (" + torch_size(target.sizes()) + ") that is different to the input size (" +
       torch_size(input.sizes()) +
       "). This will likely lead to incorrect results due to broadcasting. Please ensure they have the same size.");
}

void check_all_defined(std::initializer_list<const Tensor*> tensors, const char* op) {
  for (const Tensor* t : tensors) ember::detail::check_defined(*t, op);
}

// A CPU tensor's values as doubles, for the checks PyTorch's CPU kernels make as they read them.
std::vector<double> host_values(const Tensor& t) {
  NoGradGuard no_grad;
  const Tensor c = t.detach().to(kFloat64).contiguous();
  const double* data = c.data_ptr<double>();
  return std::vector<double>(data, data + c.numel());
}

std::vector<int64_t> host_indices(const Tensor& t) {
  const Tensor c = t.detach().contiguous();
  const int64_t* data = c.data_ptr<int64_t>();
  return std::vector<int64_t>(data, data + c.numel());
}

void check_long_target(const Tensor& target) {
  EMBER_CHECK(target.dtype() == kInt64, "expected scalar type Long but found ", scalar_type_name(target.dtype()));
}

// log(1 + u) to within a few ulps without a log1p op (Kahan's): u itself where 1 + u rounds to 1.
// Not recorded: its callers record their own backward.
Tensor log1p_values(const Tensor& u) {
  Tensor w = u + 1.0;
  Tensor ratio = where(isinf(u), u, log(w) * (u / (w - 1.0)));
  return where(w == 1.0, u, ratio);
}

// Records `backward` (grad_output -> one gradient per input) as the node of `out`, when needed.
void record_node(Tensor& out, const char* name, std::initializer_list<const Tensor*> inputs,
                 autograd::BackwardFn backward) {
  if (autograd::needs_grad(inputs)) autograd::record(out, name, inputs, std::move(backward));
}

// logsigmoid(x) = min(x, 0) - log1p(exp(-|x|)), with PyTorch's backward from the same buffer.
Tensor log_sigmoid(const Tensor& x) {
  Tensor out;
  {
    NoGradGuard no_grad;
    out = clamp(x, std::nullopt, 0.0) - log1p_values(exp(-abs(x)));
  }
  record_node(out, "LogSigmoidBackward0", {&x}, [sx = autograd::SavedTensor(x)](const Tensor& g) {
    Tensor v = sx.get();
    Tensor z = exp(-abs(v));
    Tensor negative = v < 0;
    // in < 0: 1 - z / (1 + z); otherwise z / (1 + z).
    Tensor share = z / (z + 1.0);
    return std::vector<Tensor>{g * where(negative, 1.0 - share, share)};
  });
  return out;
}

// The value of a loss whose reduction is a Reduction, for KLDivReduction's three of them.
Reduction plain_reduction(KLDivReduction reduction) {
  switch (reduction) {
    case KLDivReduction::None:
      return Reduction::None;
    case KLDivReduction::Sum:
    case KLDivReduction::BatchMean:
      return Reduction::Sum;
    case KLDivReduction::Mean:
      break;
  }
  return Reduction::Mean;
}

KLDivReduction kl_reduction(Reduction reduction) {
  switch (reduction) {
    case Reduction::None:
      return KLDivReduction::None;
    case Reduction::Sum:
      return KLDivReduction::Sum;
    case Reduction::Mean:
      break;
  }
  return KLDivReduction::Mean;
}

// weight broadcast to target's size, with the message of torch.broadcast_shapes.
void check_weight_broadcasts(const Tensor& target, const Tensor& weight) {
  const IntList t = target.sizes(), w = weight.sizes();
  for (int64_t i = 1; i <= static_cast<int64_t>(std::min(t.size(), w.size())); ++i) {
    const int64_t ti = t[t.size() - i], wi = w[w.size() - i];
    EMBER_CHECK(wi == 1 || ti == 1 || wi == ti, "Attempting to broadcast a dimension of length ", wi, " at ", -i,
                "! Mismatching argument at index 1 had ", torch_size(w),
                "; but expected shape should be broadcastable to ", ember::detail::shape_str(t));
  }
}

// Positions of a [N, C] multilabel target before the row's first -1, as input's dtype (1 or 0).
Tensor leading_labels(const Tensor& target, Dtype dtype) {
  const int64_t classes = target.size(1);
  // ends[n, j] counts the negative entries at or before j: an upper-triangular matrix of ones.
  std::vector<double> upper(static_cast<size_t>(classes * classes), 0.0);
  for (int64_t i = 0; i < classes; ++i)
    for (int64_t j = i; j < classes; ++j) upper[static_cast<size_t>(i * classes + j)] = 1.0;
  Tensor triangle = tensor(upper, TensorOptions().dtype(dtype)).reshape({classes, classes}).to(target.device());
  Tensor ends = matmul((target < 0).to(dtype), triangle);
  return (ends == 0).to(dtype);
}

}  // namespace

Tensor l1_loss(const Tensor& input, const Tensor& target, Reduction reduction, const Tensor& weight) {
  if (const auto device = amp::detail::autocast_device(input, target, weight)) {
    return amp::detail::autocast_call(
        CastPolicy::Float32, *device,
        [&](const Tensor& x, const Tensor& y, const Tensor& w) { return l1_loss(x, y, reduction, w); }, input, target,
        weight);
  }
  ember::detail::OpContext context("l1_loss", {{"input", &input}, {"target", &target}, {"weight", &weight}});
  check_all_defined({&input, &target}, "l1_loss");
  warn_if_sizes_differ(input, target);
  Tensor loss = abs(input - target);
  if (!weight.defined()) return reduce_loss(loss, reduction);
  EMBER_CHECK(weight.sizes().vec() == input.sizes().vec(), "Weights and input must have the same size.");
  loss = loss * weight;
  return reduction == Reduction::Mean ? loss.sum() / weight.sum() : reduce_loss(loss, reduction);
}

Tensor smooth_l1_loss(const Tensor& input, const Tensor& target, Reduction reduction, double beta) {
  if (const auto device = amp::detail::autocast_device(input, target)) {
    return amp::detail::autocast_call(
        CastPolicy::Float32, *device,
        [&](const Tensor& x, const Tensor& y) { return smooth_l1_loss(x, y, reduction, beta); }, input, target);
  }
  ember::detail::OpContext context("smooth_l1_loss", {{"input", &input}, {"target", &target}});
  check_all_defined({&input, &target}, "smooth_l1_loss");
  warn_if_sizes_differ(input, target);
  if (beta == 0.0) return reduce_loss(abs(input - target), reduction);
  EMBER_CHECK(beta >= 0, "smooth_l1_loss does not support negative values for beta.");
  Tensor z = abs(input - target);
  return reduce_loss(where(z < beta, z * 0.5 * z / beta, z - 0.5 * beta), reduction);
}

Tensor huber_loss(const Tensor& input, const Tensor& target, Reduction reduction, double delta, const Tensor& weight) {
  if (const auto device = amp::detail::autocast_device(input, target, weight)) {
    return amp::detail::autocast_call(
        CastPolicy::Float32, *device,
        [&](const Tensor& x, const Tensor& y, const Tensor& w) { return huber_loss(x, y, reduction, delta, w); }, input,
        target, weight);
  }
  ember::detail::OpContext context("huber_loss", {{"input", &input}, {"target", &target}, {"weight", &weight}});
  check_all_defined({&input, &target}, "huber_loss");
  warn_if_sizes_differ(input, target);
  EMBER_CHECK(delta > 0, "huber_loss does not support non-positive values for delta.");
  Tensor z = abs(input - target);
  Tensor loss = where(z < delta, z * 0.5 * z, (z - 0.5 * delta) * delta);
  if (weight.defined()) {
    EMBER_CHECK(weight.sizes().vec() == input.sizes().vec(), "Weights and input must have the same size.");
    loss = loss * weight;
  }
  return reduce_loss(loss, reduction);
}

Tensor kl_div(const Tensor& input, const Tensor& target, KLDivReduction reduction, bool log_target) {
  if (const auto device = amp::detail::autocast_device(input, target)) {
    return amp::detail::autocast_call(
        CastPolicy::Float32, *device,
        [&](const Tensor& x, const Tensor& y) { return kl_div(x, y, reduction, log_target); }, input, target);
  }
  ember::detail::OpContext context("kl_div", {{"input", &input}, {"target", &target}});
  check_all_defined({&input, &target}, "kl_div");
  if (reduction == KLDivReduction::Mean) {
    warn(
        "reduction: 'mean' divides the total loss by both the batch size and the support size.'batchmean' divides "
        "only by the batch size, and aligns with the KL div math definition.'mean' will be changed to behave the "
        "same as 'batchmean' in the next major release.");
  }
  Tensor loss;
  if (log_target) {
    loss = exp(target) * (target - input);
  } else {
    // xlogy(target, target): 0 where target is 0 (its gradient there is NaN, as PyTorch's).
    loss = where(target == 0, zero_of(target), target * log(target)) - target * input;
  }
  Tensor reduced = reduce_loss(loss, plain_reduction(reduction));
  if (reduction == KLDivReduction::BatchMean && input.dim() != 0) reduced = reduced / input.size(0);
  return reduced;
}

Tensor kl_div(const Tensor& input, const Tensor& target, Reduction reduction, bool log_target) {
  return kl_div(input, target, kl_reduction(reduction), log_target);
}

// PyTorch's EPSILON of BCE's gradient is the float 1e-12 (9.9999999600419720e-13).
constexpr double kBceEpsilon = static_cast<double>(1e-12f);

Tensor binary_cross_entropy(const Tensor& input, const Tensor& target, const Tensor& weight, Reduction reduction) {
  if (const auto device = amp::detail::autocast_device(input, target, weight)) {
    EMBER_CHECK(*device == DeviceType::CPU,
                "torch.nn.functional.binary_cross_entropy and torch.nn.BCELoss are unsafe to autocast.\n"
                "Many models use a sigmoid layer right before the binary cross entropy layer.\n"
                "In this case, combine the two layers using torch.nn.functional.binary_cross_entropy_with_logits\n"
                "or torch.nn.BCEWithLogitsLoss.  binary_cross_entropy_with_logits and BCEWithLogits are\n"
                "safe to autocast.");
    return amp::detail::autocast_call(
        CastPolicy::Float32, *device,
        [&](const Tensor& x, const Tensor& y, const Tensor& w) { return binary_cross_entropy(x, y, w, reduction); },
        input, target, weight);
  }
  ember::detail::OpContext context("binary_cross_entropy",
                                   {{"input", &input}, {"target", &target}, {"weight", &weight}});
  check_all_defined({&input, &target}, "binary_cross_entropy");
  EMBER_CHECK(target.sizes().vec() == input.sizes().vec(), "Using a target size (", torch_size(target.sizes()),
              ") that is different to the input size (", torch_size(input.sizes()),
              ") is deprecated. Please ensure they have the same size.");
  if (weight.defined()) check_weight_broadcasts(target, weight);
  EMBER_CHECK(!autograd::needs_grad({&weight}),
              "The function 'binary_cross_entropy' is not differentiable with respect to argument 'weight'. This "
              "input cannot have requires_grad True.");
  if (input.is_cpu() && target.is_cpu()) {
    // PyTorch's CPU kernel checks each element as it reads it, the input's value first.
    const std::vector<double> x = host_values(input), y = host_values(target);
    for (size_t i = 0; i < x.size(); ++i) {
      EMBER_CHECK(x[i] >= 0 && x[i] <= 1, "all elements of input should be between 0 and 1");
      EMBER_CHECK(y[i] >= 0 && y[i] <= 1, "all elements of target should be between 0 and 1");
    }
  }
  Tensor loss;
  {
    NoGradGuard no_grad;
    Tensor log_x = clamp(log(input), -100.0);
    Tensor log_1mx = clamp(log1p_values(-input), -100.0);
    loss = (target - 1.0) * log_1mx - target * log_x;
    if (weight.defined()) loss = loss * weight;
  }
  // PyTorch's gradients: w (x - y) / max(x (1 - x), 1e-12) for the input, -w logit(x) for the target.
  record_node(loss, "BinaryCrossEntropyBackward0", {&input, &target},
              [sx = autograd::SavedTensor(input), sy = autograd::SavedTensor(target),
               sw = autograd::SavedTensor(weight)](const Tensor& g) {
                Tensor x = sx.get(), y = sy.get(), w = sw.get();
                Tensor gx = g * (x - y) / clamp((1.0 - x) * x, kBceEpsilon);
                Tensor gy = -log(x / (1.0 - x)) * g;
                if (w.defined()) {
                  gx = gx * w;
                  gy = gy * w;
                }
                return std::vector<Tensor>{gx, gy};
              });
  return reduce_loss(loss, reduction);
}

Tensor poisson_nll_loss(const Tensor& input, const Tensor& target, bool log_input, bool full, double eps,
                        Reduction reduction) {
  if (const auto device = amp::detail::autocast_device(input, target)) {
    return amp::detail::autocast_call(
        CastPolicy::Float32, *device,
        [&](const Tensor& x, const Tensor& y) { return poisson_nll_loss(x, y, log_input, full, eps, reduction); },
        input, target);
  }
  ember::detail::OpContext context("poisson_nll_loss", {{"input", &input}, {"target", &target}});
  check_all_defined({&input, &target}, "poisson_nll_loss");
  Tensor loss = log_input ? exp(input) - target * input : input - target * log(input + eps);
  if (full) {
    Tensor stirling = target * log(target) - target + 0.5 * log(2 * std::numbers::pi * target);
    loss = loss + masked_fill(stirling, target <= 1, 0.0);
  }
  return reduce_loss(loss, reduction);
}

Tensor gaussian_nll_loss(const Tensor& input, const Tensor& target, const Tensor& var, bool full, double eps,
                         Reduction reduction) {
  ember::detail::OpContext context("gaussian_nll_loss", {{"input", &input}, {"target", &target}, {"var", &var}});
  check_all_defined({&input, &target, &var}, "gaussian_nll_loss");
  if (var.is_cpu()) {
    bool negative = false;
    for (const double v : host_values(var)) negative = negative || v < 0;
    EMBER_CHECK(!negative, "var has negative entry/entries");
  }
  Tensor v = var;
  const std::vector<int64_t> in = input.sizes().vec(), vs = var.sizes().vec();
  if (vs != in) {
    const std::vector<int64_t> leading(in.begin(), in.end() - (in.empty() ? 0 : 1));
    int64_t mismatched = 0;
    if (!in.empty() && leading == vs) {
      v = var.unsqueeze(-1);  // one variance per row: homoscedastic
    } else {
      // PyTorch's rule: the sizes var has where it differs from input add up to 1.
      bool same_rank = in.size() == vs.size();
      for (size_t i = 0; same_rank && i < in.size(); ++i) mismatched += in[i] != vs[i] ? vs[i] : 0;
      EMBER_CHECK(same_rank && mismatched == 1, "var is of incorrect size");
    }
  }
  // The clamp PyTorch makes in place under no_grad: new values, the gradient of var unchanged.
  Tensor clamped;
  {
    NoGradGuard no_grad;
    clamped = clamp(v, eps);
  }
  if (autograd::needs_grad({&v})) {
    autograd::record(clamped, "CloneBackward0", {&v}, [](const Tensor& g) { return std::vector<Tensor>{g}; });
  }
  Tensor loss = 0.5 * (log(clamped) + pow(input - target, 2) / clamped);
  if (full) loss = loss + 0.5 * std::log(2 * std::numbers::pi);
  return reduce_loss(loss, reduction);
}

Tensor gaussian_nll_loss(const Tensor& input, const Tensor& target, double var, bool full, double eps,
                         Reduction reduction) {
  EMBER_CHECK(var >= 0, "var has negative entry/entries");
  ember::detail::check_defined(input, "gaussian_nll_loss");
  return gaussian_nll_loss(input, target, full_like(input, var), full, eps, reduction);
}

Tensor margin_ranking_loss(const Tensor& input1, const Tensor& input2, const Tensor& target, double margin,
                           Reduction reduction) {
  if (const auto device = amp::detail::autocast_device(input1, input2, target)) {
    return amp::detail::autocast_call(
        CastPolicy::Float32, *device,
        [&](const Tensor& a, const Tensor& b, const Tensor& y) {
          return margin_ranking_loss(a, b, y, margin, reduction);
        },
        input1, input2, target);
  }
  ember::detail::OpContext context("margin_ranking_loss",
                                   {{"input1", &input1}, {"input2", &input2}, {"target", &target}});
  check_all_defined({&input1, &input2, &target}, "margin_ranking_loss");
  EMBER_CHECK(input1.dim() == input2.dim() && input1.dim() == target.dim(),
              "margin_ranking_loss : All input tensors should have same dimension but got sizes: input1: ",
              torch_size(input1.sizes()), ", input2: ", torch_size(input2.sizes()),
              ", target: ", torch_size(target.sizes()), " ");
  return reduce_loss(ember::relu(-target * (input1 - input2) + margin), reduction);
}

Tensor hinge_embedding_loss(const Tensor& input, const Tensor& target, double margin, Reduction reduction) {
  if (const auto device = amp::detail::autocast_device(input, target)) {
    return amp::detail::autocast_call(
        CastPolicy::Float32, *device,
        [&](const Tensor& x, const Tensor& y) { return hinge_embedding_loss(x, y, margin, reduction); }, input, target);
  }
  ember::detail::OpContext context("hinge_embedding_loss", {{"input", &input}, {"target", &target}});
  check_all_defined({&input, &target}, "hinge_embedding_loss");
  Tensor zero = zero_of(input);
  Tensor margin_clamp = ember::relu(margin - input);
  Tensor output_margin = where(target != 1, margin_clamp, zero);
  Tensor output_self = where(target != -1, input, zero);
  return reduce_loss(output_margin + output_self, reduction);
}

Tensor soft_margin_loss(const Tensor& input, const Tensor& target, Reduction reduction) {
  if (const auto device = amp::detail::autocast_device(input, target)) {
    return amp::detail::autocast_call(
        CastPolicy::Float32, *device,
        [&](const Tensor& x, const Tensor& y) { return soft_margin_loss(x, y, reduction); }, input, target);
  }
  ember::detail::OpContext context("soft_margin_loss", {{"input", &input}, {"target", &target}});
  check_all_defined({&input, &target}, "soft_margin_loss");
  EMBER_CHECK(!autograd::needs_grad({&target}),
              "The function 'soft_margin_loss' is not differentiable with respect to argument 'target'. This input "
              "cannot have requires_grad True.");
  Tensor loss;
  {
    NoGradGuard no_grad;
    loss = log1p_values(exp(-(input * target)));
  }
  // PyTorch's backward: -y z / (1 + z) with z = exp(-y x).
  record_node(loss, "SoftMarginLossBackward0", {&input},
              [sx = autograd::SavedTensor(input), sy = autograd::SavedTensor(target)](const Tensor& g) {
                Tensor x = sx.get(), y = sy.get();
                Tensor z = exp(-y * x);
                return std::vector<Tensor>{-y * z / (z + 1.0) * g};
              });
  return reduce_loss(loss, reduction);
}

Tensor multilabel_soft_margin_loss(const Tensor& input, const Tensor& target, const Tensor& weight,
                                   Reduction reduction) {
  ember::detail::OpContext context("multilabel_soft_margin_loss",
                                   {{"input", &input}, {"target", &target}, {"weight", &weight}});
  check_all_defined({&input, &target}, "multilabel_soft_margin_loss");
  Tensor loss = -(target * log_sigmoid(input) + (1.0 - target) * log_sigmoid(-input));
  if (weight.defined()) loss = loss * weight;
  const int64_t class_dim = input.dim() - 1;
  const int64_t dims[1] = {class_dim};
  loss = loss.sum(dims) / input.size(class_dim);
  return reduce_loss(loss, reduction);
}

Tensor multi_margin_loss(const Tensor& input, const Tensor& target, int64_t p, double margin, const Tensor& weight,
                         Reduction reduction) {
  if (const auto device = amp::detail::autocast_device(input, target, weight)) {
    return amp::detail::autocast_call(
        CastPolicy::Float32, *device,
        [&](const Tensor& x, const Tensor& y, const Tensor& w) {
          return multi_margin_loss(x, y, p, margin, w, reduction);
        },
        input, target, weight);
  }
  ember::detail::OpContext context("multi_margin_loss", {{"input", &input}, {"target", &target}, {"weight", &weight}});
  check_all_defined({&input, &target}, "multi_margin_loss");
  EMBER_CHECK(p == 1 || p == 2, "only p == 1 and p == 2 supported");
  if (weight.defined()) EMBER_CHECK(weight.dim() == 1, "weight must be one-dimensional");
  const int64_t ndims = input.dim();
  EMBER_CHECK((ndims == 2 && input.size(1) != 0) || (ndims == 1 && input.size(0) != 0) || ndims == 0,
              "Expected non-empty vector or matrix with optional 0-dim batch size, but got: ",
              ember::detail::shape_str(input.sizes()));
  const int64_t frames = ndims <= 1 ? 1 : input.size(0);
  const int64_t classes = ndims == 0 ? 1 : input.size(ndims - 1);
  EMBER_CHECK(target.dim() <= 1 && target.numel() == frames,
              "multi_margin_loss: target tensor should be 1-D with size equal to the number of input samples (batch "
              "size). Expected target size [",
              frames, "], but got ", ember::detail::shape_str(target.sizes()), ". Input has shape ",
              ember::detail::shape_str(input.sizes()), ".");
  check_long_target(target);
  if (weight.defined()) {
    EMBER_CHECK(weight.numel() == classes, "inconsistent weight size, expected ", classes, " but got ",
                ember::detail::shape_str(weight.sizes()));
    EMBER_CHECK(weight.dtype() == input.dtype(), "expected scalar type ", scalar_type_name(input.dtype()),
                " but found ", scalar_type_name(weight.dtype()));
  }
  if (target.is_cpu()) {
    for (const int64_t t : host_indices(target)) EMBER_CHECK(t >= 0 && t < classes, "target out of range");
  }
  Tensor x = input.reshape({frames, classes});
  Tensor index = target.reshape({frames, 1});
  Tensor picked = gather(x, 1, index);  // x[n, y_n], [N, 1]
  // z = margin - x[y] + x[i]; only z > 0 counts (and has a gradient), as in PyTorch's kernel.
  Tensor h = ember::relu(margin - picked + x);
  if (p == 2) h = h * h;
  if (weight.defined()) h = h * index_select(weight, 0, index.reshape({-1})).reshape({frames, 1});
  Tensor is_target =
      arange(classes, TensorOptions().dtype(kInt64).device(input.device())).reshape({1, classes}) == index;
  h = where(is_target, zero_of(h), h);
  const int64_t class_dims[1] = {1};
  Tensor loss = h.sum(class_dims) / classes;
  if (reduction == Reduction::None) return target.dim() == 0 ? loss.reshape({}) : loss;
  return reduce_loss(loss, reduction);
}

Tensor multilabel_margin_loss(const Tensor& input, const Tensor& target, Reduction reduction) {
  if (const auto device = amp::detail::autocast_device(input, target)) {
    return amp::detail::autocast_call(
        CastPolicy::Float32, *device,
        [&](const Tensor& x, const Tensor& y) { return multilabel_margin_loss(x, y, reduction); }, input, target);
  }
  ember::detail::OpContext context("multilabel_margin_loss", {{"input", &input}, {"target", &target}});
  check_all_defined({&input, &target}, "multilabel_margin_loss");
  const int64_t ndims = input.dim();
  EMBER_CHECK((ndims == 2 && input.size(1) != 0) || (ndims == 1 && input.size(0) != 0) || ndims == 0,
              "Expected non-empty vector or matrix with optional 0-dim batch size, but got: ",
              ember::detail::shape_str(input.sizes()));
  const int64_t frames = ndims <= 1 ? 1 : input.size(0);
  const int64_t classes = ndims == 0 ? 1 : input.size(ndims - 1);
  const bool consistent = ndims <= 1 ? target.dim() <= 1 && target.numel() == classes
                                     : target.dim() == 2 && target.size(0) == frames && target.size(1) == classes;
  EMBER_CHECK(consistent, "inconsistent target size: ", ember::detail::shape_str(target.sizes()),
              " for input of size: ", ember::detail::shape_str(input.sizes()));
  check_long_target(target);
  if (target.is_cpu()) {
    for (const int64_t t : host_indices(target))
      EMBER_CHECK(t >= -1 && t < classes, "argument #2 'target' is out of range");
  }
  Tensor x = input.reshape({frames, classes});
  Tensor t = target.reshape({frames, classes});
  Tensor valid = leading_labels(t, input.dtype());  // [N, C]: label positions before the first -1
  Tensor index = where(valid > 0, t, zeros({}, t.options()));
  // is_label[n, i]: class i is one of row n's labels.
  Tensor counts = scatter_add(zeros({frames, classes}, input.options()), 1, index, valid);
  Tensor not_label = counts == 0;
  Tensor picked = gather(x, 1, index);                                   // x[n, y_j], [N, C over j]
  Tensor z = ember::relu((1.0 - picked).unsqueeze(2) + x.unsqueeze(1));  // [N, j, i]
  Tensor zero = zero_of(z);
  z = where(valid.unsqueeze(2) > 0, z, zero);
  z = where(not_label.unsqueeze(1), z, zero);
  const int64_t pair_dims[2] = {1, 2};
  Tensor loss = z.sum(pair_dims) / classes;
  if (reduction == Reduction::None) return target.dim() <= 1 ? loss.reshape({}) : loss;
  return reduce_loss(loss, reduction);
}

Tensor cosine_embedding_loss(const Tensor& input1, const Tensor& input2, const Tensor& target, double margin,
                             Reduction reduction) {
  if (const auto device = amp::detail::autocast_device(input1, input2, target)) {
    return amp::detail::autocast_call(
        CastPolicy::Float32, *device,
        [&](const Tensor& a, const Tensor& b, const Tensor& y) {
          return cosine_embedding_loss(a, b, y, margin, reduction);
        },
        input1, input2, target);
  }
  ember::detail::OpContext context("cosine_embedding_loss",
                                   {{"input1", &input1}, {"input2", &input2}, {"target", &target}});
  check_all_defined({&input1, &input2, &target}, "cosine_embedding_loss");
  const int64_t target_dim = target.dim();
  EMBER_CHECK(target_dim == 1 || target_dim == 0, "0D or 1D target tensor expected, multi-target not supported");
  if (target_dim == 1) {
    EMBER_CHECK(input1.dim() == 2 && input2.dim() == 2,
                "1D target tensor expects 2D input tensors, but found inputs with sizes ",
                ember::detail::shape_str(input1.sizes()), " and ", ember::detail::shape_str(input2.sizes()), ".");
  } else {
    EMBER_CHECK(input1.dim() == 1 && input2.dim() == 1,
                "0D target tensor expects 1D input tensors, but found inputs with sizes ",
                ember::detail::shape_str(input1.sizes()), " and ", ember::detail::shape_str(input2.sizes()), ".");
  }
  constexpr double kEpsilon = 1e-12;
  const int64_t dims[1] = {target_dim};
  Tensor prod_sum = (input1 * input2).sum(dims);
  Tensor mag_square1 = (input1 * input1).sum(dims) + kEpsilon;
  Tensor mag_square2 = (input2 * input2).sum(dims) + kEpsilon;
  Tensor cos = prod_sum / (mag_square1 * mag_square2).sqrt();
  Tensor zero = zero_of(cos);
  Tensor output_pos = where(target == 1, 1.0 - cos, zero);
  Tensor output_neg = where(target == -1, ember::relu(cos - margin), zero);
  return reduce_loss(output_pos + output_neg, reduction);
}

Tensor triplet_margin_loss(const Tensor& anchor, const Tensor& positive, const Tensor& negative, double margin,
                           double p, double eps, bool swap, Reduction reduction) {
  if (const auto device = amp::detail::autocast_device(anchor, positive, negative)) {
    return amp::detail::autocast_call(
        CastPolicy::Float32, *device,
        [&](const Tensor& a, const Tensor& pos, const Tensor& neg) {
          return triplet_margin_loss(a, pos, neg, margin, p, eps, swap, reduction);
        },
        anchor, positive, negative);
  }
  ember::detail::OpContext context("triplet_margin_loss",
                                   {{"anchor", &anchor}, {"positive", &positive}, {"negative", &negative}});
  check_all_defined({&anchor, &positive, &negative}, "triplet_margin_loss");
  EMBER_CHECK(margin > 0, "margin must be greater than 0, got ", ember::detail::python_float(margin));
  const int64_t a_dim = anchor.dim(), p_dim = positive.dim(), n_dim = negative.dim();
  EMBER_CHECK(a_dim == p_dim && p_dim == n_dim,
              "The anchor, positive, and negative tensors are expected to have the same number of dimensions, but "
              "got: anchor ",
              a_dim, "D, positive ", p_dim, "D, and negative ", n_dim, "D inputs");
  Tensor dist_pos = pairwise_distance(anchor, positive, p, eps);
  Tensor dist_neg = pairwise_distance(anchor, negative, p, eps);
  if (swap) dist_neg = minimum(dist_neg, pairwise_distance(positive, negative, p, eps));
  return reduce_loss(ember::relu(margin + dist_pos - dist_neg), reduction);
}

Tensor triplet_margin_with_distance_loss(const Tensor& anchor, const Tensor& positive, const Tensor& negative,
                                         const DistanceFunction& distance_function, double margin, bool swap,
                                         Reduction reduction) {
  ember::detail::OpContext context("triplet_margin_with_distance_loss",
                                   {{"anchor", &anchor}, {"positive", &positive}, {"negative", &negative}});
  check_all_defined({&anchor, &positive, &negative}, "triplet_margin_with_distance_loss");
  EMBER_CHECK(margin > 0, "margin must be greater than 0, got ", ember::detail::python_float(margin));
  const int64_t a_dim = anchor.dim(), p_dim = positive.dim(), n_dim = negative.dim();
  EMBER_CHECK(a_dim == p_dim && p_dim == n_dim,
              "The anchor, positive, and negative tensors are expected to have the same number of dimensions, but "
              "got: anchor ",
              a_dim, "D, positive ", p_dim, "D, and negative ", n_dim, "D inputs");
  const DistanceFunction distance =
      distance_function ? distance_function
                        : DistanceFunction([](const Tensor& a, const Tensor& b) { return pairwise_distance(a, b); });
  Tensor dist_pos = distance(anchor, positive);
  Tensor dist_neg = distance(anchor, negative);
  if (swap) dist_neg = minimum(dist_neg, distance(positive, negative));
  return reduce_loss(ember::relu(margin + dist_pos - dist_neg), reduction);
}

}  // namespace ember::nn::functional

namespace ember::nn {

Tensor BCEWithLogitsLoss::forward(const Tensor& input, const Tensor& target) {
  if (!weight.defined()) return functional::binary_cross_entropy_with_logits(input, target, reduction, pos_weight);
  // As PyTorch's kernel: each element's loss times the weight, then the reduction.
  const Tensor loss = functional::binary_cross_entropy_with_logits(input, target, Reduction::None, pos_weight);
  return functional::reduce_loss(loss * weight, reduction);
}

Tensor Loss3::forward(const Tensor& /*a*/, const Tensor& /*b*/) {
  ember::detail::fail(name(), ".forward() missing 1 required positional argument: '", third_, "'");
}

TripletMarginLoss::TripletMarginLoss(double margin, double p, double eps, bool swap, Reduction reduction)
    : Loss3(reduction, "negative"), margin(margin), p(p), eps(eps), swap(swap) {
  EMBER_CHECK(margin > 0, "TripletMarginLoss: expected margin to be greater than 0, got ",
              ember::detail::python_float(margin), " instead");
}

TripletMarginWithDistanceLoss::TripletMarginWithDistanceLoss(TripletMarginWithDistanceLossOptions options)
    : Loss3(options.reduction, "negative"),
      distance_function(std::move(options.distance_function)),
      margin(options.margin),
      swap(options.swap) {
  EMBER_CHECK(margin > 0, "TripletMarginWithDistanceLoss: expected margin to be greater than 0, got ",
              ember::detail::python_float(margin), " instead");
}

}  // namespace ember::nn
