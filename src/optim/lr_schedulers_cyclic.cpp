// CosineAnnealingWarmRestarts and CyclicLR, following PyTorch's step() and get_lr() expression
// for expression so that the rates round as PyTorch's do.
#include <cmath>
#include <numbers>
#include <string>
#include <utility>
#include <vector>

#include "core/check.h"
#include "ember/optim/lr_scheduler.h"

// PyTorch's schedules are Python arithmetic, which never fuses a*b+c: no FMAs here, whatever
// -march the library is built for (lr_scheduler.cpp gets -ffp-contract=off from CMakeLists.txt).
#if defined(__clang__)
#pragma clang fp contract(off)
#elif defined(__GNUC__)
#pragma GCC optimize("fp-contract=off")
#endif

namespace ember::optim {
namespace {

/// A number as Python prints an int or a float: "3", "-1", "2.5".
std::string python_number(double value) {
  if (value == std::floor(value) && std::abs(value) < 1e15) return std::to_string(static_cast<int64_t>(value));
  return python_float(value);
}

Optimizer& checked_warm_restarts(Optimizer& optimizer, int64_t T_0, int64_t T_mult) {
  EMBER_CHECK(T_0 > 0, "Expected positive integer T_0, but got ", T_0);
  EMBER_CHECK(T_mult >= 1, "Expected integer T_mult >= 1, but got ", T_mult);
  return optimizer;
}

const char* const kCyclicModes[] = {"triangular", "triangular2", "exp_range"};

/// What CyclicLR's constructor does before LRScheduler's (which records each group's lr as
/// "initial_lr"): checks, then the base lrs and the momenta written into the groups.
Optimizer& prepare_cyclic(Optimizer& optimizer, const PerGroup& base_lr, const PerGroup& max_lr,
                          const CyclicLROptions& o) {
  auto& groups = optimizer.param_groups();
  const std::vector<double> base_lrs = base_lr.per_group("base_lr", groups.size());
  if (o.last_epoch == -1)
    for (size_t g = 0; g < groups.size(); ++g) groups[g].set_lr(base_lrs[g]);
  max_lr.per_group("max_lr", groups.size());
  bool known_mode = false;
  for (const char* mode : kCyclicModes) known_mode = known_mode || o.mode == mode;
  EMBER_CHECK(known_mode || o.scale_fn, "mode is invalid and scale_fn is None");
  if (!o.cycle_momentum) return optimizer;
  const bool use_beta1 = optimizer.defaults().count("beta1") != 0;
  EMBER_CHECK(use_beta1 || optimizer.defaults().count("momentum"),
              "optimizer must support momentum or beta1 with `cycle_momentum` option enabled");
  const std::vector<double> base_momentums = o.base_momentum.per_group("base_momentum", groups.size());
  const std::vector<double> max_momentums = o.max_momentum.per_group("max_momentum", groups.size());
  if (o.last_epoch == -1) {
    for (size_t g = 0; g < groups.size(); ++g) {
      groups[g].options[use_beta1 ? "beta1" : "momentum"] = max_momentums[g];
      groups[g].options["max_momentum"] = max_momentums[g];
      groups[g].options["base_momentum"] = base_momentums[g];
    }
  }
  return optimizer;
}

}  // namespace

// ---- CosineAnnealingWarmRestarts ----

CosineAnnealingWarmRestarts::CosineAnnealingWarmRestarts(Optimizer& optimizer, int64_t T_0, int64_t T_mult,
                                                         double eta_min, int64_t last_epoch)
    : LRScheduler(checked_warm_restarts(optimizer, T_0, T_mult), last_epoch),
      T_0_(static_cast<double>(T_0)),
      T_i_(static_cast<double>(T_0)),
      T_mult_(static_cast<double>(T_mult)),
      eta_min_(eta_min),
      T_cur_(static_cast<double>(last_epoch)) {
  initial_step();
}

// PyTorch's own step(): neither the optimizer-order warning nor a step count.
void CosineAnnealingWarmRestarts::step() { step_to(std::nullopt); }
void CosineAnnealingWarmRestarts::step(double epoch) { step_to(epoch); }

void CosineAnnealingWarmRestarts::step_to(std::optional<double> epoch) {
  if (!epoch && last_epoch_ < 0) epoch = 0.0;
  double new_epoch = 0;
  if (!epoch) {
    new_epoch = static_cast<double>(last_epoch_ + 1);
    T_cur_ = T_cur_ + 1;
    if (T_cur_ >= T_i_) {
      T_cur_ = std::fmod(T_cur_, T_i_);  // Python's % for these non-negative values
      T_i_ = T_i_ * T_mult_;
    }
  } else {
    new_epoch = *epoch;
    EMBER_CHECK(new_epoch >= 0, "Expected non-negative epoch, but got ", python_number(new_epoch));
    if (new_epoch >= T_0_) {
      if (T_mult_ == 1) {
        T_cur_ = std::fmod(new_epoch, T_0_);
      } else {
        // The restart n whose period holds `epoch`: T_0 (T_mult^n - 1) / (T_mult - 1) <= epoch.
        const auto n = static_cast<int64_t>(std::log(new_epoch / T_0_ * (T_mult_ - 1) + 1) / std::log(T_mult_));
        const auto T_0 = static_cast<int64_t>(T_0_), T_mult = static_cast<int64_t>(T_mult_);
        int64_t power = 1;
        for (int64_t i = 0; i < n; ++i) power *= T_mult;
        // An exact integer in Python too: the geometric sum divides evenly.
        T_cur_ = new_epoch - static_cast<double>(T_0 * (power - 1) / (T_mult - 1));
        T_i_ = static_cast<double>(T_0 * power);
      }
    } else {
      T_i_ = T_0_;
      T_cur_ = new_epoch;
    }
  }
  last_epoch_ = static_cast<int64_t>(std::floor(new_epoch));
  const std::vector<double> lrs = compute_lr();
  auto& groups = optimizer_.param_groups();
  for (size_t g = 0; g < groups.size(); ++g) groups[g].set_lr(lrs[g]);
  last_lr_ = group_lrs();
}

std::vector<double> CosineAnnealingWarmRestarts::compute_lr() {
  std::vector<double> lrs;
  for (double base_lr : base_lrs_)
    lrs.push_back(eta_min_ + (base_lr - eta_min_) * (1 + std::cos(std::numbers::pi * T_cur_ / T_i_)) / 2);
  return lrs;
}

std::map<std::string, double*> CosineAnnealingWarmRestarts::hyper_parameters() {
  return {{"T_0", &T_0_}, {"T_i", &T_i_}, {"T_mult", &T_mult_}, {"eta_min", &eta_min_}, {"T_cur", &T_cur_}};
}

// ---- CyclicLR ----

CyclicLR::CyclicLR(Optimizer& optimizer, PerGroup base_lr, PerGroup max_lr, CyclicLROptions o)
    : LRScheduler(prepare_cyclic(optimizer, base_lr, max_lr, o), o.last_epoch),
      max_lrs_(max_lr.per_group("max_lr", optimizer.param_groups().size())),
      gamma_(o.gamma),
      custom_scale_fn_(std::move(o.scale_fn)),
      cycle_momentum_(o.cycle_momentum ? 1.0 : 0.0),
      use_beta1_(optimizer.defaults().count("beta1") ? 1.0 : 0.0) {
  const auto step_size_up = static_cast<double>(o.step_size_up);
  const double step_size_down = o.step_size_down ? static_cast<double>(*o.step_size_down) : step_size_up;
  total_size_ = step_size_up + step_size_down;
  step_ratio_ = step_size_up / total_size_;
  mode_ = -1;  // a mode of PyTorch's three, or another name that a scale_fn makes irrelevant
  for (int m = 0; m < 3; ++m)
    if (o.mode == kCyclicModes[m]) mode_ = m;
  // PyTorch's _init_scale_fn: without a scale_fn the mode decides what the scale is a function of.
  scale_mode_ = custom_scale_fn_ ? (o.scale_mode == "cycle" ? 0.0 : 1.0) : (mode_ == 2 ? 1.0 : 0.0);
  const size_t groups = optimizer.param_groups().size();
  if (o.cycle_momentum) {
    base_momentums_ = o.base_momentum.per_group("base_momentum", groups);
    max_momentums_ = o.max_momentum.per_group("max_momentum", groups);
  }
  initial_step();
  // As PyTorch, after the first step (which used the groups' "initial_lr").
  base_lrs_ = base_lr.per_group("base_lr", groups);
}

double CyclicLR::scale_fn(double x) const {
  if (custom_scale_fn_) return custom_scale_fn_(x);
  if (mode_ == 1) return 1 / std::pow(2.0, x - 1);
  if (mode_ == 2) return std::pow(gamma_, x);
  return 1.0;
}

std::vector<double> CyclicLR::compute_lr() {
  const auto epoch = static_cast<double>(last_epoch_);
  const double cycle = std::floor(1 + epoch / total_size_);
  const double x = 1.0 + epoch / total_size_ - cycle;
  const double scale_factor = x <= step_ratio_ ? x / step_ratio_ : (x - 1) / (step_ratio_ - 1);
  // Called once per group and value, as PyTorch does (a custom scale_fn may count its calls).
  const double scale_argument = scale_mode_ == 0 ? cycle : epoch;
  std::vector<double> lrs;
  for (size_t g = 0; g < base_lrs_.size(); ++g) {
    const double base_height = (max_lrs_[g] - base_lrs_[g]) * scale_factor;
    lrs.push_back(base_lrs_[g] + base_height * scale_fn(scale_argument));
  }
  if (cycle_momentum_ != 0) {
    auto& groups = optimizer_.param_groups();
    for (size_t g = 0; g < groups.size(); ++g) {
      const double base_height = (max_momentums_[g] - base_momentums_[g]) * scale_factor;
      groups[g].options[use_beta1_ != 0 ? "beta1" : "momentum"] =
          max_momentums_[g] - base_height * scale_fn(scale_argument);
    }
  }
  return lrs;
}

std::map<std::string, double*> CyclicLR::hyper_parameters() {
  return {{"total_size", &total_size_}, {"step_ratio", &step_ratio_}, {"mode", &mode_},
          {"gamma", &gamma_},           {"scale_mode", &scale_mode_}, {"cycle_momentum", &cycle_momentum_}};
}

void CyclicLR::save_extra(SchedulerStateDict& dict) const {
  scheduler_state::put_list(dict, "max_lrs", max_lrs_);
  if (cycle_momentum_ == 0) return;  // PyTorch keeps these only when cycling momentum
  dict["use_beta1"] = use_beta1_;
  scheduler_state::put_list(dict, "base_momentums", base_momentums_);
  scheduler_state::put_list(dict, "max_momentums", max_momentums_);
}

void CyclicLR::load_extra(const SchedulerStateDict& dict) {
  max_lrs_ = scheduler_state::get_list(dict, "max_lrs", max_lrs_.size());
  if (cycle_momentum_ == 0) return;
  use_beta1_ = scheduler_state::state_number(dict, "use_beta1");
  base_momentums_ = scheduler_state::get_list(dict, "base_momentums", optimizer_.param_groups().size());
  max_momentums_ = scheduler_state::get_list(dict, "max_momentums", optimizer_.param_groups().size());
}

}  // namespace ember::optim
