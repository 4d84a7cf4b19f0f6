#pragma once
/// Automatic mixed precision: torch.autocast for C++.
///
///   Tensor loss;
///   {
///     ember::amp::autocast guard(ember::kCUDA);   // float16 on CUDA; bfloat16 by default on the CPU
///     loss = criterion(model(x), y);              // matmuls and convolutions run in float16
///   }
///   loss.backward();                              // each backward op in its forward op's dtype
///
/// Inside the region the ops PyTorch lists run in the lower-precision dtype (matrix products,
/// linear, convolutions, scaled dot-product attention, the LSTM), those it lists as needing range
/// run in float32 (the losses, prod; on CUDA and MPS also exp, log, rsqrt, pow, sum, softmax,
/// log_softmax, layer_norm, group_norm), and everything else runs in its inputs' dtype. Only
/// floating-point tensors of the region's device type are cast, never float64 ones; the casts are
/// recorded like any `to()`, so gradients flow back to the float32 parameters. A float32 leaf
/// that requires grad (a parameter) is cast once per outermost region and the copy reused, so
/// an RNN does not cast its weights at every step. docs/AMP.md lists each op's policy.
///
/// The state is per thread and per device type, as in PyTorch: a region for "cuda" leaves CPU
/// tensors alone, and a thread the region did not open is not in it. Backward passes run with
/// autocast off (their inputs already have the forward's dtypes); a checkpointed block's second
/// run gets the autocast state its first run had.
#include <optional>
#include <string_view>

#include "ember/device.h"
#include "ember/dtype.h"

namespace ember::amp {

/// Whether ember has autocast for `device_type` (all of ember's device types do).
bool is_autocast_available(DeviceType device_type);
/// torch.is_autocast_enabled(device_type): whether this thread is inside an enabled region.
bool is_autocast_enabled(DeviceType device_type);
/// Turns autocast on or off for this thread without a region (prefer `autocast`, which restores).
void set_autocast_enabled(DeviceType device_type, bool enabled);
/// The lower-precision dtype of `device_type`'s regions: bfloat16 for the CPU, float16 for CUDA
/// and MPS unless set_autocast_dtype changed it.
Dtype get_autocast_dtype(DeviceType device_type);
/// Sets that dtype, which must be float16 or bfloat16.
void set_autocast_dtype(DeviceType device_type, Dtype dtype);
/// Whether lower-precision copies of parameters are cached within a region (on by default).
bool is_autocast_cache_enabled();
void set_autocast_cache_enabled(bool enabled);
/// Drops the cached copies (the outermost region's end does this).
void clear_autocast_cache();

/// An autocast region for one device type, torch.autocast(device_type, dtype, enabled,
/// cache_enabled), ending with the object. `dtype` defaults to get_autocast_dtype(device_type).
/// Regions nest; the end of one restores the state before it, and `enabled = false` opens a
/// region where autocast is off (where ops must be handed tensors of matching dtypes).
///
/// As in PyTorch, a dtype other than float16 or bfloat16 warns and leaves the region disabled,
/// and so does a CUDA region where CUDA is not available.
class autocast {
 public:
  explicit autocast(DeviceType device_type, std::optional<Dtype> dtype = std::nullopt, bool enabled = true,
                    std::optional<bool> cache_enabled = std::nullopt);
  /// `device_type` as PyTorch spells it: "cpu", "cuda" or "mps" (a device type, not "cuda:0").
  explicit autocast(std::string_view device_type, std::optional<Dtype> dtype = std::nullopt, bool enabled = true,
                    std::optional<bool> cache_enabled = std::nullopt);
  ~autocast();
  autocast(const autocast&) = delete;
  autocast& operator=(const autocast&) = delete;

  /// Whether this region casts (false when asked not to, or after a warning above).
  bool enabled() const { return enabled_; }
  /// The region's lower-precision dtype.
  Dtype dtype() const { return dtype_; }

 private:
  DeviceType device_type_;
  Dtype dtype_;
  bool enabled_;
  bool previous_enabled_;
  Dtype previous_dtype_;
  bool previous_cache_enabled_;
};

}  // namespace ember::amp
