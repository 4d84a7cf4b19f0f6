#pragma once
// The data behind a Tensor handle. Public only so that Tensor's accessors can be inline;
// user code should not depend on it.
#include <atomic>
#include <cstddef>
#include <memory>

#include "ember/device.h"
#include "ember/dtype.h"
#include "ember/small_vector.h"

namespace ember {
struct AutogradMeta;

namespace detail {

/// A block of device memory, shared by every view of it. It frees itself through the backend
/// that allocated it.
class Storage {
 public:
  /// `pinned` host memory (device CPU) came from an accelerator backend's allocate_pinned and
  /// goes back to it.
  Storage(void* data, size_t nbytes, Device device, bool pinned = false)
      : data_(data), nbytes_(nbytes), device_(device), pinned_(pinned) {}
  /// CPU memory that `owner` keeps alive (a mapped file, say) instead of a backend: released by
  /// dropping `owner`, never freed through a backend.
  Storage(void* data, size_t nbytes, std::shared_ptr<const void> owner)
      : data_(data), nbytes_(nbytes), device_(DeviceType::CPU), owner_(std::move(owner)) {}
  ~Storage();
  Storage(const Storage&) = delete;
  Storage& operator=(const Storage&) = delete;

  void* data() const { return data_; }
  size_t nbytes() const { return nbytes_; }
  Device device() const { return device_; }
  bool pinned() const { return pinned_; }
  /// Bumped by every in-place write, so autograd can tell when a saved tensor was modified.
  uint32_t version() const { return version_.load(std::memory_order_relaxed); }
  void bump_version() { version_.fetch_add(1, std::memory_order_relaxed); }

 private:
  void* data_;
  size_t nbytes_;
  Device device_;
  bool pinned_ = false;
  std::shared_ptr<const void> owner_;
  std::atomic<uint32_t> version_{0};
};

struct TensorImpl {
  std::shared_ptr<Storage> storage;
  Dims sizes;
  Dims strides;        // in elements
  int64_t offset = 0;  // in elements
  int64_t numel = 1;
  Dtype dtype = kFloat32;
  std::shared_ptr<AutogradMeta> autograd;
  /// Set on the result of a view op (PyTorch's `_base`): the tensor whose storage this one
  /// views, never itself a view. An in-place write through a view rewrites the base's autograd
  /// history, so that the base and its other views see the write in their gradients.
  std::shared_ptr<TensorImpl> view_base;
  /// The storage's version when this view's grad_fn was last set; once a write to the storage
  /// moves past it, the grad_fn is rebuilt from the base's history.
  uint32_t view_version = 0;
  /// How this view was made, for the in-place writes PyTorch refuses (its CreationMeta): in
  /// no-grad mode, or as one of several views one op returns (unbind, split, chunk), whose
  /// index is view_output_nr. A view of such a view inherits it.
  enum class ViewCreation : uint8_t { Default, NoGradMode, MultiOutput };
  ViewCreation view_creation = ViewCreation::Default;
  uint32_t view_output_nr = 0;

  void* data() const {
    return static_cast<char*>(storage->data()) + offset * static_cast<int64_t>(element_size(dtype));
  }
};

}  // namespace detail
}  // namespace ember
