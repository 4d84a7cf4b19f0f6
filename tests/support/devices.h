#pragma once
// Device-parametrised tests: each accelerator case runs the same computation on the device and
// on the CPU (the reference) and compares. The accelerator suites are always instantiated, so on
// a machine without a usable GPU their cases exist and SKIP, naming the reason, instead of
// silently vanishing from the test list.
//
//   class DeviceOps : public ember_test::DeviceTest {};
//   TEST_P(DeviceOps, Exp) {
//     ember::Tensor x = ember::randn({3, 4});
//     EXPECT_CLOSE_TO_CPU(ember::exp(x.to(device())), ember::exp(x), 1e-5, 1e-6);
//   }
//   EMBER_INSTANTIATE_DEVICE_SUITE(DeviceOps);
//
// In a build without MPS, the suites also run on a stand-in device ("host_stand_in":
// support/host_device_backend.h), mps:0 backed by the CPU's kernels and host memory. It cannot
// check a GPU kernel's math, but it runs every test's code and every op's device handling, so a
// tensor made on the wrong device, or a CPU tensor handed to a device kernel, fails here as it
// would on a GPU.
//
// Setting EMBER_PARITY_SELF_TEST=1 adds the CPU itself to the parameters: the suites then run CPU
// against CPU, which checks the tests' own code (shapes, API use) on a machine without a GPU.
#include <gtest/gtest.h>

#include <cmath>
#include <cstdlib>
#include <limits>
#include <optional>
#include <sstream>
#include <string>
#include <vector>

#include "ember/backends.h"
#include "ember/device.h"
#include "ember/tensor.h"
#include "support/host_device_backend.h"

namespace ember_test {

/// The non-CPU devices usable on this machine (cuda:0 when CUDA is available; mps:0 one day).
inline std::vector<ember::Device> accelerators() {
  std::vector<ember::Device> out;
  if (ember::cuda::is_available()) out.emplace_back(ember::DeviceType::CUDA, 0);
  if (ember::mps::is_available()) out.emplace_back(ember::DeviceType::MPS, 0);
  return out;
}

/// Whether `device` can hold tensors here; when it cannot, `why` says so.
inline bool device_usable(const ember::Device& device, std::string* why) {
  switch (device.type()) {
    case ember::DeviceType::CPU:
      return true;
    case ember::DeviceType::CUDA:
      if (ember::cuda::is_available()) return true;
      *why = "cuda: " + ember::cuda::unavailable_reason();
      return false;
    case ember::DeviceType::MPS:
      if (ember::mps::is_available()) return true;
      *why = "mps: " + ember::mps::unavailable_reason();
      return false;
  }
  *why = "unknown device type";
  return false;
}

/// Whether `device` is the stand-in (mps:0 in a build without MPS).
inline bool is_stand_in(const ember::Device& device) { return device.is_mps() && !ember::mps::is_built(); }

/// What the device suites are instantiated with: every accelerator type ember can be built for,
/// usable or not (unusable ones skip), and mps:0 as the stand-in where ember has no MPS.
inline std::vector<ember::Device> device_params() {
  std::vector<ember::Device> out{ember::Device(ember::DeviceType::CUDA, 0), ember::Device(ember::DeviceType::MPS, 0)};
  if (const char* self = std::getenv("EMBER_PARITY_SELF_TEST"); self != nullptr && std::string(self) == "1") {
    out.emplace_back(ember::DeviceType::CPU);
  }
  return out;
}

/// Test-name suffix: "cuda", "mps", "cpu" (gtest allows only alphanumerics and '_').
struct DeviceParamName {
  std::string operator()(const ::testing::TestParamInfo<ember::Device>& info) const {
    return is_stand_in(info.param) ? "host_stand_in" : std::string(ember::device_type_name(info.param.type()));
  }
};

/// Base fixture of device-parametrised suites: skips, naming the reason, when GetParam() is not
/// usable here.
class DeviceTest : public ::testing::TestWithParam<ember::Device> {
 protected:
  void SetUp() override {
    // float32 convolutions are compared with the CPU's to float32 rounding, so they run without
    // TF32 here, which cuDNN otherwise uses by default (backends::cudnn::allow_tf32, as PyTorch's;
    // PyTorch's own tests turn it off the same way). A test of TF32 sets its own guard.
    exact_convolutions_.emplace(ember::backends::cudnn::Flags{.allow_tf32 = false});
    if (is_stand_in(GetParam())) {
      stand_in_.emplace();
      return;
    }
    std::string why;
    if (!device_usable(GetParam(), &why)) GTEST_SKIP() << why;
  }
  ember::Device device() const { return GetParam(); }

