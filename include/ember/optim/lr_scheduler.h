#pragma once
/// Learning-rate schedulers of torch.optim.lr_scheduler, computed in PyTorch's chainable
/// (recursive) form, so that calling step() once per epoch or batch gives PyTorch's floats;
/// step(epoch), deprecated in PyTorch as here, uses the closed form where PyTorch has one.
///
/// Like PyTorch, constructing a scheduler performs its first step (last_epoch becomes 0) and
/// sets the optimizer's learning rates; call optimizer.step() then scheduler.step() each period.
/// state_dict(): numbers only, under the keys of PyTorch's state_dict(): "last_epoch",
/// "_step_count", "_is_initial", "_get_lr_called_within_step", each list as "<key>.<i>"
/// ("base_lrs.<g>", "_last_lr.<g>"), each dict as "<key>.<k>" (MultiStepLR's "milestones.<m>" =
/// its count), nested state dicts as "<key>.<i>.<their keys>" (SequentialLR's
/// "_schedulers.<i>.last_epoch"), booleans as 0/1, strings as their index in the choices the
/// argument allows (ReduceLROnPlateau's "mode": 0 "min", 1 "max"), and None left out; the
/// scheduler's own hyper-parameters under their PyTorch names ("step_size", "gamma", "T_max").
/// Functions (LambdaLR's lambdas, CyclicLR's scale_fn) are not saved, as in PyTorch for plain
/// functions. The per-group values a schedule reads ("initial_lr", OneCycleLR's "max_lr", ...)
/// live in the optimizer's groups and so in the optimizer's state dict. To resume, as in PyTorch:
/// build the optimizer and the scheduler as at the start, then load the optimizer's state dict,
/// then the scheduler's. A scheduler keeps a reference to its optimizer, which must outlive it.
///
/// The schedulers beyond the four here (LambdaLR, MultiplicativeLR, MultiStepLR, ConstantLR,
/// ExponentialLR, PolynomialLR, CosineAnnealingWarmRestarts, CyclicLR, ReduceLROnPlateau,
/// SequentialLR, ChainedScheduler) are in ember/optim/lr_schedulers_more.h, included below.
#include <initializer_list>
#include <map>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "ember/optim/optimizer.h"

namespace ember::optim {

/// A scheduler's state: see the layout above.
using SchedulerStateDict = std::map<std::string, double>;

/// The pieces of the state dict layout above, for the schedulers' own code.
namespace scheduler_state {
extern const char* const kEpochDeprecationWarning;
/// dict[key], or an error naming the missing key.
double state_number(const SchedulerStateDict& dict, const std::string& key);
/// A list as "<key>.<i>".
void put_list(SchedulerStateDict& dict, const std::string& key, const std::vector<double>& values);
std::vector<double> get_list(const SchedulerStateDict& dict, const std::string& key, size_t size);
/// The entries under "<prefix>", with the prefix taken off (a nested state dict).
SchedulerStateDict sub_dict(const SchedulerStateDict& dict, const std::string& prefix);
/// A string saved as its index among `num_choices` choices.
int64_t choice_index(const SchedulerStateDict& dict, const std::string& key, size_t num_choices);
}  // namespace scheduler_state

class LRScheduler {
 public:
  virtual ~LRScheduler() = default;
  LRScheduler(const LRScheduler&) = delete;
  LRScheduler& operator=(const LRScheduler&) = delete;

  /// PyTorch's class name ("StepLR"), for messages.
  virtual const char* name() const = 0;

  /// One period: last_epoch + 1, and the learning rates in the chainable form.
  virtual void step();
  /// PyTorch's deprecated step(epoch): warns, sets last_epoch to `epoch` and uses the closed
  /// form where the scheduler has one (else the chainable form at that epoch). Only
  /// CosineAnnealingWarmRestarts takes a fractional epoch.
  virtual void step(double epoch);
  /// The learning rates the last step() set, one per parameter group.
  const std::vector<double>& get_last_lr() const { return last_lr_; }
  const std::vector<double>& base_lrs() const { return base_lrs_; }
  int64_t last_epoch() const { return last_epoch_; }
  Optimizer& optimizer() const { return optimizer_; }

  virtual SchedulerStateDict state_dict() const;
  virtual void load_state_dict(const SchedulerStateDict& dict);

