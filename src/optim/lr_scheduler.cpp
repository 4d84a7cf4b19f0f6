// Each compute_lr() follows the get_lr() of torch/optim/lr_scheduler.py expression for expression,
// since the chainable forms round differently from the closed forms.
#include "ember/optim/lr_scheduler.h"

#include <algorithm>
#include <cmath>
#include <numbers>

#include "core/check.h"
#include "ember/warning.h"

namespace ember::optim {

using scheduler_state::get_list;
using scheduler_state::kEpochDeprecationWarning;
using scheduler_state::put_list;
using scheduler_state::state_number;

namespace {

/// Python's % on integers: the result has the divisor's sign.
int64_t python_mod(int64_t a, int64_t b) {
  int64_t r = a % b;
  return (r != 0 && ((r < 0) != (b < 0))) ? r + b : r;
}

/// Python's // on integers: rounds towards minus infinity.
int64_t python_floordiv(int64_t a, int64_t b) { return (a - python_mod(a, b)) / b; }

}  // namespace

LRScheduler::LRScheduler(Optimizer& optimizer, int64_t last_epoch) : optimizer_(optimizer), last_epoch_(last_epoch) {
  for (size_t g = 0; g < optimizer_.param_groups().size(); ++g) {
    ParamGroup& group = optimizer_.param_groups()[g];
    if (last_epoch == -1) {
      group.options.try_emplace("initial_lr", group.lr());
    } else {
      EMBER_CHECK(group.has("initial_lr"), "param 'initial_lr' is not specified in param_groups[", g,
                  "] when resuming scheduler with last_epoch >= 0.\n"
                  "This typically happens when:\n"
                  "1. You're trying to resume training from a checkpoint but haven't properly loaded the optimizer "
                  "state\n"
                  "2. You're using last_epoch >= 0 for a fresh training run (not recommended)");
    }
    base_lrs_.push_back(group.get("initial_lr"));
  }
}

LRScheduler::LRScheduler(Optimizer& optimizer, Composite) : optimizer_(optimizer), last_epoch_(0) {}

void LRScheduler::initial_step() {
  step_count_ = 0;
  initial_ = true;
  step();
  initial_ = false;
}

void LRScheduler::warn_if_optimizer_not_stepped() const {
  // PyTorch's check: the first step after construction should follow an optimizer step.
  if (step_count_ == 1 && !optimizer_.has_stepped()) {
    warn(
        "Detected call of `lr_scheduler.step()` before `optimizer.step()`. In PyTorch 1.1.0 and later, you should "
        "call them in the opposite order: `optimizer.step()` before `lr_scheduler.step()`.  Failure to do this will "
        "result in PyTorch skipping the first value of the learning rate schedule. See more details at "
        "https://pytorch.org/docs/stable/optim.html#how-to-adjust-learning-rate");
  }
}

void LRScheduler::step() {
  warn_if_optimizer_not_stepped();
  ++step_count_;
  update_lr(std::nullopt);
}

void LRScheduler::step(double epoch) {
  warn_if_optimizer_not_stepped();
  ++step_count_;
  warn(kEpochDeprecationWarning);
  update_lr(epoch);
}

void LRScheduler::update_lr(std::optional<double> epoch) {
  std::vector<double> lrs;
  if (!epoch) {
    ++last_epoch_;
    lrs = compute_lr();
  } else {
    EMBER_CHECK(*epoch == std::floor(*epoch), name(),
                ".step(epoch) takes a whole epoch (only CosineAnnealingWarmRestarts takes a fraction), got ",
                python_float(*epoch));
    last_epoch_ = static_cast<int64_t>(*epoch);
    std::optional<std::vector<double>> closed = closed_form_lr();
    lrs = closed ? std::move(*closed) : compute_lr();
  }
  auto& groups = optimizer_.param_groups();
  for (size_t g = 0; g < groups.size(); ++g) groups[g].set_lr(lrs[g]);
  last_lr_ = group_lrs();
}

std::vector<double> LRScheduler::group_lrs() const {
  std::vector<double> lrs;
  for (const ParamGroup& group : optimizer_.param_groups()) lrs.push_back(group.lr());
  return lrs;
}

SchedulerStateDict LRScheduler::state_dict() const {
  SchedulerStateDict dict;
  for (const auto& [name, value] : const_hyper_parameters()) dict[name] = *value;
  put_list(dict, "base_lrs", base_lrs_);
  dict["last_epoch"] = static_cast<double>(last_epoch_);
  dict["_step_count"] = static_cast<double>(step_count_);
  dict["_is_initial"] = 0;
  dict["_get_lr_called_within_step"] = 0;
  put_list(dict, "_last_lr", last_lr_);
  save_extra(dict);
  return dict;
}

void LRScheduler::load_state_dict(const SchedulerStateDict& dict) {
  last_epoch_ = static_cast<int64_t>(state_number(dict, "last_epoch"));
  step_count_ = static_cast<int64_t>(state_number(dict, "_step_count"));
  base_lrs_ = get_list(dict, "base_lrs", base_lrs_.size());
  // Checkpoints of ember before 0.2 named the last rates "last_lr.<g>".
  last_lr_ = get_list(dict, dict.count("_last_lr.0") || last_lr_.empty() ? "_last_lr" : "last_lr", last_lr_.size());
  for (auto& [name, value] : hyper_parameters()) *value = state_number(dict, name);
  load_extra(dict);
}

std::vector<double> PerGroup::per_group(const char* name, size_t num_groups) const {
  if (!is_list) return std::vector<double>(num_groups, values[0]);
  EMBER_CHECK(values.size() == num_groups, name, " must have the same length as optimizer.param_groups. ", name,
              " has ", values.size(), " values, param_groups has ", num_groups, ".");
  return values;
}

namespace scheduler_state {

const char* const kEpochDeprecationWarning =
    "The epoch parameter in `scheduler.step()` was not necessary and is being deprecated where possible. Please use "
    "`scheduler.step()` to step the scheduler. During the deprecation, if epoch is different from None, the closed "
    "form is used instead of the new chainable form, where available. Please open an issue if you are unable to "
    "replicate your use case: https://github.com/pytorch/pytorch/issues/new/choose.";

double state_number(const SchedulerStateDict& dict, const std::string& key) {
  auto it = dict.find(key);
  EMBER_CHECK(it != dict.end(), "scheduler state dict is missing '", key, "'");
  return it->second;
}

void put_list(SchedulerStateDict& dict, const std::string& key, const std::vector<double>& values) {
  for (size_t i = 0; i < values.size(); ++i) dict[key + "." + std::to_string(i)] = values[i];
}

std::vector<double> get_list(const SchedulerStateDict& dict, const std::string& key, size_t size) {
  std::vector<double> values;
  for (size_t i = 0; i < size; ++i) values.push_back(state_number(dict, key + "." + std::to_string(i)));
  return values;
}

SchedulerStateDict sub_dict(const SchedulerStateDict& dict, const std::string& prefix) {
  SchedulerStateDict out;
  for (auto it = dict.lower_bound(prefix); it != dict.end() && it->first.starts_with(prefix); ++it)
    out[it->first.substr(prefix.size())] = it->second;
  return out;
}

int64_t choice_index(const SchedulerStateDict& dict, const std::string& key, size_t num_choices) {
  const double value = state_number(dict, key);
  EMBER_CHECK(value >= 0 && value < static_cast<double>(num_choices) && value == std::floor(value),
              "scheduler state dict: '", key, "' must be a choice index below ", num_choices, ", got ", value);
  return static_cast<int64_t>(value);
}

}  // namespace scheduler_state

// ---- StepLR ----

StepLR::StepLR(Optimizer& optimizer, int64_t step_size, double gamma, int64_t last_epoch)
    : LRScheduler(optimizer, last_epoch), step_size_(static_cast<double>(step_size)), gamma_(gamma) {
  EMBER_CHECK(step_size > 0, "StepLR step_size must be positive, got ", step_size);
  initial_step();
}

std::vector<double> StepLR::compute_lr() {
  std::vector<double> lrs;
  const auto step_size = static_cast<int64_t>(step_size_);
  for (const auto& group : optimizer_.param_groups()) {
    bool decay = last_epoch_ != 0 && python_mod(last_epoch_, step_size) == 0;
    lrs.push_back(decay ? group.lr() * gamma_ : group.lr());
  }
  return lrs;
}

std::optional<std::vector<double>> StepLR::closed_form_lr() const {
  const auto decays = static_cast<double>(python_floordiv(last_epoch_, static_cast<int64_t>(step_size_)));
  std::vector<double> lrs;
  for (double base_lr : base_lrs_) lrs.push_back(base_lr * std::pow(gamma_, decays));
  return lrs;
}

std::map<std::string, double*> StepLR::hyper_parameters() { return {{"step_size", &step_size_}, {"gamma", &gamma_}}; }

// ---- CosineAnnealingLR ----

CosineAnnealingLR::CosineAnnealingLR(Optimizer& optimizer, int64_t T_max, double eta_min, int64_t last_epoch)
    : LRScheduler(optimizer, last_epoch), T_max_(static_cast<double>(T_max)), eta_min_(eta_min) {
  EMBER_CHECK(T_max > 0, "CosineAnnealingLR T_max must be positive, got ", T_max);
  initial_step();
}

std::vector<double> CosineAnnealingLR::compute_lr() {
  constexpr double pi = std::numbers::pi;
  const auto T_max = static_cast<int64_t>(T_max_);
  const auto& groups = optimizer_.param_groups();
  std::vector<double> lrs;
  for (size_t g = 0; g < groups.size(); ++g) {
    const double lr = groups[g].lr(), base_lr = base_lrs_[g];
    const auto epoch = static_cast<double>(last_epoch_);
    if (initial_) {
      lrs.push_back(lr);
    } else if (step_count_ == 1 && last_epoch_ > 0) {
      lrs.push_back(eta_min_ + (base_lr - eta_min_) * (1 + std::cos(epoch * pi / T_max_)) / 2);
    } else if (python_mod(last_epoch_ - 1 - T_max, 2 * T_max) == 0) {
      lrs.push_back(lr + (base_lr - eta_min_) * (1 - std::cos(pi / T_max_)) / 2);
    } else {
      lrs.push_back((1 + std::cos(pi * epoch / T_max_)) / (1 + std::cos(pi * (epoch - 1) / T_max_)) * (lr - eta_min_) +
                    eta_min_);
    }
  }
  return lrs;
}

std::optional<std::vector<double>> CosineAnnealingLR::closed_form_lr() const {
  std::vector<double> lrs;
  const auto epoch = static_cast<double>(last_epoch_);
  for (double base_lr : base_lrs_)
    lrs.push_back(eta_min_ + (base_lr - eta_min_) * (1 + std::cos(std::numbers::pi * epoch / T_max_)) / 2);
  return lrs;
}

std::map<std::string, double*> CosineAnnealingLR::hyper_parameters() {
  return {{"T_max", &T_max_}, {"eta_min", &eta_min_}};
}

// ---- LinearLR ----

LinearLR::LinearLR(Optimizer& optimizer, double start_factor, double end_factor, int64_t total_iters,
                   int64_t last_epoch)
    : LRScheduler(optimizer, last_epoch),
      start_factor_(start_factor),
      end_factor_(end_factor),
      total_iters_(static_cast<double>(total_iters)) {
  EMBER_CHECK(start_factor > 0 && start_factor <= 1,
              "Starting multiplicative factor expected to be greater than 0 and less or equal to 1.");
  EMBER_CHECK(end_factor >= 0 && end_factor <= 1, "Ending multiplicative factor expected to be between 0 and 1.");
  initial_step();
}

std::vector<double> LinearLR::compute_lr() {
  std::vector<double> lrs;
  const auto epoch = static_cast<double>(last_epoch_);
  for (const auto& group : optimizer_.param_groups()) {
    if (last_epoch_ == 0) {
      lrs.push_back(group.lr() * start_factor_);
    } else if (initial_ || epoch > total_iters_) {
      lrs.push_back(group.lr());
    } else {
      lrs.push_back(group.lr() * (1.0 + (end_factor_ - start_factor_) / (total_iters_ * start_factor_ +
                                                                         (epoch - 1) * (end_factor_ - start_factor_))));
    }
  }
  return lrs;
}

std::optional<std::vector<double>> LinearLR::closed_form_lr() const {
  std::vector<double> lrs;
  const double progress = std::min(total_iters_, static_cast<double>(last_epoch_));
  for (double base_lr : base_lrs_)
    lrs.push_back(base_lr * (start_factor_ + (end_factor_ - start_factor_) * progress / total_iters_));
  return lrs;
}

std::map<std::string, double*> LinearLR::hyper_parameters() {
  return {{"start_factor", &start_factor_}, {"end_factor", &end_factor_}, {"total_iters", &total_iters_}};
}

// ---- OneCycleLR ----

OneCycleLR::OneCycleLR(Optimizer& optimizer, double max_lr, OneCycleLROptions options)
    : OneCycleLR(optimizer, std::vector<double>(optimizer.param_groups().size(), max_lr), std::move(options)) {}

namespace {

int64_t one_cycle_total_steps(const OneCycleLROptions& o) {
  if (o.total_steps) {
    EMBER_CHECK(*o.total_steps > 0, "Expected positive integer total_steps, but got ", *o.total_steps);
    return *o.total_steps;
  }
  if (o.epochs && o.steps_per_epoch) {
    EMBER_CHECK(*o.epochs > 0, "Expected positive integer epochs, but got ", *o.epochs);
    EMBER_CHECK(*o.steps_per_epoch > 0, "Expected positive integer steps_per_epoch, but got ", *o.steps_per_epoch);
    return *o.epochs * *o.steps_per_epoch;
  }
  detail::fail("You must define either total_steps OR (epochs AND steps_per_epoch)");
}

/// Checks every argument, then writes the per-group values the schedule reads ("initial_lr",
/// "max_lr", "min_lr", momenta) — before the base constructor, which would otherwise record the
/// group's current lr as "initial_lr". Nothing is written when a check fails.
Optimizer& prepare_one_cycle(Optimizer& optimizer, const std::vector<double>& max_lr, const OneCycleLROptions& o) {
  one_cycle_total_steps(o);
  EMBER_CHECK(o.pct_start >= 0 && o.pct_start <= 1, "Expected float between 0 and 1 pct_start, but got ",
              python_float(o.pct_start));
  EMBER_CHECK(o.anneal_strategy == "cos" || o.anneal_strategy == "linear",
              "anneal_strategy must be one of 'cos' or 'linear', instead got ", o.anneal_strategy);
  auto& groups = optimizer.param_groups();
  EMBER_CHECK(max_lr.size() == groups.size(), "expected ", groups.size(), " values for max_lr, got ", max_lr.size());
  const bool use_beta1 = optimizer.defaults().count("beta1") != 0;
  EMBER_CHECK(!o.cycle_momentum || use_beta1 || optimizer.defaults().count("momentum"),
              "optimizer must support momentum or beta1 with `cycle_momentum` option enabled");
  if (o.last_epoch != -1) return optimizer;
  for (size_t g = 0; g < groups.size(); ++g) {
    Options& options = groups[g].options;
    options["initial_lr"] = max_lr[g] / o.div_factor;
    options["max_lr"] = max_lr[g];
    options["min_lr"] = options["initial_lr"] / o.final_div_factor;
    if (o.cycle_momentum) {
      options[use_beta1 ? "beta1" : "momentum"] = o.max_momentum;
      options["max_momentum"] = o.max_momentum;
      options["base_momentum"] = o.base_momentum;
    }
  }
  return optimizer;
}

}  // namespace

OneCycleLR::OneCycleLR(Optimizer& optimizer, std::vector<double> max_lr, OneCycleLROptions o)
    : LRScheduler(prepare_one_cycle(optimizer, max_lr, o), o.last_epoch),
      total_steps_(static_cast<double>(one_cycle_total_steps(o))),
      cycle_momentum_(o.cycle_momentum ? 1.0 : 0.0),
      use_beta1_(optimizer.defaults().count("beta1") ? 1.0 : 0.0),
      anneal_linear_(o.anneal_strategy == "linear" ? 1.0 : 0.0) {
  const double total = total_steps_;
  if (o.three_phase) {
    phases_ = {{o.pct_start * total - 1, "initial_lr", "max_lr", "max_momentum", "base_momentum"},
               {2 * o.pct_start * total - 2, "max_lr", "initial_lr", "base_momentum", "max_momentum"},
               {total - 1, "initial_lr", "min_lr", "max_momentum", "max_momentum"}};
  } else {
    phases_ = {{o.pct_start * total - 1, "initial_lr", "max_lr", "max_momentum", "base_momentum"},
               {total - 1, "max_lr", "min_lr", "base_momentum", "max_momentum"}};
  }
  initial_step();
}

double OneCycleLR::anneal(double start, double end, double pct) const {
  if (anneal_linear_ != 0) return (end - start) * pct + start;
  double cos_out = std::cos(std::numbers::pi * pct) + 1;
  return end + (start - end) / 2.0 * cos_out;
}

std::vector<double> OneCycleLR::compute_lr() {
  const auto step_num = static_cast<double>(last_epoch_);
  EMBER_CHECK(step_num <= total_steps_, "Tried to step ", last_epoch_,
              " times. The specified number of total steps is ", static_cast<int64_t>(total_steps_));
  std::vector<double> lrs;
  for (auto& group : optimizer_.param_groups()) {
    double start_step = 0.0, lr = 0.0, momentum = 0.0;
    for (size_t i = 0; i < phases_.size(); ++i) {
      const Phase& phase = phases_[i];
      if (step_num <= phase.end_step || i + 1 == phases_.size()) {
        double pct = (step_num - start_step) / (phase.end_step - start_step);
        lr = anneal(group.get(phase.start_lr), group.get(phase.end_lr), pct);
        if (cycle_momentum_ != 0)
          momentum = anneal(group.get(phase.start_momentum), group.get(phase.end_momentum), pct);
        break;
      }
      start_step = phase.end_step;
    }
    lrs.push_back(lr);
    if (cycle_momentum_ != 0) group.options[use_beta1_ != 0 ? "beta1" : "momentum"] = momentum;
  }
  return lrs;
}

std::map<std::string, double*> OneCycleLR::hyper_parameters() {
  return {{"total_steps", &total_steps_},
          {"cycle_momentum", &cycle_momentum_},
          {"use_beta1", &use_beta1_},
          {"_anneal_func_type", &anneal_linear_}};  // PyTorch's key: 0 "cos", 1 "linear"
}

}  // namespace ember::optim
