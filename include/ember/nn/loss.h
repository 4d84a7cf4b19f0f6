#pragma once
/// Loss modules (torch.nn.*Loss): forward(input, target) with a reduction of None, Mean or Sum.
/// Constructors take PyTorch's arguments in PyTorch's order and with its defaults (without the
/// deprecated size_average and reduce); losses whose first argument is not the reduction also
/// take a Reduction alone. Each forward is the functional of the same name (functional.h).
///
/// Each loss also takes one `<Loss>Options` struct of its optional arguments, PyTorch's names and
/// defaults, written with designated initializers:
///   nn::CrossEntropyLoss({.weight = w, .label_smoothing = 0.1});
///   nn::SmoothL1Loss({.beta = 0.5});             nn::MSELoss({.reduction = Reduction::Sum});
#include <cstdint>
#include <string>
#include <utility>

#include "ember/nn/distance.h"
#include "ember/nn/functional.h"
#include "ember/nn/module.h"
#include "ember/nn/sizes.h"

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

/// The options of nn.CrossEntropyLoss.
struct CrossEntropyLossOptions {
  detail::DesignatedOnly designated_only = {};
  Tensor weight = Tensor();
  int64_t ignore_index = -100;
  Reduction reduction = Reduction::Mean;
  double label_smoothing = 0.0;
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
  explicit CrossEntropyLoss(CrossEntropyLossOptions options)
      : CrossEntropyLoss(options.reduction, options.label_smoothing, std::move(options.weight), options.ignore_index) {}
  std::string name() const override { return "CrossEntropyLoss"; }
  Tensor forward(const Tensor& input, const Tensor& target) override {
    return functional::cross_entropy(input, target, reduction, label_smoothing, weight, ignore_index);
  }
  double label_smoothing;
  Tensor weight;
  int64_t ignore_index;
};

/// The options of nn.NLLLoss (and nn.NLLLoss2d).
struct NLLLossOptions {
  detail::DesignatedOnly designated_only = {};
  Tensor weight = Tensor();
  int64_t ignore_index = -100;
  Reduction reduction = Reduction::Mean;
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
  explicit NLLLoss(NLLLossOptions options)
      : NLLLoss(options.reduction, std::move(options.weight), options.ignore_index) {}
  std::string name() const override { return "NLLLoss"; }
  Tensor forward(const Tensor& input, const Tensor& target) override {
    return functional::nll_loss(input, target, reduction, weight, ignore_index);
  }
  Tensor weight;
  int64_t ignore_index;
};

/// The options of the losses whose only argument is the reduction (nn.MSELoss, L1Loss,
/// SoftMarginLoss, MultiLabelMarginLoss; one alias per loss).
struct ReductionOptions {
  detail::DesignatedOnly designated_only = {};
  Reduction reduction = Reduction::Mean;
};
using MSELossOptions = ReductionOptions;
using L1LossOptions = ReductionOptions;
using SoftMarginLossOptions = ReductionOptions;
using MultiLabelMarginLossOptions = ReductionOptions;

class MSELoss : public Loss {
 public:
  explicit MSELoss(Reduction reduction = Reduction::Mean) : Loss(reduction) {}
  explicit MSELoss(MSELossOptions options) : MSELoss(options.reduction) {}
  std::string name() const override { return "MSELoss"; }
  Tensor forward(const Tensor& input, const Tensor& target) override {
    return functional::mse_loss(input, target, reduction);
  }
};

/// The options of nn.BCEWithLogitsLoss.
struct BCEWithLogitsLossOptions {
  detail::DesignatedOnly designated_only = {};
  Tensor weight = Tensor();  // scales each element's loss, broadcast to the input
  Reduction reduction = Reduction::Mean;
  Tensor pos_weight = Tensor();  // weighs the positive term, broadcast along the last dimension
};

/// `weight` and `pos_weight` are buffers of those names when defined (weight first, as PyTorch
/// registers them).
class BCEWithLogitsLoss : public Loss {
 public:
  explicit BCEWithLogitsLoss(Reduction reduction = Reduction::Mean, Tensor pos_weight = Tensor())
      : BCEWithLogitsLoss(BCEWithLogitsLossOptions{.reduction = reduction, .pos_weight = std::move(pos_weight)}) {}
  explicit BCEWithLogitsLoss(BCEWithLogitsLossOptions options)
      : Loss(options.reduction), weight(std::move(options.weight)), pos_weight(std::move(options.pos_weight)) {
    if (weight.defined()) register_buffer("weight", weight);
    if (pos_weight.defined()) register_buffer("pos_weight", pos_weight);
  }
  std::string name() const override { return "BCEWithLogitsLoss"; }
  Tensor forward(const Tensor& input, const Tensor& target) override;
  Tensor weight;
  Tensor pos_weight;
};

