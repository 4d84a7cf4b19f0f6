#pragma once
/// Learning-rate schedulers of torch.optim.lr_scheduler, computed in PyTorch's chainable
/// (recursive) form, so that calling step() once per epoch or batch gives PyTorch's floats.
///
/// Like PyTorch, constructing a scheduler performs its first step (last_epoch becomes 0) and
/// sets the optimizer's learning rates; call optimizer.step() then scheduler.step() each period.
/// state_dict(): numbers only — "last_epoch", "_step_count", "base_lrs.<g>", "last_lr.<g>" and
/// the scheduler's own hyper-parameters under their PyTorch names ("step_size", "gamma", "T_max", ...).
/// The per-group values a schedule reads ("initial_lr", OneCycleLR's "max_lr", "min_lr", ...) live in
/// the optimizer's groups and so in the optimizer's state dict. To resume, as in PyTorch: build the
/// optimizer and the scheduler as at the start, then load the optimizer's state dict, then the
/// scheduler's. A scheduler keeps a reference to its optimizer, which must outlive it.
#include <map>
#include <optional>
#include <string>
#include <vector>

#include "ember/optim/optimizer.h"

namespace ember::optim {

class LRScheduler {
 public:
  virtual ~LRScheduler() = default;
  LRScheduler(const LRScheduler&) = delete;
  LRScheduler& operator=(const LRScheduler&) = delete;

  void step();
  /// The learning rates the last step() set, one per parameter group.
  const std::vector<double>& get_last_lr() const { return last_lr_; }
  const std::vector<double>& base_lrs() const { return base_lrs_; }
  int64_t last_epoch() const { return last_epoch_; }

  std::map<std::string, double> state_dict() const;
  void load_state_dict(const std::map<std::string, double>& dict);

 protected:
  /// `last_epoch` = -1 starts afresh (recording "initial_lr" in each group); otherwise resumes,
  /// which needs "initial_lr" in every group, as in PyTorch.
  LRScheduler(Optimizer& optimizer, int64_t last_epoch);
  /// Must be called at the end of a derived constructor (PyTorch's _initial_step()).
  void initial_step();
  /// The new learning rates at last_epoch_, from the groups' current ones (chainable form).
  virtual std::vector<double> compute_lr() = 0;
  /// Hyper-parameters to save and restore with the state.
  virtual std::map<std::string, double*> hyper_parameters() { return {}; }
  std::map<std::string, double*> const_hyper_parameters() const {
    return const_cast<LRScheduler*>(this)->hyper_parameters();
  }

  Optimizer& optimizer_;
  std::vector<double> base_lrs_;
  std::vector<double> last_lr_;
  int64_t last_epoch_;
  int64_t step_count_ = 0;
  /// True during the constructor's step (PyTorch's _initial_mode): chainable forms keep the lr.
  bool initial_ = false;
};

/// lr *= gamma every step_size epochs.
class StepLR : public LRScheduler {
 public:
  StepLR(Optimizer& optimizer, int64_t step_size, double gamma = 0.1, int64_t last_epoch = -1);

 protected:
  std::vector<double> compute_lr() override;
  std::map<std::string, double*> hyper_parameters() override;

 private:
  double step_size_;
  double gamma_;
};

/// Cosine annealing from the base lr to eta_min over T_max epochs (SGDR without restarts).
class CosineAnnealingLR : public LRScheduler {
 public:
  CosineAnnealingLR(Optimizer& optimizer, int64_t T_max, double eta_min = 0.0, int64_t last_epoch = -1);

 protected:
  std::vector<double> compute_lr() override;
  std::map<std::string, double*> hyper_parameters() override;

 private:
  double T_max_;
  double eta_min_;
};

/// Multiplies the base lr by a factor moving linearly from start_factor to end_factor over total_iters.
class LinearLR : public LRScheduler {
 public:
  LinearLR(Optimizer& optimizer, double start_factor = 1.0 / 3, double end_factor = 1.0, int64_t total_iters = 5,
           int64_t last_epoch = -1);

 protected:
  std::vector<double> compute_lr() override;
  std::map<std::string, double*> hyper_parameters() override;

 private:
  double start_factor_;
  double end_factor_;
  double total_iters_;
};

struct OneCycleLROptions {
  /// Either total_steps, or epochs and steps_per_epoch.
  std::optional<int64_t> total_steps = std::nullopt;
  std::optional<int64_t> epochs = std::nullopt;
  std::optional<int64_t> steps_per_epoch = std::nullopt;
  double pct_start = 0.3;
  /// "cos" or "linear".
  std::string anneal_strategy = "cos";
  bool cycle_momentum = true;
  double base_momentum = 0.85;
  double max_momentum = 0.95;
  double div_factor = 25.0;
  double final_div_factor = 1e4;
  bool three_phase = false;
  int64_t last_epoch = -1;
};

/// The 1cycle policy; also cycles momentum (SGD's "momentum" or Adam's "beta1") unless told not to.
class OneCycleLR : public LRScheduler {
 public:
  /// `max_lr`: one value for every group, or one per group.
  OneCycleLR(Optimizer& optimizer, std::vector<double> max_lr, OneCycleLROptions options);
  OneCycleLR(Optimizer& optimizer, double max_lr, OneCycleLROptions options);
  int64_t total_steps() const { return static_cast<int64_t>(total_steps_); }

 protected:
  std::vector<double> compute_lr() override;
  std::map<std::string, double*> hyper_parameters() override;

 private:
  struct Phase {
    double end_step;
    const char* start_lr;
    const char* end_lr;
    const char* start_momentum;
    const char* end_momentum;
  };
  double anneal(double start, double end, double pct) const;

  double total_steps_;
  double cycle_momentum_;
  double use_beta1_;
  double anneal_linear_;
  std::vector<Phase> phases_;
};

}  // namespace ember::optim
