#pragma once
/// torch.nn.LinearCrossEntropyLoss and torch.nn.functional.linear_cross_entropy (PyTorch 2.15):
/// a Linear projection to logits followed by cross-entropy, in one call
/// (src/nn/linear_cross_entropy.cpp). ember computes PyTorch's reference path (options=None,
/// the module's default): the logits are materialised; PyTorch's chunked path
/// (LinearCrossEntropyOptions), which saves memory, is not built.
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

namespace functional {

/// As torch.nn.functional.linear_cross_entropy(input, linear_weight, target, linear_bias=,
/// weight=, reduction=, ignore_index=, label_smoothing=) with options=None: input
/// [in_features] or [N, in_features], linear_weight [C, in_features] or [C, d1, ..., dK,
/// in_features] (K-dimensional loss, batched input only), linear_bias undefined or [C, d1, ...];
/// the logits [N, C, d1, ...] (or [C]) go to cross_entropy with the target (class indices, or
/// probabilities of the logits' shape), weight, reduction and label_smoothing. ignore_index unset
/// means -100 for class indices; with probabilities it must stay unset. PyTorch's messages.
Tensor linear_cross_entropy(const Tensor& input, const Tensor& linear_weight, const Tensor& target,
                            const Tensor& linear_bias = Tensor(), const Tensor& weight = Tensor(),
                            Reduction reduction = Reduction::Mean, std::optional<int64_t> ignore_index = std::nullopt,
                            double label_smoothing = 0.0);

}  // namespace functional

/// The options of nn.LinearCrossEntropyLoss after in_features and num_classes (all keyword-only
/// in PyTorch; the chunking `options` is not built).
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
};

/// torch.nn.LinearCrossEntropyLoss(in_features, num_classes, *, out_features=(), bias=False,
/// reduction='mean', weight=None, ignore_index=None, label_smoothing=0.0): holds `linear` =
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
  std::shared_ptr<Linear> linear;
};

}  // namespace ember::nn
