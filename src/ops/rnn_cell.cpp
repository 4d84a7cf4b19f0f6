// The fused LSTM and GRU cells (rnn_cell.h). The LSTM: forward, one kernel writes hy and cy side
// by side in one [2, B, H] tensor, recorded as a single node, which the caller sees through
// unbind: both halves then share that node, and the split's gather node hands it their two
// gradients as one tensor. Backward, one kernel recomputes the activations from the saved inputs
// and writes the gates' and cx's gradients. The two gate inputs get the same gradient tensor
// (their sum is what the cell reads), as PyTorch's fused cell gives it. The GRU: one output and
// one node; its two gate inputs' gradients differ in the n gate, which r scales on the hidden
// side only.
#include "ops/rnn_cell.h"

#include <vector>

#include "autograd/node.h"
#include "backend/backend.h"
#include "core/check.h"
#include "core/tensor_internal.h"
#include "ember/autograd.h"
#include "ember/factories.h"
#include "ember/ops.h"

namespace ember::detail {

namespace {

std::pair<Tensor, Tensor> lstm_cell_composed(const Tensor& gates, const Tensor& cx) {
  std::vector<Tensor> g = gates.chunk(4, 1);
  Tensor cy = sigmoid(g[1]) * cx + sigmoid(g[0]) * tanh(g[2]);
  Tensor hy = sigmoid(g[3]) * tanh(cy);
  return {hy, cy};
}

/// The backward formula (kernels/rnn_ops.h) as ops, for a backward pass that is itself recorded.
std::vector<Tensor> lstm_cell_grad_recorded(const Tensor& grad, const Tensor& input_gates, const Tensor& hidden_gates,
                                            const Tensor& cx) {
  std::vector<Tensor> a = (input_gates + hidden_gates).chunk(4, 1);
  const Tensor si = sigmoid(a[0]), sf = sigmoid(a[1]), tg = tanh(a[2]), so = sigmoid(a[3]);
  const Tensor tc = tanh(sf * cx + si * tg);
  const Tensor dh = grad[0], dc = grad[1];
  const Tensor dcy = dc + dh * so * (1 - tc * tc);
  const Tensor d_gates = cat(
      {dcy * tg * (si * (1 - si)), dcy * cx * (sf * (1 - sf)), dcy * si * (1 - tg * tg), dh * tc * (so * (1 - so))}, 1);
  return {d_gates, d_gates, dcy * sf};
}

Tensor gru_cell_composed(const Tensor& input_gates, const Tensor& hidden_gates, const Tensor& hx) {
  std::vector<Tensor> x = input_gates.chunk(3, 1), h = hidden_gates.chunk(3, 1);
  const Tensor r = sigmoid(x[0] + h[0]);
  const Tensor z = sigmoid(x[1] + h[1]);
  const Tensor n = tanh(x[2] + r * h[2]);
  return n + z * (hx - n);
}

/// The GRU's backward formula (kernels/rnn_ops.h) as ops, for a recorded backward pass.
std::vector<Tensor> gru_cell_grad_recorded(const Tensor& grad, const Tensor& input_gates, const Tensor& hidden_gates,
                                           const Tensor& hx) {
  std::vector<Tensor> x = input_gates.chunk(3, 1), h = hidden_gates.chunk(3, 1);
  const Tensor r = sigmoid(x[0] + h[0]), z = sigmoid(x[1] + h[1]);
  const Tensor n = tanh(x[2] + r * h[2]);
  const Tensor dn = grad * (1 - z) * (1 - n * n);
  const Tensor dz = grad * (hx - n) * (z * (1 - z));
  const Tensor dr = dn * h[2] * (r * (1 - r));
  return {cat({dr, dz, dn}, 1), cat({dr, dz, dn * r}, 1), grad * z};
}

/// The checks both cells make of their arguments, `gates` being 4 (LSTM) or 3 (GRU).
void check_cell_arguments(const char* op, int64_t gates, const Tensor& input_gates, const Tensor& hidden_gates,
                          const Tensor& state) {
  EMBER_CHECK(input_gates.dim() == 2 && input_gates.size(1) % gates == 0 &&
                  same_dims(hidden_gates.sizes(), input_gates.sizes()) && state.dim() == 2 &&
                  state.size(0) == input_gates.size(0) && state.size(1) * gates == input_gates.size(1),
              op, ": expected gates [B, ", gates, "H] (twice) and a ", gates == 4 ? "cell " : "hidden ",
              "state [B, H], got ", shape_str(input_gates.sizes()), ", ", shape_str(hidden_gates.sizes()), " and ",
              shape_str(state.sizes()));
  EMBER_CHECK(hidden_gates.dtype() == input_gates.dtype() && state.dtype() == input_gates.dtype(), op,
              ": expected one dtype, got ", dtype_name(input_gates.dtype()), ", ", dtype_name(hidden_gates.dtype()),
              " and ", dtype_name(state.dtype()));
  EMBER_CHECK(hidden_gates.device() == state.device() && input_gates.device() == state.device(), op,
              ": expected all tensors to be on the same device, got ", input_gates.device(), ", ",
              hidden_gates.device(), " and ", state.device());
}

/// What both fused cells do around their kernels: contiguous inputs, `forward` writing a new
/// tensor of `out_sizes`, and one node named `name` whose backward is `fused_backward` (the
/// backend's kernel) or, when the backward pass is itself recorded, `recorded_backward` (the
/// formula as ops). Both backward functions take the gradient and the saved gates and state.
template <typename Forward, typename FusedBackward, typename RecordedBackward>
Tensor fused_cell(const char* name, IntList out_sizes, const Tensor& input_gates, const Tensor& hidden_gates,
                  const Tensor& state, const Forward& forward, FusedBackward fused_backward,
                  RecordedBackward recorded_backward) {
  const Tensor xg = input_gates.contiguous(), hg = hidden_gates.contiguous(), st = state.contiguous();
  Tensor out = make_tensor(out_sizes, st.dtype(), st.device());
  forward(backend_for(st.device()), view_of(xg), view_of(hg), view_of(st), view_of(out));
  if (autograd::needs_grad({&input_gates, &hidden_gates, &state})) {
    autograd::record(out, name, {&input_gates, &hidden_gates, &state},
                     [saved_x = autograd::SavedTensor(xg), saved_h = autograd::SavedTensor(hg),
                      saved_state = autograd::SavedTensor(st), fused_backward, recorded_backward](const Tensor& g) {
                       const Tensor x = saved_x.get(), h = saved_h.get(), s = saved_state.get();
                       if (GradMode::is_enabled()) return recorded_backward(g, x, h, s);
                       return fused_backward(backend_for(x.device()), g.contiguous(), x, h, s);
                     });
  }
  return out;
}

}  // namespace

std::pair<Tensor, Tensor> lstm_cell_update(const Tensor& input_gates, const Tensor& hidden_gates, const Tensor& cx) {
  const Dtype dtype = input_gates.dtype();
  if (dtype != kFloat32 && dtype != kFloat64) return lstm_cell_composed(input_gates + hidden_gates, cx);
  check_cell_arguments("lstm_cell", 4, input_gates, hidden_gates, cx);
  const Tensor out = fused_cell(
      "LstmCellBackward0", {2, cx.size(0), cx.size(1)}, input_gates, hidden_gates, cx,
      [](Backend& be, const TensorView& x, const TensorView& h, const TensorView& c, const TensorView& hc) {
        be.lstm_cell(x, h, c, hc);
      },
      [](Backend& be, const Tensor& grad, const Tensor& x, const Tensor& h, const Tensor& c) {
        Tensor grad_gates = empty_like(x), grad_cx = empty_like(c);
        be.lstm_cell_backward(view_of(grad), view_of(x), view_of(h), view_of(c), view_of(grad_gates), view_of(grad_cx));
        return std::vector<Tensor>{grad_gates, grad_gates, grad_cx};
      },
      lstm_cell_grad_recorded);
  std::vector<Tensor> halves = out.unbind(0);
  return {halves[0], halves[1]};
}

Tensor gru_cell_update(const Tensor& input_gates, const Tensor& hidden_gates, const Tensor& hx) {
  const Dtype dtype = input_gates.dtype();
  if (dtype != kFloat32 && dtype != kFloat64) return gru_cell_composed(input_gates, hidden_gates, hx);
  check_cell_arguments("gru_cell", 3, input_gates, hidden_gates, hx);
  return fused_cell(
      "GruCellBackward0", hx.sizes(), input_gates, hidden_gates, hx,
      [](Backend& be, const TensorView& x, const TensorView& h, const TensorView& state, const TensorView& hy) {
        be.gru_cell(x, h, state, hy);
      },
      [](Backend& be, const Tensor& grad, const Tensor& x, const Tensor& h, const Tensor& state) {
        Tensor grad_x = empty_like(x), grad_h = empty_like(h), grad_state = empty_like(state);
        be.gru_cell_backward(view_of(grad), view_of(x), view_of(h), view_of(state), view_of(grad_x), view_of(grad_h),
                             view_of(grad_state));
        return std::vector<Tensor>{grad_x, grad_h, grad_state};
      },
      gru_cell_grad_recorded);
}

}  // namespace ember::detail
