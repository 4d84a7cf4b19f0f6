#pragma once
// A stand-in accelerator for machines without one. HostDeviceBackend runs the CPU backend's
// kernels on host memory but reports another device type (MPS, which no build of ember has a
// backend for yet), so tests can create tensors "on mps:0" and run any op, layer, loss, optimizer
// step or backward pass there. Code that makes a tensor on the wrong device then fails exactly as
// on a GPU: the front end's own checks throw "Expected all tensors to be on the same device".
//
// It also catches what those checks let through: every view it is handed must lie inside memory
// it allocated, so a CPU tensor that reaches a kernel (a 0-dim CPU tensor joining a device op,
// say, which on a GPU makes the kernel read a host pointer) is an ember::Error naming the entry
// point and the argument.
//
//   class MyTest : public ::testing::Test {
//     ember_test::ScopedHostDevice host_device_;  // mps:0 works while the fixture lives
//   };
//
// It can stand for several devices (ScopedHostDevice(2): mps:0 and mps:1), each allocation
// belonging to one of them, so a view handed to a kernel of one device that lies in another
// device's memory fails too, and copies between them (cuda:0 -> cuda:1 on a GPU) go through
// copy_between_devices, whose calls it counts as it counts the copies to and from the host.
//
// Only a test registers it (src/backend/registry.cpp: a registered MPS backend is used without
// the availability check), and only for the scope of a ScopedHostDevice: other suites still see
// MPS as unavailable. Every tensor on it must be gone before the scope ends.
#include <algorithm>
#include <atomic>
#include <cstdint>
#include <cstring>
#include <map>
#include <mutex>
#include <span>
#include <sstream>
#include <string>
#include <string_view>
#include <type_traits>
#include <vector>

#include "backend/backend.h"
#include "backend/cpu/cpu_backend.h"
#include "ember/device.h"
#include "ember/error.h"
#include "kernels/optim_ops.h"

// In namespace ember, so that entry_points.def's unqualified types name ember's.
namespace ember::test_support {

class HostDeviceBackend final : public ember::Backend {
 public:
  explicit HostDeviceBackend(ember::DeviceType type = ember::DeviceType::MPS) : type_(type) {}

  ember::DeviceType type() const override { return type_; }
  int device_count() const noexcept override { return device_count_.load(); }
  /// How many devices it stands for (ScopedHostDevice sets it; 1 otherwise).
  void set_device_count(int count) { device_count_.store(count); }

  /// How often each entry point that moves bytes between devices, or updates parameters, has
  /// been called since reset_counts(): a test checks that a copy between two of its devices
  /// never went through the host, or that an optimizer step took one multi-tensor call.
  struct Counts {
    int64_t copy_to_host = 0, copy_from_host = 0, copy_between_devices = 0;
    int64_t single_tensor_updates = 0, multi_tensor_updates = 0;
  };
  Counts counts() const {
    std::lock_guard<std::mutex> lock(mutex_);
    return counts_;
  }
  void reset_counts() {
    std::lock_guard<std::mutex> lock(mutex_);
    counts_ = Counts{};
  }

  /// Bytes it has allocated and not yet freed: 0 once every tensor on it is gone.
  size_t live_bytes() const {
    std::lock_guard<std::mutex> lock(mutex_);
    size_t total = 0;
    for (const auto& [begin, block] : live_) total += block.nbytes;
    return total;
  }

  // ---- memory: the CPU's allocator, with a record of what lives "on the device" ----
  void* allocate(size_t nbytes, int device_index) override {
    check_index(device_index, "allocate");
    void* p = cpu().allocate(nbytes, 0);
    if (p != nullptr && nbytes != 0) {
      std::lock_guard<std::mutex> lock(mutex_);
      live_[reinterpret_cast<uintptr_t>(p)] = Block{nbytes, device_index};
    }
    return p;
  }
  void deallocate(void* ptr, size_t nbytes, int /*device_index*/) noexcept override {
    if (ptr != nullptr && nbytes != 0) {
      std::lock_guard<std::mutex> lock(mutex_);
      live_.erase(reinterpret_cast<uintptr_t>(ptr));
    }
    cpu().deallocate(ptr, nbytes, 0);
  }

