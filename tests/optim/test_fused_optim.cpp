// The fused SGD, Adam/AdamW, Adadelta and RMSprop updates (one backend pass per parameter) must give exactly the
// bits of the op-by-op updates that follow torch/optim. A non-contiguous parameter cannot be
// fused, so training one copy of the weights as a transposed view and one contiguously runs both
// paths on the same numbers.
#include <gtest/gtest.h>

#include <functional>
#include <memory>
#include <string>
#include <vector>

#include "ember/ember.h"

namespace {

using namespace ember;
using Factory = std::function<std::unique_ptr<optim::Optimizer>(std::vector<Tensor>)>;

/// Trains `steps` steps of a small regression with weights [8, 16] stored row-major (fused) or
/// as the transpose of a [16, 8] tensor (op by op); returns the weights, contiguous.
Tensor train(const Factory& make, bool fused, Dtype dtype, int steps) {
  manual_seed(11);
  const Tensor w0 = randn({8, 16}).to(dtype);
  const Tensor x = randn({16, 5}).to(dtype);
  const Tensor y = randn({8, 5}).to(dtype);
  Tensor w = fused ? w0.clone().requires_grad_() : w0.t().contiguous().t().requires_grad_();
  EXPECT_EQ(w.is_contiguous(), fused);
  std::unique_ptr<optim::Optimizer> opt = make({w});
  for (int i = 0; i < steps; ++i) {
    opt->zero_grad();
    // Through contiguous(), both copies reach the product in the same layout, so their
    // gradients are the same bits (mm computes a transposed operand's gradient transposed).
    Tensor diff = w.contiguous().mm(x) - y;
    (diff * diff).mean().backward();
    opt->step();
  }
  return w.detach().contiguous();
}

struct Case {
  std::string name;
  Factory make;
};

std::vector<Case> cases() {
  using namespace optim;
  auto sgd = [](SGDOptions o) -> Factory { return [o](auto p) { return std::make_unique<SGD>(p, o); }; };
  auto adam = [](AdamOptions o) -> Factory { return [o](auto p) { return std::make_unique<Adam>(p, o); }; };
  auto adamw = [](AdamWOptions o) -> Factory { return [o](auto p) { return std::make_unique<AdamW>(p, o); }; };
  auto adadelta = [](AdadeltaOptions o) -> Factory { return [o](auto p) { return std::make_unique<Adadelta>(p, o); }; };
  auto rmsprop = [](RMSpropOptions o) -> Factory { return [o](auto p) { return std::make_unique<RMSprop>(p, o); }; };
  return {
      {"sgd", sgd({.lr = 0.1})},
      {"sgd_momentum", sgd({.lr = 0.05, .momentum = 0.9})},
      {"sgd_nesterov_decay", sgd({.lr = 0.05, .momentum = 0.9, .weight_decay = 0.01, .nesterov = true})},
      {"sgd_dampening_maximize", sgd({.lr = 0.05, .momentum = 0.5, .dampening = 0.25, .maximize = true})},
      {"sgd_unit_rates", sgd({.lr = 0.01, .momentum = 1.0, .weight_decay = 1.0})},
      {"adam", adam({.lr = 0.01})},
      {"adam_decay_amsgrad", adam({.lr = 0.01, .weight_decay = 0.1, .amsgrad = true})},
      {"adam_low_beta1_maximize", adam({.lr = 0.01, .beta1 = 0.3, .maximize = true})},
      {"adam_beta2_zero", adam({.lr = 0.01, .beta2 = 0.0})},
      {"adamw", adamw({.lr = 0.01})},
      {"adamw_amsgrad", adamw({.lr = 0.01, .weight_decay = 0.05, .amsgrad = true})},
      {"adadelta", adadelta({})},
      {"adadelta_decay_maximize", adadelta({.lr = 0.5, .rho = 0.8, .weight_decay = 0.1, .maximize = true})},
      {"adadelta_rho_one", adadelta({.rho = 1.0})},
      {"rmsprop", rmsprop({})},
      {"rmsprop_centered", rmsprop({.lr = 0.005, .centered = true})},
      {"rmsprop_momentum_decay", rmsprop({.lr = 0.005, .weight_decay = 0.1, .momentum = 0.9})},
      {"rmsprop_centered_momentum_maximize",
       rmsprop({.lr = 0.002, .momentum = 0.5, .centered = true, .maximize = true})},
      {"rmsprop_low_alpha", rmsprop({.lr = 0.005, .alpha = 0.3, .centered = true})},
  };
}

TEST(FusedOptimizers, MatchTheOpByOpUpdateBitForBit) {
  for (Dtype dtype : {kFloat32, kFloat64}) {
    for (const Case& c : cases()) {
      const Tensor fused = train(c.make, true, dtype, 7);
      const Tensor reference = train(c.make, false, dtype, 7);
      EXPECT_TRUE(equal(fused, reference)) << c.name << " " << dtype_name(dtype) << "\nfused:\n"
                                           << fused << "\nop by op:\n"
                                           << reference;
    }
  }
}

TEST(FusedOptimizers, StateDictIsTheSameEitherWay) {
  // The fused path must leave the same state entries as the op-by-op one (checkpoints, PyTorch).
  for (const Case& c : cases()) {
    manual_seed(3);
    Tensor a = randn({4, 6}).requires_grad_();
    Tensor b = a.detach().t().contiguous().t().requires_grad_();
    auto oa = c.make({a});
    auto ob = c.make({b});
    for (auto [p, o] : {std::pair{a, oa.get()}, std::pair{b, ob.get()}}) {
      (p * p).sum().backward();
      o->step();
    }
    const auto sa = oa->state_dict().tensors;
    const auto sb = ob->state_dict().tensors;
    ASSERT_EQ(sa.size(), sb.size()) << c.name;
    for (const auto& [key, value] : sa) {
      auto it = sb.find(key);
      ASSERT_NE(it, sb.end()) << c.name << " lacks " << key << " op by op";
      EXPECT_TRUE(equal(value.contiguous(), it->second.contiguous())) << c.name << " " << key;
    }
  }
}

TEST(FusedOptimizers, AStepCountsAsAnInPlaceWrite) {
  // autograd must still see the parameter as modified when a graph saved it before the step.
  Tensor w = ones({3}).requires_grad_();
  optim::SGD opt({w}, {.lr = 0.1});
  Tensor y = (w * w).sum();  // saves w
  (w * 2).sum().backward();
  opt.step();
  EXPECT_THROW(y.backward(), Error);
}

}  // namespace