 protected:
  /// `last_epoch` = -1 starts afresh (recording "initial_lr" in each group); otherwise resumes,
  /// which needs "initial_lr" in every group, as in PyTorch.
  LRScheduler(Optimizer& optimizer, int64_t last_epoch);
  /// For SequentialLR and ChainedScheduler, which only drive other schedulers.
  struct Composite {};
  LRScheduler(Optimizer& optimizer, Composite);
  /// Must be called at the end of a derived constructor (PyTorch's _initial_step()).
  void initial_step();
  /// PyTorch's _update_lr(epoch): last_epoch + 1 (or `epoch`), then the new rates.
  void update_lr(std::optional<double> epoch);
  /// The warning PyTorch gives when the first step() comes before any optimizer.step().
  void warn_if_optimizer_not_stepped() const;
  /// The new learning rates at last_epoch_, from the groups' current ones (chainable form).
  virtual std::vector<double> compute_lr() = 0;
  /// The rates at last_epoch_ from base_lrs_ alone (PyTorch's _get_closed_form_lr), where the
  /// scheduler has such a form.
  virtual std::optional<std::vector<double>> closed_form_lr() const { return std::nullopt; }
  /// Scalar hyper-parameters to save and restore with the state.
  virtual std::map<std::string, double*> hyper_parameters() { return {}; }
  std::map<std::string, double*> const_hyper_parameters() const {
    return const_cast<LRScheduler*>(this)->hyper_parameters();
  }
  /// Further entries (lists, dicts) a scheduler saves and restores beyond the common ones.
  virtual void save_extra(SchedulerStateDict& /*dict*/) const {}
  virtual void load_extra(const SchedulerStateDict& /*dict*/) {}
  /// SequentialLR's recursive_undo: last_epoch - 1, or the same for each scheduler a composite holds.
  virtual void undo_last_epoch() { --last_epoch_; }
  /// The learning rates of the optimizer's groups now.
  std::vector<double> group_lrs() const;

  Optimizer& optimizer_;
  std::vector<double> base_lrs_;
  std::vector<double> last_lr_;
  int64_t last_epoch_;
  int64_t step_count_ = 0;
  /// True during the constructor's step (PyTorch's _initial_mode): chainable forms keep the lr.
  bool initial_ = false;

  friend class SequentialLR;
  friend class ChainedScheduler;
};

/// A per-group value given as one number for every group, or a list with one per group
/// (PyTorch's `float | list[float]` arguments): `0.1` or `{0.1, 0.05}`.
struct PerGroup {
  PerGroup(double value) : values{value}, is_list(false) {}                       // NOLINT: implicit, as in Python
  PerGroup(std::vector<double> list) : values(std::move(list)), is_list(true) {}  // NOLINT
  PerGroup(std::initializer_list<double> list) : values(list), is_list(true) {}   // NOLINT
  /// One value per group; a list of the wrong length gets PyTorch's message naming `name`.
  std::vector<double> per_group(const char* name, size_t num_groups) const;

  std::vector<double> values;
  bool is_list;
};

/// lr *= gamma every step_size epochs.
class StepLR : public LRScheduler {
 public:
  StepLR(Optimizer& optimizer, int64_t step_size, double gamma = 0.1, int64_t last_epoch = -1);
  const char* name() const override { return "StepLR"; }

 protected:
  std::vector<double> compute_lr() override;
  std::optional<std::vector<double>> closed_form_lr() const override;
  std::map<std::string, double*> hyper_parameters() override;

 private:
  double step_size_;
  double gamma_;
};

/// Cosine annealing from the base lr to eta_min over T_max epochs (SGDR without restarts).
class CosineAnnealingLR : public LRScheduler {
 public:
  CosineAnnealingLR(Optimizer& optimizer, int64_t T_max, double eta_min = 0.0, int64_t last_epoch = -1);
  const char* name() const override { return "CosineAnnealingLR"; }

 protected:
  std::vector<double> compute_lr() override;
  std::optional<std::vector<double>> closed_form_lr() const override;
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
  const char* name() const override { return "LinearLR"; }

 protected:
  std::vector<double> compute_lr() override;
  std::optional<std::vector<double>> closed_form_lr() const override;
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
  const char* name() const override { return "OneCycleLR"; }

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

// The other schedulers; after the base class, which they derive from.
#include "ember/optim/lr_schedulers_more.h"  // IWYU pragma: export
