// masked_fill and masked_fill_: PyTorch's broadcasting, dtype, error and gradient rules.
#include <gtest/gtest.h>

#include <cmath>
#include <limits>
#include <vector>

#include "ember/ember.h"
#include "support/error_of.h"
#include "support/gradcheck.h"

namespace {

using namespace ember;
using ember_test::error_of;

Tensor mask_of(std::initializer_list<NestedList> values) { return tensor(values).to(kBool); }

TEST(MaskedFill, FillsWhereTheMaskIsTrueWithBroadcasting) {
  Tensor x = tensor({{1.0, 2.0}, {3.0, 4.0}});
  EXPECT_TRUE(equal(x.masked_fill(mask_of({1, 0}), 0.5), tensor({{0.5, 2.0}, {0.5, 4.0}})));
  // Out of place, the result takes the broadcast shape of x and the mask.
  Tensor row = tensor({1.0, 2.0});
  Tensor wide = row.masked_fill(mask_of({{1}, {0}}), 0.0);
  EXPECT_TRUE(equal(wide, tensor({{0.0, 0.0}, {1.0, 2.0}})));
  Tensor scores = masked_fill(tensor({1.0, 2.0}), mask_of({1, 0}), -std::numeric_limits<double>::infinity());
  EXPECT_EQ(scores.str(), "tensor([-inf, 2.])");
}

TEST(MaskedFill, TheValueTakesTheInputsDtype) {
  Tensor ints = tensor(std::vector<int64_t>{1, 2});
  EXPECT_EQ(ints.masked_fill(mask_of({1, 0}), 2.5).str(), "tensor([2, 2])");
  EXPECT_EQ(ints.masked_fill(mask_of({1, 0}), scalar_tensor(2.5)).str(), "tensor([2, 2])");
}

TEST(MaskedFill, ErrorsMatchPyTorch) {
  Tensor x = zeros({2, 2});
  EXPECT_EQ(error_of([&] {
              x.masked_fill(tensor(std::vector<int64_t>{1, 0}), 0.5);
            }),
            "masked_fill_ only supports boolean masks, but got mask with dtype long int");
  EXPECT_EQ(error_of([&] {
              x.masked_fill(mask_of({1, 0}), tensor({1.0, 2.0}));
            }),
            "masked_fill_ only supports a 0-dimensional value tensor, but got tensor with 1 dimension(s).");
  Tensor row = zeros({2});
  EXPECT_EQ(error_of([&] {
              row.masked_fill_(mask_of({{1}, {0}}), 0.0);
            }),
            "output with shape [2] doesn't match the broadcast shape [2, 2]");
  EXPECT_TRUE(equal(row, zeros({2})));  // the refused write changed nothing
}

TEST(MaskedFill, GradientsForTheInputAndATensorValue) {
  Tensor x = tensor({{1.0, 2.0}, {3.0, 4.0}}).requires_grad_();
  Tensor value = scalar_tensor(2.0).requires_grad_();
  Tensor out = x.masked_fill(mask_of({1, 0}), value);
  EXPECT_EQ(out.grad_fn_name(), "MaskedFillBackward1");
  EXPECT_EQ(x.masked_fill(mask_of({1, 0}), 0.0).grad_fn_name(), "MaskedFillBackward0");
  (out * tensor({{1.0, 2.0}, {3.0, 4.0}})).sum().backward();
  EXPECT_TRUE(equal(x.grad(), tensor({{0.0, 2.0}, {0.0, 4.0}})));
  EXPECT_EQ(value.grad().item<float>(), 4.0f);  // 1 + 3, the filled positions
  ember::test::gradcheck("masked_fill broadcast",
                         [](const std::vector<Tensor>& in) {
                           return in[0].masked_fill(mask_of({{1}, {0}, {1}}), in[1]) * in[0];
                         },
                         {tensor({0.3, -0.7}), scalar_tensor(1.5)});
  ember::test::gradgradcheck("masked_fill",
                             [](const std::vector<Tensor>& in) {
                               return in[0].masked_fill(mask_of({0, 1, 0}), in[1]).pow(2);
                             },
                             {tensor({0.3, -0.7, 1.1}), scalar_tensor(1.5)});
}

}  // namespace