  // ---- copies between host and "device" are plain memcpy ----
  void copy_from_host(void* dst, const void* host_src, size_t nbytes, int device_index,
                      bool /*non_blocking*/) override {
    check_index(device_index, "copy_from_host");
    check_range("copy_from_host", "dst", reinterpret_cast<uintptr_t>(dst), nbytes, device_index);
    count(&Counts::copy_from_host);
    if (nbytes != 0) std::memcpy(dst, host_src, nbytes);
  }
  void copy_to_host(void* host_dst, const void* src, size_t nbytes, int device_index, bool /*non_blocking*/) override {
    check_index(device_index, "copy_to_host");
    check_range("copy_to_host", "src", reinterpret_cast<uintptr_t>(src), nbytes, device_index);
    count(&Counts::copy_to_host);
    if (nbytes != 0) std::memcpy(host_dst, src, nbytes);
  }
  void copy_between_devices(void* dst, int dst_index, const void* src, int src_index, size_t nbytes) override {
    check_index(dst_index, "copy_between_devices");
    check_index(src_index, "copy_between_devices");
    check_range("copy_between_devices", "dst", reinterpret_cast<uintptr_t>(dst), nbytes, dst_index);
    check_range("copy_between_devices", "src", reinterpret_cast<uintptr_t>(src), nbytes, src_index);
    count(&Counts::copy_between_devices);
    if (nbytes != 0) std::memmove(dst, src, nbytes);
  }

