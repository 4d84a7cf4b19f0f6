// Fuzzes the device-string parser ember::Device(std::string_view). An accepted string must name a
// valid device whose str() parses back to the same device.
#include "ember/device.h"
#include "fuzz_common.h"

namespace ember::fuzz {

void device_one_input(std::span<const uint8_t> bytes) {
  const std::string_view spec(reinterpret_cast<const char*>(bytes.data()), bytes.size());
  Device device;
  try {
    device = Device(spec);
  } catch (const Error&) {
    return;
  }
  accepted("printing and re-parsing an accepted device", [&] {
    expect(device.index() >= -1 && device.index() < 512, "a parsed device has an index out of range");
    expect(!device.is_cpu() || device.index() <= 0, "a parsed cpu device has an index above 0");
    expect(Device(device.str()) == device, "str() of a parsed device does not parse back to it");
    expect(device.str() == spec, "a parsed device string does not print as itself");
    expect(!device.repr().empty(), "repr() is empty");
  });
}

}  // namespace ember::fuzz

EMBER_FUZZ_ENTRY(ember::fuzz::device_one_input)
