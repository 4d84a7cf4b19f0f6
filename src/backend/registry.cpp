// The table of backends, indexed by DeviceType. Registration is explicit — one line per backend
// in register_builtin_backends() — because static initialisers can be dropped by the linker. The
// CUDA backend is a library of its own, loaded at run time: its line asks the loader
// (src/backend/cuda_loader.cpp), which loads it only where a driver is present.
#include <array>
#include <mutex>

#include "backend/backend.h"
#include "backend/cpu/cpu_backend.h"
#include "backend/cuda_runtime.h"
#include "core/check.h"
#include "ember/cuda.h"

namespace ember {
namespace {

std::array<Backend*, kNumDeviceTypes> g_backends{};

void register_builtin_backends() { register_backend(DeviceType::CPU, &cpu::cpu_backend()); }

// Only a CUDA device asks for the CUDA backend, so a program that never does never loads it.
void ensure_cuda_registered() {
  static std::once_flag once;
  std::call_once(once, [] {
    if (g_backends[static_cast<size_t>(DeviceType::CUDA)] != nullptr) return;  // a test's stand-in
    if (CudaRuntime* runtime = cuda_runtime()) register_backend(DeviceType::CUDA, &runtime->backend());
  });
}

void ensure_registered() {
  static std::once_flag once;
  std::call_once(once, register_builtin_backends);
}

}  // namespace

void register_backend(DeviceType type, Backend* backend) { g_backends[static_cast<size_t>(type)] = backend; }

Backend* find_backend(DeviceType type) {
  ensure_registered();
  if (type == DeviceType::CUDA) ensure_cuda_registered();
  return g_backends[static_cast<size_t>(type)];
}

namespace detail {

DeviceMemory* find_device_memory(DeviceType type) { return find_backend(type); }

DeviceMemory& device_memory_for(Device& device) {
  Backend& backend = backend_for(device);
  device = normalize_device(device);
  return backend;
}

}  // namespace detail

Device normalize_device(Device device) {
  if (device.is_cpu()) return Device(DeviceType::CPU);
  if (!device.has_index()) return Device(device.type(), device.is_cuda() ? cuda::current_device() : 0);
  return device;
}

Backend& backend_for(Device device) {
  switch (device.type()) {
    case DeviceType::CPU:
      return *find_backend(DeviceType::CPU);
    case DeviceType::CUDA: {
      EMBER_CHECK(cuda::is_available(), "Cannot use device '", device,
                  "': CUDA is not available: ", cuda::unavailable_reason(),
                  ". Use ember::best_device() to fall back to the CPU.");
      int index = device.has_index() ? device.index() : 0;
      EMBER_CHECK(index < cuda::device_count(), "CUDA error: invalid device ordinal (device '", device,
                  "' requested, but only ", cuda::device_count(), " CUDA device(s) are visible)");
      Backend* b = find_backend(DeviceType::CUDA);
      EMBER_CHECK(b != nullptr, "Cannot use device '", device, "': this build of ember has no CUDA backend");
      return *b;
    }
    case DeviceType::MPS: {
      // ember has no MPS backend yet, so only tests register one: tests/support/host_device_backend.h
      // runs the CPU kernels under this device type, which makes a tensor created on the wrong
      // device fail as it would on a GPU. A registered MPS backend is used as is, without the
      // availability check; a real one must be registered only when mps::is_available().
      if (Backend* b = find_backend(DeviceType::MPS)) {
        const int index = device.has_index() ? device.index() : 0;
        EMBER_CHECK(index < b->device_count(), "MPS error: invalid device ordinal (device '", device,
                    "' requested, but only ", b->device_count(), " MPS device(s) are visible)");
        return *b;
      }
      EMBER_CHECK(mps::is_available(), "Cannot use device '", device,
                  "': MPS is not available: ", mps::unavailable_reason(),
                  ". Use ember::best_device() to fall back to the CPU.");
      detail::fail("Cannot use device '", device, "': ember has no MPS backend");
    }
  }
  detail::fail("unknown device type");
}

}  // namespace ember
