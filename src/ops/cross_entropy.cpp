// The fused class-index cross-entropy (cross_entropy.h): the forward pass writes each sample's
// loss and weight and the row statistics of log_softmax; the backward pass recomputes
// log_softmax from those and applies nll_loss's and log_softmax's gradients in one pass. With
// the reduction's few, a training step's loss then runs about seven kernels on a GPU where the
// op-by-op form, masking for ignore_index, ran about twenty.
#include "ops/cross_entropy.h"

#include "autograd/node.h"
#include "backend/backend.h"
#include "core/check.h"
#include "core/tensor_internal.h"

namespace ember::detail {

bool cross_entropy_rows_apply(const Tensor& input, const Tensor& weight) {
  return (input.dim() == 1 || input.dim() == 2) && (input.dtype() == kFloat32 || input.dtype() == kFloat64) &&
         input.numel() > 0 && !(weight.defined() && weight.requires_grad());
}

ClassLossRows cross_entropy_rows(const Tensor& logits, const Tensor& target, const Tensor& weight, int64_t ignore_index,
                                 double label_smoothing) {
  const Tensor x = logits.contiguous();
  const Tensor t = target.contiguous();
  const Tensor w = weight.defined() ? weight.contiguous() : Tensor();
  const int64_t rows = x.size(0);
  ClassLossRows out;
  out.loss = make_tensor({rows}, x.dtype(), x.device());
  out.weight = make_tensor({rows}, x.dtype(), x.device());
  const Tensor stats = make_tensor({rows, 2}, x.dtype(), x.device());
  backend_for(x.device())
      .cross_entropy(view_of(x), view_of(t), w.defined() ? view_of(w) : TensorView{}, ignore_index, label_smoothing,
                     view_of(out.loss), view_of(out.weight), view_of(stats));
  if (autograd::needs_grad({&logits})) {
    autograd::record(out.loss, "CrossEntropyLossBackward0", {&logits},
                     [saved_x = autograd::SavedTensor(x), saved_t = autograd::SavedTensor(t),
                      saved_w = autograd::SavedTensor(w), stats, ignore_index, label_smoothing](const Tensor& g) {
                       const Tensor logits_c = saved_x.get(), target_c = saved_t.get(), weight_c = saved_w.get();
                       const Tensor grad_loss = g.contiguous();
                       Tensor grad_x = make_tensor(logits_c.sizes(), logits_c.dtype(), logits_c.device());
                       backend_for(logits_c.device())
                           .cross_entropy_backward(view_of(grad_loss), view_of(logits_c), view_of(target_c),
                                                   weight_c.defined() ? view_of(weight_c) : TensorView{}, ignore_index,
                                                   label_smoothing, view_of(stats), view_of(grad_x));
                       return std::vector<Tensor>{grad_x};
                     });
  }
  return out;
}

}  // namespace ember::detail
