// In-place ops on tensors in a recorded graph, with PyTorch's semantics: the written tensor's
// history becomes the writing op's, a write through a view reaches the base (CopySlices) and
// the base's other views (AsStridedBackward0), and the writes PyTorch refuses are refused with
// its messages. Gradients are checked against float64 finite differences; names and messages
// are PyTorch 2.15's.
#include <gtest/gtest.h>

#include <memory>
#include <string>
#include <vector>

#include "ember/ember.h"
#include "support/error_of.h"
#include "support/gradcheck.h"

namespace {

using namespace ember;
using ember::test::gradcheck;
using ember::test::gradgradcheck;
using ember_test::error_of;

Tensor f64(std::initializer_list<NestedList> values) { return tensor(values, kFloat64); }

bool close(const Tensor& a, const Tensor& b) { return allclose(a, b, 1e-12, 1e-12); }

// ---------------------------------------------------------------------------------------------
// What the written tensors' histories become
// ---------------------------------------------------------------------------------------------

TEST(InplaceAutograd, AWriteMakesTheOpTheTensorsGradFn) {
  Tensor x = f64({1.0, 2.0, 3.0}).requires_grad_();
  Tensor h = x * 1;
  h.add_(2);
  EXPECT_EQ(h.grad_fn_name(), "AddBackward0");
  h.mul_(f64({1.0, 1.0, 1.0}));
  EXPECT_EQ(h.grad_fn_name(), "MulBackward0");
  h.copy_(ones({3}));
  EXPECT_EQ(h.grad_fn_name(), "CopyBackwards");
  h.fill_(3);
  EXPECT_EQ(h.grad_fn_name(), "FillBackward2");
  h.zero_();
  EXPECT_EQ(h.grad_fn_name(), "ZeroBackward0");
  EXPECT_EQ(h.str(), "tensor([0., 0., 0.], dtype=torch.float64, grad_fn=<ZeroBackward0>)");
  EXPECT_FALSE(h.is_leaf());
}

TEST(InplaceAutograd, AWriteThroughAViewRewritesTheBase) {
  Tensor x = f64({1.0, 2.0, 3.0}).requires_grad_();
  Tensor h = x * 1;
  Tensor v = h.slice(0, 0, 2);
  Tensor later = h.slice(0, 1);  // a view made before the write
  v.mul_(2);
  EXPECT_EQ(h.grad_fn_name(), "CopySlices");
  EXPECT_EQ(v.grad_fn_name(), "AsStridedBackward0");
  EXPECT_EQ(later.grad_fn_name(), "AsStridedBackward0");
  EXPECT_EQ(h.slice(0, 1).grad_fn_name(), "SliceBackward0");  // a view made after it
  EXPECT_TRUE(close(h.detach(), f64({2.0, 4.0, 3.0})));
  EXPECT_TRUE(close(later.detach(), f64({4.0, 3.0})));
  (later * f64({10.0, 100.0})).sum().backward();
  EXPECT_TRUE(close(x.grad(), f64({0.0, 20.0, 100.0}))) << x.grad();
}

TEST(InplaceAutograd, ATensorThatNeededNoGradientGainsAHistory) {
  Tensor x = f64({1.0, -2.0, 3.0}).requires_grad_();
  Tensor buffer = zeros({3}, kFloat64);
  buffer.add_(x);
  EXPECT_EQ(buffer.grad_fn_name(), "AddBackward0");
  Tensor copy = zeros({3}, kFloat64);
  copy.copy_(x);
  EXPECT_EQ(copy.grad_fn_name(), "CopyBackwards");
  (buffer * copy).sum().backward();
  EXPECT_TRUE(close(x.grad(), f64({2.0, -4.0, 6.0}))) << x.grad();  // d(x^2)/dx
}

TEST(InplaceAutograd, ABaseThatNeededNoGradientGainsOneThroughItsView) {
  Tensor x = f64({5.0, 7.0}).requires_grad_();
  Tensor rows = zeros({2, 2}, kFloat64);
  Tensor untouched = rows.select(0, 1);
  EXPECT_FALSE(untouched.requires_grad());
  rows.select(0, 0).copy_(x);
  EXPECT_TRUE(rows.requires_grad());
  EXPECT_EQ(rows.grad_fn_name(), "CopySlices");
  EXPECT_TRUE(untouched.requires_grad());  // its base now has a history
  EXPECT_EQ(untouched.grad_fn_name(), "AsStridedBackward0");
  (rows * rows).sum().backward();
  EXPECT_TRUE(close(x.grad(), f64({10.0, 14.0}))) << x.grad();
}

TEST(InplaceAutograd, AnOverwrittenValueGetsZerosNotNothing) {
  // PyTorch's CopyBackwards sends zeros to what was overwritten, so x.grad is zeros, not None.
  Tensor x = f64({1.0, 2.0}).requires_grad_();
  Tensor h = x * 2;
  h.copy_(ones({2}, kFloat64));
  h.sum().backward();
  ASSERT_TRUE(x.grad().defined());
  EXPECT_TRUE(close(x.grad(), f64({0.0, 0.0})));
}

TEST(InplaceAutograd, CopyGradientsReturnToTheSourcesShapeAndDtype) {
  Tensor row = tensor({1.0, 2.0, 3.0}, kFloat64).requires_grad_();
  Tensor grid = zeros({2, 3}, kFloat32);
  grid.copy_(row);  // broadcast over rows, cast to float32
  (grid * tensor({{1.0, 1.0, 1.0}, {2.0, 2.0, 2.0}}, kFloat32)).sum().backward();
  EXPECT_EQ(row.grad().dtype(), kFloat64);
  EXPECT_TRUE(close(row.grad(), f64({3.0, 3.0, 3.0}))) << row.grad();
}

TEST(InplaceAutograd, WritesWithoutGradModeAreNotRecorded) {
  Tensor x = f64({1.0, 2.0}).requires_grad_();
  Tensor h = x * 3;
  {
    NoGradGuard no_grad;
    h.add_(1);
  }
  EXPECT_EQ(h.grad_fn_name(), "MulBackward0");
  h.sum().backward();
  EXPECT_TRUE(close(x.grad(), f64({3.0, 3.0})));
}

TEST(InplaceAutograd, ViewsVersionsAndBases) {
  Tensor a = zeros({2, 3});
  EXPECT_FALSE(a.is_view());
  Tensor row = a.select(0, 1);
  Tensor part = row.slice(0, 1);
  EXPECT_TRUE(part.is_view());
  EXPECT_TRUE(part._base().is_same(a));  // the root, not the view it was made from
  EXPECT_FALSE(a.detach().is_view());
  EXPECT_EQ(error_of([&] { a._base(); }), "Can't get base of non-view Tensor");
  const int64_t before = a._version();
  part.fill_(1);
  row.add_(1);
  EXPECT_EQ(a._version(), before + 2);
  EXPECT_EQ(a.detach()._version(), before + 2);  // detach shares the counter
}

// ---------------------------------------------------------------------------------------------
// Refused writes
// ---------------------------------------------------------------------------------------------

TEST(InplaceAutograd, RefusesWhatPyTorchRefuses) {
  Tensor x = ones({3}).requires_grad_();
  EXPECT_EQ(error_of([&] { x.add_(1); }), "a leaf Variable that requires grad is being used in an in-place operation.");
  EXPECT_EQ(error_of([&] { x.slice(0, 0, 2).mul_(2); }),
            "a view of a leaf Variable that requires grad is being used in an in-place operation.");
  Tensor base = zeros({3});
  Tensor quiet;
  {
    NoGradGuard no_grad;
    quiet = base.slice(0, 0, 2);
  }
  EXPECT_EQ(error_of([&] { quiet.copy_(x.slice(0, 0, 2)); }),
            "A view was created in no_grad mode and is being modified inplace with grad mode enabled. Given that this "
            "use case is ambiguous and error-prone, it is forbidden. You can clarify your code by moving both the "
            "view and the inplace either both inside the no_grad block (if you don't want the inplace to be "
            "tracked) or both outside (if you want the inplace to be tracked).");
  quiet.add_(1);  // nothing to record: allowed
  EXPECT_EQ(error_of([&] { zeros({1}).expand({3}).copy_(ones({3})); }),
            "unsupported operation: more than one element of the written-to tensor refers to a single memory "
            "location. Please clone() the tensor before performing the operation.");
  EXPECT_EQ(error_of([&] { zeros({1}).expand({3}).add_(1); }),
            "unsupported operation: more than one element of the written-to tensor refers to a single memory "
            "location. Please clone() the tensor before performing the operation.");
  Tensor filled = zeros({1}).expand({3}).fill_(2);  // PyTorch allows fill_ here
  EXPECT_EQ(filled.sum().item<float>(), 6.0f);
  // A refused write leaves the tensor as it was.
  EXPECT_EQ(x.sum().item<float>(), 3.0f);
  EXPECT_EQ(base.sum().item<float>(), 2.0f);  // only the allowed add_ landed
}

// The pieces of unbind/split/chunk share one backward, which cannot tell which piece a write
// changed: PyTorch refuses such writes while recording, naming the piece and the op (messages
// printed by PyTorch 2.15 for the same calls), and views of a piece inherit the refusal.
TEST(InplaceAutograd, RefusesWritesIntoPiecesOfASplit) {
  const std::string why =
      " This view is the output of a function that returns multiple views. Such functions do not allow the output "
      "views to be modified inplace. You should replace the inplace operation by an out-of-place one.";
  Tensor x = zeros({3, 4}).requires_grad_();
  Tensor h = x * 1;
  EXPECT_EQ(error_of([&] { h.unbind(0)[2].add_(1); }),
            "Output 2 of Unbind is a view and is being modified inplace." + why);
  EXPECT_EQ(error_of([&] {
              h.split_with_sizes({1, 2})[1].add_(1);
            }),
            "Output 1 of SplitWithSizes is a view and is being modified inplace." + why);
  EXPECT_EQ(error_of([&] { h.chunk(2, 1)[0].mul_(2); }),
            "Output 0 of Split is a view and is being modified inplace." + why);
  EXPECT_EQ(error_of([&] { h.unbind(0)[2].slice(0, 1).add_(1); }),
            "Output 0 of Slice is a view and is being modified inplace." + why);
  // A piece of a tensor that needs no gradient, written with one that does.
  Tensor plain = zeros({3, 4});
  EXPECT_EQ(error_of([&] { plain.unbind(0)[0].add_(x[0]); }),
            "A view was created in no_grad mode and is being modified inplace with grad mode enabled." + why);
  // Nothing to record, or pieces made in no-grad mode and written there: allowed.
  plain.unbind(0)[1].add_(1);
  {
    NoGradGuard no_grad;
    h.unbind(0)[0].fill_(5);
  }
  EXPECT_EQ(plain.sum().item<float>(), 4.0f);
  EXPECT_EQ(h.sum().item<float>(), 20.0f);
}

TEST(InplaceAutograd, AWriteToATensorAnOpKeptFailsAtBackward) {
  Tensor x = f64({1.0, 2.0}).requires_grad_();
  Tensor h = x * 1;
  h.mul_(h);  // mul keeps `other` (h itself), which the write then changes
  EXPECT_NE(error_of([&] { h.sum().backward(); }).find("modified by an inplace operation"), std::string::npos);
  Tensor y = x.exp();
  y.add_(1);  // exp keeps its result
  EXPECT_NE(error_of([&] { y.sum().backward(); }).find("modified by an inplace operation"), std::string::npos);
}

TEST(InplaceAutograd, AGraphAWriteInvalidatedIsFreedWithoutABackwardPass) {
  // What an op saves must not lead back to the saving node once a write rebases the saved
  // tensor or its base: such a graph would be a reference cycle and never be freed.
  std::weak_ptr<detail::TensorImpl> written, buffer;
  {
    Tensor x = f64({1.0, 2.0}).requires_grad_();
    Tensor h = x * 1;
    h.mul_(h);
    written = h.impl_ptr();
    Tensor states = zeros({2, 2}, kFloat64);
    Tensor previous = zeros({2}, kFloat64);
    for (int64_t t = 0; t < 2; ++t) {
      states.select(0, t).copy_(tanh(x * previous));
      previous = states.select(0, t);
    }
    buffer = states.impl_ptr();
  }
  EXPECT_TRUE(written.expired());
  EXPECT_TRUE(buffer.expired());
}

TEST(InplaceAutograd, MulAndDivKeepTheOriginalSelfForTheOthersGradient) {
  Tensor x = f64({1.0, 2.0}).requires_grad_();
  Tensor y = f64({3.0, 5.0}).requires_grad_();
  Tensor h = x * 1;
  h.mul_(y);
  h.div_(y * y);  // h = x / y
  h.sum().backward();
  EXPECT_TRUE(close(x.grad(), f64({1.0 / 3.0, 1.0 / 5.0}))) << x.grad();
  EXPECT_TRUE(close(y.grad(), f64({-1.0 / 9.0, -2.0 / 25.0}))) << y.grad();
}

// ---------------------------------------------------------------------------------------------
// Gradients against finite differences
// ---------------------------------------------------------------------------------------------

TEST(InplaceGradcheck, ChainsOfInplaceArithmetic) {
  gradcheck("h = x*y; h += y; h *= x; h -= 2; h /= y",
            [](const std::vector<Tensor>& in) {
              Tensor h = in[0] * in[1];
              h += in[1];
              h *= in[0];
              h -= 2;
              h /= in[1];
              h.sub_(in[0], 0.5);
              return h;
            },
            {f64({0.5, -1.5, 2.0}), f64({1.5, 2.5, -3.0})});
}

TEST(InplaceGradcheck, RowsWrittenOneAtATime) {
  // An RNN-style loop writing each step's state into a preallocated buffer.
  gradcheck("h = tanh(w * h + x[t]); states[t] = h",
            [](const std::vector<Tensor>& in) {
              const Tensor& x = in[0];
              const Tensor& w = in[1];
              Tensor states = zeros({4, 2}, kFloat64);
              Tensor previous = zeros({2}, kFloat64);
              for (int64_t t = 0; t < 4; ++t) {
                previous = tanh(w * previous + x.select(0, t));
                states.select(0, t).copy_(previous);
              }
              return states * states;
            },
            {tensor({{0.1, -0.2}, {0.3, 0.4}, {-0.5, 0.6}, {0.7, 0.8}}, kFloat64), f64({0.9, -1.1})});
}

TEST(InplaceAutograd, ReadingBackARowThatAWriteInvalidatesFailsAsInPyTorch) {
  // Reading the previous state back from the buffer makes mul keep a view of the buffer, and
  // the next row's write moves the buffer's version: PyTorch raises here too.
  Tensor x = tensor({{0.1, -0.2}, {0.3, 0.4}}, kFloat64).requires_grad_();
  Tensor w = f64({0.9, -1.1}).requires_grad_();
  Tensor states = zeros({2, 2}, kFloat64);
  Tensor previous = zeros({2}, kFloat64);
  for (int64_t t = 0; t < 2; ++t) {
    states.select(0, t).copy_(tanh(w * previous + x.select(0, t)));
    previous = states.select(0, t);
  }
  EXPECT_NE(error_of([&] { states.sum().backward(); }).find("modified by an inplace operation"), std::string::npos);
}

TEST(InplaceGradcheck, WritesThroughNestedAndStridedViews) {
  gradcheck("h.view(2,3)[1][1:].mul_(y) then reads through old and new views",
            [](const std::vector<Tensor>& in) {
              Tensor h = in[0] * 2;
              Tensor grid = h.view({2, 3});
              Tensor column = grid.select(1, 2);  // made before the write, overlaps it
              grid.select(0, 1).slice(0, 1).mul_(in[1]);
              grid.slice(1, 0, 3, 2).add_(in[1].sum());  // a strided view: columns 0 and 2
              return cat({column * column, h.exp(), grid.t().reshape({-1})}, 0);
            },
            {f64({0.1, 0.2, 0.3, 0.4, 0.5, 0.6}), f64({1.5, -0.5})});
}

TEST(InplaceGradcheck, WritesIntoResultsOfOpsThatCutThemFromATemporary) {
  // mm, matmul and linear build their results as views of a batched product; a write into part
  // of one must not cut the gradient of the rest.
  gradcheck("y = a.mm(w); y[0] *= 3; y += 1",
            [](const std::vector<Tensor>& in) {
              Tensor y = in[0].mm(in[1]);
              y.select(0, 0).mul_(3);
              y += 1;
              return y;
            },
            {tensor({{0.1, -0.2}, {0.3, 0.4}}, kFloat64), tensor({{0.5, 0.6, -0.7}, {0.8, 0.9, 1.0}}, kFloat64)});
  gradcheck("y = matmul(a3, w); y[1][0] = 0; linear(y, w2)",
            [](const std::vector<Tensor>& in) {
              Tensor y = matmul(in[0].view({2, 1, 2}), in[1]);
              y.select(0, 1).select(0, 0).zero_();
              Tensor z = nn::functional::linear(y, in[1].t());
              z.select(-1, 1).add_(in[0].select(0, 0).view({2, 1}));
              return z;
            },
            {tensor({{0.1, -0.2}, {0.3, 0.4}}, kFloat64), tensor({{0.5, 0.6}, {0.8, 0.9}}, kFloat64)});
  Tensor a = ones({2, 2}), w = ones({2, 2});
  EXPECT_FALSE(a.mm(w).is_view());
  EXPECT_FALSE(matmul(a.view({1, 2, 2}), w).is_view());
  EXPECT_FALSE(a.requires_grad_().mm(w).is_view());
}

TEST(InplaceGradcheck, ReluClampAndMaskedFillInPlace) {
  gradcheck("h.relu_(); h.clamp_(-0.5, 1.5); h[1].masked_fill_(mask, y)",
            [](const std::vector<Tensor>& in) {
              Tensor h = in[0] * 3.0;
              h.clamp_(-1.0, 4.0);  // clamp keeps its input: it must read a copy of h
              h.relu_();
              h.select(0, 1).masked_fill_(tensor({1, 0, 1}).to(kBool), in[1]);
              return h * in[0];
            },
            {tensor({{0.2, -0.3, 0.9}, {-0.1, 0.5, 2.0}}, kFloat64), tensor(0.75, kFloat64)});
  Tensor x = f64({-1.0, 2.0}).requires_grad_();
  Tensor h = x * 1;
  EXPECT_EQ(h.relu_().grad_fn_name(), "ReluBackward0");
  EXPECT_EQ(h.clamp_(std::nullopt, 1.0).grad_fn_name(), "ClampBackward1");
  EXPECT_EQ(h.masked_fill_(tensor({1, 0}).to(kBool), 0.0).grad_fn_name(), "MaskedFillBackward0");
}

TEST(InplaceAutograd, AnInplaceReluModuleWritesItsInput) {
  nn::ReLU relu(/*inplace=*/true);
  Tensor x = f64({-1.0, 2.0}).requires_grad_();
  Tensor hidden = x * 2;
  Tensor out = relu.forward(hidden);
  EXPECT_TRUE(out.is_same(hidden));  // the very tensor, as nn.ReLU(inplace=True) returns
  EXPECT_TRUE(close(hidden.detach(), f64({0.0, 4.0})));
  EXPECT_EQ(hidden.grad_fn_name(), "ReluBackward0");
  out.sum().backward();
  EXPECT_TRUE(close(x.grad(), f64({0.0, 2.0})));
  EXPECT_EQ(error_of([&] { relu.forward(x); }),
            "a leaf Variable that requires grad is being used in an in-place operation.");
  EXPECT_TRUE(close(nn::ReLU().forward(f64({-3.0, 3.0})), f64({0.0, 3.0})));
}

TEST(InplaceGradcheck, FillAndZeroCutTheGradient) {
  gradcheck("h[0].fill_(3); h[2:].zero_()",
            [](const std::vector<Tensor>& in) {
              Tensor h = in[0] * in[0];
              h.select(0, 0).fill_(3);
              h.slice(0, 2).zero_();
              return h * in[0];
            },
            {f64({0.5, -1.5, 2.0, 1.0})});
}

TEST(InplaceGradcheck, AViewOfABaseThatIsNotContiguous) {
  // A base made by detach() of a transposed tensor: its views address its storage with strides
  // that are not row-major, so gradients move through the storage positions.
  gradcheck("m = (3x2 grid).t().detach(); m[:, 0] = 2y; m[1] *= y[0]",
            [](const std::vector<Tensor>& in) {
              Tensor m = arange(6, kFloat64).view({3, 2}).t().detach();  // 2x3, strides (1, 2)
              m.select(1, 0).copy_(in[0] * 2);
              m.select(0, 1).mul_(in[0].select(0, 0));
              return m.reshape({-1}) * arange(1, 7, 1, kFloat64);
            },
            {f64({0.7, -1.3})});
}

TEST(InplaceGradcheck, AsStridedIncludingOverlappingWindows) {
  gradcheck("x.as_strided({3, 2}, {1, 1}, 1)",
            [](const std::vector<Tensor>& in) {
              return in[0].as_strided({3, 2}, {1, 1}, 1);
            },
            {f64({0.1, 0.2, 0.3, 0.4, 0.5})});
  gradcheck("x.t().as_strided({2}, {2}, 1)",
            [](const std::vector<Tensor>& in) {
              return in[0].view({2, 2}).t().as_strided({2}, {2}, 1) * 3;
            },
            {f64({0.1, 0.2, 0.3, 0.4})});
}

TEST(InplaceGradcheck, SecondDerivativesThroughWrites) {
  gradgradcheck("h = x*x; h[1:] *= y; h[0] = y.sum()",
                [](const std::vector<Tensor>& in) {
                  Tensor h = in[0] * in[0];
                  h.slice(0, 1).mul_(in[1]);
                  h.select(0, 0).copy_(in[1].sum() * in[0].select(0, 2));
                  return h * h;
                },
                {f64({0.5, -1.5, 2.0}), f64({1.5, 2.5})});
  gradgradcheck("x.as_strided overlapping",
                [](const std::vector<Tensor>& in) {
                  return in[0].as_strided({2, 2}, {1, 1}, 0).pow(2);
                },
                {f64({0.5, -1.5, 2.0})});
}

}  // namespace
