#pragma once
// The LSTM cell's element-wise update behind nn::LSTM and nn::LSTMCell: one backend call each way
// (Backend::lstm_cell) for float32 and float64, ops for the other dtypes. Internal: the public
// layers are in nn/rnn.h.
#include <utility>

#include "ember/tensor.h"

namespace ember::detail {

/// hy and cy of an LSTM cell: with gates = input_gates + hidden_gates ([B, 4H], PyTorch's i, f,
/// g, o order) and the cell state cx ([B, H]),
///   cy = sigmoid(f) cx + sigmoid(i) tanh(g),  hy = sigmoid(o) tanh(cy).
/// Differentiable in all three inputs, twice as well (create_graph records the backward as ops).
std::pair<Tensor, Tensor> lstm_cell_update(const Tensor& input_gates, const Tensor& hidden_gates, const Tensor& cx);

}  // namespace ember::detail
