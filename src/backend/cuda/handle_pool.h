#pragma once
// Library handles (cuBLAS, cuDNN) per device and per thread. A handle carries the stream its calls
// go to and its own scratch state, so two threads must never use one at the same time: with one
// handle per device, a thread queueing matrix products on its own stream could re-bind the handle
// to its stream between another thread's cublasSetStream and that thread's call, and the other
// thread's product would run on the wrong stream. PyTorch solves this with a pool per device from
// which each thread reserves its own handle; ember does the same.
//
// Each thread's first call for a device takes a handle from that device's pool (creating one only
// when none is idle) and keeps it for as long as the thread lives; when the thread exits, its
// handles go back to the pools for later threads, so a program that starts threads again and
// again creates only as many handles as it ever ran threads at once. Handles are never destroyed:
// the pools live until the process exits, after which the driver frees them.
//
// Host code only, with no CUDA header, so that the bookkeeping is tested on machines without a
// GPU (tests/backend/test_cuda_handle_pool.cpp) with fake handles.
#include <cstddef>
#include <functional>
#include <mutex>
#include <stdexcept>
#include <string>
#include <vector>

namespace ember::cuda_impl {

template <typename Handle>
class HandlePool {
 public:
  /// `create(device)` makes a new handle for `device` (called with no lock held, so it may take
  /// as long as cublasCreate does); it throws when it cannot, and the pool stays as it was.
  HandlePool(int max_devices, std::function<Handle(int)> create)
      : create_(std::move(create)), idle_(static_cast<size_t>(max_devices)), created_(idle_.size(), 0) {}

  /// The pool must outlive every thread that took a handle from it (ember's pools are never
  /// destroyed): a thread returns its handles at exit.
  ~HandlePool() = default;
  HandlePool(const HandlePool&) = delete;
  HandlePool& operator=(const HandlePool&) = delete;

  /// This thread's handle for `device`, the same one on every call.
  Handle get(int device) {
    check_device(device);
    std::vector<Lease>& mine = leases().held;
    for (const Lease& lease : mine) {
      if (lease.pool == this && lease.device == device) return lease.handle;
    }
    const Handle handle = reserve(device);
    try {
      mine.push_back({this, device, handle});
    } catch (...) {
      release(device, handle);
      throw;
    }
    return handle;
  }

  /// Handles made for `device` so far, and those of them no thread holds now.
  size_t created(int device) const {
    check_device(device);
    std::lock_guard lock(mutex_);
    return created_[static_cast<size_t>(device)];
  }
  size_t idle(int device) const {
    check_device(device);
    std::lock_guard lock(mutex_);
    return idle_[static_cast<size_t>(device)].size();
  }

 private:
  struct Lease {
    HandlePool* pool;
    int device;
    Handle handle;
  };
  // One list per thread for all pools of this handle type; its destructor, at the thread's exit,
  // gives every handle back.
  struct ThreadLeases {
    std::vector<Lease> held;
    ~ThreadLeases() {
      for (const Lease& lease : held) lease.pool->release(lease.device, lease.handle);
    }
  };
  static ThreadLeases& leases() {
    thread_local ThreadLeases mine;
    return mine;
  }

  void check_device(int device) const {
    if (device < 0 || static_cast<size_t>(device) >= idle_.size())
      throw std::out_of_range("HandlePool: device " + std::to_string(device) + " is out of range");
  }

  Handle reserve(int device) {
    {
      std::lock_guard lock(mutex_);
      std::vector<Handle>& idle = idle_[static_cast<size_t>(device)];
      if (!idle.empty()) {
        const Handle handle = idle.back();
        idle.pop_back();
        return handle;
      }
    }
    const Handle handle = create_(device);
    std::lock_guard lock(mutex_);
    // Room for every handle's return, so that giving one back at a thread's exit never allocates.
    // (Should this throw, the new handle is lost, as any handle is at exit: never destroyed.)
    const size_t count = ++created_[static_cast<size_t>(device)];
    idle_[static_cast<size_t>(device)].reserve(count);
    return handle;
  }

  void release(int device, Handle handle) {
    std::lock_guard lock(mutex_);
    idle_[static_cast<size_t>(device)].push_back(handle);
  }

  std::function<Handle(int)> create_;
  mutable std::mutex mutex_;
  std::vector<std::vector<Handle>> idle_;  // per device
  std::vector<size_t> created_;            // per device
};

}  // namespace ember::cuda_impl
