#pragma once
/// The schedulers of torch.optim.lr_scheduler beyond StepLR, CosineAnnealingLR, LinearLR and
/// OneCycleLR (ember/optim/lr_scheduler.h, which includes this header and describes the state
/// dict layout): PyTorch's arguments, defaults, messages and arithmetic, expression for
/// expression, so that the rates match PyTorch's floats.
#include <cstdint>
#include <functional>
#include <map>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "ember/optim/lr_scheduler.h"

namespace ember::optim {

/// A factor of the epoch (LambdaLR's and MultiplicativeLR's lr_lambda).
using LRLambda = std::function<double(int64_t epoch)>;

/// lr = base_lr * lr_lambda(epoch); one function for every group, or one per group.
class LambdaLR : public LRScheduler {
 public:
  LambdaLR(Optimizer& optimizer, LRLambda lr_lambda, int64_t last_epoch = -1);
  LambdaLR(Optimizer& optimizer, std::vector<LRLambda> lr_lambdas, int64_t last_epoch = -1);
  const char* name() const override { return "LambdaLR"; }

 protected:
  std::vector<double> compute_lr() override;

 private:
  std::vector<LRLambda> lr_lambdas_;
};

/// lr *= lr_lambda(epoch) at each step after the first.
class MultiplicativeLR : public LRScheduler {
 public:
  MultiplicativeLR(Optimizer& optimizer, LRLambda lr_lambda, int64_t last_epoch = -1);
  MultiplicativeLR(Optimizer& optimizer, std::vector<LRLambda> lr_lambdas, int64_t last_epoch = -1);
  const char* name() const override { return "MultiplicativeLR"; }

 protected:
  std::vector<double> compute_lr() override;

 private:
  std::vector<LRLambda> lr_lambdas_;
};

/// lr *= gamma at each milestone (a milestone listed k times multiplies by gamma^k).
class MultiStepLR : public LRScheduler {
 public:
  MultiStepLR(Optimizer& optimizer, std::vector<int64_t> milestones, double gamma = 0.1, int64_t last_epoch = -1);
  const char* name() const override { return "MultiStepLR"; }

 protected:
  std::vector<double> compute_lr() override;
  std::optional<std::vector<double>> closed_form_lr() const override;
  std::map<std::string, double*> hyper_parameters() override;
  void save_extra(SchedulerStateDict& dict) const override;
  void load_extra(const SchedulerStateDict& dict) override;

 private:
  /// PyTorch's Counter: milestone -> how often it was listed.
  std::map<int64_t, int64_t> milestones_;
  double gamma_;
};

/// lr * factor until epoch total_iters, then lr.
class ConstantLR : public LRScheduler {
 public:
  ConstantLR(Optimizer& optimizer, double factor = 1.0 / 3, int64_t total_iters = 5, int64_t last_epoch = -1);
  const char* name() const override { return "ConstantLR"; }

 protected:
  std::vector<double> compute_lr() override;
  std::optional<std::vector<double>> closed_form_lr() const override;
  std::map<std::string, double*> hyper_parameters() override;

 private:
  double factor_;
  double total_iters_;
};

/// lr *= gamma every epoch.
class ExponentialLR : public LRScheduler {
 public:
  ExponentialLR(Optimizer& optimizer, double gamma, int64_t last_epoch = -1);
  const char* name() const override { return "ExponentialLR"; }

 protected:
  std::vector<double> compute_lr() override;
  std::optional<std::vector<double>> closed_form_lr() const override;
  std::map<std::string, double*> hyper_parameters() override;

 private:
  double gamma_;
};

/// base_lr * (1 - epoch / total_iters)^power, reaching 0 at total_iters.
class PolynomialLR : public LRScheduler {
 public:
  PolynomialLR(Optimizer& optimizer, int64_t total_iters = 5, double power = 1.0, int64_t last_epoch = -1);
  const char* name() const override { return "PolynomialLR"; }

