#pragma once
/// Loss modules (torch.nn.*Loss): forward(input, target) with a reduction of None, Mean or Sum.
#include <cstdint>
#include <string>
#include <utility>

#include "ember/nn/functional.h"
#include "ember/nn/module.h"

namespace ember::nn {

/// Base of the losses: two inputs, so the single-input Module::forward is not theirs.
class Loss : public Module {
 public:
  explicit Loss(Reduction reduction) : reduction(reduction) {}
  virtual Tensor forward(const Tensor& input, const Tensor& target) = 0;
  using Module::forward;
  Tensor operator()(const Tensor& input, const Tensor& target) { return forward(input, target); }
  Reduction reduction;
};

/// log_softmax over the class dimension, then the negative log-likelihood of the target classes
/// (int64) or the cross-entropy with target probabilities (floating), with optional label smoothing,
/// per-class `weight` (1-D, C values; registered as the buffer "weight" when defined, as in
/// PyTorch's _WeightedLoss) and `ignore_index` (targets equal to it count for nothing; class
/// indices only). See functional::cross_entropy for the exact rules.
class CrossEntropyLoss : public Loss {
 public:
  explicit CrossEntropyLoss(Reduction reduction = Reduction::Mean, double label_smoothing = 0.0,
                            Tensor weight = Tensor(), int64_t ignore_index = -100)
      : Loss(reduction), label_smoothing(label_smoothing), weight(std::move(weight)), ignore_index(ignore_index) {
    if (this->weight.defined()) register_buffer("weight", this->weight);
  }
  /// PyTorch's argument order: CrossEntropyLoss(weight, ignore_index, reduction, label_smoothing).
  explicit CrossEntropyLoss(Tensor weight, int64_t ignore_index = -100, Reduction reduction = Reduction::Mean,
                            double label_smoothing = 0.0)
      : CrossEntropyLoss(reduction, label_smoothing, std::move(weight), ignore_index) {}
  std::string name() const override { return "CrossEntropyLoss"; }
  Tensor forward(const Tensor& input, const Tensor& target) override {
    return functional::cross_entropy(input, target, reduction, label_smoothing, weight, ignore_index);
  }
  double label_smoothing;
  Tensor weight;
  int64_t ignore_index;
};

/// The negative log-likelihood of int64 class targets, with optional per-class `weight` (a buffer
/// "weight" when defined) and `ignore_index`; see functional::nll_loss.
class NLLLoss : public Loss {
 public:
  explicit NLLLoss(Reduction reduction = Reduction::Mean, Tensor weight = Tensor(), int64_t ignore_index = -100)
      : Loss(reduction), weight(std::move(weight)), ignore_index(ignore_index) {
    if (this->weight.defined()) register_buffer("weight", this->weight);
  }
  /// PyTorch's argument order: NLLLoss(weight, ignore_index, reduction).
  explicit NLLLoss(Tensor weight, int64_t ignore_index = -100, Reduction reduction = Reduction::Mean)
      : NLLLoss(reduction, std::move(weight), ignore_index) {}
  std::string name() const override { return "NLLLoss"; }
  Tensor forward(const Tensor& input, const Tensor& target) override {
    return functional::nll_loss(input, target, reduction, weight, ignore_index);
  }
  Tensor weight;
  int64_t ignore_index;
};

class MSELoss : public Loss {
 public:
  explicit MSELoss(Reduction reduction = Reduction::Mean) : Loss(reduction) {}
  std::string name() const override { return "MSELoss"; }
  Tensor forward(const Tensor& input, const Tensor& target) override {
    return functional::mse_loss(input, target, reduction);
  }
};

class BCEWithLogitsLoss : public Loss {
 public:
  explicit BCEWithLogitsLoss(Reduction reduction = Reduction::Mean, Tensor pos_weight = Tensor())
      : Loss(reduction), pos_weight(std::move(pos_weight)) {
    if (this->pos_weight.defined()) register_buffer("pos_weight", this->pos_weight);
  }
  std::string name() const override { return "BCEWithLogitsLoss"; }
  Tensor forward(const Tensor& input, const Tensor& target) override {
    return functional::binary_cross_entropy_with_logits(input, target, reduction, pos_weight);
  }
  Tensor pos_weight;
};

}  // namespace ember::nn