/// Base of the losses of three inputs (MarginRankingLoss, CosineEmbeddingLoss, TripletMarginLoss,
/// ...): forward(a, b, c); the two-input forward throws, as PyTorch's would for a missing argument.
class Loss3 : public Loss {
 public:
  explicit Loss3(Reduction reduction, const char* third) : Loss(reduction), third_(third) {}
  virtual Tensor forward(const Tensor& a, const Tensor& b, const Tensor& c) = 0;
  Tensor forward(const Tensor& a, const Tensor& b) override;
  using Loss::forward;
  using Loss::operator();
  Tensor operator()(const Tensor& a, const Tensor& b, const Tensor& c) { return forward(a, b, c); }

 private:
  const char* third_;
};

/// Mean absolute error.
class L1Loss : public Loss {
 public:
  explicit L1Loss(Reduction reduction = Reduction::Mean) : Loss(reduction) {}
  explicit L1Loss(L1LossOptions options) : L1Loss(options.reduction) {}
  std::string name() const override { return "L1Loss"; }
  Tensor forward(const Tensor& input, const Tensor& target) override {
    return functional::l1_loss(input, target, reduction);
  }
};

/// The options of nn.SmoothL1Loss.
struct SmoothL1LossOptions {
  detail::DesignatedOnly designated_only = {};
  Reduction reduction = Reduction::Mean;
  double beta = 1.0;
};

class SmoothL1Loss : public Loss {
 public:
  explicit SmoothL1Loss(Reduction reduction = Reduction::Mean, double beta = 1.0) : Loss(reduction), beta(beta) {}
  explicit SmoothL1Loss(SmoothL1LossOptions options) : SmoothL1Loss(options.reduction, options.beta) {}
  std::string name() const override { return "SmoothL1Loss"; }
  Tensor forward(const Tensor& input, const Tensor& target) override {
    return functional::smooth_l1_loss(input, target, reduction, beta);
  }
  double beta;
};

/// The options of nn.HuberLoss.
struct HuberLossOptions {
  detail::DesignatedOnly designated_only = {};
  Reduction reduction = Reduction::Mean;
  double delta = 1.0;
};

class HuberLoss : public Loss {
 public:
  explicit HuberLoss(Reduction reduction = Reduction::Mean, double delta = 1.0) : Loss(reduction), delta(delta) {}
  explicit HuberLoss(HuberLossOptions options) : HuberLoss(options.reduction, options.delta) {}
  std::string name() const override { return "HuberLoss"; }
  Tensor forward(const Tensor& input, const Tensor& target) override {
    return functional::huber_loss(input, target, reduction, delta);
  }
  double delta;
};

/// The options of nn.KLDivLoss.
struct KLDivLossOptions {
  detail::DesignatedOnly designated_only = {};
  KLDivReduction reduction = KLDivReduction::Mean;
  bool log_target = false;
};

/// With KLDivReduction::BatchMean, `batchmean` is true and `reduction` is Sum (then divided by
/// the batch size); `batchmean` decides.
class KLDivLoss : public Loss {
 public:
  explicit KLDivLoss(KLDivReduction reduction = KLDivReduction::Mean, bool log_target = false)
      : Loss(reduction == KLDivReduction::None   ? Reduction::None
             : reduction == KLDivReduction::Mean ? Reduction::Mean
                                                 : Reduction::Sum),
        batchmean(reduction == KLDivReduction::BatchMean),
        log_target(log_target) {}
  explicit KLDivLoss(Reduction reduction, bool log_target = false)
      : Loss(reduction), batchmean(false), log_target(log_target) {}
  explicit KLDivLoss(KLDivLossOptions options) : KLDivLoss(options.reduction, options.log_target) {}
  std::string name() const override { return "KLDivLoss"; }
  Tensor forward(const Tensor& input, const Tensor& target) override {
    if (batchmean) return functional::kl_div(input, target, KLDivReduction::BatchMean, log_target);
    return functional::kl_div(input, target, reduction, log_target);
  }
  bool batchmean;
  bool log_target;
};

