#pragma once
/// torch.nn.AdaptiveLogSoftmaxWithLoss (src/nn/adaptive_softmax.cpp): Grave et al.'s efficient
/// softmax approximation for large vocabularies, composed of Linear layers, log_softmax, gather
/// and scatter_add.
#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include "ember/nn/module.h"
#include "ember/nn/modules.h"
#include "ember/nn/sizes.h"
#include "ember/tensor.h"

namespace ember::nn {

/// The options of nn.AdaptiveLogSoftmaxWithLoss after in_features, n_classes and cutoffs.
struct AdaptiveLogSoftmaxWithLossOptions {
  detail::DesignatedOnly designated_only = {};
  /// Each tail cluster's hidden size is in_features // div_value^(i + 1).
  double div_value = 4.0;
  /// Whether the head Linear has a bias.
  bool head_bias = false;
};

/// What AdaptiveLogSoftmaxWithLoss::forward returns (PyTorch's _ASMoutput named tuple).
struct ASMOutput {
  Tensor output;  ///< [N] (0-dim for one sample): each sample's log-probability of its target
  Tensor loss;    ///< 0-dim: the mean of -output
};

/// torch.nn.AdaptiveLogSoftmaxWithLoss(in_features, n_classes, cutoffs, div_value=4.0,
/// head_bias=False). The classes below cutoffs[0] (the shortlist) and one entry per tail cluster
/// form the head, `head` = Linear(in_features, cutoffs[0] + clusters, bias=head_bias); cluster i
/// (classes cutoffs[i] .. cutoffs[i + 1] - 1, the last ending at n_classes) is `tail[i]` =
/// Sequential(Linear(in_features, in_features // div_value^(i+1), bias=False),
/// Linear(that, cluster size, bias=False)). Parameters are registered as PyTorch's (`head.weight`,
/// `head.bias`, `tail.0.0.weight`, `tail.0.1.weight`, ...) and drawn in PyTorch's order.
/// cutoffs must be unique, increasing integers between 1 and n_classes - 1 (PyTorch's messages).
class AdaptiveLogSoftmaxWithLoss : public Module {
 public:
  AdaptiveLogSoftmaxWithLoss(int64_t in_features, int64_t n_classes, const SizeList& cutoffs, double div_value = 4.0,
                             bool head_bias = false);
  AdaptiveLogSoftmaxWithLoss(int64_t in_features, int64_t n_classes, const SizeList& cutoffs,
                             AdaptiveLogSoftmaxWithLossOptions options)
      : AdaptiveLogSoftmaxWithLoss(in_features, n_classes, cutoffs, options.div_value, options.head_bias) {}
  std::string name() const override { return "AdaptiveLogSoftmaxWithLoss"; }

  /// input [N, in_features] with int64 target [N], or input [in_features] with a 0-dim target:
  /// each sample's log-probability of its target class (the head's log-probability, plus the
  /// cluster's own for a target outside the shortlist) and the mean negative log-likelihood.
  /// Reads the targets on the host to route each sample to its cluster, as PyTorch does.
  ASMOutput forward(const Tensor& input, const Tensor& target);
  using Module::forward;
  ASMOutput operator()(const Tensor& input, const Tensor& target) { return forward(input, target); }
  /// The log-probabilities of every class, [N, n_classes], for input [N, in_features].
  Tensor log_prob(const Tensor& input);
  /// The most probable class of each row, [N] int64: the head's argmax when it is in the
  /// shortlist, otherwise the argmax of the full log-probabilities (as log_prob(input).argmax(1)).
  Tensor predict(const Tensor& input);
  /// Redraws head and every tail Linear, in PyTorch's order.
  void reset_parameters();

  int64_t in_features, n_classes;
  std::vector<int64_t> cutoffs;  ///< the given cutoffs followed by n_classes, as PyTorch keeps them
  double div_value;
  bool head_bias;
  int64_t shortlist_size, n_clusters, head_size;
  std::shared_ptr<Linear> head;
  std::shared_ptr<ModuleList> tail;  ///< of Sequential(Linear, Linear)

 private:
  Tensor full_log_prob(const Tensor& input, const Tensor& head_output);
  Tensor run_tail(int64_t cluster, const Tensor& input);
};

}  // namespace ember::nn
