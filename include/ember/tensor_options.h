#pragma once
/// What a factory needs besides the sizes: dtype, device and whether to record gradients.
#include <optional>

#include "ember/device.h"
#include "ember/dtype.h"

namespace ember {

class TensorOptions {
 public:
  TensorOptions() = default;
  TensorOptions(Dtype d) : dtype_(d) {}         // NOLINT: rand({2}, kFloat64) as in libtorch
  TensorOptions(Device d) : device_(d) {}       // NOLINT: rand({2}, device)
  TensorOptions(DeviceType t) : device_(t) {}   // NOLINT: rand({2}, kCUDA)

  TensorOptions dtype(Dtype d) const {
    TensorOptions o = *this;
    o.dtype_ = d;
    return o;
  }
  TensorOptions device(Device d) const {
    TensorOptions o = *this;
    o.device_ = d;
    return o;
  }
  TensorOptions requires_grad(bool r) const {
    TensorOptions o = *this;
    o.requires_grad_ = r;
    return o;
  }

  /// The dtype, or `fallback` when none was set (factories differ: zeros → float32, arange(int) → int64).
  Dtype dtype_or(Dtype fallback) const { return dtype_.value_or(fallback); }
  bool has_dtype() const { return dtype_.has_value(); }
  Dtype dtype() const { return dtype_.value_or(kFloat32); }
  Device device() const { return device_.value_or(Device(DeviceType::CPU)); }
  bool has_device() const { return device_.has_value(); }
  bool requires_grad() const { return requires_grad_; }

 private:
  std::optional<Dtype> dtype_;
  std::optional<Device> device_;
  bool requires_grad_ = false;
};

inline TensorOptions dtype(Dtype d) { return TensorOptions(d); }
inline TensorOptions device(Device d) { return TensorOptions(d); }
inline TensorOptions requires_grad(bool r = true) { return TensorOptions().requires_grad(r); }

}  // namespace ember
