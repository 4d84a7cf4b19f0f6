#pragma once
// The optimizers' fused updates, gathered over one Optimizer::step and handed to the backends
// together: one multi-tensor call (Backend::multi_tensor_*_step) per rule, device and dtype, so
// that a GPU runs a kernel per many parameters where it ran one per parameter (PyTorch's
// foreach/fused optimizers group by device and dtype the same way). The result is bit for bit
// that of the per-parameter calls.
//
// Optimizer::step makes a FusedUpdates for its loop over the parameters; while it lives, the
// rules' fused_*_step calls queue their update in it, and FusedUpdates::launch() runs them. Out
// of one (a rule's update called some other way), a fused_*_step call runs at once.
#include <variant>
#include <vector>

#include "ember/tensor.h"
#include "kernels/optim_ops.h"

namespace ember::optim::fusion {

class FusedUpdates {
 public:
  /// Becomes this thread's collection until it is destroyed (the one it replaces comes back).
  FusedUpdates();
  /// Runs what is still queued only when an exception is leaving the step (so that the
  /// parameters before the one that failed are updated, as they were when each update ran at
  /// once); its errors are then dropped, the first one being on its way. Otherwise launch() has
  /// run everything.
  ~FusedUpdates();
  FusedUpdates(const FusedUpdates&) = delete;
  FusedUpdates& operator=(const FusedUpdates&) = delete;

  /// Hands every queued update to its backend, one multi-tensor call per rule, device and dtype
  /// (and skip flag), in the order each group first appeared; leaves the queue empty.
  void launch();

  /// This thread's collection, or nullptr outside Optimizer::step.
  static FusedUpdates* current();

  using Step = std::variant<kernels::SgdStep, kernels::AdamStep, kernels::AdadeltaStep, kernels::RmspropStep>;
  /// One parameter's update: the parameter, its gradient and up to three state tensors (undefined
  /// where the rule does not use them), in the order of Backend::OptimTensors.
  struct Update {
    Tensor param, grad;
    Tensor state[3];
    Step step;
    Tensor skip;
  };
  void add(Update update) { queued_.push_back(std::move(update)); }
  size_t queued() const { return queued_.size(); }

 private:
  std::vector<Update> queued_;
  FusedUpdates* previous_;
  int uncaught_;
};

/// A rule's fused update of one parameter: queued in this thread's FusedUpdates when there is one,
/// else run at once. The tensors are those fusable() accepted (optimizers.cpp); `skip` and unused
/// state may be undefined.
void fused_sgd_step(const Tensor& param, const Tensor& grad, const Tensor& momentum_buffer,
                    const kernels::SgdStep& step, const Tensor& skip);
void fused_adam_step(const Tensor& param, const Tensor& grad, const Tensor& exp_avg, const Tensor& exp_avg_sq,
                     const Tensor& max_exp_avg_sq, const kernels::AdamStep& step, const Tensor& skip);
void fused_adadelta_step(const Tensor& param, const Tensor& grad, const Tensor& square_avg, const Tensor& acc_delta,
                         const kernels::AdadeltaStep& step, const Tensor& skip);
void fused_rmsprop_step(const Tensor& param, const Tensor& grad, const Tensor& square_avg, const Tensor& grad_avg,
                        const Tensor& momentum_buffer, const kernels::RmspropStep& step, const Tensor& skip);

}  // namespace ember::optim::fusion
