// Which devices this machine can use: cuda::/mps:: availability, best_device() and the report
// of `ember --version`. The CUDA answers come from the driver probe the loader keeps
// (backend/cuda_probe.h); ember has no MPS backend yet.
#include <cstdlib>
#include <string>

#include "backend/cuda_probe.h"
#include "core/check.h"
#include "ember/device.h"

namespace ember {

namespace cuda {
bool is_built() noexcept { return cuda_probe().built; }
int device_count() noexcept { return cuda_probe().device_count; }
bool is_available() noexcept { return device_count() > 0; }
std::string unavailable_reason() { return cuda_probe().reason; }
}  // namespace cuda

namespace mps {
bool is_built() noexcept { return false; }
bool is_available() noexcept { return false; }
std::string unavailable_reason() {
#if defined(__APPLE__) && defined(__aarch64__)
  return "ember was built without MPS support (the MPS backend is not implemented yet)";
#else
  return "MPS needs Apple silicon (arm64 macOS); this machine is not one";
#endif
}
}  // namespace mps

namespace {

struct Choice {
  Device device;
  std::string why;
};

Choice choose_device() {
  if (const char* env = std::getenv("EMBER_DEVICE"); env != nullptr) {
    try {
      return {Device(std::string_view(env)), std::string("set by EMBER_DEVICE=") + env};
    } catch (const Error& e) {
      detail::fail("The environment variable EMBER_DEVICE holds an invalid device '", env, "': ", e.what(),
                   ". Use cpu, cuda, cuda:N or mps, or unset it.");
    }
  }
  if (cuda::is_available()) return {Device(DeviceType::CUDA, 0), "CUDA is available"};
  if (mps::is_available()) return {Device(DeviceType::MPS, 0), "MPS is available"};
  return {Device(DeviceType::CPU),
          "no GPU is usable (CUDA: " + cuda::unavailable_reason() + "; MPS: " + mps::unavailable_reason() + ")"};
}

}  // namespace

Device best_device() { return choose_device().device; }

std::string device_report() {
  const CudaProbe& probe = cuda_probe();
  std::string r;
  r += "CUDA: built " + std::string(probe.built ? "yes" : "no");
  if (probe.built) {
    r += " (runtime " + probe.runtime_version + ", driver " +
         (probe.driver_version.empty() ? std::string("none") : probe.driver_version) + ")";
  }
  r += "; available " + std::string(probe.device_count > 0 ? "yes" : "no");
  if (probe.device_count == 0) r += " (" + probe.reason + ")";
  r += "; devices " + std::to_string(probe.device_count) + "\n";
  for (size_t i = 0; i < probe.device_names.size(); ++i) {
    r += "  cuda:" + std::to_string(i) + " " + probe.device_names[i] + "\n";
  }
  r += "MPS: built " + std::string(mps::is_built() ? "yes" : "no") + "; available " +
       (mps::is_available() ? "yes" : "no (" + mps::unavailable_reason() + ")") + "\n";
  r += "CPU: available yes\n";
  Choice choice = choose_device();
  r += "Chosen device: " + choice.device.str() + " (" + choice.why + ")\n";
  return r;
}

}  // namespace ember
