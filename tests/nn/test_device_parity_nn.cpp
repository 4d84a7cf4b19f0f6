// Layers, losses, convolution and pooling (forward and backward through autograd) on each
// accelerator against the CPU: the same module built twice from one seed, one copy moved with
// Module::to(device), both fed the same inputs; outputs, input gradients and parameter
// gradients compared.
#include <gtest/gtest.h>

#include <cmath>
#include <functional>
#include <limits>
#include <memory>
#include <string>
#include <vector>

#include "ember/ember.h"
#include "ember/nn/nn.h"
#include "support/devices.h"

namespace {

using namespace ember;
namespace nn = ember::nn;
namespace F = ember::nn::functional;
using ember_test::close_to_cpu;

// Convolutions, pooling and normalisations accumulate in a different order on a GPU.
constexpr double kRtol = 1e-4, kAtol = 1e-5;
// cuDNN may pick Winograd or FFT algorithms, exact only to about 1e-5 of the operands' scale;
// the convolutions below produce values of order 1-10 and weight gradients of order 10-100.
constexpr double kConvRtol = 1e-4, kConvAtol = 5e-4;

class DeviceParityNn : public ember_test::DeviceTest {
 protected:
  void SetUp() override {
    DeviceTest::SetUp();
    if (IsSkipped()) return;
    manual_seed(99);
  }
  // Always a copy, so that in-place ops on it never touch the reference (the CPU self-test).
  Tensor on(const Tensor& cpu) const { return cpu.to(device(), false, true); }
};

/// Runs f on (cpu leaves) and on (device leaves), back-propagates sum(out * weights) with the same
/// weights, and compares the outputs and every leaf's gradient.
void check_forward_backward(const std::string& what, const std::vector<Tensor>& cpu_inputs,
                            const std::function<Tensor(const std::vector<Tensor>&)>& f, const Device& device,
                            double rtol = kRtol, double atol = kAtol) {
  std::vector<Tensor> cpu_leaves, dev_leaves;
  for (const Tensor& x : cpu_inputs) {
    cpu_leaves.push_back(x.detach().clone().requires_grad_());
    dev_leaves.push_back(x.detach().to(device, false, true).requires_grad_());
  }
  Tensor cpu_out = f(cpu_leaves);
  Tensor dev_out = f(dev_leaves);
  EXPECT_TRUE(close_to_cpu(dev_out, cpu_out.detach(), rtol, atol, what + " forward"));
  Tensor weights = randn(cpu_out.sizes().vec(), cpu_out.dtype());
  (cpu_out * weights).sum().backward();
  (dev_out * weights.to(device)).sum().backward();
  for (size_t i = 0; i < cpu_leaves.size(); ++i) {
    ASSERT_TRUE(dev_leaves[i].grad().defined()) << what << " input " << i << " has no gradient on the device";
    EXPECT_TRUE(close_to_cpu(dev_leaves[i].grad(), cpu_leaves[i].grad(), rtol, atol,
                             what + " gradient of input " + std::to_string(i)));
  }
}

struct ConvCase {
  std::string name;
  int64_t n, cin, h, w, cout, kh, kw;
  std::vector<int64_t> stride, padding, dilation;
  int64_t groups;
  bool bias;
};

TEST_P(DeviceParityNn, Conv2dForwardAndBackward) {
  const std::vector<ConvCase> cases = {
      {"3x3", 2, 4, 9, 8, 6, 3, 3, {1}, {0}, {1}, 1, true},
      {"stride 2 padding 1", 2, 3, 11, 10, 5, 3, 3, {2}, {1}, {1}, 1, true},
      {"dilation 2", 1, 2, 12, 12, 3, 3, 3, {1}, {2}, {2}, 1, false},
      {"groups 2", 3, 4, 7, 9, 6, 3, 3, {1}, {1}, {1}, 2, true},
      {"depthwise", 2, 4, 8, 8, 8, 3, 3, {1}, {1}, {1}, 4, true},
      {"asymmetric", 2, 3, 10, 13, 4, 3, 5, {2, 1}, {1, 2}, {1, 2}, 1, true},
      {"1x1", 4, 8, 5, 5, 16, 1, 1, {1}, {0}, {1}, 1, true},
      {"5x5 wide", 8, 16, 14, 14, 32, 5, 5, {1}, {2}, {1}, 1, true},
  };
  for (const ConvCase& c : cases) {
    Tensor x = randn({c.n, c.cin, c.h, c.w});
    Tensor w = randn({c.cout, c.cin / c.groups, c.kh, c.kw}) * 0.3;
    // Built element by element: GCC 12 warns falsely (-Warray-bounds) on a push_back after
    // an initializer list here.
    std::vector<Tensor> inputs;
    inputs.reserve(3);
    inputs.push_back(x);
    inputs.push_back(w);
    if (c.bias) inputs.push_back(randn({c.cout}));
    check_forward_backward(
        "conv2d " + c.name, inputs,
        [&](const std::vector<Tensor>& in) {
          return F::conv2d(in[0], in[1], c.bias ? in[2] : Tensor(), c.stride, c.padding, c.dilation, c.groups);
        },
        device(), kConvRtol, kConvAtol);
  }
  // float64, and the unbatched form.
  Tensor x = randn({2, 3, 7, 6}, kFloat64), w = randn({4, 3, 3, 3}, kFloat64), b = randn({4}, kFloat64);
  check_forward_backward(
      "conv2d float64", {x, w, b},
      [](const std::vector<Tensor>& in) { return F::conv2d(in[0], in[1], in[2], {1}, {1}); }, device(), 1e-10, 1e-12);
  check_forward_backward(
      "conv2d unbatched", {randn({3, 6, 6}), randn({2, 3, 3, 3})},
      [](const std::vector<Tensor>& in) { return F::conv2d(in[0], in[1]); }, device(), kConvRtol, kConvAtol);
  // A non-contiguous input: the front end must make it contiguous for the backend.
  Tensor xt = randn({2, 3, 8, 8});
  Tensor wt = randn({4, 3, 3, 3});
  EXPECT_CLOSE_TO_CPU(F::conv2d(on(xt).transpose(2, 3), on(wt)), F::conv2d(xt.transpose(2, 3), wt), kConvRtol,
                      kConvAtol);
}

TEST_P(DeviceParityNn, Conv2dModule) {
  manual_seed(3);
  nn::Conv2d cpu(3, 8, 3, 1, 1);
  manual_seed(3);
  nn::Conv2d dev(3, 8, 3, 1, 1);
  dev.to(device());
  EXPECT_EQ(dev.weight.device(), on(zeros({1})).device());
  EXPECT_CLOSE_TO_CPU(dev.weight, cpu.weight, 0, 0);
  Tensor x = randn({2, 3, 10, 10});
  Tensor yc = cpu(x), yd = dev(on(x));
  EXPECT_CLOSE_TO_CPU(yd, yc, kConvRtol, kConvAtol);
  yc.pow(2).mean().backward();
  yd.pow(2).mean().backward();
  EXPECT_CLOSE_TO_CPU(dev.weight.grad(), cpu.weight.grad(), kConvRtol, kConvAtol);
  EXPECT_CLOSE_TO_CPU(dev.bias.grad(), cpu.bias.grad(), kConvRtol, kConvAtol);
}

TEST_P(DeviceParityNn, PoolingForwardAndBackward) {
  using In = std::vector<Tensor>;
  Tensor x = randn({2, 3, 11, 10});
  check_forward_backward(
      "max_pool2d 2", {x}, [](const In& in) { return F::max_pool2d(in[0], {2}); }, device());
  check_forward_backward(
      "max_pool2d 3/2 pad 1", {x}, [](const In& in) { return F::max_pool2d(in[0], {3}, {2}, {1}); }, device());
  check_forward_backward(
      "max_pool2d dilation 2", {x}, [](const In& in) { return F::max_pool2d(in[0], {3}, {1}, {1}, {2}); }, device());
  check_forward_backward(
      "max_pool2d ceil_mode", {x},
      [](const In& in) {
        return F::max_pool2d(in[0], {3, 2}, {2, 3}, {0}, {1}, true);
      },
      device());
  check_forward_backward(
      "avg_pool2d 2", {x}, [](const In& in) { return F::avg_pool2d(in[0], {2}); }, device());
  check_forward_backward(
      "avg_pool2d pad, no count_include_pad", {x},
      [](const In& in) { return F::avg_pool2d(in[0], {3}, {2}, {1}, false, false); }, device());
  check_forward_backward(
      "avg_pool2d ceil_mode divisor_override", {x},
      [](const In& in) { return F::avg_pool2d(in[0], {3}, {2}, {1}, true, true, 5); }, device());
  check_forward_backward(
      "adaptive_avg_pool2d 3x2", {x},
      [](const In& in) {
        return F::adaptive_avg_pool2d(in[0], {3, 2});
      },
      device());
  check_forward_backward(
      "adaptive_avg_pool2d 1", {x}, [](const In& in) { return F::adaptive_avg_pool2d(in[0], {1}); }, device());
  check_forward_backward(
      "adaptive_avg_pool2d 4x7 (uneven)", {x},
      [](const In& in) {
        return F::adaptive_avg_pool2d(in[0], {4, 7});
      },
      device());
  check_forward_backward(
      "max_pool2d unbatched", {randn({3, 6, 6})}, [](const In& in) { return F::max_pool2d(in[0], {2}); }, device());
  check_forward_backward(
      "max_pool2d float64", {x.to(kFloat64)}, [](const In& in) { return F::max_pool2d(in[0], {2}); }, device(), 0, 0);
}

TEST_P(DeviceParityNn, MaxPoolIndicesTiesAndNans) {
  // Integer-valued inputs make ties in most windows: the chosen index must be the CPU's.
  Tensor x = randint(0, 3, {2, 2, 9, 9}).to(kFloat32);
  auto [dv, di] = F::max_pool2d_with_indices(on(x), {3}, {2}, {1});
  auto [cv, ci] = F::max_pool2d_with_indices(x, {3}, {2}, {1});
  EXPECT_CLOSE_TO_CPU(dv, cv, 0, 0);
  EXPECT_CLOSE_TO_CPU(di, ci, 0, 0);
  check_forward_backward(
      "max_pool2d ties", {x}, [](const std::vector<Tensor>& in) { return F::max_pool2d(in[0], {3}, {1}); }, device());
  Tensor n = randn({1, 2, 6, 6});
  n[0][0][1][1].fill_(std::numeric_limits<double>::quiet_NaN());
  n[0][1][4][5].fill_(std::numeric_limits<double>::quiet_NaN());
  auto [nv, ni] = F::max_pool2d_with_indices(on(n), {2});
  auto [mv, mi] = F::max_pool2d_with_indices(n, {2});
  EXPECT_CLOSE_TO_CPU(nv, mv, 0, 0);
  EXPECT_CLOSE_TO_CPU(ni, mi, 0, 0);
}

TEST_P(DeviceParityNn, MlpWithCrossEntropyGivesTheCpusGradients) {
  auto make = [] {
    manual_seed(11);
    return std::make_shared<nn::Sequential>(std::make_shared<nn::Linear>(20, 32), std::make_shared<nn::ReLU>(),
                                            std::make_shared<nn::Linear>(32, 32), std::make_shared<nn::GELU>(),
                                            std::make_shared<nn::Linear>(32, 10));
  };
  auto cpu = make();
  auto dev = make();
  dev->to(device());
  Tensor x = randn({16, 20});
  Tensor y = randint(0, 10, {16});
  Tensor lc = F::cross_entropy((*cpu)(x), y);
  Tensor ld = F::cross_entropy((*dev)(on(x)), on(y));
  EXPECT_CLOSE_TO_CPU(ld, lc, 1e-5, 1e-6);
  lc.backward();
  ld.backward();
  const auto pc = cpu->named_parameters();
  const auto pd = dev->named_parameters();
  ASSERT_EQ(pc.size(), pd.size());
  for (size_t i = 0; i < pc.size(); ++i) {
    EXPECT_EQ(pd[i].second.device(), ld.device()) << pd[i].first;
    ASSERT_TRUE(pd[i].second.grad().defined()) << pd[i].first;
    EXPECT_EQ(pd[i].second.grad().device(), ld.device()) << pd[i].first;
    EXPECT_TRUE(close_to_cpu(pd[i].second.grad(), pc[i].second.grad(), kRtol, kAtol, "grad of " + pd[i].first));
  }
}

TEST_P(DeviceParityNn, LinearLayerNormEmbeddingDropout) {
  using In = std::vector<Tensor>;
  Tensor x = randn({4, 5, 12});
  check_forward_backward(
      "linear", {x, randn({7, 12}), randn({7})}, [](const In& in) { return F::linear(in[0], in[1], in[2]); }, device());
  check_forward_backward(
      "layer_norm", {x, randn({12}), randn({12})},
      [](const In& in) { return F::layer_norm(in[0], {12}, in[1], in[2]); }, device());
  check_forward_backward(
      "layer_norm 2 dims", {x * 5 + 3},
      [](const In& in) {
        return F::layer_norm(in[0], {5, 12});
      },
      device());
  // Embedding: repeated indices accumulate into the same weight row.
  Tensor idx = tensor({{0, 3, 3, 9}, {9, 9, 1, 0}});
  check_forward_backward(
      "embedding", {randn({10, 6})}, [&](const In& in) { return F::embedding(idx.to(in[0].device()), in[0]); },
      device());

  manual_seed(1);
  nn::LayerNorm ln_cpu({12});
  nn::LayerNorm ln_dev({12});
  ln_dev.to(device());
  EXPECT_CLOSE_TO_CPU(ln_dev(on(x)), ln_cpu(x), kRtol, kAtol);
  manual_seed(2);
  nn::Embedding emb_cpu(10, 6);
  manual_seed(2);
  nn::Embedding emb_dev(10, 6);
  emb_dev.to(device());
  EXPECT_CLOSE_TO_CPU(emb_dev(on(idx)), emb_cpu(idx), 0, 0);

  // Dropout with p = 0 and in eval() is the identity on any device.
  nn::Dropout keep(0.0);
  EXPECT_CLOSE_TO_CPU(keep(on(x)), x, 0, 0);
  nn::Dropout drop(0.5);
  drop.eval();
  EXPECT_CLOSE_TO_CPU(drop(on(x)), x, 0, 0);
  // Training dropout draws from the device's generator: check its rule, not its mask.
  drop.train();
  Tensor big = rand({100000}) + 1;
  manual_seed(8);
  Tensor a = drop(on(big));
  manual_seed(8);
  Tensor b = drop(on(big));
  EXPECT_TRUE(equal(a.cpu(), b.cpu())) << "dropout is not reproducible for a seed";
  Tensor kept = a.cpu() != 0;
  EXPECT_NEAR(kept.to(kFloat64).mean().item<double>(), 0.5, 0.01);
  EXPECT_TRUE(allclose(where(kept, a.cpu(), zeros({1})), where(kept, big * 2, zeros({1})), 1e-6, 1e-6));
}

TEST_P(DeviceParityNn, BatchNorm2dTrainAndEval) {
  auto make = [] {
    auto m = std::make_shared<nn::BatchNorm2d>(4);
    m->weight.detach().copy_(tensor({1.0f, 0.5f, -2.0f, 1.5f}));
    m->bias.detach().copy_(tensor({0.0f, 0.25f, 1.0f, -0.5f}));
    return m;
  };
  auto cpu = make();
  auto dev = make();
  dev->to(device());
  for (int step = 0; step < 3; ++step) {
    const std::string s = "step " + std::to_string(step);
    Tensor x = randn({5, 4, 6, 7}) * 2 + 1;
    Tensor yc = (*cpu)(x), yd = (*dev)(on(x));
    EXPECT_TRUE(close_to_cpu(yd, yc, kRtol, kAtol, "batch_norm train " + s));
    Tensor g = randn({5, 4, 6, 7});
    (yc * g).sum().backward();
    (yd * on(g)).sum().backward();
    EXPECT_TRUE(close_to_cpu(dev->weight.grad(), cpu->weight.grad(), kRtol, 1e-4, "weight grad " + s));
    EXPECT_TRUE(close_to_cpu(dev->bias.grad(), cpu->bias.grad(), kRtol, 1e-4, "bias grad " + s));
    EXPECT_TRUE(close_to_cpu(dev->running_mean, cpu->running_mean, kRtol, kAtol, "running_mean " + s));
    EXPECT_TRUE(close_to_cpu(dev->running_var, cpu->running_var, kRtol, kAtol, "running_var " + s));
  }
  EXPECT_EQ(dev->num_batches_tracked.cpu().item<int64_t>(), 3);
  EXPECT_EQ(dev->num_batches_tracked.dtype(), kInt64);
  cpu->eval();
  dev->eval();
  Tensor x = randn({3, 4, 5, 5});
  check_forward_backward(
      "batch_norm eval", {x},
      [&](const std::vector<Tensor>& in) { return in[0].is_cpu() ? (*cpu)(in[0]) : (*dev)(in[0]); }, device());
  // The functional form without running statistics, and the input gradient in training.
  check_forward_backward(
      "batch_norm train no stats", {randn({6, 3, 4, 4}), rand({3}) + 0.5, randn({3})},
      [](const std::vector<Tensor>& in) { return F::batch_norm(in[0], Tensor(), Tensor(), in[1], in[2], true); },
      device(), kRtol, 1e-4);
}

TEST_P(DeviceParityNn, LossFunctionsForwardAndBackward) {
  using In = std::vector<Tensor>;
  Tensor logits = randn({8, 5}) * 2;
  Tensor target = randint(0, 5, {8});
  auto with_target = [&](const Tensor& t) { return [t](const Tensor& like) { return t.to(like.device()); }; };
  auto tgt = with_target(target);
  for (auto r : {nn::Reduction::Mean, nn::Reduction::Sum, nn::Reduction::None}) {
    const std::string rs = r == nn::Reduction::Mean ? " mean" : (r == nn::Reduction::Sum ? " sum" : " none");
    check_forward_backward(
        "cross_entropy" + rs, {logits}, [&](const In& in) { return F::cross_entropy(in[0], tgt(in[0]), r); }, device());
    check_forward_backward(
        "cross_entropy smoothed" + rs, {logits},
        [&](const In& in) { return F::cross_entropy(in[0], tgt(in[0]), r, 0.1); }, device());
    check_forward_backward(
        "nll_loss" + rs, {F::log_softmax(logits, 1)}, [&](const In& in) { return F::nll_loss(in[0], tgt(in[0]), r); },
        device());
    Tensor y = randn({8, 5});
    check_forward_backward(
        "mse_loss" + rs, {logits, y}, [&](const In& in) { return F::mse_loss(in[0], in[1], r); }, device());
    Tensor p = rand({8, 5});
    Tensor pos = rand({5}) + 0.5;
    check_forward_backward(
        "bce_with_logits" + rs, {logits, p},
        [&](const In& in) { return F::binary_cross_entropy_with_logits(in[0], in[1], r); }, device());
    check_forward_backward(
        "bce_with_logits pos_weight" + rs, {logits, p, pos},
        [&](const In& in) { return F::binary_cross_entropy_with_logits(in[0], in[1], r, in[2]); }, device());
  }
  // Probability targets and spatial [N, C, d] inputs.
  Tensor probs = F::softmax(randn({8, 5}), 1);
  check_forward_backward(
      "cross_entropy probabilities", {logits, probs}, [](const In& in) { return F::cross_entropy(in[0], in[1]); },
      device());
  Tensor spatial_target = randint(0, 5, {2, 3});
  check_forward_backward(
      "cross_entropy spatial", {randn({2, 5, 3})},
      [&](const In& in) { return F::cross_entropy(in[0], spatial_target.to(in[0].device())); }, device());
  // The modules.
  nn::CrossEntropyLoss ce;
  EXPECT_CLOSE_TO_CPU(ce(on(logits), on(target)), ce(logits, target), 1e-5, 1e-6);
  nn::BCEWithLogitsLoss bce(nn::Reduction::Mean, rand({5}) + 0.5);
  Tensor p = rand({8, 5});
  const Tensor want = bce(logits, p);
  bce.to(device());
  EXPECT_CLOSE_TO_CPU(bce(on(logits), on(p)), want, 1e-5, 1e-6);
}

// The recurrent layers: the same module on both devices, given the same input and state; the
// output, the last states and every parameter's gradient match.
TEST_P(DeviceParityNn, RecurrentLayers) {
  Tensor x = randn({3, 6, 5});  // batch_first: [batch, steps, features]
  auto compare = [&](nn::Module& cpu, nn::Module& dev, const std::function<Tensor(nn::Module&, const Tensor&)>& run) {
    dev.to(device());
    Tensor yc = run(cpu, x), yd = run(dev, on(x));
    EXPECT_CLOSE_TO_CPU(yd, yc, kRtol, kAtol);
    yc.pow(2).sum().backward();
    yd.pow(2).sum().backward();
    const auto pc = cpu.named_parameters(), pd = dev.named_parameters();
    ASSERT_EQ(pc.size(), pd.size());
    for (size_t i = 0; i < pc.size(); ++i) {
      SCOPED_TRACE(pc[i].first);
      EXPECT_CLOSE_TO_CPU(pd[i].second.grad(), pc[i].second.grad(), kRtol, kAtol);
    }
  };
  const nn::RNNOptions lstm_options{.num_layers = 2, .batch_first = true, .bidirectional = true, .proj_size = 3};
  manual_seed(4);
  nn::LSTM lstm_cpu(5, 4, lstm_options);
  manual_seed(4);
  nn::LSTM lstm_dev(5, 4, lstm_options);
  Tensor h0 = randn({4, 3, 3}), c0 = randn({4, 3, 4});
  compare(lstm_cpu, lstm_dev, [&](nn::Module& m, const Tensor& in) {
    nn::LSTMOutput out = static_cast<nn::LSTM&>(m).forward(in, h0.to(in.device()), c0.to(in.device()));
    return cat({out.output.flatten(), out.h_n.flatten(), out.c_n.flatten()}, 0);
  });
  manual_seed(5);
  nn::GRU gru_cpu(5, 4, {.num_layers = 2, .batch_first = true});
  manual_seed(5);
  nn::GRU gru_dev(5, 4, {.num_layers = 2, .batch_first = true});
  compare(gru_cpu, gru_dev, [](nn::Module& m, const Tensor& in) {
    nn::RNNOutput out = static_cast<nn::GRU&>(m).forward(in, Tensor());
    return cat({out.output.flatten(), out.h_n.flatten()}, 0);
  });
  // A packed batch in no particular order: the sort permutation lives on the device.
  manual_seed(7);
  nn::LSTM packed_cpu(5, 4, {.bidirectional = true});
  manual_seed(7);
  nn::LSTM packed_dev(5, 4, {.bidirectional = true});
  compare(packed_cpu, packed_dev, [](nn::Module& m, const Tensor& in) {
    namespace R = nn::utils::rnn;
    R::PackedSequence packed = R::pack_padded_sequence(in, std::vector<int64_t>{4, 6, 2}, true, false);
    nn::PackedLSTMOutput out = static_cast<nn::LSTM&>(m).forward(packed);
    EXPECT_EQ(out.output.data.device(), in.device());
    return cat({R::pad_packed_sequence(out.output, true).first.flatten(), out.h_n.flatten(), out.c_n.flatten()}, 0);
  });
  manual_seed(6);
  nn::RNNCell cell_cpu(5, 4, true, "relu");
  manual_seed(6);
  nn::RNNCell cell_dev(5, 4, true, "relu");
  compare(cell_cpu, cell_dev, [](nn::Module& m, const Tensor& in) { return m(in.select(1, 0)); });
}

TEST_P(DeviceParityNn, AttentionLayers) {
  // A causal mask and a boolean padding mask: masks built on the CPU must reach the device.
  Tensor x = randn({2, 5, 8});  // batch_first
  Tensor mask = nn::generate_square_subsequent_mask(5);
  Tensor padding = tensor({{false, false, false, true, true}, {false, false, false, false, false}});
  manual_seed(8);
  nn::TransformerEncoderLayer cpu_layer(8, 2, {.dim_feedforward = 16, .dropout = 0.0, .batch_first = true});
  manual_seed(8);
  nn::TransformerEncoderLayer dev_layer(8, 2, {.dim_feedforward = 16, .dropout = 0.0, .batch_first = true});
  dev_layer.to(device());
  Tensor xc = x.clone().requires_grad_(), xd = on(x).requires_grad_();
  Tensor yc = cpu_layer.forward(xc, mask, padding);
  Tensor yd = dev_layer.forward(xd, mask.to(device()), padding.to(device()));
  EXPECT_CLOSE_TO_CPU(yd, yc, kRtol, kAtol);
  yc.pow(2).sum().backward();
  yd.pow(2).sum().backward();
  EXPECT_CLOSE_TO_CPU(xd.grad(), xc.grad(), kRtol, kAtol);
  const auto pc = cpu_layer.named_parameters(), pd = dev_layer.named_parameters();
  for (size_t i = 0; i < pc.size(); ++i) {
    SCOPED_TRACE(pc[i].first);
    EXPECT_CLOSE_TO_CPU(pd[i].second.grad(), pc[i].second.grad(), kRtol, kAtol);
  }
  // The attention weights, and scaled_dot_product_attention's causal mask made on the device.
  manual_seed(9);
  nn::MultiheadAttention mha(8, 4);
  Tensor q = randn({3, 2, 8}), kv = randn({4, 2, 8});
  nn::MultiheadAttentionOutput oc = mha.forward(q, kv, kv);
  mha.to(device());
  nn::MultiheadAttentionOutput od = mha.forward(on(q), on(kv), on(kv));
  EXPECT_CLOSE_TO_CPU(od.output, oc.output, kRtol, kAtol);
  EXPECT_CLOSE_TO_CPU(od.weights, oc.weights, kRtol, kAtol);
  Tensor a = randn({2, 3, 4, 8});
  EXPECT_CLOSE_TO_CPU(nn::functional::scaled_dot_product_attention(on(a), on(a), on(a), Tensor(), 0.0, true),
                      nn::functional::scaled_dot_product_attention(a, a, a, Tensor(), 0.0, true), kRtol, kAtol);
}

EMBER_INSTANTIATE_DEVICE_SUITE(DeviceParityNn);

}  // namespace
