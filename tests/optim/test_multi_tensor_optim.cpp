// Multi-tensor optimizer updates (Backend::multi_tensor_*_step): one call for many parameters
// must give the bits of one single-tensor call per parameter, on every backend; and an optimizer
// step hands its fused updates to the backend in one call per device and dtype.
//
// The device suite is the one that matters on a GPU, where the multi-tensor kernel (optim.cu)
// packs the parameters into launches of its own geometry: it is fed more parameters and more
// distinct hyper-parameter sets than one launch holds, and tensors of several chunks.
#include <gtest/gtest.h>

#include <array>
#include <cmath>
#include <cstring>
#include <functional>
#include <memory>
#include <stdexcept>
#include <string>
#include <vector>

#include "backend/backend.h"
#include "backend/cpu/cpu_backend.h"
#include "ember/ember.h"
#include "ember/optim/optimizers.h"
#include "kernels/optim_ops.h"
#include "optim/fused_updates.h"
#include "support/devices.h"
#include "support/error_of.h"
#include "support/host_device_backend.h"
#include "support/optimizer_cases.h"

namespace {

using namespace ember;
using ember_test::error_of;
using ember_test::host_device_backend;

/// Whether two tensors hold the same bits (NaN payloads and signed zeros included).
bool same_bits(const Tensor& a, const Tensor& b) {
  const Tensor x = a.to(Device(kCPU)).contiguous();
  const Tensor y = b.to(Device(kCPU)).contiguous();
  return x.dtype() == y.dtype() && x.sizes().vec() == y.sizes().vec() &&
         std::memcmp(x.data_ptr(), y.data_ptr(), x.nbytes()) == 0;
}

TensorView view_or_null(const Tensor& t) { return t.defined() ? view_of(t) : TensorView{}; }

/// One copy of a test's parameters, gradients and state, on one device.
struct Params {
  std::vector<Tensor> param, grad;
  std::vector<std::array<Tensor, 3>> state;