/// The options of nn.BCELoss.
struct BCELossOptions {
  detail::DesignatedOnly designated_only = {};
  Tensor weight = Tensor();
  Reduction reduction = Reduction::Mean;
};

/// Binary cross-entropy of probabilities; `weight` (a buffer "weight" when defined) scales each
/// element, broadcast to the target.
class BCELoss : public Loss {
 public:
  explicit BCELoss(Reduction reduction = Reduction::Mean, Tensor weight = Tensor())
      : Loss(reduction), weight(std::move(weight)) {
    if (this->weight.defined()) register_buffer("weight", this->weight);
  }
  /// PyTorch's argument order: BCELoss(weight, reduction).
  explicit BCELoss(Tensor weight, Reduction reduction = Reduction::Mean) : BCELoss(reduction, std::move(weight)) {}
  explicit BCELoss(BCELossOptions options) : BCELoss(options.reduction, std::move(options.weight)) {}
  std::string name() const override { return "BCELoss"; }
  Tensor forward(const Tensor& input, const Tensor& target) override {
    return functional::binary_cross_entropy(input, target, weight, reduction);
  }
  Tensor weight;
};

/// The options of nn.PoissonNLLLoss.
struct PoissonNLLLossOptions {
  detail::DesignatedOnly designated_only = {};
  bool log_input = true;
  bool full = false;
  double eps = 1e-8;
  Reduction reduction = Reduction::Mean;
};

class PoissonNLLLoss : public Loss {
 public:
  explicit PoissonNLLLoss(bool log_input = true, bool full = false, double eps = 1e-8,
                          Reduction reduction = Reduction::Mean)
      : Loss(reduction), log_input(log_input), full(full), eps(eps) {}
  explicit PoissonNLLLoss(Reduction reduction) : PoissonNLLLoss(true, false, 1e-8, reduction) {}
  explicit PoissonNLLLoss(PoissonNLLLossOptions options)
      : PoissonNLLLoss(options.log_input, options.full, options.eps, options.reduction) {}
  std::string name() const override { return "PoissonNLLLoss"; }
  Tensor forward(const Tensor& input, const Tensor& target) override {
    return functional::poisson_nll_loss(input, target, log_input, full, eps, reduction);
  }
  bool log_input;
  bool full;
  double eps;
};

/// The options of nn.GaussianNLLLoss.
struct GaussianNLLLossOptions {
  detail::DesignatedOnly designated_only = {};
  bool full = false;
  double eps = 1e-6;
  Reduction reduction = Reduction::Mean;
};

/// forward(input, target, var), var a tensor or one number.
class GaussianNLLLoss : public Loss3 {
 public:
  explicit GaussianNLLLoss(bool full = false, double eps = 1e-6, Reduction reduction = Reduction::Mean)
      : Loss3(reduction, "var"), full(full), eps(eps) {}
  explicit GaussianNLLLoss(Reduction reduction) : GaussianNLLLoss(false, 1e-6, reduction) {}
  explicit GaussianNLLLoss(GaussianNLLLossOptions options)
      : GaussianNLLLoss(options.full, options.eps, options.reduction) {}
  std::string name() const override { return "GaussianNLLLoss"; }
  using Loss3::forward;
  using Loss3::operator();
  Tensor forward(const Tensor& input, const Tensor& target, const Tensor& var) override {
    return functional::gaussian_nll_loss(input, target, var, full, eps, reduction);
  }
  Tensor forward(const Tensor& input, const Tensor& target, double var) {
    return functional::gaussian_nll_loss(input, target, var, full, eps, reduction);
  }
  Tensor operator()(const Tensor& input, const Tensor& target, double var) { return forward(input, target, var); }
  bool full;
  double eps;
};

/// The options of nn.MarginRankingLoss and nn.CosineEmbeddingLoss.
struct MarginRankingLossOptions {
  detail::DesignatedOnly designated_only = {};
  double margin = 0.0;
  Reduction reduction = Reduction::Mean;
};
using CosineEmbeddingLossOptions = MarginRankingLossOptions;

/// forward(input1, input2, target).
class MarginRankingLoss : public Loss3 {
 public:
  explicit MarginRankingLoss(double margin = 0.0, Reduction reduction = Reduction::Mean)
      : Loss3(reduction, "target"), margin(margin) {}
  explicit MarginRankingLoss(Reduction reduction) : MarginRankingLoss(0.0, reduction) {}
  explicit MarginRankingLoss(MarginRankingLossOptions options) : MarginRankingLoss(options.margin, options.reduction) {}
  std::string name() const override { return "MarginRankingLoss"; }
  using Loss3::forward;
  Tensor forward(const Tensor& input1, const Tensor& input2, const Tensor& target) override {
    return functional::margin_ranking_loss(input1, input2, target, margin, reduction);
  }
  double margin;
};