 private:
  std::optional<ember::backends::cudnn::FlagsGuard> exact_convolutions_;
  std::optional<ScopedHostDevice> stand_in_;  // registered for this test only
};

#define EMBER_INSTANTIATE_DEVICE_SUITE(Suite)                                                       \
  INSTANTIATE_TEST_SUITE_P(Accelerators, Suite, ::testing::ValuesIn(::ember_test::device_params()), \
                           ::ember_test::DeviceParamName())

namespace detail {

inline std::string index_string(int64_t flat, ember::IntList sizes) {
  std::vector<int64_t> idx(sizes.size());
  for (size_t d = sizes.size(); d-- > 0;) {
    idx[d] = sizes[d] == 0 ? 0 : flat % sizes[d];
    flat = sizes[d] == 0 ? 0 : flat / sizes[d];
  }
  std::ostringstream os;
  os << "[";
  for (size_t d = 0; d < idx.size(); ++d) os << (d ? ", " : "") << idx[d];
  os << "]";
  return os.str();
}

inline std::string sizes_string(ember::IntList sizes) {
  std::ostringstream os;
  os << "[";
  for (size_t d = 0; d < sizes.size(); ++d) os << (d ? ", " : "") << sizes[d];
  os << "]";
  return os.str();
}

}  // namespace detail

/// Whether a result computed on an accelerator matches the CPU's: same sizes and dtype, and every
/// element within
/// atol + rtol * |reference| (NaNs and infinities must match exactly). On failure the message names
/// `what` and the worst element.
inline ::testing::AssertionResult close_to_cpu(const ember::Tensor& on_device, const ember::Tensor& cpu_reference,
                                               double rtol, double atol, const std::string& what) {
  if (!on_device.defined() || !cpu_reference.defined()) {
    return ::testing::AssertionFailure() << what << ": undefined tensor";
  }
  if (!cpu_reference.is_cpu()) {
    return ::testing::AssertionFailure() << what << ": the reference is on " << cpu_reference.device()
                                         << ", not the CPU";
  }
  if (on_device.sizes().vec() != cpu_reference.sizes().vec()) {
    return ::testing::AssertionFailure() << what << ": sizes " << detail::sizes_string(on_device.sizes()) << " on "
                                         << on_device.device() << " but " << detail::sizes_string(cpu_reference.sizes())
                                         << " on the CPU";
  }
  if (on_device.dtype() != cpu_reference.dtype()) {
    return ::testing::AssertionFailure() << what << ": dtype " << ember::dtype_name(on_device.dtype()) << " on "
                                         << on_device.device() << " but " << ember::dtype_name(cpu_reference.dtype())
                                         << " on the CPU";
  }
  const ember::Tensor got = on_device.to(ember::Device(ember::DeviceType::CPU)).to(ember::kFloat64).contiguous();
  const ember::Tensor want = cpu_reference.to(ember::kFloat64).contiguous();
  const double* g = got.data_ptr<double>();
  const double* w = want.data_ptr<double>();
  constexpr double kInf = std::numeric_limits<double>::infinity();
  int64_t worst = -1, mismatches = 0;
  double worst_excess = 0;
  for (int64_t i = 0; i < got.numel(); ++i) {
    const double a = g[i], b = w[i];
    if (std::isnan(a) || std::isnan(b) || std::isinf(a) || std::isinf(b)) {
      const bool same = (std::isnan(a) && std::isnan(b)) || a == b;
      if (!same) {
        ++mismatches;
        if (worst_excess != kInf) worst = i;
        worst_excess = kInf;
      }
      continue;
    }
    const double excess = std::abs(a - b) - (atol + rtol * std::abs(b));
    if (excess > 0) {
      ++mismatches;
      if (excess > worst_excess) {
        worst_excess = excess;
        worst = i;
      }
    }
  }
  if (mismatches == 0) return ::testing::AssertionSuccess();
  std::ostringstream os;
  os.precision(9);
  os << what << " on " << on_device.device() << " differs from the CPU in " << mismatches << " of " << got.numel()
     << " elements (rtol " << rtol << ", atol " << atol << "); worst at " << detail::index_string(worst, got.sizes())
     << ": " << g[worst] << " vs " << w[worst] << " (|diff| " << std::abs(g[worst] - w[worst]) << ")";
  return ::testing::AssertionFailure() << os.str();
}

/// Adds a failure (not fatal) when `on_device` does not match `cpu_reference`; see close_to_cpu.
inline void expect_close_to_cpu(const ember::Tensor& on_device, const ember::Tensor& cpu_reference, double rtol,
                                double atol, const std::string& what = "result") {
  EXPECT_TRUE(close_to_cpu(on_device, cpu_reference, rtol, atol, what));
}

}  // namespace ember_test

/// The same check, reporting the caller's line and naming the device expression as the op.
#define EXPECT_CLOSE_TO_CPU(on_device, cpu_reference, rtol, atol) \
  EXPECT_TRUE(::ember_test::close_to_cpu((on_device), (cpu_reference), (rtol), (atol), #on_device))
