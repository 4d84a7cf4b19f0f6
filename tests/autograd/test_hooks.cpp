// Post-accumulate-grad hooks and queue_callback: what DistributedDataParallel is built on.
#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include "ember/ember.h"
#include "support/error_of.h"

using namespace ember;
using ember_test::error_of;
using testing::HasSubstr;

TEST(GradHooks, RunOnceAfterTheLeafsGradientIsComplete) {
  Tensor w = ones({3}).requires_grad_();
  std::vector<Tensor> seen;
  register_post_accumulate_grad_hook(w, [&](const Tensor& leaf) { seen.push_back(leaf.grad().clone()); });
  // w is used twice: the hook sees the sum of both uses, once.
  ((w * 2).sum() + (w * 3).sum()).backward();
  ASSERT_EQ(seen.size(), 1u);
  EXPECT_TRUE(equal(seen[0], full({3}, 5.0)));
  // A second backward accumulates; the hook sees the total.
  (w * 2).sum().backward();
  ASSERT_EQ(seen.size(), 2u);
  EXPECT_TRUE(equal(seen[1], full({3}, 7.0)));
}

TEST(GradHooks, RunInRegistrationOrderAndStopWhenRemoved) {
  Tensor w = ones({2}).requires_grad_();
  std::string order;
  HookHandle first = register_post_accumulate_grad_hook(w, [&](const Tensor&) { order += "a"; });
  register_post_accumulate_grad_hook(w, [&](const Tensor&) { order += "b"; });
  w.sum().backward();
  EXPECT_EQ(order, "ab");
  first.remove();
  first.remove();  // twice does nothing
  w.sum().backward();
  EXPECT_EQ(order, "abb");
}

TEST(GradHooks, RunWithGradModeOff) {
  Tensor w = ones({2}).requires_grad_();
  bool recording = true;
  register_post_accumulate_grad_hook(w, [&](const Tensor&) { recording = GradMode::is_enabled(); });
  w.sum().backward();
  EXPECT_FALSE(recording);
}

TEST(GradHooks, OnlyOnLeavesThatRequireGrad) {
  Tensor w = ones({2}).requires_grad_();
  Tensor y = w * 2;
  EXPECT_THAT(error_of([&] { register_post_accumulate_grad_hook(y, [](const Tensor&) {}); }),
              HasSubstr("post accumulate grad hooks cannot be registered on non-leaf tensors"));
  EXPECT_THAT(error_of([&] { register_post_accumulate_grad_hook(ones({2}), [](const Tensor&) {}); }),
              HasSubstr("doesn't require gradient"));
}

TEST(QueueCallback, RunsAfterEveryGradientIsAccumulated) {
  Tensor a = ones({2}).requires_grad_();
  Tensor b = ones({2}).requires_grad_();
  bool both_ready = false;
  int calls = 0;
  register_post_accumulate_grad_hook(a, [&](const Tensor&) {
    autograd::queue_callback([&] {
      ++calls;
      both_ready = a.grad().defined() && b.grad().defined();
    });
  });
  // b's gradient is accumulated after a's (b's node is older), yet the callback sees both.
  (b * 3 + a * 2).sum().backward();
  EXPECT_EQ(calls, 1);
  EXPECT_TRUE(both_ready);
}

TEST(QueueCallback, OutsideBackwardIsAnError) {
  EXPECT_THAT(error_of([] { autograd::queue_callback([] {}); }), HasSubstr("no backward pass is running"));
}
