#pragma once
// The LSTM and GRU cells' element-wise updates, written once for the CPU loops
// (src/backend/cpu/rnn.cpp) and the CUDA kernels (src/backend/cuda/rnn.cu).
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
// These are the products autograd forms from the op-by-op cell (grouped differently in places),
// so the fused and the composed gradients agree to rounding.
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

// The GRU cell, in PyTorch's form: with the input's gates x = x W_ih^T + b_ih and the hidden
// state's h = h W_hh^T + b_hh, each split into (reset r, update z, new n),
//   r = sigmoid(x_r + h_r), z = sigmoid(x_z + h_z), n = tanh(x_n + r h_n),
//   hy = n + z (hx - n)   (= (1 - z) n + z hx, one operation fewer).
// Backward, from dh = the gradient of hy:
//   dn' = dh (1 - z) (1 - n^2),  dz' = dh (hx - n) z (1 - z),  dr' = dn' h_n r (1 - r),
// and the input gates get (dr', dz', dn'), the hidden gates (dr', dz', dn' r), hx gets dh z.

/// One unit's hy from its gates' two halves (input x_*, hidden h_*) and hx.
template <typename T>
EMBER_HD T gru_cell(T xr, T xz, T xn, T hr, T hz, T hn, T hx) {
  const T r = Sigmoid{}(xr + hr);
  const T z = Sigmoid{}(xz + hz);
  const T n = kmath::tanh(xn + r * hn);
  return n + z * (hx - n);
}

template <typename T>
struct GruCellGrads {
  T r, z, n;   // the gradients of the gates' pre-activations (the input gates' and, but for
  T hidden_n;  // n, the hidden gates'; the hidden n gate's is dn' r)
  T hx;
};

/// One unit's gradients from its gates, hx and dh, the gradient of hy.
template <typename T>
EMBER_HD GruCellGrads<T> gru_cell_backward(T xr, T xz, T xn, T hr, T hz, T hn, T hx, T dh) {
  const T r = Sigmoid{}(xr + hr);
  const T z = Sigmoid{}(xz + hz);
  const T n = kmath::tanh(xn + r * hn);
  GruCellGrads<T> grads;
  grads.n = dh * (T(1) - z) * (T(1) - n * n);
  grads.z = dh * (hx - n) * (z * (T(1) - z));
  grads.r = grads.n * hn * (r * (T(1) - r));
  grads.hidden_n = grads.n * r;
  grads.hx = dh * z;
  return grads;
}

}  // namespace ember::kernels
