// CudaBackend::conv2d and conv2d_backward through cuDNN's legacy convolution API
// (cudnnConvolutionForward / BackwardData / BackwardFilter / BackwardBias, cudnnAddTensor for the
// bias), with the semantics of src/backend/cpu/conv.cpp: groups, stride, padding and dilation
// as in torch.nn.functional.conv2d; gradients overwritten (beta = 0); an operand no wanted
// gradient needs may come with null data.
//
// Algorithms follow the switches of ember/backends.h, read once per call (conv_plan.h's
// conv_policy), as PyTorch's cuDNN convolutions do:
//  * by default, cuDNN's heuristics rank them (cudnnGet*Algorithm_v7) and the first that
//    succeeds, may run under the requested math mode and whose workspace can be allocated is
//    taken; with backends::cudnn::benchmark, they are timed on the call's own data instead
//    (cudnnFind*AlgorithmEx) and the fastest such one is taken;
//  * with backends::cudnn::deterministic or use_deterministic_algorithms, only algorithms cuDNN
//    rates deterministic qualify (none is an error; under warn_only, a warning and any algorithm);
//  * float32 runs under CUDNN_DEFAULT_MATH, which lets cuDNN use TF32 tensor cores, while
//    backends::cudnn::allow_tf32 is on (the default, as torch.backends.cudnn.allow_tf32), and under
//    CUDNN_FMA_MATH, exact to float32 rounding, when it is off; float16/bfloat16 use tensor cores
//    and accumulate in float.
// The choice is cached per geometry and policy (conv_plan.h's ConvKey), so a training loop
// chooses once per layer and pass, and changing a switch chooses again.
// float16/bfloat16 round the convolution and then the bias addition separately, where the CPU
// rounds their sum once: a difference of at most one rounding of the result.
//
// The legacy API is deprecated in cuDNN 9 but complete and stable; its deprecation attributes
// only take effect with CUDNN_WARN_DEPRECATED, which ember does not define.
#include <algorithm>
#include <cstdint>
#include <functional>
#include <memory>
#include <mutex>
#include <optional>
#include <type_traits>
#include <unordered_map>
#include <vector>

#include "backend/cuda/conv_plan.h"
#include "backend/cuda/cuda_backend.h"
#include "backend/cuda/runtime.h"
#include "core/check.h"
#include "core/determinism.h"
#include "ember/backends.h"
#include "ember/error.h"
#include "kernels/dtype_dispatch.h"

namespace ember::cuda_impl {
namespace {

static_assert(static_cast<int>(ConvMath::Default) == CUDNN_DEFAULT_MATH);
static_assert(static_cast<int>(ConvMath::TensorOp) == CUDNN_TENSOR_OP_MATH);
static_assert(static_cast<int>(ConvMath::TensorOpAllowConversion) == CUDNN_TENSOR_OP_MATH_ALLOW_CONVERSION);
static_assert(static_cast<int>(ConvMath::Fma) == CUDNN_FMA_MATH);

cudnnMathType_t to_cudnn(ConvMath m) { return static_cast<cudnnMathType_t>(m); }
ConvMath from_cudnn(cudnnMathType_t m) { return static_cast<ConvMath>(m); }

int as_int(int64_t v) { return static_cast<int>(v); }

// ------------------------------------------------------------------------------- descriptors

class TensorDesc {
 public:
  explicit TensorDesc(const char* op) { EMBER_CUDNN_CHECK(cudnnCreateTensorDescriptor(&d_), op); }
  ~TensorDesc() { cudnnDestroyTensorDescriptor(d_); }
  TensorDesc(const TensorDesc&) = delete;
  TensorDesc& operator=(const TensorDesc&) = delete;
  void set(cudnnDataType_t type, int64_t n, int64_t c, int64_t h, int64_t w, const char* op) {
    EMBER_CUDNN_CHECK(
        cudnnSetTensor4dDescriptor(d_, CUDNN_TENSOR_NCHW, type, as_int(n), as_int(c), as_int(h), as_int(w)), op);
  }
  cudnnTensorDescriptor_t get() const { return d_; }

