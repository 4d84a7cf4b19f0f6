#include "ember/device.h"

#include <cstdlib>
#include <ostream>
#include <string>

#include "backend/cuda_probe.h"
#include "core/check.h"

namespace ember {

std::string_view device_type_name(DeviceType t) {
  switch (t) {
    case DeviceType::CPU: return "cpu";
    case DeviceType::CUDA: return "cuda";
    case DeviceType::MPS: return "mps";
  }
  return "?";
}

namespace {

void validate(DeviceType type, int index) {
  EMBER_CHECK(index >= -1 && index < 512, "Device index must be between -1 and 511 inclusively, got ", index);
  EMBER_CHECK(type != DeviceType::CPU || index <= 0, "CPU device index must be -1 or zero, got ", index);
}

bool is_name_char(char c) { return (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || c == '_'; }
bool is_digit(char c) { return c >= '0' && c <= '9'; }

}  // namespace

Device::Device(DeviceType type, int index) : type_(type), index_(static_cast<int16_t>(index)) {
  validate(type, index);
}

// PyTorch's grammar: ([a-zA-Z_]+)(?::([1-9]\d*|0))? with no trimming and no case folding.
Device::Device(std::string_view spec) {
  EMBER_CHECK(!spec.empty(), "Device string must not be empty");
  enum class State { Name, IndexStart, IndexRest, Error } state = State::Name;
  std::string name, digits;
  for (char c : spec) {
    if (state == State::Name) {
      if (is_name_char(c)) {
        name += c;
      } else if (c == ':') {
        state = State::IndexStart;
      } else {
        state = State::Error;
      }
    } else if (state == State::IndexStart) {
      state = is_digit(c) ? State::IndexRest : State::Error;
      digits += c;
    } else if (state == State::IndexRest) {
      if (digits[0] == '0' || !is_digit(c)) {
        state = State::Error;
      } else {
        digits += c;
      }
    }
    if (state == State::Error) break;
  }
  EMBER_CHECK(!name.empty() && state != State::Error && state != State::IndexStart, "Invalid device string: '",
              spec, "'");
  int index = -1;
  if (!digits.empty()) {
    // Larger indices are rejected rather than silently truncated (PyTorch 1.13 printed cuda:-97).
    EMBER_CHECK(digits.size() <= 3 && std::stoi(digits) < 512, "Device index must be between -1 and 511 inclusively, got ",
                digits, " in device string '", spec, "'");
    index = std::stoi(digits);
  }
  if (name == "cpu") {
    type_ = DeviceType::CPU;
  } else if (name == "cuda") {
    type_ = DeviceType::CUDA;
  } else if (name == "mps") {
    type_ = DeviceType::MPS;
  } else {
    detail::fail("Expected one of cpu, cuda, mps device type at start of device string: ", name);
  }
  index_ = static_cast<int16_t>(index);
  validate(type_, index);
}

std::string Device::str() const {
  std::string s(device_type_name(type_));
  if (has_index()) s += ":" + std::to_string(index_);
  return s;
}

std::string Device::repr() const {
  std::string s = "device(type='" + std::string(device_type_name(type_)) + "'";
  if (has_index()) s += ", index=" + std::to_string(index_);
  return s + ")";
}

std::ostream& operator<<(std::ostream& os, const Device& d) { return os << d.str(); }
std::ostream& operator<<(std::ostream& os, DeviceType t) { return os << device_type_name(t); }

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
  return {Device(DeviceType::CPU), "no GPU is usable (CUDA: " + cuda::unavailable_reason() +
                                       "; MPS: " + mps::unavailable_reason() + ")"};
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
