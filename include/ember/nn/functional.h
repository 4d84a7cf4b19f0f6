#pragma once
/// ember::nn::functional: the stateless forms of the layers and losses (torch.nn.functional).
/// Everything is composed from differentiable ops, so autograd works through all of them.
#include <cstdint>
#include <functional>
#include <optional>
#include <string>

#include "ember/tensor.h"

namespace ember::nn {

/// How a loss combines its per-element values.
enum class Reduction { None, Mean, Sum };
/// kl_div's reductions: Reduction's three and PyTorch's "batchmean", the sum divided by the
/// batch size (input.size(0); the plain sum for a 0-dim input).
enum class KLDivReduction { None, Mean, Sum, BatchMean };

namespace functional {

/// y = x @ weight^T + bias; weight is [out_features, in_features], bias [out_features] or undefined.
Tensor linear(const Tensor& input, const Tensor& weight, const Tensor& bias = Tensor());
/// With `inplace`, writes the result into `input` (PyTorch's F.relu(input, inplace=True)).
Tensor relu(const Tensor& input, bool inplace = false);
/// approximate = "none" (erf) or "tanh".
Tensor gelu(const Tensor& input, const std::string& approximate = "none");
Tensor silu(const Tensor& input);
Tensor tanh(const Tensor& input);
Tensor sigmoid(const Tensor& input);
Tensor softmax(const Tensor& input, int64_t dim);
Tensor log_softmax(const Tensor& input, int64_t dim);
Tensor flatten(const Tensor& input, int64_t start_dim = 1, int64_t end_dim = -1);
/// Zeroes elements with probability p (mask drawn from ember::rand) and scales the rest by
/// 1/(1-p) when training; the identity otherwise.
Tensor dropout(const Tensor& input, double p = 0.5, bool training = true);
/// Rows of `weight` picked by the int64 `indices`; the result is indices.sizes() + [embedding_dim].
Tensor embedding(const Tensor& indices, const Tensor& weight);
/// Normalises over the last normalized_shape.size() dimensions (population variance), then
/// applies weight and bias when defined.
Tensor layer_norm(const Tensor& input, IntList normalized_shape, const Tensor& weight = Tensor(),
                  const Tensor& bias = Tensor(), double eps = 1e-5);
/// torch.nn.functional.group_norm: input [N, C, *] normalised over each group of C / num_groups
/// channels (and all of *), with biased variance, then scaled by weight [C] and shifted by bias
/// [C] per channel when they are defined.
Tensor group_norm(const Tensor& input, int64_t num_groups, const Tensor& weight = Tensor(),
                  const Tensor& bias = Tensor(), double eps = 1e-5);

/// input: [N, C, ...] (or [C]) log-probabilities; target: int64 class indices [N, ...] (or []).
/// As torch.nn.functional.nll_loss: each position's loss is -weight[t] * input[n, t, ...]
/// (weight: undefined, or a 1-D tensor of C values of input's dtype on input's device), and 0
/// where t == ignore_index. Mean divides the sum by the total weight of the positions not
/// ignored (their count without weight), so all positions ignored give NaN. A target outside
/// [0, C) that is not ignore_index is an error (checked on the CPU only: reading a GPU's targets
/// back would stall it).
Tensor nll_loss(const Tensor& input, const Tensor& target, Reduction reduction = Reduction::Mean,
                const Tensor& weight = Tensor(), int64_t ignore_index = -100);
/// input: [N, C, ...] (or [C]) logits; target: int64 class indices or class probabilities
/// (floating, same shape as input). label_smoothing in [0, 1] mixes the target with uniform.
/// weight and ignore_index as in nll_loss, with PyTorch's rules: with class indices and label
/// smoothing, the smoothing term is weighted by weight[c], zero at ignored positions, and its mean
/// divides by the same total weight as the nll term; with probabilities, the loss is
/// -sum_c weight[c] * target[c] * log_softmax(input)[c], the mean divides by the number of
/// samples (not by the weights), and ignore_index must be negative (PyTorch's rule).
Tensor cross_entropy(const Tensor& input, const Tensor& target, Reduction reduction = Reduction::Mean,
                     double label_smoothing = 0.0, const Tensor& weight = Tensor(), int64_t ignore_index = -100);
Tensor mse_loss(const Tensor& input, const Tensor& target, Reduction reduction = Reduction::Mean);
/// The numerically stable form: max(-x, 0) + log(exp(-max) + exp(-x - max)) + (1 - y) x,
/// with the log term weighted by 1 + (pos_weight - 1) y when pos_weight is given.
Tensor binary_cross_entropy_with_logits(const Tensor& input, const Tensor& target,
                                        Reduction reduction = Reduction::Mean, const Tensor& pos_weight = Tensor());

// The losses below take their arguments in PyTorch's order (without the deprecated size_average
// and reduce), and check their arguments with PyTorch's messages. Where PyTorch's CPU kernels
// check values as they read them (BCE's range, class targets), ember checks on the CPU only:
// reading a GPU's tensors back would stall it.

/// |input - target|, broadcast (warning, as PyTorch does, when the sizes differ). With `weight`
/// (input's size) each term is scaled by it and the mean divides by the sum of the weights.
Tensor l1_loss(const Tensor& input, const Tensor& target, Reduction reduction = Reduction::Mean,
               const Tensor& weight = Tensor());
/// With z = |input - target|: 0.5 z^2 / beta where z < beta, z - 0.5 beta elsewhere; beta = 0 is
/// l1_loss, and a negative beta is an error.
Tensor smooth_l1_loss(const Tensor& input, const Tensor& target, Reduction reduction = Reduction::Mean,
                      double beta = 1.0);
/// With z = |input - target|: 0.5 z^2 where z < delta, delta (z - 0.5 delta) elsewhere (delta > 0).
/// `weight` (input's size) scales each term; unlike l1_loss's, the mean stays the plain mean.
Tensor huber_loss(const Tensor& input, const Tensor& target, Reduction reduction = Reduction::Mean, double delta = 1.0,
                  const Tensor& weight = Tensor());
/// input: log-probabilities; target: probabilities, or log-probabilities with log_target. Terms
/// target * (log(target) - input) (0 where target is 0), or exp(target) * (target - input). Mean
/// warns as PyTorch does ("batchmean" is the KL divergence's definition).
Tensor kl_div(const Tensor& input, const Tensor& target, KLDivReduction reduction = KLDivReduction::Mean,
              bool log_target = false);
Tensor kl_div(const Tensor& input, const Tensor& target, Reduction reduction, bool log_target = false);
/// -weight (target log(input) + (1 - target) log(1 - input)), each log clamped at -100, for input
/// and target of the same size with values in [0, 1]; weight broadcasts to target. The input's
/// gradient is PyTorch's: weight (input - target) / max(input (1 - input), 1e-12f).
Tensor binary_cross_entropy(const Tensor& input, const Tensor& target, const Tensor& weight = Tensor(),
                            Reduction reduction = Reduction::Mean);
/// exp(input) - target input (log_input), or input - target log(input + eps); `full` adds
/// Stirling's term target log(target) - target + 0.5 log(2 pi target) where target > 1.
Tensor poisson_nll_loss(const Tensor& input, const Tensor& target, bool log_input = true, bool full = false,
                        double eps = 1e-8, Reduction reduction = Reduction::Mean);
/// 0.5 (log(var) + (input - target)^2 / var) (+ 0.5 log(2 pi) with `full`), var clamped at eps
/// without stopping its gradient. var has input's size, or one dimension less, or input's rank
/// with one mismatched dimension of size 1 (PyTorch's rules); a negative var is an error.
Tensor gaussian_nll_loss(const Tensor& input, const Tensor& target, const Tensor& var, bool full = false,
                         double eps = 1e-6, Reduction reduction = Reduction::Mean);
/// The same with one variance for every element.
Tensor gaussian_nll_loss(const Tensor& input, const Tensor& target, double var, bool full = false, double eps = 1e-6,
                         Reduction reduction = Reduction::Mean);
/// max(0, -target (input1 - input2) + margin); all three of the same rank.
Tensor margin_ranking_loss(const Tensor& input1, const Tensor& input2, const Tensor& target, double margin = 0.0,
                           Reduction reduction = Reduction::Mean);
/// input where target == 1 (or rather, not -1), max(0, margin - input) where target == -1 (not 1).
Tensor hinge_embedding_loss(const Tensor& input, const Tensor& target, double margin = 1.0,
                            Reduction reduction = Reduction::Mean);
/// log(1 + exp(-target input)) for targets of 1 and -1.
Tensor soft_margin_loss(const Tensor& input, const Tensor& target, Reduction reduction = Reduction::Mean);
/// -(target logsigmoid(input) + (1 - target) logsigmoid(-input)), times weight when given,
/// averaged over the last (class) dimension: one value per sample.
Tensor multilabel_soft_margin_loss(const Tensor& input, const Tensor& target, const Tensor& weight = Tensor(),
                                   Reduction reduction = Reduction::Mean);
/// input [N, C] or [C], target int64 [N] (or [] / [1]): per sample, the sum over classes i != y of
/// weight[y] max(0, margin - x[y] + x[i])^p, divided by C; p is 1 or 2.
Tensor multi_margin_loss(const Tensor& input, const Tensor& target, int64_t p = 1, double margin = 1.0,
                         const Tensor& weight = Tensor(), Reduction reduction = Reduction::Mean);
/// input [N, C] or [C], target int64 of input's size: each row's class indices, ended by the
/// first -1. Per sample, the sum over its classes j and the other classes i of
/// max(0, 1 - (x[j] - x[i])), divided by C.
Tensor multilabel_margin_loss(const Tensor& input, const Tensor& target, Reduction reduction = Reduction::Mean);
/// 1 - cos(x1, x2) where target == 1, max(0, cos(x1, x2) - margin) where target == -1; inputs
/// [N, D] with target [N], or [D] with target [].
Tensor cosine_embedding_loss(const Tensor& input1, const Tensor& input2, const Tensor& target, double margin = 0.0,
                             Reduction reduction = Reduction::Mean);
/// max(0, margin + d(anchor, positive) - d(anchor, negative)) with d = pairwise_distance(., ., p,
/// eps); `swap` uses min(d(anchor, negative), d(positive, negative)) instead. margin > 0.
Tensor triplet_margin_loss(const Tensor& anchor, const Tensor& positive, const Tensor& negative, double margin = 1.0,
                           double p = 2.0, double eps = 1e-6, bool swap = false, Reduction reduction = Reduction::Mean);
/// A distance between two batches of vectors, one value per pair.
using DistanceFunction = std::function<Tensor(const Tensor&, const Tensor&)>;
/// triplet_margin_loss with any distance; an empty distance_function is pairwise_distance's defaults.
Tensor triplet_margin_with_distance_loss(const Tensor& anchor, const Tensor& positive, const Tensor& negative,
                                         const DistanceFunction& distance_function = {}, double margin = 1.0,
                                         bool swap = false, Reduction reduction = Reduction::Mean);

/// The cosine of the angle between x1 and x2 (broadcast) along `dim`, as PyTorch 2's: each
/// divided by its norm clamped at eps (the clamp passes the norm's gradient on), then summed.
Tensor cosine_similarity(const Tensor& x1, const Tensor& x2, int64_t dim = 1, double eps = 1e-8);
/// The p-norm of x1 - x2 + eps over the last dimension (of the broadcast shape), with PyTorch's
/// norm gradients (0 where the norm is 0); p may be 0, fractional or infinite.
Tensor pairwise_distance(const Tensor& x1, const Tensor& x2, double p = 2.0, double eps = 1e-6, bool keepdim = false);

}  // namespace functional
}  // namespace ember::nn