/// The options of nn.HingeEmbeddingLoss (PyTorch's default margin here is 1).
struct HingeEmbeddingLossOptions {
  detail::DesignatedOnly designated_only = {};
  double margin = 1.0;
  Reduction reduction = Reduction::Mean;
};

class HingeEmbeddingLoss : public Loss {
 public:
  explicit HingeEmbeddingLoss(double margin = 1.0, Reduction reduction = Reduction::Mean)
      : Loss(reduction), margin(margin) {}
  explicit HingeEmbeddingLoss(Reduction reduction) : HingeEmbeddingLoss(1.0, reduction) {}
  explicit HingeEmbeddingLoss(HingeEmbeddingLossOptions options)
      : HingeEmbeddingLoss(options.margin, options.reduction) {}
  std::string name() const override { return "HingeEmbeddingLoss"; }
  Tensor forward(const Tensor& input, const Tensor& target) override {
    return functional::hinge_embedding_loss(input, target, margin, reduction);
  }
  double margin;
};

class SoftMarginLoss : public Loss {
 public:
  explicit SoftMarginLoss(Reduction reduction = Reduction::Mean) : Loss(reduction) {}
  explicit SoftMarginLoss(SoftMarginLossOptions options) : SoftMarginLoss(options.reduction) {}
  std::string name() const override { return "SoftMarginLoss"; }
  Tensor forward(const Tensor& input, const Tensor& target) override {
    return functional::soft_margin_loss(input, target, reduction);
  }
};

/// The options of nn.MultiLabelSoftMarginLoss.
struct MultiLabelSoftMarginLossOptions {
  detail::DesignatedOnly designated_only = {};
  Tensor weight = Tensor();
  Reduction reduction = Reduction::Mean;
};

/// `weight` (a buffer "weight" when defined) scales each class.
class MultiLabelSoftMarginLoss : public Loss {
 public:
  explicit MultiLabelSoftMarginLoss(Reduction reduction = Reduction::Mean, Tensor weight = Tensor())
      : Loss(reduction), weight(std::move(weight)) {
    if (this->weight.defined()) register_buffer("weight", this->weight);
  }
  /// PyTorch's argument order: MultiLabelSoftMarginLoss(weight, reduction).
  explicit MultiLabelSoftMarginLoss(Tensor weight, Reduction reduction = Reduction::Mean)
      : MultiLabelSoftMarginLoss(reduction, std::move(weight)) {}
  explicit MultiLabelSoftMarginLoss(MultiLabelSoftMarginLossOptions options)
      : MultiLabelSoftMarginLoss(options.reduction, std::move(options.weight)) {}
  std::string name() const override { return "MultiLabelSoftMarginLoss"; }
  Tensor forward(const Tensor& input, const Tensor& target) override {
    return functional::multilabel_soft_margin_loss(input, target, weight, reduction);
  }
  Tensor weight;
};

/// The options of nn.MultiMarginLoss.
struct MultiMarginLossOptions {
  detail::DesignatedOnly designated_only = {};
  int64_t p = 1;
  double margin = 1.0;
  Tensor weight = Tensor();
  Reduction reduction = Reduction::Mean;
};

/// `weight` (a buffer "weight" when defined) scales each target class.
class MultiMarginLoss : public Loss {
 public:
  explicit MultiMarginLoss(int64_t p = 1, double margin = 1.0, Tensor weight = Tensor(),
                           Reduction reduction = Reduction::Mean)
      : Loss(reduction), p(p), margin(margin), weight(std::move(weight)) {
    if (this->weight.defined()) register_buffer("weight", this->weight);
  }
  explicit MultiMarginLoss(Reduction reduction) : MultiMarginLoss(1, 1.0, Tensor(), reduction) {}
  explicit MultiMarginLoss(MultiMarginLossOptions options)
      : MultiMarginLoss(options.p, options.margin, std::move(options.weight), options.reduction) {}
  std::string name() const override { return "MultiMarginLoss"; }
  Tensor forward(const Tensor& input, const Tensor& target) override {
    return functional::multi_margin_loss(input, target, p, margin, weight, reduction);
  }
  int64_t p;
  double margin;
  Tensor weight;
};

