// RNN, LSTM, GRU and their cells, written with ember's recorded ops (linear, the activations,
// split, cat, stack), so that autograd and every backend come with them. A padded batch and a
// packed one run the same code: time-major rows of which step t takes the first batch_sizes[t]
// (all of them, when padded). Per layer and direction, the input's projection x W_ih^T
// (+ biases) is one matrix product over all steps; only h W_hh^T is computed step by step. The
// steps read that projection through split_with_sizes, whose one gather node keeps backward
// linear in the sequence length. The LSTM's and the GRU's cell updates (the gates' activations
// and the new state) are one fused op each way (ops/rnn_cell.h).
#include "ember/nn/rnn.h"

#include <algorithm>
#include <cmath>
#include <string>
#include <tuple>
#include <utility>

#include "amp/autocast_policy.h"
#include "core/check.h"
#include "core/tensor_internal.h"
#include "ember/factories.h"
#include "ember/nn/functional.h"
#include "ember/nn/init.h"
#include "ember/ops.h"
#include "ember/warning.h"
#include "nn/packed_sequence_internal.h"
#include "ops/rnn_cell.h"

namespace ember::nn {

namespace {

const char* mode_name(RNNBase::Mode mode) {
  switch (mode) {
    case RNNBase::Mode::LSTM:
      return "LSTM";
    case RNNBase::Mode::GRU:
      return "GRU";
    default:
      return "RNN";
  }
}

/// Sizes as PyTorch prints the expected hidden size, a Python tuple: "(2, 3, 20)".
std::string tuple_str(IntList sizes) {
  std::string list = ember::detail::shape_str(sizes);
  return "(" + list.substr(1, list.size() - 2) + ")";
}

Tensor zeros_for(IntList sizes, const Tensor& like) {
  return zeros(sizes, TensorOptions(like.dtype()).device(like.device()));
}

/// One step of each recurrence, given the input's projection for this step (`xp`, which holds
/// b_ih, and for RNN and LSTM b_hh too) and the previous state.
struct Step {
  const Tensor& w_hh;
  const Tensor& b_hh;  // GRU only (the others fold it into xp); may be undefined
  const Tensor& w_hr;  // projected LSTM only
};

Tensor rnn_step(const Tensor& xp, const Tensor& h, const Step& p, bool relu) {
  Tensor pre = xp + functional::linear(h, p.w_hh);
  return relu ? ember::relu(pre) : ember::tanh(pre);
}

void lstm_step(const Tensor& xp, Tensor& h, Tensor& c, const Step& p) {
  std::tie(h, c) = ember::detail::lstm_cell_update(xp, functional::linear(h, p.w_hh), c);
  if (p.w_hr.defined()) h = functional::linear(h, p.w_hr);
}

Tensor gru_step(const Tensor& xp, const Tensor& h, const Step& p) {
  return ember::detail::gru_cell_update(xp, functional::linear(h, p.w_hh, p.b_hh), h);
}

void check_probability(double p) {
  EMBER_CHECK(p >= 0.0 && p <= 1.0,
              "dropout should be a number in range [0, 1] representing the probability of an element being zeroed");
}

}  // namespace

// ---- RNNBase ----

RNNBase::RNNBase(Mode mode, int64_t input_size, int64_t hidden_size, RNNOptions options)
    : mode(mode), input_size(input_size), hidden_size(hidden_size), options(std::move(options)) {
  const RNNOptions& o = this->options;
  check_probability(o.dropout);
  if (o.dropout > 0 && o.num_layers == 1) {
    warn(ember::detail::concat(
        "dropout option adds dropout after all but last recurrent layer, so non-zero dropout expects "
        "num_layers greater than 1, but got dropout=",
        ember::detail::python_float(o.dropout), " and num_layers=", o.num_layers));
  }
  EMBER_CHECK(input_size > 0, "input_size must be greater than zero");
  EMBER_CHECK(hidden_size > 0, "hidden_size must be greater than zero");
  EMBER_CHECK(o.num_layers > 0, "num_layers must be greater than zero");
  EMBER_CHECK(o.proj_size >= 0, "proj_size should be a positive integer or zero to disable projections");
  EMBER_CHECK(o.proj_size < hidden_size, "proj_size has to be smaller than hidden_size");
  const int64_t gate_size = gate_count() * hidden_size;
  const int64_t directions = o.bidirectional ? 2 : 1;
  const int64_t real_hidden = o.proj_size > 0 ? o.proj_size : hidden_size;
  for (int64_t layer = 0; layer < o.num_layers; ++layer) {
    const int64_t layer_input = layer == 0 ? input_size : real_hidden * directions;
    for (int64_t direction = 0; direction < directions; ++direction) {
      const std::string suffix = "_l" + std::to_string(layer) + (direction == 1 ? "_reverse" : "");
      std::vector<Tensor> params;
      params.push_back(register_parameter("weight_ih" + suffix, empty({gate_size, layer_input})));
      params.push_back(register_parameter("weight_hh" + suffix, empty({gate_size, real_hidden})));
      if (o.bias) {
        params.push_back(register_parameter("bias_ih" + suffix, empty({gate_size})));
        params.push_back(register_parameter("bias_hh" + suffix, empty({gate_size})));
      }
      if (o.proj_size > 0)
        params.push_back(register_parameter("weight_hr" + suffix, empty({o.proj_size, hidden_size})));
      weights_.push_back(std::move(params));
    }
  }
  reset_parameters();
}

int64_t RNNBase::gate_count() const {
  switch (mode) {
    case Mode::LSTM:
      return 4;
    case Mode::GRU:
      return 3;
    default:
      return 1;
  }
}

void RNNBase::reset_parameters() {
  const double bound = 1.0 / std::sqrt(static_cast<double>(hidden_size));
  for (const Tensor& p : parameters()) init::uniform_(p, -bound, bound);
}

std::vector<Tensor> RNNBase::layer_parameters(int64_t layer, bool reverse) const {
  EMBER_CHECK(layer >= 0 && layer < options.num_layers, "layer_parameters: layer ", layer, " is out of range for ",
              options.num_layers, " layer(s)");
  EMBER_CHECK(!reverse || options.bidirectional, "layer_parameters: the ", mode_name(mode), " is not bidirectional");
  return weights_[static_cast<size_t>(layer * (options.bidirectional ? 2 : 1) + (reverse ? 1 : 0))];
}

namespace {

/// One layer and direction's states after its last step, and its h at every step.
struct DirectionResult {
  Tensor output;  // [sum of batch_sizes, h size]: every step's h, time-major
  Tensor h, c;    // [batch, *]: each sequence's state after its own last step
};

/// Runs one layer's recurrence in one direction. xs[t] is step t's input projection, with
/// batch_sizes[t] rows: the sequences still running, which are always the first ones. Forward,
/// a sequence that ends leaves the batch and its final state is set aside; in reverse, each
/// sequence starts at its own last step from its initial state.
DirectionResult run_direction(RNNBase::Mode mode, const std::vector<Tensor>& xs,
                              const std::vector<int64_t>& batch_sizes, bool reverse, const Tensor& h0, const Tensor& c0,
                              const Step& step) {
  const bool lstm = mode == RNNBase::Mode::LSTM;
  auto advance = [&](const Tensor& xp, Tensor& h, Tensor& c) {
    switch (mode) {
      case RNNBase::Mode::RNN_TANH:
      case RNNBase::Mode::RNN_RELU:
        h = rnn_step(xp, h, step, mode == RNNBase::Mode::RNN_RELU);
        break;
      case RNNBase::Mode::LSTM:
        lstm_step(xp, h, c, step);
        break;
      case RNNBase::Mode::GRU:
        h = gru_step(xp, h, step);
        break;
    }
  };
  const size_t steps = xs.size();
  std::vector<Tensor> hs(steps);
  DirectionResult r;
  Tensor h = h0, c = c0;
  if (!reverse) {
    std::vector<Tensor> ended_h, ended_c;  // the states of finished sequences, the shortest first
    for (size_t t = 0; t < steps; ++t) {
      const int64_t rows = batch_sizes[t], running = h.size(0);
      if (rows < running) {
        ended_h.push_back(h.narrow(0, rows, running - rows));
        h = h.narrow(0, 0, rows);
        if (lstm) {
          ended_c.push_back(c.narrow(0, rows, running - rows));
          c = c.narrow(0, 0, rows);
        }
      }
      advance(xs[t], h, c);
      hs[t] = h;
    }
    if (ended_h.empty()) {
      r.h = h;
      r.c = c;
    } else {
      ended_h.push_back(h);
      std::reverse(ended_h.begin(), ended_h.end());
      r.h = cat(ended_h, 0);
      if (lstm) {
        ended_c.push_back(c);
        std::reverse(ended_c.begin(), ended_c.end());
        r.c = cat(ended_c, 0);
      }
    }
  } else {
    if (steps > 0 && batch_sizes.back() < h0.size(0)) {
      h = h0.narrow(0, 0, batch_sizes.back());
      if (lstm) c = c0.narrow(0, 0, batch_sizes.back());
    }
    for (size_t t = steps; t-- > 0;) {
      const int64_t rows = batch_sizes[t], running = h.size(0);
      if (rows > running) {  // sequences whose last step is t join with their initial state
        h = cat({h, h0.narrow(0, running, rows - running)}, 0);
        if (lstm) c = cat({c, c0.narrow(0, running, rows - running)}, 0);
      }
      advance(xs[t], h, c);
      hs[t] = h;
    }
    r.h = h;
    r.c = c;
  }
  r.output = steps > 0 ? cat(hs, 0) : zeros_for({0, h0.size(1)}, h0);
  return r;
}

}  // namespace

void RNNBase::check_hidden(const Tensor& h0, const Tensor& c0, int64_t batch) const {
  const bool lstm = mode == Mode::LSTM;
  const int64_t directions = options.bidirectional ? 2 : 1;
  const int64_t real_hidden = options.proj_size > 0 ? options.proj_size : hidden_size;
  const std::vector<int64_t> h_sizes{options.num_layers * directions, batch, real_hidden};
  const std::vector<int64_t> c_sizes{options.num_layers * directions, batch, hidden_size};
  if (h0.defined()) {
    EMBER_CHECK(same_dims(h0.sizes(), h_sizes), lstm ? "Expected hidden[0] size " : "Expected hidden size ",
                tuple_str(h_sizes), ", got ", ember::detail::shape_str(h0.sizes()));
  }
  if (c0.defined()) {
    EMBER_CHECK(same_dims(c0.sizes(), c_sizes), "Expected hidden[1] size ", tuple_str(c_sizes), ", got ",
                ember::detail::shape_str(c0.sizes()));
  }
}

RNNBase::RunOutput RNNBase::run_steps(const Tensor& data, const std::vector<int64_t>& batch_sizes, const Tensor& h0_arg,
                                      const Tensor& c0_arg, const std::vector<std::vector<Tensor>>& weights) {
  const bool lstm = mode == Mode::LSTM;
  const int64_t batch = batch_sizes.empty() ? 0 : batch_sizes[0];
  const int64_t directions = options.bidirectional ? 2 : 1;
  const int64_t real_hidden = options.proj_size > 0 ? options.proj_size : hidden_size;
  const Tensor h0 = h0_arg.defined() ? h0_arg : zeros_for({options.num_layers * directions, batch, real_hidden}, data);
  Tensor c0 = c0_arg;
  if (lstm && !c0.defined()) c0 = zeros_for({options.num_layers * directions, batch, hidden_size}, data);

  std::vector<Tensor> h_n, c_n;
  Tensor layer_input = data;
  for (int64_t layer = 0; layer < options.num_layers; ++layer) {
    std::vector<Tensor> direction_outputs;
    for (int64_t direction = 0; direction < directions; ++direction) {
      const int64_t index = layer * directions + direction;
      const std::vector<Tensor>& p = weights[static_cast<size_t>(index)];
      const Tensor& w_ih = p[0];
      const Tensor& w_hh = p[1];
      const Tensor none;
      const Tensor& b_ih = options.bias ? p[2] : none;
      const Tensor& b_hh = options.bias ? p[3] : none;
      const Tensor& w_hr = options.proj_size > 0 ? p.back() : none;
      const Tensor bias = b_ih.defined() && mode != Mode::GRU ? b_ih + b_hh : b_ih;
      // One product for all steps; only h W_hh^T is computed step by step.
      const std::vector<Tensor> xs = functional::linear(layer_input, w_ih, bias).split_with_sizes(batch_sizes, 0);
      const Step step{w_hh, mode == Mode::GRU ? b_hh : none, w_hr};
      DirectionResult r =
          run_direction(mode, xs, batch_sizes, direction == 1, h0[index], lstm ? c0[index] : Tensor(), step);
      direction_outputs.push_back(std::move(r.output));
      h_n.push_back(std::move(r.h));
      if (lstm) c_n.push_back(std::move(r.c));
    }
    layer_input = directions == 1 ? direction_outputs[0] : cat(direction_outputs, 1);
    if (options.dropout > 0 && is_training() && layer + 1 < options.num_layers) {
      layer_input = functional::dropout(layer_input, options.dropout, true);
    }
  }
  RunOutput out;
  out.output = layer_input;
  out.h_n = stack(h_n, 0);
  if (lstm) out.c_n = stack(c_n, 0);
  return out;
}

namespace {

void check_input_dtype(const Tensor& input, const Tensor& weight) {
  EMBER_CHECK(input.dtype() == weight.dtype(), "RNN input dtype (", dtype_name(input.dtype()),
              ") does not match weight dtype (", dtype_name(weight.dtype()), "). Convert input: input.to(",
              dtype_name(weight.dtype()), "), or convert model: model.to(", dtype_name(input.dtype()), ")");
}

/// Autocast and the recurrent layers. PyTorch runs the LSTM as one lower-precision op on every
/// device type (oneDNN's on the CPU, cuDNN's on GPUs) and the RNN and GRU as one on GPUs; ember
/// casts the input, the states and the weights where it does. Elsewhere (the CPU's RNN and GRU,
/// and its LSTM with proj_size or packed input, which PyTorch composes from ops) ember runs the
/// layer with autocast off, in its inputs' dtype: PyTorch's output dtype for the GRU and a
/// packed LSTM, float32 where PyTorch's RNN gives bfloat16 (docs/AMP.md).
std::optional<DeviceType> one_op_autocast(RNNBase::Mode mode, const Tensor& data, bool packed, bool projected) {
  const std::optional<DeviceType> device = amp::detail::autocast_device(data);
  if (!device || *device != kCPU) return device;
  return mode == RNNBase::Mode::LSTM && !packed && !projected ? device : std::nullopt;
}

}  // namespace

RNNBase::RunInputs RNNBase::autocast_inputs(const Tensor& data, const Tensor& h0, const Tensor& c0, bool packed) const {
  const std::optional<DeviceType> device = one_op_autocast(mode, data, packed, options.proj_size > 0);
  if (!device) return {data, h0, c0, {}};
  const Dtype dtype = amp::get_autocast_dtype(*device);
  RunInputs in{amp::detail::cast(data, *device, dtype), amp::detail::cast(h0, *device, dtype),
               amp::detail::cast(c0, *device, dtype), weights_};
  for (std::vector<Tensor>& direction : in.cast_weights) {
    for (Tensor& w : direction) w = amp::detail::cast(w, *device, dtype);  // cached per region
  }
  return in;
}

RNNBase::RunOutput RNNBase::run(const Tensor& input_given, const Tensor& h0_given, const Tensor& c0_given) {
  const char* what = mode_name(mode);
  ember::detail::check_defined(input_given, what);
  const RunInputs in = autocast_inputs(input_given, h0_given, c0_given, /*packed=*/false);
  amp::detail::NoAutocastGuard no_autocast;  // one op: its parts are not cast again
  const std::vector<std::vector<Tensor>>& weights = in.cast_weights.empty() ? weights_ : in.cast_weights;
  const Tensor &input_arg = in.data, &h0_arg = in.h0, &c0_arg = in.c0;
  const bool lstm = mode == Mode::LSTM;
  EMBER_CHECK(input_arg.dim() == 2 || input_arg.dim() == 3, what, ": Expected input to be 2D or 3D, got ",
              input_arg.dim(), lstm || mode == Mode::GRU ? "D instead" : "D tensor instead");
  check_input_dtype(input_arg, weights[0][0]);
  const bool batched = input_arg.dim() == 3;
  const int64_t batch_dim = options.batch_first ? 0 : 1;
  Tensor input = batched ? input_arg : input_arg.unsqueeze(batch_dim);
  Tensor h0 = h0_arg, c0 = c0_arg;
  if (lstm) {
    EMBER_CHECK(h0.defined() == c0.defined(), "LSTM: h0 and c0 are given together, or neither (for zeros)");
    if (h0.defined()) {
      const int64_t want = batched ? 3 : 2;
      EMBER_CHECK(h0.dim() == want && c0.dim() == want, "For ", batched ? "batched 3-D" : "unbatched 2-D",
                  " input, hx and cx should also be ", want, "-D but got (", h0.dim(), "-D, ", c0.dim(), "-D) tensors");
    }
  } else if (h0.defined()) {
    const int64_t want = batched ? 3 : 2;
    EMBER_CHECK(h0.dim() == want, "For ", batched ? "batched 3-D" : "unbatched 2-D", " input, hx should also be ", want,
                "-D but got ", h0.dim(), "-D tensor");
  }
  if (!batched && h0.defined()) {
    h0 = h0.unsqueeze(1);
    if (c0.defined()) c0 = c0.unsqueeze(1);
  }
  EMBER_CHECK(input.size(-1) == input_size, "input.size(-1) must be equal to input_size. Expected ", input_size,
              ", got ", input.size(-1));
  // Time-major from here on: [steps, batch, features], as rows [steps * batch, features] of
  // which every step takes the whole batch.
  if (options.batch_first) input = input.transpose(0, 1);
  const int64_t steps = input.size(0), batch = input.size(1);
  check_hidden(h0, c0, batch);
  RunOutput out = run_steps(input.reshape({steps * batch, input_size}),
                            std::vector<int64_t>(static_cast<size_t>(steps), batch), h0, c0, weights);
  const int64_t real_hidden = options.proj_size > 0 ? options.proj_size : hidden_size;
  out.output = out.output.view({steps, batch, (options.bidirectional ? 2 : 1) * real_hidden});
  if (options.batch_first) out.output = out.output.transpose(0, 1);
  if (!batched) {
    out.output = out.output.squeeze(batch_dim);
    out.h_n = out.h_n.squeeze(1);
    if (lstm) out.c_n = out.c_n.squeeze(1);
  }
  return out;
}

RNNBase::PackedRunOutput RNNBase::run(const utils::rnn::PackedSequence& input, const Tensor& h0_given,
                                      const Tensor& c0_given) {
  const char* what = mode_name(mode);
  const std::vector<int64_t> batch_sizes = utils::rnn::detail::checked_batch_sizes(input, what);
  const RunInputs in = autocast_inputs(input.data, h0_given, c0_given, /*packed=*/true);
  amp::detail::NoAutocastGuard no_autocast;  // one op: its parts are not cast again
  const std::vector<std::vector<Tensor>>& weights = in.cast_weights.empty() ? weights_ : in.cast_weights;
  const Tensor &data = in.data, &h0_arg = in.h0, &c0_arg = in.c0;
  EMBER_CHECK(data.dim() == 2, "input must have 2 dimensions, got ", data.dim());
  check_input_dtype(data, weights[0][0]);
  EMBER_CHECK(data.size(-1) == input_size, "input.size(-1) must be equal to input_size. Expected ", input_size,
              ", got ", data.size(-1));
  const bool lstm = mode == Mode::LSTM;
  if (lstm)
    EMBER_CHECK(h0_arg.defined() == c0_arg.defined(), "LSTM: h0 and c0 are given together, or neither (for zeros)");
  const int64_t batch = batch_sizes.empty() ? 0 : batch_sizes[0];
  check_hidden(h0_arg, c0_arg, batch);
  // The layers see the batch sorted by length; the states go in and come out in the caller's order.
  const Tensor& sorted = input.sorted_indices;
  auto to_sorted = [&](const Tensor& state) {
    return state.defined() && sorted.defined() ? state.index_select(1, sorted) : state;
  };
  RunOutput out = run_steps(data, batch_sizes, to_sorted(h0_arg), to_sorted(c0_arg), weights);
  const Tensor& unsorted = input.unsorted_indices;
  auto to_unsorted = [&](const Tensor& state) {
    return state.defined() && unsorted.defined() ? state.index_select(1, unsorted) : state;
  };
  PackedRunOutput result;
  result.output = utils::rnn::PackedSequence(out.output, input.batch_sizes, sorted, unsorted);
  result.h_n = to_unsorted(out.h_n);
  result.c_n = to_unsorted(out.c_n);
  return result;
}

// ---- RNN, LSTM, GRU ----

namespace {

RNNBase::Mode rnn_mode(const RNNOptions& options) {
  EMBER_CHECK(options.proj_size == 0, "proj_size argument is only supported for LSTM, not RNN or GRU");
  if (options.nonlinearity == "tanh") return RNNBase::Mode::RNN_TANH;
  EMBER_CHECK(options.nonlinearity == "relu", "Unknown nonlinearity '", options.nonlinearity,
              "'. Select from 'tanh' or 'relu'.");
  return RNNBase::Mode::RNN_RELU;
}

RNNBase::Mode gru_mode(const RNNOptions& options) {
  EMBER_CHECK(options.proj_size == 0, "proj_size argument is only supported for LSTM, not RNN or GRU");
  return RNNBase::Mode::GRU;
}

}  // namespace

RNN::RNN(int64_t input_size, int64_t hidden_size, RNNOptions options)
    : RNNBase(rnn_mode(options), input_size, hidden_size, options) {}

RNNOutput RNN::forward(const Tensor& input, const Tensor& h0) {
  RunOutput out = run(input, h0, Tensor());
  return {out.output, out.h_n};
}

PackedRNNOutput RNN::forward(const utils::rnn::PackedSequence& input, const Tensor& h0) {
  PackedRunOutput out = run(input, h0, Tensor());
  return {std::move(out.output), out.h_n};
}

LSTM::LSTM(int64_t input_size, int64_t hidden_size, RNNOptions options)
    : RNNBase(Mode::LSTM, input_size, hidden_size, std::move(options)) {}

LSTMOutput LSTM::forward(const Tensor& input, const Tensor& h0, const Tensor& c0) {
  RunOutput out = run(input, h0, c0);
  return {std::move(out.output), std::move(out.h_n), std::move(out.c_n)};
}

PackedLSTMOutput LSTM::forward(const utils::rnn::PackedSequence& input, const Tensor& h0, const Tensor& c0) {
  PackedRunOutput out = run(input, h0, c0);
  return {std::move(out.output), std::move(out.h_n), std::move(out.c_n)};
}

GRU::GRU(int64_t input_size, int64_t hidden_size, RNNOptions options)
    : RNNBase(gru_mode(options), input_size, hidden_size, options) {}

RNNOutput GRU::forward(const Tensor& input, const Tensor& h0) {
  RunOutput out = run(input, h0, Tensor());
  return {out.output, out.h_n};
}

PackedRNNOutput GRU::forward(const utils::rnn::PackedSequence& input, const Tensor& h0) {
  PackedRunOutput out = run(input, h0, Tensor());
  return {std::move(out.output), out.h_n};
}

// ---- cells ----

RNNCellBase::RNNCellBase(int64_t input_size, int64_t hidden_size, bool bias, int64_t gates)
    : input_size(input_size), hidden_size(hidden_size) {
  EMBER_CHECK(input_size >= 0 && hidden_size >= 0, "RNN cells take non-negative sizes, got input_size=", input_size,
              ", hidden_size=", hidden_size);
  weight_ih = register_parameter("weight_ih", empty({gates * hidden_size, input_size}));
  weight_hh = register_parameter("weight_hh", empty({gates * hidden_size, hidden_size}));
  if (bias) {
    bias_ih = register_parameter("bias_ih", empty({gates * hidden_size}));
    bias_hh = register_parameter("bias_hh", empty({gates * hidden_size}));
  }
  reset_parameters();
}

void RNNCellBase::reset_parameters() {
  const double bound = hidden_size > 0 ? 1.0 / std::sqrt(static_cast<double>(hidden_size)) : 0.0;
  for (const Tensor& p : parameters()) init::uniform_(p, -bound, bound);
}

namespace {

/// ATen's checks of a cell's input and one of its states (hidden0, hidden1), batched.
void check_cell_state(const Tensor& input, const Tensor& hx, int64_t input_size, int64_t hidden_size,
                      const char* which) {
  EMBER_CHECK(input.size(1) == input_size, "input has inconsistent input_size: got ", input.size(1), " expected ",
              input_size);
  EMBER_CHECK(hx.dim() == 2, "Expected 2D ", which, " (batch x hidden_size), but got ", hx.dim(), "D tensor");
  EMBER_CHECK(input.size(0) == hx.size(0), "Input batch size ", input.size(0), " doesn't match ", which, " batch size ",
              hx.size(0));
  EMBER_CHECK(hx.size(1) == hidden_size, which, " has inconsistent hidden_size: got ", hx.size(1), ", expected ",
              hidden_size);
}

/// x W_ih^T + b_ih, plus b_hh where the step takes it there (all but GRU).
Tensor cell_projection(const RNNCellBase& cell, const Tensor& x, bool fold_b_hh) {
  const bool fold = cell.bias_ih.defined() && fold_b_hh;
  return functional::linear(x, cell.weight_ih, fold ? cell.bias_ih + cell.bias_hh : cell.bias_ih);
}

/// The batched input, and whether it was batched, after the 1-D/2-D checks cells make.
std::pair<Tensor, bool> cell_input(const Tensor& input, const char* what) {
  ember::detail::check_defined(input, what);
  EMBER_CHECK(input.dim() == 1 || input.dim() == 2, what, ": Expected input to be 1D or 2D, got ", input.dim(),
              "D instead");
  const bool batched = input.dim() == 2;
  return {batched ? input : input.unsqueeze(0), batched};
}

/// hx batched like the input, or zeros when undefined. `what` names it in the 1-D/2-D check
/// ("RNNCell: Expected hidden").
Tensor cell_state(const Tensor& hx, const Tensor& input, bool batched, int64_t hidden_size, const char* what) {
  if (!hx.defined()) return zeros_for({input.size(0), hidden_size}, input);
  EMBER_CHECK(hx.dim() == 1 || hx.dim() == 2, what, " to be 1D or 2D, got ", hx.dim(), "D instead");
  return batched ? hx : hx.unsqueeze(0);
}

}  // namespace

RNNCell::RNNCell(int64_t input_size, int64_t hidden_size, bool bias, std::string nonlinearity)
    : RNNCellBase(input_size, hidden_size, bias, 1), nonlinearity(std::move(nonlinearity)) {}

Tensor RNNCell::forward(const Tensor& input_arg, const Tensor& hx_arg) {
  amp::detail::NoAutocastGuard no_autocast;  // in the input's dtype under autocast (docs/AMP.md)
  auto [input, batched] = cell_input(input_arg, "RNNCell");
  Tensor hx = cell_state(hx_arg, input, batched, hidden_size, "RNNCell: Expected hidden");
  check_cell_state(input, hx, input_size, hidden_size, "hidden0");
  EMBER_CHECK(nonlinearity == "tanh" || nonlinearity == "relu", "Unknown nonlinearity: ", nonlinearity);
  const Tensor none;
  Tensor h = rnn_step(cell_projection(*this, input, true), hx, Step{weight_hh, none, none}, nonlinearity == "relu");
  return batched ? h : h.squeeze(0);
}

LSTMCell::LSTMCell(int64_t input_size, int64_t hidden_size, bool bias)
    : RNNCellBase(input_size, hidden_size, bias, 4) {}

std::pair<Tensor, Tensor> LSTMCell::forward(const Tensor& input_arg, const Tensor& hx_arg, const Tensor& cx_arg) {
  amp::detail::NoAutocastGuard no_autocast;  // in the input's dtype under autocast (docs/AMP.md)
  auto [input, batched] = cell_input(input_arg, "LSTMCell");
  EMBER_CHECK(hx_arg.defined() == cx_arg.defined(), "LSTMCell: hx and cx are given together, or neither (for zeros)");
  Tensor hx = cell_state(hx_arg, input, batched, hidden_size, "LSTMCell: Expected hx[0]");
  Tensor cx = cell_state(cx_arg, input, batched, hidden_size, "LSTMCell: Expected hx[1]");
  check_cell_state(input, hx, input_size, hidden_size, "hidden0");
  check_cell_state(input, cx, input_size, hidden_size, "hidden1");
  const Tensor none;
  lstm_step(cell_projection(*this, input, true), hx, cx, Step{weight_hh, none, none});
  if (!batched) return {hx.squeeze(0), cx.squeeze(0)};
  return {hx, cx};
}

GRUCell::GRUCell(int64_t input_size, int64_t hidden_size, bool bias) : RNNCellBase(input_size, hidden_size, bias, 3) {}

Tensor GRUCell::forward(const Tensor& input_arg, const Tensor& hx_arg) {
  amp::detail::NoAutocastGuard no_autocast;  // in the input's dtype under autocast (docs/AMP.md)
  auto [input, batched] = cell_input(input_arg, "GRUCell");
  Tensor hx = cell_state(hx_arg, input, batched, hidden_size, "GRUCell: Expected hidden");
  check_cell_state(input, hx, input_size, hidden_size, "hidden0");
  const Tensor none;
  Tensor h = gru_step(cell_projection(*this, input, false), hx, Step{weight_hh, bias_hh, none});
  return batched ? h : h.squeeze(0);
}

}  // namespace ember::nn
