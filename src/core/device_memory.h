#pragma once
// The one thing core asks of a device backend: memory for tensor storages. Core owns this
// interface and knows nothing else about backends; each backend implements it (class Backend
// derives from it) and the backend registry (src/backend/registry.cpp) answers the two lookups
// below. Everything else a backend does is reached from ops, a layer above core.
#include <cstddef>

#include "ember/device.h"

namespace ember::detail {

class DeviceMemory {
 public:
  /// Allocations are at least 64-byte aligned; size 0 is allowed.
  virtual void* allocate(size_t nbytes, int device_index) = 0;
  virtual void deallocate(void* ptr, size_t nbytes, int device_index) noexcept = 0;
  /// Page-locked host memory that this device type copies to and from asynchronously (the
  /// storage of Tensor::pin_memory()). Only backends of devices with their own memory have it.
  virtual void* allocate_pinned(size_t nbytes) = 0;
  virtual void free_pinned(void* ptr) noexcept = 0;

 protected:
  ~DeviceMemory() = default;
};

/// The memory of `type`'s backend, or nullptr when none is loaded. Never throws.
DeviceMemory* find_device_memory(DeviceType type);

/// The memory for a new tensor on `device`; fills in the device's index (cuda: the current
/// device) and throws ember::Error saying why when the device is unusable.
DeviceMemory& device_memory_for(Device& device);

}  // namespace ember::detail
