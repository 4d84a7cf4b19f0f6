#pragma once
// Host-side decisions of the cuDNN convolution (conv.cpp), kept free of CUDA headers so the tests
// check them on any machine: the key under which a chosen algorithm is cached, which math mode a
// dtype asks cuDNN for, and which of the modes cuDNN's heuristics report may run under it.
#include <cstddef>
#include <cstdint>
#include <initializer_list>
#include <optional>

#include "ember/dtype.h"

namespace ember::cuda_impl {

/// cuDNN's cudnnMathType_t, with the same values (conv.cpp static_asserts them).
enum class ConvMath : uint8_t { Default = 0, TensorOp = 1, TensorOpAllowConversion = 2, Fma = 3 };

enum class ConvPass : uint8_t { Forward, BackwardData, BackwardFilter };

/// The math mode a convolution of `dtype` asks for. float32 must match the CPU to float32
/// rounding unless TF32 was allowed: CUDNN_DEFAULT_MATH lets cuDNN use TF32 tensor cores on
/// Ampere and later, so exact float32 needs CUDNN_FMA_MATH. The 16-bit types are what tensor
/// cores are for; float64 has no reduced-precision mode to avoid.
inline ConvMath requested_math(Dtype dtype, bool allow_tf32) {
  switch (dtype) {
    case Dtype::Float16:
    case Dtype::BFloat16:
      return ConvMath::TensorOp;
    case Dtype::Float32:
      return allow_tf32 ? ConvMath::Default : ConvMath::Fma;
    default:
      return ConvMath::Default;
  }
}

/// The math mode to run an algorithm under, given the mode requested and the one cuDNN's
/// heuristics reported for it; nothing when the algorithm must not be used. Exact float32 never
/// runs a tensor-op algorithm, and runs a "default" one under FMA math so that TF32 stays off.
/// No mode ever runs an algorithm rated with down-conversion (float32 data computed in float16),
/// which ember never asks for. Otherwise the reported mode is the one the algorithm was rated
/// under, so it is used.
inline std::optional<ConvMath> execution_math(ConvMath requested, ConvMath reported) {
  if (reported == ConvMath::TensorOpAllowConversion && requested != ConvMath::TensorOpAllowConversion) {
    return std::nullopt;
  }
  if (requested == ConvMath::Fma) {
    if (reported == ConvMath::TensorOp) return std::nullopt;
    return ConvMath::Fma;
  }
  return reported;
}

/// Everything that decides cuDNN's choice of algorithm and its workspace.
struct ConvKey {
  int device = 0;
  ConvPass pass = ConvPass::Forward;
  Dtype dtype = Dtype::Float32;
  ConvMath math = ConvMath::Default;
  int64_t n = 0, c = 0, h = 0, w = 0;  // input
  int64_t o = 0, kh = 0, kw = 0;       // weight [o, c / groups, kh, kw]
  int64_t groups = 1;
  int64_t stride[2] = {1, 1}, padding[2] = {0, 0}, dilation[2] = {1, 1};

  bool operator==(const ConvKey&) const = default;
};

struct ConvKeyHash {
  size_t operator()(const ConvKey& k) const {
    // FNV-1a over whole 64-bit fields: the keys are few, any reasonable mix will do.
    uint64_t h = 0xcbf29ce484222325ull;
    auto mix = [&h](int64_t v) { h = (h ^ static_cast<uint64_t>(v)) * 0x100000001b3ull; };
    mix(k.device);
    mix(static_cast<int64_t>(k.pass));
    mix(static_cast<int64_t>(k.dtype));
    mix(static_cast<int64_t>(k.math));
    for (int64_t v : {k.n, k.c, k.h, k.w, k.o, k.kh, k.kw, k.groups}) mix(v);
    for (int i = 0; i < 2; ++i) {
      mix(k.stride[i]);
      mix(k.padding[i]);
      mix(k.dilation[i]);
    }
    return static_cast<size_t>(h);
  }
};

/// cuDNN's legacy descriptors take int sizes and address at most 2^31 - 1 elements per tensor.
inline bool fits_cudnn_int(int64_t v) { return v >= 0 && v <= INT32_MAX; }

}  // namespace ember::cuda_impl
