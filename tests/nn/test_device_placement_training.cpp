// Device placement of layers, optimizers, the autograd engine and whole training steps without
// a GPU (harness: support/device_placement.h), each on mps:0 against the CPU.
#include <gtest/gtest.h>

#include <cmath>
#include <functional>
#include <limits>
#include <map>
#include <memory>
#include <string>
#include <utility>
#include <vector>

#include "support/device_placement.h"
#include "support/optimizer_cases.h"

namespace {

using namespace ember;
using namespace ember_test::placement;
namespace nn = ember::nn;
namespace F = ember::nn::functional;
namespace optim = ember::optim;
using ember_test::close_to_cpu;
using ember_test::full_error_of;

// ---------------------------------------------------------------------------------------------
// Layers.

TEST_F(DevicePlacement, Embedding) {
  const Tensor weight = randn({7, 4});
  expect_same("embedding", {constant(randint(0, 7, {2, 3})), leaf(weight)},
              [](auto& v) { return F::embedding(v[0], v[1]); });
  expect_same("embedding repeated", {constant(tensor(std::vector<int64_t>{1, 1, 6, 1})), leaf(weight)},
              [](auto& v) { return F::embedding(v[0], v[1]); });
  manual_seed(5);
  nn::Embedding cpu(7, 4);
  manual_seed(5);
  nn::Embedding d(7, 4);
  d.to(dev());
  const Tensor idx = randint(0, 7, {3, 2});
  Tensor yc = cpu(idx), yd = d(on(idx));
  EXPECT_TRUE(close_to_cpu(yd, yc, 0, 0, "Embedding module"));
  yc.pow(2).sum().backward();
  yd.pow(2).sum().backward();
  EXPECT_EQ(d.weight.grad().device(), dev());
  EXPECT_TRUE(close_to_cpu(d.weight.grad(), cpu.weight.grad(), 0, 0, "Embedding module gradient"));
}

TEST_F(DevicePlacement, LayerNorm) {
  const Tensor x = randn({3, 4, 5});
  expect_same("layer_norm", {leaf(x), leaf(rand({5}) + 0.5), leaf(randn({5}))},
              [](auto& v) { return F::layer_norm(v[0], {5}, v[1], v[2]); });
  expect_same("layer_norm 2 dims", {leaf(x), leaf(rand({4, 5}))}, [](auto& v) {
    return F::layer_norm(v[0], {4, 5}, v[1]);
  });
  expect_same("layer_norm no affine", {leaf(x)}, [](auto& v) { return F::layer_norm(v[0], {5}); });
  nn::LayerNorm cpu(std::vector<int64_t>{5});
  nn::LayerNorm d(std::vector<int64_t>{5});
  d.to(dev());
  Tensor yc = cpu(x), yd = d(on(x));
  EXPECT_TRUE(close_to_cpu(yd, yc, 0, 0, "LayerNorm module"));
  (yc * cotangent_like(yc)).sum().backward();
  (yd * on(cotangent_like(yc))).sum().backward();
  EXPECT_TRUE(close_to_cpu(d.weight.grad(), cpu.weight.grad(), 0, 0, "LayerNorm weight gradient"));
  EXPECT_TRUE(close_to_cpu(d.bias.grad(), cpu.bias.grad(), 0, 0, "LayerNorm bias gradient"));
}

TEST_F(DevicePlacement, DropoutInTrainingMode) {
  // The mask is random: check placement, shape and that the gradient is the mask's scale.
  Tensor x = on(randn({6, 8}) + 3.0).requires_grad_();
  Tensor y = F::dropout(x, 0.25, true);
  EXPECT_EQ(y.device(), dev());
  EXPECT_EQ(y.sizes().vec(), x.sizes().vec());
  y.sum().backward();
  ASSERT_TRUE(x.grad().defined());
  EXPECT_EQ(x.grad().device(), dev());
  const Tensor kept = (y.detach() != 0.0).to(kFloat32);
  EXPECT_TRUE(close_to_cpu(x.grad(), (kept / 0.75).cpu(), 1e-6, 1e-6, "dropout gradient"));
  // The module, in both modes; p = 0.
  nn::Dropout drop(0.5);
  drop.to(dev());
  drop.train();
  EXPECT_EQ(drop(on(ones({3, 3}))).device(), dev());
  drop.eval();
  EXPECT_TRUE(close_to_cpu(drop(on(x.detach().cpu())), x.detach().cpu(), 0, 0, "dropout in eval mode"));
  EXPECT_TRUE(close_to_cpu(F::dropout(on(ones({4})), 0.0, true), ones({4}), 0, 0, "dropout p=0"));
}

// The split ops' gather node (zeros for unused pieces) and the recurrent layers, whose initial
// states and gathered gradients must be made on the input's device.
TEST_F(DevicePlacement, SplitsAndRecurrentLayers) {
  const Tensor x = randn({4, 3, 5});
  expect_same("unbind, pieces unused", {leaf(x)}, [](auto& v) {
    std::vector<Tensor> steps = v[0].unbind(0);
    return steps[0] * 2 + steps[2];
  });
  expect_same("chunk", {leaf(x)}, [](auto& v) { return v[0].chunk(3, 2)[1].sum(); });
  expect_same("split_with_sizes", {leaf(x)}, [](auto& v) {
    std::vector<Tensor> parts = v[0].split_with_sizes({1, 2}, 1);
    return parts[1].exp();
  });
  auto check = [&](nn::Module& cpu, nn::Module& d, const std::string& what) {
    d.to(dev());
    Tensor yc = cpu(x), yd = d(on(x));
    EXPECT_EQ(yd.device(), dev()) << what;
    EXPECT_TRUE(close_to_cpu(yd, yc, 1e-6, 1e-6, what + " output"));
    yc.pow(2).sum().backward();
    yd.pow(2).sum().backward();
    for (const auto& [name, p] : d.named_parameters()) EXPECT_EQ(p.grad().device(), dev()) << what << " " << name;
    expect_same_state(d, cpu, what, 1e-6, 1e-6);
    const auto pc = cpu.named_parameters(), pd = d.named_parameters();
    for (size_t i = 0; i < pc.size(); ++i) {
      EXPECT_TRUE(close_to_cpu(pd[i].second.grad(), pc[i].second.grad(), 1e-5, 1e-6, what + " " + pc[i].first));
    }
  };
  manual_seed(7);
  nn::LSTM lstm_cpu(5, 4, {.num_layers = 2, .bidirectional = true, .proj_size = 2});
  manual_seed(7);
  nn::LSTM lstm_dev(5, 4, {.num_layers = 2, .bidirectional = true, .proj_size = 2});
  check(lstm_cpu, lstm_dev, "LSTM");
  manual_seed(8);
  nn::GRU gru_cpu(5, 4, {.batch_first = true});
  manual_seed(8);
  nn::GRU gru_dev(5, 4, {.batch_first = true});
  check(gru_cpu, gru_dev, "GRU");
}

TEST_F(DevicePlacement, Conv2d) {
  const Tensor x = randn({2, 4, 7, 6});
  expect_same("conv2d", {leaf(x), leaf(randn({3, 4, 3, 3})), leaf(randn({3}))},
              [](auto& v) { return F::conv2d(v[0], v[1], v[2]); });
  expect_same("conv2d stride padding dilation", {leaf(x), leaf(randn({5, 4, 3, 2}))}, [](auto& v) {
    return F::conv2d(v[0], v[1], Tensor(), {2, 1}, {1, 2}, {1, 2});
  });
  expect_same("conv2d groups", {leaf(x), leaf(randn({6, 2, 3, 3})), leaf(randn({6}))},
              [](auto& v) { return F::conv2d(v[0], v[1], v[2], {1}, {1}, {1}, 2); });
  expect_same("conv2d same", {leaf(x), leaf(randn({2, 4, 4, 3})), leaf(randn({2}))},
              [](auto& v) { return F::conv2d(v[0], v[1], v[2], {1}, "same"); });
  expect_same("conv2d unbatched", {leaf(randn({4, 5, 5})), leaf(randn({2, 4, 3, 3}))},
              [](auto& v) { return F::conv2d(v[0], v[1]); });
  expect_same("conv2d input not contiguous", {leaf(x), leaf(randn({3, 4, 3, 3}))},
              [](auto& v) { return F::conv2d(v[0].transpose(2, 3), v[1]); });
  manual_seed(3);
  nn::Conv2d cpu(4, 6, 3, 1, 1);
  manual_seed(3);
  nn::Conv2d d(4, 6, 3, 1, 1);
  d.to(dev());
  Tensor yc = cpu(x), yd = d(on(x));
  EXPECT_TRUE(close_to_cpu(yd, yc, 0, 0, "Conv2d module"));
  yc.pow(2).mean().backward();
  yd.pow(2).mean().backward();
  EXPECT_TRUE(close_to_cpu(d.weight.grad(), cpu.weight.grad(), 0, 0, "Conv2d weight gradient"));
  EXPECT_TRUE(close_to_cpu(d.bias.grad(), cpu.bias.grad(), 0, 0, "Conv2d bias gradient"));
}

TEST_F(DevicePlacement, Pooling) {
  const Tensor x = randn({2, 3, 7, 6});
  expect_same("max_pool2d", {leaf(x)}, [](auto& v) { return F::max_pool2d(v[0], {2}); });
  expect_same("max_pool2d stride padding dilation ceil", {leaf(x)}, [](auto& v) {
    return F::max_pool2d(v[0], {3, 2}, {2, 1}, {1}, {1, 2}, true);
  });
  expect_same("max_pool2d indices", {constant(x)},
              [](auto& v) { return std::get<1>(F::max_pool2d_with_indices(v[0], {3}, {2}, {1})); });
  expect_same("max_pool2d_with_indices values", {leaf(x)},
              [](auto& v) { return std::get<0>(F::max_pool2d_with_indices(v[0], {2}, {1})); });
  expect_same("max_pool2d unbatched", {leaf(randn({3, 5, 5}))}, [](auto& v) { return F::max_pool2d(v[0], {2}); });
  expect_same("avg_pool2d", {leaf(x)}, [](auto& v) { return F::avg_pool2d(v[0], {2}); });
  expect_same("avg_pool2d padding no count_include_pad", {leaf(x)},
              [](auto& v) { return F::avg_pool2d(v[0], {3}, {2}, {1}, true, false); });
  expect_same("avg_pool2d divisor_override", {leaf(x)}, [](auto& v) {
    return F::avg_pool2d(v[0], {2, 3}, {1}, {0}, false, true, 5);
  });
  expect_same("adaptive_avg_pool2d", {leaf(x)}, [](auto& v) { return F::adaptive_avg_pool2d(v[0], {3, 4}); });
  expect_same("adaptive_avg_pool2d global", {leaf(x)}, [](auto& v) { return F::adaptive_avg_pool2d(v[0], {1}); });
  nn::MaxPool2d mp(std::vector<int64_t>{2});
  nn::AvgPool2d ap(std::vector<int64_t>{3}, std::vector<int64_t>{1}, std::vector<int64_t>{1});
  nn::AdaptiveAvgPool2d aap(std::vector<int64_t>{2, 2});
  EXPECT_TRUE(close_to_cpu(mp(on(x)), mp(x), 0, 0, "MaxPool2d"));
  EXPECT_TRUE(close_to_cpu(ap(on(x)), ap(x), 0, 0, "AvgPool2d"));
  EXPECT_TRUE(close_to_cpu(aap(on(x)), aap(x), 0, 0, "AdaptiveAvgPool2d"));
}

TEST_F(DevicePlacement, BatchNorm) {
  const Tensor x = randn({4, 3, 5, 2});
  // Training: batch statistics, running statistics updated in place on the device.
  for (bool with_affine : {true, false}) {
    SCOPED_TRACE(with_affine ? "affine" : "no affine");
    Tensor rm_cpu = zeros({3}), rv_cpu = ones({3});
    Tensor rm_dev = on(rm_cpu), rv_dev = on(rv_cpu);
    int call = 0;
    expect_same("batch_norm training", {leaf(x), leaf(rand({3}) + 0.5), leaf(randn({3}))}, [&](auto& v) {
      const bool on_dev = !v[0].is_cpu();
      ++call;
      return F::batch_norm(v[0], on_dev ? rm_dev : rm_cpu, on_dev ? rv_dev : rv_cpu, with_affine ? v[1] : Tensor(),
                           with_affine ? v[2] : Tensor(), true, 0.2);
    });
    EXPECT_EQ(call, 2);
    EXPECT_EQ(rm_dev.device(), dev());
    EXPECT_TRUE(close_to_cpu(rm_dev, rm_cpu, 0, 0, "running_mean"));
    EXPECT_TRUE(close_to_cpu(rv_dev, rv_cpu, 0, 0, "running_var"));
  }
  expect_same("batch_norm training without running stats", {leaf(x)},
              [](auto& v) { return F::batch_norm(v[0], Tensor(), Tensor(), Tensor(), Tensor(), true); });
  expect_same("batch_norm eval",
              {leaf(x), constant(randn({3})), constant(rand({3}) + 0.5), leaf(rand({3})), leaf(randn({3}))},
              [](auto& v) { return F::batch_norm(v[0], v[1], v[2], v[3], v[4], false); });
  expect_same("batch_norm 2-D input", {leaf(randn({6, 3})), leaf(rand({3})), leaf(randn({3}))},
              [](auto& v) { return F::batch_norm(v[0], Tensor(), Tensor(), v[1], v[2], true); });

  // The modules: train (cumulative momentum too), eval, and every buffer on the device.
  for (std::optional<double> momentum : {std::optional<double>(0.1), std::optional<double>()}) {
    nn::BatchNorm2d cpu(3, 1e-5, momentum);
    nn::BatchNorm2d d(3, 1e-5, momentum);
    d.to(dev());
    for (int step = 0; step < 2; ++step) {
      Tensor xin = randn({4, 3, 3, 3});
      Tensor yc = cpu(xin), yd = d(on(xin));
      EXPECT_TRUE(close_to_cpu(yd, yc, 0, 0, "BatchNorm2d train"));
      (yc * cotangent_like(yc)).sum().backward();
      (yd * on(cotangent_like(yc))).sum().backward();
    }
    expect_same_state(d, cpu, "BatchNorm2d after training");
    EXPECT_TRUE(close_to_cpu(d.weight.grad(), cpu.weight.grad(), 0, 0, "BatchNorm2d weight gradient"));
    EXPECT_TRUE(close_to_cpu(d.bias.grad(), cpu.bias.grad(), 0, 0, "BatchNorm2d bias gradient"));
    cpu.eval();
    d.eval();
    EXPECT_TRUE(close_to_cpu(d(on(x)), cpu(x), 0, 0, "BatchNorm2d eval"));
  }
  nn::BatchNorm1d cpu1(4);
  nn::BatchNorm1d d1(4);
  d1.to(dev());
  Tensor x1 = randn({5, 4, 3});
  EXPECT_TRUE(close_to_cpu(d1(on(x1)), cpu1(x1), 0, 0, "BatchNorm1d"));
  expect_same_state(d1, cpu1, "BatchNorm1d");
}

// ---------------------------------------------------------------------------------------------
// Optimizers.

/// Parameters of three kinds the update paths differ on: float32 (fused), float64 (fused) and
/// float16 (op by op), plus a non-contiguous float32 one (op by op).
std::vector<Tensor> optimizer_params(const Device& device) {
  manual_seed(31);
  std::vector<Tensor> out = {randn({3, 4}), randn({5}, kFloat64), randn({2, 3}).to(kFloat16), randn({4, 3})};
  for (Tensor& p : out) p = p.to(device, false, true);
  out[3] = out[3].t();  // a non-contiguous leaf: the fused kernels refuse it
  for (Tensor& p : out) p.requires_grad_();
  return out;
}

/// A loss of every parameter with gradients that change from step to step.
Tensor optimizer_loss(const std::vector<Tensor>& params, int step) {
  Tensor loss = scalar_tensor(0.0, TensorOptions().device(params[0].device()));
  for (const Tensor& p : params) {
    const Tensor pf = p.to(kFloat32);
    loss = loss + (pf * pf * (0.5 + step)).sum() + (sin(pf) * (1.0 + 0.1 * step)).sum();
  }
  return loss;
}

TEST_F(DevicePlacement, OptimizerSteps) {
  for (const auto& [name, make] : ember_test::optimizer_cases()) {
    SCOPED_TRACE(name);
    std::vector<Tensor> pc = optimizer_params(kCpu), pd = optimizer_params(dev());
    std::unique_ptr<optim::Optimizer> oc = make(pc), od = make(pd);
    // step(), step(skip) with a device flag (the fused kernels read it: false, then true), and
    // step(skip) with a CPU flag (read on the host, op by op).
    const std::vector<std::pair<std::string, Tensor>> plan = {
        {"step()", Tensor()},
        {"step(false on mps)", full({}, false, dev())},
        {"step(true on mps)", full({}, true, dev())},
        {"step(false on cpu)", full({}, false)},
        {"step()", Tensor()},
    };
    for (size_t s = 0; s < plan.size(); ++s) {
      SCOPED_TRACE(plan[s].first + " #" + std::to_string(s));
      oc->zero_grad();
      od->zero_grad();
      optimizer_loss(pc, static_cast<int>(s)).backward();
      const std::string error = full_error_of([&] { optimizer_loss(pd, static_cast<int>(s)).backward(); });
      ASSERT_EQ(error, "no error");
      const Tensor& skip = plan[s].second;
      if (skip.defined()) {
        oc->step(skip.cpu());
        const std::string step_error = full_error_of([&] { od->step(skip); });
        ASSERT_EQ(step_error, "no error");
      } else {
        oc->step();
        const std::string step_error = full_error_of([&] { od->step(); });
        ASSERT_EQ(step_error, "no error");
      }
      for (size_t i = 0; i < pc.size(); ++i) {
        EXPECT_EQ(pd[i].device(), dev());
        // float16 parameters are updated op by op, whose rounding is the same on both.
        EXPECT_TRUE(close_to_cpu(pd[i], pc[i].detach(), 0, 0, "parameter " + std::to_string(i)));
      }
    }
    // Every state tensor: on the parameter's device (the "step" counters stay on the CPU, as in
    // PyTorch) and equal.
    for (size_t i = 0; i < pc.size(); ++i) {
      const auto& sc = oc->state(i);
      const auto& sd = od->state(i);
      ASSERT_EQ(sc.size(), sd.size());
      for (const auto& [key, value] : sc) {
        ASSERT_TRUE(sd.count(key)) << key;
        const Tensor& got = sd.at(key);
        EXPECT_EQ(got.device(), key == "step" ? kCpu : dev()) << "state " << i << " " << key;
        EXPECT_TRUE(close_to_cpu(got, value, 0, 0, "state " + std::to_string(i) + " " + key));
      }
    }
    // A state dict saved on the device loads into a CPU optimizer and vice versa.
    const optim::OptimizerStateDict saved = od->state_dict();
    EXPECT_EQ(full_error_of([&] { oc->load_state_dict(saved); }), "no error");
    EXPECT_EQ(full_error_of([&] { od->load_state_dict(oc->state_dict()); }), "no error");
    for (const auto& [key, value] : od->state(0)) {
      EXPECT_EQ(value.device(), key == "step" ? kCpu : dev()) << "after load_state_dict: " << key;
    }
  }
}

TEST_F(DevicePlacement, ClipGradNorm) {
  for (double norm_type : {2.0, 1.0, 3.0, 0.0, optim::kInfNorm}) {
    SCOPED_TRACE("norm_type " + std::to_string(norm_type));
    std::vector<Tensor> pc = {randn({3, 4}).requires_grad_(), randn({5}).requires_grad_(), randn({2}).requires_grad_()};
    std::vector<Tensor> pd;
    for (const Tensor& p : pc) pd.push_back(on(p.detach()).requires_grad_());
    for (size_t i = 0; i < 2; ++i) {  // the last parameter has no gradient
      (pc[i] * pc[i] * 3.0).sum().backward();
      (pd[i] * pd[i] * 3.0).sum().backward();
    }
    Tensor nc = optim::clip_grad_norm_(pc, 0.5, norm_type);
    Tensor nd;
    const std::string error = full_error_of([&] { nd = optim::clip_grad_norm_(pd, 0.5, norm_type); });
    ASSERT_EQ(error, "no error");
    EXPECT_EQ(nd.device(), dev());
    EXPECT_TRUE(close_to_cpu(nd, nc, 0, 0, "total norm"));
    for (size_t i = 0; i < 2; ++i) {
      EXPECT_EQ(pd[i].grad().device(), dev());
      EXPECT_TRUE(close_to_cpu(pd[i].grad(), pc[i].grad(), 0, 0, "clipped gradient " + std::to_string(i)));
    }
  }
  // Mixed dtypes, and error_if_nonfinite reading the norm back.
  std::vector<Tensor> pd = {on(randn({3})).requires_grad_(), on(randn({2}, kFloat64)).requires_grad_()};
  (pd[0].sum() + pd[1].sum()).backward();
  EXPECT_EQ(full_error_of([&] { optim::clip_grad_norm_(pd, 1.0, 2.0, true); }), "no error");
  pd[0].grad().fill_(std::numeric_limits<double>::infinity());
  EXPECT_NE(full_error_of([&] { optim::clip_grad_norm_(pd, 1.0, 2.0, true); }).find("non-finite"), std::string::npos);
}

TEST_F(DevicePlacement, AllFinite) {
  const double inf = std::numeric_limits<double>::infinity(), nan = std::numeric_limits<double>::quiet_NaN();
  std::vector<Tensor> finite = {
      on(randn({3, 4})), on(randn({5}, kFloat64)),        on(randn({2}).to(kFloat16)), on(randint(0, 3, {4})),
      Tensor(),          on(randn({6})).slice(0, 0, 6, 2)};
  Tensor r = all_finite(finite);
  EXPECT_EQ(r.device(), dev());
  EXPECT_EQ(r.dim(), 0);
  EXPECT_TRUE(r.item<bool>());
  std::vector<Tensor> with_inf = finite;
  with_inf.push_back(on(tensor({1.0, inf})));
  EXPECT_FALSE(all_finite(with_inf).item<bool>());
  std::vector<Tensor> with_nan = {on(tensor({nan}, kFloat32))};
  EXPECT_FALSE(all_finite(with_nan).item<bool>());
  EXPECT_EQ(all_finite(std::vector<Tensor>{}).device(), kCpu);
}

// ---------------------------------------------------------------------------------------------
// Autograd on the device.

TEST_F(DevicePlacement, AutogradEngine) {
  // Gradients accumulated from several uses, through broadcasting (the engine sums them back to
  // the input's shape) and across two backward passes.
  expect_same("broadcast accumulation", {leaf(randn({3, 1})), leaf(randn({4}))},
              [](auto& v) { return v[0] * v[1] + v[0].exp() - sin(v[1]); });
  Tensor x = on(randn({3})).requires_grad_();
  (x * 2.0).sum().backward();
  (x * x).sum().backward();
  EXPECT_EQ(x.grad().device(), dev());
  EXPECT_TRUE(close_to_cpu(x.grad(), (2.0 + 2.0 * x.detach()).cpu(), 0, 0, "accumulated gradient"));
  // Double backward: a gradient penalty.
  const Tensor xc = randn({4});
  Tensor w = on(xc).requires_grad_();
  Tensor y = (w.pow(3) * sin(w)).sum();
  std::vector<Tensor> g;
  ASSERT_EQ(full_error_of([&] { g = autograd::grad({y}, {w}, {}, std::nullopt, /*create_graph=*/true); }), "no error");
  ASSERT_EQ(g.size(), 1u);
  EXPECT_EQ(g[0].device(), dev());
  ASSERT_EQ(full_error_of([&] { (g[0] * g[0]).sum().backward(); }), "no error");
  EXPECT_EQ(w.grad().device(), dev());
  Tensor wc = xc.clone().requires_grad_();
  Tensor gc = autograd::grad({(wc.pow(3) * sin(wc)).sum()}, {wc}, {}, std::nullopt, true)[0];
  (gc * gc).sum().backward();
  EXPECT_TRUE(close_to_cpu(w.grad(), wc.grad(), 0, 0, "double backward"));
  // Second-order gradients of the ops whose backward formulas build tensors: the first
  // gradient is recorded (create_graph) and back-propagated again.
  auto grad_of = [](const Tensor& out, const Tensor& wrt) {
    return autograd::grad({out}, {wrt}, {}, std::nullopt, /*create_graph=*/true)[0];
  };
  const Tensor ce_target = tensor(std::vector<int64_t>{0, -100, 2, 1});
  const std::vector<std::pair<std::string, Fn>> second_order = {
      {"cross_entropy",
       [&](auto& v) { return grad_of(F::cross_entropy(v[0], v[1], nn::Reduction::Mean, 0.1, v[2]).pow(2), v[0]); }},
      {"nll_loss",
       [&](auto& v) { return grad_of(F::nll_loss(log_softmax(v[0], 1), v[1], nn::Reduction::Sum, v[2]), v[0]); }},
      {"batch_norm",
       [&](auto& v) {
         return grad_of(F::batch_norm(v[0], Tensor(), Tensor(), v[2], Tensor(), true).pow(2).sum(), v[0]);
       }},
      {"layer_norm", [&](auto& v) { return grad_of(F::layer_norm(v[0], {3}).pow(3).sum(), v[0]); }},
      {"softmax", [&](auto& v) { return grad_of((softmax(v[0], 1) * v[0]).sum(), v[0]); }},
      {"max(dim)", [&](auto& v) { return grad_of(std::get<0>(ember::max(v[0] * v[0], 1)).sum(), v[0]); }},
      {"amax", [&](auto& v) { return grad_of(amax(v[0] * v[0], {0}).sum(), v[0]); }},
      {"index_select", [&](auto& v) { return grad_of(index_select(v[0] * v[0], 1, v[1].clamp(0, 2)).sum(), v[0]); }},
      {"gather", [&](auto& v) { return grad_of(gather(v[0] * v[0], 1, v[1].clamp(0, 2).unsqueeze(1)).sum(), v[0]); }},
      {"select and slice",
       [&](auto& v) { return grad_of((v[0].select(1, 1) * v[0].slice(0, 1, 3).sum()).sum(), v[0]); }},
      {"where", [&](auto& v) { return grad_of(where(v[0] > 0.0, v[0] * v[0], v[0].exp()).sum(), v[0]); }},
      {"clamp", [&](auto& v) { return grad_of((clamp(v[0], -0.5, 0.5) * v[0]).sum(), v[0]); }},
      {"var", [&](auto& v) { return grad_of(var(v[0], {1}).sum(), v[0]); }},
  };
  for (const auto& [name, f] : second_order) {
    expect_same("second order " + name, {leaf(randn({4, 3})), constant(ce_target), leaf(rand({3}) + 0.5)}, f);
  }
  // Double backward through views and indexing.
  Tensor v = on(randn({4, 3})).requires_grad_();
  Tensor h = (v.select(1, 0) * v.narrow(0, 1, 3).sum({1}).sum()).pow(2).sum() +
             index_select(v, 0, on(tensor(std::vector<int64_t>{2, 2}))).pow(2).sum();
  std::vector<Tensor> gv;
  ASSERT_EQ(full_error_of([&] { gv = autograd::grad({h}, {v}, {}, std::nullopt, true); }), "no error");
  EXPECT_EQ(full_error_of([&] { gv[0].pow(2).sum().backward(); }), "no error");
  EXPECT_EQ(v.grad().device(), dev());
}

// ---------------------------------------------------------------------------------------------
// Whole models.

struct Batch {
  Tensor x, y;
};

/// Trains `model` on `batches` (cross-entropy with a class weight and label smoothing, clipping,
/// a checked step) and returns each step's loss.
std::vector<double> train(nn::Module& model, optim::Optimizer& opt, const std::vector<Batch>& batches,
                          const Device& device, const Tensor& class_weight) {
  nn::CrossEntropyLoss loss_fn(class_weight.to(device, false, true), -100, nn::Reduction::Mean, 0.1);
  std::vector<double> losses;
  for (const Batch& b : batches) {
    opt.zero_grad();
    Tensor loss = loss_fn(model(b.x.to(device)), b.y.to(device));
    loss.backward();
    std::vector<Tensor> params = model.parameters();
    optim::clip_grad_norm_(params, 5.0);
    std::vector<Tensor> grads;
    for (const Tensor& p : params) grads.push_back(p.grad());
    grads.push_back(loss.detach());
    opt.step(logical_not(all_finite(grads)));
    losses.push_back(loss.item<double>());
  }
  return losses;
}

TEST_F(DevicePlacement, SequentialTrainingStep) {
  auto make = [] {
    manual_seed(41);
    return std::make_shared<nn::Sequential>(
        std::make_shared<nn::Linear>(6, 16), std::make_shared<nn::LayerNorm>(std::vector<int64_t>{16}),
        std::make_shared<nn::GELU>(), std::make_shared<nn::Linear>(16, 8), std::make_shared<nn::Tanh>(),
        std::make_shared<nn::Dropout>(0.0), std::make_shared<nn::Linear>(8, 4));
  };
  auto cpu = make(), d = make();
  d->to(dev());
  expect_same_state(*d, *cpu, "initial");
  manual_seed(42);
  std::vector<Batch> batches;
  for (int i = 0; i < 4; ++i) batches.push_back({randn({8, 6}), randint(0, 4, {8})});
  const Tensor class_weight = tensor({1.0f, 2.0f, 0.5f, 1.5f});
  optim::Adam oc(cpu->parameters(), {.lr = 0.01});
  optim::Adam od(d->parameters(), {.lr = 0.01});
  const std::vector<double> lc = train(*cpu, oc, batches, kCpu, class_weight);
  std::vector<double> ld;
  ASSERT_EQ(full_error_of([&] { ld = train(*d, od, batches, dev(), class_weight); }), "no error");
  EXPECT_EQ(ld, lc);
  expect_same_state(*d, *cpu, "after training");
  for (const Tensor& p : d->parameters()) EXPECT_EQ(p.grad().device(), dev());
  // Evaluation mode and zero_grad(false) keep everything on the device.
  d->eval();
  cpu->eval();
  EXPECT_TRUE(close_to_cpu((*d)(on(batches[0].x)), (*cpu)(batches[0].x), 0, 0, "eval forward"));
  d->zero_grad(false);
  for (const Tensor& p : d->parameters()) EXPECT_EQ(p.grad().device(), dev());
  // Moving back to the CPU.
  d->to(kCpu);
  for (const Tensor& p : d->parameters()) EXPECT_EQ(p.device(), kCpu);
}

TEST_F(DevicePlacement, ConvNetTrainingStep) {
  auto make = [] {
    manual_seed(51);
    return std::make_shared<nn::Sequential>(
        std::make_shared<nn::Conv2d>(2, 4, 3, 1, 1), std::make_shared<nn::BatchNorm2d>(4), std::make_shared<nn::ReLU>(),
        std::make_shared<nn::MaxPool2d>(std::vector<int64_t>{2}), std::make_shared<nn::Conv2d>(4, 6, 3, 1, "same"),
        std::make_shared<nn::SiLU>(), std::make_shared<nn::AvgPool2d>(std::vector<int64_t>{2}),
        std::make_shared<nn::AdaptiveAvgPool2d>(std::vector<int64_t>{1, 1}), std::make_shared<nn::Flatten>(),
        std::make_shared<nn::Linear>(6, 3), std::make_shared<nn::LogSoftmax>(1));
  };
  auto cpu = make(), d = make();
  d->to(dev());
  manual_seed(52);
  std::vector<Batch> batches;
  for (int i = 0; i < 3; ++i) batches.push_back({randn({4, 2, 8, 8}), randint(0, 3, {4})});
  optim::SGD oc(cpu->parameters(), {.lr = 0.05, .momentum = 0.9});
  optim::SGD od(d->parameters(), {.lr = 0.05, .momentum = 0.9});
  const Tensor class_weight = tensor({1.0f, 0.5f, 2.0f});
  const std::vector<double> lc = train(*cpu, oc, batches, kCpu, class_weight);
  std::vector<double> ld;
  ASSERT_EQ(full_error_of([&] { ld = train(*d, od, batches, dev(), class_weight); }), "no error");
  EXPECT_EQ(ld, lc);
  expect_same_state(*d, *cpu, "after training");
}

TEST_F(DevicePlacement, TrainingWithDropout) {
  // Random masks: check that a full step runs on the device and leaves everything there.
  manual_seed(61);
  auto model =
      std::make_shared<nn::Sequential>(std::make_shared<nn::Linear>(5, 12), std::make_shared<nn::ReLU>(),
                                       std::make_shared<nn::Dropout>(0.3), std::make_shared<nn::Linear>(12, 3));
  model->to(dev());
  model->train();
  optim::AdamW opt(model->parameters(), {.lr = 0.01});
  nn::CrossEntropyLoss loss_fn;
  for (int step = 0; step < 3; ++step) {
    opt.zero_grad();
    Tensor loss = loss_fn((*model)(on(randn({6, 5}))), on(randint(0, 3, {6})));
    EXPECT_EQ(loss.device(), dev());
    loss.backward();
    opt.step();
    EXPECT_TRUE(std::isfinite(loss.item<double>()));
  }
  for (const Tensor& p : model->parameters()) {
    EXPECT_EQ(p.device(), dev());
    EXPECT_EQ(p.grad().device(), dev());
  }
}

}  // namespace
