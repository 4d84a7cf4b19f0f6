// ReduceLROnPlateau, SequentialLR and ChainedScheduler: PyTorch's step logic, messages and
// state dict keys.
#include <algorithm>
#include <cmath>
#include <limits>
#include <string>
#include <utility>
#include <vector>

#include "core/check.h"
#include "ember/optim/lr_scheduler.h"
#include "ember/warning.h"

// PyTorch's schedules are Python arithmetic, which never fuses a*b+c: no FMAs here, whatever
// -march the library is built for (lr_scheduler.cpp gets -ffp-contract=off from CMakeLists.txt).
#if defined(__clang__)
#pragma clang fp contract(off)
#elif defined(__GNUC__)
#pragma GCC optimize("fp-contract=off")
#endif

namespace ember::optim {
namespace {

using scheduler_state::get_list;
using scheduler_state::put_list;
using scheduler_state::state_number;

const char* const kPlateauModes[] = {"min", "max"};
const char* const kThresholdModes[] = {"rel", "abs"};

/// PyTorch's checks on the schedulers a SequentialLR or ChainedScheduler drives.
void check_driven(const char* composite, const std::vector<std::shared_ptr<LRScheduler>>& schedulers,
                  const Optimizer& optimizer) {
  for (size_t i = 0; i < schedulers.size(); ++i) {
    EMBER_CHECK(schedulers[i] != nullptr, composite, " at index ", i, " should have `optimizer` as its attribute.");
    EMBER_CHECK(&schedulers[i]->optimizer() == &optimizer, composite,
                " expects all schedulers to belong to the same optimizer, but got scheduler ", schedulers[i]->name(),
                " at index ", i, " has another optimizer, which is different from the one given.");
  }
}

Optimizer& first_optimizer(const std::vector<std::shared_ptr<LRScheduler>>& schedulers, Optimizer* optimizer) {
  EMBER_CHECK(!schedulers.empty(),
              "ChainedScheduler expects at least one scheduler to be chained, but got no scheduler.");
  if (optimizer) return *optimizer;
  EMBER_CHECK(schedulers[0] != nullptr, "ChainedScheduler at index 0 should have `optimizer` as its attribute.");
  return schedulers[0]->optimizer();
}

std::vector<double> lrs_of(const Optimizer& optimizer) {
  std::vector<double> lrs;
  for (const ParamGroup& group : optimizer.param_groups()) lrs.push_back(group.lr());
  return lrs;
}

void save_driven(SchedulerStateDict& dict, const std::vector<std::shared_ptr<LRScheduler>>& schedulers) {
  for (size_t i = 0; i < schedulers.size(); ++i)
    for (const auto& [key, value] : schedulers[i]->state_dict())
      dict["_schedulers." + std::to_string(i) + "." + key] = value;
}

void load_driven(const SchedulerStateDict& dict, const std::vector<std::shared_ptr<LRScheduler>>& schedulers) {
  for (size_t i = 0; i < schedulers.size(); ++i)
    schedulers[i]->load_state_dict(scheduler_state::sub_dict(dict, "_schedulers." + std::to_string(i) + "."));
}

}  // namespace

// ---- ReduceLROnPlateau ----

ReduceLROnPlateau::ReduceLROnPlateau(Optimizer& optimizer, ReduceLROnPlateauOptions o)
    : optimizer_(optimizer), factor_(o.factor), patience_(o.patience), cooldown_(o.cooldown), eps_(o.eps) {
  EMBER_CHECK(o.factor < 1.0, "Factor should be < 1.0.");
  const size_t groups = optimizer.param_groups().size();
  if (o.min_lr.is_list) {
    EMBER_CHECK(o.min_lr.values.size() == groups, "expected ", groups, " min_lrs, got ", o.min_lr.values.size());
    min_lrs_ = o.min_lr.values;
  } else {
    default_min_lr_ = o.min_lr.values[0];
    min_lrs_.assign(groups, o.min_lr.values[0]);
  }
  last_lr_ = lrs_of(optimizer_);
  int64_t mode = -1, threshold_mode = -1;
  for (int64_t i = 0; i < 2; ++i) {
    if (o.mode == kPlateauModes[i]) mode = i;
    if (o.threshold_mode == kThresholdModes[i]) threshold_mode = i;
  }
  EMBER_CHECK(mode >= 0, "mode ", o.mode, " is unknown!");
  EMBER_CHECK(threshold_mode >= 0, "threshold mode ", o.threshold_mode, " is unknown!");
  init_is_better(mode, o.threshold, threshold_mode);
  best_ = mode_worse_;
  cooldown_counter_ = 0;
  num_bad_epochs_ = 0;
}

void ReduceLROnPlateau::init_is_better(int64_t mode, double threshold, int64_t threshold_mode) {
  mode_worse_ = mode == 0 ? std::numeric_limits<double>::infinity() : -std::numeric_limits<double>::infinity();
  mode_ = mode;
  threshold_ = threshold;
  threshold_mode_ = threshold_mode;
}

bool ReduceLROnPlateau::is_better(double a, double best) const {
  if (mode_ == 0 && threshold_mode_ == 0) return a < best * (1.0 - threshold_);
  if (mode_ == 0) return a < best - threshold_;
  if (threshold_mode_ == 0) return a > best * (threshold_ + 1.0);
  return a > best + threshold_;
}

void ReduceLROnPlateau::step(double metrics) { advance(metrics, last_epoch_ + 1); }

void ReduceLROnPlateau::step(double metrics, int64_t epoch) {
  warn(scheduler_state::kEpochDeprecationWarning);
  advance(metrics, epoch);
}

void ReduceLROnPlateau::advance(double current, int64_t epoch) {
  last_epoch_ = epoch;
  if (is_better(current, best_)) {
    best_ = current;
    num_bad_epochs_ = 0;
  } else {
    num_bad_epochs_ += 1;
  }
  if (in_cooldown()) {
    cooldown_counter_ -= 1;
    num_bad_epochs_ = 0;  // bad epochs in a cooldown do not count
  }
  if (num_bad_epochs_ > patience_) {
    reduce_lr();
    cooldown_counter_ = cooldown_;
    num_bad_epochs_ = 0;
  }
  last_lr_ = lrs_of(optimizer_);
}

void ReduceLROnPlateau::reduce_lr() {
  auto& groups = optimizer_.param_groups();
  if (groups.size() != min_lrs_.size()) {
    EMBER_CHECK(default_min_lr_.has_value(), "The number of param groups in the `optimizer` (", groups.size(),
                ") differs from when `ReduceLROnPlateau` was initialized (", min_lrs_.size(),
                "), usually due to a new param group being added to the optimizer. Please modify the `min_lrs` field "
                "to match the length of the `optimizer` param groups.");
    min_lrs_.assign(groups.size(), *default_min_lr_);
  }
  for (size_t g = 0; g < groups.size(); ++g) {
    const double old_lr = groups[g].lr();
    const double new_lr = std::max(old_lr * factor_, min_lrs_[g]);
    if (old_lr - new_lr > eps_) groups[g].set_lr(new_lr);
  }
}

SchedulerStateDict ReduceLROnPlateau::state_dict() const {
  SchedulerStateDict dict;
  dict["factor"] = factor_;
  if (default_min_lr_) dict["default_min_lr"] = *default_min_lr_;
  put_list(dict, "min_lrs", min_lrs_);
  dict["patience"] = static_cast<double>(patience_);
  dict["cooldown"] = static_cast<double>(cooldown_);
  dict["eps"] = eps_;
  dict["last_epoch"] = static_cast<double>(last_epoch_);
  put_list(dict, "_last_lr", last_lr_);
  dict["mode_worse"] = mode_worse_;
  dict["mode"] = static_cast<double>(mode_);
  dict["threshold"] = threshold_;
  dict["threshold_mode"] = static_cast<double>(threshold_mode_);
  dict["best"] = best_;
  dict["cooldown_counter"] = static_cast<double>(cooldown_counter_);
  dict["num_bad_epochs"] = static_cast<double>(num_bad_epochs_);
  return dict;
}

void ReduceLROnPlateau::load_state_dict(const SchedulerStateDict& dict) {
  factor_ = state_number(dict, "factor");
  default_min_lr_.reset();
  if (auto it = dict.find("default_min_lr"); it != dict.end()) default_min_lr_ = it->second;
  min_lrs_ = get_list(dict, "min_lrs", scheduler_state::sub_dict(dict, "min_lrs.").size());
  patience_ = static_cast<int64_t>(state_number(dict, "patience"));
  cooldown_ = static_cast<int64_t>(state_number(dict, "cooldown"));
  eps_ = state_number(dict, "eps");
  last_epoch_ = static_cast<int64_t>(state_number(dict, "last_epoch"));
  last_lr_ = get_list(dict, "_last_lr", scheduler_state::sub_dict(dict, "_last_lr.").size());
  best_ = state_number(dict, "best");
  cooldown_counter_ = static_cast<int64_t>(state_number(dict, "cooldown_counter"));
  num_bad_epochs_ = static_cast<int64_t>(state_number(dict, "num_bad_epochs"));
  // As PyTorch: mode_worse follows from the mode again.
  init_is_better(scheduler_state::choice_index(dict, "mode", 2), state_number(dict, "threshold"),
                 scheduler_state::choice_index(dict, "threshold_mode", 2));
}

// ---- SequentialLR ----

SequentialLR::SequentialLR(Optimizer& optimizer, std::vector<std::shared_ptr<LRScheduler>> schedulers,
                           std::vector<int64_t> milestones, int64_t last_epoch)
    : LRScheduler(optimizer, Composite{}), schedulers_(std::move(schedulers)), milestones_(std::move(milestones)) {
  EMBER_CHECK(!schedulers_.empty(), "SequentialLR expects at least one scheduler, but got no scheduler.");
  check_driven("SequentialLR", schedulers_, optimizer);
  EMBER_CHECK(milestones_.size() + 1 == schedulers_.size(),
              "Sequential Schedulers expects number of schedulers provided to be one more than the number of "
              "milestone points, but got number of schedulers ",
              schedulers_.size(), " and the number of milestones to be equal to ", milestones_.size());
  last_epoch_ = last_epoch + 1;
  for (ParamGroup& group : optimizer_.param_groups()) group.set_lr(group.get("initial_lr"));
  undo_last_epoch();
  // bisect_right(milestones, 0): the scheduler in charge at epoch 0.
  const auto first = std::upper_bound(milestones_.begin(), milestones_.end(), 0) - milestones_.begin();
  schedulers_[static_cast<size_t>(first)]->initial_step();
  last_lr_ = schedulers_[static_cast<size_t>(first)]->get_last_lr();
}

void SequentialLR::step() {
  ++last_epoch_;
  const auto idx =
      static_cast<size_t>(std::upper_bound(milestones_.begin(), milestones_.end(), last_epoch_) - milestones_.begin());
  LRScheduler& scheduler = *schedulers_[idx];
  if (idx > 0 && milestones_[idx - 1] == last_epoch_) {
    scheduler.update_lr(0.0);  // a scheduler taking over starts at its epoch 0
  } else {
    scheduler.step();
  }
  last_lr_ = scheduler.get_last_lr();
}

void SequentialLR::step(double /*epoch*/) {
  detail::fail("SequentialLR.step() takes 1 positional argument but 2 were given");
}

std::vector<double> SequentialLR::compute_lr() { return group_lrs(); }

void SequentialLR::undo_last_epoch() {
  for (const auto& scheduler : schedulers_) scheduler->undo_last_epoch();
}

SchedulerStateDict SequentialLR::state_dict() const {
  SchedulerStateDict dict;
  std::vector<double> milestones(milestones_.begin(), milestones_.end());
  put_list(dict, "_milestones", milestones);
  dict["last_epoch"] = static_cast<double>(last_epoch_);
  put_list(dict, "_last_lr", last_lr_);
  save_driven(dict, schedulers_);
  return dict;
}

void SequentialLR::load_state_dict(const SchedulerStateDict& dict) {
  const std::vector<double> milestones = get_list(dict, "_milestones", milestones_.size());
  for (size_t i = 0; i < milestones.size(); ++i) milestones_[i] = static_cast<int64_t>(milestones[i]);
  last_epoch_ = static_cast<int64_t>(state_number(dict, "last_epoch"));
  last_lr_ = get_list(dict, "_last_lr", last_lr_.size());
  load_driven(dict, schedulers_);
}

// ---- ChainedScheduler ----

ChainedScheduler::ChainedScheduler(std::vector<std::shared_ptr<LRScheduler>> schedulers, Optimizer* optimizer)
    : LRScheduler(first_optimizer(schedulers, optimizer), Composite{}), schedulers_(std::move(schedulers)) {
  check_driven("ChainedScheduler", schedulers_, optimizer_);
  last_lr_ = lrs_of(schedulers_.back()->optimizer());
}

void ChainedScheduler::step() {
  for (const auto& scheduler : schedulers_) scheduler->step();
  last_lr_ = lrs_of(schedulers_.back()->optimizer());
}

void ChainedScheduler::step(double /*epoch*/) {
  detail::fail("ChainedScheduler.step() takes 1 positional argument but 2 were given");
}

std::vector<double> ChainedScheduler::compute_lr() { return group_lrs(); }

void ChainedScheduler::undo_last_epoch() {
  for (const auto& scheduler : schedulers_) scheduler->undo_last_epoch();
}

SchedulerStateDict ChainedScheduler::state_dict() const {
  SchedulerStateDict dict;
  put_list(dict, "_last_lr", last_lr_);
  save_driven(dict, schedulers_);
  return dict;
}

void ChainedScheduler::load_state_dict(const SchedulerStateDict& dict) {
  last_lr_ = get_list(dict, "_last_lr", last_lr_.size());
  load_driven(dict, schedulers_);
}

}  // namespace ember::optim
