// autograd::checkpoint: the same outputs and gradients (inputs and parameters) as the block run
// plainly, dropout's masks included; the block's activations are not kept between the passes;
// the block runs twice; and the reentrant form's limits and warning.
#include <gtest/gtest.h>

#include <memory>
#include <string>
#include <vector>

#include "ember/ember.h"
#include "support/collect_warnings.h"
#include "support/error_of.h"

namespace {

using namespace ember;
using ember_test::error_of;

struct Block {
  std::shared_ptr<nn::Sequential> net;
  explicit Block(bool with_dropout) {
    manual_seed(3);
    net = std::make_shared<nn::Sequential>(std::make_shared<nn::Linear>(6, 16), std::make_shared<nn::ReLU>(),
                                           std::make_shared<nn::Dropout>(with_dropout ? 0.5 : 0.0),
                                           std::make_shared<nn::Linear>(16, 4));
    net->to(kFloat64);
  }
  Tensor operator()(const std::vector<Tensor>& in) const { return net->forward(in[0]).tanh() * in[1]; }
};

struct Result {
  Tensor out, d_x, d_scale;
  std::vector<Tensor> d_params;
};

Result run(const Block& block, bool checkpointed, const Tensor& x0, const Tensor& scale0) {
  Tensor x = x0.detach().requires_grad_(), scale = scale0.detach().requires_grad_();
  block.net->zero_grad();
  manual_seed(11);  // the dropout masks
  Tensor out = checkpointed ? autograd::checkpoint(block, {x, scale}) : block({x, scale});
  (out * out).sum().backward();
  Result r{out.detach(), x.grad(), scale.grad(), {}};
  for (const Tensor& p : block.net->parameters()) r.d_params.push_back(p.grad());
  return r;
}

void expect_same(const Result& got, const Result& want) {
  EXPECT_TRUE(equal(got.out, want.out));
  EXPECT_TRUE(equal(got.d_x, want.d_x));
  EXPECT_TRUE(equal(got.d_scale, want.d_scale));
  ASSERT_EQ(got.d_params.size(), want.d_params.size());
  for (size_t i = 0; i < got.d_params.size(); ++i) EXPECT_TRUE(equal(got.d_params[i], want.d_params[i])) << i;
}

TEST(ActivationCheckpoint, GivesThePlainBlocksOutputAndGradients) {
  Block block(/*with_dropout=*/false);
  const Tensor x = randn({5, 6}, kFloat64), scale = randn({4}, kFloat64);
  expect_same(run(block, true, x, scale), run(block, false, x, scale));
}

TEST(ActivationCheckpoint, ReplaysDropoutsMasksAndLeavesTheGeneratorWhereItWas) {
  Block block(/*with_dropout=*/true);
  block.net->train();
  const Tensor x = randn({5, 6}, kFloat64), scale = randn({4}, kFloat64);
  const Result plain = run(block, false, x, scale);
  const Tensor after_plain = rand({3});
  const Result checkpointed = run(block, true, x, scale);
  const Tensor after_checkpointed = rand({3});
  expect_same(checkpointed, plain);
  // The second run inside backward does not advance the generator for what comes after.
  EXPECT_TRUE(equal(after_checkpointed, after_plain));
}

TEST(ActivationCheckpoint, KeepsNoActivationsAndRunsTheBlockTwice) {
  std::weak_ptr<detail::Storage> inner;  // the activation's memory
  int calls = 0;
  auto fn = [&](const std::vector<Tensor>& in) {
    ++calls;
    Tensor hidden = (in[0] * 2).exp();  // exp saves its output: the graph would keep it
    inner = hidden.impl().storage;
    return hidden.sum();
  };
  Tensor x = randn({8}, kFloat64).requires_grad_();
  Tensor plain = fn({x});
  EXPECT_FALSE(inner.expired());  // held by the recorded graph
  Tensor out = autograd::checkpoint(fn, {x});
  EXPECT_TRUE(inner.expired());  // the checkpointed run recorded nothing inside the block
  EXPECT_EQ(calls, 2);
  out.backward();
  EXPECT_EQ(calls, 3);
  EXPECT_TRUE(allclose(x.grad(), (x * 2).exp() * 2));
}

TEST(ActivationCheckpoint, CallbacksQueuedInsideTheBlockRunAfterTheWholeBackward) {
  // What DistributedDataParallel relies on: a gradient hook inside the block queues the step's
  // finish, which must wait for the layers before the block too.
  Tensor w0 = randn({3}, kFloat64).requires_grad_();  // used before the block: its gradient comes last
  Tensor w1 = randn({3}, kFloat64).requires_grad_();  // used inside the block
  bool w0_had_its_gradient = false;
  int callbacks = 0;
  register_post_accumulate_grad_hook(w1, [&](const Tensor&) {
    autograd::queue_callback([&] {
      ++callbacks;
      w0_had_its_gradient = w0.grad().defined();
    });
  });
  Tensor h = randn({3}, kFloat64) * w0;
  Tensor out = autograd::checkpoint([&](const std::vector<Tensor>& in) { return (in[0] * w1).sum(); }, {h});
  out.backward();
  EXPECT_EQ(callbacks, 1);
  EXPECT_TRUE(w0_had_its_gradient);
}

TEST(ActivationCheckpoint, WorksOnlyWithBackward) {
  auto fn = [](const std::vector<Tensor>& in) { return (in[0] * in[0]).sum(); };
  Tensor x = randn({3}, kFloat64).requires_grad_();
  EXPECT_EQ(error_of([&] { autograd::grad({autograd::checkpoint(fn, {x})}, {x}); }),
            "Checkpointing is not compatible with autograd::grad(); call backward() instead, or compute the block "
            "without checkpoint");
  EXPECT_EQ(error_of([&] { autograd::checkpoint(fn, {x}).backward(Tensor(), std::nullopt, /*create_graph=*/true); }),
            "checkpoint: a backward pass with create_graph cannot go through a checkpointed block (its second run is "
            "back-propagated without recording); compute the block without checkpoint");
  EXPECT_EQ(error_of([&] { autograd::checkpoint(nullptr, {x}); }), "checkpoint: the function is empty");
}

TEST(ActivationCheckpoint, WithoutInputsThatRequireGradWarnsAndRecordsNothing) {
  ember_test::CollectWarnings warnings;
  Tensor w = randn({3}, kFloat64).requires_grad_();
  Tensor out =
      autograd::checkpoint([&](const std::vector<Tensor>& in) { return (in[0] * w).sum(); }, {randn({3}, kFloat64)});
  EXPECT_FALSE(out.requires_grad());  // as PyTorch's reentrant checkpoint: w gets no gradient
  ASSERT_EQ(warnings.messages().size(), 1u);
  EXPECT_EQ(warnings.messages()[0], "None of the inputs have requires_grad=True. Gradients will be None");
  // Under no_grad the block simply runs.
  NoGradGuard no_grad;
  EXPECT_FALSE(autograd::checkpoint([&](const std::vector<Tensor>& in) { return in[0] * w; }, {w}).requires_grad());
}

}  // namespace
