// How the CUDA all_finite check packs tensors into launches (finite_plan.h): host arithmetic,
// checked without a GPU.
#include <gtest/gtest.h>

#include <vector>

#include "backend/cuda/finite_plan.h"

namespace {

using namespace ember;
using ember::cuda_impl::FiniteLaunch;
using ember::cuda_impl::kFiniteBatch;
using ember::cuda_impl::kFiniteMaxBlocksX;
using ember::cuda_impl::plan_all_finite;

TEST(FinitePlan, OneLaunchPerDtypeInOrderOfFirstAppearance) {
  const std::vector<Dtype> dtypes = {kFloat32, kFloat64, kFloat32, kBFloat16, kFloat64};
  const std::vector<int64_t> numels = {10, 300, 5000, 1, 2};
  const std::vector<FiniteLaunch> launches = plan_all_finite(dtypes, numels);
  ASSERT_EQ(launches.size(), 3u);
  EXPECT_EQ(launches[0].dtype, kFloat32);
  EXPECT_EQ(launches[0].tensors, (std::vector<int>{0, 2}));
  EXPECT_EQ(launches[0].blocks_x, 20u);  // 5000 elements in blocks of 256
  EXPECT_EQ(launches[1].dtype, kFloat64);
  EXPECT_EQ(launches[1].tensors, (std::vector<int>{1, 4}));
  EXPECT_EQ(launches[1].blocks_x, 2u);
  EXPECT_EQ(launches[2].dtype, kBFloat16);
  EXPECT_EQ(launches[2].tensors, (std::vector<int>{3}));
  EXPECT_EQ(launches[2].blocks_x, 1u);
}

TEST(FinitePlan, SplitsAfterABatchAndCoversEveryTensorOnce) {
  std::vector<Dtype> dtypes(2 * kFiniteBatch + 3, kFloat32);
  std::vector<int64_t> numels(dtypes.size(), 7);
  const std::vector<FiniteLaunch> launches = plan_all_finite(dtypes, numels);
  ASSERT_EQ(launches.size(), 3u);
  std::vector<int> seen;
  for (const FiniteLaunch& launch : launches) {
    EXPECT_LE(static_cast<int>(launch.tensors.size()), kFiniteBatch);
    EXPECT_EQ(launch.blocks_x, 1u);
    seen.insert(seen.end(), launch.tensors.begin(), launch.tensors.end());
  }
  ASSERT_EQ(seen.size(), dtypes.size());
  for (size_t i = 0; i < seen.size(); ++i) EXPECT_EQ(seen[i], static_cast<int>(i));
  EXPECT_EQ(launches[2].tensors.size(), 3u);
}

TEST(FinitePlan, EmptyTensorsNeedNoLaunchAndLargeOnesAreCapped) {
  EXPECT_TRUE(plan_all_finite({}, {}).empty());
  const std::vector<Dtype> dtypes = {kFloat16, kFloat16, kFloat32};
  const std::vector<int64_t> numels = {0, int64_t{1} << 33, 0};
  const std::vector<FiniteLaunch> launches = plan_all_finite(dtypes, numels);
  ASSERT_EQ(launches.size(), 1u);
  EXPECT_EQ(launches[0].tensors, (std::vector<int>{1}));
  EXPECT_EQ(launches[0].blocks_x, static_cast<unsigned>(kFiniteMaxBlocksX));
}

}  // namespace
