#pragma once
// How an op takes part in autocast (include/ember/amp/autocast.h). An op on PyTorch's lists
// starts with
//
//   if (const auto device = amp::detail::autocast_device(a, b)) {
//     return amp::detail::autocast_call(CastPolicy::LowerPrecision, *device,
//                                       [](const Tensor& a, const Tensor& b) { return mm(a, b); }, a, b);
//   }
//
// autocast_device is one thread-local read when no region is open. autocast_call casts the
// tensor arguments and calls the op again with autocast excluded for that device type, as
// PyTorch's autocast kernels redispatch below the Autocast key: the ops the op runs inside get
// its inputs as they are, so an op listed as lower precision computes entirely in that dtype.
// An op PyTorch keeps whole but ember builds from listed ops (batch norm, say) opens a
// NoAutocastGuard so that its parts are not cast one by one.
#include <cstdint>
#include <optional>
#include <type_traits>

#include "ember/amp/autocast.h"
#include "ember/device.h"
#include "ember/dtype.h"
#include "ember/tensor.h"

namespace ember::amp::detail {

enum class CastPolicy : uint8_t {
  LowerPrecision,  // eligible inputs to the region's float16/bfloat16
  Float32,         // eligible inputs to float32
  Promote,         // eligible inputs to the widest floating dtype among them
};

/// A bit per device type whose autocast is enabled and not excluded on this thread.
uint8_t active_device_types();

/// The device type of the first defined tensor among `args`, if autocast applies to it here.
template <typename... Args>
std::optional<DeviceType> autocast_device(const Args&... args) {
  const uint8_t active = active_device_types();
  if (active == 0) return std::nullopt;
  std::optional<DeviceType> type;
  auto look = [&](const auto& arg) {
    if constexpr (std::is_same_v<std::decay_t<decltype(arg)>, Tensor>) {
      if (!type && arg.defined()) type = arg.device().type();
    }
  };
  (look(args), ...);
  if (!type || (active & (1u << static_cast<unsigned>(*type))) == 0) return std::nullopt;
  return type;
}

/// autocast_device, for the ops PyTorch lists for CUDA (and MPS) but not for the CPU.
template <typename... Args>
std::optional<DeviceType> autocast_gpu_device(const Args&... args) {
  const std::optional<DeviceType> type = autocast_device(args...);
  return type == DeviceType::CPU ? std::nullopt : type;
}

/// Excludes autocast for one device type on this thread (an op's own parts run uncast).
class ExcludeGuard {
 public:
  explicit ExcludeGuard(DeviceType type);
  ~ExcludeGuard();
  ExcludeGuard(const ExcludeGuard&) = delete;
  ExcludeGuard& operator=(const ExcludeGuard&) = delete;

 private:
  DeviceType type_;
  bool previous_;
};

/// Excludes autocast for every device type: for ops PyTorch runs as one op that ember composes
/// from listed ones, and for backward passes, whose inputs already have their forward's dtypes.
class NoAutocastGuard {
 public:
  NoAutocastGuard();
  ~NoAutocastGuard();
  NoAutocastGuard(const NoAutocastGuard&) = delete;
  NoAutocastGuard& operator=(const NoAutocastGuard&) = delete;

 private:
  uint8_t previous_;
};

/// This thread's whole autocast state, which a checkpointed block's second run gets back.
struct State {
  bool enabled[kNumDeviceTypes] = {};
  Dtype dtype[kNumDeviceTypes] = {};
  uint8_t excluded = 0;
  bool cache_enabled = true;
};
State current_state();
/// Puts `state` in force for its lifetime (the nesting count and the cache are left alone).
class StateGuard {
 public:
  explicit StateGuard(const State& state);
  ~StateGuard();
  StateGuard(const StateGuard&) = delete;
  StateGuard& operator=(const StateGuard&) = delete;

 private:
  State previous_;
};

/// The dtype `policy` casts to for these inputs on `type` (for Promote, the widest eligible one).
Dtype target_dtype(CastPolicy policy, DeviceType type, std::initializer_list<const Tensor*> tensors);
/// `t` in `dtype` when autocast may cast it (floating point, on `type`, not float64), else `t`;
/// float32 parameters cast to the lower-precision dtype come from the region's cache.
Tensor cast(const Tensor& t, DeviceType type, Dtype dtype);

template <typename T>
const Tensor* tensor_or_null(const T& arg) {
  if constexpr (std::is_same_v<T, Tensor>) {
    return &arg;
  } else {
    return nullptr;
  }
}

template <typename T>
decltype(auto) cast_arg(const T& arg, DeviceType type, Dtype dtype) {
  if constexpr (std::is_same_v<T, Tensor>) {
    return cast(arg, type, dtype);
  } else {
    return (arg);  // a reference to the caller's argument
  }
}

/// Calls `op` with the tensor arguments cast by `policy` and autocast excluded for `type`.
template <typename Op, typename... Args>
auto autocast_call(CastPolicy policy, DeviceType type, Op&& op, const Args&... args) {
  const Dtype dtype = target_dtype(policy, type, {tensor_or_null(args)...});
  ExcludeGuard exclude(type);
  return op(cast_arg(args, type, dtype)...);
}

}  // namespace ember::amp::detail
