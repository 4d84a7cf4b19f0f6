#pragma once
/// torch.optim's Rprop and ASGD, with PyTorch's defaults, update rules, argument checks and state
/// names. Rprop's `etas` pair is kept in a group's Options as "etaminus" and "etaplus", its
/// `step_sizes` as "step_size_min" and "step_size_max"; booleans as 0/1.
#include <vector>

#include "ember/optim/optimizer.h"

namespace ember::optim {

struct RpropOptions {
  double lr = 1e-2;
  double etaminus = 0.5;        // etas[0]
  double etaplus = 1.2;         // etas[1]
  double step_size_min = 1e-6;  // step_sizes[0]
  double step_size_max = 50;    // step_sizes[1]
  bool maximize = false;
};

/// State per parameter: "step", "prev", "step_size" (filled with the group's lr at the first step).
class Rprop : public Optimizer {
 public:
  Rprop(std::vector<Tensor> params, RpropOptions options = {});
  Rprop(std::vector<ParamGroup> groups, RpropOptions defaults = {});

 protected:
  void update(const ParamGroup& group, Tensor& param, const Tensor& grad, std::map<std::string, Tensor>& state,
              const Tensor& skip) override;
};

struct ASGDOptions {
  double lr = 1e-2;
  double lambd = 1e-4;
  double alpha = 0.75;
  double t0 = 1e6;
  double weight_decay = 0;
  bool maximize = false;
};

/// State per parameter: "step", "eta", "mu" (0-dim float32 tensors) and "ax", the running average
/// of the parameter. PyTorch keeps eta and mu on the parameter's device and reads them back every
/// step; ember keeps them on the CPU, so a step on a GPU waits for nothing. A skip flag on a
/// device is read on the host (eta and mu change on the host).
class ASGD : public Optimizer {
 public:
  ASGD(std::vector<Tensor> params, ASGDOptions options = {});
  ASGD(std::vector<ParamGroup> groups, ASGDOptions defaults = {});

 protected:
  void update(const ParamGroup& group, Tensor& param, const Tensor& grad, std::map<std::string, Tensor>& state,
              const Tensor& skip) override;
  /// "eta" and "mu" stay on the CPU as 0-dim tensors.
  Tensor loaded_state(const std::string& name, const Tensor& saved, const Tensor& param) const override;
};

}  // namespace ember::optim
