// nn::RNN, LSTM, GRU and the three cells against PyTorch 2.15: outputs, final states and every
// gradient (input, initial states, each parameter) from tests/nn/golden/rnn_golden.safetensors
// (tools/gen_rnn_golden.py) in float64 and float32; state_dict keys in PyTorch's order; the
// initial parameters for a seed; PyTorch's error messages; batch_first and unbatched shapes;
// dropout between layers; float64 first- and second-order gradchecks; Module::to.
#include <gtest/gtest.h>

#include <map>
#include <memory>
#include <set>
#include <string>
#include <vector>

#include "ember/ember.h"
#include "ember/io/safetensors.h"
#include "ember/nn/rnn.h"
#include "support/collect_warnings.h"
#include "support/error_of.h"
#include "support/golden_cases.h"
#include "support/gradcheck.h"

namespace {

using namespace ember;
namespace nn = ember::nn;
using ember_test::error_of;
using ember_test::expect_close;
using Shape = std::vector<int64_t>;

const io::SafetensorsData& golden() {
  static const io::SafetensorsData data =
      io::load_safetensors(EMBER_SOURCE_DIR "/tests/nn/golden/rnn_golden.safetensors");
  return data;
}

/// One golden case, "MODE,key=value,..." (the kind is the mode).
struct Case : ember_test::GoldenCase {
  bool is_cell() const { return kind.ends_with("Cell"); }
  bool is_lstm() const { return kind.starts_with("LSTM"); }
  bool has(const std::string& name) const { return golden().contains(prefix + name); }
  Tensor at(const std::string& name) const { return golden().at(prefix + name); }
};

std::vector<Case> all_cases() {
  std::vector<Case> out;
  for (ember_test::GoldenCase& c : ember_test::golden_cases(golden().metadata)) out.push_back(Case{std::move(c)});
  return out;
}

nn::RNNOptions options_of(const Case& c) {
  nn::RNNOptions o;
  o.num_layers = c.num("layers");
  o.bias = c.flag("bias");
  o.batch_first = c.flag("batch_first");
  o.bidirectional = c.flag("bidirectional");
  o.nonlinearity = c.options.at("nonlinearity");
  o.proj_size = c.num("proj");
  return o;
}

std::shared_ptr<nn::Module> build(const Case& c) {
  const int64_t in = c.num("input"), hidden = c.num("hidden");
  const bool bias = c.flag("bias");
  if (c.kind == "RNN") return std::make_shared<nn::RNN>(in, hidden, options_of(c));
  if (c.kind == "LSTM") return std::make_shared<nn::LSTM>(in, hidden, options_of(c));
  if (c.kind == "GRU") return std::make_shared<nn::GRU>(in, hidden, options_of(c));
  if (c.kind == "RNNCell") return std::make_shared<nn::RNNCell>(in, hidden, bias, c.options.at("nonlinearity"));
  if (c.kind == "LSTMCell") return std::make_shared<nn::LSTMCell>(in, hidden, bias);
  if (c.kind == "GRUCell") return std::make_shared<nn::GRUCell>(in, hidden, bias);
  ADD_FAILURE() << "unknown mode " << c.kind;
  return nullptr;
}

/// What a module returns, in one shape: y is the output sequence (a cell's h'), h_n and c_n the
/// final states (a cell has no h_n; c_n is LSTMCell's c').
struct Outputs {
  Tensor y, h_n, c_n;
};

Outputs run(const Case& c, nn::Module& m, const Tensor& x, const Tensor& h0, const Tensor& c0) {
  if (c.kind == "LSTM") {
    nn::LSTMOutput r = dynamic_cast<nn::LSTM&>(m).forward(x, h0, c0);
    return {r.output, r.h_n, r.c_n};
  }
  if (c.kind == "RNN" || c.kind == "GRU") {
    nn::RNNOutput r =
        c.kind == "RNN" ? dynamic_cast<nn::RNN&>(m).forward(x, h0) : dynamic_cast<nn::GRU&>(m).forward(x, h0);
    return {r.output, r.h_n, Tensor()};
  }
  if (c.kind == "LSTMCell") {
    auto [h, cell] = dynamic_cast<nn::LSTMCell&>(m).forward(x, h0, c0);
    return {h, Tensor(), cell};
  }
  if (c.kind == "RNNCell") return {dynamic_cast<nn::RNNCell&>(m).forward(x, h0), Tensor(), Tensor()};
  return {dynamic_cast<nn::GRUCell&>(m).forward(x, h0), Tensor(), Tensor()};
}

/// A new leaf holding a golden tensor in `dtype` (never the cached golden itself).
Tensor leaf(const Tensor& t, Dtype dtype) { return t.to(dtype).clone().requires_grad_(); }

/// The case's module in `dtype` with the golden parameters loaded.
std::shared_ptr<nn::Module> loaded(const Case& c, Dtype dtype) {
  std::shared_ptr<nn::Module> m = build(c);
  m->to(dtype);
  nn::StateDict state;
  for (const std::string& key : c.keys) state.insert(key, c.at("p." + key).to(dtype));
  m->load_state_dict(state);
  return m;
}

/// Every golden case in `dtype`: the outputs, then the gradients of
/// sum(y * gy) + sum(h_n * gh) + sum(c_n * gc) for the input, the initial states and every parameter.
void check_goldens(Dtype dtype, double rtol, double atol) {
  const std::vector<Case> cases = all_cases();
  std::set<std::string> modes;
  for (const Case& c : cases) modes.insert(c.kind);
  ASSERT_EQ(modes, (std::set<std::string>{"RNN", "LSTM", "GRU", "RNNCell", "LSTMCell", "GRUCell"}));
  for (const Case& c : cases) {
    SCOPED_TRACE(c.description + " in " + std::string(dtype_name(dtype)));
    std::shared_ptr<nn::Module> m = loaded(c, dtype);
    Tensor x = leaf(c.at("x"), dtype);
    Tensor h0 = c.has("h0") ? leaf(c.at("h0"), dtype) : Tensor();
    Tensor c0 = c.has("c0") ? leaf(c.at("c0"), dtype) : Tensor();
    Outputs out = run(c, *m, x, h0, c0);
    ASSERT_EQ(out.y.dtype(), dtype);
    expect_close(out.y, c.at("y"), rtol, atol, "output");
    Tensor loss = (out.y * c.at("gy").to(dtype)).sum();
    EXPECT_EQ(out.h_n.defined(), c.has("h_n"));
    if (c.has("h_n")) {
      expect_close(out.h_n, c.at("h_n"), rtol, atol, "h_n");
      loss = loss + (out.h_n * c.at("gh").to(dtype)).sum();
    }
    EXPECT_EQ(out.c_n.defined(), c.has("c_n"));
    if (c.has("c_n")) {
      expect_close(out.c_n, c.at("c_n"), rtol, atol, "c_n");
      loss = loss + (out.c_n * c.at("gc").to(dtype)).sum();
    }
    loss.backward();
    expect_close(x.grad(), c.at("gx"), rtol, atol, "grad of x");
    if (h0.defined()) expect_close(h0.grad(), c.at("gh0"), rtol, atol, "grad of h0");
    if (c0.defined()) expect_close(c0.grad(), c.at("gc0"), rtol, atol, "grad of c0");
    const auto params = m->named_parameters();
    ASSERT_EQ(params.size(), c.keys.size());
    for (const auto& [name, p] : params) {
      EXPECT_EQ(p.dtype(), dtype) << name;
      expect_close(p.grad(), c.at("g." + name), rtol, atol, "grad of " + name);
    }
  }
}

TEST(Rnn, GoldensFloat64) { check_goldens(kFloat64, 1e-10, 1e-10); }

TEST(Rnn, GoldensFloat32) { check_goldens(kFloat32, 1e-4, 1e-4); }

TEST(Rnn, StateDictKeysInPyTorchsOrder) {
  for (const Case& c : all_cases()) {
    SCOPED_TRACE(c.description);
    std::shared_ptr<nn::Module> m = build(c);
    EXPECT_EQ(m->state_dict().keys(), c.keys);
    std::vector<std::string> names;
    for (const auto& [name, p] : m->named_parameters()) {
      names.push_back(name);
      EXPECT_EQ(p.sizes().vec(), c.at("p." + name).sizes().vec()) << name;
      EXPECT_TRUE(p.requires_grad()) << name;
      EXPECT_EQ(p.dtype(), kFloat32) << name;
    }
    EXPECT_EQ(names, c.keys);
  }
}

TEST(Rnn, LayerParametersAreTheRegisteredOnesInOrder) {
  nn::LSTM lstm(5, 6, {.num_layers = 2, .bidirectional = true, .proj_size = 2});
  const auto named = lstm.named_parameters();
  ASSERT_EQ(named.size(), 20u);
  size_t next = 0;
  for (int64_t layer = 0; layer < 2; ++layer) {
    for (bool reverse : {false, true}) {
      std::vector<Tensor> params = lstm.layer_parameters(layer, reverse);
      ASSERT_EQ(params.size(), 5u);
      const std::string suffix = "_l" + std::to_string(layer) + (reverse ? "_reverse" : "");
      const std::vector<std::string> names = {"weight_ih", "weight_hh", "bias_ih", "bias_hh", "weight_hr"};
      for (size_t k = 0; k < params.size(); ++k, ++next) {
        EXPECT_EQ(named[next].first, names[k] + suffix);
        EXPECT_TRUE(params[k].is_same(named[next].second)) << names[k] + suffix;
      }
    }
  }
  nn::GRU gru(3, 4, {.bias = false});
  EXPECT_EQ(gru.layer_parameters(0).size(), 2u);
}

// ---------------------------------------------------------------- initialisation

void expect_init(const nn::Module& m, const std::string& prefix) { ember_test::expect_parameters(m, golden(), prefix); }

TEST(Rnn, InitialisationMatchesTorch) {
  // One after the other from one seed: the LSTM must draw exactly as many numbers as torch's.
  manual_seed(7);
  nn::LSTM lstm(5, 4, {.num_layers = 2, .bidirectional = true, .proj_size = 3});
  nn::GRUCell grucell(5, 4);
  expect_init(lstm, "init.seed7.lstm.");
  expect_init(grucell, "init.seed7.grucell.");
  manual_seed(3);
  nn::RNN rnn(4, 3, {.bias = false, .nonlinearity = "relu"});
  expect_init(rnn, "init.seed3.rnn.");
  manual_seed(9);
  lstm.reset_parameters();
  expect_init(lstm, "init.reset9.lstm.");
}

TEST(Rnn, ParametersAreDrawnWithinTheBound) {
  manual_seed(1);
  nn::GRU gru(3, 16, {.num_layers = 2});
  nn::LSTMCell cell(3, 25);
  for (const Tensor& p : gru.parameters()) EXPECT_LE(p.abs().max().item<double>(), 0.25);
  for (const Tensor& p : cell.parameters()) EXPECT_LE(p.abs().max().item<double>(), 0.2);
  // Not all the same value: each was drawn.
  EXPECT_GT(cell.weight_ih.abs().max().item<double>(), 0.15);
}

// ---------------------------------------------------------------- errors

TEST(Rnn, DropoutWithOneLayerWarnsAsPyTorchDoes) {
  ember_test::CollectWarnings warnings;
  nn::LSTM(10, 20, {.dropout = 0.5});
  nn::GRU(10, 20, {.num_layers = 2, .dropout = 0.5});  // dropout between the layers: no warning
  nn::RNN(10, 20, {.dropout = 0.0});
  ASSERT_EQ(warnings.messages().size(), 1u);
  EXPECT_EQ(warnings.messages()[0],
            "dropout option adds dropout after all but last recurrent layer, so non-zero dropout expects num_layers "
            "greater than 1, but got dropout=0.5 and num_layers=1");
}

TEST(Rnn, ConstructorErrors) {
  EXPECT_EQ(error_of([] { nn::RNN(10, 0); }), "hidden_size must be greater than zero");
  EXPECT_EQ(error_of([] { nn::LSTM(0, 10); }), "input_size must be greater than zero");
  EXPECT_EQ(error_of([] { nn::LSTM(10, 20, {.num_layers = 0}); }), "num_layers must be greater than zero");
  const std::string dropout =
      "dropout should be a number in range [0, 1] representing the probability of an element being zeroed";
  EXPECT_EQ(error_of([] { nn::LSTM(10, 20, {.num_layers = 2, .dropout = 1.5}); }), dropout);
  EXPECT_EQ(error_of([] { nn::GRU(10, 20, {.num_layers = 2, .dropout = -0.1}); }), dropout);
  EXPECT_EQ(error_of([] { nn::LSTM(10, 20, {.proj_size = 20}); }), "proj_size has to be smaller than hidden_size");
  EXPECT_EQ(error_of([] { nn::LSTM(10, 20, {.proj_size = -1}); }),
            "proj_size should be a positive integer or zero to disable projections");
  EXPECT_EQ(error_of([] { nn::RNN(10, 20, {.proj_size = 5}); }),
            "proj_size argument is only supported for LSTM, not RNN or GRU");
  EXPECT_EQ(error_of([] { nn::GRU(10, 20, {.proj_size = 5}); }),
            "proj_size argument is only supported for LSTM, not RNN or GRU");
  EXPECT_EQ(error_of([] { nn::RNN(10, 20, {.nonlinearity = "foo"}); }),
            "Unknown nonlinearity 'foo'. Select from 'tanh' or 'relu'.");
  // The edges of the ranges are accepted.
  EXPECT_EQ(error_of([] { nn::LSTM(10, 20, {.num_layers = 2, .dropout = 1.0, .proj_size = 19}); }), "no error");
}

TEST(Rnn, ForwardErrors) {
  nn::RNN rnn(10, 20, {.num_layers = 2});
  EXPECT_EQ(error_of([&] {
              rnn.forward(zeros({5, 3, 7}), Tensor());
            }),
            "input.size(-1) must be equal to input_size. Expected 10, got 7");
  EXPECT_EQ(error_of([&] {
              rnn.forward(zeros({5, 3, 10, 1}), Tensor());
            }),
            "RNN: Expected input to be 2D or 3D, got 4D tensor instead");
  EXPECT_EQ(error_of([&] { rnn(zeros({10})); }), "RNN: Expected input to be 2D or 3D, got 1D tensor instead");
  EXPECT_EQ(error_of([&] {
              rnn.forward(zeros({5, 3, 10}), zeros({3, 20}));
            }),
            "For batched 3-D input, hx should also be 3-D but got 2-D tensor");
  EXPECT_EQ(error_of([&] {
              rnn.forward(zeros({5, 10}), zeros({2, 3, 20}));
            }),
            "For unbatched 2-D input, hx should also be 2-D but got 3-D tensor");
  EXPECT_EQ(error_of([&] {
              rnn.forward(zeros({5, 3, 10}), zeros({1, 3, 20}));
            }),
            "Expected hidden size (2, 3, 20), got [1, 3, 20]");
  // Unbatched, PyTorch compares after adding the batch dimension to both.
  EXPECT_EQ(error_of([&] {
              rnn.forward(zeros({5, 10}), zeros({1, 20}));
            }),
            "Expected hidden size (2, 1, 20), got [1, 1, 20]");

  nn::LSTM lstm(10, 20, {.num_layers = 2});
  EXPECT_EQ(error_of([&] { lstm(zeros({5, 3, 7, 1})); }), "LSTM: Expected input to be 2D or 3D, got 4D instead");
  EXPECT_EQ(error_of([&] {
              lstm(zeros({5, 3, 7}));
            }),
            "input.size(-1) must be equal to input_size. Expected 10, got 7");
  EXPECT_EQ(error_of([&] {
              lstm.forward(zeros({5, 3, 10}), zeros({3, 20}), zeros({3, 20}));
            }),
            "For batched 3-D input, hx and cx should also be 3-D but got (2-D, 2-D) tensors");
  EXPECT_EQ(error_of([&] {
              lstm.forward(zeros({5, 3, 10}), zeros({1, 3, 20}), zeros({2, 3, 20}));
            }),
            "Expected hidden[0] size (2, 3, 20), got [1, 3, 20]");
  EXPECT_EQ(error_of([&] {
              lstm.forward(zeros({5, 3, 10}), zeros({2, 3, 20}), zeros({2, 3, 19}));
            }),
            "Expected hidden[1] size (2, 3, 20), got [2, 3, 19]");
  nn::LSTM projected(10, 20, {.num_layers = 2, .proj_size = 5});
  EXPECT_EQ(error_of([&] {
              projected.forward(zeros({5, 3, 10}), zeros({2, 3, 20}), zeros({2, 3, 20}));
            }),
            "Expected hidden[0] size (2, 3, 5), got [2, 3, 20]");
  EXPECT_EQ(error_of([&] {
              projected.forward(zeros({5, 3, 10}), zeros({2, 3, 5}), zeros({2, 3, 5}));
            }),
            "Expected hidden[1] size (2, 3, 20), got [2, 3, 5]");

  nn::GRU gru(10, 20, {.batch_first = true});
  EXPECT_EQ(error_of([&] { gru(zeros({5, 3, 7, 1})); }), "GRU: Expected input to be 2D or 3D, got 4D instead");
  // batch_first: the batch is the input's first dimension.
  EXPECT_EQ(error_of([&] {
              gru.forward(zeros({3, 5, 10}), zeros({1, 5, 20}));
            }),
            "Expected hidden size (1, 3, 20), got [1, 5, 20]");
  EXPECT_EQ(error_of([&] {
              gru.forward(zeros({3, 5, 10}), zeros({5, 20}));
            }),
            "For batched 3-D input, hx should also be 3-D but got 2-D tensor");
}

TEST(Rnn, CellErrors) {
  nn::RNNCell rnn(5, 4);
  nn::LSTMCell lstm(5, 4);
  nn::GRUCell gru(5, 4);
  EXPECT_EQ(error_of([&] { rnn(zeros({2, 3, 5})); }), "RNNCell: Expected input to be 1D or 2D, got 3D instead");
  EXPECT_EQ(error_of([&] { lstm(zeros({2, 3, 5})); }), "LSTMCell: Expected input to be 1D or 2D, got 3D instead");
  EXPECT_EQ(error_of([&] { gru(zeros({2, 3, 5})); }), "GRUCell: Expected input to be 1D or 2D, got 3D instead");
  EXPECT_EQ(error_of([&] {
              rnn.forward(zeros({3, 5}), zeros({1, 3, 4}));
            }),
            "RNNCell: Expected hidden to be 1D or 2D, got 3D instead");
  EXPECT_EQ(error_of([&] {
              gru.forward(zeros({3, 5}), zeros({1, 3, 4}));
            }),
            "GRUCell: Expected hidden to be 1D or 2D, got 3D instead");
  EXPECT_EQ(error_of([&] {
              lstm.forward(zeros({3, 5}), zeros({1, 3, 4}), zeros({3, 4}));
            }),
            "LSTMCell: Expected hx[0] to be 1D or 2D, got 3D instead");
  // ATen's checks of the cell's operands.
  EXPECT_EQ(error_of([&] { rnn(zeros({3, 7})); }), "input has inconsistent input_size: got 7 expected 5");
  EXPECT_EQ(error_of([&] {
              rnn.forward(zeros({3, 5}), zeros({2, 4}));
            }),
            "Input batch size 3 doesn't match hidden0 batch size 2");
  EXPECT_EQ(error_of([&] {
              rnn.forward(zeros({3, 5}), zeros({3, 5}));
            }),
            "hidden0 has inconsistent hidden_size: got 5, expected 4");
}

// ---------------------------------------------------------------- shapes and semantics

TEST(Rnn, BatchFirstAndUnbatchedShapes) {
  manual_seed(2);
  nn::LSTM lstm(5, 4, {.num_layers = 2, .batch_first = true, .bidirectional = true});
  nn::LSTMOutput r = lstm.forward(randn({3, 7, 5}), Tensor(), Tensor());
  EXPECT_EQ(r.output.sizes().vec(), (Shape{3, 7, 8}));
  EXPECT_EQ(r.h_n.sizes().vec(), (Shape{4, 3, 4}));
  EXPECT_EQ(r.c_n.sizes().vec(), (Shape{4, 3, 4}));
  // Unbatched input is [seq, feature] whatever batch_first says.
  r = lstm.forward(randn({7, 5}), Tensor(), Tensor());
  EXPECT_EQ(r.output.sizes().vec(), (Shape{7, 8}));
  EXPECT_EQ(r.h_n.sizes().vec(), (Shape{4, 4}));
  EXPECT_EQ(r.c_n.sizes().vec(), (Shape{4, 4}));

  nn::LSTM projected(5, 6, {.num_layers = 3, .proj_size = 2});
  r = projected.forward(randn({7, 3, 5}), zeros({3, 3, 2}), zeros({3, 3, 6}));
  EXPECT_EQ(r.output.sizes().vec(), (Shape{7, 3, 2}));
  EXPECT_EQ(r.h_n.sizes().vec(), (Shape{3, 3, 2}));
  EXPECT_EQ(r.c_n.sizes().vec(), (Shape{3, 3, 6}));

  nn::GRU gru(5, 4, {.batch_first = true, .bidirectional = true});
  nn::RNNOutput g = gru.forward(randn({2, 6, 5}), Tensor());
  EXPECT_EQ(g.output.sizes().vec(), (Shape{2, 6, 8}));
  EXPECT_EQ(g.h_n.sizes().vec(), (Shape{2, 2, 4}));
  nn::RNN rnn(5, 3, {.num_layers = 2, .nonlinearity = "relu"});
  EXPECT_EQ(rnn.mode, nn::RNNBase::Mode::RNN_RELU);
  g = rnn.forward(randn({6, 5}), zeros({2, 3}));
  EXPECT_EQ(g.output.sizes().vec(), (Shape{6, 3}));
  EXPECT_EQ(g.h_n.sizes().vec(), (Shape{2, 3}));
  EXPECT_EQ(nn::RNN(5, 3).mode, nn::RNNBase::Mode::RNN_TANH);

  nn::RNNCell cell(5, 4);
  EXPECT_EQ(cell(randn({3, 5})).sizes().vec(), (Shape{3, 4}));
  EXPECT_EQ(cell(randn({5})).sizes().vec(), (Shape{4}));
  nn::LSTMCell lcell(5, 4);
  auto [h, c] = lcell.forward(randn({5}), zeros({4}), zeros({4}));
  EXPECT_EQ(h.sizes().vec(), (Shape{4}));
  EXPECT_EQ(c.sizes().vec(), (Shape{4}));
  EXPECT_EQ(nn::GRUCell(5, 4)(randn({2, 5})).sizes().vec(), (Shape{2, 4}));
}

TEST(Rnn, BatchFirstIsATranspose) {
  manual_seed(3);
  nn::GRU seq_first(5, 4, {.num_layers = 2, .bidirectional = true});
  nn::GRU batch_first(5, 4, {.num_layers = 2, .batch_first = true, .bidirectional = true});
  batch_first.load_state_dict(seq_first.state_dict());
  Tensor x = randn({6, 3, 5}, kFloat64), h0 = randn({4, 3, 4}, kFloat64);
  seq_first.to(kFloat64);
  batch_first.to(kFloat64);
  nn::RNNOutput a = seq_first.forward(x, h0);
  nn::RNNOutput b = batch_first.forward(x.transpose(0, 1), h0);
  EXPECT_TRUE(allclose(b.output, a.output.transpose(0, 1), 1e-12, 1e-12));
  EXPECT_TRUE(allclose(b.h_n, a.h_n, 1e-12, 1e-12));
}

TEST(Rnn, UnbatchedIsABatchOfOne) {
  manual_seed(4);
  nn::LSTM lstm(5, 4, {.num_layers = 2, .bidirectional = true, .proj_size = 3});
  lstm.to(kFloat64);
  Tensor x = randn({6, 5}, kFloat64), h0 = randn({4, 3}, kFloat64), c0 = randn({4, 4}, kFloat64);
  nn::LSTMOutput one = lstm.forward(x, h0, c0);
  nn::LSTMOutput batched = lstm.forward(x.unsqueeze(1), h0.unsqueeze(1), c0.unsqueeze(1));
  EXPECT_TRUE(allclose(one.output, batched.output.squeeze(1), 1e-12, 1e-12));
  EXPECT_TRUE(allclose(one.h_n, batched.h_n.squeeze(1), 1e-12, 1e-12));
  EXPECT_TRUE(allclose(one.c_n, batched.c_n.squeeze(1), 1e-12, 1e-12));
}

TEST(Rnn, DirectionsAndFinalStates) {
  // The forward direction ends at the last step, the reverse one at the first.
  manual_seed(5);
  nn::RNN rnn(5, 4, {.bidirectional = true});
  Tensor x = randn({6, 2, 5});
  nn::RNNOutput r = rnn.forward(x, Tensor());
  EXPECT_TRUE(allclose(r.h_n[0], r.output[5].narrow(1, 0, 4), 0, 0));
  EXPECT_TRUE(allclose(r.h_n[1], r.output[0].narrow(1, 4, 4), 0, 0));
  // An undefined h0 means zeros; operator() returns the output alone.
  EXPECT_TRUE(allclose(rnn.forward(x, zeros({2, 2, 4})).output, r.output, 0, 0));
  EXPECT_TRUE(allclose(rnn(x), r.output, 0, 0));
  nn::LSTM lstm(5, 4);
  nn::LSTMOutput l = lstm.forward(x, Tensor(), Tensor());
  EXPECT_TRUE(allclose(l.h_n[0], l.output[5], 0, 0));
  EXPECT_TRUE(allclose(lstm.forward(x, zeros({1, 2, 4}), zeros({1, 2, 4})).c_n, l.c_n, 0, 0));
  EXPECT_TRUE(allclose(lstm(x), l.output, 0, 0));
  nn::GRUCell cell(5, 4);
  EXPECT_TRUE(allclose(cell(x[0]), cell.forward(x[0], zeros({2, 4})), 0, 0));
}

// ---------------------------------------------------------------- dropout

/// A one-layer LSTM holding layer `layer` of `full` (both directions).
std::shared_ptr<nn::LSTM> single_layer(nn::LSTM& full, int64_t layer, int64_t input_size) {
  auto one = std::make_shared<nn::LSTM>(input_size, full.hidden_size,
                                        nn::RNNOptions{.bidirectional = full.options.bidirectional});
  one->to(kFloat64);
  nn::StateDict state;
  const std::string from = "_l" + std::to_string(layer);
  for (const auto& [key, value] : full.state_dict()) {
    const size_t at = key.find(from);
    if (at == std::string::npos) continue;
    state.insert(key.substr(0, at) + "_l0" + key.substr(at + from.size()), value);
  }
  one->load_state_dict(state);
  return one;
}

TEST(Rnn, DropoutBetweenLayersOnlyWhileTraining) {
  manual_seed(6);
  nn::LSTM full(5, 4, {.num_layers = 2, .dropout = 1.0, .bidirectional = true});
  full.to(kFloat64);
  auto layer0 = single_layer(full, 0, 5);
  auto layer1 = single_layer(full, 1, 8);
  Tensor x = randn({6, 3, 5}, kFloat64), h0 = randn({4, 3, 4}, kFloat64), c0 = randn({4, 3, 4}, kFloat64);
  Tensor h0_first = h0.narrow(0, 0, 2), c0_first = c0.narrow(0, 0, 2);
  Tensor h0_second = h0.narrow(0, 2, 2), c0_second = c0.narrow(0, 2, 2);
  nn::LSTMOutput first = layer0->forward(x, h0_first, c0_first);

  // eval(): no dropout, the second layer reads the first layer's output.
  full.eval();
  nn::LSTMOutput evaluated = full.forward(x, h0, c0);
  nn::LSTMOutput second = layer1->forward(first.output, h0_second, c0_second);
  EXPECT_TRUE(allclose(evaluated.output, second.output, 1e-12, 1e-12));
  EXPECT_TRUE(allclose(evaluated.h_n, cat({first.h_n, second.h_n}, 0), 1e-12, 1e-12));
  EXPECT_TRUE(allclose(evaluated.c_n, cat({first.c_n, second.c_n}, 0), 1e-12, 1e-12));

  // Training with p = 1: the second layer reads zeros, and its own output is not dropped.
  full.train();
  nn::LSTMOutput trained = full.forward(x, h0, c0);
  nn::LSTMOutput on_zeros = layer1->forward(zeros({6, 3, 8}, kFloat64), h0_second, c0_second);
  EXPECT_TRUE(allclose(trained.output, on_zeros.output, 1e-12, 1e-12));
  EXPECT_TRUE(allclose(trained.h_n, cat({first.h_n, on_zeros.h_n}, 0), 1e-12, 1e-12));
  EXPECT_TRUE(allclose(trained.c_n, cat({first.c_n, on_zeros.c_n}, 0), 1e-12, 1e-12));
  EXPECT_GT(trained.output.abs().sum().item<double>(), 0.0);
}

TEST(Rnn, DropoutWithPartialProbability) {
  manual_seed(7);
  nn::GRU gru(5, 8, {.num_layers = 3, .dropout = 0.5});
  nn::GRU plain(5, 8, {.num_layers = 3});
  plain.load_state_dict(gru.state_dict());
  Tensor x = randn({5, 4, 5});
  gru.eval();
  EXPECT_TRUE(allclose(gru(x), plain(x), 0, 0));
  gru.train();
  nn::RNNOutput trained = gru.forward(x, Tensor());
  EXPECT_FALSE(allclose(trained.output, plain(x), 1e-3, 1e-3));
  // The first layer's final state comes before any dropout.
  EXPECT_TRUE(allclose(trained.h_n[0], plain.forward(x, Tensor()).h_n[0], 0, 0));
  // One layer: nothing to drop between layers, so training changes nothing.
  nn::RNN single(5, 4, {.dropout = 1.0});
  EXPECT_TRUE(single.is_training());
  Tensor train_out = single(x);
  single.eval();
  EXPECT_TRUE(allclose(train_out, single(x), 0, 0));
}

// ---------------------------------------------------------------- gradchecks

Tensor flat_cat(const std::vector<Tensor>& parts) {
  std::vector<Tensor> flat;
  for (const Tensor& p : parts) flat.push_back(p.reshape({-1}));
  return cat(flat, 0);
}

TEST(RnnGradcheck, Lstm) {
  manual_seed(11);
  auto lstm = std::make_shared<nn::LSTM>(3, 2, nn::RNNOptions{.num_layers = 2, .bidirectional = true, .proj_size = 1});
  lstm->to(kFloat64);
  auto f = [&](const std::vector<Tensor>& in) {
    nn::LSTMOutput r = lstm->forward(in[0], in[1], in[2]);
    return flat_cat({r.output, r.h_n, r.c_n});
  };
  std::vector<Tensor> inputs{randn({3, 2, 3}, kFloat64), randn({4, 2, 1}, kFloat64), randn({4, 2, 2}, kFloat64)};
  test::gradcheck("LSTM", f, inputs);
  test::gradgradcheck("LSTM", f, inputs);
}

TEST(RnnGradcheck, Gru) {
  manual_seed(12);
  auto gru =
      std::make_shared<nn::GRU>(3, 2, nn::RNNOptions{.num_layers = 2, .batch_first = true, .bidirectional = true});
  gru->to(kFloat64);
  auto f = [&](const std::vector<Tensor>& in) {
    nn::RNNOutput r = gru->forward(in[0], in[1]);
    return flat_cat({r.output, r.h_n});
  };
  std::vector<Tensor> inputs{randn({2, 3, 3}, kFloat64), randn({4, 2, 2}, kFloat64)};
  test::gradcheck("GRU", f, inputs);
  test::gradgradcheck("GRU", f, inputs);
}

TEST(RnnGradcheck, Cells) {
  manual_seed(13);
  auto lstm = std::make_shared<nn::LSTMCell>(3, 2);
  auto gru = std::make_shared<nn::GRUCell>(3, 2);
  auto rnn = std::make_shared<nn::RNNCell>(3, 2);
  lstm->to(kFloat64);
  gru->to(kFloat64);
  rnn->to(kFloat64);
  auto f = [&](const std::vector<Tensor>& in) {
    auto [h, c] = lstm->forward(in[0], in[1], in[2]);
    return flat_cat({h, c, gru->forward(in[0], in[1]), rnn->forward(in[0], in[1])});
  };
  std::vector<Tensor> inputs{randn({2, 3}, kFloat64), randn({2, 2}, kFloat64), randn({2, 2}, kFloat64)};
  test::gradcheck("cells", f, inputs);
  test::gradgradcheck("cells", f, inputs);
}

// ---------------------------------------------------------------- moving

TEST(Rnn, ToFloat64KeepsHandlesAndValues) {
  manual_seed(14);
  nn::LSTM lstm(5, 4, {.num_layers = 2, .proj_size = 2});
  std::vector<Tensor> handles = lstm.parameters();
  std::vector<Tensor> before;
  for (const Tensor& p : handles) before.push_back(p.detach().clone());
  Tensor x = randn({6, 3, 5});
  nn::LSTMOutput single = lstm.forward(x, Tensor(), Tensor());

  lstm.to(kFloat64);
  for (size_t k = 0; k < handles.size(); ++k) {
    EXPECT_EQ(handles[k].dtype(), kFloat64);
    EXPECT_TRUE(equal(handles[k].detach(), before[k].to(kFloat64))) << k;
  }
  for (const Tensor& p : lstm.layer_parameters(1)) EXPECT_EQ(p.dtype(), kFloat64);
  Tensor x64 = x.to(kFloat64).requires_grad_();
  nn::LSTMOutput twice = lstm.forward(x64, Tensor(), Tensor());
  EXPECT_EQ(twice.output.dtype(), kFloat64);
  EXPECT_EQ(twice.h_n.dtype(), kFloat64);
  EXPECT_EQ(twice.c_n.dtype(), kFloat64);
  EXPECT_TRUE(allclose(twice.output, single.output.to(kFloat64), 1e-5, 1e-6));
  EXPECT_TRUE(allclose(twice.c_n, single.c_n.to(kFloat64), 1e-5, 1e-6));
  (twice.output.sum() + twice.c_n.sum()).backward();
  EXPECT_EQ(x64.grad().dtype(), kFloat64);
  for (const Tensor& p : handles) {
    ASSERT_TRUE(p.grad().defined());
    EXPECT_EQ(p.grad().dtype(), kFloat64);
  }
}

}  // namespace
