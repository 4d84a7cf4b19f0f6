#pragma once
/// What a factory needs besides the sizes: dtype, device and whether to record gradients.
#include "ember/device.h"
#include "ember/dtype.h"

namespace ember {

// Plain members with "was it set" flags rather than std::optional: copying a disengaged
// optional copies its uninitialised payload, which GCC 12 reports (-Wmaybe-uninitialized) in
// code that builds options in a chain, TensorOptions().dtype(d).device(x), at -O1.
class TensorOptions {
 public:
  TensorOptions() = default;
  TensorOptions(Dtype d) : dtype_(d), has_dtype_(true) {}                 // NOLINT: rand({2}, kFloat64) as in libtorch
  TensorOptions(Device d) : device_(d), has_device_(true) {}              // NOLINT: rand({2}, device)
  TensorOptions(DeviceType t) : device_(Device(t)), has_device_(true) {}  // NOLINT: rand({2}, kCUDA)

  TensorOptions dtype(Dtype d) const {
    TensorOptions o = *this;
    o.dtype_ = d;
    o.has_dtype_ = true;
    return o;
  }
  TensorOptions device(Device d) const {
    TensorOptions o = *this;
    o.device_ = d;
    o.has_device_ = true;
    return o;
  }
  TensorOptions requires_grad(bool r) const {
    TensorOptions o = *this;
    o.requires_grad_ = r;
    return o;
  }

  /// The dtype, or `fallback` when none was set (factories differ: zeros → float32, arange(int) → int64).
  Dtype dtype_or(Dtype fallback) const { return has_dtype_ ? dtype_ : fallback; }
  bool has_dtype() const { return has_dtype_; }
  Dtype dtype() const { return dtype_; }
  Device device() const { return device_; }
  bool has_device() const { return has_device_; }
  bool requires_grad() const { return requires_grad_; }

 private:
  Dtype dtype_ = kFloat32;
  Device device_ = Device(DeviceType::CPU);
  bool has_dtype_ = false;
  bool has_device_ = false;
  bool requires_grad_ = false;
};

inline TensorOptions dtype(Dtype d) { return TensorOptions(d); }
inline TensorOptions device(Device d) { return TensorOptions(d); }
inline TensorOptions requires_grad(bool r = true) { return TensorOptions().requires_grad(r); }

}  // namespace ember
