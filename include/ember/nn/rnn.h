#pragma once
/// Recurrent layers with torch.nn's semantics: RNN, LSTM and GRU (several layers, both
/// directions, batch_first, dropout between layers, LSTM's proj_size) and the single-step cells
/// RNNCell, LSTMCell and GRUCell. Parameter names, shapes, gate order and initialisation are
/// PyTorch's, so a state_dict moves between the two; the math is the one torch.nn documents:
///   RNN   h' = act(x W_ih^T + b_ih + h W_hh^T + b_hh),  act = tanh or relu
///   LSTM  i, f, g, o = chunks of (x W_ih^T + b_ih + h W_hh^T + b_hh), in that order
///         c' = σ(f) c + σ(i) tanh(g),  h' = σ(o) tanh(c')   (h' = (σ(o) tanh(c')) W_hr^T with proj_size)
///   GRU   r, z, n: r = σ(x_r + h_r), z = σ(x_z + h_z), n = tanh(x_n + r (h W_hn^T + b_hn)),
///         h' = (1 - z) n + z h
/// The layers are built from ember's recorded ops, so autograd (higher order included) and every
/// device work as for any other op. Variable-length batches go in as a PackedSequence
/// (ember/nn/packed_sequence.h): each sequence then runs for its own length only.
#include <cstdint>
#include <string>
#include <utility>
#include <vector>

#include "ember/nn/module.h"
#include "ember/nn/modules.h"
#include "ember/nn/packed_sequence.h"

namespace ember::nn {

/// The options of nn.RNN / nn.LSTM / nn.GRU after input_size and hidden_size, with PyTorch's
/// defaults: nn::LSTM(10, 20, {.num_layers = 2, .bidirectional = true}).
struct RNNOptions {
  int64_t num_layers = 1;
  bool bias = true;
  /// Input and output are [batch, seq, feature] instead of [seq, batch, feature]; the hidden
  /// states are [num_layers * directions, batch, hidden] either way, as in PyTorch.
  bool batch_first = false;
  /// Dropout probability on the outputs of every layer but the last, while training.
  double dropout = 0.0;
  bool bidirectional = false;
  /// RNN only: "tanh" or "relu".
  std::string nonlinearity = "tanh";
  /// LSTM only: when > 0, h is projected to this size (weight_hr_l{k}).
  int64_t proj_size = 0;
};

/// LSTM's and GRU's options are RNN's (nonlinearity applies to RNN only, proj_size to LSTM only).
using LSTMOptions = RNNOptions;
using GRUOptions = RNNOptions;

/// What RNN and GRU return: the last layer's h for every step, and every layer's last h.
struct RNNOutput {
  Tensor output;  // [seq, batch, directions * hidden] ([batch, seq, ...] with batch_first)
  Tensor h_n;     // [num_layers * directions, batch, hidden]
};

/// What LSTM returns: RNNOutput's two, and every layer's last cell state.
struct LSTMOutput {
  Tensor output;
  Tensor h_n;  // [num_layers * directions, batch, proj_size or hidden]
  Tensor c_n;  // [num_layers * directions, batch, hidden]
};

/// What RNN and GRU return for a PackedSequence: the last layer's h for every real step, packed
/// like the input, and every layer's h after each sequence's own last step, in the input's
/// batch order.
struct PackedRNNOutput {
  utils::rnn::PackedSequence output;  // data [total steps, directions * hidden]
  Tensor h_n;                         // [num_layers * directions, batch, hidden]
};

/// What LSTM returns for a PackedSequence.
struct PackedLSTMOutput {
  utils::rnn::PackedSequence output;
  Tensor h_n;
  Tensor c_n;
};

/// The shared machinery of RNN, LSTM and GRU (PyTorch's RNNBase): the parameters of every layer
/// and direction, registered in PyTorch's order as weight_ih_l{k}[_reverse], weight_hh_l{k},
/// bias_ih_l{k}, bias_hh_l{k} (and weight_hr_l{k} for a projected LSTM), all drawn from
/// U(-1/√hidden, 1/√hidden) in that order.
class RNNBase : public Module {
 public:
  enum class Mode { RNN_TANH, RNN_RELU, LSTM, GRU };

  RNNBase(Mode mode, int64_t input_size, int64_t hidden_size, RNNOptions options);
  /// Redraws every parameter from U(-1/√hidden, 1/√hidden), in registration order.
  void reset_parameters();
  /// The parameters of one layer and direction, in registration order.
  std::vector<Tensor> layer_parameters(int64_t layer, bool reverse = false) const;

