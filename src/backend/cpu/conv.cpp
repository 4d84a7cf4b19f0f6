// CpuBackend::conv2d and conv2d_backward: 2-D convolution on the CPU, and the choice of path.
//
// Two implementations (conv_paths.h):
//  * im2col + GEMM (conv_im2col.cpp), for every floating dtype; float64 always goes this way;
//  * oneDNN's convolution primitives (conv_onednn.cpp), float32 only, and bfloat16 natively.
// float32 takes the path found faster for its geometry (onednn_is_faster); the environment
// variable EMBER_CONV2D_PATH=onednn|im2col overrides that (the benchmark and tests use it to run
// both). bfloat16 goes to oneDNN's primitives in bfloat16 on CPUs that multiply it natively
// (AVX512-BF16); float16, and bfloat16 elsewhere, are widened to float32, computed there and
// rounded once.
//
// conv2d_backward reads x only for grad_weight and weight only for grad_x, so the front end passes
// the operand no wanted gradient needs with its sizes alone (null data) and need not keep it alive.
#include <algorithm>
#include <cstdint>
#include <cstdlib>
#include <string_view>
#include <type_traits>
#include <vector>

#include "backend/cpu/conv_paths.h"
#include "backend/cpu/cpu_backend.h"
#include "backend/cpu/defer_signals.h"
#include "backend/cpu/dispatch.h"
#include "backend/cpu/onednn_matmul.h"
#include "core/check.h"

