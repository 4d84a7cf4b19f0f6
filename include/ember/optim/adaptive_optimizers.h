#pragma once
/// torch.optim's Adagrad, Adamax, NAdam and RAdam, with PyTorch's defaults, update rules (the
/// single-tensor forms PyTorch runs on the CPU), argument checks and state names. Each takes a
/// list of parameters or of ParamGroups whose missing options come from the options struct:
///   ember::optim::NAdam opt(model.parameters(), {.lr = 1e-3, .decoupled_weight_decay = true});
/// Hyper-parameters live in each group's Options under PyTorch's names, `betas` as "beta1" and
/// "beta2", booleans as 0/1. The updates are composed of ops (every device; nothing waits for a
/// GPU: the step counts live on the CPU, as in PyTorch).
#include <vector>

#include "ember/optim/optimizer.h"

namespace ember::optim {

struct AdagradOptions {
  double lr = 1e-2;
  double lr_decay = 0;
  double weight_decay = 0;
  double initial_accumulator_value = 0;
  double eps = 1e-10;
  bool maximize = false;
};

/// State per parameter: "step", "sum". As in PyTorch, the state of every parameter is made by the
/// constructor (so state_dict() holds it before the first step), and "sum" starts at the
/// constructor's initial_accumulator_value whatever a group says.
class Adagrad : public Optimizer {
 public:
  Adagrad(std::vector<Tensor> params, AdagradOptions options = {});
  Adagrad(std::vector<ParamGroup> groups, AdagradOptions defaults = {});

 protected:
  void update(const ParamGroup& group, Tensor& param, const Tensor& grad, std::map<std::string, Tensor>& state,
              const Tensor& skip) override;

 private:
  double initial_accumulator_value_;
};

struct AdamaxOptions {
  double lr = 2e-3;
  double beta1 = 0.9;
  double beta2 = 0.999;
  double eps = 1e-8;
  double weight_decay = 0;
  bool maximize = false;
};

/// State per parameter: "step", "exp_avg", "exp_inf".
class Adamax : public Optimizer {
 public:
  Adamax(std::vector<Tensor> params, AdamaxOptions options = {});
  Adamax(std::vector<ParamGroup> groups, AdamaxOptions defaults = {});

 protected:
  void update(const ParamGroup& group, Tensor& param, const Tensor& grad, std::map<std::string, Tensor>& state,
              const Tensor& skip) override;
};

struct NAdamOptions {
  double lr = 2e-3;
  double beta1 = 0.9;
  double beta2 = 0.999;
  double eps = 1e-8;
  double weight_decay = 0;
  double momentum_decay = 4e-3;
  bool decoupled_weight_decay = false;
  bool maximize = false;
};

/// State per parameter: "step", "mu_product" (a float32 0-dim tensor on the CPU, as PyTorch keeps
/// it), "exp_avg", "exp_avg_sq". A skip flag on a device is read on the host (mu_product, which
/// the host multiplies, must know whether the step happened).
class NAdam : public Optimizer {
 public:
  NAdam(std::vector<Tensor> params, NAdamOptions options = {});
  NAdam(std::vector<ParamGroup> groups, NAdamOptions defaults = {});

 protected:
  void update(const ParamGroup& group, Tensor& param, const Tensor& grad, std::map<std::string, Tensor>& state,
              const Tensor& skip) override;
  /// "mu_product" stays on the CPU as a 0-dim tensor.
  Tensor loaded_state(const std::string& name, const Tensor& saved, const Tensor& param) const override;
};

struct RAdamOptions {
  double lr = 1e-3;
  double beta1 = 0.9;
  double beta2 = 0.999;
  double eps = 1e-8;
  double weight_decay = 0;
  bool decoupled_weight_decay = false;
  bool maximize = false;
};

/// State per parameter: "step", "exp_avg", "exp_avg_sq".
class RAdam : public Optimizer {
 public:
  RAdam(std::vector<Tensor> params, RAdamOptions options = {});
  RAdam(std::vector<ParamGroup> groups, RAdamOptions defaults = {});

 protected:
  void update(const ParamGroup& group, Tensor& param, const Tensor& grad, std::map<std::string, Tensor>& state,
              const Tensor& skip) override;
};

}  // namespace ember::optim
