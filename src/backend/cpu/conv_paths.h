#pragma once
// The two ways the CPU computes a 2-D convolution (conv.cpp chooses between them):
//  * conv_im2col.cpp: im2col + GEMM, for float32 and float64;
//  * conv_onednn.cpp: oneDNN's convolution primitives, for float32 and (where the CPU multiplies
//    it natively) bfloat16.
#include <cstdint>

#include "ember/dtype.h"

namespace ember::cpu::conv2d_paths {

struct ConvShape {
  int64_t n, c, h, w;  // input
  int64_t o, kh, kw;   // weight [o, c / groups, kh, kw]
  int64_t ho, wo;      // output
  int64_t groups;
  int64_t sh, sw, ph, pw, dh, dw;

  int64_t cg() const { return c / groups; }
  int64_t og() const { return o / groups; }
  int64_t k() const { return cg() * kh * kw; }  // rows of one group's column matrix
  int64_t plane() const { return ho * wo; }
  // A 1x1 kernel with unit stride and no padding reads the input as its own column matrix.
  bool pointwise() const { return kh == 1 && kw == 1 && sh == 1 && sw == 1 && ph == 0 && pw == 0; }
};

/// The im2col path (float and double): out = conv(x, w) + bias (bias may be null).
template <typename T>
void im2col_forward(const T* x, const T* w, const T* bias, T* out, const ConvShape& s);
/// Its gradients: grad_x and grad_w may be null (not wanted); x may be null without grad_w, w
/// without grad_x. The bias gradient is bias_grad's.
template <typename T>
void im2col_backward(const T* grad_out, const T* x, const T* w, const ConvShape& s, T* grad_x, T* grad_w);
/// grad_bias[o] = the sum of grad_out over samples and positions (float and double).
template <typename T>
void bias_grad(const T* grad_out, const ConvShape& s, T* grad_bias);

/// The oneDNN path: x, w, bias and out hold `dtype` elements (kFloat32, or kBFloat16 where the
/// CPU has it natively). Primitives are cached per geometry.
void onednn_forward(const void* x, const void* w, const void* bias, void* out, const ConvShape& s, Dtype dtype);
/// As onednn_forward; the bias gradient comes out of the weights' pass, so grad_b is written only
/// with grad_w (the caller uses bias_grad otherwise).
void onednn_backward(const void* grad_out, const void* x, const void* w, const ConvShape& s, void* grad_x, void* grad_w,
                     void* grad_b, Dtype dtype);

}  // namespace ember::cpu::conv2d_paths
