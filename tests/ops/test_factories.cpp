#include <gtest/gtest.h>

#include <algorithm>
#include <vector>

#include "ember/ember.h"

namespace {

using namespace ember;

template <typename T>
std::vector<T> values(const Tensor& t) {
  Tensor c = t.contiguous();
  const T* p = c.data_ptr<T>();
  return std::vector<T>(p, p + c.numel());
}

TEST(Factories, TensorLiteralsPickLibtorchDtypes) {
  EXPECT_EQ(tensor({1.f, 2.f}).dtype(), kFloat32);
  EXPECT_EQ(tensor({1.0, 2.0}).dtype(), kFloat32);
  EXPECT_EQ(tensor({1, 2}).dtype(), kInt64);
  EXPECT_EQ(tensor({true, false}).dtype(), kBool);
  EXPECT_EQ(tensor({1, 2}, kFloat64).dtype(), kFloat64);
  Tensor m = tensor({{1, 2, 3}, {4, 5, 6}});
  EXPECT_EQ(m.sizes().vec(), (std::vector<int64_t>{2, 3}));
  EXPECT_EQ(values<int64_t>(m), (std::vector<int64_t>{1, 2, 3, 4, 5, 6}));
  EXPECT_EQ(tensor(std::vector<double>{1.5, 2.5}).dtype(), kFloat32);
  EXPECT_EQ(tensor(std::vector<int64_t>{1, 2}).dtype(), kInt64);
  EXPECT_THROW(tensor({{1, 2}, {3}}), Error);
  EXPECT_EQ(tensor(3.5).dim(), 0);
}

TEST(Factories, FilledTensors) {
  EXPECT_EQ(values<float>(zeros({3})), (std::vector<float>{0, 0, 0}));
  EXPECT_EQ(values<float>(ones({2})), (std::vector<float>{1, 1}));
  EXPECT_EQ(full({2}, 1.5).dtype(), kFloat32);
  EXPECT_EQ(full({2}, 7).dtype(), kInt64);
  EXPECT_EQ(full({2}, true).dtype(), kBool);
  EXPECT_EQ(values<int32_t>(full({2}, 7, kInt32)), (std::vector<int32_t>{7, 7}));
  EXPECT_EQ(values<float>(eye(2, 3)), (std::vector<float>{1, 0, 0, 0, 1, 0}));
  EXPECT_EQ(empty({0, 3}).numel(), 0);
  EXPECT_THROW(zeros({-1}), Error);
}

TEST(Factories, RangesMatchPyTorch) {
  EXPECT_EQ(arange(5).dtype(), kInt64);
  EXPECT_EQ(values<int64_t>(arange(5)), (std::vector<int64_t>{0, 1, 2, 3, 4}));
  EXPECT_EQ(arange(0.0, 1.0, 0.25).dtype(), kFloat32);
  EXPECT_EQ(values<float>(arange(0.0, 1.0, 0.25)), (std::vector<float>{0, 0.25f, 0.5f, 0.75f}));
  EXPECT_EQ(values<int64_t>(arange(10, 0, -3)), (std::vector<int64_t>{10, 7, 4, 1}));
  EXPECT_EQ(arange(0, 1, 0.1).numel(), 10);
  EXPECT_THROW(arange(0, 10, 0), Error);
  EXPECT_EQ(values<float>(linspace(0, 1, 5)), (std::vector<float>{0, 0.25f, 0.5f, 0.75f, 1}));
  EXPECT_EQ(linspace(0, 1, 1).numel(), 1);
}

TEST(Factories, RandMatchesPyTorchBitForBit) {
  manual_seed(0);
  std::vector<float> r = values<float>(rand({4}));
  std::vector<float> expect{0.4963f, 0.7682f, 0.0885f, 0.1320f};
  for (int i = 0; i < 4; ++i) EXPECT_NEAR(r[i], expect[i], 5e-5) << i;
  manual_seed(42);
  r = values<float>(rand({4}));
  expect = {0.8823f, 0.9150f, 0.3829f, 0.9593f};
  for (int i = 0; i < 4; ++i) EXPECT_NEAR(r[i], expect[i], 5e-5) << i;
  manual_seed(0);
  EXPECT_DOUBLE_EQ(rand({1}, kFloat64).item<double>(), 0.97005300180655307);
}

TEST(Factories, RandnMatchesPyTorchForSmallTensors) {
  manual_seed(0);
  std::vector<float> r = values<float>(randn({3}));
  std::vector<float> expect{1.5410f, -0.2934f, -2.1788f};
  for (int i = 0; i < 3; ++i) EXPECT_NEAR(r[i], expect[i], 5e-5) << i;
}

TEST(Factories, RandomFactoriesAreReproducibleAndInRange) {
  manual_seed(123);
  Tensor a = randn({1000});
  Tensor u = rand({1000});
  Tensor i = randint(3, 9, {1000});
  Tensor p = randperm(50);
  manual_seed(123);
  EXPECT_TRUE(equal(a, randn({1000})));
  EXPECT_TRUE(equal(u, rand({1000})));
  EXPECT_TRUE(equal(i, randint(3, 9, {1000})));
  EXPECT_TRUE(equal(p, randperm(50)));
  EXPECT_GE(u.min().item<float>(), 0.f);
  EXPECT_LT(u.max().item<float>(), 1.f);
  EXPECT_EQ(i.dtype(), kInt64);
  EXPECT_GE(i.min().item<int64_t>(), 3);
  EXPECT_LE(i.max().item<int64_t>(), 8);
  std::vector<int64_t> perm = values<int64_t>(p);
  std::sort(perm.begin(), perm.end());
  for (int64_t k = 0; k < 50; ++k) EXPECT_EQ(perm[k], k);
  EXPECT_NEAR(a.mean().item<double>(), 0.0, 0.15);
  EXPECT_NEAR(a.std().item<double>(), 1.0, 0.1);
  EXPECT_THROW(rand({2}, kInt64), Error);
  EXPECT_THROW(randint(5, 5, {2}), Error);
}

TEST(Factories, LikeFormsCopyMetadata) {
  Tensor x = zeros({2, 3}, kFloat64);
  EXPECT_EQ(ones_like(x).dtype(), kFloat64);
  EXPECT_EQ(ones_like(x).sizes().vec(), (std::vector<int64_t>{2, 3}));
  EXPECT_EQ(zeros_like(x, kInt32).dtype(), kInt32);
  EXPECT_EQ(full_like(x, 2).sum().item<double>(), 12.0);
  EXPECT_EQ(rand_like(x).dtype(), kFloat64);
  EXPECT_EQ(randint_like(x, 0, 3).dtype(), kFloat64);
}

}  // namespace
