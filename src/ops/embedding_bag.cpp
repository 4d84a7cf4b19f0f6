// embedding_bag's kernel-calling front end (ops/embedding_bag.h): one backend call each way and
// one node, EmbeddingBagBackward0, over weight and per_sample_weights.
//
// The gradient of per_sample_weights (each position's row of weight dotted with its bag's output
// gradient) is written as ops, as is the whole backward pass when it is itself recorded
// (create_graph): ember differentiates it again where PyTorch's _embedding_bag_backward and
// _embedding_bag_per_sample_weights_backward stop. Those ops find each position's bag with a
// searchsorted over the offsets, on the device, so nothing here reads the indices or offsets on
// the host. The 16-bit floats are reduced in float32 and rounded once (the kernels take float32
// and float64).
#include "ops/embedding_bag.h"

#include <utility>
#include <vector>

#include "autograd/node.h"
#include "backend/backend.h"
#include "core/check.h"
#include "core/tensor_internal.h"
#include "ember/factories.h"
#include "ember/grad_mode.h"
#include "ember/ops.h"

namespace ember::detail {

namespace {

EmbeddingBagArgs backend_args(const BagOptions& options) {
  EmbeddingBagArgs args;
  args.mode = options.reduction == BagReduction::Sum    ? EmbeddingBagMode::Sum
              : options.reduction == BagReduction::Mean ? EmbeddingBagMode::Mean
                                                        : EmbeddingBagMode::Max;
  args.padding_idx = options.padding_idx;
  args.scale_grad_by_freq = options.scale_grad_by_freq;
  return args;
}

TensorView optional_view(const Tensor& t) { return t.defined() ? view_of(t) : TensorView{}; }

/// Where each position of the indices goes: its bag (clamped into [0, B)) and whether it counts
/// (inside a bag, not padding_idx) as 1 or 0 in `dtype`. B > 0.
struct Placement {
  Tensor bag;      // int64 [L]
  Tensor counted;  // dtype [L]
};

Placement place(const Tensor& indices, const Tensor& offsets, int64_t padding_idx, Dtype dtype) {
  const int64_t length = indices.size(0), bags = offsets.size(0) - 1;
  const TensorOptions long_options = TensorOptions().dtype(kInt64).device(indices.device());
  const Tensor position = arange(length, long_options);
  // The number of bag ends at or before a position is its bag.
  const Tensor bag = searchsorted(offsets.narrow(0, 1, bags), position, false, /*right=*/true);
  Tensor counted = logical_and(ge(position, offsets.narrow(0, 0, 1)), lt(position, offsets.narrow(0, bags, 1)));
  if (padding_idx >= 0) counted = logical_and(counted, ne(indices, full({1}, Scalar(padding_idx), long_options)));
  return {clamp(bag, Scalar(0), Scalar(bags - 1)), counted.to(dtype)};
}

/// per_sample_weights' gradient: position p's row of weight dotted with its bag's gradient,
/// 0 where p does not count.
Tensor sample_weights_grad(const Tensor& grad, const Tensor& weight, const Tensor& indices, const Placement& at) {
  return (index_select(grad, 0, at.bag) * index_select(weight, 0, indices)).sum({1}) * at.counted;
}

/// The backward pass as ops (differentiable again): weight's gradient, then per_sample_weights'
/// when `weight` (the table) is given.
std::vector<Tensor> backward_as_ops(const Tensor& grad, const Tensor& indices, const Tensor& offsets,
                                    const Tensor& sample_weights, const Tensor& max_indices, const Tensor& weight,
                                    int64_t rows, const BagOptions& options, bool weight_needs_grad) {
  const int64_t length = indices.size(0), bags = offsets.size(0) - 1, dim = grad.size(1);
  const TensorOptions value_options = grad.options();
  Tensor grad_weight, grad_sample_weights;
  if (bags == 0 || length == 0) {
    if (weight_needs_grad) grad_weight = zeros({rows, dim}, value_options);
    if (weight.defined()) grad_sample_weights = zeros({length}, value_options);
    return {grad_weight, grad_sample_weights};
  }
  const Placement at = place(indices, offsets, options.padding_idx, grad.dtype());
  if (weight_needs_grad && options.reduction == BagReduction::Max) {
    const Tensor won = ge(max_indices, zeros({1}, max_indices.options()));
    grad_weight =
        scatter_add(zeros({rows, dim}, value_options), 0, clamp(max_indices, Scalar(0)), grad * won.to(grad.dtype()));
  } else if (weight_needs_grad) {
    Tensor scale = at.counted;
    if (sample_weights.defined()) scale = scale * sample_weights;
    if (options.scale_grad_by_freq) {
      const Tensor uses = scatter_add(zeros({rows}, value_options), 0, indices, ones({length}, value_options));
      scale = scale / index_select(uses, 0, indices);
    }
    if (options.reduction == BagReduction::Mean) {
      const Tensor sizes = scatter_add(zeros({bags}, value_options), 0, at.bag, at.counted);
      scale = scale / clamp(index_select(sizes, 0, at.bag), Scalar(1));
    }
    const Tensor contributions = index_select(grad, 0, at.bag) * scale.unsqueeze(1);
    grad_weight =
        scatter_add(zeros({rows, dim}, value_options), 0, indices.unsqueeze(1).expand({length, dim}), contributions);
  }
  if (weight.defined()) grad_sample_weights = sample_weights_grad(grad, weight, indices, at);
  return {grad_weight, grad_sample_weights};
}

Tensor reduce_float(const Tensor& weight, const Tensor& indices, const Tensor& offsets,
                    const Tensor& per_sample_weights, const BagOptions& options) {
  const int64_t bags = offsets.size(0) - 1, rows = weight.size(0), dim = weight.size(1);
  const Tensor table = weight.contiguous();
  const Tensor sample_weights = per_sample_weights.defined() ? per_sample_weights.contiguous() : Tensor();
  const bool max = options.reduction == BagReduction::Max;
  const EmbeddingBagArgs args = backend_args(options);
  Tensor out = make_tensor({bags, dim}, weight.dtype(), weight.device());
  const Tensor max_indices = max ? make_tensor({bags, dim}, kInt64, weight.device()) : Tensor();
  Backend& backend = backend_for(weight.device());
  backend.embedding_bag(view_of(table), view_of(indices), view_of(offsets), optional_view(sample_weights), args,
                        view_of(out), optional_view(max_indices));
  if (!autograd::needs_grad({&weight, &per_sample_weights})) return out;
  const bool weight_needs_grad = weight.requires_grad();
  const bool samples_need_grad = per_sample_weights.defined() && per_sample_weights.requires_grad();
  autograd::record(
      out, "EmbeddingBagBackward0", {&weight, &per_sample_weights},
      [saved_indices = autograd::SavedTensor(indices), saved_offsets = autograd::SavedTensor(offsets), max_indices,
       options, args, rows, weight_needs_grad, saved_samples = autograd::SavedTensor(sample_weights),
       saved_weight = samples_need_grad ? autograd::SavedTensor(table) : autograd::SavedTensor()](const Tensor& g) {
        // The indices and offsets may be the caller's own tensors: saved, so that writing into them
        // before backward is an error rather than a wrong gradient.
        const Tensor idx = saved_indices.get(), off = saved_offsets.get();
        const Tensor samples = saved_samples.get(), weight_now = saved_weight.get();
        if (GradMode::is_enabled()) {
          return backward_as_ops(g, idx, off, samples, max_indices, weight_now, rows, options, weight_needs_grad);
        }
        const Tensor grad = g.contiguous();
        Tensor grad_weight, grad_samples;
        if (weight_needs_grad) {
          grad_weight = make_tensor({rows, grad.size(1)}, grad.dtype(), grad.device());
          backend_for(grad.device())
              .embedding_bag_backward(view_of(grad), view_of(idx), view_of(off), optional_view(samples),
                                      optional_view(max_indices), args, view_of(grad_weight));
        }
        if (weight_now.defined()) {
          grad_samples = backward_as_ops(grad, idx, off, samples, max_indices, weight_now, rows, options,
                                         /*weight_needs_grad=*/false)[1];
        }
        return std::vector<Tensor>{grad_weight, grad_samples};
      });
  return out;
}

}  // namespace

Tensor embedding_bag_reduce(const Tensor& weight, const Tensor& indices, const Tensor& offsets,
                            const Tensor& per_sample_weights, const BagOptions& options) {
  EMBER_CHECK(weight.dim() == 2 && is_floating_point(weight.dtype()),
              "embedding_bag: expected a floating [V, D] table");
  EMBER_CHECK(indices.dim() == 1 && indices.dtype() == kInt64 && offsets.dim() == 1 && offsets.dtype() == kInt64 &&
                  offsets.size(0) >= 1,
              "embedding_bag: expected int64 indices [L] and offsets [B + 1]");
  EMBER_CHECK(!per_sample_weights.defined() ||
                  (options.reduction == BagReduction::Sum && per_sample_weights.dim() == 1 &&
                   per_sample_weights.size(0) == indices.size(0) && per_sample_weights.dtype() == weight.dtype()),
              "embedding_bag: per_sample_weights must be [L] in weight's dtype, with Sum");
  const Tensor idx = indices.contiguous(), off = offsets.contiguous();
  if (weight.dtype() == kFloat32 || weight.dtype() == kFloat64) {
    return reduce_float(weight, idx, off, per_sample_weights, options);
  }
  // float16 and bfloat16: reduced in float32, rounded once; the casts carry the gradients.
  const Tensor samples = per_sample_weights.defined() ? per_sample_weights.to(kFloat32) : Tensor();
  return reduce_float(weight.to(kFloat32), idx, off, samples, options).to(weight.dtype());
}

}  // namespace ember::detail
