// chunk, split, split_with_sizes and unbind against PyTorch 2.15: piece shapes and values (empty
// dimensions included), that pieces are views, grad_fn names, gradients through the shared gather
// node (unused pieces, a piece used twice, a recurrent loop over unbind), double backward, and
// PyTorch's error messages word for word.
#include <gtest/gtest.h>

#include <optional>
#include <string>
#include <vector>

#include "ember/ember.h"
#include "support/error_of.h"
#include "support/gradcheck.h"

namespace {

using namespace ember;
using ember_test::error_of;

using Shape = std::vector<int64_t>;

std::vector<Shape> shapes_of(const std::vector<Tensor>& pieces) {
  std::vector<Shape> out;
  for (const Tensor& p : pieces) out.push_back(p.sizes().vec());
  return out;
}

Tensor f64(std::initializer_list<NestedList> values) { return tensor(values, kFloat64); }

bool close(const Tensor& a, const Tensor& b) { return allclose(a, b, 1e-12, 1e-12); }

// ---------------------------------------------------------------- shapes and values

TEST(Split, ChunkSizesAsPyTorch) {
  // ceil(n / chunks) per piece, the last one smaller, so there may be fewer than `chunks`.
  EXPECT_EQ(shapes_of(zeros({5}).chunk(4)), (std::vector<Shape>{{2}, {2}, {1}}));
  EXPECT_EQ(shapes_of(zeros({6}).chunk(4)), (std::vector<Shape>{{2}, {2}, {2}}));
  EXPECT_EQ(shapes_of(zeros({7}).chunk(3)), (std::vector<Shape>{{3}, {3}, {1}}));
  EXPECT_EQ(shapes_of(zeros({5}).chunk(10)), (std::vector<Shape>{{1}, {1}, {1}, {1}, {1}}));
  EXPECT_EQ(shapes_of(zeros({5}).chunk(1)), (std::vector<Shape>{{5}}));
  EXPECT_EQ(shapes_of(zeros({3, 4}).chunk(2, 1)), (std::vector<Shape>{{3, 2}, {3, 2}}));
}

TEST(Split, SplitAndSplitWithSizesShapes) {
  EXPECT_EQ(shapes_of(zeros({5}).split(2)), (std::vector<Shape>{{2}, {2}, {1}}));
  EXPECT_EQ(shapes_of(zeros({5}).split(5)), (std::vector<Shape>{{5}}));
  EXPECT_EQ(shapes_of(zeros({5}).split(10)), (std::vector<Shape>{{5}}));
  EXPECT_EQ(shapes_of(zeros({2, 7}).split(3, 1)), (std::vector<Shape>{{2, 3}, {2, 3}, {2, 1}}));
  EXPECT_EQ(shapes_of(zeros({5}).split_with_sizes({0, 5, 0})), (std::vector<Shape>{{0}, {5}, {0}}));
  EXPECT_EQ(shapes_of(zeros({2, 5}).split_with_sizes({1, 4}, 1)), (std::vector<Shape>{{2, 1}, {2, 4}}));
  EXPECT_EQ(shapes_of(zeros({2, 3, 4}).unbind(1)), (std::vector<Shape>{{2, 4}, {2, 4}, {2, 4}}));
}

TEST(Split, EmptyDimensions) {
  // chunk of an empty dimension still gives `chunks` empty pieces; split(0) and split(2) give one.
  EXPECT_EQ(shapes_of(zeros({0}).chunk(3)), (std::vector<Shape>{{0}, {0}, {0}}));
  EXPECT_EQ(shapes_of(zeros({0}).split(0)), (std::vector<Shape>{{0}}));
  EXPECT_EQ(shapes_of(zeros({0}).split(2)), (std::vector<Shape>{{0}}));
  EXPECT_EQ(shapes_of(zeros({2, 0}).split(0, 1)), (std::vector<Shape>{{2, 0}}));
  EXPECT_EQ(shapes_of(zeros({2, 0}).chunk(3, 1)), (std::vector<Shape>{{2, 0}, {2, 0}, {2, 0}}));
  // Only the split dimension decides: an empty other dimension changes nothing.
  EXPECT_EQ(shapes_of(zeros({0, 3}).chunk(3, 1)), (std::vector<Shape>{{0, 1}, {0, 1}, {0, 1}}));
  EXPECT_EQ(shapes_of(zeros({2, 0}).chunk(3, 0)), (std::vector<Shape>{{1, 0}, {1, 0}}));
  EXPECT_TRUE(zeros({2, 0}).unbind(1).empty());
}

TEST(Split, ValuesAndNegativeDims) {
  Tensor x = arange(10, kFloat64).reshape({2, 5});
  std::vector<Tensor> c = x.chunk(2, -1);
  ASSERT_EQ(c.size(), 2u);
  EXPECT_TRUE(equal(c[0], f64({{0, 1, 2}, {5, 6, 7}})));
  EXPECT_TRUE(equal(c[1], f64({{3, 4}, {8, 9}})));
  std::vector<Tensor> s = x.split(2, -1);
  ASSERT_EQ(s.size(), 3u);
  EXPECT_TRUE(equal(s[1], f64({{2, 3}, {7, 8}})));
  EXPECT_TRUE(equal(s[2], f64({{4}, {9}})));
  std::vector<Tensor> w = x.split_with_sizes({1, 4}, -1);
  ASSERT_EQ(w.size(), 2u);
  EXPECT_TRUE(equal(w[0], f64({{0}, {5}})));
  EXPECT_TRUE(equal(w[1], f64({{1, 2, 3, 4}, {6, 7, 8, 9}})));
  std::vector<Tensor> rows = x.split_with_sizes({1, 1}, -2);
  EXPECT_TRUE(equal(rows[1], f64({{5, 6, 7, 8, 9}})));
  std::vector<Tensor> u = x.unbind(-1);
  ASSERT_EQ(u.size(), 5u);
  for (int64_t i = 0; i < 5; ++i) EXPECT_TRUE(equal(u[i], x.select(1, i))) << i;
  std::vector<Tensor> u0 = x.unbind();
  ASSERT_EQ(u0.size(), 2u);
  EXPECT_TRUE(equal(u0[1], f64({5, 6, 7, 8, 9})));
  // Pieces put back together give the input.
  EXPECT_TRUE(equal(cat(x.split(2, 1), 1), x));
  EXPECT_TRUE(equal(stack(x.unbind(1), 1), x));
}

TEST(Split, NonContiguousInput) {
  // A transposed input: the pieces keep its strides and start at the right offsets.
  Tensor base = arange(24, kFloat64).reshape({4, 6});
  Tensor x = base.t();  // [6, 4], strides (1, 6)
  std::vector<Tensor> pieces = x.split(2, 1);
  ASSERT_EQ(pieces.size(), 2u);
  EXPECT_EQ(pieces[1].sizes().vec(), (Shape{6, 2}));
  EXPECT_EQ(pieces[1].strides().vec(), (Shape{1, 6}));
  EXPECT_EQ(pieces[1].storage_offset(), 12);
  EXPECT_TRUE(equal(pieces[1], x.narrow(1, 2, 2).contiguous()));
  std::vector<Tensor> rows = x.unbind(0);
  EXPECT_TRUE(equal(rows[3], f64({3, 9, 15, 21})));
}

// ---------------------------------------------------------------- views

TEST(Split, PiecesAreViewsOfTheInput) {
  Tensor x = zeros({6}, kFloat64);
  std::vector<Tensor> pieces = x.chunk(3);
  for (const Tensor& p : pieces) {
    EXPECT_TRUE(p.is_view());
    EXPECT_TRUE(p.is_alias_of(x));
    EXPECT_TRUE(p._base().is_same(x));
  }
  pieces[1].fill_(7.0);
  EXPECT_TRUE(equal(x, f64({0, 0, 7, 7, 0, 0})));
  x.split_with_sizes({5, 1})[1].fill_(1.0);
  EXPECT_TRUE(equal(x, f64({0, 0, 7, 7, 0, 1})));
  Tensor m = zeros({2, 3}, kFloat64);
  std::vector<Tensor> columns = m.unbind(1);
  EXPECT_TRUE(columns[2].is_view());
  columns[2].fill_(5.0);
  EXPECT_TRUE(equal(m, f64({{0, 0, 5}, {0, 0, 5}})));
  // The base of a piece of a view is the view's base.
  Tensor v = m.t();
  EXPECT_TRUE(v.split(1)[0]._base().is_same(m));
  // Writing to the input shows through the pieces taken earlier.
  std::vector<Tensor> halves = x.split(3);
  x.fill_(2.0);
  EXPECT_TRUE(equal(halves[1], f64({2, 2, 2})));
}

TEST(Split, GradFnNames) {
  Tensor x = zeros({5}).requires_grad_();
  for (const Tensor& p : x.chunk(4)) EXPECT_EQ(p.grad_fn_name(), "SplitBackward0");
  for (const Tensor& p : x.split(2)) EXPECT_EQ(p.grad_fn_name(), "SplitBackward0");
  for (const Tensor& p : x.split_with_sizes({2, 3})) EXPECT_EQ(p.grad_fn_name(), "SplitWithSizesBackward0");
  for (const Tensor& p : x.unbind()) EXPECT_EQ(p.grad_fn_name(), "UnbindBackward0");
  // A single piece is still a split; chunk of an empty dimension is split_with_sizes in PyTorch.
  EXPECT_EQ(x.chunk(1)[0].grad_fn_name(), "SplitBackward0");
  EXPECT_EQ(x.split(10)[0].grad_fn_name(), "SplitBackward0");
  for (const Tensor& p : zeros({0}).requires_grad_().chunk(3)) {
    EXPECT_EQ(p.grad_fn_name(), "SplitWithSizesBackward0");
  }
  for (const Tensor& p : x.chunk(2)) EXPECT_TRUE(p.requires_grad());
  // Nothing is recorded for an input without gradient, or with recording off.
  for (const Tensor& p : zeros({5}).chunk(2)) {
    EXPECT_FALSE(p.requires_grad());
    EXPECT_EQ(p.grad_fn_name(), "");
  }
  NoGradGuard no_grad;
  for (const Tensor& p : x.unbind()) {
    EXPECT_FALSE(p.requires_grad());
    EXPECT_EQ(p.grad_fn_name(), "");
  }
}

// ---------------------------------------------------------------- gradients

TEST(Split, GradientsOfWeightedPieces) {
  Tensor x = arange(7, kFloat64).reshape({7, 1}).expand({7, 2}).contiguous().requires_grad_();
  std::vector<Tensor> pieces = x.split(3);  // [3, 2], [3, 2], [1, 2]
  ASSERT_EQ(pieces.size(), 3u);
  Tensor loss = (pieces[0] * 2).sum() + (pieces[1] * pieces[1]).sum() - pieces[2].sum() * 4;
  loss.backward();
  // d/dx: 2 on the first three rows, 2x on the next three, -4 on the last.
  Tensor expected = f64({{2, 2}, {2, 2}, {2, 2}, {6, 6}, {8, 8}, {10, 10}, {-4, -4}});
  EXPECT_TRUE(close(x.grad(), expected)) << x.grad();
}

TEST(Split, UnusedPiecesGetZeros) {
  Tensor x = ones({6}, kFloat64).requires_grad_();
  (x.chunk(3)[1] * f64({3, 4})).sum().backward();
  EXPECT_TRUE(close(x.grad(), f64({0, 0, 3, 4, 0, 0}))) << x.grad();

  Tensor y = ones({2, 3}, kFloat64).requires_grad_();
  std::vector<Tensor> columns = y.unbind(1);
  (columns[0] * 5).sum().backward();
  EXPECT_TRUE(close(y.grad(), f64({{5, 0, 0}, {5, 0, 0}}))) << y.grad();

  Tensor z = ones({5}, kFloat64).requires_grad_();
  z.split_with_sizes({1, 3, 1})[2].sum().backward();
  EXPECT_TRUE(close(z.grad(), f64({0, 0, 0, 0, 1}))) << z.grad();
  EXPECT_EQ(z.grad().dtype(), kFloat64);
}

TEST(Split, APieceUsedTwiceAccumulates) {
  Tensor x = f64({1, 2, 3, 4}).requires_grad_();
  std::vector<Tensor> pieces = x.split(2);
  Tensor p = pieces[0];
  ((p * 2).sum() + (p * 3).sum() + (p * pieces[1]).sum()).backward();
  // First half: 2 + 3 + the second half's values; second half: the first half's values.
  EXPECT_TRUE(close(x.grad(), f64({8, 9, 1, 2}))) << x.grad();
  // Two splits of the same input add up in its gradient.
  Tensor y = f64({1, 2, 3}).requires_grad_();
  (y.unbind()[0] * 10 + y.chunk(3)[0].sum() + y.split_with_sizes({2, 1})[1].sum()).backward();
  EXPECT_TRUE(close(y.grad(), f64({11, 0, 1}))) << y.grad();
}

TEST(Split, BackwardThroughUnbindInARecurrentLoop) {
  // The way a recurrent layer walks a [L, N, H] sequence: h = tanh(x_t + h W), every step's
  // piece of one unbind. The gradient must equal the one through select() for each step.
  manual_seed(21);
  const Tensor data = randn({6, 2, 3}, kFloat64);
  const Tensor w = randn({3, 3}, kFloat64) * 0.5;
  auto run = [&](bool use_unbind) {
    Tensor x = data.clone().requires_grad_();
    std::vector<Tensor> steps;
    if (use_unbind) {
      steps = x.unbind(0);
    } else {
      for (int64_t t = 0; t < x.size(0); ++t) steps.push_back(x.select(0, t));
    }
    Tensor h = zeros({2, 3}, kFloat64);
    std::vector<Tensor> outputs;
    for (const Tensor& step : steps) {
      h = (step + h.matmul(w)).tanh();
      outputs.push_back(h);
    }
    Tensor out = stack(outputs, 0);
    (out * cos(out.detach())).sum().backward();
    return std::pair{out.detach(), x.grad()};
  };
  auto [out, grad] = run(true);
  auto [ref_out, ref_grad] = run(false);
  EXPECT_TRUE(close(out, ref_out));
  ASSERT_TRUE(grad.defined());
  EXPECT_EQ(grad.sizes().vec(), (Shape{6, 2, 3}));
  EXPECT_TRUE(close(grad, ref_grad)) << grad << "\n" << ref_grad;
}

TEST(Split, DoubleBackwardWithCreateGraph) {
  Tensor x = f64({0.5, -1.0, 2.0, 1.5, -0.5}).requires_grad_();
  std::vector<Tensor> pieces = x.split_with_sizes({2, 3});
  // s = sum(a^3) + 2 sum(b^3): ds/dx = 3x^2 (times 2 on b); d/dx sum(ds/dx) = 6x (times 2 on b).
  Tensor s = pieces[0].pow(3).sum() + pieces[1].pow(3).sum() * 2;
  Tensor g = autograd::grad({s}, {x}, {}, std::nullopt, /*create_graph=*/true)[0];
  ASSERT_TRUE(g.requires_grad());
  Tensor xd = x.detach();
  Tensor scale = f64({1, 1, 2, 2, 2});
  EXPECT_TRUE(close(g, 3 * xd * xd * scale)) << g;
  Tensor g2 = autograd::grad({g.sum()}, {x})[0];
  EXPECT_TRUE(close(g2, 6 * xd * scale)) << g2;

  // Through unbind and chunk, where only some pieces reach the output.
  Tensor y = f64({{1.0, 2.0}, {3.0, -1.0}, {0.5, 4.0}}).requires_grad_();
  std::vector<Tensor> rows = y.unbind(0);
  Tensor t = (rows[0] * rows[2]).sum() + y.chunk(2, 1)[1].pow(2).sum();
  Tensor gy = autograd::grad({t}, {y}, {}, std::nullopt, /*create_graph=*/true)[0];
  EXPECT_TRUE(close(gy, f64({{0.5, 4.0 + 4.0}, {0.0, -2.0}, {1.0, 2.0 + 8.0}}))) << gy;
  Tensor gy2 = autograd::grad({gy.sum()}, {y})[0];
  // d/dy of sum(gy): rows 0 and 2 swap their ones, plus 2 on the second column.
  EXPECT_TRUE(close(gy2, f64({{1.0, 3.0}, {0.0, 2.0}, {1.0, 3.0}}))) << gy2;
}

TEST(Split, GradcheckAndGradgradcheck) {
  manual_seed(22);
  auto f = [](const std::vector<Tensor>& in) {
    std::vector<Tensor> c = in[0].chunk(3, 1);                  // [4, 2] x 2, [4, 1]
    std::vector<Tensor> rows = in[0].unbind(0);                 // 4 x [5]
    std::vector<Tensor> s = in[0].split_with_sizes({1, 3}, 0);  // [1, 5], [3, 5]
    Tensor a = c[0] * c[1].tanh() + c[2];
    Tensor b = rows[1] * rows[3] + sin(s[0].squeeze(0));
    return cat({a.reshape({-1}), b, s[1].pow(2).reshape({-1})}, 0);
  };
  std::vector<Tensor> inputs{randn({4, 5}, kFloat64)};
  test::gradcheck("split ops", f, inputs);
  test::gradgradcheck("split ops", f, inputs);
}

// ---------------------------------------------------------------- errors

TEST(Split, ErrorsMatchPyTorch) {
  Tensor scalar = scalar_tensor(1.0);
  Tensor x = arange(5, kFloat32);
  EXPECT_EQ(error_of([&] { scalar.chunk(2); }), "chunk expects at least a 1-dimensional tensor");
  EXPECT_EQ(error_of([&] { x.chunk(0); }), "chunk expects `chunks` to be greater than 0, got: 0");
  EXPECT_EQ(error_of([&] { x.chunk(-1); }), "chunk expects `chunks` to be greater than 0, got: -1");
  EXPECT_EQ(error_of([&] { x.split(-1); }), "split expects split_size be non-negative, but got split_size=-1");
  EXPECT_EQ(error_of([&] { x.split(0); }),
            "split_size can only be 0 if dimension size is 0, but got dimension size of 5");
  EXPECT_EQ(error_of([&] { scalar.split(1); }), "split expects at least a 1-dimensional tensor");
  EXPECT_EQ(error_of([&] { scalar.split_with_sizes({1}); }), "split expects at least a 1-dimensional tensor");
  EXPECT_EQ(error_of([&] {
              x.split_with_sizes({2, 2});
            }),
            "split_with_sizes expects split_sizes to sum exactly to 5 (input tensor's size at dimension 0), but got "
            "split_sizes=[2, 2]");
  EXPECT_EQ(error_of([&] {
              x.split_with_sizes({6, -1});
            }),
            "split_with_sizes expects split_sizes have only non-negative entries, but got split_sizes=[6, -1]");
  // The negative entry is reported even when the sum is also wrong.
  EXPECT_EQ(error_of([&] {
              x.split_with_sizes({-1, 3});
            }),
            "split_with_sizes expects split_sizes have only non-negative entries, but got split_sizes=[-1, 3]");
  // PyTorch names the dimension as it was given, not wrapped.
  EXPECT_EQ(error_of([] {
              zeros({2, 3}).split_with_sizes({1, 1}, -1);
            }),
            "split_with_sizes expects split_sizes to sum exactly to 3 (input tensor's size at dimension -1), but got "
            "split_sizes=[1, 1]");
}

TEST(Split, UnbindOfAZeroDimTensor) {
  // PyTorch wraps the dimension first (a 0-dim tensor accepts -1 and 0), then refuses it.
  Tensor scalar = scalar_tensor(1.0);
  EXPECT_EQ(error_of([&] { scalar.unbind(); }), "Dimension specified as 0 but tensor has no dimensions");
  EXPECT_EQ(error_of([&] { scalar.unbind(-1); }), "Dimension specified as 0 but tensor has no dimensions");
  EXPECT_EQ(error_of([&] { scalar.unbind(1); }),
            "Dimension out of range (expected to be in range of [-1, 0], but got 1)");
}

TEST(Split, DimensionOutOfRange) {
  Tensor x = arange(5, kFloat32);
  const std::string range = "Dimension out of range (expected to be in range of [-1, 0], but got ";
  EXPECT_EQ(error_of([&] { x.chunk(2, 1); }), range + "1)");
  EXPECT_EQ(error_of([&] { x.split(2, 1); }), range + "1)");
  EXPECT_EQ(error_of([&] { x.split_with_sizes({2, 3}, -2); }), range + "-2)");
  EXPECT_EQ(error_of([&] { x.unbind(1); }), range + "1)");
  EXPECT_EQ(error_of([] {
              zeros({2, 3}).unbind(-3);
            }),
            "Dimension out of range (expected to be in range of [-2, 1], but got -3)");
  // The argument checks come first, as in PyTorch.
  EXPECT_EQ(error_of([&] { x.chunk(0, 5); }), "chunk expects `chunks` to be greater than 0, got: 0");
  EXPECT_EQ(error_of([&] { x.split(-1, 5); }), "split expects split_size be non-negative, but got split_size=-1");
  EXPECT_EQ(error_of([&] { x.split(0, 5); }), range + "5)");
  EXPECT_EQ(error_of([&] { x.split_with_sizes({-1, 3}, 5); }), range + "5)");
  EXPECT_THROW(Tensor().chunk(2), Error);
  EXPECT_THROW(Tensor().unbind(), Error);
}

}  // namespace
