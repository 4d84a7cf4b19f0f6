// What a program sees when it asks for CUDA on a machine (or a build) without a usable GPU:
// errors that say why, never a crash, and memory queries that answer 0. These run in every
// build; on a machine with a GPU they skip, since the device suites cover that case.
#include <gtest/gtest.h>

#include <cstdlib>
#include <string>

#include "ember/cuda.h"
#include "ember/ember.h"
#include "support/error_of.h"

namespace {

using namespace ember;
using ember_test::error_of;

class CudaUnavailable : public ::testing::Test {
 protected:
  void SetUp() override {
    if (cuda::is_available()) GTEST_SKIP() << "a GPU is usable here (cuda:0), so CUDA is not unavailable";
  }
  static void expect_names_the_reason(const std::string& message) {
    EXPECT_NE(message, "no error");
    EXPECT_NE(message.find("CUDA is not available"), std::string::npos) << message;
    EXPECT_NE(message.find(cuda::unavailable_reason()), std::string::npos) << message;
  }
};

TEST_F(CudaUnavailable, TheQueriesSayNoAndWhy) {
  EXPECT_FALSE(cuda::is_available());
  EXPECT_EQ(cuda::device_count(), 0);
  EXPECT_FALSE(cuda::unavailable_reason().empty());
  if (std::getenv("EMBER_DEVICE") == nullptr) {
    EXPECT_FALSE(best_device().is_cuda());
  }
  EXPECT_NE(device_report().find(cuda::unavailable_reason()), std::string::npos) << device_report();
#if defined(EMBER_HAVE_CUDA)
  EXPECT_TRUE(cuda::is_built());
#endif
}

TEST_F(CudaUnavailable, CreatingATensorOnCudaThrowsSayingWhy) {
  const std::string message = error_of([] { zeros({2, 3}, Device("cuda")); });
  expect_names_the_reason(message);
  EXPECT_NE(message.find("'cuda"), std::string::npos) << message;
  EXPECT_NE(message.find("best_device()"), std::string::npos) << message;
  expect_names_the_reason(error_of([] { randn({4}, Device(kCUDA, 0)); }));
  expect_names_the_reason(error_of([] { tensor({1.f, 2.f}, Device("cuda:0")); }));
  expect_names_the_reason(error_of([] { empty({0}, Device("cuda")); }));
}

TEST_F(CudaUnavailable, GeneratorStatesThrowSayingWhy) {
  expect_names_the_reason(error_of([] { cuda::get_rng_state(); }));
  expect_names_the_reason(error_of([] { cuda::set_rng_state(zeros({32}, kUInt8)); }));
  // ember::manual_seed still seeds whatever generators exist.
  EXPECT_NO_THROW(manual_seed(1));
}

TEST_F(CudaUnavailable, MovingATensorToCudaThrowsAndLeavesItAlone) {
  Tensor x = arange(6.0).reshape({2, 3});
  expect_names_the_reason(error_of([&] { x.to(Device("cuda")); }));
  expect_names_the_reason(error_of([&] { x.cuda(); }));
  expect_names_the_reason(error_of([&] { x.to(Device("cuda:1"), kFloat64); }));
  EXPECT_TRUE(x.is_cpu());
  EXPECT_EQ(x.sum().item<double>(), 15.0);
}

TEST_F(CudaUnavailable, MovingAModuleToCudaThrowsAndLeavesItUsable) {
  manual_seed(0);
  nn::Linear layer(3, 2);
  Tensor before = layer.weight.clone();
  expect_names_the_reason(error_of([&] { layer.to(Device("cuda")); }));
  EXPECT_TRUE(layer.weight.is_cpu());
  EXPECT_TRUE(equal(layer.weight, before));
  EXPECT_EQ(layer(ones({1, 3})).sizes().vec(), (std::vector<int64_t>{1, 2}));
}

TEST_F(CudaUnavailable, MemoryQueriesAnswerZero) {
  EXPECT_EQ(cuda::memory_allocated(), 0u);
  EXPECT_EQ(cuda::memory_reserved(), 0u);
  EXPECT_EQ(cuda::max_memory_allocated(), 0u);
  EXPECT_EQ(cuda::memory_allocated(0), 0u);
  EXPECT_EQ(cuda::max_memory_allocated(0), 0u);
  // Housekeeping with nothing to keep is harmless.
  EXPECT_NO_THROW(cuda::reset_peak_memory_stats());
  EXPECT_NO_THROW(cuda::empty_cache());
  EXPECT_EQ(cuda::current_device(), 0);
}

TEST_F(CudaUnavailable, ActionsThatNeedAGpuThrowSayingWhy) {
  expect_names_the_reason(error_of([] { cuda::set_device(0); }));
  expect_names_the_reason(error_of([] { cuda::synchronize(); }));
  expect_names_the_reason(error_of([] { cuda::synchronize(0); }));
  expect_names_the_reason(error_of([] { cuda::get_device_properties(0); }));
  expect_names_the_reason(error_of([] { cuda::Event event; }));
  EXPECT_EQ(cuda::current_device(), 0);  // a failed set_device changes nothing
}

TEST_F(CudaUnavailable, StreamsCannotBeHadAndSayWhy) {
  // Every way to obtain a cuda::Stream throws, so StreamGuard, set_stream, record_stream and
  // Event::record(stream) are unreachable: there is no Stream to pass them.
  expect_names_the_reason(error_of([] { (void)cuda::Stream::create(); }));
  expect_names_the_reason(error_of([] { (void)cuda::Stream::create(0); }));
  expect_names_the_reason(error_of([] { (void)cuda::Stream::create(0, -1); }));
  expect_names_the_reason(error_of([] { (void)cuda::current_stream(); }));
  expect_names_the_reason(error_of([] { (void)cuda::current_stream(0); }));
  expect_names_the_reason(error_of([] { (void)cuda::default_stream(); }));
  expect_names_the_reason(error_of([] { (void)cuda::default_stream(0); }));
  EXPECT_EQ(cuda::current_device(), 0);  // the failed calls selected no device
}

TEST_F(CudaUnavailable, Tf32SwitchIsOffByDefault) {
  // Like torch.backends.cuda.matmul.allow_tf32, a plain setting: it exists without a GPU.
  EXPECT_FALSE(cuda::allow_tf32());
}

TEST_F(CudaUnavailable, EmberDeviceCudaIsRefusedWhenUsed) {
  // Naming the device is fine (it is only a name); using it is what fails.
  Device d("cuda:0");
  EXPECT_TRUE(d.is_cuda());
  EXPECT_EQ(d.str(), "cuda:0");
  expect_names_the_reason(error_of([&] { ones({1}, d); }));
}

TEST_F(CudaUnavailable, PinnedMemoryNeedsAGpuAndNonBlockingIsHarmless) {
  const Tensor x = arange(6).to(kFloat32);
  EXPECT_FALSE(x.is_pinned());
  const std::string message = error_of([&] { (void)x.pin_memory(); });
  EXPECT_NE(message.find("pin_memory"), std::string::npos) << message;
  EXPECT_NE(message.find(cuda::unavailable_reason()), std::string::npos) << message;
  // On the CPU alone, non_blocking changes nothing: the copy is complete on return.
  Tensor y = zeros({6});
  y.copy_(x, /*non_blocking=*/true);
  EXPECT_TRUE(equal(y, x));
  EXPECT_TRUE(equal(x.to(kFloat64, /*non_blocking=*/true), x.to(kFloat64)));
}

}  // namespace
