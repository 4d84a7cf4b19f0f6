#pragma once
/// torch.nn.LinearCrossEntropyLoss and torch.nn.functional.linear_cross_entropy (PyTorch 2.15):
/// a Linear projection to logits followed by cross-entropy, in one call
/// (src/nn/linear_cross_entropy.cpp). With options unset (the default) the logits are
/// materialised and go through cross_entropy (PyTorch's reference path); with
/// LinearCrossEntropyOptions the batch is processed in chunks, so only a [chunk, C] block of
/// logits exists at a time (PyTorch's chunked path).
#include <cstdint>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "ember/nn/functional.h"
#include "ember/nn/module.h"
#include "ember/nn/modules.h"
#include "ember/nn/sizes.h"
#include "ember/tensor.h"

namespace ember::nn {

/// torch.nn.LinearCrossEntropyOptions: how linear_cross_entropy chunks the batch. PyTorch's
/// fields, defaults and checks (its ValueErrors' messages, raised when the options are used).
/// The chunked result equals the reference path's up to rounding (the per-row sums are the
/// same; the gradients of linear_weight and linear_bias add the chunks' parts in turn).
struct LinearCrossEntropyOptions {
  detail::DesignatedOnly designated_only = {};
  /// Whether the loss may be backpropagated more than once (retain_graph) for the "mean" and
  /// "sum" reductions, whose gradients are computed in forward and handed out by backward: with
  /// false (the default) a second backward is an error, as in PyTorch. "none" recomputes its
  /// gradients in backward, so it allows retain_graph either way.
  bool allow_retain_graph = false;
  /// Batch rows per chunk (positive); unset means one chunk unless chunking_method picks one.
  /// Setting it with chunking_method = "auto" turns the heuristic off.
  std::optional<int64_t> batch_chunk_size = std::nullopt;
  /// "auto" (the default: "aspect_ratio", capped so the chunked peak stays below the reference
  /// path's when in_features >= num_classes under the "compact" policy), "aspect_ratio" or
  /// "aspect_ratio:N" (a chunk of next_pow2(ceil(N_rows / ceil(C / in_features))) rows, divided
  /// by N), or unset (use batch_chunk_size).
  std::optional<std::string> chunking_method = "auto";
  /// "auto", "accurate" or "compact". In ember it only steers the chunk size (as PyTorch's
  /// "auto" chunking does); float32 and float64 compute the same either way.
  std::string acc_policy = "auto";
  /// The dtype of the chunk's arithmetic: the input's (float32 and float64 inputs), or float32
  /// for float16/bfloat16 inputs; unset picks float32 for those under acc_policy "auto" and the
  /// input's dtype otherwise.
  std::optional<Dtype> acc_dtype = std::nullopt;
};

namespace functional {

/// As torch.nn.functional.linear_cross_entropy(input, linear_weight, target, linear_bias=,
/// weight=, reduction=, ignore_index=, label_smoothing=, options=): input
/// [in_features] or [N, in_features], linear_weight [C, in_features] or [C, d1, ..., dK,
/// in_features] (K-dimensional loss, batched input only), linear_bias undefined or [C, d1, ...];
/// the logits [N, C, d1, ...] (or [C]) go to cross_entropy with the target (class indices, or
/// probabilities of the logits' shape), weight, reduction and label_smoothing. ignore_index unset
/// means -100 for class indices; with probabilities it must stay unset. PyTorch's messages.
///
/// `options` set takes the chunked path where PyTorch does: label_smoothing 0, no out_features,
/// and class indices (int64) or probabilities of the input's dtype that need no gradient.
/// Otherwise it warns (PyTorch's UserWarning) and takes the reference path. The chunked path's
/// gradients are not differentiable again (no double backward), as in PyTorch.
Tensor linear_cross_entropy(const Tensor& input, const Tensor& linear_weight, const Tensor& target,
                            const Tensor& linear_bias = Tensor(), const Tensor& weight = Tensor(),
                            Reduction reduction = Reduction::Mean, std::optional<int64_t> ignore_index = std::nullopt,
                            double label_smoothing = 0.0,
                            const std::optional<LinearCrossEntropyOptions>& options = std::nullopt);

}  // namespace functional

/// The options of nn.LinearCrossEntropyLoss after in_features and num_classes (all keyword-only
/// in PyTorch; its device= and dtype= are the module's .to() in ember).
struct LinearCrossEntropyLossOptions {
  detail::DesignatedOnly designated_only = {};
  /// (d1, ..., dK) for a K-dimensional loss; empty for the plain one.
  SizeList out_features = {};
  /// Whether the Linear adds a bias to the logits.
  bool bias = false;
  Reduction reduction = Reduction::Mean;
  /// Per-class weights, [num_classes], or undefined; registered as the buffer "weight".
  Tensor weight = Tensor();
  std::optional<int64_t> ignore_index = std::nullopt;
  double label_smoothing = 0.0;
  /// The chunking options for linear_cross_entropy; unset takes the reference path.
  std::optional<LinearCrossEntropyOptions> options = std::nullopt;
};

/// torch.nn.LinearCrossEntropyLoss(in_features, num_classes, *, out_features=(), bias=False,
/// reduction='mean', weight=None, ignore_index=None, label_smoothing=0.0, options=None): holds `linear` =
/// Linear(in_features, num_classes * prod(out_features), bias) (state_dict keys `linear.weight`,
/// `linear.bias`, and `weight` when given), whose flat weight forward reshapes to
/// [num_classes, *out_features, in_features] for functional::linear_cross_entropy.
class LinearCrossEntropyLoss : public Module {
 public:
  LinearCrossEntropyLoss(int64_t in_features, int64_t num_classes, LinearCrossEntropyLossOptions options = {});
  std::string name() const override { return "LinearCrossEntropyLoss"; }
  Tensor forward(const Tensor& input, const Tensor& target);
  using Module::forward;
  Tensor operator()(const Tensor& input, const Tensor& target) { return forward(input, target); }

  int64_t num_classes;
  std::vector<int64_t> out_features;
  Reduction reduction;
  Tensor weight;
  std::optional<int64_t> ignore_index;
  double label_smoothing;
  std::optional<LinearCrossEntropyOptions> options;
  std::shared_ptr<Linear> linear;
};

}  // namespace ember::nn
