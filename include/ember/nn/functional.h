#pragma once
/// ember::nn::functional: the stateless forms of the layers and losses (torch.nn.functional).
/// Everything is composed from differentiable ops, so autograd works through all of them.
#include <cstdint>
#include <optional>
#include <string>

#include "ember/tensor.h"

namespace ember::nn {

/// How a loss combines its per-element values.
enum class Reduction { None, Mean, Sum };

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

}  // namespace functional
}  // namespace ember::nn
