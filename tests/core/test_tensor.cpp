// Tensor metadata, views that share storage, copies and moves.
#include <gtest/gtest.h>

#include <vector>

#include "ember/ember.h"
#include "support/error_of.h"

namespace {

using namespace ember;

std::vector<float> values(const Tensor& t) {
  Tensor c = t.to(kFloat32).contiguous();
  const float* p = c.data_ptr<float>();
  return std::vector<float>(p, p + c.numel());
}

std::vector<int64_t> vec(IntList l) { return l.vec(); }

TEST(Tensor, DefaultConstructedIsUndefinedAndSaysSo) {
  Tensor t;
  EXPECT_FALSE(t.defined());
  EXPECT_THROW(t.sizes(), Error);
  EXPECT_THROW(t + t, Error);
}

TEST(Tensor, MetadataOfAFreshTensor) {
  Tensor t = zeros({2, 3, 4});
  EXPECT_EQ(vec(t.sizes()), (std::vector<int64_t>{2, 3, 4}));
  EXPECT_EQ(vec(t.strides()), (std::vector<int64_t>{12, 4, 1}));
  EXPECT_EQ(t.dim(), 3);
  EXPECT_EQ(t.numel(), 24);
  EXPECT_EQ(t.size(-1), 4);
  EXPECT_EQ(t.dtype(), kFloat32);
  EXPECT_EQ(t.device(), Device("cpu"));
  EXPECT_TRUE(t.is_contiguous());
  EXPECT_EQ(t.nbytes(), 96u);
  EXPECT_THROW(t.size(3), Error);
}

TEST(Tensor, ViewsShareStorage) {
  Tensor base = arange(12, kFloat32);
  Tensor v = base.view({3, 4});
  Tensor tr = v.t();
  Tensor row = v.select(0, 1);
  Tensor cols = v.narrow(1, 1, 2);
  EXPECT_TRUE(v.is_alias_of(base));
  EXPECT_TRUE(tr.is_alias_of(base));
  EXPECT_FALSE(tr.is_contiguous());
  EXPECT_EQ(vec(tr.strides()), (std::vector<int64_t>{1, 4}));
  EXPECT_EQ(values(row), (std::vector<float>{4, 5, 6, 7}));
  EXPECT_EQ(values(cols), (std::vector<float>{1, 2, 5, 6, 9, 10}));
  row.fill_(0);  // writes through the view
  EXPECT_EQ(values(base)[5], 0.f);
  EXPECT_EQ(values(v.slice(1, 0, std::nullopt, 2)), (std::vector<float>{0, 2, 0, 0, 8, 10}));
}

TEST(Tensor, ReshapeCopiesOnlyWhenItMust) {
  Tensor m = arange(6, kFloat32).view({2, 3});
  EXPECT_TRUE(m.reshape({3, 2}).is_alias_of(m));
  EXPECT_TRUE(m.reshape({-1}).is_alias_of(m));
  Tensor t = m.t();
  EXPECT_THROW(t.view({6}), Error);
  Tensor flat = t.reshape({6});
  EXPECT_FALSE(flat.is_alias_of(m));
  EXPECT_EQ(values(flat), (std::vector<float>{0, 3, 1, 4, 2, 5}));
  EXPECT_THROW(m.reshape({4, 2}), Error);
  EXPECT_THROW(m.reshape({-1, -1}), Error);
}

TEST(Tensor, SqueezeUnsqueezeExpandFlattenPermute) {
  Tensor x = zeros({2, 1, 3});
  EXPECT_EQ(vec(x.squeeze().sizes()), (std::vector<int64_t>{2, 3}));
  EXPECT_EQ(vec(x.squeeze(1).sizes()), (std::vector<int64_t>{2, 3}));
  EXPECT_EQ(vec(x.squeeze(0).sizes()), (std::vector<int64_t>{2, 1, 3}));
  EXPECT_EQ(vec(x.unsqueeze(-1).sizes()), (std::vector<int64_t>{2, 1, 3, 1}));
  EXPECT_EQ(vec(x.expand({4, 2, 5, 3}).sizes()), (std::vector<int64_t>{4, 2, 5, 3}));
  EXPECT_EQ(vec(x.expand({4, 2, 5, 3}).strides()), (std::vector<int64_t>{0, 3, 0, 1}));
  EXPECT_THROW(x.expand({2, 2, 2}), Error);
  EXPECT_EQ(vec(x.flatten().sizes()), (std::vector<int64_t>{6}));
  EXPECT_EQ(vec(zeros({2, 3, 4, 5}).flatten(1, 2).sizes()), (std::vector<int64_t>{2, 12, 5}));
  EXPECT_EQ(vec(x.permute({2, 0, 1}).sizes()), (std::vector<int64_t>{3, 2, 1}));
  EXPECT_THROW(x.permute({0, 0, 1}), Error);
  EXPECT_EQ(vec(scalar_tensor(1.0).flatten().sizes()), (std::vector<int64_t>{1}));
}

TEST(Tensor, IndexErrorsNameTheProblem) {
  Tensor x = zeros({2, 3});
  try {
    x.select(1, 5);
    ADD_FAILURE();
  } catch (const Error& e) {
    EXPECT_NE(std::string(e.what()).find("out of range"), std::string::npos);
  }
  try {
    x.transpose(0, 2);
    ADD_FAILURE();
  } catch (const Error& e) {
    EXPECT_EQ(std::string(e.what()), "Dimension out of range (expected to be in range of [-2, 1], but got 2)");
  }
  EXPECT_THROW(x.narrow(1, 2, 2), Error);
}

TEST(Tensor, ItemReturnsTheValue) {
  EXPECT_EQ(tensor({3.5f}).item<float>(), 3.5f);
  EXPECT_EQ(scalar_tensor(int64_t{7}).item<int64_t>(), 7);
  EXPECT_EQ(scalar_tensor(true).item<bool>(), true);
  EXPECT_DOUBLE_EQ(full({}, 0.25, kFloat16).item<double>(), 0.25);
  EXPECT_EQ(ember_test::error_of([] { zeros({2}).item(); }), "a Tensor with 2 elements cannot be converted to Scalar");
}

TEST(Tensor, ToReturnsSelfWhenNothingChanges) {
  Tensor x = ones({3});
  EXPECT_TRUE(x.to(kFloat32).is_same(x));
  EXPECT_TRUE(x.to(Device("cpu")).is_same(x));
  EXPECT_TRUE(x.cpu().is_same(x));
  EXPECT_FALSE(x.to(kFloat32, false, /*copy=*/true).is_same(x));
  Tensor y = x.to(Device("cpu:0"));  // PyTorch copies here, and the result still reports cpu
  EXPECT_FALSE(y.is_alias_of(x));
  EXPECT_EQ(y.device(), Device("cpu"));
  Tensor d = x.to(kFloat64);
  EXPECT_EQ(d.dtype(), kFloat64);
  EXPECT_FALSE(d.is_alias_of(x));
}

TEST(Tensor, DtypeConversionsFollowCpp) {
  Tensor f = tensor({-1.7f, 2.5f, 0.f});
  EXPECT_EQ(values(f.to(kInt64)), (std::vector<float>{-1, 2, 0}));
  EXPECT_EQ(values(f.to(kBool)), (std::vector<float>{1, 1, 0}));
  Tensor h = tensor({0.1f}).to(kBFloat16);
  EXPECT_FLOAT_EQ(h.item<float>(), 0.10009765625f);
}

TEST(Tensor, CopyBroadcastsAndConverts) {
  Tensor dst = zeros({2, 3});
  dst.copy_(tensor({1, 2, 3}));
  EXPECT_EQ(values(dst), (std::vector<float>{1, 2, 3, 1, 2, 3}));
  Tensor t = dst.t();
  Tensor c = t.contiguous();
  EXPECT_TRUE(c.is_contiguous());
  EXPECT_EQ(values(c), (std::vector<float>{1, 1, 2, 2, 3, 3}));
  Tensor cl = dst.clone();
  cl.fill_(9);
  EXPECT_EQ(values(dst)[0], 1.f);
}

TEST(Tensor, RequiresGradOnlyForFloatingTensors) {
  Tensor x = ones({2});
  EXPECT_FALSE(x.requires_grad());
  x.requires_grad_();
  EXPECT_TRUE(x.requires_grad());
  EXPECT_TRUE(ones({2}, TensorOptions().requires_grad(true)).requires_grad());
  EXPECT_THROW(ones({2}, kInt64).requires_grad_(), Error);
}

}  // namespace