  Mode mode;
  int64_t input_size, hidden_size;
  RNNOptions options;

 protected:
  /// What a run gives in every mode: the output, every layer's last h and, for LSTM alone, its
  /// last cell state c_n (undefined for RNN and GRU).
  struct RunOutput {
    Tensor output, h_n, c_n;
  };
  struct PackedRunOutput {
    utils::rnn::PackedSequence output;
    Tensor h_n, c_n;
  };
  /// Runs every layer and direction. h0 and c0 may be undefined (zeros); c0 is LSTM's only.
  RunOutput run(const Tensor& input, const Tensor& h0, const Tensor& c0);
  /// The same for a packed batch; h0 and c0 are in the input's batch order.
  PackedRunOutput run(const utils::rnn::PackedSequence& input, const Tensor& h0, const Tensor& c0);

 private:
  int64_t gate_count() const;
  /// The layers over time-major rows `data` [sum of batch_sizes, input_size], batch_sizes[t] of
  /// them at step t (the first ones of the step before), from full initial states.
  RunOutput run_steps(const Tensor& data, const std::vector<int64_t>& batch_sizes, const Tensor& h0, const Tensor& c0,
                      const std::vector<std::vector<Tensor>>& weights);
  /// What one run reads: its input and initial states as given, or, in an autocast region where
  /// PyTorch runs the layer as one lower-precision op, those and the weights in the region's dtype.
  struct RunInputs {
    Tensor data, h0, c0;
    std::vector<std::vector<Tensor>> cast_weights;  // laid out as weights_; empty: weights_ itself
  };
  RunInputs autocast_inputs(const Tensor& data, const Tensor& h0, const Tensor& c0, bool packed) const;
  /// The checks of h0 and c0 against their expected sizes, with PyTorch's messages.
  void check_hidden(const Tensor& h0, const Tensor& c0, int64_t batch) const;
  std::vector<std::vector<Tensor>> weights_;  // [layer * directions + direction] → parameters
};

/// nn.RNN: an Elman network with tanh or relu (options.nonlinearity).
class RNN : public RNNBase {
 public:
  RNN(int64_t input_size, int64_t hidden_size, RNNOptions options = {});
  /// PyTorch's positional order: nn::RNN(10, 20, 2, "relu").
  RNN(int64_t input_size, int64_t hidden_size, int64_t num_layers, std::string nonlinearity = "tanh", bool bias = true,
      bool batch_first = false, double dropout = 0.0, bool bidirectional = false)
      : RNN(input_size, hidden_size,
            RNNOptions{.num_layers = num_layers,
                       .bias = bias,
                       .batch_first = batch_first,
                       .dropout = dropout,
                       .bidirectional = bidirectional,
                       .nonlinearity = std::move(nonlinearity)}) {}
  std::string name() const override { return "RNN"; }
  /// input: [seq, batch, input_size] ([batch, seq, ...] with batch_first) or unbatched
  /// [seq, input_size]; h0: [num_layers * directions, batch, hidden] (or unbatched), or
  /// undefined for zeros.
  RNNOutput forward(const Tensor& input, const Tensor& h0);
  /// The output sequence alone, so that the layer fits where one tensor goes in and one comes out.
  Tensor forward(const Tensor& input) override { return forward(input, Tensor()).output; }
  /// A packed batch (batch_first does not apply); h0: [num_layers * directions, batch, hidden].
  PackedRNNOutput forward(const utils::rnn::PackedSequence& input, const Tensor& h0 = {});
};

/// nn.LSTM.
class LSTM : public RNNBase {
 public:
  LSTM(int64_t input_size, int64_t hidden_size, LSTMOptions options = {});
  /// PyTorch's positional order: nn::LSTM(10, 20, 2).
  LSTM(int64_t input_size, int64_t hidden_size, int64_t num_layers, bool bias = true, bool batch_first = false,
       double dropout = 0.0, bool bidirectional = false, int64_t proj_size = 0)
      : LSTM(input_size, hidden_size,
             LSTMOptions{.num_layers = num_layers,
                         .bias = bias,
                         .batch_first = batch_first,
                         .dropout = dropout,
                         .bidirectional = bidirectional,
                         .proj_size = proj_size}) {}
  std::string name() const override { return "LSTM"; }
  /// As RNN::forward; h0 and c0 are given together or not at all (zeros).
  LSTMOutput forward(const Tensor& input, const Tensor& h0, const Tensor& c0);
  Tensor forward(const Tensor& input) override { return forward(input, Tensor(), Tensor()).output; }
  PackedLSTMOutput forward(const utils::rnn::PackedSequence& input, const Tensor& h0 = {}, const Tensor& c0 = {});
};

/// nn.GRU.
class GRU : public RNNBase {
 public:
  GRU(int64_t input_size, int64_t hidden_size, GRUOptions options = {});
  /// PyTorch's positional order: nn::GRU(10, 20, 2).
  GRU(int64_t input_size, int64_t hidden_size, int64_t num_layers, bool bias = true, bool batch_first = false,
      double dropout = 0.0, bool bidirectional = false)
      : GRU(input_size, hidden_size,
            GRUOptions{.num_layers = num_layers,
                       .bias = bias,
                       .batch_first = batch_first,
                       .dropout = dropout,
                       .bidirectional = bidirectional}) {}
  std::string name() const override { return "GRU"; }
  RNNOutput forward(const Tensor& input, const Tensor& h0);
  Tensor forward(const Tensor& input) override { return forward(input, Tensor()).output; }
  PackedRNNOutput forward(const utils::rnn::PackedSequence& input, const Tensor& h0 = {});
};

/// One step of a recurrent layer (PyTorch's RNNCellBase): weight_ih [gates * hidden, input],
/// weight_hh [gates * hidden, hidden], bias_ih and bias_hh [gates * hidden], drawn from
/// U(-1/√hidden, 1/√hidden) in that order.
class RNNCellBase : public Module {
 public:
  RNNCellBase(int64_t input_size, int64_t hidden_size, bool bias, int64_t gates);
  void reset_parameters();

