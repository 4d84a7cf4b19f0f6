// CpuBackend::lstm_cell, gru_cell and their backward passes: each cell's element-wise update in
// one loop each way (kernels/rnn_ops.h has the math). Op by op, a step of the cell reads and writes
// [B, H] tensors about twelve times forward and thirty times backward; here each row is one pass,
// in which GCC vectorises the unit loop and calls libmvec's exp and tanh (vector_libm.h).
#include <algorithm>
#include <cstdint>
#include <type_traits>

#include "backend/cpu/cpu_backend.h"
#include "backend/cpu/dispatch.h"
#include "backend/cpu/vector_libm.h"
#include "base/parallel.h"
#include "core/check.h"
#include "kernels/rnn_ops.h"

namespace ember::cpu {
namespace {

/// Rows per thread chunk: a unit costs several transcendentals, so a chunk of base::kGrainSize / 8
/// units is already worth a thread.
int64_t row_grain(int64_t hidden) { return std::max<int64_t>(1, base::kGrainSize / (8 * hidden)); }

template <typename T>
void lstm_cell_rows(const T* input_gates, const T* hidden_gates, const T* cx, T* hy, T* cy, int64_t batch,
                    int64_t hidden) {
  base::parallel_for(batch, row_grain(hidden), [&](int64_t begin, int64_t end) {
    for (int64_t b = begin; b < end; ++b) {
      const T* __restrict x = input_gates + b * 4 * hidden;
      const T* __restrict h = hidden_gates + b * 4 * hidden;
      const T* __restrict c = cx + b * hidden;
      T* __restrict h_out = hy + b * hidden;
      T* __restrict c_out = cy + b * hidden;
#pragma omp simd
      for (int64_t j = 0; j < hidden; ++j) {
        const kernels::LstmCellState<T> s =
            kernels::lstm_cell<T>(x[j] + h[j], x[hidden + j] + h[hidden + j], x[2 * hidden + j] + h[2 * hidden + j],
                                  x[3 * hidden + j] + h[3 * hidden + j], c[j]);
        h_out[j] = s.h;
        c_out[j] = s.c;
      }
    }
  });
}

template <typename T>
void lstm_cell_backward_rows(const T* grad_hy, const T* grad_cy, const T* input_gates, const T* hidden_gates,
                             const T* cx, T* grad_gates, T* grad_cx, int64_t batch, int64_t hidden) {
  base::parallel_for(batch, row_grain(hidden), [&](int64_t begin, int64_t end) {
    for (int64_t b = begin; b < end; ++b) {
      const T* __restrict x = input_gates + b * 4 * hidden;
      const T* __restrict h = hidden_gates + b * 4 * hidden;
      const T* __restrict c = cx + b * hidden;
      const T* __restrict dh = grad_hy + b * hidden;
      const T* __restrict dc = grad_cy + b * hidden;
      T* __restrict dg = grad_gates + b * 4 * hidden;
      T* __restrict dcx = grad_cx + b * hidden;
#pragma omp simd
      for (int64_t j = 0; j < hidden; ++j) {
        const kernels::LstmCellGrads<T> g = kernels::lstm_cell_backward<T>(
            x[j] + h[j], x[hidden + j] + h[hidden + j], x[2 * hidden + j] + h[2 * hidden + j],
            x[3 * hidden + j] + h[3 * hidden + j], c[j], dh[j], dc[j]);
        dg[j] = g.i;
        dg[hidden + j] = g.f;
        dg[2 * hidden + j] = g.g;
        dg[3 * hidden + j] = g.o;
        dcx[j] = g.cx;
      }
    }
  });
}

template <typename T>
void gru_cell_rows(const T* input_gates, const T* hidden_gates, const T* hx, T* hy, int64_t batch, int64_t hidden) {
  base::parallel_for(batch, row_grain(hidden), [&](int64_t begin, int64_t end) {
    for (int64_t b = begin; b < end; ++b) {
      const T* __restrict x = input_gates + b * 3 * hidden;
      const T* __restrict h = hidden_gates + b * 3 * hidden;
      const T* __restrict state = hx + b * hidden;
      T* __restrict out = hy + b * hidden;
#pragma omp simd
      for (int64_t j = 0; j < hidden; ++j) {
        out[j] = kernels::gru_cell<T>(x[j], x[hidden + j], x[2 * hidden + j], h[j], h[hidden + j], h[2 * hidden + j],
                                      state[j]);
      }
    }
  });
}

template <typename T>
void gru_cell_backward_rows(const T* grad_hy, const T* input_gates, const T* hidden_gates, const T* hx,
                            T* grad_input_gates, T* grad_hidden_gates, T* grad_hx, int64_t batch, int64_t hidden) {
  base::parallel_for(batch, row_grain(hidden), [&](int64_t begin, int64_t end) {
    for (int64_t b = begin; b < end; ++b) {
      const T* __restrict x = input_gates + b * 3 * hidden;
      const T* __restrict h = hidden_gates + b * 3 * hidden;
      const T* __restrict state = hx + b * hidden;
      const T* __restrict dh = grad_hy + b * hidden;
      T* __restrict dx = grad_input_gates + b * 3 * hidden;
      T* __restrict dhg = grad_hidden_gates + b * 3 * hidden;
      T* __restrict dstate = grad_hx + b * hidden;
#pragma omp simd
      for (int64_t j = 0; j < hidden; ++j) {
        const kernels::GruCellGrads<T> g = kernels::gru_cell_backward<T>(
            x[j], x[hidden + j], x[2 * hidden + j], h[j], h[hidden + j], h[2 * hidden + j], state[j], dh[j]);
        dx[j] = dhg[j] = g.r;
        dx[hidden + j] = dhg[hidden + j] = g.z;
        dx[2 * hidden + j] = g.n;
        dhg[2 * hidden + j] = g.hidden_n;
        dstate[j] = g.hx;
      }
    }
  });
}

}  // namespace

void CpuBackend::lstm_cell(const TensorView& input_gates, const TensorView& hidden_gates, const TensorView& cx,
                           const TensorView& out) {
  const std::pair<int64_t, int64_t> cell = check_lstm_cell_views("lstm_cell", input_gates, hidden_gates, cx, out);
  // Named variables, not a structured binding: lambdas capture them (clang before 16 cannot).
  const int64_t batch = cell.first, hidden = cell.second;
  dispatch_floating(input_gates.dtype, "lstm_cell", [&]<typename T>() {
    if constexpr (std::is_same_v<T, float> || std::is_same_v<T, double>) {
      T* hy = out.ptr<T>();
      lstm_cell_rows(input_gates.ptr<const T>(), hidden_gates.ptr<const T>(), cx.ptr<const T>(), hy,
                     hy + batch * hidden, batch, hidden);
    }
  });
}

void CpuBackend::lstm_cell_backward(const TensorView& grad_out, const TensorView& input_gates,
                                    const TensorView& hidden_gates, const TensorView& cx, const TensorView& grad_gates,
                                    const TensorView& grad_cx) {
  const std::pair<int64_t, int64_t> cell =
      check_lstm_cell_views("lstm_cell_backward", input_gates, hidden_gates, cx, grad_out);
  const int64_t batch = cell.first, hidden = cell.second;
  check_lstm_cell_views("lstm_cell_backward", grad_gates, hidden_gates, grad_cx, grad_out);
  dispatch_floating(input_gates.dtype, "lstm_cell_backward", [&]<typename T>() {
    if constexpr (std::is_same_v<T, float> || std::is_same_v<T, double>) {
      const T* grad_hy = grad_out.ptr<const T>();
      lstm_cell_backward_rows(grad_hy, grad_hy + batch * hidden, input_gates.ptr<const T>(),
                              hidden_gates.ptr<const T>(), cx.ptr<const T>(), grad_gates.ptr<T>(), grad_cx.ptr<T>(),
                              batch, hidden);
    }
  });
}

void CpuBackend::gru_cell(const TensorView& input_gates, const TensorView& hidden_gates, const TensorView& hx,
                          const TensorView& out) {
  const std::pair<int64_t, int64_t> cell = check_gru_cell_views("gru_cell", input_gates, hidden_gates, hx, out);
  const int64_t batch = cell.first, hidden = cell.second;
  dispatch_floating(input_gates.dtype, "gru_cell", [&]<typename T>() {
    if constexpr (std::is_same_v<T, float> || std::is_same_v<T, double>) {
      gru_cell_rows(input_gates.ptr<const T>(), hidden_gates.ptr<const T>(), hx.ptr<const T>(), out.ptr<T>(), batch,
                    hidden);
    }
  });
}

void CpuBackend::gru_cell_backward(const TensorView& grad_out, const TensorView& input_gates,
                                   const TensorView& hidden_gates, const TensorView& hx,
                                   const TensorView& grad_input_gates, const TensorView& grad_hidden_gates,
                                   const TensorView& grad_hx) {
  const std::pair<int64_t, int64_t> cell =
      check_gru_cell_views("gru_cell_backward", input_gates, hidden_gates, hx, grad_out);
  const int64_t batch = cell.first, hidden = cell.second;
  check_gru_cell_views("gru_cell_backward", grad_input_gates, grad_hidden_gates, grad_hx, grad_out);
  dispatch_floating(input_gates.dtype, "gru_cell_backward", [&]<typename T>() {
    if constexpr (std::is_same_v<T, float> || std::is_same_v<T, double>) {
      gru_cell_backward_rows(grad_out.ptr<const T>(), input_gates.ptr<const T>(), hidden_gates.ptr<const T>(),
                             hx.ptr<const T>(), grad_input_gates.ptr<T>(), grad_hidden_gates.ptr<T>(), grad_hx.ptr<T>(),
                             batch, hidden);
    }
  });
}

}  // namespace ember::cpu
