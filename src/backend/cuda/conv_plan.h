#pragma once
// Host-side decisions of the cuDNN convolution (conv.cpp), kept free of CUDA headers so the tests
// check them on any machine: how the switches of ember/backends.h become a policy (math mode,
// determinism, benchmarking), which of the algorithms cuDNN ranks are tried and in which math
// mode, and the key under which a chosen algorithm is cached.
#include <cstddef>
#include <cstdint>
#include <initializer_list>
#include <optional>
#include <span>
#include <vector>

#include "ember/dtype.h"

namespace ember::cuda_impl {

/// cuDNN's cudnnMathType_t, with the same values (conv.cpp static_asserts them).
enum class ConvMath : uint8_t { Default = 0, TensorOp = 1, TensorOpAllowConversion = 2, Fma = 3 };

enum class ConvPass : uint8_t { Forward, BackwardData, BackwardFilter };

/// The math mode a convolution of `dtype` asks for. float32 must match the CPU to float32
/// rounding unless TF32 was allowed (backends::cudnn::allow_tf32, on by default as in PyTorch):
/// CUDNN_DEFAULT_MATH lets cuDNN use TF32 tensor cores on Ampere and later, so exact float32
/// needs CUDNN_FMA_MATH. The 16-bit types are what tensor cores are for; float64 has no
/// reduced-precision mode to avoid.
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

/// How a convolution treats the algorithms cuDNN does not rate deterministic.
enum class ConvDeterminism : uint8_t {
  Any,       // no switch asks for determinism: cuDNN's ranking alone decides
  Required,  // only deterministic algorithms; none is an error naming the convolution
  Preferred  // deterministic ones first; if none, a warning (use_deterministic_algorithms'
             // warn_only), then any
};

/// The switches of ember/backends.h, as read at one call.
struct ConvSwitches {
  bool cudnn_deterministic = false;       // backends::cudnn::deterministic()
  bool deterministic_algorithms = false;  // are_deterministic_algorithms_enabled()
  bool warn_only = false;                 // is_deterministic_algorithms_warn_only_enabled()
  bool benchmark = false;                 // backends::cudnn::benchmark()
  bool allow_tf32 = true;                 // backends::cudnn::allow_tf32()
};

/// What the switches mean for one convolution of `dtype`.
struct ConvPolicy {
  ConvMath math = ConvMath::Default;
  ConvDeterminism determinism = ConvDeterminism::Any;
  bool benchmark = false;

  bool operator==(const ConvPolicy&) const = default;
};

/// As in PyTorch, convolutions are deterministic when either cudnn.deterministic or
/// use_deterministic_algorithms is on; cudnn.deterministic is strict even when
/// use_deterministic_algorithms only warns.
inline ConvPolicy conv_policy(Dtype dtype, const ConvSwitches& s) {
  ConvPolicy p;
  p.math = requested_math(dtype, s.allow_tf32);
  if (s.cudnn_deterministic || (s.deterministic_algorithms && !s.warn_only)) {
    p.determinism = ConvDeterminism::Required;
  } else if (s.deterministic_algorithms) {
    p.determinism = ConvDeterminism::Preferred;
  }
  p.benchmark = s.benchmark;
  return p;
}

/// One algorithm as cuDNN reports it, from its heuristics (cudnnGet*_v7) or from timing them
/// (cudnnFind*Ex, fastest first).
struct ConvCandidate {
  int algo = 0;
  bool ok = false;                    // cuDNN's status for it was CUDNN_STATUS_SUCCESS
  ConvMath math = ConvMath::Default;  // the mode cuDNN rated or timed it under
  bool deterministic = false;         // rated CUDNN_DETERMINISTIC
};

/// An algorithm to try and the math mode to run it under.
struct ConvAttempt {
  int algo = 0;
  ConvMath math = ConvMath::Default;
  bool deterministic = false;

  bool operator==(const ConvAttempt&) const = default;
};

/// The algorithms to try, in order, for `requested` math: first, in cuDNN's order, those whose
/// rated mode may run as requested (execution_math); then, should cuDNN have rated every
/// algorithm under another mode, the others forced into the requested one (which cuDNN then
/// either honours or refuses when the workspace is sized). Failed candidates are dropped, and so
/// are non-deterministic ones when `deterministic_only`; no pair is listed twice.
inline std::vector<ConvAttempt> conv_attempts(std::span<const ConvCandidate> ranked, ConvMath requested,
                                              bool deterministic_only) {
  std::vector<ConvAttempt> out;
  auto add = [&out](const ConvAttempt& a) {
    for (const ConvAttempt& seen : out) {
      if (seen.algo == a.algo && seen.math == a.math) return;
    }
    out.push_back(a);
  };
  for (const bool strict : {true, false}) {
    for (const ConvCandidate& c : ranked) {
      if (!c.ok || (deterministic_only && !c.deterministic)) continue;
      const std::optional<ConvMath> math = strict ? execution_math(requested, c.math) : std::optional(requested);
      if (math) add({c.algo, *math, c.deterministic});
    }
  }
  return out;
}

/// Everything that decides cuDNN's choice of algorithm and its workspace: the geometry, and the
/// policy the switches gave (TF32 through the math mode, which it changes only for float32).
struct ConvKey {
  int device = 0;
  ConvPass pass = ConvPass::Forward;
  Dtype dtype = Dtype::Float32;
  ConvMath math = ConvMath::Default;
  ConvDeterminism determinism = ConvDeterminism::Any;
  bool benchmark = false;
  int64_t n = 0, c = 0, h = 0, w = 0;  // input
  int64_t o = 0, kh = 0, kw = 0;       // weight [o, c / groups, kh, kw]
  int64_t groups = 1;
  int64_t stride[2] = {1, 1}, padding[2] = {0, 0}, dilation[2] = {1, 1};

  bool operator==(const ConvKey&) const = default;
};

/// A key's policy fields from `policy`.
inline void set_policy(ConvKey& key, const ConvPolicy& policy) {
  key.math = policy.math;
  key.determinism = policy.determinism;
  key.benchmark = policy.benchmark;
}

struct ConvKeyHash {
  size_t operator()(const ConvKey& k) const {
    // FNV-1a over whole 64-bit fields: the keys are few, any reasonable mix will do.
    uint64_t h = 0xcbf29ce484222325ull;
    auto mix = [&h](int64_t v) { h = (h ^ static_cast<uint64_t>(v)) * 0x100000001b3ull; };
    mix(k.device);
    mix(static_cast<int64_t>(k.pass));
    mix(static_cast<int64_t>(k.dtype));
    mix(static_cast<int64_t>(k.math));
    mix(static_cast<int64_t>(k.determinism));
    mix(static_cast<int64_t>(k.benchmark));
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
