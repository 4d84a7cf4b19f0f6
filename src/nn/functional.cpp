// nn.functional, composed from ember's differentiable ops (autograd comes with them), except for
// class-index cross-entropy's common case, which is one fused op (src/ops/cross_entropy.cpp).
#include "ember/nn/functional.h"

#include <initializer_list>
#include <optional>
#include <vector>

#include "amp/autocast_policy.h"
#include "core/check.h"
#include "core/tensor_internal.h"
#include "ember/factories.h"
#include "ember/ops.h"
#include "nn/reduce_loss.h"
#include "ops/cross_entropy.h"

namespace ember::nn::functional {

namespace {

// Classes live in dimension 1 of a batched input and in dimension 0 of a single sample [C].
int64_t class_dim_of(const Tensor& input) { return input.dim() == 1 ? 0 : 1; }

// The error context of a loss; the weight joins it only when given, so that unweighted calls
// read as they always have.
void enter_loss_context(std::optional<ember::detail::OpContext>& context, const char* op, const Tensor& input,
                        const Tensor& target, const Tensor& weight) {
  using Inputs = std::initializer_list<ember::detail::OpContext::Input>;
  if (weight.defined()) {
    context.emplace(op, Inputs{{"input", &input}, {"target", &target}, {"weight", &weight}});
  } else {
    context.emplace(op, Inputs{{"input", &input}, {"target", &target}});
  }
}

// PyTorch's checks on class-index targets: dtype, batch size, the remaining sizes.
void check_class_targets(const Tensor& input, const Tensor& target, const char* op) {
  detail::check_defined(input, op);
  detail::check_defined(target, op);
  EMBER_CHECK(input.dim() >= 1, op, ": input must have at least 1 dimension, got a 0-dim tensor");
  EMBER_CHECK(target.dtype() == kInt64, "expected scalar type Long but found ", scalar_type_name(target.dtype()));
  EMBER_CHECK(target.device() == input.device(),
              "Expected all tensors to be on the same device, but found at least two devices, ", input.device(),
              " and ", target.device(), "! (when checking argument for argument target in method ", op, ")");
  if (input.dim() == 1) {
    EMBER_CHECK(target.dim() == 0, "0D or 1D target tensor expected, multi-target not supported");
  } else {
    EMBER_CHECK(target.dim() >= 1 && input.size(0) == target.size(0), "Expected input batch_size (", input.size(0),
                ") to match target batch_size (", target.dim() >= 1 ? target.size(0) : 0, ").");
    std::vector<int64_t> expected = input.sizes().vec();
    expected.erase(expected.begin() + 1);
    EMBER_CHECK(target.sizes().vec() == expected, "Expected target size ", detail::shape_str(expected), ", got ",
                detail::shape_str(target.sizes()));
  }
}

// The per-class weight: undefined, or 1-D with one value per class on input's device. `prefix`
// starts the size message as in PyTorch ("cross_entropy: " with class probabilities).
void check_weight(const Tensor& input, const Tensor& weight, const char* prefix) {
  if (!weight.defined()) return;
  const int64_t classes = input.size(class_dim_of(input));
  EMBER_CHECK(weight.dim() == 1 && weight.numel() == classes, prefix, "weight tensor should be defined either for all ",
              classes, " classes or no classes but got weight tensor of shape: ", detail::shape_str(weight.sizes()));
  EMBER_CHECK(weight.device() == input.device(),
              "Expected all tensors to be on the same device, but found at least two devices, ", input.device(),
              " and ", weight.device(), "!");
}

// With class indices PyTorch's kernels read the weight as the input's dtype and refuse others.
void check_class_weight(const Tensor& input, const Tensor& weight) {
  check_weight(input, weight, "");
  if (!weight.defined()) return;
  EMBER_CHECK(weight.dtype() == input.dtype(), "expected scalar type ", scalar_type_name(input.dtype()), " but found ",
              scalar_type_name(weight.dtype()));
  EMBER_CHECK(weight.device() == input.device(),
              "Expected all tensors to be on the same device, but found at least two devices, ", input.device(),
              " and ", weight.device(), "! (when checking argument for argument weight)");
}

// Whether any target may equal ignore_index, checking on the way that every other target is a
// class. On the CPU this is one pass over the targets on the host (the range check PyTorch does
// as it reads them), so the answer is exact and the losses skip all masking when nothing is
// ignored. On a GPU, reading the targets back would stop the device every step, so (as in
// PyTorch, whose kernels assert instead) the range is left to the data loading code, and the
// answer is "maybe": the losses then mask on the device, without synchronising.
bool scan_class_targets(const Tensor& input, const Tensor& target, int64_t ignore_index) {
  if (target.numel() == 0) return false;
  if (!target.is_cpu()) return true;
  const int64_t classes = input.size(class_dim_of(input));
  const Tensor contiguous = target.contiguous();
  const int64_t* data = contiguous.data_ptr<int64_t>();
  bool ignored = false;
  for (int64_t i = 0, n = contiguous.numel(); i < n; ++i) {
    const int64_t t = data[i];
    if (t >= 0 && t < classes && t != ignore_index) continue;
    if (t == ignore_index) {
      ignored = true;
    } else {
      detail::fail("Target ", t, " is out of bounds.");
    }
  }
  return ignored;
}

// A 0-dim zero of `like`'s dtype on its device: the value where() puts at ignored positions.
Tensor zero_of(const Tensor& like) { return zeros({}, TensorOptions().dtype(like.dtype()).device(like.device())); }

// -input[n, target[n], ...]: the per-element negative log-likelihood, shaped like target.
Tensor picked_nll(const Tensor& log_probs, const Tensor& target) {
  const int64_t class_dim = class_dim_of(log_probs);
  return -gather(log_probs, class_dim, target.unsqueeze(class_dim)).squeeze(class_dim);
}

// nll_loss's per-position terms, with what its mean and the label-smoothing term need.
struct WeightedNll {
  Tensor loss;     // -weight[t] * log_probs[.., t, ..], 0 where t == ignore_index; target's shape
  Tensor keep;     // bool, false where t == ignore_index; undefined when no target is ignored
  Tensor weights;  // weight[t], 0 where ignored; undefined without weight
};

WeightedNll weighted_nll(const Tensor& log_probs, const Tensor& target, const Tensor& weight, int64_t ignore_index,
                         bool may_ignore) {
  WeightedNll out;
  Tensor index = target;
  if (may_ignore) {
    out.keep = target != ignore_index;
    index = target * out.keep;  // ignored positions read class 0, then are masked out
  }
  out.loss = picked_nll(log_probs, index);
  if (weight.defined()) {
    out.weights = index_select(weight, 0, index.reshape({-1})).reshape(target.sizes());
    out.loss = out.loss * out.weights;
    if (may_ignore) out.weights = where(out.keep, out.weights, zero_of(out.weights));
  }
  // where, not a product with the mask: an ignored position's stand-in may be -inf.
  if (may_ignore) out.loss = where(out.keep, out.loss, zero_of(out.loss));
  return out;
}

// Reduces per-position terms the way nll_loss does: the mean divides by the total weight of the
// positions not ignored (their count without weight); the plain mean when nothing is ignored.
Tensor reduce_class_loss(const Tensor& loss, const WeightedNll& nll, Reduction reduction) {
  if (reduction != Reduction::Mean) return reduce_loss(loss, reduction);
  if (nll.weights.defined()) return loss.sum() / nll.weights.sum();
  if (nll.keep.defined()) return loss.sum() / nll.keep.sum().to(loss.dtype());
  return loss.mean();
}

// weight viewed to broadcast along the class dimension of `input`.
Tensor class_weight_view(const Tensor& input, const Tensor& weight) {
  if (input.dim() == 1) return weight;
  std::vector<int64_t> shape(static_cast<size_t>(input.dim()), 1);
  shape[1] = weight.size(0);
  return weight.reshape(shape);
}

}  // namespace

Tensor linear(const Tensor& input, const Tensor& weight, const Tensor& bias) {
  if (const auto device = amp::detail::autocast_device(input, weight, bias)) {
    return amp::detail::autocast_call(amp::detail::CastPolicy::LowerPrecision, *device, linear, input, weight, bias);
  }
  ember::detail::OpContext context("linear", {{"input", &input}, {"weight", &weight}, {"bias", &bias}});
  detail::check_defined(input, "linear");
  detail::check_defined(weight, "linear");
  Tensor out = matmul(input, weight.t());
  return bias.defined() ? out + bias : out;
}

Tensor relu(const Tensor& input, bool inplace) {
  if (!inplace) return ember::relu(input);
  Tensor written = input;  // the same tensor: the write is visible to the caller's handle
  return written.relu_();
}

Tensor gelu(const Tensor& input, const std::string& approximate) {
  EMBER_CHECK(approximate == "none" || approximate == "tanh", "approximate argument must be either none or tanh.");
  return ember::gelu(input, approximate.c_str());
}

Tensor silu(const Tensor& input) { return ember::silu(input); }
Tensor tanh(const Tensor& input) { return ember::tanh(input); }
Tensor sigmoid(const Tensor& input) { return ember::sigmoid(input); }
Tensor softmax(const Tensor& input, int64_t dim) { return ember::softmax(input, dim); }
Tensor log_softmax(const Tensor& input, int64_t dim) { return ember::log_softmax(input, dim); }
Tensor flatten(const Tensor& input, int64_t start_dim, int64_t end_dim) { return input.flatten(start_dim, end_dim); }

Tensor dropout(const Tensor& input, double p, bool training) {
  ember::detail::OpContext context("dropout", {{"input", &input}});
  EMBER_CHECK(p >= 0.0 && p <= 1.0, "dropout probability has to be between 0 and 1, but got ", p);
  detail::check_defined(input, "dropout");
  if (!training || p == 0.0) return input;
  if (p == 1.0) return input * 0;
  // keep = rand < 1 - p, already scaled so that the expected value is unchanged.
  Tensor keep = (rand_like(input) < (1.0 - p)).to(input.dtype());
  return input * (keep * (1.0 / (1.0 - p)));
}

Tensor embedding(const Tensor& indices, const Tensor& weight) {
  ember::detail::OpContext context("embedding", {{"input", &indices}, {"weight", &weight}});
  detail::check_defined(indices, "embedding");
  detail::check_defined(weight, "embedding");
  EMBER_CHECK(weight.dim() == 2, "'weight' must be 2-D");
  EMBER_CHECK(
      indices.dtype() == kInt64 || indices.dtype() == kInt32,
      "Expected tensor for argument #1 'indices' to have one of the following scalar types: Long, Int; but got ",
      scalar_type_name(indices.dtype()), " instead (while checking arguments for embedding)");
  std::vector<int64_t> out_sizes = indices.sizes().vec();
  out_sizes.push_back(weight.size(1));
  Tensor rows = index_select(weight, 0, indices.to(kInt64).reshape({-1}));
  return rows.reshape(out_sizes);
}

Tensor layer_norm(const Tensor& input, IntList normalized_shape, const Tensor& weight, const Tensor& bias, double eps) {
  if (const auto device = amp::detail::autocast_device(input, weight, bias); device && *device != kCPU) {
    return amp::detail::autocast_call(amp::detail::CastPolicy::Float32, *device, layer_norm, input, normalized_shape,
                                      weight, bias, eps);
  }
  ember::detail::OpContext context("layer_norm", {{"input", &input}, {"weight", &weight}, {"bias", &bias}});
  detail::check_defined(input, "layer_norm");
  const int64_t k = static_cast<int64_t>(normalized_shape.size());
  bool matches = k >= 1 && input.dim() >= k;
  for (int64_t i = 0; matches && i < k; ++i) matches = input.size(input.dim() - k + i) == normalized_shape[i];
  EMBER_CHECK(matches, "Given normalized_shape=", detail::shape_str(normalized_shape),
              ", expected input with shape [*, ", detail::shape_str(normalized_shape).substr(1),
              ", but got input of size", detail::shape_str(input.sizes()));
  std::vector<int64_t> dims;
  for (int64_t i = input.dim() - k; i < input.dim(); ++i) dims.push_back(i);
  Tensor mu = input.mean(dims, true);
  Tensor variance = input.var(dims, 0, true);
  Tensor out = (input - mu) * (variance + eps).rsqrt();
  if (weight.defined()) out = out * weight;
  if (bias.defined()) out = out + bias;
  return out;
}

Tensor nll_loss(const Tensor& input, const Tensor& target, Reduction reduction, const Tensor& weight,
                int64_t ignore_index) {
  if (const auto device = amp::detail::autocast_device(input, target, weight)) {
    return amp::detail::autocast_call(amp::detail::CastPolicy::Float32, *device, nll_loss, input, target, reduction,
                                      weight, ignore_index);
  }
  std::optional<ember::detail::OpContext> context;
  enter_loss_context(context, "nll_loss", input, target, weight);
  check_class_targets(input, target, "nll_loss");
  check_class_weight(input, weight);
  const bool may_ignore = scan_class_targets(input, target, ignore_index);
  const WeightedNll nll = weighted_nll(input, target, weight, ignore_index, may_ignore);
  return reduce_class_loss(nll.loss, nll, reduction);
}

Tensor cross_entropy(const Tensor& input, const Tensor& target, Reduction reduction, double label_smoothing,
                     const Tensor& weight, int64_t ignore_index) {
  if (const auto device = amp::detail::autocast_device(input, target, weight)) {
    return amp::detail::autocast_call(amp::detail::CastPolicy::Float32, *device, cross_entropy, input, target,
                                      reduction, label_smoothing, weight, ignore_index);
  }
  std::optional<ember::detail::OpContext> context;
  enter_loss_context(context, "cross_entropy", input, target, weight);
  EMBER_CHECK(label_smoothing >= 0.0 && label_smoothing <= 1.0,
              "label_smoothing must be between 0.0 and 1.0. Got: ", label_smoothing);
  detail::check_defined(input, "cross_entropy");
  detail::check_defined(target, "cross_entropy");
  EMBER_CHECK(input.dim() >= 1, "cross_entropy: input must have at least 1 dimension, got a 0-dim tensor");
  const int64_t class_dim = class_dim_of(input);
  const double classes = static_cast<double>(input.size(class_dim));
  const int64_t class_dims[1] = {class_dim};

  if (target.is_floating_point()) {  // class probabilities
    EMBER_CHECK(target.sizes().vec() == input.sizes().vec(), "Expected target size ", detail::shape_str(input.sizes()),
                ", got ", detail::shape_str(target.sizes()));
    EMBER_CHECK(ignore_index < 0, "ignore_index is not supported for floating point target");
    check_weight(input, weight, "cross_entropy: ");
    Tensor log_probs = ember::log_softmax(input, class_dim);
    Tensor probs = label_smoothing > 0.0 ? target * (1.0 - label_smoothing) + label_smoothing / classes : target;
    Tensor terms = log_probs * probs;
    if (weight.defined()) terms = terms * class_weight_view(input, weight);
    // The mean is over samples (numel / C), whatever the weights: PyTorch's rule.
    return reduce_loss(-terms.sum(class_dims), reduction);
  }

  check_class_targets(input, target, "cross_entropy");
  check_class_weight(input, weight);
  const bool may_ignore = scan_class_targets(input, target, ignore_index);
  if (ember::detail::cross_entropy_rows_apply(input, weight)) {
    // One fused op for the per-sample terms, label smoothing's share included (its term is
    // reduced with the same denominator; src/ops/cross_entropy.cpp); reduced as below.
    const bool single = input.dim() == 1;
    const ember::detail::ClassLossRows rows =
        ember::detail::cross_entropy_rows(single ? input.unsqueeze(0) : input, single ? target.reshape({1}) : target,
                                          weight, ignore_index, label_smoothing);
    switch (reduction) {
      case Reduction::None:
        return single ? rows.loss.reshape({}) : rows.loss;
      case Reduction::Sum:
        return rows.loss.sum();
      case Reduction::Mean:
        return weight.defined() || may_ignore ? rows.loss.sum() / rows.weight.sum() : rows.loss.mean();
    }
  }
  Tensor log_probs = ember::log_softmax(input, class_dim);
  const WeightedNll nll = weighted_nll(log_probs, target, weight, ignore_index, may_ignore);
  Tensor loss = reduce_class_loss(nll.loss, nll, reduction);
  if (label_smoothing > 0.0) {
    // PyTorch's cross_entropy_loss_label_smoothing: the uniform part, weighted per class, zero at
    // ignored positions, reduced with the nll term's denominator.
    Tensor smooth =
        weight.defined() ? -(log_probs * class_weight_view(input, weight)).sum(class_dims) : -log_probs.sum(class_dims);
    if (nll.keep.defined()) smooth = where(nll.keep, smooth, zero_of(smooth));
    loss = loss * (1.0 - label_smoothing) + reduce_class_loss(smooth, nll, reduction) * (label_smoothing / classes);
  }
  return loss;
}

Tensor mse_loss(const Tensor& input, const Tensor& target, Reduction reduction) {
  if (const auto device = amp::detail::autocast_device(input, target)) {
    return amp::detail::autocast_call(amp::detail::CastPolicy::Float32, *device, mse_loss, input, target, reduction);
  }
  ember::detail::OpContext context("mse_loss", {{"input", &input}, {"target", &target}});
  detail::check_defined(input, "mse_loss");
  detail::check_defined(target, "mse_loss");
  Tensor diff = input - target;
  return reduce_loss(diff * diff, reduction);
}

Tensor binary_cross_entropy_with_logits(const Tensor& input, const Tensor& target, Reduction reduction,
                                        const Tensor& pos_weight) {
  if (const auto device = amp::detail::autocast_device(input, target, pos_weight)) {
    return amp::detail::autocast_call(amp::detail::CastPolicy::Float32, *device, binary_cross_entropy_with_logits,
                                      input, target, reduction, pos_weight);
  }
  ember::detail::OpContext context("binary_cross_entropy_with_logits",
                                   {{"input", &input}, {"target", &target}, {"pos_weight", &pos_weight}});
  detail::check_defined(input, "binary_cross_entropy_with_logits");
  detail::check_defined(target, "binary_cross_entropy_with_logits");
  EMBER_CHECK(target.sizes().vec() == input.sizes().vec(), "Target size (torch.Size(",
              detail::shape_str(target.sizes()), ")) must be the same as input size (torch.Size(",
              detail::shape_str(input.sizes()), "))");
  // log(1 + exp(-x)) without overflow: shift by max(-x, 0).
  Tensor shift = clamp(-input, 0.0);
  Tensor log_term = log(exp(-shift) + exp(-input - shift)) + shift;
  if (pos_weight.defined()) log_term = log_term * ((pos_weight - 1.0) * target + 1.0);
  return reduce_loss((1.0 - target) * input + log_term, reduction);
}

}  // namespace ember::nn::functional
