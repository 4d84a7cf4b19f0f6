#include "ember/amp/grad_scaler.h"

#include <cmath>
#include <limits>
#include <utility>

#include "core/check.h"
#include "ember/autograd.h"
#include "ember/factories.h"
#include "ember/ops.h"
#include "ember/optim/optimizer.h"
#include "ember/warning.h"

namespace ember::amp {

namespace {

constexpr int64_t kMaxGrowthInterval = std::numeric_limits<int32_t>::max();

void check_growth_interval(int64_t interval) {
  EMBER_CHECK(interval >= 1 && interval <= kMaxGrowthInterval,
              "The growth interval must be between 1 and 2147483647 (the count of clean steps is an int32 "
              "tensor), got ",
              interval);
}

/// Tensors grouped by device, in the order the devices first appear.
struct DeviceGroup {
  Device device;
  std::vector<Tensor> tensors;
};

void add_to_group(std::vector<DeviceGroup>& groups, const Tensor& t) {
  for (DeviceGroup& group : groups) {
    if (group.device == t.device()) {
      group.tensors.push_back(t);
      return;
    }
  }
  groups.push_back({t.device(), {t}});
}

/// A state-dict entry that must be a whole number in [lo, hi]: casting anything else to an
/// integer is undefined behaviour, and a fractional count means the file is not a scaler's.
int64_t whole_number(const std::map<std::string, double>& dict, const std::string& key, double lo, double hi) {
  auto it = dict.find(key);
  EMBER_CHECK(it != dict.end(), "GradScaler state dict is missing '", key, "'");
  const double value = it->second;
  EMBER_CHECK(value == std::floor(value) && value >= lo && value <= hi, "GradScaler state dict entry '", key,
              "' must be a whole number in [", static_cast<int64_t>(lo), ", ", static_cast<int64_t>(hi), "], got ",
              optim::python_float(value));
  return static_cast<int64_t>(value);
}

}  // namespace

GradScaler::GradScaler(const GradScalerOptions& options)
    : enabled_(options.enabled),
      init_scale_(options.init_scale),
      growth_factor_(options.growth_factor),
      backoff_factor_(options.backoff_factor),
      growth_interval_(options.growth_interval) {
  if (options.device.is_cuda() && enabled_ && !cuda::is_available()) {
    warn("ember::amp::GradScaler is enabled, but CUDA is not available.  Disabling.");
    enabled_ = false;
  }
  if (!enabled_) return;
  // The negated forms also reject NaN, which PyTorch's `<=` and `>=` let through.
  EMBER_CHECK(growth_factor_ > 1.0, "The growth factor must be > 1.0, got ", optim::python_float(growth_factor_));
  EMBER_CHECK(backoff_factor_ < 1.0, "The backoff factor must be < 1.0, got ", optim::python_float(backoff_factor_));
  check_growth_interval(growth_interval_);
}

void GradScaler::set_growth_interval(int64_t interval) {
  check_growth_interval(interval);
  growth_interval_ = interval;
}

void GradScaler::check_initialized(const char* caller) const {
  EMBER_CHECK(scale_.defined() && growth_tracker_.defined(), "Attempted ", caller,
              " but _scale is None.  This may indicate your script did not use scaler.scale(loss or outputs) "
              "earlier in the iteration.");
}

void GradScaler::lazy_init(Device device) {
  if (scale_.defined()) return;
  scale_ = full({}, init_scale_, TensorOptions().dtype(kFloat32).device(device));
  growth_tracker_ = full({}, init_growth_tracker_, TensorOptions().dtype(kInt32).device(device));
}

Tensor GradScaler::scale_on(Device device, bool copy) const {
  // Without waiting where that is safe: a copy to a device is ordered before the kernels that
  // read it, but one to the host may still be running when a CPU kernel reads it.
  return scale_.to(device, /*non_blocking=*/!device.is_cpu(), copy);
}

Tensor GradScaler::scale(const Tensor& outputs) {
  if (!enabled_) return outputs;
  EMBER_CHECK(outputs.defined(), "GradScaler::scale: outputs is an undefined tensor");
  lazy_init(outputs.device());
  return outputs * scale_on(outputs.device(), /*copy=*/false);
}

std::vector<Tensor> GradScaler::scale(const std::vector<Tensor>& outputs) {
  if (!enabled_) return outputs;
  std::vector<Tensor> scaled;
  scaled.reserve(outputs.size());
  // As PyTorch's per-device replicas: one copy of the scale per device, which also keeps these
  // products' backward passes independent of the in-place writes of a later update().
  std::vector<std::pair<Device, Tensor>> copies;
  for (const Tensor& output : outputs) {
    EMBER_CHECK(output.defined(), "GradScaler::scale: outputs holds an undefined tensor");
    lazy_init(output.device());
    Tensor factor;
    for (const auto& [device, copy] : copies) {
      if (device == output.device()) factor = copy;
    }
    if (!factor.defined()) {
      factor = scale_on(output.device(), /*copy=*/true);
      copies.emplace_back(output.device(), factor);
    }
    scaled.push_back(output * factor);
  }
  return scaled;
}

void GradScaler::unscale_(optim::Optimizer& optimizer) {
  if (!enabled_) return;
  check_initialized("unscale_");
  OptimizerProgress& progress = progress_[&optimizer];
  EMBER_CHECK(progress.stage != Stage::kUnscaled,
              "unscale_() has already been called on this optimizer since the last update().");
  EMBER_CHECK(progress.stage != Stage::kStepped, "unscale_() is being called after step().");

  // Every gradient is checked before any is changed, so that an error leaves them all scaled.
  std::vector<DeviceGroup> groups;
  for (const optim::ParamGroup& group : optimizer.param_groups()) {
    for (const Tensor& param : group.params) {
      Tensor grad = param.grad();
      if (!grad.defined()) continue;
      EMBER_CHECK(grad.dtype() != kFloat16, "Attempting to unscale FP16 gradients.");
      add_to_group(groups, grad);
    }
  }

  NoGradGuard no_grad;
  // The reciprocal in float64, rounded once to float32, as PyTorch does (a float32 division can
  // be inexact under some compilers' flags); MPS has no float64.
  const Tensor inv_scale = scale_.device().is_mps() ? (1.0 / scale_) : (1.0 / scale_.to(kFloat64)).to(kFloat32);
  Tensor found_inf;
  for (DeviceGroup& group : groups) {
    // Checked before unscaling, as PyTorch's kernel does: a finite value multiplied by an inverse
    // scale above 1 (a scale below 1) could overflow without being a bad gradient.
    Tensor bad = logical_not(all_finite(group.tensors)).to(scale_.device(), kFloat32);
    found_inf = found_inf.defined() ? found_inf + bad : bad;
    const Tensor factor = inv_scale.to(group.device);
    for (Tensor& grad : group.tensors) grad.mul_(factor);
  }
  progress.found_inf = found_inf;
  progress.stage = Stage::kUnscaled;
}

bool GradScaler::step(optim::Optimizer& optimizer) {
  if (!enabled_) {
    optimizer.step();
    return true;
  }
  check_initialized("step");
  OptimizerProgress& progress = progress_[&optimizer];  // a std::map entry: unscale_() keeps it in place
  EMBER_CHECK(progress.stage != Stage::kStepped, "step() has already been called since the last update().");
  if (progress.stage == Stage::kReady) unscale_(optimizer);
  EMBER_CHECK(progress.found_inf.defined(), "No inf checks were recorded for this optimizer.");
  // The host decides, so that a skipped step leaves the optimizer untouched: step(skip) would keep
  // the parameters but still advance what the optimizer counts on the host.
  const bool take = progress.found_inf.item<float>() == 0.0f;
  if (take) optimizer.step();
  progress.stage = Stage::kStepped;
  return take;
}

void GradScaler::update(std::optional<double> new_scale) {
  if (!enabled_) return;
  check_initialized("update");
  NoGradGuard no_grad;
  if (new_scale) {
    scale_.fill_(*new_scale);
  } else {
    Tensor found_inf;
    for (const auto& [optimizer, progress] : progress_) {
      if (!progress.found_inf.defined()) continue;
      found_inf = found_inf.defined() ? found_inf + progress.found_inf : progress.found_inf;
    }
    EMBER_CHECK(found_inf.defined(), "No inf checks were recorded prior to update.");

    // PyTorch's _amp_update_scale_, on the scale's device without a host read: the products are
    // taken in float64 and rounded to float32 as its kernels do (float * double in C++).
    const Tensor backoff = found_inf != 0;
    const Tensor scale64 = scale_.to(kFloat64);
    const Tensor backed_off = (scale64 * backoff_factor_).to(kFloat32);
    const Tensor grown = (scale64 * growth_factor_).to(kFloat32);
    const Tensor successful = growth_tracker_ + 1;
    const Tensor at_interval = successful == Scalar(growth_interval_);
    // A growth that overflows float32 is dropped, but the count restarts all the same.
    const Tensor grow = logical_and(at_interval, isfinite(grown));
    const Tensor scale_after = where(backoff, backed_off, where(grow, grown, scale_));
    const Tensor tracker_after =
        where(logical_or(backoff, at_interval), zeros_like(growth_tracker_), successful.to(kInt32));
    scale_.copy_(scale_after);
    growth_tracker_.copy_(tracker_after);
  }
  progress_.clear();
}

double GradScaler::get_scale() const {
  if (!enabled_) return 1.0;
  return scale_.defined() ? scale_.item<double>() : init_scale_;
}

int64_t GradScaler::get_growth_tracker() const {
  if (!enabled_) return 0;
  return growth_tracker_.defined() ? growth_tracker_.item<int64_t>() : init_growth_tracker_;
}

std::map<std::string, double> GradScaler::state_dict() const {
  if (!enabled_) return {};
  return {{"scale", get_scale()},
          {"growth_factor", growth_factor_},
          {"backoff_factor", backoff_factor_},
          {"growth_interval", static_cast<double>(growth_interval_)},
          {"_growth_tracker", static_cast<double>(get_growth_tracker())}};
}

void GradScaler::load_state_dict(const std::map<std::string, double>& dict) {
  if (!enabled_) return;
  EMBER_CHECK(!dict.empty(),
              "The source state dict is empty, possibly because it was saved from a disabled instance of "
              "GradScaler.");
  auto number = [&](const std::string& key) {
    auto it = dict.find(key);
    EMBER_CHECK(it != dict.end(), "GradScaler state dict is missing '", key, "'");
    return it->second;
  };
  // Everything is read before anything changes, so that a bad dictionary leaves the scaler as it was.
  const double scale = number("scale");
  const double growth_factor = number("growth_factor");
  const double backoff_factor = number("backoff_factor");
  const int64_t growth_interval = whole_number(dict, "growth_interval", 1, static_cast<double>(kMaxGrowthInterval));
  const int64_t growth_tracker = whole_number(dict, "_growth_tracker", 0, static_cast<double>(kMaxGrowthInterval));

  init_scale_ = scale;
  growth_factor_ = growth_factor;
  backoff_factor_ = backoff_factor;
  growth_interval_ = growth_interval;
  init_growth_tracker_ = growth_tracker;
  NoGradGuard no_grad;
  if (scale_.defined()) scale_.fill_(scale);
  if (growth_tracker_.defined()) growth_tracker_.fill_(growth_tracker);
}

}  // namespace ember::amp