 private:
  cudnnTensorDescriptor_t d_ = nullptr;
};

class FilterDesc {
 public:
  explicit FilterDesc(const char* op) { EMBER_CUDNN_CHECK(cudnnCreateFilterDescriptor(&d_), op); }
  ~FilterDesc() { cudnnDestroyFilterDescriptor(d_); }
  FilterDesc(const FilterDesc&) = delete;
  FilterDesc& operator=(const FilterDesc&) = delete;
  void set(cudnnDataType_t type, int64_t o, int64_t c, int64_t h, int64_t w, const char* op) {
    EMBER_CUDNN_CHECK(
        cudnnSetFilter4dDescriptor(d_, type, CUDNN_TENSOR_NCHW, as_int(o), as_int(c), as_int(h), as_int(w)), op);
  }
  cudnnFilterDescriptor_t get() const { return d_; }

 private:
  cudnnFilterDescriptor_t d_ = nullptr;
};

class ConvDesc {
 public:
  explicit ConvDesc(const char* op) { EMBER_CUDNN_CHECK(cudnnCreateConvolutionDescriptor(&d_), op); }
  ~ConvDesc() { cudnnDestroyConvolutionDescriptor(d_); }
  ConvDesc(const ConvDesc&) = delete;
  ConvDesc& operator=(const ConvDesc&) = delete;
  cudnnConvolutionDescriptor_t get() const { return d_; }

 private:
  cudnnConvolutionDescriptor_t d_ = nullptr;
};

// ------------------------------------------------------------------------------- geometry

struct ConvShape {
  int64_t n, c, h, w;  // input
  int64_t o, kh, kw;   // weight [o, c / groups, kh, kw]
  int64_t ho, wo;      // output
  int64_t groups;
  int64_t cg() const { return c / groups; }
};

ConvShape shape_of(const TensorView& x, const TensorView& weight, const TensorView& out, const Conv2dArgs& a,
                   const char* op) {
  EMBER_CHECK(x.ndim() == 4 && weight.ndim() == 4 && out.ndim() == 4, "[cuda ", op, "] expects 4-D views, got ",
              x.ndim(), "-D, ", weight.ndim(), "-D and ", out.ndim(), "-D");
  EMBER_CHECK(x.dtype == weight.dtype && x.dtype == out.dtype, "[cuda ", op, "] dtypes differ: ", dtype_name(x.dtype),
              ", ", dtype_name(weight.dtype), ", ", dtype_name(out.dtype));
  EMBER_CHECK(x.is_contiguous() && weight.is_contiguous() && out.is_contiguous(), "[cuda ", op,
              "] views must be contiguous");
  const ConvShape s{x.sizes[0],      x.sizes[1],      x.sizes[2],   x.sizes[3],   weight.sizes[0],
                    weight.sizes[2], weight.sizes[3], out.sizes[2], out.sizes[3], a.groups};
  EMBER_CHECK(s.groups > 0 && s.c % s.groups == 0 && s.o % s.groups == 0 && weight.sizes[1] == s.cg() &&
                  out.sizes[0] == s.n && out.sizes[1] == s.o,
              "[cuda ", op, "] sizes do not match: input ", detail::shape_str(x.sizes), ", weight ",
              detail::shape_str(weight.sizes), ", output ", detail::shape_str(out.sizes), ", groups ", s.groups);
  return s;
}

void check_cudnn_limits(const ConvShape& s, const Conv2dArgs& a, const char* op) {
  bool ok = true;
  for (int64_t v : {s.n * s.c * s.h * s.w, s.n * s.o * s.ho * s.wo, s.o * s.cg() * s.kh * s.kw, s.groups}) {
    ok = ok && fits_cudnn_int(v);
  }
  for (int i = 0; i < 2; ++i) {
    ok = ok && fits_cudnn_int(a.stride[i]) && fits_cudnn_int(a.padding[i]) && fits_cudnn_int(a.dilation[i]);
  }
  EMBER_CHECK(ok, "[cuda ", op,
              "] cuDNN's convolution takes tensors of fewer than 2^31 elements; split the batch into smaller "
              "pieces");
}

cudnnDataType_t data_type(Dtype dtype, const char* op) {
  return kernels::dispatch_floating(dtype, op, [&]<typename T>() -> cudnnDataType_t {
    if constexpr (std::is_same_v<T, double>) return CUDNN_DATA_DOUBLE;
    if constexpr (std::is_same_v<T, float>) return CUDNN_DATA_FLOAT;
    if constexpr (std::is_same_v<T, Half>) return CUDNN_DATA_HALF;
    return CUDNN_DATA_BFLOAT16;
  });
}

/// The switches of ember/backends.h as they stand now.
ConvSwitches current_switches() {
  ConvSwitches s;
  s.cudnn_deterministic = backends::cudnn::deterministic();
  s.deterministic_algorithms = are_deterministic_algorithms_enabled();
  s.warn_only = is_deterministic_algorithms_warn_only_enabled();
  s.benchmark = backends::cudnn::benchmark();
  s.allow_tf32 = backends::cudnn::allow_tf32();
  return s;
}

/// The descriptors of one convolution and the policy its passes follow; the convolution's math
/// mode is set per pass by plan().
struct Descs {
  TensorDesc x, y, bias;
  FilterDesc w;
  ConvDesc conv;
  ConvPolicy policy;

