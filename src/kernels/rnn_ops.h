#pragma once
// The LSTM cell's element-wise update, written once for the CPU loop (src/backend/cpu/rnn.cpp)
// and the CUDA kernel (src/backend/cuda/rnn.cu).
//
// With the gates' pre-activations a = x W_ih^T + b + h W_hh^T split into PyTorch's order
// (input i, forget f, cell g, output o), one hidden unit's update is
//   cy = sigmoid(f) cx + sigmoid(i) tanh(g),  hy = sigmoid(o) tanh(cy).
// The backward pass takes the pre-activations again and recomputes the activations (five
// transcendentals, cheaper than keeping four activated gates per step in memory), then, with
// dh and dc the gradients arriving at hy and cy:
//   dcy = dc + dh sigmoid(o) (1 - tanh(cy)^2)
//   do = dh tanh(cy) sigmoid(o) (1 - sigmoid(o)),  di = dcy tanh(g) sigmoid(i) (1 - sigmoid(i)),
//   df = dcy cx sigmoid(f) (1 - sigmoid(f)),      dg = dcy sigmoid(i) (1 - tanh(g)^2),
//   dcx = dcy sigmoid(f).
// These are the products autograd forms from the op-by-op cell, in the same order, so the fused
// and the composed gradients agree to rounding.
#include "kernels/elementwise_ops.h"
#include "kernels/kmath.h"

namespace ember::kernels {

template <typename T>
struct LstmCellState {
  T h;
  T c;
};

/// One unit's hy and cy from its four gate pre-activations and cx.
template <typename T>
EMBER_HD LstmCellState<T> lstm_cell(T i, T f, T g, T o, T cx) {
  const T c = Sigmoid{}(f)*cx + Sigmoid{}(i)*kmath::tanh(g);
  return {Sigmoid{}(o)*kmath::tanh(c), c};
}

template <typename T>
struct LstmCellGrads {
  T i, f, g, o;  // the gradients of the gate pre-activations
  T cx;
};

/// One unit's gradients from the pre-activations, cx and the gradients dh, dc of hy and cy.
template <typename T>
EMBER_HD LstmCellGrads<T> lstm_cell_backward(T i, T f, T g, T o, T cx, T dh, T dc) {
  const T si = Sigmoid{}(i), sf = Sigmoid{}(f), so = Sigmoid{}(o), tg = kmath::tanh(g);
  const T c = sf * cx + si * tg;
  const T tc = kmath::tanh(c);
  const T dcy = dc + dh * so * (T(1) - tc * tc);
  LstmCellGrads<T> grads;
  grads.o = dh * tc * (so * (T(1) - so));
  grads.i = dcy * tg * (si * (T(1) - si));
  grads.f = dcy * cx * (sf * (T(1) - sf));
  grads.g = dcy * si * (T(1) - tg * tg);
  grads.cx = dcy * sf;
  return grads;
}

}  // namespace ember::kernels
