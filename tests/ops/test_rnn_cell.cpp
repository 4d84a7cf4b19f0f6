// The fused LSTM and GRU cells (src/ops/rnn_cell.cpp, kernels/rnn_ops.h) against the op-by-op
// cells they replaced: the same hy and cy and the same gradients (float64 to rounding, float32 to a few ulp,
// saturated gates included), gradients arriving at hy only, at cy only or at both; twice
// differentiable; the 16-bit floats' op-by-op path; the errors; and CUDA against the CPU.
#include <gtest/gtest.h>

#include <string>
#include <vector>

#include "backend/backend.h"
#include "core/tensor_internal.h"
#include "ember/ember.h"
#include "ops/rnn_cell.h"
#include "support/devices.h"
#include "support/error_of.h"
#include "support/gradcheck.h"

namespace {

using namespace ember;

struct Cell {
  Tensor hy, cy;
};

Cell composed(const Tensor& input_gates, const Tensor& hidden_gates, const Tensor& cx) {
  std::vector<Tensor> g = (input_gates + hidden_gates).chunk(4, 1);
  Tensor cy = sigmoid(g[1]) * cx + sigmoid(g[0]) * tanh(g[2]);
  return {sigmoid(g[3]) * tanh(cy), cy};
}

Cell fused(const Tensor& input_gates, const Tensor& hidden_gates, const Tensor& cx) {
  auto [hy, cy] = detail::lstm_cell_update(input_gates, hidden_gates, cx);
  return {hy, cy};
}

struct Outcome {
  Tensor hy, cy, d_input, d_hidden, d_cx;
};

/// Runs `cell` on fresh leaves and back-propagates w_h * hy + w_c * cy weighted by fixed random
/// tensors (an undefined weight: no gradient arrives there).
template <typename F>
Outcome run(F cell, const Tensor& a, const Tensor& b, const Tensor& c, const Tensor& w_h, const Tensor& w_c) {
  Tensor x = a.detach().requires_grad_(), h = b.detach().requires_grad_(), s = c.detach().requires_grad_();
  Cell out = cell(x, h, s);
  Tensor loss = zeros({}, TensorOptions(a.dtype()).device(a.device()));
  if (w_h.defined()) loss = loss + (out.hy * w_h).sum();
  if (w_c.defined()) loss = loss + (out.cy * w_c).sum();
  loss.backward();
  return {out.hy.detach(), out.cy.detach(), x.grad(), h.grad(), s.grad()};
}

void expect_close(const Tensor& got, const Tensor& want, double rtol, double atol, const std::string& what) {
  ASSERT_TRUE(got.defined()) << what;
  ASSERT_TRUE(same_dims(got.sizes(), want.sizes())) << what;
  const Tensor g = got.to(Device("cpu")).to(kFloat64), w = want.to(Device("cpu")).to(kFloat64);
  const double worst = (abs(g - w) - abs(w) * rtol).max().item<double>();
  EXPECT_LE(worst, atol) << what;
}

void expect_outcomes_close(const Outcome& got, const Outcome& want, double rtol, double atol, const std::string& what) {
  expect_close(got.hy, want.hy, rtol, atol, what + ": hy");
  expect_close(got.cy, want.cy, rtol, atol, what + ": cy");
  expect_close(got.d_input, want.d_input, rtol, atol, what + ": input gates' gradient");
  expect_close(got.d_hidden, want.d_hidden, rtol, atol, what + ": hidden gates' gradient");
  expect_close(got.d_cx, want.d_cx, rtol, atol, what + ": cx's gradient");
}

TEST(LstmCellFused, MatchesTheComposedCell) {
  manual_seed(21);
  // Batch sizes across the CPU's row chunks; hidden sizes across the vector loops' remainders;
  // gates scaled up to 20 so that sigmoid and tanh saturate.
  for (Dtype dtype : {kFloat64, kFloat32}) {
    for (auto [batch, hidden] : std::vector<std::pair<int64_t, int64_t>>{{1, 1}, {3, 7}, {20, 200}, {300, 33}}) {
      for (double scale : {1.0, 20.0}) {
        const TensorOptions o(dtype);
        const Tensor a = randn({batch, 4 * hidden}, o) * scale, b = randn({batch, 4 * hidden}, o);
        const Tensor c = randn({batch, hidden}, o) * scale;
        const Tensor w_h = randn({batch, hidden}, o), w_c = randn({batch, hidden}, o);
        const double rtol = dtype == kFloat64 ? 1e-13 : 4e-6, atol = dtype == kFloat64 ? 1e-14 : 1e-6;
        const std::string what = std::string(dtype_name(dtype)) + " [" + std::to_string(batch) + ", " +
                                 std::to_string(hidden) + "] scale " + std::to_string(scale);
        expect_outcomes_close(run(fused, a, b, c, w_h, w_c), run(composed, a, b, c, w_h, w_c), rtol, atol, what);
        expect_outcomes_close(run(fused, a, b, c, w_h, Tensor()), run(composed, a, b, c, w_h, Tensor()), rtol, atol,
                              what + ", hy only");
        expect_outcomes_close(run(fused, a, b, c, Tensor(), w_c), run(composed, a, b, c, Tensor(), w_c), rtol, atol,
                              what + ", cy only");
      }
    }
  }
}

TEST(LstmCellFused, RecordsOneNodeAndAcceptsStridedInputs) {
  manual_seed(22);
  const Tensor a = randn({8, 5}, kFloat64).t().requires_grad_();  // [5, 8]: 4H = 8, not contiguous
  const Tensor b = randn({5, 8}, kFloat64).requires_grad_();
  const Tensor c = randn({5, 2}, kFloat64);
  auto [hy, cy] = detail::lstm_cell_update(a, b, c);
  // hy and cy are the two halves of one output, whose node is the fused cell's.
  EXPECT_EQ(hy.grad_fn_name(), "UnbindBackward0");
  EXPECT_EQ(cy.grad_fn_name(), "UnbindBackward0");
  const Cell want = composed(a, b, c);
  expect_close(hy, want.hy, 1e-13, 1e-14, "hy");
  expect_close(cy, want.cy, 1e-13, 1e-14, "cy");
  // No gradient wanted: nothing recorded.
  {
    NoGradGuard no_grad;
    auto [h2, c2] = detail::lstm_cell_update(a, b, c);
    EXPECT_FALSE(h2.requires_grad());
    expect_close(h2, want.hy, 1e-13, 1e-14, "hy without grad");
  }
}

TEST(LstmCellFused, GradcheckAndGradgradcheck) {
  manual_seed(23);
  auto f = [](const std::vector<Tensor>& in) {
    auto [hy, cy] = detail::lstm_cell_update(in[0], in[1], in[2]);
    return cat({hy.reshape({-1}), cy.reshape({-1})});
  };
  std::vector<Tensor> inputs{randn({3, 8}, kFloat64), randn({3, 8}, kFloat64), randn({3, 2}, kFloat64)};
  test::gradcheck("lstm_cell", f, inputs);
  test::gradgradcheck("lstm_cell", f, inputs);
}

TEST(LstmCellFused, SixteenBitFloatsRunOpByOp) {
  manual_seed(24);
  for (Dtype dtype : {kBFloat16, kFloat16}) {
    const Tensor a = randn({4, 12}).to(dtype), b = randn({4, 12}).to(dtype), c = randn({4, 3}).to(dtype);
    const Cell got = fused(a, b, c), want = composed(a, b, c);
    EXPECT_EQ(got.hy.dtype(), dtype);
    expect_close(got.hy, want.hy, 0, 0, std::string(dtype_name(dtype)) + " hy");
    expect_close(got.cy, want.cy, 0, 0, std::string(dtype_name(dtype)) + " cy");
  }
}

TEST(LstmCellFused, ErrorsNameTheShapesAndDtypes) {
  const Tensor a = randn({2, 8}), c = randn({2, 2});
  EXPECT_EQ(ember_test::error_of([&] {
              detail::lstm_cell_update(a, randn({2, 4}), c);
            }),
            "lstm_cell: expected gates [B, 4H] (twice) and a cell state [B, H], got [2, 8], [2, 4] and [2, 2]");
  EXPECT_EQ(ember_test::error_of([&] {
              detail::lstm_cell_update(a, a, randn({2, 3}));
            }),
            "lstm_cell: expected gates [B, 4H] (twice) and a cell state [B, H], got [2, 8], [2, 8] and [2, 3]");
  EXPECT_EQ(ember_test::error_of([&] { detail::lstm_cell_update(a, a.to(kFloat64), c); }),
            "lstm_cell: expected one dtype, got torch.float32, torch.float64 and torch.float32");
  // The backend checks its views itself.
  const Tensor out = empty({2, 2, 2});
  EXPECT_EQ(ember_test::error_of(
                [&] { backend_for(Device("cpu")).lstm_cell(view_of(a), view_of(a), view_of(c.t()), view_of(out)); }),
            "[lstm_cell] expects contiguous views of one dtype: gates [2, 8] twice, a state [2, 2] and a pair of "
            "states [2, 2, 2]");
}

// ---- the GRU cell

Tensor gru_composed(const Tensor& input_gates, const Tensor& hidden_gates, const Tensor& hx) {
  std::vector<Tensor> x = input_gates.chunk(3, 1), h = hidden_gates.chunk(3, 1);
  const Tensor r = sigmoid(x[0] + h[0]), z = sigmoid(x[1] + h[1]);
  const Tensor n = tanh(x[2] + r * h[2]);
  return n + z * (hx - n);
}

struct GruOutcome {
  Tensor hy, d_input, d_hidden, d_hx;
};

template <typename F>
GruOutcome run_gru(F cell, const Tensor& a, const Tensor& b, const Tensor& c, const Tensor& w) {
  Tensor x = a.detach().requires_grad_(), h = b.detach().requires_grad_(), s = c.detach().requires_grad_();
  Tensor hy = cell(x, h, s);
  (hy * w).sum().backward();
  return {hy.detach(), x.grad(), h.grad(), s.grad()};
}

void expect_gru_close(const GruOutcome& got, const GruOutcome& want, double rtol, double atol,
                      const std::string& what) {
  expect_close(got.hy, want.hy, rtol, atol, what + ": hy");
  expect_close(got.d_input, want.d_input, rtol, atol, what + ": input gates' gradient");
  expect_close(got.d_hidden, want.d_hidden, rtol, atol, what + ": hidden gates' gradient");
  expect_close(got.d_hx, want.d_hx, rtol, atol, what + ": hx's gradient");
}

TEST(GruCellFused, MatchesTheComposedCell) {
  manual_seed(31);
  for (Dtype dtype : {kFloat64, kFloat32}) {
    for (auto [batch, hidden] : std::vector<std::pair<int64_t, int64_t>>{{1, 1}, {3, 7}, {20, 200}, {300, 33}}) {
      for (double scale : {1.0, 20.0}) {
        const TensorOptions o(dtype);
        const Tensor a = randn({batch, 3 * hidden}, o) * scale, b = randn({batch, 3 * hidden}, o) * scale;
        const Tensor c = randn({batch, hidden}, o), w = randn({batch, hidden}, o);
        const double rtol = dtype == kFloat64 ? 1e-13 : 4e-6, atol = dtype == kFloat64 ? 1e-14 : 1e-6;
        expect_gru_close(run_gru(detail::gru_cell_update, a, b, c, w), run_gru(gru_composed, a, b, c, w), rtol, atol,
                         std::string(dtype_name(dtype)) + " [" + std::to_string(batch) + ", " + std::to_string(hidden) +
                             "] scale " + std::to_string(scale));
      }
    }
  }
}

TEST(GruCellFused, GradcheckGradgradcheckAndTheOpByOpPath) {
  manual_seed(32);
  auto f = [](const std::vector<Tensor>& in) { return detail::gru_cell_update(in[0], in[1], in[2]); };
  std::vector<Tensor> inputs{randn({3, 6}, kFloat64), randn({3, 6}, kFloat64), randn({3, 2}, kFloat64)};
  test::gradcheck("gru_cell", f, inputs);
  test::gradgradcheck("gru_cell", f, inputs);
  EXPECT_EQ(detail::gru_cell_update(inputs[0], inputs[1], inputs[2]).grad_fn_name(), "");
  const Tensor a = randn({4, 9}).to(kBFloat16), b = randn({4, 9}).to(kBFloat16), c = randn({4, 3}).to(kBFloat16);
  expect_close(detail::gru_cell_update(a, b, c), gru_composed(a, b, c), 0, 0, "bfloat16 hy");
  EXPECT_EQ(ember_test::error_of([&] {
              detail::gru_cell_update(randn({2, 9}), randn({2, 9}), randn({2, 2}));
            }),
            "gru_cell: expected gates [B, 3H] (twice) and a hidden state [B, H], got [2, 9], [2, 9] and [2, 2]");
}

class GruCellFusedOnDevice : public ember_test::DeviceTest {};

TEST_P(GruCellFusedOnDevice, MatchesTheCpu) {
  manual_seed(33);
  for (Dtype dtype : {kFloat32, kFloat64}) {
    const TensorOptions o(dtype);
    const Tensor a = randn({20, 600}, o) * 3.0, b = randn({20, 600}, o), c = randn({20, 200}, o);
    const Tensor w = randn({20, 200}, o);
    const Device d = device();
    const GruOutcome on_device = run_gru(detail::gru_cell_update, a.to(d), b.to(d), c.to(d), w.to(d));
    const GruOutcome on_cpu = run_gru(detail::gru_cell_update, a, b, c, w);
    const double rtol = dtype == kFloat64 ? 1e-12 : 1e-5, atol = dtype == kFloat64 ? 1e-13 : 1e-6;
    expect_gru_close(on_device, on_cpu, rtol, atol, std::string(dtype_name(dtype)));
  }
}

EMBER_INSTANTIATE_DEVICE_SUITE(GruCellFusedOnDevice);

class LstmCellFusedOnDevice : public ember_test::DeviceTest {};

TEST_P(LstmCellFusedOnDevice, MatchesTheCpu) {
  manual_seed(25);
  for (Dtype dtype : {kFloat32, kFloat64}) {
    const TensorOptions o(dtype);
    const Tensor a = randn({20, 800}, o) * 3.0, b = randn({20, 800}, o), c = randn({20, 200}, o);
    const Tensor w_h = randn({20, 200}, o), w_c = randn({20, 200}, o);
    const Device d = device();
    const Outcome on_device = run(fused, a.to(d), b.to(d), c.to(d), w_h.to(d), w_c.to(d));
    const Outcome on_cpu = run(fused, a, b, c, w_h, w_c);
    const double rtol = dtype == kFloat64 ? 1e-12 : 1e-5, atol = dtype == kFloat64 ? 1e-13 : 1e-6;
    expect_outcomes_close(on_device, on_cpu, rtol, atol, std::string(dtype_name(dtype)));
  }
}

EMBER_INSTANTIATE_DEVICE_SUITE(LstmCellFusedOnDevice);

}  // namespace