  Descs(const ConvShape& s, const Conv2dArgs& a, Dtype dtype, const char* op)
      : x(op), y(op), bias(op), w(op), conv(op), policy(conv_policy(dtype, current_switches())) {
    const cudnnDataType_t type = data_type(dtype, op);
    // float16/bfloat16 accumulate in float, as the CPU's widened computation does.
    const cudnnDataType_t compute = dtype == kFloat64 ? CUDNN_DATA_DOUBLE : CUDNN_DATA_FLOAT;
    if (s.n * s.c * s.h * s.w > 0) x.set(type, s.n, s.c, s.h, s.w, op);
    y.set(type, s.n, s.o, s.ho, s.wo, op);
    bias.set(type, 1, s.o, 1, 1, op);
    if (s.o * s.cg() * s.kh * s.kw > 0) w.set(type, s.o, s.cg(), s.kh, s.kw, op);
    EMBER_CUDNN_CHECK(cudnnSetConvolution2dDescriptor(conv.get(), as_int(a.padding[0]), as_int(a.padding[1]),
                                                      as_int(a.stride[0]), as_int(a.stride[1]), as_int(a.dilation[0]),
                                                      as_int(a.dilation[1]), CUDNN_CROSS_CORRELATION, compute),
                      op);
    EMBER_CUDNN_CHECK(cudnnSetConvolutionGroupCount(conv.get(), as_int(s.groups)), op);
    EMBER_CUDNN_CHECK(cudnnSetConvolutionMathType(conv.get(), to_cudnn(policy.math)), op);
  }
};

// cuDNN's scaling factors are double for double data and float otherwise.
struct Scale {
  float f;
  double d;
};
const void* scale(Dtype dtype, const Scale& s) { return dtype == kFloat64 ? static_cast<const void*>(&s.d) : &s.f; }
constexpr Scale kOne{1.0f, 1.0};
constexpr Scale kZero{0.0f, 0.0};

// ------------------------------------------------------------------------------- algorithms

struct Choice {
  int algo = 0;
  ConvMath math = ConvMath::Default;
  size_t workspace = 0;
  bool deterministic = false;  // as cuDNN rates the algorithm
};

/// The data one pass reads and writes, which timing the algorithms (cudnn.benchmark) runs on:
/// forward x, w -> y; backward data w, dy -> dx; backward filter x, dy -> dw.
struct Operands {
  const void* a = nullptr;
  const void* b = nullptr;
  void* out = nullptr;
};

std::mutex& cache_mutex() {
  static std::mutex m;
  return m;
}
std::unordered_map<ConvKey, Choice, ConvKeyHash>& cache() {
  static auto* c = new std::unordered_map<ConvKey, Choice, ConvKeyHash>();  // leaked: used until exit
  return *c;
}

ConvKey key_of(ConvPass pass, const ConvShape& s, const Conv2dArgs& a, Dtype dtype, const ConvPolicy& policy,
               int device) {
  ConvKey k;
  k.device = device;
  k.pass = pass;
  k.dtype = dtype;
  set_policy(k, policy);
  k.n = s.n, k.c = s.c, k.h = s.h, k.w = s.w;
  k.o = s.o, k.kh = s.kh, k.kw = s.kw;
  k.groups = s.groups;
  for (int i = 0; i < 2; ++i) {
    k.stride[i] = a.stride[i];
    k.padding[i] = a.padding[i];
    k.dilation[i] = a.dilation[i];
  }
  return k;
}

template <typename Perf>
std::vector<ConvCandidate> candidates_of(const std::vector<Perf>& perfs, int returned) {
  std::vector<ConvCandidate> out;
  for (int i = 0; i < returned; ++i) {
    const Perf& p = perfs[static_cast<size_t>(i)];
    out.push_back({static_cast<int>(p.algo), p.status == CUDNN_STATUS_SUCCESS, from_cudnn(p.mathType),
                   p.determinism == CUDNN_DETERMINISTIC});
  }
  return out;
}

/// cuDNN's heuristic ranking of the algorithms for one pass, best first.
std::vector<ConvCandidate> heuristics(ConvPass pass, cudnnHandle_t h, const Descs& d, const char* op) {
  int max_count = 0, returned = 0;
  switch (pass) {
    case ConvPass::Forward: {
      EMBER_CUDNN_CHECK(cudnnGetConvolutionForwardAlgorithmMaxCount(h, &max_count), op);
      std::vector<cudnnConvolutionFwdAlgoPerf_t> perfs(static_cast<size_t>(max_count));
      EMBER_CUDNN_CHECK(cudnnGetConvolutionForwardAlgorithm_v7(h, d.x.get(), d.w.get(), d.conv.get(), d.y.get(),
                                                               max_count, &returned, perfs.data()),
                        op);
      return candidates_of(perfs, returned);
    }
    case ConvPass::BackwardData: {
      EMBER_CUDNN_CHECK(cudnnGetConvolutionBackwardDataAlgorithmMaxCount(h, &max_count), op);
      std::vector<cudnnConvolutionBwdDataAlgoPerf_t> perfs(static_cast<size_t>(max_count));
      EMBER_CUDNN_CHECK(cudnnGetConvolutionBackwardDataAlgorithm_v7(h, d.w.get(), d.y.get(), d.conv.get(), d.x.get(),
                                                                    max_count, &returned, perfs.data()),
                        op);
      return candidates_of(perfs, returned);
    }
    case ConvPass::BackwardFilter: {
      EMBER_CUDNN_CHECK(cudnnGetConvolutionBackwardFilterAlgorithmMaxCount(h, &max_count), op);
      std::vector<cudnnConvolutionBwdFilterAlgoPerf_t> perfs(static_cast<size_t>(max_count));
      EMBER_CUDNN_CHECK(cudnnGetConvolutionBackwardFilterAlgorithm_v7(h, d.x.get(), d.y.get(), d.conv.get(), d.w.get(),
                                                                      max_count, &returned, perfs.data()),
                        op);
      return candidates_of(perfs, returned);
    }
  }
  return {};
}

/// The workspace `algo` needs under the descriptor's current math mode; a failure means the
/// algorithm cannot run this convolution.
cudnnStatus_t workspace_size(ConvPass pass, cudnnHandle_t h, const Descs& d, int algo, size_t* bytes) {
  switch (pass) {
    case ConvPass::Forward:
      return cudnnGetConvolutionForwardWorkspaceSize(h, d.x.get(), d.w.get(), d.conv.get(), d.y.get(),
                                                     static_cast<cudnnConvolutionFwdAlgo_t>(algo), bytes);
    case ConvPass::BackwardData:
      return cudnnGetConvolutionBackwardDataWorkspaceSize(h, d.w.get(), d.y.get(), d.conv.get(), d.x.get(),
                                                          static_cast<cudnnConvolutionBwdDataAlgo_t>(algo), bytes);
    case ConvPass::BackwardFilter:
      return cudnnGetConvolutionBackwardFilterWorkspaceSize(h, d.x.get(), d.y.get(), d.conv.get(), d.w.get(),
                                                            static_cast<cudnnConvolutionBwdFilterAlgo_t>(algo), bytes);
  }
  return CUDNN_STATUS_BAD_PARAM;
}

/// cudnn.benchmark: every algorithm timed on the pass's own data (cudnnFind*Ex, which writes the
/// output; the pass then overwrites it), fastest first. The scratch memory offered is the largest
/// that any candidate of `ranked` asks for and that can be allocated now, as PyTorch offers;
/// algorithms needing more are reported as failed and so never chosen.
std::vector<ConvCandidate> timed(ConvPass pass, cudnnHandle_t h, Descs& d, const std::vector<ConvCandidate>& ranked,
                                 const Operands& io, int device, const char* op) {
  std::vector<size_t> sizes;
  for (const ConvAttempt& attempt : conv_attempts(ranked, d.policy.math, false)) {
    EMBER_CUDNN_CHECK(cudnnSetConvolutionMathType(d.conv.get(), to_cudnn(attempt.math)), op);
    size_t bytes = 0;
    if (workspace_size(pass, h, d, attempt.algo, &bytes) == CUDNN_STATUS_SUCCESS) sizes.push_back(bytes);
  }
  EMBER_CUDNN_CHECK(cudnnSetConvolutionMathType(d.conv.get(), to_cudnn(d.policy.math)), op);
  std::sort(sizes.begin(), sizes.end(), std::greater<>());
  std::unique_ptr<Workspace> ws;
  for (size_t bytes : sizes) {
    try {
      ws = std::make_unique<Workspace>(bytes, device);
      break;
    } catch (const OutOfMemoryError&) {
      // a smaller workspace still times the algorithms that fit in it
    }
  }
  if (!ws) ws = std::make_unique<Workspace>(0, device);
  int max_count = 0, returned = 0;
  switch (pass) {
    case ConvPass::Forward: {
      EMBER_CUDNN_CHECK(cudnnGetConvolutionForwardAlgorithmMaxCount(h, &max_count), op);
      std::vector<cudnnConvolutionFwdAlgoPerf_t> perfs(static_cast<size_t>(max_count));
      EMBER_CUDNN_CHECK(
          cudnnFindConvolutionForwardAlgorithmEx(h, d.x.get(), io.a, d.w.get(), io.b, d.conv.get(), d.y.get(), io.out,
                                                 max_count, &returned, perfs.data(), ws->data(), ws->size()),
          op);
      return candidates_of(perfs, returned);
    }
    case ConvPass::BackwardData: {
      EMBER_CUDNN_CHECK(cudnnGetConvolutionBackwardDataAlgorithmMaxCount(h, &max_count), op);
      std::vector<cudnnConvolutionBwdDataAlgoPerf_t> perfs(static_cast<size_t>(max_count));
      EMBER_CUDNN_CHECK(cudnnFindConvolutionBackwardDataAlgorithmEx(h, d.w.get(), io.a, d.y.get(), io.b, d.conv.get(),
                                                                    d.x.get(), io.out, max_count, &returned,
                                                                    perfs.data(), ws->data(), ws->size()),
                        op);
      return candidates_of(perfs, returned);
    }
    case ConvPass::BackwardFilter: {
      EMBER_CUDNN_CHECK(cudnnGetConvolutionBackwardFilterAlgorithmMaxCount(h, &max_count), op);
      std::vector<cudnnConvolutionBwdFilterAlgoPerf_t> perfs(static_cast<size_t>(max_count));
      EMBER_CUDNN_CHECK(cudnnFindConvolutionBackwardFilterAlgorithmEx(h, d.x.get(), io.a, d.y.get(), io.b, d.conv.get(),
                                                                      d.w.get(), io.out, max_count, &returned,
                                                                      perfs.data(), ws->data(), ws->size()),
                        op);
      return candidates_of(perfs, returned);
    }
  }
  return {};
}

const char* pass_name(ConvPass pass) {
  switch (pass) {
    case ConvPass::Forward:
      return "cudnn_convolution";
    case ConvPass::BackwardData:
      return "cudnn_convolution_backward_input";
    case ConvPass::BackwardFilter:
      return "cudnn_convolution_backward_weight";
  }
  return "cudnn_convolution";
}

struct Plan {
  Choice choice;
  std::unique_ptr<Workspace> workspace;
};

/// The algorithm for one pass and its workspace; leaves d.conv in the algorithm's math mode.
Plan plan(ConvPass pass, const ConvShape& s, const Conv2dArgs& a, Dtype dtype, Descs& d, const Operands& io, int device,
          const char* op) {
  const ConvKey key = key_of(pass, s, a, dtype, d.policy, device);
  // use_deterministic_algorithms(true, warn_only = true) with no deterministic algorithm: warned
  // at every call that runs the non-deterministic one, as each call of an op without a
  // deterministic implementation warns.
  auto warn_if_not_deterministic = [&](const Choice& c) {
    if (d.policy.determinism == ConvDeterminism::Preferred && !c.deterministic) {
      detail::alert_not_deterministic(pass_name(pass));
    }
  };
  cudnnHandle_t h = cudnn_handle(device);
  std::optional<Choice> cached;
  {
    std::lock_guard<std::mutex> lock(cache_mutex());
    auto it = cache().find(key);
    if (it != cache().end()) cached = it->second;
  }
  if (cached) {
    EMBER_CUDNN_CHECK(cudnnSetConvolutionMathType(d.conv.get(), to_cudnn(cached->math)), op);
    try {
      Plan p{*cached, std::make_unique<Workspace>(cached->workspace, device)};
      warn_if_not_deterministic(p.choice);
      return p;
    } catch (const OutOfMemoryError&) {
      // Less memory is free than when this algorithm was chosen: choose again among those whose
      // scratch memory fits now, as the first call would have.
      std::lock_guard<std::mutex> lock(cache_mutex());
      cache().erase(key);
    }
  }
  std::vector<ConvCandidate> ranked = heuristics(pass, h, d, op);
  if (d.policy.benchmark) ranked = timed(pass, h, d, ranked, io, device, op);
  // The first attempt whose workspace cuDNN can size and the allocator can give.
  auto first_that_fits = [&](const std::vector<ConvAttempt>& attempts) -> std::optional<Plan> {
    for (const ConvAttempt& attempt : attempts) {
      EMBER_CUDNN_CHECK(cudnnSetConvolutionMathType(d.conv.get(), to_cudnn(attempt.math)), op);
      size_t bytes = 0;
      if (workspace_size(pass, h, d, attempt.algo, &bytes) != CUDNN_STATUS_SUCCESS) continue;
      std::unique_ptr<Workspace> ws;
      try {
        ws = std::make_unique<Workspace>(bytes, device);
      } catch (const OutOfMemoryError&) {
        continue;  // a later algorithm may need less scratch memory
      }
      const Choice c{attempt.algo, attempt.math, bytes, attempt.deterministic};
      std::lock_guard<std::mutex> lock(cache_mutex());
      cache().emplace(key, c);
      return Plan{c, std::move(ws)};
    }
    return std::nullopt;
  };
  const bool deterministic_only = d.policy.determinism != ConvDeterminism::Any;
  const std::vector<ConvAttempt> attempts = conv_attempts(ranked, d.policy.math, deterministic_only);
  if (std::optional<Plan> p = first_that_fits(attempts)) return std::move(*p);
  if (deterministic_only && attempts.empty()) {
    const bool fallback = d.policy.determinism == ConvDeterminism::Preferred;
    if (!fallback) {
      detail::fail("[", op, "] cuDNN has no deterministic algorithm for ", pass_name(pass),
                   " of this convolution (input [", s.n, ", ", s.c, ", ", s.h, ", ", s.w, "], weight [", s.o, ", ",
                   s.cg(), ", ", s.kh, ", ", s.kw, "], groups ", s.groups, ", ", dtype_name(dtype),
                   "), and deterministic algorithms were asked for (ember::backends::cudnn::set_deterministic or "
                   "ember::use_deterministic_algorithms)");
    }
    if (std::optional<Plan> p = first_that_fits(conv_attempts(ranked, d.policy.math, false))) {
      warn_if_not_deterministic(p->choice);
      return std::move(*p);
    }
  }
  detail::fail("[", op, "] cuDNN has no algorithm for this convolution (input [", s.n, ", ", s.c, ", ", s.h, ", ", s.w,
               "], weight [", s.o, ", ", s.cg(), ", ", s.kh, ", ", s.kw, "], groups ", s.groups,
               ") that fits in the free device memory");
}

void zero(const TensorView& v, const char* op) {
  if (v.numel() == 0) return;
  EMBER_CUDA_CHECK(cudaMemsetAsync(v.data, 0, static_cast<size_t>(v.numel()) * element_size(v.dtype),
                                   current_stream(v.device_index)),
                   op);
}

}  // namespace

void CudaBackend::conv2d(const TensorView& x, const TensorView& weight, const TensorView& bias, const TensorView& out,
                         const Conv2dArgs& args) {
  const char* op = "conv2d";
  const ConvShape s = shape_of(x, weight, out, args, op);
  const bool has_bias = bias.data != nullptr;
  EMBER_CHECK(!has_bias || (bias.dtype == x.dtype && bias.ndim() == 1 && bias.sizes[0] == s.o),
              "[cuda conv2d] bias must be a ", dtype_name(x.dtype), " vector of ", s.o, " elements");
  if (out.numel() == 0) return;
  check_cudnn_limits(s, args, op);
  DeviceGuard guard(out.device_index);
  const int device = out.device_index;
  Descs d(s, args, x.dtype, op);
  cudnnHandle_t h = cudnn_handle(device);
  if (x.numel() == 0 || weight.numel() == 0) {
    zero(out, op);  // an empty sum (no input channels, or an empty image with padding)
  } else {
    const Plan p = plan(ConvPass::Forward, s, args, x.dtype, d, {x.data, weight.data, out.data}, device, op);
    EMBER_CUDNN_CHECK(
        cudnnConvolutionForward(h, scale(x.dtype, kOne), d.x.get(), x.data, d.w.get(), weight.data, d.conv.get(),
                                static_cast<cudnnConvolutionFwdAlgo_t>(p.choice.algo), p.workspace->data(),
                                p.choice.workspace, scale(x.dtype, kZero), d.y.get(), out.data),
        op);
  }
  if (has_bias) {
    EMBER_CUDNN_CHECK(
        cudnnAddTensor(h, scale(x.dtype, kOne), d.bias.get(), bias.data, scale(x.dtype, kOne), d.y.get(), out.data),
        op);
  }
}

void CudaBackend::conv2d_backward(const TensorView& grad_out, const TensorView& x, const TensorView& weight,
                                  const Conv2dArgs& args, const TensorView& grad_x, const TensorView& grad_weight,
                                  const TensorView& grad_bias) {
  const char* op = "conv2d_backward";
  const ConvShape s = shape_of(x, weight, grad_out, args, op);
  const bool want_x = grad_x.data != nullptr, want_w = grad_weight.data != nullptr, want_b = grad_bias.data != nullptr;
  EMBER_CHECK(!want_x || (grad_x.dtype == x.dtype && grad_x.numel() == x.numel()),
              "[cuda conv2d_backward] grad_x must match the input");
  EMBER_CHECK(!want_w || (grad_weight.dtype == x.dtype && grad_weight.numel() == weight.numel()),
              "[cuda conv2d_backward] grad_weight must match the weight");
  EMBER_CHECK(!want_b || (grad_bias.dtype == x.dtype && grad_bias.numel() == s.o),
              "[cuda conv2d_backward] grad_bias must have one element per output channel");
  EMBER_CHECK(!want_x || weight.data != nullptr || weight.numel() == 0,
              "[cuda conv2d_backward] grad_x needs the weight");
  EMBER_CHECK(!want_w || x.data != nullptr || x.numel() == 0, "[cuda conv2d_backward] grad_weight needs the input");
  if (!want_x && !want_w && !want_b) return;
  DeviceGuard guard(grad_out.device_index);
  const int device = grad_out.device_index;
  // With no samples (or no outputs) the sums are empty: zero gradients everywhere.
  if (s.n == 0 || s.ho * s.wo == 0 || s.o == 0) {
    if (want_x) zero(grad_x, op);
    if (want_w) zero(grad_weight, op);
    if (want_b) zero(grad_bias, op);
    return;
  }
  check_cudnn_limits(s, args, op);
  Descs d(s, args, x.dtype, op);
  cudnnHandle_t h = cudnn_handle(device);
  const Dtype dt = x.dtype;
  if (want_b) {
    EMBER_CUDNN_CHECK(cudnnConvolutionBackwardBias(h, scale(dt, kOne), d.y.get(), grad_out.data, scale(dt, kZero),
                                                   d.bias.get(), grad_bias.data),
                      op);
  }
  // No input elements or no weights: grad_x and grad_weight are empty or all zero (taps that only
  // ever read padding).
  const bool empty_sum = s.n * s.c * s.h * s.w == 0 || s.o * s.cg() * s.kh * s.kw == 0;
  if (want_x) {
    if (empty_sum) {
      zero(grad_x, op);
    } else {
      const Plan p =
          plan(ConvPass::BackwardData, s, args, dt, d, {weight.data, grad_out.data, grad_x.data}, device, op);
      EMBER_CUDNN_CHECK(cudnnConvolutionBackwardData(
                            h, scale(dt, kOne), d.w.get(), weight.data, d.y.get(), grad_out.data, d.conv.get(),
                            static_cast<cudnnConvolutionBwdDataAlgo_t>(p.choice.algo), p.workspace->data(),
                            p.choice.workspace, scale(dt, kZero), d.x.get(), grad_x.data),
                        op);
    }
  }
  if (want_w) {
    if (empty_sum) {
      zero(grad_weight, op);
    } else {
      const Plan p =
          plan(ConvPass::BackwardFilter, s, args, dt, d, {x.data, grad_out.data, grad_weight.data}, device, op);
      EMBER_CUDNN_CHECK(cudnnConvolutionBackwardFilter(
                            h, scale(dt, kOne), d.x.get(), x.data, d.y.get(), grad_out.data, d.conv.get(),
                            static_cast<cudnnConvolutionBwdFilterAlgo_t>(p.choice.algo), p.workspace->data(),
                            p.choice.workspace, scale(dt, kZero), d.w.get(), grad_weight.data),
                        op);
    }
  }
}

}  // namespace ember::cuda_impl
