// The host-side decisions of the cuDNN convolution (backend/cuda/conv_plan.h): the algorithm
// cache's key and the math-mode policy that keeps float32 free of TF32 unless it was allowed.
#include <gtest/gtest.h>

#include <unordered_set>
#include <vector>

#include "backend/cuda/conv_plan.h"

namespace ember::cuda_impl {
namespace {

ConvKey base_key() {
  ConvKey k;
  k.device = 0;
  k.pass = ConvPass::Forward;
  k.dtype = Dtype::Float32;
  k.math = ConvMath::Fma;
  k.n = 8, k.c = 3, k.h = 28, k.w = 28;
  k.o = 16, k.kh = 3, k.kw = 3;
  k.groups = 1;
  return k;
}

// Every single-field change of the base key, so that no field is left out of == or the hash.
std::vector<ConvKey> variants() {
  std::vector<ConvKey> out;
  auto add = [&](auto change) {
    ConvKey k = base_key();
    change(k);
    out.push_back(k);
  };
  add([](ConvKey& k) { k.device = 1; });
  add([](ConvKey& k) { k.pass = ConvPass::BackwardData; });
  add([](ConvKey& k) { k.pass = ConvPass::BackwardFilter; });
  add([](ConvKey& k) { k.dtype = Dtype::Float64; });
  add([](ConvKey& k) { k.math = ConvMath::Default; });
  add([](ConvKey& k) { k.n = 9; });
  add([](ConvKey& k) { k.c = 4; });
  add([](ConvKey& k) { k.h = 27; });
  add([](ConvKey& k) { k.w = 27; });
  add([](ConvKey& k) { k.o = 17; });
  add([](ConvKey& k) { k.kh = 5; });
  add([](ConvKey& k) { k.kw = 5; });
  add([](ConvKey& k) { k.groups = 3; });
  for (int i = 0; i < 2; ++i) {
    add([i](ConvKey& k) { k.stride[i] = 2; });
    add([i](ConvKey& k) { k.padding[i] = 1; });
    add([i](ConvKey& k) { k.dilation[i] = 2; });
  }
  // Values that a careless hash would confuse: swapped height and width, swapped stride and padding.
  add([](ConvKey& k) { k.h = 28, k.w = 14; });
  add([](ConvKey& k) { k.h = 14, k.w = 28; });
  add([](ConvKey& k) { k.stride[0] = 2, k.padding[0] = 1; });
  add([](ConvKey& k) { k.stride[0] = 1, k.padding[0] = 2; });
  return out;
}

TEST(ConvPlan, KeysDifferInEveryField) {
  const ConvKey base = base_key();
  const ConvKeyHash hash;
  EXPECT_EQ(base, base_key());
  EXPECT_EQ(hash(base), hash(base_key()));
  std::unordered_set<size_t> hashes{hash(base)};
  const std::vector<ConvKey> keys = variants();
  for (size_t i = 0; i < keys.size(); ++i) {
    EXPECT_FALSE(keys[i] == base) << "variant " << i;
    for (size_t j = 0; j < i; ++j) EXPECT_FALSE(keys[i] == keys[j]) << "variants " << i << " and " << j;
    hashes.insert(hash(keys[i]));
  }
  // Not a requirement of a hash, but with these few distinct keys a collision means a field is
  // mixed in badly.
  EXPECT_EQ(hashes.size(), keys.size() + 1);
}

TEST(ConvPlan, RequestedMath) {
  EXPECT_EQ(requested_math(Dtype::Float32, false), ConvMath::Fma);
  EXPECT_EQ(requested_math(Dtype::Float32, true), ConvMath::Default);
  EXPECT_EQ(requested_math(Dtype::Float64, false), ConvMath::Default);
  EXPECT_EQ(requested_math(Dtype::Float64, true), ConvMath::Default);
  for (bool tf32 : {false, true}) {
    EXPECT_EQ(requested_math(Dtype::Float16, tf32), ConvMath::TensorOp);
    EXPECT_EQ(requested_math(Dtype::BFloat16, tf32), ConvMath::TensorOp);
  }
}

TEST(ConvPlan, ExactFloat32NeverRunsTensorOps) {
  EXPECT_EQ(execution_math(ConvMath::Fma, ConvMath::Fma), ConvMath::Fma);
  EXPECT_EQ(execution_math(ConvMath::Fma, ConvMath::Default), ConvMath::Fma);
  EXPECT_FALSE(execution_math(ConvMath::Fma, ConvMath::TensorOp).has_value());
  EXPECT_FALSE(execution_math(ConvMath::Fma, ConvMath::TensorOpAllowConversion).has_value());
}

TEST(ConvPlan, OtherModesRunWhatTheHeuristicsRated) {
  for (ConvMath requested : {ConvMath::Default, ConvMath::TensorOp}) {
    for (ConvMath reported : {ConvMath::Default, ConvMath::TensorOp, ConvMath::Fma}) {
      EXPECT_EQ(execution_math(requested, reported), reported);
    }
    // Down-conversion of the data is never wanted.
    EXPECT_FALSE(execution_math(requested, ConvMath::TensorOpAllowConversion).has_value());
  }
}

TEST(ConvPlan, CudnnIntLimits) {
  EXPECT_TRUE(fits_cudnn_int(0));
  EXPECT_TRUE(fits_cudnn_int(2147483647));
  EXPECT_FALSE(fits_cudnn_int(2147483648));
  EXPECT_FALSE(fits_cudnn_int(-1));
}

}  // namespace
}  // namespace ember::cuda_impl
