// Copies and moves: copy_, fill_ and zero_, clone and contiguous, to() between devices and dtypes,
// pin_memory, and item(). The bytes move through the backends: host copies between the CPU and a
// device, device-to-device copies between two devices of one type, and each backend's copy()
// for the conversion and layout.
#include <functional>

#include "autograd/node.h"
#include "backend/backend.h"
#include "core/check.h"
#include "core/tensor_internal.h"
#include "ember/cuda.h"
#include "ember/factories.h"
#include "ember/ops.h"
#include "ember/tensor.h"

namespace ember {

using autograd::record_view_of;

namespace {
// PyTorch's has_internal_overlap, in the case it can tell cheaply: a dimension of stride 0 (an
// expanded tensor) makes several elements one memory location, and a write to them races.
void check_no_internal_overlap(const Tensor& self) {
  for (int64_t d = 0; d < self.dim(); ++d) {
    EMBER_CHECK(self.stride(d) != 0 || self.size(d) <= 1,
                "unsupported operation: more than one element of the written-to tensor refers to a single memory "
                "location. Please clone() the tensor before performing the operation.");
  }
}

int index_of(Device device) { return device.has_index() ? device.index() : 0; }

/// A new contiguous CPU tensor in pinned (page-locked) memory; throws when CUDA is unavailable.
Tensor make_pinned_tensor(IntList sizes, Dtype dtype) {
  EMBER_CHECK(cuda::is_available(), "pin_memory: pinned memory is for copies to a GPU, and CUDA is not available: ",
              cuda::unavailable_reason());
  const int64_t n = detail::numel_of(sizes);
  const size_t nbytes = static_cast<size_t>(n) * element_size(dtype);
  void* data = find_backend(DeviceType::CUDA)->allocate_pinned(nbytes);
  auto storage = std::make_shared<detail::Storage>(data, nbytes, Device(DeviceType::CPU), /*pinned=*/true);
  return detail::make_tensor_over(std::move(storage), Dims(sizes), detail::contiguous_strides(sizes), 0, dtype);
}

// The copy itself, without autograd. Across devices the bytes move as one contiguous block:
// through the backend's host copies between the CPU and a device, device to device between two
// devices of one type; the destination's backend then converts and lays them out.
void copy_values(Tensor& self, const Tensor& src, bool non_blocking) {
  Tensor source = src;
  if (src.device() != self.device()) {
    Tensor contiguous_src = src.contiguous();
    if (src.is_cpu()) {
      Tensor moved = detail::make_tensor(src.sizes(), src.dtype(), self.device());
      // Asynchronous only from pinned memory, which the device reads directly.
      backend_for(self.device())
          .copy_from_host(moved.data_ptr(), contiguous_src.data_ptr(), contiguous_src.nbytes(), index_of(self.device()),
                          non_blocking && contiguous_src.is_pinned());
      source = moved;
    } else if (self.is_cpu()) {
      // Into pinned memory of the same layout, a non-blocking copy lands directly; the data is
      // valid once the device is synchronised, as with PyTorch's .to("cpu", non_blocking=True).
      const bool direct = non_blocking && self.is_pinned() && self.is_contiguous() && self.dtype() == src.dtype() &&
                          same_dims(self.sizes(), src.sizes());
      Tensor moved = direct ? self : detail::make_tensor(src.sizes(), src.dtype(), self.device());
      backend_for(src.device())
          .copy_to_host(moved.data_ptr(), contiguous_src.data_ptr(), contiguous_src.nbytes(), index_of(src.device()),
                        direct);
      if (direct) {
        self.impl().storage->bump_version();
        return;
      }
      source = moved;
    } else if (src.device().type() == self.device().type()) {
      // Two devices of one backend (cuda:0 -> cuda:1): peer to peer where the devices allow it,
      // ordered with both devices' streams, never through the host; straight into self when it
      // has src's layout and dtype, as into pinned memory above.
      const bool direct = self.is_contiguous() && self.dtype() == src.dtype() && same_dims(self.sizes(), src.sizes());
      Tensor moved = direct ? self : detail::make_tensor(src.sizes(), src.dtype(), self.device());
      backend_for(self.device())
          .copy_between_devices(moved.data_ptr(), index_of(self.device()), contiguous_src.data_ptr(),
                                index_of(src.device()), contiguous_src.nbytes());
      if (direct) {
        self.impl().storage->bump_version();
        return;
      }
      source = moved;
    } else {
      // Two device types (no build has two accelerator backends yet): through the host.
      copy_values(self, contiguous_src.to(Device(DeviceType::CPU)), non_blocking);
      return;
    }
  }
  if (source.is_alias_of(self) && source.data_ptr() == self.data_ptr() && same_dims(source.sizes(), self.sizes()) &&
      same_dims(source.strides(), self.strides()) && source.dtype() == self.dtype()) {
    return;  // copying a tensor onto itself
  }
  Tensor expanded = source.expand(self.sizes());
  backend_for(self.device()).copy(view_of(self), view_of(expanded));
  self.impl().storage->bump_version();
}

// fill_ and zero_: the node recorded for a write of a constant sends no gradient back.
Tensor& fill_recorded(Tensor& self, const Scalar& value, const char* node_name) {
  detail::check_defined(self, "fill_");
  std::shared_ptr<autograd::Node> history;
  if (autograd::needs_grad({&self})) {
    autograd::check_inplace(self);
    history =
        autograd::make_node(node_name, {&self}, [](const Tensor& g) { return std::vector<Tensor>{zeros_like(g)}; });
  }
  backend_for(self.device()).fill(view_of(self), value);
  self.impl().storage->bump_version();
  if (history) autograd::rebase_history(self, std::move(history));
  return self;
}
}  // namespace

Tensor Tensor::contiguous() const { return is_contiguous() ? *this : clone(); }

Tensor Tensor::clone() const {
  Tensor out = detail::make_tensor(sizes(), dtype(), device());
  backend_for(device()).copy(view_of(out), view_of(*this));
  return record_view_of(out, *this, "CloneBackward0", [](const Tensor& g) { return g; });
}

Tensor& Tensor::copy_(const Tensor& src, bool non_blocking) {
  detail::OpContext context("copy_", {{"self", this}, {"src", &src}});
  detail::check_defined(*this, "copy_");
  detail::check_defined(src, "copy_");
  check_no_internal_overlap(*this);
  std::shared_ptr<autograd::Node> history;
  if (autograd::needs_grad({this, &src})) {
    // Self's old value is overwritten: it gets a zero gradient, src gets the gradient itself.
    autograd::check_inplace(*this);
    history = autograd::make_node("CopyBackwards", {this, &src}, [src_device = src.device()](const Tensor& g) {
      return std::vector<Tensor>{zeros_like(g), g.to(src_device)};
    });
  }
  {
    NoGradGuard no_grad;  // the staging copies are internal
    copy_values(*this, src, non_blocking);
  }
  if (history) autograd::rebase_history(*this, std::move(history));
  return *this;
}

Tensor& Tensor::fill_(const Scalar& value) { return fill_recorded(*this, value, "FillBackward2"); }
Tensor& Tensor::zero_() { return fill_recorded(*this, 0, "ZeroBackward0"); }

// ---- to() ----

Tensor Tensor::to(const TensorOptions& options, bool non_blocking, bool copy) const {
  detail::OpContext context("to", {{"self", this}});
  detail::check_defined(*this, "to");
  const Dtype target_dtype = options.dtype_or(dtype());
  Device target_device = device();
  if (options.has_device()) {
    Device requested = options.device();
    // PyTorch's ensure_has_index: cuda/mps get the current index, cpu stays as given, so
    // to("cpu:0") copies while to("cpu") aliases.
    target_device = requested.is_cpu() ? requested : normalize_device(requested);
    if (!requested.is_cpu()) backend_for(target_device);  // throws when unusable
  }
  if (!copy && target_dtype == dtype() && target_device == device()) return *this;
  Device alloc_device = target_device.is_cpu() ? Device(DeviceType::CPU) : target_device;
  // A non-blocking copy to the host goes into pinned memory, which the device writes directly.
  const bool pinned_out = non_blocking && alloc_device.is_cpu() && !is_cpu() && target_dtype == dtype();
  Tensor out =
      pinned_out ? make_pinned_tensor(sizes(), target_dtype) : detail::make_tensor(sizes(), target_dtype, alloc_device);
  {
    NoGradGuard no_grad;  // the copy is internal; ToCopyBackward0 below is the recorded op
    if (alloc_device == device()) {
      backend_for(device()).copy(view_of(out), view_of(*this));
    } else if (target_dtype == dtype()) {
      out.copy_(*this, non_blocking);
    } else {
      // Convert on the source device, then move the bytes.
      out.copy_(to(target_dtype));
    }
  }
  return record_view_of(out, *this, "ToCopyBackward0", [src = device()](const Tensor& g) { return g.to(src); });
}

Tensor Tensor::pin_memory() const {
  detail::check_defined(*this, "pin_memory");
  if (is_pinned()) return *this;
  EMBER_CHECK(is_cpu(), "cannot pin '", device(), "' memory: only CPU tensors can be pinned");
  Tensor out = make_pinned_tensor(sizes(), dtype());
  {
    NoGradGuard no_grad;
    backend_for(device()).copy(view_of(out), view_of(*this));
  }
  return record_view_of(out, *this, "CloneBackward0", [](const Tensor& g) { return g; });
}

Tensor Tensor::to(Device device, bool non_blocking, bool copy) const {
  return to(TensorOptions().device(device), non_blocking, copy);
}
Tensor Tensor::to(Dtype dtype, bool non_blocking, bool copy) const {
  return to(TensorOptions().dtype(dtype), non_blocking, copy);
}
Tensor Tensor::to(Device device, Dtype dtype, bool non_blocking, bool copy) const {
  return to(TensorOptions().device(device).dtype(dtype), non_blocking, copy);
}

Scalar Tensor::item() const {
  detail::OpContext context("item", {{"self", this}});
  EMBER_CHECK(numel() == 1, "a Tensor with ", numel(), " elements cannot be converted to Scalar");
  Tensor host = is_cpu() ? *this : to(Device(DeviceType::CPU));
  const void* p = host.data_ptr();
  switch (dtype()) {
    case Dtype::Bool:
      return Scalar(*static_cast<const bool*>(p));
    case Dtype::UInt8:
      return Scalar(*static_cast<const uint8_t*>(p));
    case Dtype::Int8:
      return Scalar(*static_cast<const int8_t*>(p));
    case Dtype::Int16:
      return Scalar(*static_cast<const int16_t*>(p));
    case Dtype::Int32:
      return Scalar(*static_cast<const int32_t*>(p));
    case Dtype::Int64:
      return Scalar(*static_cast<const int64_t*>(p));
    case Dtype::Float16:
      return Scalar(*static_cast<const Half*>(p));
    case Dtype::BFloat16:
      return Scalar(*static_cast<const BFloat16*>(p));
    case Dtype::Float32:
      return Scalar(*static_cast<const float*>(p));
    case Dtype::Float64:
      return Scalar(*static_cast<const double*>(p));
  }
  detail::fail("[item] unknown dtype");
}

}  // namespace ember