 protected:
  std::vector<double> compute_lr() override;
  std::optional<std::vector<double>> closed_form_lr() const override;
  std::map<std::string, double*> hyper_parameters() override;

 private:
  double total_iters_;
  double power_;
};

/// SGDR: cosine annealing from the base lr to eta_min over T_i epochs, restarting with
/// T_i *= T_mult. step(epoch) takes fractional epochs (steps within an epoch), and, unlike the
/// other schedulers, without a deprecation warning, as in PyTorch.
class CosineAnnealingWarmRestarts : public LRScheduler {
 public:
  CosineAnnealingWarmRestarts(Optimizer& optimizer, int64_t T_0, int64_t T_mult = 1, double eta_min = 0.0,
                              int64_t last_epoch = -1);
  const char* name() const override { return "CosineAnnealingWarmRestarts"; }
  void step() override;
  void step(double epoch) override;
  /// Epochs since the last restart (fractional after step(epoch)), and the current period.
  double T_cur() const { return T_cur_; }
  double T_i() const { return T_i_; }

 protected:
  std::vector<double> compute_lr() override;
  std::map<std::string, double*> hyper_parameters() override;

 private:
  void step_to(std::optional<double> epoch);
  double T_0_;
  double T_i_;
  double T_mult_;
  double eta_min_;
  double T_cur_;
};

struct CyclicLROptions {
  int64_t step_size_up = 2000;
  /// Defaults to step_size_up.
  std::optional<int64_t> step_size_down = std::nullopt;
  /// "triangular", "triangular2" or "exp_range"; ignored when scale_fn is given.
  std::string mode = "triangular";
  /// exp_range's factor: gamma^iterations.
  double gamma = 1.0;
  /// A custom amplitude scale, 0 < scale_fn(x) <= 1, of the cycle number or the iteration.
  std::function<double(double)> scale_fn = nullptr;
  /// "cycle" or "iterations": what scale_fn is a function of (with scale_fn only).
  std::string scale_mode = "cycle";
  /// Cycles SGD's "momentum" or Adam's "beta1" inversely to the lr.
  bool cycle_momentum = true;
  PerGroup base_momentum = 0.8;
  PerGroup max_momentum = 0.9;
  int64_t last_epoch = -1;
};

/// The cyclical learning rate policy, from base_lr up to max_lr and back.
class CyclicLR : public LRScheduler {
 public:
  CyclicLR(Optimizer& optimizer, PerGroup base_lr, PerGroup max_lr, CyclicLROptions options = {});
  const char* name() const override { return "CyclicLR"; }
  /// The amplitude scale at `x` (cycle or iteration): scale_fn, or the mode's.
  double scale_fn(double x) const;

 protected:
  std::vector<double> compute_lr() override;
  std::map<std::string, double*> hyper_parameters() override;
  void save_extra(SchedulerStateDict& dict) const override;
  void load_extra(const SchedulerStateDict& dict) override;

 private:
  std::vector<double> max_lrs_;
  double total_size_;
  double step_ratio_;
  double mode_;  // index in {"triangular", "triangular2", "exp_range"}, as saved
  double gamma_;
  std::function<double(double)> custom_scale_fn_;
  double scale_mode_;  // 0 "cycle", 1 "iterations"
  double cycle_momentum_;
  double use_beta1_;
  std::vector<double> base_momentums_;
  std::vector<double> max_momentums_;
};

struct ReduceLROnPlateauOptions {
  /// "min": a metric that should fall (a loss); "max": one that should rise (an accuracy).
  std::string mode = "min";
  double factor = 0.1;
  /// Epochs without improvement tolerated before the lr falls.
  int64_t patience = 10;
  double threshold = 1e-4;
  /// "rel": better means beyond best * (1 ∓ threshold); "abs": beyond best ∓ threshold.
  std::string threshold_mode = "rel";
  /// Epochs to wait after a reduction before counting bad epochs again.
  int64_t cooldown = 0;
  /// A lower bound for every group, or one per group.
  PerGroup min_lr = 0.0;
  /// A reduction smaller than eps is not made.
  double eps = 1e-8;
};

/// Lowers the learning rates by `factor` when a metric has stopped improving for `patience`
/// epochs. Not an LRScheduler: its step takes the metric (so SequentialLR and ChainedScheduler,
/// which PyTorch forbids it in, do not take it), and it sets no rate when constructed.
class ReduceLROnPlateau {
 public:
  explicit ReduceLROnPlateau(Optimizer& optimizer, ReduceLROnPlateauOptions options = {});
  ReduceLROnPlateau(const ReduceLROnPlateau&) = delete;
  ReduceLROnPlateau& operator=(const ReduceLROnPlateau&) = delete;
  const char* name() const { return "ReduceLROnPlateau"; }