namespace ember::cpu {
namespace {

using namespace conv2d_paths;

ConvShape shape_of(const TensorView& x, const TensorView& weight, const TensorView& out, const Conv2dArgs& a) {
  EMBER_CHECK(x.ndim() == 4 && weight.ndim() == 4 && out.ndim() == 4, "[cpu conv2d] expects 4-D views, got ", x.ndim(),
              "-D, ", weight.ndim(), "-D and ", out.ndim(), "-D");
  EMBER_CHECK(x.dtype == weight.dtype && x.dtype == out.dtype, "[cpu conv2d] dtypes differ: ", dtype_name(x.dtype),
              ", ", dtype_name(weight.dtype), ", ", dtype_name(out.dtype));
  EMBER_CHECK(x.is_contiguous() && weight.is_contiguous() && out.is_contiguous(),
              "[cpu conv2d] views must be contiguous");
  ConvShape s{x.sizes[0],      x.sizes[1],   x.sizes[2],    x.sizes[3],   weight.sizes[0], weight.sizes[2],
              weight.sizes[3], out.sizes[2], out.sizes[3],  a.groups,     a.stride[0],     a.stride[1],
              a.padding[0],    a.padding[1], a.dilation[0], a.dilation[1]};
  EMBER_CHECK(s.groups > 0 && s.c % s.groups == 0 && s.o % s.groups == 0 && weight.sizes[1] == s.cg() &&
                  out.sizes[0] == s.n && out.sizes[1] == s.o,
              "[cpu conv2d] sizes do not match: input ", detail::shape_str(x.sizes), ", weight ",
              detail::shape_str(weight.sizes), ", output ", detail::shape_str(out.sizes), ", groups ", s.groups);
  return s;
}

// ------------------------------------------------------------------------------- float32 path choice

// Which float32 path is faster depends on the geometry (measured on one thread, forward + both
// gradients, batch 16; docs/PERFORMANCE.md, "Convolution path by shape"). im2col + GEMM wins on
// few input channels (the MNIST CNN's layers, a stem over RGB) and on 1x1 kernels, where the
// column matrix is the input itself or a strided copy of it. oneDNN's blocked kernels win where
// im2col's GEMMs are badly shaped: depthwise convolutions (each group's GEMM has one row of 9),
// outputs of at most 4 positions (ResNet's last stage at 64x64 input: 2x2), and wider spatial
// kernels over 64 or more channels per group (ResNet's 3x3 stages: 0.55-0.75x im2col's time).
bool onednn_is_faster(const ConvShape& s) {
  if (s.groups > 1 && s.cg() == 1) return true;
  if (s.plane() <= 4) return true;
  return s.kh * s.kw > 1 && s.cg() >= 64;
}

bool use_onednn(const ConvShape& s) {
  // An empty reduction (no input channels) is left to the GEMM path, which writes the zeros.
  if (s.k() == 0) return false;
  const char* env = std::getenv("EMBER_CONV2D_PATH");
  if (env == nullptr || *env == '\0') return onednn_is_faster(s);
  const std::string_view path(env);
  EMBER_CHECK(path == "onednn" || path == "im2col", "EMBER_CONV2D_PATH must be \"onednn\" or \"im2col\", got \"", path,
              "\"");
  return path == "onednn";
}

void float_forward(const float* x, const float* w, const float* bias, float* out, const ConvShape& s) {
  if (use_onednn(s)) {
    onednn_forward(x, w, bias, out, s, kFloat32);
  } else {
    im2col_forward(x, w, bias, out, s);
  }
}

void float_backward(const float* grad_out, const float* x, const float* w, const ConvShape& s, float* grad_x,
                    float* grad_w, float* grad_b) {
  if (use_onednn(s)) {
    onednn_backward(grad_out, x, w, s, grad_x, grad_w, grad_b, kFloat32);
    if (grad_w == nullptr && grad_b != nullptr) bias_grad(grad_out, s, grad_b);
    return;
  }
  if (grad_b != nullptr) bias_grad(grad_out, s, grad_b);
  if (grad_x != nullptr || grad_w != nullptr) im2col_backward(grad_out, x, w, s, grad_x, grad_w);
}

// ------------------------------------------------------------------------------- 16-bit floats

/// bfloat16 through oneDNN's primitives where the CPU multiplies it natively (docs/PERFORMANCE.md
/// §14): float32 accumulation inside, each result rounded once, as the widening path does.
bool native_bfloat16(const ConvShape& s) { return s.k() != 0 && onednn_native_bfloat16(); }

template <typename T>
std::vector<float> widen(const TensorView& v) {
  // The backward pass may pass an operand it will not read with no data.
  if (v.data == nullptr) return {};
  const T* p = v.ptr<const T>();
  std::vector<float> out(static_cast<size_t>(v.numel()));
  for (size_t i = 0; i < out.size(); ++i) out[i] = static_cast<float>(p[i]);
  return out;
}

template <typename T>
void narrow_into(const std::vector<float>& src, const TensorView& dst) {
  T* p = dst.ptr<T>();
  for (size_t i = 0; i < src.size(); ++i) p[i] = T(src[i]);
}

}  // namespace

void CpuBackend::conv2d(const TensorView& x, const TensorView& weight, const TensorView& bias, const TensorView& out,
                        const Conv2dArgs& args) {
  const ConvShape s = shape_of(x, weight, out, args);
  const DeferSignals defer;  // oneDNN's GEMM kernels run below
  const bool has_bias = bias.data != nullptr;
  EMBER_CHECK(!has_bias || (bias.dtype == x.dtype && bias.ndim() == 1 && bias.sizes[0] == s.o),
              "[cpu conv2d] bias must be a ", dtype_name(x.dtype), " vector of ", s.o, " elements");
  if (out.numel() == 0) return;
  dispatch_floating(x.dtype, "conv2d", [&]<typename T>() {
    if constexpr (std::is_same_v<T, double>) {
      im2col_forward(x.ptr<const double>(), weight.ptr<const double>(), has_bias ? bias.ptr<const double>() : nullptr,
                     out.ptr<double>(), s);
    } else if constexpr (std::is_same_v<T, float>) {
      float_forward(x.ptr<const float>(), weight.ptr<const float>(), has_bias ? bias.ptr<const float>() : nullptr,
                    out.ptr<float>(), s);
    } else if (std::is_same_v<T, BFloat16> && native_bfloat16(s)) {
      onednn_forward(x.data, weight.data, has_bias ? bias.data : nullptr, out.data, s, kBFloat16);
    } else {
      const std::vector<float> wx = widen<T>(x), ww = widen<T>(weight);
      const std::vector<float> wb = has_bias ? widen<T>(bias) : std::vector<float>();
      std::vector<float> wout(static_cast<size_t>(out.numel()));
      float_forward(wx.data(), ww.data(), has_bias ? wb.data() : nullptr, wout.data(), s);
      narrow_into<T>(wout, out);
    }
  });
}

void CpuBackend::conv2d_backward(const TensorView& grad_out, const TensorView& x, const TensorView& weight,
                                 const Conv2dArgs& args, const TensorView& grad_x, const TensorView& grad_weight,
                                 const TensorView& grad_bias) {
  const ConvShape s = shape_of(x, weight, grad_out, args);
  const DeferSignals defer;  // oneDNN's GEMM kernels run below
  const bool want_x = grad_x.data != nullptr, want_w = grad_weight.data != nullptr, want_b = grad_bias.data != nullptr;
  EMBER_CHECK(!want_x || (grad_x.dtype == x.dtype && grad_x.numel() == x.numel()),
              "[cpu conv2d_backward] grad_x must match the input");
  EMBER_CHECK(!want_w || (grad_weight.dtype == x.dtype && grad_weight.numel() == weight.numel()),
              "[cpu conv2d_backward] grad_weight must match the weight");
  EMBER_CHECK(!want_b || (grad_bias.dtype == x.dtype && grad_bias.numel() == s.o),
              "[cpu conv2d_backward] grad_bias must have one element per output channel");
  dispatch_floating(x.dtype, "conv2d_backward", [&]<typename T>() {
    // With no samples (or no outputs) the sums are empty: zero gradients for weight and bias.
    if (s.n == 0 || s.plane() == 0 || s.o == 0) {
      if (want_x) std::fill(grad_x.ptr<T>(), grad_x.ptr<T>() + grad_x.numel(), T(0));
      if (want_w) std::fill(grad_weight.ptr<T>(), grad_weight.ptr<T>() + grad_weight.numel(), T(0));
      if (want_b) std::fill(grad_bias.ptr<T>(), grad_bias.ptr<T>() + grad_bias.numel(), T(0));
      return;
    }
    if constexpr (std::is_same_v<T, double>) {
      if (want_b) bias_grad(grad_out.ptr<const double>(), s, grad_bias.ptr<double>());
      if (want_x || want_w) {
        im2col_backward(grad_out.ptr<const double>(), x.ptr<const double>(), weight.ptr<const double>(), s,
                        want_x ? grad_x.ptr<double>() : nullptr, want_w ? grad_weight.ptr<double>() : nullptr);
      }
    } else if constexpr (std::is_same_v<T, float>) {
      float_backward(grad_out.ptr<const float>(), x.ptr<const float>(), weight.ptr<const float>(), s,
                     want_x ? grad_x.ptr<float>() : nullptr, want_w ? grad_weight.ptr<float>() : nullptr,
                     want_b ? grad_bias.ptr<float>() : nullptr);
    } else if (std::is_same_v<T, BFloat16> && native_bfloat16(s) && (want_x || want_w)) {
      onednn_backward(grad_out.data, x.data, weight.data, s, want_x ? grad_x.data : nullptr,
                      want_w ? grad_weight.data : nullptr, want_b && want_w ? grad_bias.data : nullptr, kBFloat16);
      if (want_b && !want_w) {  // the bias alone: summed in float32 by the widening path's code
        std::vector<float> gb(static_cast<size_t>(s.o));
        bias_grad(widen<T>(grad_out).data(), s, gb.data());
        narrow_into<T>(gb, grad_bias);
      }
    } else {
      const std::vector<float> wg = widen<T>(grad_out), wx = widen<T>(x), ww = widen<T>(weight);
      std::vector<float> gx(want_x ? static_cast<size_t>(x.numel()) : 0);
      std::vector<float> gw(want_w ? static_cast<size_t>(weight.numel()) : 0);
      std::vector<float> gb(want_b ? static_cast<size_t>(s.o) : 0);
      float_backward(wg.data(), wx.empty() ? nullptr : wx.data(), ww.empty() ? nullptr : ww.data(), s,
                     want_x ? gx.data() : nullptr, want_w ? gw.data() : nullptr, want_b ? gb.data() : nullptr);
      if (want_x) narrow_into<T>(gx, grad_x);
      if (want_w) narrow_into<T>(gw, grad_weight);
      if (want_b) narrow_into<T>(gb, grad_bias);
    }
  });
}

}  // namespace ember::cpu
