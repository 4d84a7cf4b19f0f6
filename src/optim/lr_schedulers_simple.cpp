// LambdaLR, MultiplicativeLR, MultiStepLR, ConstantLR, ExponentialLR and PolynomialLR. Each
// compute_lr() and closed_form_lr() follows PyTorch's get_lr() and _get_closed_form_lr()
// expression for expression, since the chainable forms round differently from the closed ones.
#include <algorithm>
#include <cmath>
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

/// One lambda per group: `lambdas` as given (one per group) or the single one repeated.
std::vector<LRLambda> lambdas_per_group(const Optimizer& optimizer, std::vector<LRLambda> lambdas, bool is_list) {
  const size_t groups = optimizer.param_groups().size();
  if (!is_list) {
    lambdas = std::vector<LRLambda>(groups, lambdas.at(0));
  } else {
    EMBER_CHECK(lambdas.size() == groups, "Expected ", groups, " lr_lambdas, but got ", lambdas.size());
  }
  // An empty std::function is C++'s None.
  for (const LRLambda& fn : lambdas) EMBER_CHECK(fn != nullptr, "lr_lambda should be a function, but got NoneType");
  return lambdas;
}

/// PyTorch checks the lambdas before the base constructor records "initial_lr" in the groups.
Optimizer& checked_lambdas(Optimizer& optimizer, const std::vector<LRLambda>& lambdas, bool is_list) {
  lambdas_per_group(optimizer, lambdas, is_list);
  return optimizer;
}

/// PyTorch checks the factor before the base constructor touches the groups.
Optimizer& checked_constant_factor(Optimizer& optimizer, double factor) {
  EMBER_CHECK(factor <= 1.0 && factor >= 0, "Constant multiplicative factor expected to be between 0 and 1.");
  return optimizer;
}

}  // namespace

// ---- LambdaLR ----

LambdaLR::LambdaLR(Optimizer& optimizer, LRLambda lr_lambda, int64_t last_epoch)
    : LRScheduler(checked_lambdas(optimizer, {lr_lambda}, false), last_epoch),
      lr_lambdas_(lambdas_per_group(optimizer, {std::move(lr_lambda)}, false)) {
  initial_step();
}

LambdaLR::LambdaLR(Optimizer& optimizer, std::vector<LRLambda> lr_lambdas, int64_t last_epoch)
    : LRScheduler(checked_lambdas(optimizer, lr_lambdas, true), last_epoch),
      lr_lambdas_(lambdas_per_group(optimizer, std::move(lr_lambdas), true)) {
  initial_step();
}

std::vector<double> LambdaLR::compute_lr() {
  std::vector<double> lrs;
  for (size_t g = 0; g < base_lrs_.size(); ++g) lrs.push_back(base_lrs_[g] * lr_lambdas_[g](last_epoch_));
  return lrs;
}

// ---- MultiplicativeLR ----

MultiplicativeLR::MultiplicativeLR(Optimizer& optimizer, LRLambda lr_lambda, int64_t last_epoch)
    : LRScheduler(checked_lambdas(optimizer, {lr_lambda}, false), last_epoch),
      lr_lambdas_(lambdas_per_group(optimizer, {std::move(lr_lambda)}, false)) {
  initial_step();
}

MultiplicativeLR::MultiplicativeLR(Optimizer& optimizer, std::vector<LRLambda> lr_lambdas, int64_t last_epoch)
    : LRScheduler(checked_lambdas(optimizer, lr_lambdas, true), last_epoch),
      lr_lambdas_(lambdas_per_group(optimizer, std::move(lr_lambdas), true)) {
  initial_step();
}

std::vector<double> MultiplicativeLR::compute_lr() {
  if (initial_) return group_lrs();
  std::vector<double> lrs;
  const auto& groups = optimizer_.param_groups();
  for (size_t g = 0; g < groups.size(); ++g) lrs.push_back(groups[g].lr() * lr_lambdas_[g](last_epoch_));
  return lrs;
}

// ---- MultiStepLR ----

MultiStepLR::MultiStepLR(Optimizer& optimizer, std::vector<int64_t> milestones, double gamma, int64_t last_epoch)
    : LRScheduler(optimizer, last_epoch), gamma_(gamma) {
  for (int64_t milestone : milestones) ++milestones_[milestone];
  initial_step();
}

std::vector<double> MultiStepLR::compute_lr() {
  auto it = milestones_.find(last_epoch_);
  if (it == milestones_.end()) return group_lrs();
  std::vector<double> lrs;
  for (const ParamGroup& group : optimizer_.param_groups())
    lrs.push_back(group.lr() * std::pow(gamma_, static_cast<double>(it->second)));
  return lrs;
}

