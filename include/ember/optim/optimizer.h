#pragma once
/// ember::optim: optimizers over parameter groups, with PyTorch's update rules (the single-tensor,
/// non-foreach forms torch.optim uses on the CPU) and PyTorch's argument checks.
///
/// State dictionary layout (OptimizerStateDict), flat so that it maps onto safetensors directly:
///   tensors["state.<i>.<name>"]        per-parameter state, <i> numbering the parameters of every
///                                       group in order (as PyTorch does); e.g. "state.0.momentum_buffer",
///                                       "state.3.exp_avg", "state.3.step" (a 0-dim float32 tensor)
///   numbers["param_groups.<g>.<option>"] each group's hyper-parameters ("lr", "momentum", "beta1",
///                                       "beta2", "eps", "weight_decay", ...); booleans are 0 or 1
///   numbers["param_groups.<g>.num_params"] how many parameters group <g> holds
///   numbers["num_param_groups"]
#include <cstdint>
#include <map>
#include <string>
#include <vector>

#include "ember/tensor.h"

namespace ember::optim {

/// Hyper-parameters by name, as in a PyTorch param_group dict (booleans are stored as 0/1).
using Options = std::map<std::string, double>;

struct ParamGroup {
  ParamGroup() = default;
  /// `options` may be partial: the optimizer fills in its defaults for what is missing.
  explicit ParamGroup(std::vector<Tensor> params, Options options = {})
      : params(std::move(params)), options(std::move(options)) {}

  std::vector<Tensor> params;
  Options options;

  double lr() const { return get("lr"); }
  void set_lr(double lr) { options["lr"] = lr; }
  bool has(const std::string& name) const { return options.count(name) != 0; }
  /// The option's value; throws when the group has no such option.
  double get(const std::string& name) const;
};

struct OptimizerStateDict {
  std::map<std::string, Tensor> tensors;
  std::map<std::string, double> numbers;
};

class Optimizer {
 public:
  virtual ~Optimizer() = default;
  Optimizer(const Optimizer&) = delete;
  Optimizer& operator=(const Optimizer&) = delete;

  /// One update of every parameter that has a gradient, under NoGradGuard.
  void step();
  /// step(), unless `skip`, a 0-dim bool tensor, holds true: then no parameter and no state
  /// tensor changes. The decision is taken where the parameters are: float32 and float64
  /// parameters on skip's device are updated by fused kernels that read the flag themselves, so a
  /// step can hinge on a check computed on a GPU (ember::all_finite of the gradients, say) without
  /// the host waiting for it. Other parameters on skip's device (16-bit or strided ones) are
  /// updated op by op and the update is taken back by a select where the flag holds true, also
  /// without a wait; a flag on the CPU is simply read there.
  ///
  /// What the optimizer keeps on the host (HostState: Adam's step counts, say) advances as for a
  /// step taken when a kernel decides, since the host does not know the answer. A caller who
  /// learns later that `skip` was true restores the HostState taken before the call; the
  /// optimizer is then exactly as if the step had not been called. Without that, a skipped step
  /// still counts in Adam's bias corrections. (PyTorch's fused optimizers keep their counts on the
  /// GPU for this; ember keeps them on the host, where the bias corrections are computed.)
  void step(const Tensor& skip);
  /// Whether step() has been called (skipped steps count): schedulers warn when stepped first.
  bool has_stepped() const { return stepped_; }
  /// Clears gradients: undefined (like `p.grad = None`) or zero-filled.
  void zero_grad(bool set_to_none = true);

  /// The part of the state a step changes on the host: which state entries each parameter has
  /// (a first step creates them) and its "step" count. Cheap to take: no tensor is copied.
  struct HostState {
    std::vector<std::vector<std::string>> names;  // per parameter, its state entries
    std::vector<double> steps;                    // per parameter, its "step" count (NaN: none)
  };
  HostState host_state() const;
  /// Goes back to `saved`, taken before steps whose `skip` held true (and only those: a step
  /// taken changed tensors, which this does not restore). Entries created since are dropped.
  void restore_host_state(const HostState& saved);

  std::vector<ParamGroup>& param_groups() { return groups_; }
  const std::vector<ParamGroup>& param_groups() const { return groups_; }
  /// Adds a group; missing options come from the optimizer's defaults.
  void add_param_group(ParamGroup group);
  const Options& defaults() const { return defaults_; }

  /// Per-parameter state of the parameter at global index `index` (see the layout above).
  std::map<std::string, Tensor>& state(size_t index);

  OptimizerStateDict state_dict() const;
  /// Restores hyper-parameters and state; the group structure must match this optimizer's.
  void load_state_dict(const OptimizerStateDict& dict);

 protected:
  Optimizer(std::vector<ParamGroup> groups, Options defaults);
  /// Updates one parameter (with a defined grad) of `group`; `state` is its own state map.
  /// `skip` is step(skip)'s flag, undefined for step(): the host-side bookkeeping advances
  /// regardless, and no tensor may change when it holds true (see skipped()).
  virtual void update(const ParamGroup& group, Tensor& param, const Tensor& grad, std::map<std::string, Tensor>& state,
                      const Tensor& skip) = 0;
  /// For an update that cannot hand `skip` to a fused kernel: reads it on the host.
  static bool skipped(const Tensor& skip);
  /// What load_state_dict() keeps of the saved state entry `name` of `param`. The default is
  /// PyTorch's policy (torch.optim.Optimizer._process_value_according_to_param_policy): "step" as
  /// saved, floating tensors in the parameter's dtype on its device, others on its device; and the
  /// size must be the parameter's. Optimizers whose state holds other shapes (Adafactor's factored
  /// moments, LBFGS's history) or scalars kept on the host (ASGD's eta and mu) override it.
  virtual Tensor loaded_state(const std::string& name, const Tensor& saved, const Tensor& param) const;

 private:
  Options defaults_;
  std::vector<ParamGroup> groups_;
  std::vector<std::map<std::string, Tensor>> state_;  // indexed by global parameter index
  bool stepped_ = false;
};

/// Python's repr() of a float ("-1.0", "1e-05"), for messages that match PyTorch's.
std::string python_float(double value);

}  // namespace ember::optim