  std::vector<OptimTensors> views() const {
    std::vector<OptimTensors> out;
    for (size_t i = 0; i < param.size(); ++i) {
      out.push_back(OptimTensors{view_of(param[i]),
                                 view_of(grad[i]),
                                 {view_or_null(state[i][0]), view_or_null(state[i][1]), view_or_null(state[i][2])}});
    }
    return out;
  }
  Params to(const Device& device) const {
    Params out;
    for (size_t i = 0; i < param.size(); ++i) {
      out.param.push_back(param[i].to(device, false, true));
      out.grad.push_back(grad[i].to(device, false, true));
      std::array<Tensor, 3> s;
      for (int k = 0; k < 3; ++k) {
        if (state[i][k].defined()) s[k] = state[i][k].to(device, false, true);
      }
      out.state.push_back(s);
    }
    return out;
  }
};

/// Sizes that give the GPU kernel more tensors than one launch holds (kMultiTensorMaxTensors is
/// 64), one-element and empty ones, a chunk exactly and a chunk and one element
/// (kMultiTensorChunk is 2048) and some of many chunks.
std::vector<int64_t> test_sizes() {
  const int64_t pattern[] = {1, 0, 5, 257, 3, 31, 2, 7};
  std::vector<int64_t> sizes;
  for (int i = 0; i < 75; ++i) sizes.push_back(pattern[i % 8]);
  sizes[9] = 2048;
  sizes[20] = 2049;
  sizes[30] = 40000;
  sizes[66] = 40001;  // in the second launch
  return sizes;
}

/// Parameters on the CPU with the state each one's step uses (`uses`): averages positive, so
/// that no square root sees a negative number.
Params make_params(Dtype dtype, const std::vector<std::array<bool, 3>>& uses) {
  manual_seed(3);
  Params p;
  const std::vector<int64_t> sizes = test_sizes();
  for (size_t i = 0; i < sizes.size(); ++i) {
    p.param.push_back(randn({sizes[i]}).to(dtype));
    p.grad.push_back(randn({sizes[i]}).to(dtype));
    std::array<Tensor, 3> s;
    for (int k = 0; k < 3; ++k) {
      if (uses[i % uses.size()][k]) s[k] = (rand({sizes[i]}) * (k == 0 ? 1.0 : 0.1) + 0.1).to(dtype);
    }
    p.state.push_back(s);
  }
  return p;
}

/// Runs two steps on `device` both ways (one call per parameter, one multi-tensor call) and
/// checks that every tensor ends with the same bits, and near the CPU's.
template <typename Step, typename Single, typename Multi>
void check_rule(const Device& device, const std::string& name, const std::vector<Step>& variants,
                const std::vector<std::array<bool, 3>>& uses, Single single, Multi multi) {
  Backend& backend = backend_for(device);
  for (Dtype dtype : {kFloat32, kFloat64}) {
    const std::string what = name + " " + std::string(dtype_name(dtype));
    const Params start = make_params(dtype, uses);
    std::vector<Step> steps;
    for (size_t i = 0; i < start.param.size(); ++i) steps.push_back(variants[i % variants.size()]);
    const Params one_by_one = start.to(device);
    const Params together = start.to(device);
    const Params reference = start.to(Device(kCPU));
    for (bool skip_value : {false, true}) {
      const Tensor skip = scalar_tensor(skip_value, kBool).to(device);
      const Tensor cpu_skip = scalar_tensor(skip_value, kBool);
      const std::vector<OptimTensors> a = one_by_one.views(), b = together.views(), r = reference.views();
      for (int repeat = 0; repeat < 2; ++repeat) {
        for (size_t i = 0; i < a.size(); ++i) single(backend, a[i], steps[i], view_of(skip));
        multi(backend, std::span<const OptimTensors>(b), std::span<const Step>(steps), view_of(skip));
        for (size_t i = 0; i < r.size(); ++i) single(cpu::cpu_backend(), r[i], steps[i], view_of(cpu_skip));
      }
    }
    const double tol = dtype == kFloat32 ? 1e-5 : 1e-12;
    for (size_t i = 0; i < start.param.size(); ++i) {
      ASSERT_TRUE(same_bits(one_by_one.param[i], together.param[i])) << what << ": parameter " << i;
      EXPECT_FALSE(same_bits(together.param[i], start.param[i]) && start.param[i].numel() > 0)
          << what << ": parameter " << i << " did not change";
      EXPECT_TRUE(ember_test::close_to_cpu(together.param[i], reference.param[i], tol, tol, what + " parameter"));
      for (int k = 0; k < 3; ++k) {
        if (!start.state[i][k].defined()) continue;
        ASSERT_TRUE(same_bits(one_by_one.state[i][k], together.state[i][k])) << what << ": state " << k << " of " << i;
        EXPECT_TRUE(ember_test::close_to_cpu(together.state[i][k], reference.state[i][k], tol, tol, what + " state"));
      }
    }
  }
}

// Hyper-parameter sets, more than the four one launch holds, covering each rule's options.
std::vector<kernels::SgdStep> sgd_variants() {
  std::vector<kernels::SgdStep> v(5);
  v[0].lr = 0.1;
  v[1].lr = 0.05, v[1].momentum = 0.9, v[1].first_step = true;
  v[2].lr = 0.05, v[2].momentum = 0.9, v[2].nesterov = true;
  v[3].lr = 0.02, v[3].momentum = 0.5, v[3].dampening = 0.3, v[3].weight_decay = 0.01, v[3].maximize = true;
  v[4].lr = 0.1, v[4].weight_decay = 0.1;
  return v;
}

std::vector<kernels::AdamStep> adam_variants() {
  std::vector<kernels::AdamStep> v(5);
  for (size_t i = 0; i < v.size(); ++i) {
    const double t = 1.0 + static_cast<double>(i % 3);  // step counts 1, 2, 3
    v[i].lr = 0.01;
    v[i].beta1 = 0.9;
    v[i].beta2 = 0.999;
    v[i].eps = 1e-8;
    v[i].step_size = v[i].lr / (1.0 - std::pow(v[i].beta1, t));
    v[i].bias_correction2_sqrt = std::sqrt(1.0 - std::pow(v[i].beta2, t));
  }
  v[1].amsgrad = true;
  v[2].decoupled = true, v[2].weight_decay = 0.05;
  v[3].weight_decay = 0.1, v[3].maximize = true, v[3].beta1 = 0.3;  // lerp's other form
  v[4].amsgrad = true, v[4].decoupled = true, v[4].weight_decay = 0.01;
  return v;
}

std::vector<kernels::AdadeltaStep> adadelta_variants() {
  std::vector<kernels::AdadeltaStep> v(5);
  for (auto& s : v) s.lr = 1.0, s.rho = 0.9, s.eps = 1e-6;
  v[1].weight_decay = 0.1;
  v[2].maximize = true;
  v[3].rho = 1.0;
  v[4].lr = 0.5, v[4].rho = 0.8;
  return v;
}

std::vector<kernels::RmspropStep> rmsprop_variants() {
  std::vector<kernels::RmspropStep> v(5);
  for (auto& s : v) s.lr = 0.01, s.alpha = 0.99, s.eps = 1e-8;
  v[1].centered = true;
  v[2].momentum = 0.9;
  v[3].centered = true, v[3].momentum = 0.5, v[3].maximize = true, v[3].weight_decay = 0.1;
  v[4].alpha = 0.3, v[4].centered = true;  // lerp's other form
  return v;
}

class DeviceMultiTensorOptim : public ember_test::DeviceTest {};

TEST_P(DeviceMultiTensorOptim, SgdMatchesOneCallPerParameterBitForBit) {
  std::vector<std::array<bool, 3>> uses;
  for (const auto& s : sgd_variants()) uses.push_back({s.momentum != 0, false, false});
  check_rule(
      device(), "sgd", sgd_variants(), uses,
      [](Backend& b, const OptimTensors& t, const kernels::SgdStep& s, const TensorView& skip) {
        b.sgd_step(t.param, t.grad, t.state[0], s, skip);
      },
      [](Backend& b, std::span<const OptimTensors> t, std::span<const kernels::SgdStep> s, const TensorView& skip) {
        b.multi_tensor_sgd_step(t, s, skip);
      });
}

TEST_P(DeviceMultiTensorOptim, AdamMatchesOneCallPerParameterBitForBit) {
  std::vector<std::array<bool, 3>> uses;
  for (const auto& s : adam_variants()) uses.push_back({true, true, s.amsgrad});
  check_rule(
      device(), "adam", adam_variants(), uses,
      [](Backend& b, const OptimTensors& t, const kernels::AdamStep& s, const TensorView& skip) {
        b.adam_step(t.param, t.grad, t.state[0], t.state[1], t.state[2], s, skip);
      },
      [](Backend& b, std::span<const OptimTensors> t, std::span<const kernels::AdamStep> s, const TensorView& skip) {
        b.multi_tensor_adam_step(t, s, skip);
      });
}

TEST_P(DeviceMultiTensorOptim, AdadeltaMatchesOneCallPerParameterBitForBit) {
  const std::vector<std::array<bool, 3>> uses = {{true, true, false}};
  check_rule(
      device(), "adadelta", adadelta_variants(), uses,
      [](Backend& b, const OptimTensors& t, const kernels::AdadeltaStep& s, const TensorView& skip) {
        b.adadelta_step(t.param, t.grad, t.state[0], t.state[1], s, skip);
      },
      [](Backend& b, std::span<const OptimTensors> t, std::span<const kernels::AdadeltaStep> s,
         const TensorView& skip) { b.multi_tensor_adadelta_step(t, s, skip); });
}

TEST_P(DeviceMultiTensorOptim, RmspropMatchesOneCallPerParameterBitForBit) {
  std::vector<std::array<bool, 3>> uses;
  for (const auto& s : rmsprop_variants()) uses.push_back({true, s.centered, s.momentum > 0});
  check_rule(
      device(), "rmsprop", rmsprop_variants(), uses,
      [](Backend& b, const OptimTensors& t, const kernels::RmspropStep& s, const TensorView& skip) {
        b.rmsprop_step(t.param, t.grad, t.state[0], t.state[1], t.state[2], s, skip);
      },
      [](Backend& b, std::span<const OptimTensors> t, std::span<const kernels::RmspropStep> s, const TensorView& skip) {
        b.multi_tensor_rmsprop_step(t, s, skip);
      });
}

TEST_P(DeviceMultiTensorOptim, AnEmptyListDoesNothing) {
  Backend& backend = backend_for(device());
  backend.multi_tensor_adam_step({}, {}, TensorView{});
  const Tensor empty_param = zeros({0}, TensorOptions().device(device()));
  const OptimTensors one{view_of(empty_param), view_of(empty_param), {}};
  kernels::SgdStep step;
  backend.multi_tensor_sgd_step(std::span<const OptimTensors>(&one, 1), std::span<const kernels::SgdStep>(&step, 1),
                                TensorView{});
}

EMBER_INSTANTIATE_DEVICE_SUITE(DeviceMultiTensorOptim);

// ---- the checks, before anything is written ----

TEST(MultiTensorOptim, RefusesMismatchedListsBeforeWritingAnything) {
  Backend& cpu = cpu::cpu_backend();
  const Tensor p32 = ones({4}), g32 = ones({4});
  const Tensor p64 = ones({4}, TensorOptions(kFloat64)), g64 = ones({4}, TensorOptions(kFloat64));
  const std::vector<OptimTensors> mixed = {{view_of(p32), view_of(g32), {}}, {view_of(p64), view_of(g64), {}}};
  std::vector<kernels::SgdStep> steps(2);
  steps[0].lr = steps[1].lr = 0.5;
  EXPECT_NE(error_of([&] {
              cpu.multi_tensor_sgd_step(mixed, std::span(steps).first(1), TensorView{});
            }).find("[multi_tensor_sgd_step] expects one step per tensor, got 1 steps for 2 tensors"),
            std::string::npos);
  EXPECT_NE(error_of([&] {
              cpu.multi_tensor_sgd_step(mixed, steps, TensorView{});
            }).find("[multi_tensor_sgd_step] every parameter must have one dtype and lie on one device: got "),
            std::string::npos);
  // The second parameter misses its momentum buffer: the first is left alone.
  const Tensor p2 = ones({4});
  const std::vector<OptimTensors> missing = {{view_of(p32), view_of(g32), {}}, {view_of(p2), view_of(g32), {}}};
  steps[1].momentum = 0.9;
  EXPECT_NE(error_of([&] {
              cpu.multi_tensor_sgd_step(missing, steps, TensorView{});
            }).find("[multi_tensor_sgd_step] momentum needs a buffer"),
            std::string::npos);
  EXPECT_TRUE(equal(p32, ones({4})));
  const std::vector<OptimTensors> no_state = {{view_of(p32), view_of(g32), {}}};
  std::vector<kernels::AdamStep> adam(1);
  EXPECT_NE(error_of([&] {
              cpu.multi_tensor_adam_step(no_state, adam, TensorView{});
            }).find("[multi_tensor_adam_step] missing state"),
            std::string::npos);
}

// ---- an optimizer step: one multi-tensor call per device and dtype ----

class MultiTensorOptimizerStep : public ::testing::Test {
 protected:
  ember_test::ScopedHostDevice device_;
  const Device mps_{"mps:0"};
};

/// A few parameters of different shapes, with gradients from a loss, on `device`.
std::vector<Tensor> model_params(const Device& device, Dtype second_dtype = kFloat32) {
  manual_seed(9);
  std::vector<Tensor> params = {randn({5, 3}), randn({3}), randn({7}).to(second_dtype), randn({2, 2})};
  for (Tensor& p : params) p = p.to(device).requires_grad_();
  return params;
}

void backward(const std::vector<Tensor>& params, int step) {
  Tensor loss = zeros({}, TensorOptions().device(params[0].device()));
  for (const Tensor& p : params) loss = loss + (p.to(kFloat32) * p.to(kFloat32) * (1.0 + step)).sum();
  loss.backward();
}

TEST_F(MultiTensorOptimizerStep, EachOptimizerTakesOneCallPerStepWithTheCpusBits) {
  for (const auto& [name, make] : ember_test::optimizer_cases()) {
    std::vector<Tensor> on_device = model_params(mps_), on_cpu = model_params(Device(kCPU));
    auto dev_opt = make(on_device);
    auto cpu_opt = make(on_cpu);
    host_device_backend().reset_counts();
    for (int step = 0; step < 3; ++step) {
      for (auto* opt : {dev_opt.get(), cpu_opt.get()}) opt->zero_grad();
      backward(on_device, step);
      backward(on_cpu, step);
      dev_opt->step();
      cpu_opt->step();
    }
    const auto counts = host_device_backend().counts();
    EXPECT_EQ(counts.multi_tensor_updates, 3) << name;
    EXPECT_EQ(counts.single_tensor_updates, 0) << name;
    for (size_t i = 0; i < on_device.size(); ++i) {
      EXPECT_TRUE(same_bits(on_device[i].detach(), on_cpu[i].detach())) << name << ": parameter " << i;
    }
  }
}

TEST_F(MultiTensorOptimizerStep, GroupsByDtypeAndLeavesUnfusableParametersToTheOpByOpPath) {
  std::vector<Tensor> params = model_params(mps_, kFloat64);
  // A transposed view cannot be fused: it takes the op-by-op update and no multi-tensor slot.
  Tensor strided = randn({3, 4}).to(mps_).t().requires_grad_();
  params.push_back(strided);
  optim::Adam adam(params, optim::AdamOptions{.lr = 0.01});
  backward(params, 0);
  const Tensor before = strided.detach().clone();
  host_device_backend().reset_counts();
  adam.step();
  EXPECT_EQ(host_device_backend().counts().multi_tensor_updates, 2);  // float32 and float64
  EXPECT_EQ(host_device_backend().counts().single_tensor_updates, 0);
  EXPECT_FALSE(same_bits(strided.detach(), before));
}

TEST_F(MultiTensorOptimizerStep, ParameterGroupsShareACallAndASkippedStepChangesNothing) {
  std::vector<Tensor> params = model_params(mps_);
  std::vector<optim::ParamGroup> groups;
  groups.emplace_back(std::vector<Tensor>{params[0], params[1]}, optim::Options{{"weight_decay", 0.1}});
  groups.emplace_back(std::vector<Tensor>{params[2], params[3]}, optim::Options{{"lr", 0.5}});
  optim::AdamW adamw(std::move(groups), optim::AdamWOptions{.lr = 0.01});
  backward(params, 0);
  std::vector<Tensor> before;
  for (const Tensor& p : params) before.push_back(p.detach().clone());
  host_device_backend().reset_counts();
  adamw.step(scalar_tensor(true, kBool).to(mps_));
  EXPECT_EQ(host_device_backend().counts().multi_tensor_updates, 1);
  for (size_t i = 0; i < params.size(); ++i) EXPECT_TRUE(same_bits(params[i].detach(), before[i])) << i;
  adamw.step(scalar_tensor(false, kBool).to(mps_));
  EXPECT_EQ(host_device_backend().counts().multi_tensor_updates, 2);
  for (size_t i = 0; i < params.size(); ++i) EXPECT_FALSE(same_bits(params[i].detach(), before[i])) << i;
}

// ---- the collection behind Optimizer::step ----

kernels::SgdStep plain_sgd(double lr) {
  kernels::SgdStep step;
  step.lr = lr;
  return step;
}

TEST(FusedUpdates, QueuesWhileAliveAndRunsAtOnceOtherwise) {
  Tensor p = ones({3}), g = ones({3});
  optim::fusion::fused_sgd_step(p, g, Tensor(), plain_sgd(0.5), Tensor());
  EXPECT_TRUE(equal(p, full({3}, 0.5)));  // no collection: at once
  {
    optim::fusion::FusedUpdates outer;
    EXPECT_EQ(optim::fusion::FusedUpdates::current(), &outer);
    optim::fusion::fused_sgd_step(p, g, Tensor(), plain_sgd(0.5), Tensor());
    {
      optim::fusion::FusedUpdates inner;
      EXPECT_EQ(optim::fusion::FusedUpdates::current(), &inner);
      optim::fusion::fused_sgd_step(p, g, Tensor(), plain_sgd(0.25), Tensor());
      EXPECT_EQ(inner.queued(), 1u);
      inner.launch();
      EXPECT_EQ(inner.queued(), 0u);
    }
    EXPECT_EQ(optim::fusion::FusedUpdates::current(), &outer);
    EXPECT_TRUE(equal(p, full({3}, 0.25)));  // the inner one ran; the outer one waits
    EXPECT_EQ(outer.queued(), 1u);
    outer.launch();
    EXPECT_TRUE(equal(p, full({3}, -0.25)));
  }
  EXPECT_EQ(optim::fusion::FusedUpdates::current(), nullptr);
}

TEST(FusedUpdates, AnExceptionLeavingAStepStillRunsTheUpdatesBeforeIt) {
  Tensor p = ones({3}), g = ones({3});
  try {
    optim::fusion::FusedUpdates batch;
    optim::fusion::fused_sgd_step(p, g, Tensor(), plain_sgd(0.5), Tensor());
    throw std::runtime_error("the next parameter's update failed");
  } catch (const std::runtime_error&) {
  }
  EXPECT_TRUE(equal(p, full({3}, 0.5)));
  EXPECT_EQ(optim::fusion::FusedUpdates::current(), nullptr);
}

}  // namespace