  int64_t input_size, hidden_size;
  Tensor weight_ih, weight_hh, bias_ih, bias_hh;  // the biases are undefined without bias
};

/// The options of nn.RNNCell after input_size and hidden_size.
struct RNNCellOptions {
  detail::DesignatedOnly designated_only = {};
  bool bias = true;
  std::string nonlinearity = "tanh";  // or "relu"
};

/// The options of nn.LSTMCell and nn.GRUCell after input_size and hidden_size.
struct LSTMCellOptions {
  detail::DesignatedOnly designated_only = {};
  bool bias = true;
};
using GRUCellOptions = LSTMCellOptions;

/// nn.RNNCell: h' = act(x W_ih^T + b_ih + h W_hh^T + b_hh).
class RNNCell : public RNNCellBase {
 public:
  RNNCell(int64_t input_size, int64_t hidden_size, bool bias = true, std::string nonlinearity = "tanh");
  RNNCell(int64_t input_size, int64_t hidden_size, RNNCellOptions options)
      : RNNCell(input_size, hidden_size, options.bias, std::move(options.nonlinearity)) {}
  std::string name() const override { return "RNNCell"; }
  Tensor forward(const Tensor& input, const Tensor& hx);
  Tensor forward(const Tensor& input) override { return forward(input, Tensor()); }
  std::string nonlinearity;
};

/// nn.LSTMCell: returns h' and c'.
class LSTMCell : public RNNCellBase {
 public:
  LSTMCell(int64_t input_size, int64_t hidden_size, bool bias = true);
  LSTMCell(int64_t input_size, int64_t hidden_size, LSTMCellOptions options)
      : LSTMCell(input_size, hidden_size, options.bias) {}
  std::string name() const override { return "LSTMCell"; }
  /// hx and cx are given together or not at all (zeros).
  std::pair<Tensor, Tensor> forward(const Tensor& input, const Tensor& hx, const Tensor& cx);
  /// h' alone.
  Tensor forward(const Tensor& input) override { return forward(input, Tensor(), Tensor()).first; }
};

/// nn.GRUCell.
class GRUCell : public RNNCellBase {
 public:
  GRUCell(int64_t input_size, int64_t hidden_size, bool bias = true);
  GRUCell(int64_t input_size, int64_t hidden_size, GRUCellOptions options)
      : GRUCell(input_size, hidden_size, options.bias) {}
  std::string name() const override { return "GRUCell"; }
  Tensor forward(const Tensor& input, const Tensor& hx);
  Tensor forward(const Tensor& input) override { return forward(input, Tensor()); }
};

}  // namespace ember::nn
