// The host-side decisions of the cuDNN convolution (backend/cuda/conv_plan.h): the algorithm
// cache's key, the math-mode policy that keeps float32 free of TF32 unless it was allowed, the
// policy the switches of ember/backends.h give, and which algorithms are tried in which order.
#include <gtest/gtest.h>

#include <ostream>
#include <unordered_set>
#include <vector>

#include "backend/cuda/conv_plan.h"
#include "ember/backends.h"

namespace ember::cuda_impl {

// Readable failures (outside the unnamed namespace, where argument-dependent lookup finds it).
void PrintTo(const ConvAttempt& a, std::ostream* os) {
  *os << "{algo " << a.algo << ", math " << static_cast<int>(a.math) << (a.deterministic ? ", deterministic}" : "}");
}

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
  add([](ConvKey& k) { k.determinism = ConvDeterminism::Required; });
  add([](ConvKey& k) { k.determinism = ConvDeterminism::Preferred; });
  add([](ConvKey& k) { k.benchmark = true; });
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

// ---- the switches (ember/backends.h) as a policy ----

TEST(ConvPlan, SwitchesHavePyTorchsDefaults) {
  // The defaults of torch.backends.cudnn: not deterministic, no benchmarking, TF32 allowed.
  EXPECT_FALSE(backends::cudnn::deterministic());
  EXPECT_FALSE(backends::cudnn::benchmark());
  EXPECT_TRUE(backends::cudnn::allow_tf32());
  EXPECT_FALSE(are_deterministic_algorithms_enabled());
  const ConvSwitches now{backends::cudnn::deterministic(), are_deterministic_algorithms_enabled(),
                         is_deterministic_algorithms_warn_only_enabled(), backends::cudnn::benchmark(),
                         backends::cudnn::allow_tf32()};
  const ConvPolicy p = conv_policy(Dtype::Float32, now);
  EXPECT_EQ(p.math, ConvMath::Default);  // float32 convolutions may use TF32, as PyTorch's
  EXPECT_EQ(p.determinism, ConvDeterminism::Any);
  EXPECT_FALSE(p.benchmark);
  EXPECT_EQ(p, conv_policy(Dtype::Float32, ConvSwitches{}));
}

TEST(ConvPlan, PolicyFollowsEachSwitch) {
  ConvSwitches s;
  s.allow_tf32 = false;
  EXPECT_EQ(conv_policy(Dtype::Float32, s).math, ConvMath::Fma);
  EXPECT_EQ(conv_policy(Dtype::Float16, s).math, ConvMath::TensorOp);
  EXPECT_EQ(conv_policy(Dtype::Float64, s).math, ConvMath::Default);

  s = ConvSwitches{};
  s.benchmark = true;
  EXPECT_TRUE(conv_policy(Dtype::Float32, s).benchmark);
  EXPECT_EQ(conv_policy(Dtype::Float32, s).determinism, ConvDeterminism::Any);

  // cudnn.deterministic and use_deterministic_algorithms each make convolutions deterministic;
  // only use_deterministic_algorithms' warn_only, alone, lets one fall back to any algorithm.
  s = ConvSwitches{};
  s.cudnn_deterministic = true;
  EXPECT_EQ(conv_policy(Dtype::Float32, s).determinism, ConvDeterminism::Required);
  s = ConvSwitches{};
  s.deterministic_algorithms = true;
  EXPECT_EQ(conv_policy(Dtype::BFloat16, s).determinism, ConvDeterminism::Required);
  s.warn_only = true;
  EXPECT_EQ(conv_policy(Dtype::BFloat16, s).determinism, ConvDeterminism::Preferred);
  s.cudnn_deterministic = true;
  EXPECT_EQ(conv_policy(Dtype::BFloat16, s).determinism, ConvDeterminism::Required);
  // warn_only without the mode means nothing (use_deterministic_algorithms stores it so).
  s = ConvSwitches{};
  s.warn_only = true;
  EXPECT_EQ(conv_policy(Dtype::Float32, s).determinism, ConvDeterminism::Any);
}

TEST(ConvPlan, EverySwitchThatMattersChangesTheKey) {
  // A choice made under one setting must not be reused under another: the key holds the policy.
  const ConvKeyHash hash;
  auto key_for = [](Dtype dtype, const ConvSwitches& s) {
    ConvKey k = base_key();
    k.dtype = dtype;
    set_policy(k, conv_policy(dtype, s));
    return k;
  };
  const ConvKey plain = key_for(Dtype::Float32, {});
  ConvSwitches s;
  s.allow_tf32 = false;
  EXPECT_NE(key_for(Dtype::Float32, s), plain);
  EXPECT_NE(hash(key_for(Dtype::Float32, s)), hash(plain));
  s = ConvSwitches{};
  s.benchmark = true;
  EXPECT_NE(key_for(Dtype::Float32, s), plain);
  s = ConvSwitches{};
  s.cudnn_deterministic = true;
  EXPECT_NE(key_for(Dtype::Float32, s), plain);
  s = ConvSwitches{};
  s.deterministic_algorithms = true;
  EXPECT_NE(key_for(Dtype::Float32, s), plain);
  s.warn_only = true;
  EXPECT_NE(key_for(Dtype::Float32, s), plain);
  // TF32 does not concern the 16-bit types: their choice stays cached across the switch.
  s = ConvSwitches{};
  s.allow_tf32 = false;
  EXPECT_EQ(key_for(Dtype::Float16, s), key_for(Dtype::Float16, {}));
}

// ---- which algorithms are tried ----

TEST(ConvPlan, AttemptsKeepCudnnsOrderAndDropFailures) {
  const std::vector<ConvCandidate> ranked = {
      {5, true, ConvMath::Default, false},
      {1, false, ConvMath::Default, true},  // failed: never tried
      {0, true, ConvMath::Default, true},
      {7, true, ConvMath::Fma, true},
  };
  const std::vector<ConvAttempt> any = conv_attempts(ranked, ConvMath::Default, false);
  // The one rated under FMA math comes again at the end, forced into the requested mode.
  EXPECT_EQ(any, (std::vector<ConvAttempt>{{5, ConvMath::Default, false},
                                           {0, ConvMath::Default, true},
                                           {7, ConvMath::Fma, true},
                                           {7, ConvMath::Default, true}}));
  // Deterministic: the non-deterministic first choice is passed over, the order otherwise kept.
  const std::vector<ConvAttempt> det = conv_attempts(ranked, ConvMath::Default, true);
  EXPECT_EQ(det, (std::vector<ConvAttempt>{
                     {0, ConvMath::Default, true}, {7, ConvMath::Fma, true}, {7, ConvMath::Default, true}}));
  // Nothing deterministic at all: nothing to try (conv.cpp then fails or, under warn_only, warns).
  EXPECT_TRUE(
      conv_attempts(std::vector<ConvCandidate>{{5, true, ConvMath::Default, false}}, ConvMath::Default, true).empty());
  EXPECT_TRUE(conv_attempts({}, ConvMath::Default, false).empty());
}

TEST(ConvPlan, ExactFloat32TriesTensorOpAlgorithmsOnlyForcedIntoFma) {
  // Exact float32: algorithms rated under tensor-op math come after every other one, forced into
  // FMA math; an algorithm already tried under FMA is not listed twice.
  const std::vector<ConvCandidate> ranked = {
      {2, true, ConvMath::TensorOp, true},
      {3, true, ConvMath::Default, true},
      {4, true, ConvMath::TensorOpAllowConversion, true},
  };
  EXPECT_EQ(conv_attempts(ranked, ConvMath::Fma, false),
            (std::vector<ConvAttempt>{{3, ConvMath::Fma, true}, {2, ConvMath::Fma, true}, {4, ConvMath::Fma, true}}));
  // TF32 allowed (float32's default): tensor-op algorithms run as rated, in cuDNN's order, and
  // down-conversion only ever as a forced last resort in the requested mode.
  EXPECT_EQ(conv_attempts(ranked, ConvMath::Default, false), (std::vector<ConvAttempt>{{2, ConvMath::TensorOp, true},
                                                                                       {3, ConvMath::Default, true},
                                                                                       {2, ConvMath::Default, true},
                                                                                       {4, ConvMath::Default, true}}));
}

}  // namespace
}  // namespace ember::cuda_impl
