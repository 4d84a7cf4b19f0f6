// ember::all_finite, the fused check behind the trainer's per-step test of the loss and the
// gradients: every floating dtype, every kind of non-finite value at the edges of the threads'
// chunks, the tensors it ignores, and (on an accelerator) the same answers as the CPU, including
// more tensors than one CUDA launch carries.
#include <gtest/gtest.h>

#include <limits>
#include <string>
#include <vector>

#include "ember/ember.h"
#include "support/devices.h"
#include "support/error_of.h"

namespace {

using namespace ember;

constexpr double kInf = std::numeric_limits<double>::infinity();
constexpr double kNaN = std::numeric_limits<double>::quiet_NaN();
constexpr Dtype kFloatingDtypes[] = {kFloat16, kBFloat16, kFloat32, kFloat64};

bool all_finite_of(std::vector<Tensor> tensors) {
  const Tensor flag = all_finite(tensors);
  EXPECT_EQ(flag.dim(), 0);
  EXPECT_EQ(flag.dtype(), kBool);
  return flag.item<bool>();
}

/// `n` finite values of `dtype` (on the CPU) with `bad` written at `position`.
Tensor with_value_at(int64_t n, Dtype dtype, int64_t position, double bad) {
  Tensor t = full({n}, 0.5, TensorOptions().dtype(dtype));
  t.select(0, position).fill_(bad);
  return t;
}

TEST(AllFinite, FiniteTensorsOfEveryFloatingDtype) {
  for (Dtype dtype : kFloatingDtypes) {
    SCOPED_TRACE(dtype_name(dtype));
    const TensorOptions options = TensorOptions().dtype(dtype);
    EXPECT_TRUE(all_finite_of({randn({7, 5}).to(dtype), zeros({3}, options), full({2}, -0.0, options)}));
  }
  // The extremes of each format are finite: the largest values, the smallest subnormals.
  EXPECT_TRUE(
      all_finite_of({tensor(std::vector<float>{std::numeric_limits<float>::max(), -std::numeric_limits<float>::max(),
                                               std::numeric_limits<float>::denorm_min()})}));
  EXPECT_TRUE(all_finite_of(
      {tensor(std::vector<double>{std::numeric_limits<double>::max(), std::numeric_limits<double>::denorm_min()},
              TensorOptions().dtype(kFloat64))}));
  // The same values in float32 (the default dtype) overflow to infinity.
  EXPECT_FALSE(all_finite_of({tensor(std::vector<double>{std::numeric_limits<double>::max()})}));
  EXPECT_TRUE(all_finite_of({full({4}, 65504.0, TensorOptions().dtype(kFloat16))}));
  EXPECT_TRUE(all_finite_of({full({4}, 3.3895313892515355e38, TensorOptions().dtype(kBFloat16))}));
}

TEST(AllFinite, FindsEveryNonFiniteValueAnywhere) {
  // 200,000 elements: several chunks on several threads; the bad value at the first element, a
  // chunk boundary's neighbourhood, and the last element.
  const int64_t n = 200000;
  for (Dtype dtype : kFloatingDtypes) {
    for (double bad : {kNaN, kInf, -kInf}) {
      for (int64_t position : {int64_t{0}, int64_t{1}, n / 2 - 1, n / 2, n - 1}) {
        SCOPED_TRACE(std::string(dtype_name(dtype)) + " " + std::to_string(bad) + " at " + std::to_string(position));
        EXPECT_FALSE(all_finite_of({with_value_at(n, dtype, position, bad)}));
        // Also when it is in a later tensor, after finite ones.
        EXPECT_FALSE(all_finite_of({ones({3}), with_value_at(n, dtype, position, bad)}));
      }
    }
  }
  // A signalling NaN and a negative NaN have the same exponent bits as a quiet one.
  EXPECT_FALSE(all_finite_of({tensor(std::vector<float>{1.0f, std::numeric_limits<float>::signaling_NaN()})}));
  EXPECT_FALSE(all_finite_of({tensor(std::vector<float>{1.0f, -std::numeric_limits<float>::quiet_NaN()})}));
}

TEST(AllFinite, IgnoresUndefinedIntegerAndBoolTensorsAndEmptyLists) {
  EXPECT_TRUE(all_finite_of({}));
  EXPECT_EQ(all_finite(std::vector<Tensor>{}).device(), Device("cpu"));
  EXPECT_TRUE(all_finite_of({Tensor(), arange(10), ones({2}, TensorOptions().dtype(kBool)), empty({0})}));
  EXPECT_FALSE(all_finite_of({Tensor(), arange(10), tensor(std::vector<double>{kNaN})}));
}

TEST(AllFinite, ReadsNonContiguousTensors) {
  Tensor t = zeros({64, 48});
  t.select(0, 5).select(0, 7).fill_(kInf);
  const Tensor transposed = t.t();
  ASSERT_FALSE(transposed.is_contiguous());
  EXPECT_FALSE(all_finite_of({transposed}));
  // A strided view that skips the bad column is finite.
  EXPECT_TRUE(all_finite_of({t.slice(1, 0, 7)}));
}

TEST(AllFinite, TensorsThatRequireGradAreReadWithoutRecording) {
  Tensor w = randn({4}).requires_grad_();
  const Tensor flag = all_finite(std::vector<Tensor>{w, w * 2});
  EXPECT_FALSE(flag.requires_grad());
  EXPECT_TRUE(flag.item<bool>());
}

class AllFiniteOnDevice : public ember_test::DeviceTest {};

TEST_P(AllFiniteOnDevice, MatchesTheCpu) {
  const TensorOptions on_device = TensorOptions().device(device());
  EXPECT_EQ(all_finite(std::vector<Tensor>{ones({3}, on_device)}).device(), device());
  for (Dtype dtype : kFloatingDtypes) {
    for (double bad : {kNaN, kInf, -kInf}) {
      for (int64_t n : {int64_t{1}, int64_t{1000}, int64_t{3000000}}) {
        for (int64_t position : {int64_t{0}, n - 1}) {
          SCOPED_TRACE(std::string(dtype_name(dtype)) + " n " + std::to_string(n) + " at " + std::to_string(position));
          const Tensor cpu = with_value_at(n, dtype, position, bad);
          EXPECT_FALSE(all_finite_of({cpu.to(device())}));
          EXPECT_TRUE(all_finite_of({full({n}, 0.5, on_device.dtype(dtype))}));
        }
      }
    }
  }
}

TEST_P(AllFiniteOnDevice, MoreTensorsThanOneLaunchCarriesAndMixedDtypes) {
  // 70 tensors: three launches for float32 alone; the bad one is in each launch in turn.
  for (int bad_index : {0, 31, 32, 63, 64, 69}) {
    std::vector<Tensor> tensors;
    for (int i = 0; i < 70; ++i) {
      const Dtype dtype = i % 5 == 0 ? kFloat64 : i % 7 == 0 ? kBFloat16 : kFloat32;
      Tensor t = full({i + 1}, 1.0, TensorOptions().dtype(dtype).device(device()));
      if (i == bad_index) t.select(0, i).fill_(kNaN);
      tensors.push_back(t);
    }
    tensors.push_back(empty({0}, TensorOptions().device(device())));
    SCOPED_TRACE("bad tensor " + std::to_string(bad_index));
    EXPECT_FALSE(all_finite_of(tensors));
    tensors[static_cast<size_t>(bad_index)].fill_(2.0);
    EXPECT_TRUE(all_finite_of(tensors));
  }
}

TEST_P(AllFiniteOnDevice, RefusesTensorsOnTwoDevices) {
  if (device().is_cpu()) GTEST_SKIP() << "the CPU self-test has one device";
  const std::string message = ember_test::error_of([&] {
    all_finite(std::vector<Tensor>{ones({2}).to(device()), ones({2})});
  });
  EXPECT_NE(message.find("expected all tensors to be on the same device"), std::string::npos) << message;
}

EMBER_INSTANTIATE_DEVICE_SUITE(AllFiniteOnDevice);

}  // namespace
