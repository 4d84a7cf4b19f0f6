#pragma once
/// The optimizers of torch.optim that ember provides, with PyTorch's defaults and update rules:
/// SGD, Adam, AdamW, Adadelta and RMSprop here; Adagrad, Adamax, NAdam, RAdam
/// (adaptive_optimizers.h), Rprop and ASGD (rprop_asgd.h), Adafactor (adafactor.h), Muon (muon.h)
/// and LBFGS (lbfgs.h), which this header includes.
/// Each takes either a list of parameters or a list of ParamGroups (whose missing options come
/// from the options struct), e.g.
///   ember::optim::SGD opt(model.parameters(), {.lr = 0.1, .momentum = 0.9});
#include <vector>

#include "ember/optim/adafactor.h"            // IWYU pragma: export
#include "ember/optim/adaptive_optimizers.h"  // IWYU pragma: export
#include "ember/optim/lbfgs.h"                // IWYU pragma: export
#include "ember/optim/muon.h"                 // IWYU pragma: export
#include "ember/optim/optimizer.h"
#include "ember/optim/rprop_asgd.h"  // IWYU pragma: export

namespace ember::optim {

struct SGDOptions {
  double lr = 1e-3;
  double momentum = 0;
  double dampening = 0;
  double weight_decay = 0;
  bool nesterov = false;
  bool maximize = false;
};

/// State per parameter: "momentum_buffer" (only when momentum != 0).
class SGD : public Optimizer {
 public:
  SGD(std::vector<Tensor> params, SGDOptions options = {});
  SGD(std::vector<ParamGroup> groups, SGDOptions defaults = {});

 protected:
  void update(const ParamGroup& group, Tensor& param, const Tensor& grad, std::map<std::string, Tensor>& state,
              const Tensor& skip) override;
};

struct AdamOptions {
  double lr = 1e-3;
  double beta1 = 0.9;
  double beta2 = 0.999;
  double eps = 1e-8;
  double weight_decay = 0;
  bool amsgrad = false;
  bool maximize = false;
};

/// State per parameter: "step", "exp_avg", "exp_avg_sq", and "max_exp_avg_sq" with amsgrad.
class Adam : public Optimizer {
 public:
  Adam(std::vector<Tensor> params, AdamOptions options = {});
  Adam(std::vector<ParamGroup> groups, AdamOptions defaults = {});

 protected:
  /// `decoupled`: AdamW's decay of the parameter instead of L2 added to the gradient.
  Adam(std::vector<ParamGroup> groups, const AdamOptions& defaults, bool decoupled);
  void update(const ParamGroup& group, Tensor& param, const Tensor& grad, std::map<std::string, Tensor>& state,
              const Tensor& skip) override;

 private:
  bool decoupled_weight_decay_ = false;
};

struct AdamWOptions {
  double lr = 1e-3;
  double beta1 = 0.9;
  double beta2 = 0.999;
  double eps = 1e-8;
  double weight_decay = 1e-2;
  bool amsgrad = false;
  bool maximize = false;
};

/// Adam with decoupled weight decay (PyTorch's default weight_decay for it is 1e-2).
class AdamW : public Adam {
 public:
  AdamW(std::vector<Tensor> params, AdamWOptions options = {});
  AdamW(std::vector<ParamGroup> groups, AdamWOptions defaults = {});
};

struct AdadeltaOptions {
  double lr = 1.0;
  double rho = 0.9;
  double eps = 1e-6;
  double weight_decay = 0;
  bool maximize = false;
};

/// State per parameter: "step", "square_avg", "acc_delta".
class Adadelta : public Optimizer {
 public:
  Adadelta(std::vector<Tensor> params, AdadeltaOptions options = {});
  Adadelta(std::vector<ParamGroup> groups, AdadeltaOptions defaults = {});

 protected:
  void update(const ParamGroup& group, Tensor& param, const Tensor& grad, std::map<std::string, Tensor>& state,
              const Tensor& skip) override;
};

struct RMSpropOptions {
  double lr = 1e-2;
  double alpha = 0.99;
  double eps = 1e-8;
  double weight_decay = 0;
  double momentum = 0;
  bool centered = false;
  bool maximize = false;
};

/// State per parameter: "step", "square_avg", "momentum_buffer" (momentum > 0), "grad_avg" (centered).
class RMSprop : public Optimizer {
 public:
  RMSprop(std::vector<Tensor> params, RMSpropOptions options = {});
  RMSprop(std::vector<ParamGroup> groups, RMSpropOptions defaults = {});

 protected:
  void update(const ParamGroup& group, Tensor& param, const Tensor& grad, std::map<std::string, Tensor>& state,
              const Tensor& skip) override;
};

}  // namespace ember::optim
