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
#include "ember/factories.h"
#include "ember/ops.h"

namespace ember::detail {

namespace {

// The gradient of the rows' losses as recorded ops, for a backward pass that records itself
// (create_graph). With p = softmax(x), smoothing e and C classes, row r's gradient is
// a_r p_r - b_r, where a_r = (1-e) w[t_r] + e/C sum(w) and b_r = (1-e) w[t_r] onehot(t_r) + e/C w,
// both 0 for an ignored row; only p depends on the logits.
Tensor cross_entropy_grad_recorded(const Tensor& grad_loss, const Tensor& x, const Tensor& target, const Tensor& weight,
                                   int64_t ignore_index, double smoothing) {
  const int64_t classes = x.size(1);
  const TensorOptions options = TensorOptions(x.dtype()).device(x.device());
  const Tensor valid = ne(target, scalar_tensor(ignore_index, TensorOptions(kInt64).device(target.device())));
  const Tensor safe_target = where(valid, target, zeros_like(target));
  const Tensor valid_f = valid.to(x.dtype());
  const Tensor class_weight = weight.defined() ? weight : ones({classes}, options);
  const Tensor target_weight = class_weight.index_select(0, safe_target) * valid_f * (1 - smoothing);
  const Tensor one_hot =
      eq(safe_target.unsqueeze(1), arange(classes, TensorOptions(kInt64).device(x.device())).unsqueeze(0))
          .to(x.dtype());
  const double share = smoothing / static_cast<double>(classes);
  const Tensor a = target_weight + valid_f * class_weight.sum() * share;
  const Tensor b = target_weight.unsqueeze(1) * one_hot + valid_f.unsqueeze(1) * (class_weight * share).unsqueeze(0);
  return grad_loss.unsqueeze(1) * (a.unsqueeze(1) * softmax(x, 1) - b);
}

}  // namespace

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
                       if (GradMode::is_enabled()) {
                         return std::vector<Tensor>{cross_entropy_grad_recorded(g, logits_c, target_c, weight_c,
                                                                                ignore_index, label_smoothing)};
                       }
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
