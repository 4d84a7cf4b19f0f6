// How the CUDA multi-tensor optimizer updates pack parameters into launches
// (multi_tensor_plan.h): host arithmetic, checked without a GPU. The coverage test runs the
// kernel's own block lookup (run_of_block) over every block of every launch.
#include <gtest/gtest.h>

#include <cmath>
#include <cstdint>
#include <random>
#include <vector>

#include "backend/cuda/multi_tensor_plan.h"
#include "support/error_of.h"

namespace {

using namespace ember;
using ember::cuda_impl::MultiTensorLaunch;
using ember::cuda_impl::MultiTensorLimits;
using ember::cuda_impl::plan_multi_tensor;
using ember::cuda_impl::run_of_block;
using ember::cuda_impl::same_step;
using ember::cuda_impl::step_ids;

/// Runs every block of every launch as the kernel would (its tensor by run_of_block, its chunk
/// by its place in the run) and checks that each element of each tensor is visited exactly once,
/// and that no launch exceeds the limits.
void expect_exact_cover(const std::vector<int64_t>& numels, const std::vector<int>& ids,
                        const MultiTensorLimits& limits) {
  const std::vector<MultiTensorLaunch> launches = plan_multi_tensor(numels, ids, limits);
  std::vector<std::vector<int>> visits(numels.size());
  for (size_t i = 0; i < numels.size(); ++i) visits[i].assign(static_cast<size_t>(numels[i]), 0);
  int last_tensor = -1;
  for (const MultiTensorLaunch& launch : launches) {
    const int count = static_cast<int>(launch.tensors.size());
    ASSERT_GT(count, 0);
    ASSERT_LE(count, limits.max_tensors);
    ASSERT_LE(static_cast<int>(launch.steps.size()), limits.max_steps);
    ASSERT_EQ(launch.step_slot.size(), launch.tensors.size());
    ASSERT_EQ(launch.first_block.size(), launch.tensors.size() + 1);
    ASSERT_LE(static_cast<int64_t>(launch.blocks()), limits.max_blocks);
    EXPECT_EQ(launch.first_block[0], 0u);
    for (int k = 0; k < count; ++k) {
      // Tensors keep their order, each in one launch only, and their own step.
      EXPECT_GT(launch.tensors[k], last_tensor);
      last_tensor = launch.tensors[k];
      ASSERT_LT(launch.step_slot[k], launch.steps.size());
      EXPECT_EQ(launch.steps[launch.step_slot[k]], ids[static_cast<size_t>(launch.tensors[k])]);
      EXPECT_LT(launch.first_block[k], launch.first_block[k + 1]);
    }
    for (uint32_t block = 0; block < launch.blocks(); ++block) {
      const int t = run_of_block(launch.first_block.data(), count, block);
      ASSERT_GE(t, 0);
      ASSERT_LT(t, count);
      ASSERT_GE(block, launch.first_block[t]);
      ASSERT_LT(block, launch.first_block[t + 1]);
      const size_t tensor = static_cast<size_t>(launch.tensors[t]);
      const int64_t begin = static_cast<int64_t>(block - launch.first_block[t]) * limits.chunk;
      const int64_t end = std::min(begin + limits.chunk, numels[tensor]);
      ASSERT_LT(begin, end) << "a block with nothing to do";
      for (int64_t i = begin; i < end; ++i) ++visits[tensor][static_cast<size_t>(i)];
    }
  }
  for (size_t i = 0; i < numels.size(); ++i) {
    for (size_t e = 0; e < visits[i].size(); ++e) {
      ASSERT_EQ(visits[i][e], 1) << "tensor " << i << " element " << e;
    }
  }
}

TEST(MultiTensorPlan, ASmallModelIsOneLaunch) {
  // The GPU check's mlp: weights and biases, one parameter group at one step count.
  const std::vector<int64_t> numels = {784 * 512, 512, 512 * 512, 512, 512 * 10, 10};
  const std::vector<int> ids(numels.size(), 0);
  const std::vector<MultiTensorLaunch> launches = plan_multi_tensor(numels, ids);
  ASSERT_EQ(launches.size(), 1u);
  EXPECT_EQ(launches[0].tensors, (std::vector<int>{0, 1, 2, 3, 4, 5}));
  EXPECT_EQ(launches[0].steps, (std::vector<int>{0}));
  ASSERT_EQ(ember::cuda_impl::kMultiTensorChunk, 2048);
  // 401,408 elements are 196 chunks of 2048, 262,144 are 128, 5120 are 3 (the last partial).
  EXPECT_EQ(launches[0].first_block, (std::vector<uint32_t>{0, 196, 197, 325, 326, 329, 330}));
  expect_exact_cover(numels, ids, MultiTensorLimits{});
}

TEST(MultiTensorPlan, SplitsWhenTensorsStepsOrBlocksRunOut) {
  MultiTensorLimits limits;
  limits.max_tensors = 3;
  limits.max_steps = 2;
  limits.chunk = 4;
  limits.max_blocks = 5;
  {  // tensors: 7 of one step, 3 per launch
    const std::vector<int64_t> numels(7, 1);
    const std::vector<int> ids(7, 0);
    const auto launches = plan_multi_tensor(numels, ids, limits);
    ASSERT_EQ(launches.size(), 3u);
    EXPECT_EQ(launches[2].tensors, (std::vector<int>{6}));
    expect_exact_cover(numels, ids, limits);
  }
  {  // steps: a third distinct step starts a launch, a step seen before does not
    const std::vector<int64_t> numels = {1, 1, 1, 1};
    const std::vector<int> ids = {0, 1, 0, 3};
    const auto launches = plan_multi_tensor(numels, ids, limits);
    ASSERT_EQ(launches.size(), 2u);
    EXPECT_EQ(launches[0].tensors, (std::vector<int>{0, 1, 2}));
    EXPECT_EQ(launches[0].steps, (std::vector<int>{0, 1}));
    EXPECT_EQ(launches[0].step_slot, (std::vector<uint8_t>{0, 1, 0}));
    EXPECT_EQ(launches[1].tensors, (std::vector<int>{3}));
    EXPECT_EQ(launches[1].steps, (std::vector<int>{3}));
    expect_exact_cover(numels, ids, limits);
  }
  {  // blocks: 9 elements are 3 chunks; a second such tensor would make 6 > 5 blocks
    const std::vector<int64_t> numels = {9, 9, 8};
    const std::vector<int> ids = {0, 0, 0};
    const auto launches = plan_multi_tensor(numels, ids, limits);
    ASSERT_EQ(launches.size(), 2u);
    EXPECT_EQ(launches[0].first_block, (std::vector<uint32_t>{0, 3}));
    EXPECT_EQ(launches[1].first_block, (std::vector<uint32_t>{0, 3, 5}));
    expect_exact_cover(numels, ids, limits);
  }
}

TEST(MultiTensorPlan, EmptyTensorsNeedNoBlock) {
  EXPECT_TRUE(plan_multi_tensor({}, {}).empty());
  const std::vector<int64_t> numels = {0, 5, 0, 0, ember::cuda_impl::kMultiTensorChunk + 1};
  const std::vector<int> ids = {0, 1, 2, 3, 4};
  const auto launches = plan_multi_tensor(numels, ids);
  ASSERT_EQ(launches.size(), 1u);
  EXPECT_EQ(launches[0].tensors, (std::vector<int>{1, 4}));
  EXPECT_EQ(launches[0].steps, (std::vector<int>{1, 4}));
  EXPECT_EQ(launches[0].first_block, (std::vector<uint32_t>{0, 1, 3}));
  const std::vector<int64_t> nothing = {0, 0};
  EXPECT_TRUE(plan_multi_tensor(nothing, std::vector<int>{0, 0}).empty());
}

TEST(MultiTensorPlan, CoversRandomModelsExactly) {
  std::mt19937 rng(7);
  for (int trial = 0; trial < 40; ++trial) {
    MultiTensorLimits limits;
    limits.max_tensors = 1 + static_cast<int>(rng() % 8);
    limits.max_steps = 1 + static_cast<int>(rng() % 3);
    limits.chunk = 1 + static_cast<int64_t>(rng() % 50);
    limits.max_blocks = 40 + static_cast<int64_t>(rng() % 40);
    const size_t n = rng() % 30;
    std::vector<int64_t> numels(n);
    std::vector<int> ids(n);
    for (size_t i = 0; i < n; ++i) {
      numels[i] = rng() % 4 == 0 ? 0 : static_cast<int64_t>(rng() % (limits.chunk * 30));
      ids[i] = static_cast<int>(rng() % 5);
    }
    SCOPED_TRACE(trial);
    expect_exact_cover(numels, ids, limits);
  }
}

TEST(MultiTensorPlan, RefusesWhatItCannotPlan) {
  const std::vector<int64_t> numels = {4, 4};
  EXPECT_NE(ember_test::error_of([&] { plan_multi_tensor(numels, std::vector<int>{0}); }).find("2 tensors but 1 step"),
            std::string::npos);
  MultiTensorLimits limits;
  limits.chunk = 1;
  limits.max_blocks = 3;
  EXPECT_NE(ember_test::error_of([&] {
              plan_multi_tensor(numels, std::vector<int>{0, 0}, limits);
            }).find("needs more blocks than one launch may have"),
            std::string::npos);
  limits.max_steps = 0;
  EXPECT_NE(ember_test::error_of([&] {
              plan_multi_tensor(numels, std::vector<int>{0, 0}, limits);
            }).find("invalid limits"),
            std::string::npos);
}

TEST(MultiTensorPlan, TheLaunchGeometryFitsTheHardware) {
  using namespace ember::cuda_impl;
  EXPECT_EQ(kMultiTensorChunk % kMultiTensorThreads, 0) << "every thread of a full chunk has equal work";
  EXPECT_LE(kMultiTensorThreads, 1024);
  EXPECT_EQ(kMultiTensorThreads % 32, 0);
  EXPECT_LE(kMultiTensorMaxTensors, 255) << "a tensor's slot is a byte";
  EXPECT_LE(kMultiTensorMaxSteps, 256) << "a step slot is a byte";
}

TEST(MultiTensorPlan, StepIdsNameTheFirstEqualStep) {
  kernels::AdamStep a;
  a.lr = 1e-3;
  a.step_size = 0.5;
  kernels::AdamStep b = a;
  b.step_size = 0.25;  // another step count
  kernels::AdamStep c = a;
  c.weight_decay = 0.01;  // another group
  const std::vector<kernels::AdamStep> steps = {a, b, a, c, b, a};
  auto same = [](const kernels::AdamStep& x, const kernels::AdamStep& y) { return same_step(x, y); };
  EXPECT_EQ(step_ids(std::span<const kernels::AdamStep>(steps), same), (std::vector<int>{0, 1, 0, 3, 1, 0}));
}

// Each field of each step must take part in the comparison, or two parameters with different
// updates would share one step in a launch.
template <typename Step>
void expect_each_field_counts(const std::vector<void (*)(Step&)>& changes) {
  const Step base{};
  EXPECT_TRUE(same_step(base, base));
  for (size_t i = 0; i < changes.size(); ++i) {
    Step changed = base;
    changes[i](changed);
    EXPECT_FALSE(same_step(base, changed)) << "change " << i << " went unnoticed";
    EXPECT_FALSE(same_step(changed, base)) << "change " << i << " went unnoticed";
  }
}

TEST(MultiTensorPlan, SameStepComparesEveryField) {
  using kernels::AdadeltaStep;
  using kernels::AdamStep;
  using kernels::RmspropStep;
  using kernels::SgdStep;
  expect_each_field_counts<SgdStep>({
      [](SgdStep& s) { s.lr = 1; },
      [](SgdStep& s) { s.weight_decay = 1; },
      [](SgdStep& s) { s.momentum = 1; },
      [](SgdStep& s) { s.dampening = 1; },
      [](SgdStep& s) { s.nesterov = true; },
      [](SgdStep& s) { s.maximize = true; },
      [](SgdStep& s) { s.first_step = true; },
      // -0.0 == 0.0, yet fma(-0.0, x, -0.0) is -0.0 where fma(0.0, x, -0.0) is 0.0.
      [](SgdStep& s) { s.lr = -0.0; },
  });
  expect_each_field_counts<AdamStep>({
      [](AdamStep& s) { s.lr = 1; },
      [](AdamStep& s) { s.beta1 = 1; },
      [](AdamStep& s) { s.beta2 = 1; },
      [](AdamStep& s) { s.eps = 1; },
      [](AdamStep& s) { s.weight_decay = 1; },
      [](AdamStep& s) { s.step_size = 1; },
      [](AdamStep& s) { s.bias_correction2_sqrt = 1; },
      [](AdamStep& s) { s.decoupled = true; },
      [](AdamStep& s) { s.maximize = true; },
      [](AdamStep& s) { s.amsgrad = true; },
  });
  expect_each_field_counts<AdadeltaStep>({
      [](AdadeltaStep& s) { s.lr = 1; },
      [](AdadeltaStep& s) { s.rho = 1; },
      [](AdadeltaStep& s) { s.eps = 1; },
      [](AdadeltaStep& s) { s.weight_decay = 1; },
      [](AdadeltaStep& s) { s.maximize = true; },
  });
  expect_each_field_counts<RmspropStep>({
      [](RmspropStep& s) { s.lr = 1; },
      [](RmspropStep& s) { s.alpha = 1; },
      [](RmspropStep& s) { s.eps = 1; },
      [](RmspropStep& s) { s.weight_decay = 1; },
      [](RmspropStep& s) { s.momentum = 1; },
      [](RmspropStep& s) { s.centered = true; },
      [](RmspropStep& s) { s.maximize = true; },
  });
  // NaN hyper-parameters with the same bits are one step (== would call them different).
  SgdStep nan_lr;
  nan_lr.lr = std::nan("");
  EXPECT_TRUE(same_step(nan_lr, nan_lr));
}

}  // namespace
