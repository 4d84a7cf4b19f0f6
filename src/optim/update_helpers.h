#pragma once
// What the optimizers' update rules share (optimizers.cpp and the files beside it): argument
// checks with PyTorch's messages, the op-by-op forms of PyTorch's in-place helpers, and step(skip)
// for updates composed of ops. Internal to src/optim.
#include <initializer_list>
#include <map>
#include <string>
#include <utility>
#include <vector>

#include "core/check.h"
#include "ember/factories.h"
#include "ember/ops.h"
#include "ember/optim/optimizer.h"

namespace ember::optim::update {

inline std::vector<ParamGroup> single_group(std::vector<Tensor> params) {
  std::vector<ParamGroup> groups;
  groups.emplace_back(std::move(params));
  return groups;
}

inline void check_lr(double lr) { EMBER_CHECK(lr >= 0.0, "Invalid learning rate: ", python_float(lr)); }
inline void check_eps(double eps) { EMBER_CHECK(eps >= 0.0, "Invalid epsilon value: ", python_float(eps)); }
inline void check_weight_decay(double wd) { EMBER_CHECK(wd >= 0.0, "Invalid weight_decay value: ", python_float(wd)); }
inline void check_betas(double beta1, double beta2) {
  EMBER_CHECK(beta1 >= 0.0 && beta1 < 1.0, "Invalid beta parameter at index 0: ", python_float(beta1));
  EMBER_CHECK(beta2 >= 0.0 && beta2 < 1.0, "Invalid beta parameter at index 1: ", python_float(beta2));
}
inline double flag(bool value) { return value ? 1.0 : 0.0; }

/// step(skip)'s flag for an op-by-op update (a parameter no fused kernel takes: 16-bit, strided,
/// or a rule that has no fused kernel). A flag on the host is read there, which costs nothing. A
/// flag on the parameter's device is not: reading it would make the host wait for the device once
/// per parameter per step. The update then runs as if the step were taken, and finish() sets every
/// tensor it wrote back to its value from before the step where the flag holds true: a select on
/// the device, which keeps a taken step's values bit for bit.
class OpByOpSkip {
 public:
  OpByOpSkip(const Tensor& skip, const Tensor& param) {
    if (!skip.defined()) return;
    if (!skip.is_cpu() && skip.device() == param.device()) {
      flag_ = skip;
    } else {
      skipped_ = skip.item<bool>();  // a CPU flag (or one on another device, which must be read)
    }
  }
  /// Whether to leave the update out: a flag read on the host that holds true.
  bool skipped() const { return skipped_; }
  /// Remembers what `t` holds before the update writes it (nothing without a flag on the device).
  void keep(const Tensor& t) {
    if (flag_.defined() && t.defined()) saved_.emplace_back(t, t.clone());
  }
  void keep(std::initializer_list<const Tensor*> tensors) {
    for (const Tensor* t : tensors) keep(*t);
  }
  /// A state tensor the update creates: zeros after a skipped step, as the fused kernels leave it.
  void keep_as_zeros(const Tensor& t) {
    if (flag_.defined() && t.defined()) saved_.emplace_back(t, zeros_like(t));
  }
  /// Takes the update back where the flag holds true.
  void finish() {
    for (auto& [t, before] : saved_) Tensor(t).copy_(where(flag_, before, t));
  }

 private:
  Tensor flag_;
  bool skipped_ = false;
  std::vector<std::pair<Tensor, Tensor>> saved_;
};

/// self.lerp_(end, weight) with PyTorch's CPU formula, which switches form at weight 0.5.
inline void lerp_(Tensor& self, const Tensor& end, double weight) {
  if (weight < 0.5) {
    self.add_(end.sub(self), weight);
  } else {
    self.copy_(end.sub(end.sub(self), 1.0 - weight));
  }
}

/// self.mul_(decay).addcmul_(x, x, value=1-decay): a running average of squares.
inline void decay_add_square_(Tensor& self, const Tensor& x, double decay) {
  self.mul_(decay);
  self.add_(x.mul(x), 1.0 - decay);
}

/// The "step" counter PyTorch keeps as a float32 0-dim tensor on the CPU; returns the incremented
/// count (reading a CPU tensor waits for no device).
inline double increment_step(std::map<std::string, Tensor>& state) {
  Tensor& step = state["step"];
  step.add_(1.0);
  return step.item<double>();
}

/// A fresh "step" counter: PyTorch's torch.tensor(0.0) (float32, on the CPU).
inline Tensor zero_step() { return scalar_tensor(0.0, kFloat32); }

/// The gradient as the rule sees it: negated when maximizing, plus L2 decay when asked.
inline Tensor effective_grad(const ParamGroup& group, const Tensor& param, const Tensor& grad) {
  Tensor g = group.get("maximize") != 0 ? grad.neg() : grad;
  double weight_decay = group.get("weight_decay");
  if (weight_decay != 0) g = g.add(param, weight_decay);
  return g;
}

}  // namespace ember::optim::update
