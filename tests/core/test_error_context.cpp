// Errors from ops end with the op the user called and its inputs' dtypes, shapes and devices, so
// a message from deep inside a model still says where it came from. docs/ERRORS.md lists these
// cases with their messages.
#include <gtest/gtest.h>

#include <functional>
#include <string>
#include <vector>

#include "ember/ember.h"
#include "support/error_of.h"

using namespace ember;
using ember_test::full_error_of;

namespace {

struct BadCall {
  const char* name;
  std::function<void()> call;
  const char* problem;  // from the op's own check (PyTorch's wording where it has one)
  const char* context;  // the line naming the op and its inputs
};

std::vector<BadCall> bad_calls() {
  namespace F = nn::functional;
  return {
      {"matmul shapes",
       [] {
         matmul(zeros({2, 3}), zeros({4, 5}));
       },
       "mat1 and mat2 shapes cannot be multiplied (2x3 and 4x5)",
       "\n  in matmul(input: float32 [2, 3] on cpu, other: float32 [4, 5] on cpu)"},
      {"matmul dtypes",
       [] {
         matmul(zeros({2, 3}), zeros({3, 5}, kFloat64));
       },
       "same dtype", "\n  in matmul(input: float32 [2, 3] on cpu, other: float64 [3, 5] on cpu)"},
      {"broadcast",
       [] {
         add(zeros({2, 3}), zeros({4}));
       },
       "must match the size of tensor b (4)", "\n  in add(input: float32 [2, 3] on cpu, other: float32 [4] on cpu)"},
      {"in-place broadcast",
       [] {
         zeros({3}).add_(zeros({2, 3}));
       },
       "doesn't match the broadcast shape [2, 3]",
       "\n  in add_(self: float32 [3] on cpu, other: float32 [2, 3] on cpu)"},
      {"reshape",
       [] {
         zeros({2, 3}).reshape({4});
       },
       "shape '[4]' is invalid for input of size 6", "\n  in reshape(self: float32 [2, 3] on cpu)"},
      {"reduction dim",
       [] {
         zeros({2, 3}).sum({5});
       },
       "Dimension out of range", "\n  in sum(input: float32 [2, 3] on cpu)"},
      {"select",
       [] {
         zeros({2, 3})[7];
       },
       "index 7 out of range", "\n  in select(self: float32 [2, 3] on cpu)"},
      {"linear",
       [] {
         nn::Linear(784, 10).forward(zeros({2, 100}));
       },
       "(2x100 and 784x10)",
       "\n  in linear(input: float32 [2, 100] on cpu, weight: float32 [10, 784] on cpu, bias: float32 [10] on cpu)"},
      {"conv2d channels",
       [] {
         nn::Conv2d(3, 8, 3).forward(zeros({1, 1, 28, 28}));
       },
       "to have 3 channels",
       "\n  in conv2d(input: float32 [1, 1, 28, 28] on cpu, weight: float32 [8, 3, 3, 3] on cpu, bias: float32 [8] "
       "on cpu)"},
      {"max_pool2d",
       [] {
         F::max_pool2d(zeros({1, 1, 1, 1}), {2});
       },
       "Output size is too small", "\n  in max_pool2d(input: float32 [1, 1, 1, 1] on cpu)"},
      {"cross_entropy batch",
       [] {
         F::cross_entropy(zeros({4, 10}), zeros({5}, kInt64));
       },
       "Expected input batch_size (4) to match target batch_size (5).",
       "\n  in cross_entropy(input: float32 [4, 10] on cpu, target: int64 [5] on cpu)"},
      {"cross_entropy target",
       [] {
         F::cross_entropy(zeros({4, 10}), full({4}, 12, kInt64));
       },
       "Target 12 is out of bounds.", "\n  in cross_entropy(input: float32 [4, 10] on cpu, target: int64 [4] on cpu)"},
      {"mse_loss",
       [] {
         F::mse_loss(zeros({2, 3}), zeros({3, 2}));
       },
       "must match", "\n  in mse_loss(input: float32 [2, 3] on cpu, target: float32 [3, 2] on cpu)"},
      {"gather",
       [] {
         gather(zeros({2, 3}), 1, full({2, 1}, 5, kInt64));
       },
       "index 5 is out of bounds", "\n  in gather(input: float32 [2, 3] on cpu, index: int64 [2, 1] on cpu)"},
      {"embedding", [] { nn::Embedding(10, 4).forward(full({2}, 11, kInt64)); }, "index out of range in self",
       "\n  in embedding(input: int64 [2] on cpu, weight: float32 [10, 4] on cpu)"},
      {"batch_norm",
       [] {
         nn::BatchNorm2d(3).forward(zeros({2, 4, 5, 5}));
       },
       "running_mean should contain 4",
       "\n  in batch_norm(input: float32 [2, 4, 5, 5] on cpu, running_mean: float32 [3] on cpu"},
      {"item", [] { zeros({2}).item<float>(); }, "a Tensor with 2 elements cannot be converted to Scalar",
       "\n  in item(self: float32 [2] on cpu)"},
      {"in-place on a leaf", [] { zeros({2}).requires_grad_().add_(1); }, "a leaf Variable that requires grad",
       "\n  in add_(self: float32 [2] on cpu)"},
  };
}

}  // namespace

TEST(ErrorContext, EveryBadCallNamesTheOpAndItsInputs) {
  for (const BadCall& bad : bad_calls()) {
    const std::string message = full_error_of(bad.call);
    EXPECT_NE(message.find(bad.problem), std::string::npos) << bad.name << ":\n" << message;
    EXPECT_NE(message.find(bad.context), std::string::npos) << bad.name << ":\n" << message;
  }
}

TEST(ErrorContext, TheOuterOpIsNamedNotTheOpsItRuns) {
  // linear runs matmul and add; the user called linear.
  const std::string message = full_error_of([] { nn::functional::linear(zeros({2, 5}), zeros({3, 4})); });
  EXPECT_NE(message.find("\n  in linear("), std::string::npos) << message;
  EXPECT_EQ(message.find("in matmul("), std::string::npos) << message;
}

TEST(ErrorContext, ErrorsOutsideOpsCarryNoContext) {
  // After a failed op, the context is gone: a later error elsewhere does not inherit it.
  full_error_of([] { matmul(zeros({2, 3}), zeros({4, 5})); });
  const std::string message = full_error_of([] { Device("cuda:x"); });
  EXPECT_EQ(message, "Invalid device string: 'cuda:x'");
}
