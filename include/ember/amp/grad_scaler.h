#pragma once
/// ember::amp::GradScaler: dynamic loss scaling for float16 training, as torch.amp.GradScaler.
///
/// Float16 gradients of small losses underflow to zero. Multiplying the loss by a large factor
/// before backward() lifts them into float16's range; dividing the gradients by the same factor
/// before the optimizer step gives back the true update. Too large a factor overflows instead, so
/// the scaler watches the gradients: a step whose gradients hold an inf or a NaN is skipped and
/// the factor halves; after `growth_interval` clean steps in a row it doubles.
///
///   amp::GradScaler scaler({.device = kCUDA});
///   for (auto& batch : loader) {
///     optimizer.zero_grad();
///     Tensor loss = loss_fn(model->forward(batch.input), batch.target);
///     scaler.scale(loss).backward();
///     scaler.unscale_(optimizer);        // optional: only to clip or inspect the true gradients
///     scaler.step(optimizer);            // unscales if not yet done; skips on inf/NaN
///     scaler.update();                   // once per iteration, after every optimizer's step
///   }
///
/// The scale and the count of clean steps live as tensors on the device of the first tensor
/// scale() sees, so that unscale_() and update() need not wait for that device (nor do, with the
/// gradients on it too). step() reads one
/// flag on the host, as PyTorch does: an optimizer whose step is skipped is not called at all,
/// so nothing it keeps on the host (Adam's step counts) advances.
#include <cstdint>
#include <map>
#include <optional>
#include <string>
#include <vector>

#include "ember/device.h"
#include "ember/optim/optimizer.h"
#include "ember/tensor.h"

namespace ember::amp {

/// The constructor's arguments, PyTorch's defaults: GradScaler scaler({.device = kCPU, .init_scale = 1024}).
struct GradScalerOptions {
  /// Only the type matters, as PyTorch's device string: the tensors themselves follow the first
  /// output scaled. CUDA, the default as in PyTorch, disables the scaler (with a warning) where no
  /// GPU is usable, so that a script written for a GPU still runs, unscaled, on a CPU.
  Device device = kCUDA;
  /// Large, since a scale that is too large costs a few skipped steps while one that is too small
  /// loses gradients silently.
  double init_scale = 65536.0;
  /// Must be > 1: the scale grows by it after growth_interval clean steps in a row.
  double growth_factor = 2.0;
  /// Must be < 1: the scale shrinks by it after each step with an inf or NaN gradient.
  double backoff_factor = 0.5;
  /// Clean steps in a row before the scale grows; 1 to 2^31 - 1, since the count is an int32 tensor.
  int64_t growth_interval = 2000;
  /// false makes every method a pass-through, so one training loop serves float32 and float16 runs.
  bool enabled = true;
};

class GradScaler {
 public:
  /// Throws ember::Error for a growth_factor <= 1, a backoff_factor >= 1 or a growth_interval
  /// out of range (checked only when enabled, as in PyTorch).
  explicit GradScaler(const GradScalerOptions& options = {});

  // Copies would share the scale tensor and each other's view of the optimizers' progress.
  GradScaler(const GradScaler&) = delete;
  GradScaler& operator=(const GradScaler&) = delete;
  GradScaler(GradScaler&&) = default;
  GradScaler& operator=(GradScaler&&) = default;

  /// `outputs` times the scale, recorded for autograd so that backward() yields scaled gradients.
  /// The product follows PyTorch's type promotion with a 0-dim float32 tensor: a float16 tensor
  /// stays float16, a 0-dim float16 loss becomes float32. Returns `outputs` itself when disabled.
  Tensor scale(const Tensor& outputs);
  /// Each tensor times the scale (several losses backpropagated together).
  std::vector<Tensor> scale(const std::vector<Tensor>& outputs);

