#pragma once
/// torch.nn.CTCLoss and torch.nn.functional.ctc_loss (PyTorch 2.15): the connectionist temporal
/// classification loss, -log p(target | log_probs) summed over every alignment of the target to
/// the input frames (src/nn/ctc_loss.cpp).
#include <cstdint>
#include <string>

#include "ember/nn/functional.h"
#include "ember/nn/module.h"
#include "ember/nn/modules.h"
#include "ember/small_vector.h"
#include "ember/tensor.h"

namespace ember::nn {

namespace functional {

/// As torch.nn.functional.ctc_loss(log_probs, targets, input_lengths, target_lengths, blank=0,
/// reduction='mean', zero_infinity=False). log_probs: [T, N, C] (or unbatched [T, C]), float32 or
/// float64, meant to be log_softmax's output. targets: padded [N, S] (row n's first
/// target_lengths[n] entries are used) or all targets concatenated, 1-D of length
/// sum(target_lengths). input_lengths, target_lengths: [N] integer tensors (0-dim when
/// unbatched), at most T and S. Reduction Mean divides each loss by its target length (clamped to
/// at least 1) and averages over the batch. zero_infinity turns infinite losses (no alignment
/// possible) and their gradients into 0. The gradient for log_probs is PyTorch's kernel's:
/// exp(log_probs) - (alignment posterior), which is the gradient through a log_softmax of the
/// logits; it differs from differentiating the recursion where log_probs is not normalised.
Tensor ctc_loss(const Tensor& log_probs, const Tensor& targets, const Tensor& input_lengths,
                const Tensor& target_lengths, int64_t blank = 0, Reduction reduction = Reduction::Mean,
                bool zero_infinity = false);
/// The same with the lengths as integer lists (PyTorch accepts tuples of ints).
Tensor ctc_loss(const Tensor& log_probs, const Tensor& targets, IntList input_lengths, IntList target_lengths,
                int64_t blank = 0, Reduction reduction = Reduction::Mean, bool zero_infinity = false);

}  // namespace functional

/// The options of nn.CTCLoss, PyTorch's names and defaults: `nn::CTCLoss({.blank = 28})`.
struct CTCLossOptions {
  detail::DesignatedOnly designated_only = {};
  int64_t blank = 0;
  Reduction reduction = Reduction::Mean;
  bool zero_infinity = false;
};

/// torch.nn.CTCLoss(blank=0, reduction='mean', zero_infinity=False): forward(log_probs, targets,
/// input_lengths, target_lengths) is functional::ctc_loss with the module's options. No
/// parameters or buffers.
class CTCLoss : public Module {
 public:
  explicit CTCLoss(CTCLossOptions options = {})
      : blank(options.blank), reduction(options.reduction), zero_infinity(options.zero_infinity) {}
  /// PyTorch's positional order.
  explicit CTCLoss(int64_t blank, Reduction reduction = Reduction::Mean, bool zero_infinity = false)
      : CTCLoss(CTCLossOptions{.blank = blank, .reduction = reduction, .zero_infinity = zero_infinity}) {}
  std::string name() const override { return "CTCLoss"; }

  using Module::forward;
  Tensor forward(const Tensor& log_probs, const Tensor& targets, const Tensor& input_lengths,
                 const Tensor& target_lengths);
  Tensor forward(const Tensor& log_probs, const Tensor& targets, IntList input_lengths, IntList target_lengths);
  Tensor operator()(const Tensor& log_probs, const Tensor& targets, const Tensor& input_lengths,
                    const Tensor& target_lengths) {
    return forward(log_probs, targets, input_lengths, target_lengths);
  }
  Tensor operator()(const Tensor& log_probs, const Tensor& targets, IntList input_lengths, IntList target_lengths) {
    return forward(log_probs, targets, input_lengths, target_lengths);
  }

  int64_t blank;
  Reduction reduction;
  bool zero_infinity;
};

}  // namespace ember::nn
