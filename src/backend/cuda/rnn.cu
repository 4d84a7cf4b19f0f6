// CudaBackend::lstm_cell, gru_cell and their backward passes: each cell's element-wise update in
// one kernel each way, one thread per unit (kernels/rnn_ops.h has the math, shared with the CPU
// loop). Op by op a step of a cell is about ten kernel launches forward and twenty backward, and
// at a language model's sizes (batch 20, 200 units) each is far shorter than its launch.
#include "backend/cuda/cuda_backend.h"
#include "backend/cuda/launch.h"
#include "backend/cuda/runtime.h"
#include "core/check.h"
#include "kernels/rnn_ops.h"

namespace ember::cuda_impl {
namespace {

template <typename T>
__global__ void __launch_bounds__(kBlockThreads)
    lstm_cell_kernel(const T* input_gates, const T* hidden_gates, const T* cx, T* hy, T* cy, int64_t total,
                     int64_t hidden) {
  const int64_t stride = static_cast<int64_t>(blockDim.x) * gridDim.x;
  for (int64_t u = static_cast<int64_t>(blockIdx.x) * blockDim.x + threadIdx.x; u < total; u += stride) {
    const int64_t b = u / hidden, j = u - b * hidden;
    const T* x = input_gates + b * 4 * hidden + j;
    const T* h = hidden_gates + b * 4 * hidden + j;
    const kernels::LstmCellState<T> s = kernels::lstm_cell<T>(
        x[0] + h[0], x[hidden] + h[hidden], x[2 * hidden] + h[2 * hidden], x[3 * hidden] + h[3 * hidden], cx[u]);
    hy[u] = s.h;
    cy[u] = s.c;
  }
}

template <typename T>
__global__ void __launch_bounds__(kBlockThreads)
    lstm_cell_backward_kernel(const T* grad_hy, const T* grad_cy, const T* input_gates, const T* hidden_gates,
                              const T* cx, T* grad_gates, T* grad_cx, int64_t total, int64_t hidden) {
  const int64_t stride = static_cast<int64_t>(blockDim.x) * gridDim.x;
  for (int64_t u = static_cast<int64_t>(blockIdx.x) * blockDim.x + threadIdx.x; u < total; u += stride) {
    const int64_t b = u / hidden, j = u - b * hidden;
    const T* x = input_gates + b * 4 * hidden + j;
    const T* h = hidden_gates + b * 4 * hidden + j;
    const kernels::LstmCellGrads<T> g =
        kernels::lstm_cell_backward<T>(x[0] + h[0], x[hidden] + h[hidden], x[2 * hidden] + h[2 * hidden],
                                       x[3 * hidden] + h[3 * hidden], cx[u], grad_hy[u], grad_cy[u]);
    T* dg = grad_gates + b * 4 * hidden + j;
    dg[0] = g.i;
    dg[hidden] = g.f;
    dg[2 * hidden] = g.g;
    dg[3 * hidden] = g.o;
    grad_cx[u] = g.cx;
  }
}

template <typename T>
__global__ void __launch_bounds__(kBlockThreads)
    gru_cell_kernel(const T* input_gates, const T* hidden_gates, const T* hx, T* hy, int64_t total, int64_t hidden) {
  const int64_t stride = static_cast<int64_t>(blockDim.x) * gridDim.x;
  for (int64_t u = static_cast<int64_t>(blockIdx.x) * blockDim.x + threadIdx.x; u < total; u += stride) {
    const int64_t b = u / hidden, j = u - b * hidden;
    const T* x = input_gates + b * 3 * hidden + j;
    const T* h = hidden_gates + b * 3 * hidden + j;
    hy[u] = kernels::gru_cell<T>(x[0], x[hidden], x[2 * hidden], h[0], h[hidden], h[2 * hidden], hx[u]);
  }
}

template <typename T>
__global__ void __launch_bounds__(kBlockThreads)
    gru_cell_backward_kernel(const T* grad_hy, const T* input_gates, const T* hidden_gates, const T* hx,
                             T* grad_input_gates, T* grad_hidden_gates, T* grad_hx, int64_t total, int64_t hidden) {
  const int64_t stride = static_cast<int64_t>(blockDim.x) * gridDim.x;
  for (int64_t u = static_cast<int64_t>(blockIdx.x) * blockDim.x + threadIdx.x; u < total; u += stride) {
    const int64_t b = u / hidden, j = u - b * hidden;
    const T* x = input_gates + b * 3 * hidden + j;
    const T* h = hidden_gates + b * 3 * hidden + j;
    const kernels::GruCellGrads<T> g = kernels::gru_cell_backward<T>(x[0], x[hidden], x[2 * hidden], h[0], h[hidden],
                                                                     h[2 * hidden], hx[u], grad_hy[u]);
    T* dx = grad_input_gates + b * 3 * hidden + j;
    T* dh = grad_hidden_gates + b * 3 * hidden + j;
    dx[0] = dh[0] = g.r;
    dx[hidden] = dh[hidden] = g.z;
    dx[2 * hidden] = g.n;
    dh[2 * hidden] = g.hidden_n;
    grad_hx[u] = g.hx;
  }
}

/// Calls launch(T{}, grid, stream) with T = float or double as `like`'s dtype, on its device's
/// current stream, for `total` units, then checks the launch.
template <typename Launch>
void launch_for(const TensorView& like, int64_t total, const char* op, Launch&& launch) {
  const Launch1d l = launch_1d(total);
  if (l.blocks == 0) return;
  DeviceGuard guard(like.device_index);
  const cudaStream_t stream = current_stream(like.device_index);
  if (like.dtype == kFloat32) {
    launch(float{}, l, stream);
  } else {
    launch(double{}, l, stream);
  }
  check_launch(op);
}

}  // namespace

void CudaBackend::gru_cell(const TensorView& input_gates, const TensorView& hidden_gates, const TensorView& hx,
                           const TensorView& out) {
  // The sizes come from the pair, not through a structured binding, which a lambda cannot capture
  // before C++20 compilers caught up (clang 16); the CPU file does the same.
  const std::pair<int64_t, int64_t> cell = check_gru_cell_views("gru_cell", input_gates, hidden_gates, hx, out);
  const int64_t total = cell.first * cell.second, hidden = cell.second;
  launch_for(input_gates, total, "gru_cell", [&](auto zero, const Launch1d& l, cudaStream_t stream) {
    using T = decltype(zero);
    gru_cell_kernel<T><<<l.blocks, l.threads, 0, stream>>>(input_gates.ptr<const T>(), hidden_gates.ptr<const T>(),
                                                           hx.ptr<const T>(), out.ptr<T>(), total, hidden);
  });
}

void CudaBackend::gru_cell_backward(const TensorView& grad_out, const TensorView& input_gates,
                                    const TensorView& hidden_gates, const TensorView& hx,
                                    const TensorView& grad_input_gates, const TensorView& grad_hidden_gates,
                                    const TensorView& grad_hx) {
  const std::pair<int64_t, int64_t> cell =
      check_gru_cell_views("gru_cell_backward", input_gates, hidden_gates, hx, grad_out);
  check_gru_cell_views("gru_cell_backward", grad_input_gates, grad_hidden_gates, grad_hx, grad_out);
  const int64_t total = cell.first * cell.second, hidden = cell.second;
  launch_for(input_gates, total, "gru_cell_backward", [&](auto zero, const Launch1d& l, cudaStream_t stream) {
    using T = decltype(zero);
    gru_cell_backward_kernel<T><<<l.blocks, l.threads, 0, stream>>>(
        grad_out.ptr<const T>(), input_gates.ptr<const T>(), hidden_gates.ptr<const T>(), hx.ptr<const T>(),
        grad_input_gates.ptr<T>(), grad_hidden_gates.ptr<T>(), grad_hx.ptr<T>(), total, hidden);
  });
}

void CudaBackend::lstm_cell(const TensorView& input_gates, const TensorView& hidden_gates, const TensorView& cx,
                            const TensorView& out) {
  const std::pair<int64_t, int64_t> cell = check_lstm_cell_views("lstm_cell", input_gates, hidden_gates, cx, out);
  const int64_t total = cell.first * cell.second, hidden = cell.second;
  launch_for(input_gates, total, "lstm_cell", [&](auto zero, const Launch1d& l, cudaStream_t stream) {
    using T = decltype(zero);
    T* hy = out.ptr<T>();
    lstm_cell_kernel<T><<<l.blocks, l.threads, 0, stream>>>(input_gates.ptr<const T>(), hidden_gates.ptr<const T>(),
                                                            cx.ptr<const T>(), hy, hy + total, total, hidden);
  });
}

void CudaBackend::lstm_cell_backward(const TensorView& grad_out, const TensorView& input_gates,
                                     const TensorView& hidden_gates, const TensorView& cx, const TensorView& grad_gates,
                                     const TensorView& grad_cx) {
  const std::pair<int64_t, int64_t> cell =
      check_lstm_cell_views("lstm_cell_backward", input_gates, hidden_gates, cx, grad_out);
  check_lstm_cell_views("lstm_cell_backward", grad_gates, hidden_gates, grad_cx, grad_out);
  const int64_t total = cell.first * cell.second, hidden = cell.second;
  launch_for(input_gates, total, "lstm_cell_backward", [&](auto zero, const Launch1d& l, cudaStream_t stream) {
    using T = decltype(zero);
    const T* grad_hy = grad_out.ptr<const T>();
    lstm_cell_backward_kernel<T><<<l.blocks, l.threads, 0, stream>>>(
        grad_hy, grad_hy + total, input_gates.ptr<const T>(), hidden_gates.ptr<const T>(), cx.ptr<const T>(),
        grad_gates.ptr<T>(), grad_cx.ptr<T>(), total, hidden);
  });
}

}  // namespace ember::cuda_impl