class MultiLabelMarginLoss : public Loss {
 public:
  explicit MultiLabelMarginLoss(Reduction reduction = Reduction::Mean) : Loss(reduction) {}
  explicit MultiLabelMarginLoss(MultiLabelMarginLossOptions options) : MultiLabelMarginLoss(options.reduction) {}
  std::string name() const override { return "MultiLabelMarginLoss"; }
  Tensor forward(const Tensor& input, const Tensor& target) override {
    return functional::multilabel_margin_loss(input, target, reduction);
  }
};

/// forward(input1, input2, target).
class CosineEmbeddingLoss : public Loss3 {
 public:
  explicit CosineEmbeddingLoss(double margin = 0.0, Reduction reduction = Reduction::Mean)
      : Loss3(reduction, "target"), margin(margin) {}
  explicit CosineEmbeddingLoss(Reduction reduction) : CosineEmbeddingLoss(0.0, reduction) {}
  explicit CosineEmbeddingLoss(CosineEmbeddingLossOptions options)
      : CosineEmbeddingLoss(options.margin, options.reduction) {}
  std::string name() const override { return "CosineEmbeddingLoss"; }
  using Loss3::forward;
  Tensor forward(const Tensor& input1, const Tensor& input2, const Tensor& target) override {
    return functional::cosine_embedding_loss(input1, input2, target, margin, reduction);
  }
  double margin;
};

/// The options of nn.TripletMarginLoss.
struct TripletMarginLossOptions {
  detail::DesignatedOnly designated_only = {};
  double margin = 1.0;
  double p = 2.0;
  double eps = 1e-6;
  bool swap = false;
  Reduction reduction = Reduction::Mean;
};

/// forward(anchor, positive, negative); margin must be positive.
class TripletMarginLoss : public Loss3 {
 public:
  explicit TripletMarginLoss(double margin = 1.0, double p = 2.0, double eps = 1e-6, bool swap = false,
                             Reduction reduction = Reduction::Mean);
  explicit TripletMarginLoss(Reduction reduction) : TripletMarginLoss(1.0, 2.0, 1e-6, false, reduction) {}
  explicit TripletMarginLoss(TripletMarginLossOptions options)
      : TripletMarginLoss(options.margin, options.p, options.eps, options.swap, options.reduction) {}
  std::string name() const override { return "TripletMarginLoss"; }
  using Loss3::forward;
  Tensor forward(const Tensor& anchor, const Tensor& positive, const Tensor& negative) override {
    return functional::triplet_margin_loss(anchor, positive, negative, margin, p, eps, swap, reduction);
  }
  double margin;
  double p;
  double eps;
  bool swap;
};

/// The options of nn.TripletMarginWithDistanceLoss.
struct TripletMarginWithDistanceLossOptions {
  detail::DesignatedOnly designated_only = {};
  functional::DistanceFunction distance_function = {};  // empty: pairwise_distance
  double margin = 1.0;
  bool swap = false;
  Reduction reduction = Reduction::Mean;
};

/// forward(anchor, positive, negative) with any distance (pairwise_distance when empty); margin
/// must be positive.
class TripletMarginWithDistanceLoss : public Loss3 {
 public:
  /// (A template only so that GCC 12 does not also read `{.margin = 2.0}` as a distance function.)
  template <int = 0>
  explicit TripletMarginWithDistanceLoss(functional::DistanceFunction distance_function = {}, double margin = 1.0,
                                         bool swap = false, Reduction reduction = Reduction::Mean)
      : TripletMarginWithDistanceLoss(
            TripletMarginWithDistanceLossOptions{.distance_function = std::move(distance_function),
                                                 .margin = margin,
                                                 .swap = swap,
                                                 .reduction = reduction}) {}
  explicit TripletMarginWithDistanceLoss(TripletMarginWithDistanceLossOptions options);
  explicit TripletMarginWithDistanceLoss(Reduction reduction)
      : TripletMarginWithDistanceLoss(functional::DistanceFunction(), 1.0, false, reduction) {}
  std::string name() const override { return "TripletMarginWithDistanceLoss"; }
  using Loss3::forward;
  Tensor forward(const Tensor& anchor, const Tensor& positive, const Tensor& negative) override {
    return functional::triplet_margin_with_distance_loss(anchor, positive, negative, distance_function, margin, swap,
                                                         reduction);
  }
  functional::DistanceFunction distance_function;
  double margin;
  bool swap;
};

}  // namespace ember::nn