std::optional<std::vector<double>> MultiStepLR::closed_form_lr() const {
  // bisect_right over the sorted milestones, repeats included: how many are <= last_epoch.
  int64_t passed = 0;
  for (const auto& [milestone, count] : milestones_)
    if (milestone <= last_epoch_) passed += count;
  std::vector<double> lrs;
  for (double base_lr : base_lrs_) lrs.push_back(base_lr * std::pow(gamma_, static_cast<double>(passed)));
  return lrs;
}

std::map<std::string, double*> MultiStepLR::hyper_parameters() { return {{"gamma", &gamma_}}; }

void MultiStepLR::save_extra(SchedulerStateDict& dict) const {
  for (const auto& [milestone, count] : milestones_)
    dict["milestones." + std::to_string(milestone)] = static_cast<double>(count);
}

void MultiStepLR::load_extra(const SchedulerStateDict& dict) {
  milestones_.clear();
  for (const auto& [key, count] : scheduler_state::sub_dict(dict, "milestones."))
    milestones_[std::stoll(key)] = static_cast<int64_t>(count);
}

// ---- ConstantLR ----

ConstantLR::ConstantLR(Optimizer& optimizer, double factor, int64_t total_iters, int64_t last_epoch)
    : LRScheduler(checked_constant_factor(optimizer, factor), last_epoch),
      factor_(factor),
      total_iters_(static_cast<double>(total_iters)) {
  initial_step();
}

std::vector<double> ConstantLR::compute_lr() {
  std::vector<double> lrs;
  for (const ParamGroup& group : optimizer_.param_groups()) {
    if (last_epoch_ == 0) {
      lrs.push_back(group.lr() * factor_);
    } else if (static_cast<double>(last_epoch_) != total_iters_) {
      lrs.push_back(group.lr());
    } else {
      lrs.push_back(group.lr() * (1.0 / factor_));
    }
  }
  return lrs;
}

std::optional<std::vector<double>> ConstantLR::closed_form_lr() const {
  const double after = static_cast<double>(last_epoch_) >= total_iters_ ? 1.0 - factor_ : 0.0;
  std::vector<double> lrs;
  for (double base_lr : base_lrs_) lrs.push_back(base_lr * (factor_ + after));
  return lrs;
}

std::map<std::string, double*> ConstantLR::hyper_parameters() {
  return {{"factor", &factor_}, {"total_iters", &total_iters_}};
}

// ---- ExponentialLR ----

ExponentialLR::ExponentialLR(Optimizer& optimizer, double gamma, int64_t last_epoch)
    : LRScheduler(optimizer, last_epoch), gamma_(gamma) {
  initial_step();
}

std::vector<double> ExponentialLR::compute_lr() {
  if (initial_) return group_lrs();
  std::vector<double> lrs;
  for (const ParamGroup& group : optimizer_.param_groups()) lrs.push_back(group.lr() * gamma_);
  return lrs;
}

std::optional<std::vector<double>> ExponentialLR::closed_form_lr() const {
  std::vector<double> lrs;
  for (double base_lr : base_lrs_) lrs.push_back(base_lr * std::pow(gamma_, static_cast<double>(last_epoch_)));
  return lrs;
}

std::map<std::string, double*> ExponentialLR::hyper_parameters() { return {{"gamma", &gamma_}}; }

// ---- PolynomialLR ----

PolynomialLR::PolynomialLR(Optimizer& optimizer, int64_t total_iters, double power, int64_t last_epoch)
    : LRScheduler(optimizer, last_epoch), total_iters_(static_cast<double>(total_iters)), power_(power) {
  initial_step();
}

std::vector<double> PolynomialLR::compute_lr() {
  const auto epoch = static_cast<double>(last_epoch_);
  if (initial_ || epoch > total_iters_) return group_lrs();
  const double decay_factor = std::pow((1.0 - epoch / total_iters_) / (1.0 - (epoch - 1) / total_iters_), power_);
  std::vector<double> lrs;
  for (const ParamGroup& group : optimizer_.param_groups()) lrs.push_back(group.lr() * decay_factor);
  return lrs;
}

std::optional<std::vector<double>> PolynomialLR::closed_form_lr() const {
  const double progress = std::min(total_iters_, static_cast<double>(last_epoch_));
  std::vector<double> lrs;
  for (double base_lr : base_lrs_) lrs.push_back(base_lr * std::pow(1.0 - progress / total_iters_, power_));
  return lrs;
}

std::map<std::string, double*> PolynomialLR::hyper_parameters() {
  return {{"total_iters", &total_iters_}, {"power", &power_}};
}

}  // namespace ember::optim
