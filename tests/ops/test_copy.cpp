// Copies between two devices of one type (cuda:0 -> cuda:1) go device to device through
// Backend::copy_between_devices, never through the host. Here the stand-in device plays two GPUs
// (mps:0 and mps:1) and counts the host copies; the device suite at the end runs the entry point
// on whatever accelerator the machine has (cuda:0 to itself on one GPU, cuda:0 -> cuda:1 on two).
#include <gtest/gtest.h>

#include <cstring>
#include <vector>

#include "backend/backend.h"
#include "backend/cpu/cpu_backend.h"
#include "ember/ember.h"
#include "support/devices.h"
#include "support/error_of.h"
#include "support/host_device_backend.h"

namespace {

using namespace ember;
using ember_test::error_of;
using ember_test::host_device_backend;

const Device kDev0("mps:0");
const Device kDev1("mps:1");

class DeviceCopies : public ::testing::Test {
 protected:
  ember_test::ScopedHostDevice devices_{2};

  static ember_test::HostDeviceBackend::Counts counts() { return host_device_backend().counts(); }
  /// The counts of what ran since the last call.
  static ember_test::HostDeviceBackend::Counts take_counts() {
    const auto c = counts();
    host_device_backend().reset_counts();
    return c;
  }
};

TEST_F(DeviceCopies, ToAnotherIndexMovesTheBytesDeviceToDevice) {
  const Tensor host = arange(12, TensorOptions(kFloat32)).reshape({3, 4});
  const Tensor on0 = host.to(kDev0);
  take_counts();
  const Tensor on1 = on0.to(kDev1);
  const auto c = take_counts();
  EXPECT_EQ(c.copy_between_devices, 1);
  EXPECT_EQ(c.copy_to_host, 0);
  EXPECT_EQ(c.copy_from_host, 0);
  EXPECT_EQ(on1.device(), kDev1);
  EXPECT_TRUE(equal(on1.to(Device(kCPU)), host));
  // And back, and the same index: to() aliases, to(copy=true) copies on the device.
  EXPECT_TRUE(equal(on1.to(kDev0).to(Device(kCPU)), host));
  take_counts();
  EXPECT_TRUE(on0.to(kDev0).is_same(on0));
  const Tensor copied = on0.to(kDev0, /*non_blocking=*/false, /*copy=*/true);
  EXPECT_FALSE(copied.is_alias_of(on0));
  const auto same = take_counts();
  EXPECT_EQ(same.copy_to_host + same.copy_from_host + same.copy_between_devices, 0);
}

TEST_F(DeviceCopies, CopyIntoAnotherDeviceTakesAnyLayoutAndDtype) {
  const Tensor host = arange(12, TensorOptions(kFloat32)).reshape({3, 4});
  const Tensor src = host.to(kDev0);
  take_counts();
  {  // non-contiguous source: made contiguous on its own device first
    Tensor dst = empty({4, 3}, TensorOptions(kFloat32).device(kDev1));
    dst.copy_(src.t());
    EXPECT_TRUE(equal(dst.to(Device(kCPU)), host.t()));
  }
  {  // non-contiguous destination: the bytes land in a temporary there, then are laid out
    const Tensor base = zeros({4, 3}, TensorOptions(kFloat32).device(kDev1));
    Tensor dst = base.t();
    dst.copy_(src);
    EXPECT_TRUE(equal(base.to(Device(kCPU)), host.t()));
  }
  {  // another dtype and a broadcast source: converted and expanded on the destination
    const Tensor row = arange(4, TensorOptions(kInt64)).to(kDev0);
    Tensor dst = empty({3, 4}, TensorOptions(kFloat64).device(kDev1));
    dst.copy_(row);
    EXPECT_TRUE(equal(dst.to(Device(kCPU)), arange(4, TensorOptions(kFloat64)).expand({3, 4})));
    EXPECT_TRUE(equal(src.to(kDev1, kFloat64).to(Device(kCPU)), host.to(kFloat64)));
  }
  {  // a view at an offset, and an empty tensor
    EXPECT_TRUE(equal(src.select(0, 2).to(kDev1).to(Device(kCPU)), host.select(0, 2)));
    EXPECT_EQ(src.narrow(1, 0, 0).to(kDev1).numel(), 0);
  }
  take_counts();  // what the checks above read back
  const Tensor dst = empty({3, 4}, TensorOptions(kFloat64).device(kDev1));
  Tensor dst_t = dst.t();
  dst_t.copy_(src.t());
  const auto c = take_counts();
  EXPECT_EQ(c.copy_to_host + c.copy_from_host, 0);
  EXPECT_EQ(c.copy_between_devices, 1);
  EXPECT_TRUE(equal(dst.to(Device(kCPU)), host.to(kFloat64)));
}

TEST_F(DeviceCopies, CopyBumpsTheVersionAndRecordsTheGradient) {
  const Tensor x = arange(6, TensorOptions(kFloat32)).to(kDev0).requires_grad_();
  const Tensor y = x.to(kDev1);
  EXPECT_EQ(y.device(), kDev1);
  take_counts();
  (y * y).sum().backward();
  // The gradient goes back device to device as well.
  const auto c = take_counts();
  EXPECT_EQ(c.copy_to_host + c.copy_from_host, 0);
  EXPECT_EQ(c.copy_between_devices, 1);
  ASSERT_TRUE(x.grad().defined());
  EXPECT_EQ(x.grad().device(), kDev0);
  EXPECT_TRUE(equal(x.grad().to(Device(kCPU)), arange(6, TensorOptions(kFloat32)) * 2));

  Tensor target = zeros({6}, TensorOptions(kFloat32).device(kDev1));
  const int64_t before = target._version();
  target.copy_(x.detach());
  EXPECT_GT(target._version(), before);
}

TEST_F(DeviceCopies, KernelsRefuseAnotherDevicesMemory) {
  const Tensor on1 = zeros({4}, TensorOptions(kFloat32).device(kDev1));
  TensorView mislabelled = view_of(on1);
  mislabelled.device_index = 0;
  const std::string message = error_of([&] { host_device_backend().fill(mislabelled, 1.0); });
  EXPECT_NE(message.find("is not memory of mps:0: it lies on mps:1"), std::string::npos) << message;
  // copy_between_devices checks both ends the same way.
  const Tensor on0 = zeros({4}, TensorOptions(kFloat32).device(kDev0));
  EXPECT_NE(error_of([&] {
              host_device_backend().copy_between_devices(on0.data_ptr(), 1, on1.data_ptr(), 1, 16);
            }).find("'dst'"),
            std::string::npos);
  const Tensor larger = zeros({8}, TensorOptions(kFloat32).device(kDev0));
  EXPECT_NE(error_of([&] {
              host_device_backend().copy_between_devices(larger.data_ptr(), 0, on1.data_ptr(), 1, 17);
            }).find("'src' (17 bytes"),
            std::string::npos);
  EXPECT_NE(error_of([&] {
              host_device_backend().copy_between_devices(on0.data_ptr(), 0, on1.data_ptr(), 2, 4);
            }).find("device index 2 requested, but only 2 mps device(s) exist"),
            std::string::npos);
}

TEST_F(DeviceCopies, TheStandInIsOneDeviceOutsideSuchAScope) {
  // ScopedHostDevice() (the device suites') has one device, as before.
  ember_test::ScopedHostDevice one;
  EXPECT_EQ(host_device_backend().device_count(), 1);
  EXPECT_NE(error_of([] { zeros({2}, TensorOptions().device(kDev1)); }).find("invalid device ordinal"),
            std::string::npos);
}

TEST(CpuCopyBetweenDevices, IsAMoveWithinTheOneCpuDevice) {
  cpu::CpuBackend& cpu = cpu::cpu_backend();
  std::vector<int32_t> data = {1, 2, 3, 4, 5};
  std::vector<int32_t> out(5, 0);
  cpu.copy_between_devices(out.data(), 0, data.data(), 0, 5 * sizeof(int32_t));
  EXPECT_EQ(out, data);
  cpu.copy_between_devices(data.data() + 1, 0, data.data(), 0, 4 * sizeof(int32_t));  // overlapping
  EXPECT_EQ(data, (std::vector<int32_t>{1, 1, 2, 3, 4}));
  cpu.copy_between_devices(nullptr, 0, nullptr, 0, 0);
  EXPECT_NE(error_of([&] { cpu.copy_between_devices(out.data(), 1, data.data(), 0, 4); }).find("one device"),
            std::string::npos);
}

// ---- on the machine's accelerator: the entry point itself, one device or two ----

class DeviceCopyBetweenDevices : public ember_test::DeviceTest {};

TEST_P(DeviceCopyBetweenDevices, OnOneDeviceIsAnOrderedDeviceCopy) {
  Backend& backend = backend_for(device());
  const Tensor host = randn({1000, 37});
  const Tensor src = host.to(device());
  const Tensor dst = empty({1000, 37}, TensorOptions().device(device()));
  const int index = device().index();
  backend.copy_between_devices(dst.data_ptr(), index, src.data_ptr(), index, src.nbytes());
  EXPECT_TRUE(equal(dst.to(Device(kCPU)), host));
  backend.copy_between_devices(dst.data_ptr(), index, src.data_ptr(), index, 0);  // nothing to do
}

TEST_P(DeviceCopyBetweenDevices, BetweenTwoDevicesGoesBothWays) {
  const Device first(device().type(), 0);
  const Device second(device().type(), 1);
  const int count = device().is_cuda() ? cuda::device_count() : host_device_backend().device_count();
  if (count < 2) GTEST_SKIP() << "one " << device_type_name(device().type()) << " device here";
  // Large enough that a copy which the destination's stream did not wait for would be caught
  // half done by the read back, which runs on the destination's stream.
  const Tensor host = randn({1 << 22});
  const Tensor on_second = (host.to(first) * 2).to(second);
  EXPECT_TRUE(equal(on_second.to(Device(kCPU)), host * 2));
  const Tensor back = (on_second + 1).to(first);
  EXPECT_TRUE(equal(back.to(Device(kCPU)), host * 2 + 1));
  const Tensor converted = on_second.to(first, kFloat64);
  EXPECT_TRUE(equal(converted.to(Device(kCPU)), (host * 2).to(kFloat64)));
}

EMBER_INSTANTIATE_DEVICE_SUITE(DeviceCopyBetweenDevices);

}  // namespace