  void step(double metrics);
  /// PyTorch's deprecated step(metrics, epoch): warns and sets last_epoch to `epoch`.
  void step(double metrics, int64_t epoch);
  const std::vector<double>& get_last_lr() const { return last_lr_; }
  int64_t last_epoch() const { return last_epoch_; }
  double best() const { return best_; }
  int64_t num_bad_epochs() const { return num_bad_epochs_; }
  bool in_cooldown() const { return cooldown_counter_ > 0; }
  Optimizer& optimizer() const { return optimizer_; }

  SchedulerStateDict state_dict() const;
  void load_state_dict(const SchedulerStateDict& dict);

 private:
  void advance(double metrics, int64_t epoch);
  bool is_better(double a, double best) const;
  void init_is_better(int64_t mode, double threshold, int64_t threshold_mode);
  void reduce_lr();

  Optimizer& optimizer_;
  double factor_;
  std::optional<double> default_min_lr_;
  std::vector<double> min_lrs_;
  int64_t patience_;
  int64_t cooldown_;
  double eps_;
  int64_t last_epoch_ = 0;
  std::vector<double> last_lr_;
  double mode_worse_ = 0;
  int64_t mode_ = 0;  // 0 "min", 1 "max"
  double threshold_ = 0;
  int64_t threshold_mode_ = 0;  // 0 "rel", 1 "abs"
  double best_ = 0;
  int64_t cooldown_counter_ = 0;
  int64_t num_bad_epochs_ = 0;
};

/// Runs `schedulers` one after another: schedulers[i] from epoch milestones[i - 1] on. The
/// schedulers are shared: a caller may keep its own handles to them.
class SequentialLR : public LRScheduler {
 public:
  SequentialLR(Optimizer& optimizer, std::vector<std::shared_ptr<LRScheduler>> schedulers,
               std::vector<int64_t> milestones, int64_t last_epoch = -1);
  const char* name() const override { return "SequentialLR"; }
  void step() override;
  /// PyTorch's SequentialLR.step takes no epoch: an error.
  void step(double epoch) override;
  SchedulerStateDict state_dict() const override;
  void load_state_dict(const SchedulerStateDict& dict) override;

 protected:
  std::vector<double> compute_lr() override;
  void undo_last_epoch() override;

 private:
  std::vector<std::shared_ptr<LRScheduler>> schedulers_;
  std::vector<int64_t> milestones_;
};

/// Steps every one of `schedulers` at each step(), in order, so that their changes compose.
class ChainedScheduler : public LRScheduler {
 public:
  /// `optimizer` defaults to the first scheduler's.
  explicit ChainedScheduler(std::vector<std::shared_ptr<LRScheduler>> schedulers, Optimizer* optimizer = nullptr);
  const char* name() const override { return "ChainedScheduler"; }
  void step() override;
  /// PyTorch's ChainedScheduler.step takes no epoch: an error.
  void step(double epoch) override;
  SchedulerStateDict state_dict() const override;
  void load_state_dict(const SchedulerStateDict& dict) override;

 protected:
  std::vector<double> compute_lr() override;
  void undo_last_epoch() override;

 private:
  std::vector<std::shared_ptr<LRScheduler>> schedulers_;
};

}  // namespace ember::optim
