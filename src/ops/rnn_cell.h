#pragma once
// The LSTM and GRU cells' element-wise updates behind nn::LSTM, nn::GRU and their cells: one
// backend call each way (Backend::lstm_cell, gru_cell) for float32 and float64, ops for the other
// dtypes. Internal: the public layers are in nn/rnn.h.
#include <utility>

#include "ember/tensor.h"

namespace ember::detail {

/// hy and cy of an LSTM cell: with gates = input_gates + hidden_gates ([B, 4H], PyTorch's i, f,
/// g, o order) and the cell state cx ([B, H]),
///   cy = sigmoid(f) cx + sigmoid(i) tanh(g),  hy = sigmoid(o) tanh(cy).
/// Differentiable in all three inputs, twice as well (create_graph records the backward as ops).
std::pair<Tensor, Tensor> lstm_cell_update(const Tensor& input_gates, const Tensor& hidden_gates, const Tensor& cx);

/// hy of a GRU cell: with input_gates = x W_ih^T + b_ih and hidden_gates = h W_hh^T + b_hh
/// ([B, 3H], PyTorch's r, z, n order) and the state hx ([B, H]),
///   r = sigmoid(x_r + h_r), z = sigmoid(x_z + h_z), n = tanh(x_n + r h_n), hy = n + z (hx - n).
/// Differentiable in all three inputs, twice as well.
Tensor gru_cell_update(const Tensor& input_gates, const Tensor& hidden_gates, const Tensor& hx);

}  // namespace ember::detail
