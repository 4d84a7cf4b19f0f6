#pragma once
/// Devices with PyTorch's grammar ("cpu", "cuda", "cuda:1", "mps:0"), printing, equality and
/// hashing, and the availability queries a program asks before it picks one.
#include <cstdint>
#include <functional>
#include <iosfwd>
#include <string>
#include <string_view>

namespace ember {

enum class DeviceType : uint8_t { CPU = 0, CUDA = 1, MPS = 2 };
inline constexpr int kNumDeviceTypes = 3;

inline constexpr DeviceType kCPU = DeviceType::CPU;
inline constexpr DeviceType kCUDA = DeviceType::CUDA;
inline constexpr DeviceType kMPS = DeviceType::MPS;

/// "cpu", "cuda" or "mps".
std::string_view device_type_name(DeviceType t);

/// A device type plus an optional index; -1 means "no index" (the current device of that type).
class Device {
 public:
  Device(DeviceType type = DeviceType::CPU, int index = -1);  // NOLINT: implicit, as in libtorch
  /// Parses "cpu", "cuda", "cuda:1", "mps", "mps:0"; throws ember::Error with PyTorch's messages.
  explicit Device(std::string_view spec);
  explicit Device(const char* spec) : Device(std::string_view(spec)) {}
  explicit Device(const std::string& spec) : Device(std::string_view(spec)) {}

  DeviceType type() const { return type_; }
  int index() const { return index_; }
  bool has_index() const { return index_ != -1; }
  bool is_cpu() const { return type_ == DeviceType::CPU; }
  bool is_cuda() const { return type_ == DeviceType::CUDA; }
  bool is_mps() const { return type_ == DeviceType::MPS; }

  /// "cuda:0", "cpu" — what PyTorch's str(device) prints.
  std::string str() const;
  /// "device(type='cuda', index=0)" — what PyTorch's repr(device) prints.
  std::string repr() const;

  friend bool operator==(const Device& a, const Device& b) { return a.type_ == b.type_ && a.index_ == b.index_; }

 private:
  DeviceType type_;
  int16_t index_;
};

std::ostream& operator<<(std::ostream& os, const Device& d);
std::ostream& operator<<(std::ostream& os, DeviceType t);

/// cuda:0 if CUDA is usable, else mps:0 if MPS is usable, else cpu. The environment variable
/// EMBER_DEVICE (a device string) overrides the choice; a bad value is an ember::Error.
Device best_device();

/// A human-readable account, per backend, of whether it is built, whether it is usable and why
/// not, and which device best_device() chose and why.
std::string device_report();

namespace cuda {
/// True when ember was built with CUDA and a driver reports at least one GPU. Never throws.
bool is_available() noexcept;
/// The number of usable GPUs; 0 when CUDA is not built or there is no driver. Never throws.
int device_count() noexcept;
/// Whether this build of ember contains CUDA support at all.
bool is_built() noexcept;
/// Why CUDA is not usable ("" when it is).
std::string unavailable_reason();
}  // namespace cuda

namespace mps {
/// True only on Apple silicon with an MPS-enabled build. Never throws.
bool is_available() noexcept;
bool is_built() noexcept;
std::string unavailable_reason();
}  // namespace mps

}  // namespace ember

template <>
struct std::hash<ember::Device> {
  size_t operator()(const ember::Device& d) const noexcept {
    return (static_cast<size_t>(d.type()) << 16) ^ static_cast<size_t>(static_cast<uint16_t>(d.index()));
  }
};
