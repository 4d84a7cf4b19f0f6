// Device: parsing and printing device strings ("cpu", "cuda:1"). Which devices this machine can
// use is the backends' business: src/backend/availability.cpp.
#include "ember/device.h"

#include <cstdlib>
#include <ostream>
#include <string>

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

}  // namespace ember