  // ---- every op family's kernel (backend/entry_points.def): the CPU's, once every view it is
  // handed has been checked to lie in this device's memory ----
#define EMBER_UNPAREN(...) __VA_ARGS__
#define EMBER_BACKEND_ENTRY(family, name, params, args)         \
  void name params override {                                   \
    check_arguments(#family, #name, #args, EMBER_UNPAREN args); \
    cpu().name args;                                            \
  }
#include "backend/entry_points.def"
#undef EMBER_BACKEND_ENTRY
#undef EMBER_UNPAREN

  // ---- the generator's seed and state: the CPU's (a test of placement compares shapes, not draws) ----
  void manual_seed(uint64_t seed) override { cpu().manual_seed(seed); }
  uint64_t initial_seed(int /*device_index*/) override { return cpu().initial_seed(0); }
  std::vector<uint8_t> rng_state(int device_index) override {
    check_index(device_index, "rng_state");
    return cpu().rng_state(0);
  }
  void set_rng_state(int device_index, std::span<const uint8_t> state) override {
    check_index(device_index, "set_rng_state");
    cpu().set_rng_state(0, state);
  }

 private:
  using Arg = std::pair<const char*, const ember::TensorView*>;

  static ember::cpu::CpuBackend& cpu() { return ember::cpu::cpu_backend(); }

  std::string device_name(int index = 0) const { return ember::Device(type_, index).str(); }

  void check_index(int device_index, const char* op) const {
    const int count = device_count();
    if (device_index >= 0 && device_index < count) return;
    throw ember::Error(std::string("[host-device backend] ") + op + ": device index " + std::to_string(device_index) +
                       " requested, but only " + std::to_string(count) + " " +
                       std::string(ember::device_type_name(type_)) + " device(s) exist");
  }

  void count(int64_t Counts::*counter) {
    std::lock_guard<std::mutex> lock(mutex_);
    ++(counts_.*counter);
  }

  /// Checks an entry point's arguments before the CPU's kernel runs: every view among them (a
  /// TensorView, each view of a span of them, each view of a multi-tensor update's OptimTensors)
  /// must lie in this device's memory. `names` is the argument list as entry_points.def writes
  /// it, "(op, x, out)", for the message. An optimizer update is counted, single or multi-tensor.
  template <typename... Args>
  void check_arguments(std::string_view family, std::string_view entry, std::string_view names, const Args&... args) {
    const std::string op = label(entry, args...);
    size_t index = 0;
    (check_argument(op, argument_name(names, index++), args), ...);
    if (family == "optim") {
      count(entry.starts_with("multi_tensor_") ? &Counts::multi_tensor_updates : &Counts::single_tensor_updates);
    }
  }
  /// What a failure names: the op of an element-wise or reduction entry point ("relu", not
  /// "unary"), the entry point otherwise.
  template <typename First, typename... Rest>
  static std::string label(std::string_view entry, const First& first, const Rest&...) {
    if constexpr (std::is_same_v<First, ember::UnaryOp> || std::is_same_v<First, ember::BinaryOp> ||
                  std::is_same_v<First, ember::ReduceOp> || std::is_same_v<First, ember::ActivationOp>) {
      return ember::op_name(first);
    } else {
      return std::string(entry);
    }
  }
  /// The index-th name of "(a, b, c)".
  static std::string argument_name(std::string_view names, size_t index) {
    names = names.substr(1, names.size() - 2);
    for (size_t i = 0; i < index; ++i) names = names.substr(std::min(names.size(), names.find(',') + 1));
    names = names.substr(names.find_first_not_of(' ') == std::string_view::npos ? names.size()
                                                                                : names.find_first_not_of(' '));
    return std::string(names.substr(0, names.find(',')));
  }
  void check_argument(const std::string& op, const std::string& name, const ember::TensorView& view) const {
    on_device(op.c_str(), {{name.c_str(), &view}});
  }
  void check_argument(const std::string& op, const std::string& name, std::span<const ember::TensorView> views) const {
    for (size_t i = 0; i < views.size(); ++i) {
      const std::string element = name + "[" + std::to_string(i) + "]";
      on_device(op.c_str(), {{element.c_str(), &views[i]}});
    }
  }
  void check_argument(const std::string& op, const std::string& name,
                      std::span<const ember::OptimTensors> tensors) const {
    for (size_t i = 0; i < tensors.size(); ++i) {
      const ember::OptimTensors& t = tensors[i];
      const std::string at = name + "[" + std::to_string(i) + "].";
      const std::string param = at + "param", grad = at + "grad", s0 = at + "state[0]", s1 = at + "state[1]",
                        s2 = at + "state[2]";
      on_device(op.c_str(), {{param.c_str(), &t.param},
                             {grad.c_str(), &t.grad},
                             {s0.c_str(), &t.state[0]},
                             {s1.c_str(), &t.state[1]},
                             {s2.c_str(), &t.state[2]}});
    }
  }
  /// Arguments that are not views (an op, sizes, a Scalar, the update's hyper-parameters).
  template <typename T>
  void check_argument(const std::string&, const std::string&, const T&) const {}

  /// Throws unless every view with data lies inside memory this backend allocated.
  void on_device(const char* op, std::initializer_list<Arg> args) const {
    for (const auto& [name, view] : args) {
      if (view->data == nullptr) continue;  // an optional view that was not given
      check_index(view->device_index, op);
      if (view->numel() == 0) continue;  // nothing is read or written
      int64_t lo = 0, hi = 0;            // element offsets of the lowest and highest element
      for (int64_t d = 0; d < view->ndim(); ++d) {
        const int64_t span = (view->sizes[d] - 1) * view->strides[d];
        (span < 0 ? lo : hi) += span;
      }
      const auto element = static_cast<int64_t>(ember::element_size(view->dtype));
      const auto base = reinterpret_cast<intptr_t>(view->data);
      check_range(op, name, static_cast<uintptr_t>(base + lo * element), static_cast<size_t>((hi - lo + 1) * element),
                  view->device_index);
    }
  }

  /// Throws unless [begin, begin + nbytes) lies inside one allocation of device `device_index`.
  void check_range(const char* op, const char* arg, uintptr_t begin, size_t nbytes, int device_index) const {
    if (nbytes == 0) return;
    int owner = -1;  // the device whose allocation holds the range, if any
    {
      std::lock_guard<std::mutex> lock(mutex_);
      auto it = live_.upper_bound(begin);
      if (it != live_.begin()) {
        --it;
        if (begin >= it->first && begin + nbytes <= it->first + it->second.nbytes) owner = it->second.device;
      }
    }
    if (owner == device_index) return;
    std::ostringstream os;
    os << "[host-device backend] " << op << ": argument '" << arg << "' (" << nbytes << " bytes at 0x" << std::hex
       << begin << std::dec << ") is not memory of " << device_name(device_index) << ": ";
    if (owner >= 0) {
      os << "it lies on " << device_name(owner) << ", and a " << device_name(device_index)
         << " kernel handed another device's memory reads it over the bus at best";
    } else {
      os << "a tensor from another device (a CPU tensor?) reached a " << device_name(device_index)
         << " kernel, which on a GPU reads a host pointer";
    }
    throw ember::Error(os.str());
  }

  struct Block {
    size_t nbytes = 0;
    int device = 0;
  };

  ember::DeviceType type_;
  std::atomic<int> device_count_{1};
  mutable std::mutex mutex_;
  std::map<uintptr_t, Block> live_;  // allocation start -> size and device, of every live allocation
  Counts counts_;
};

}  // namespace ember::test_support

namespace ember_test {

using ember::test_support::HostDeviceBackend;

/// The process-wide instance that ScopedHostDevice registers.
inline HostDeviceBackend& host_device_backend() {
  static HostDeviceBackend backend(ember::DeviceType::MPS);
  return backend;
}

/// Registers host_device_backend() for MPS for its lifetime, then puts back what was there
/// (nothing, in every build of ember so far), so mps:0 is unusable again for other tests.
class ScopedHostDevice {
 public:
  /// `devices`: how many devices (mps:0 ... mps:devices-1) it stands for while the scope lives.
  explicit ScopedHostDevice(int devices = 1) : previous_(ember::find_backend(ember::DeviceType::MPS)) {
    host_device_backend().set_device_count(devices);
    host_device_backend().reset_counts();
    ember::register_backend(ember::DeviceType::MPS, &host_device_backend());
  }
  ~ScopedHostDevice() {
    ember::register_backend(ember::DeviceType::MPS, previous_);
    host_device_backend().set_device_count(1);
  }
  ScopedHostDevice(const ScopedHostDevice&) = delete;
  ScopedHostDevice& operator=(const ScopedHostDevice&) = delete;

  static ember::Device device() { return ember::Device(ember::DeviceType::MPS, 0); }

 private:
  ember::Backend* previous_;
};

}  // namespace ember_test