  /// Divides the gradients of `optimizer`'s parameters by the scale, in place, and records whether
  /// any of them held an inf or a NaN (without waiting for the device). Call it explicitly only to
  /// work on true gradients before step() (clip_grad_norm_, say); step() calls it otherwise. At most
  /// once per optimizer between update()s, and never after its step(). Float16 gradients are an
  /// error, as in PyTorch: unscaled, they would underflow where scaling was meant to protect them
  /// (keep float32 master parameters instead).
  void unscale_(optim::Optimizer& optimizer);

  /// Unscales (unless unscale_() already did) and calls optimizer.step() when every gradient is
  /// finite. Returns whether the step was taken: false means the optimizer was not called at all,
  /// so parameters and all optimizer state, host and device, are as before. Reads one flag on
  /// the host (waits for the device). When disabled, simply steps and returns true.
  bool step(optim::Optimizer& optimizer);

  /// Ends the iteration. Without `new_scale`: the scale backs off if any optimizer stepped (or
  /// unscaled) since the last update() found an inf or a NaN, and grows after growth_interval clean
  /// iterations; a growth that would overflow float32 is not applied. Computed on the scale's
  /// device without a host read. With `new_scale`: the scale becomes that (the count of clean
  /// steps is kept). Either way every optimizer may be unscaled and stepped again.
  void update(std::optional<double> new_scale = std::nullopt);

  /// The current scale: init_scale until scale() first runs, 1.0 when disabled. Waits for the device.
  double get_scale() const;
  /// Clean iterations since the scale last changed (PyTorch's _get_growth_tracker); 0 when
  /// disabled. Waits for the device.
  int64_t get_growth_tracker() const;
  /// The scale and the clean-step count as the 0-dim float32 and int32 tensors updates write in
  /// place, for reading without a host wait (PyTorch's _get_scale_async); undefined until scale()
  /// first runs.
  const Tensor& scale_tensor() const { return scale_; }
  const Tensor& growth_tracker_tensor() const { return growth_tracker_; }

  double get_growth_factor() const { return growth_factor_; }
  /// Not checked, as in PyTorch: set_growth_factor(1.0) freezes the scale.
  void set_growth_factor(double factor) { growth_factor_ = factor; }
  double get_backoff_factor() const { return backoff_factor_; }
  void set_backoff_factor(double factor) { backoff_factor_ = factor; }
  int64_t get_growth_interval() const { return growth_interval_; }
  /// Checked (1 to 2^31 - 1): the count it is compared with is an int32 tensor.
  void set_growth_interval(int64_t interval);
  bool is_enabled() const { return enabled_; }

  /// PyTorch's keys, so that a checkpoint converts either way: "scale", "growth_factor",
  /// "backoff_factor", "growth_interval", "_growth_tracker". Empty when disabled. Take it after
  /// update(): the flags of an iteration in progress are not saved.
  std::map<std::string, double> state_dict() const;
  /// Restores state_dict()'s values (a no-op when disabled). An empty dictionary is an error: it
  /// comes from a disabled scaler, and loading it would silently restart at init_scale.
  void load_state_dict(const std::map<std::string, double>& dict);

 private:
  enum class Stage { kReady, kUnscaled, kStepped };
  struct OptimizerProgress {
    Stage stage = Stage::kReady;
    /// 0-dim float32 on the scale's device, nonzero when a gradient was not finite; undefined
    /// when the optimizer had no gradient at all.
    Tensor found_inf;
  };

  /// Creates the scale and the count on `device` unless they exist (the first scale()).
  void lazy_init(Device device);
  void check_initialized(const char* caller) const;
  /// The scale on `device`; a copy if `copy` or if it lives elsewhere.
  Tensor scale_on(Device device, bool copy) const;

  bool enabled_;
  double init_scale_;
  double growth_factor_;
  double backoff_factor_;
  int64_t growth_interval_;
  int64_t init_growth_tracker_ = 0;
  Tensor scale_;           // float32, created by the first scale()
  Tensor growth_tracker_;  // int32, created with scale_
  /// Keyed by address, as PyTorch keys by id(): reset by update().
  std::map<const optim::Optimizer*, OptimizerProgress> progress_;
};

}  // namespace ember::amp
