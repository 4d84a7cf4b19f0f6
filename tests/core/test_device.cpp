#include <gtest/gtest.h>

#include <cstdlib>
#include <string>
#include <unordered_set>

#include "ember/ember.h"

namespace {

using ember::Device;
using ember::DeviceType;

std::string parse_error(const char* spec) {
  try {
    Device d(spec);
    return "no error, parsed as " + d.str();
  } catch (const ember::Error& e) {
    return e.what();
  }
}

TEST(Device, ParsesPyTorchGrammar) {
  EXPECT_EQ(Device("cpu").str(), "cpu");
  EXPECT_EQ(Device("cuda").str(), "cuda");
  EXPECT_EQ(Device("cuda:1").str(), "cuda:1");
  EXPECT_EQ(Device("mps").str(), "mps");
  EXPECT_EQ(Device("mps:0").str(), "mps:0");
  EXPECT_EQ(Device("cpu:0").str(), "cpu:0");
  EXPECT_EQ(Device("cuda:10").index(), 10);
  EXPECT_EQ(Device("cuda").type(), DeviceType::CUDA);
  EXPECT_FALSE(Device("cuda").has_index());
}

TEST(Device, ReprMatchesPython) {
  EXPECT_EQ(Device("cpu").repr(), "device(type='cpu')");
  EXPECT_EQ(Device("cuda:1").repr(), "device(type='cuda', index=1)");
  EXPECT_EQ(Device("mps:0").repr(), "device(type='mps', index=0)");
}

TEST(Device, RejectsMalformedStringsWithPyTorchMessages) {
  EXPECT_EQ(parse_error(""), "Device string must not be empty");
  for (const char* bad : {"cuda:", " cuda", "cuda ", "cuda: 0", "cuda:01", "cuda:-1", "cuda:1:2", ":0", "cuda0"}) {
    EXPECT_EQ(parse_error(bad), std::string("Invalid device string: '") + bad + "'") << bad;
  }
  EXPECT_EQ(parse_error("CUDA"), "Expected one of cpu, cuda, mps device type at start of device string: CUDA");
  EXPECT_EQ(parse_error("gpu:0"), "Expected one of cpu, cuda, mps device type at start of device string: gpu");
  EXPECT_NE(parse_error("cuda:99999").find("Device index must be between -1 and 511"), std::string::npos);
  EXPECT_NE(parse_error("cpu:1").find("CPU device index must be -1 or zero, got 1"), std::string::npos);
}

TEST(Device, EqualityAndHashUseTypeAndIndexExactly) {
  EXPECT_FALSE(Device("cuda") == Device("cuda:0"));
  EXPECT_FALSE(Device("cpu") == Device("cpu:0"));
  EXPECT_TRUE(Device("cuda:1") == Device(DeviceType::CUDA, 1));
  std::unordered_set<Device> set{Device("cpu"), Device("cuda"), Device("cuda:0"), Device("cuda:0")};
  EXPECT_EQ(set.size(), 3u);
}

TEST(Device, StreamsLikeStr) {
  std::ostringstream os;
  os << Device("cuda:3") << " " << DeviceType::MPS;
  EXPECT_EQ(os.str(), "cuda:3 mps");
}

TEST(Availability, NeverThrowsAndIsConsistent) {
  EXPECT_NO_THROW(ember::cuda::is_available());
  EXPECT_NO_THROW(ember::mps::is_available());
  EXPECT_EQ(ember::cuda::is_available(), ember::cuda::device_count() > 0);
  EXPECT_FALSE(ember::mps::is_available());  // no MPS backend exists yet
  if (!ember::cuda::is_available()) {
    EXPECT_FALSE(ember::cuda::unavailable_reason().empty());
  }
}

TEST(Availability, BestDeviceFollowsTheWalkthroughChain) {
  unsetenv("EMBER_DEVICE");
  Device expected = ember::cuda::is_available() ? Device("cuda:0")
                    : ember::mps::is_available() ? Device("mps:0")
                                                 : Device("cpu");
  EXPECT_EQ(ember::best_device(), expected);
}

TEST(Availability, EnvironmentOverridesAndBadValuesNameTheVariable) {
  setenv("EMBER_DEVICE", "cpu", 1);
  EXPECT_EQ(ember::best_device(), Device("cpu"));
  setenv("EMBER_DEVICE", "gpu", 1);
  try {
    ember::best_device();
    ADD_FAILURE() << "expected an error";
  } catch (const ember::Error& e) {
    EXPECT_NE(std::string(e.what()).find("EMBER_DEVICE"), std::string::npos) << e.what();
  }
  unsetenv("EMBER_DEVICE");
}

TEST(Availability, ReportNamesEveryBackendAndTheChoice) {
  unsetenv("EMBER_DEVICE");
  std::string r = ember::device_report();
  EXPECT_NE(r.find("CUDA: built"), std::string::npos) << r;
  EXPECT_NE(r.find("MPS: built no"), std::string::npos) << r;
  EXPECT_NE(r.find("Chosen device: " + ember::best_device().str()), std::string::npos) << r;
  if (!ember::cuda::is_available()) {
    EXPECT_NE(r.find(ember::cuda::unavailable_reason()), std::string::npos) << r;
  }
}

TEST(Availability, UnavailableDevicesAreErrorsNotCrashes) {
  if (ember::cuda::is_available()) GTEST_SKIP() << "a GPU is present";
  try {
    ember::zeros({2}, Device("cuda"));
    ADD_FAILURE() << "expected an error";
  } catch (const ember::Error& e) {
    std::string msg = e.what();
    EXPECT_NE(msg.find("cuda"), std::string::npos) << msg;
    EXPECT_NE(msg.find(ember::cuda::unavailable_reason()), std::string::npos) << msg;
  }
  auto x = ember::ones({2});
  EXPECT_THROW(x.to(Device("cuda:1")), ember::Error);
  EXPECT_THROW(x.cuda(), ember::Error);
  EXPECT_THROW(x.to(Device("mps")), ember::Error);
  EXPECT_THROW(ember::rand({2}, Device("mps")), ember::Error);
}

}  // namespace
