// LinearCrossEntropyLoss and functional::linear_cross_entropy against PyTorch 2.15
// (tools/gen_linear_cross_entropy_golden.py): initial parameters bit for bit, the loss and the
// gradients of input and parameters in float64 for class and probability targets, K-dimensional
// losses, weights, ignore_index, label smoothing and every reduction; the chunked path
// (LinearCrossEntropyOptions) against PyTorch's chunked results and ember's reference path, its
// options' checks, warning and single backward; finite differences, PyTorch's messages and the
// stand-in device.
#include <gtest/gtest.h>

#include <optional>
#include <string>
#include <vector>

#include "ember/ember.h"
#include "ember/io/safetensors.h"
#include "ember/nn/linear_cross_entropy.h"
#include "support/devices.h"
#include "support/error_of.h"
#include "support/golden_cases.h"
#include "support/gradcheck.h"

namespace {

using namespace ember;
using ember_test::error_of;
namespace F = ember::nn::functional;

const io::SafetensorsData& golden() {
  static const io::SafetensorsData data =
      io::load_safetensors(EMBER_SOURCE_DIR "/tests/nn/golden/linear_cross_entropy_golden.safetensors");
  return data;
}

std::vector<int64_t> list_of(const std::string& text) {
  std::vector<int64_t> out;
  for (size_t start = 0; start < text.size();) {
    size_t end = text.find(';', start);
    if (end == std::string::npos) end = text.size();
    out.push_back(std::stoll(text.substr(start, end - start)));
    start = end + 1;
  }
  return out;
}

nn::Reduction reduction_of(const std::string& name) {
  if (name == "none") return nn::Reduction::None;
  return name == "sum" ? nn::Reduction::Sum : nn::Reduction::Mean;
}

TEST(LinearCrossEntropyLoss, MatchesPyTorch) {
  const io::SafetensorsData& g = golden();
  int ran = 0;
  for (const ember_test::GoldenCase& c : ember_test::golden_cases(g.metadata)) {
    SCOPED_TRACE(c.description);
    const std::string ignore = c.options.at("ignore");
    nn::LinearCrossEntropyLossOptions options{
        .out_features = list_of(c.options.at("out")),
        .bias = c.flag("bias"),
        .reduction = reduction_of(c.options.at("reduction")),
        .weight = c.flag("weight") ? g.at(c.prefix + "class_weight") : Tensor(),
        .ignore_index = ignore == "none" ? std::nullopt : std::optional<int64_t>(std::stoll(ignore)),
        .label_smoothing = c.real("smoothing"),
    };
    manual_seed(static_cast<uint64_t>(c.num("seed")));
    nn::LinearCrossEntropyLoss m(c.num("in"), c.num("classes"), options);
    EXPECT_EQ(m.name(), "LinearCrossEntropyLoss");
    ember_test::expect_parameters(m, g, c.prefix + "init.");  // PyTorch's draws, bit for bit
    m.to(kFloat64);
    nn::StateDict state;
    for (const auto& [name, p] : m.named_parameters()) state.insert(name, g.at(c.prefix + "param." + name));
    if (m.weight.defined()) state.insert("weight", m.weight);
    m.load_state_dict(state);

    const Tensor input = g.at(c.prefix + "input").clone().requires_grad_();
    const Tensor loss = m(input, g.at(c.prefix + "target"));
    ember_test::expect_close(loss, g.at(c.prefix + "loss"), 1e-12, 1e-13, "loss");
    std::vector<Tensor> leaves = {input};
    const auto params = m.named_parameters();
    for (const auto& [name, p] : params) leaves.push_back(p);
    const std::vector<Tensor> grads = autograd::grad({loss}, leaves, {g.at(c.prefix + "gloss")});
    ember_test::expect_close(grads[0], g.at(c.prefix + "ginput"), 1e-12, 1e-13, "ginput");
    for (size_t k = 0; k < params.size(); ++k)
      ember_test::expect_close(grads[k + 1], g.at(c.prefix + "grad." + params[k].first), 1e-12, 1e-13,
                               "grad." + params[k].first);
    ++ran;
  }
  EXPECT_EQ(ran, 9);
}

TEST(LinearCrossEntropyLoss, LayoutAndStateDict) {
  const Tensor class_weight = ones({4});
  nn::LinearCrossEntropyLoss m(6, 4, {.out_features = {3, 2}, .bias = true, .weight = class_weight});
  EXPECT_EQ(m.state_dict().keys(), (std::vector<std::string>{"weight", "linear.weight", "linear.bias"}));
  EXPECT_EQ(m.linear->weight.sizes().vec(), (std::vector<int64_t>{24, 6}));  // flat: C * 3 * 2 rows
  EXPECT_EQ(m.linear->bias.sizes().vec(), (std::vector<int64_t>{24}));
  nn::LinearCrossEntropyLoss plain(6, 4);
  EXPECT_EQ(plain.state_dict().keys(), (std::vector<std::string>{"linear.weight"}));
}

TEST(LinearCrossEntropyLoss, EqualsLinearThenCrossEntropy) {
  const Tensor x = randn({5, 7}, kFloat64), w = randn({3, 7}, kFloat64), b = randn({3}, kFloat64);
  const Tensor target = tensor(std::vector<int64_t>{0, 2, 1, 1, 0});
  EXPECT_TRUE(equal(F::linear_cross_entropy(x, w, target, b, Tensor(), nn::Reduction::Sum),
                    F::cross_entropy(F::linear(x, w, b), target, nn::Reduction::Sum)));
}

TEST(LinearCrossEntropyLoss, FiniteDifferences) {
  const Tensor target = tensor(std::vector<int64_t>{0, 2, 1, 3});
  ember::test::gradcheck("linear_cross_entropy",
                         [&](const std::vector<Tensor>& xs) {
                           return F::linear_cross_entropy(xs[0], xs[1], target, xs[2], Tensor(), nn::Reduction::Mean,
                                                          std::nullopt, 0.1);
                         },
                         {randn({4, 5}), randn({4, 5}), randn({4})});
}

TEST(LinearCrossEntropyLoss, PyTorchsMessages) {
  EXPECT_EQ(error_of([] { nn::LinearCrossEntropyLoss(8, 5, {.weight = ones({3})}); }),
            "expected weight shape to be (5,), got (3,)");
  EXPECT_EQ(error_of([] { nn::LinearCrossEntropyLoss(8, 5, {.label_smoothing = 1.5}); }),
            "expected label_smoothing to be in range [0, 1], got 1.5");
  EXPECT_EQ(error_of([] { nn::LinearCrossEntropyLoss(8, 5, {.label_smoothing = -0.1}); }),
            "expected label_smoothing to be in range [0, 1], got -0.1");
  const Tensor w = randn({5, 8}), target = zeros({2}, kInt64);
  EXPECT_EQ(error_of([&] {
              F::linear_cross_entropy(randn({2, 3, 8}), w, target);
            }),
            "expected input with dimensionality 1 or 2, got 3");
  EXPECT_EQ(error_of([&] {
              F::linear_cross_entropy(randn({2, 8}), randn({8}), target);
            }),
            "expected linear_weight with dimensionality at least 2, got 1");
  EXPECT_EQ(error_of([&] {
              F::linear_cross_entropy(randn({2, 7}), w, target);
            }),
            "expected equal input and linear_weight last dimensions (in_features), got 7 and 8, respectively");
  EXPECT_EQ(error_of([&] {
              F::linear_cross_entropy(randn({2, 8}), w, target, randn({4}));
            }),
            "expected linear_bias shape (5,), got (4,)");
  EXPECT_EQ(error_of([] {
              F::linear_cross_entropy(randn({8}), randn({5, 3, 8}), zeros({3}, kInt64));
            }),
            "K-dimensional loss defined by linear_weight shape (5, 3, 8) requires batched input, (N, 8), got unbatched "
            "input with shape (8,)");
  EXPECT_EQ(error_of([&] {
              F::linear_cross_entropy(randn({2, 8}), w, rand({2, 5}), Tensor(), Tensor(), nn::Reduction::Mean, 1);
            }),
            "ignore_index cannot be specified when target contains probabilities");
}

std::optional<int64_t> optional_number(const std::string& text) {
  return text == "none" ? std::nullopt : std::optional<int64_t>(std::stoll(text));
}

nn::LinearCrossEntropyOptions chunking_of(const ember_test::GoldenCase& c) {
  const std::string method = c.options.at("method");
  return {.batch_chunk_size = optional_number(c.options.at("chunk")),
          .chunking_method = method == "none" ? std::nullopt : std::optional<std::string>(method)};
}

TEST(LinearCrossEntropyChunked, MatchesPyTorchAndTheReferencePath) {
  const io::SafetensorsData& g = golden();
  int ran = 0;
  for (const ember_test::GoldenCase& c : ember_test::golden_cases(g.metadata, "chunked")) {
    SCOPED_TRACE(c.description);
    const auto at = [&](const std::string& name) { return g.at(c.prefix + name).clone(); };
    const Tensor input = at("input").requires_grad_(), linear_weight = at("linear_weight").requires_grad_();
    const Tensor linear_bias = c.flag("bias") ? at("linear_bias").requires_grad_() : Tensor();
    const Tensor class_weight = c.flag("weight") ? at("class_weight") : Tensor();
    const nn::Reduction reduction = reduction_of(c.options.at("reduction"));
    const std::optional<int64_t> ignore = optional_number(c.options.at("ignore"));
    std::vector<std::string> warnings;
    const WarningHandler previous = set_warning_handler([&](const std::string& m) { warnings.push_back(m); });
    const Tensor loss = F::linear_cross_entropy(input, linear_weight, at("target"), linear_bias, class_weight,
                                                reduction, ignore, 0.0, chunking_of(c));
    set_warning_handler(previous);
    EXPECT_TRUE(warnings.empty()) << "the chunked path did not apply";
    ember_test::expect_close(loss, at("loss"), 1e-12, 1e-13, "loss");
    const Tensor reference = F::linear_cross_entropy(input.detach(), linear_weight.detach(), at("target"),
                                                     linear_bias.defined() ? linear_bias.detach() : Tensor(),
                                                     class_weight, reduction, ignore);
    ember_test::expect_close(loss, reference, 1e-12, 1e-13, "reference");
    std::vector<Tensor> leaves = {input, linear_weight};
    if (linear_bias.defined()) leaves.push_back(linear_bias);
    const std::vector<Tensor> grads = autograd::grad({loss}, leaves, {at("gloss")});
    ember_test::expect_close(grads[0], at("ginput"), 1e-12, 1e-13, "ginput");
    ember_test::expect_close(grads[1], at("glinear_weight"), 1e-12, 1e-13, "glinear_weight");
    if (linear_bias.defined()) ember_test::expect_close(grads[2], at("glinear_bias"), 1e-12, 1e-13, "glinear_bias");
    ++ran;
  }
  EXPECT_EQ(ran, 11);
}

TEST(LinearCrossEntropyChunked, EveryChunkSizeGivesTheUnchunkedResult) {
  const Tensor x = randn({9, 5}, kFloat64), w = randn({7, 5}, kFloat64), b = randn({7}, kFloat64);
  const Tensor target = tensor(std::vector<int64_t>{0, 6, 3, -100, 2, 2, 5, 1, -100});
  for (const nn::Reduction reduction : {nn::Reduction::Mean, nn::Reduction::Sum, nn::Reduction::None}) {
    const Tensor reference = F::linear_cross_entropy(x, w, target, b, Tensor(), reduction);
    for (int64_t chunk = 1; chunk <= 10; ++chunk) {
      SCOPED_TRACE(chunk);
      const Tensor leaf = x.clone().requires_grad_();
      const Tensor loss = F::linear_cross_entropy(leaf, w, target, b, Tensor(), reduction, std::nullopt, 0.0,
                                                  nn::LinearCrossEntropyOptions{.batch_chunk_size = chunk});
      ember_test::expect_close(loss, reference, 1e-13, 1e-14, "loss");
      const Tensor gloss = ones_like(loss);
      const Tensor g = autograd::grad({loss}, {leaf}, {gloss})[0];
      const Tensor reference_leaf = x.clone().requires_grad_();
      const Tensor g_reference = autograd::grad(
          {F::linear_cross_entropy(reference_leaf, w, target, b, Tensor(), reduction)}, {reference_leaf}, {gloss})[0];
      ember_test::expect_close(g, g_reference, 1e-13, 1e-14, "grad");
    }
  }
}

TEST(LinearCrossEntropyChunked, FloatThirtyTwo) {
  const Tensor x = randn({6, 8}), w = randn({10, 8}), b = randn({10});
  const Tensor target = tensor(std::vector<int64_t>{0, 9, 3, 4, 2, 7});
  const Tensor reference = F::linear_cross_entropy(x, w, target, b);
  const Tensor chunked = F::linear_cross_entropy(x, w, target, b, Tensor(), nn::Reduction::Mean, std::nullopt, 0.0,
                                                 nn::LinearCrossEntropyOptions{.batch_chunk_size = 4});
  EXPECT_EQ(chunked.dtype(), kFloat32);
  ember_test::expect_close(chunked, reference, 1e-6, 1e-6, "loss");
}

TEST(LinearCrossEntropyChunked, HalfPrecisionAccumulatesInFloat32) {
  const Tensor x = randn({8, 4}), w = randn({6, 4});
  const Tensor target = tensor(std::vector<int64_t>{0, 5, 3, 4, 2, 1, 1, 0});
  const Tensor exact = F::linear_cross_entropy(x, w, target, Tensor(), Tensor(), nn::Reduction::None);
  for (const Dtype dtype : {kFloat16, kBFloat16}) {
    SCOPED_TRACE(std::string(dtype_name(dtype)));
    const Tensor leaf = x.to(dtype).requires_grad_();
    const Tensor loss =
        F::linear_cross_entropy(leaf, w.to(dtype), target, Tensor(), Tensor(), nn::Reduction::None, std::nullopt, 0.0,
                                nn::LinearCrossEntropyOptions{.batch_chunk_size = 3});
    EXPECT_EQ(loss.dtype(), dtype);  // PyTorch's: the input's dtype, though the chunks ran in float32
    const Tensor reference = F::linear_cross_entropy(x.to(dtype).to(kFloat32), w.to(dtype).to(kFloat32), target,
                                                     Tensor(), Tensor(), nn::Reduction::None)
                                 .to(dtype);
    // One rounding to the low precision apart at most (the float32 sums differ in order).
    ember_test::expect_close(loss.to(kFloat32), reference.to(kFloat32), 1e-2, 1e-2, "loss");
    loss.sum().backward();
    EXPECT_EQ(leaf.grad().dtype(), dtype);
  }
  EXPECT_EQ(exact.dtype(), kFloat32);
}

TEST(LinearCrossEntropyChunked, TheModuleTakesOptions) {
  manual_seed(4);
  nn::LinearCrossEntropyLoss chunked(5, 7,
                                     {.bias = true, .options = nn::LinearCrossEntropyOptions{.batch_chunk_size = 2}});
  manual_seed(4);
  nn::LinearCrossEntropyLoss plain(5, 7, {.bias = true});
  ASSERT_TRUE(chunked.options.has_value());
  const Tensor x = randn({5, 5}), target = tensor(std::vector<int64_t>{1, 0, 6, 3, 3});
  ember_test::expect_close(chunked(x, target), plain(x, target), 1e-6, 1e-6, "loss");
  chunked(x, target).backward();
  plain(x, target).backward();
  ember_test::expect_close(chunked.linear->weight.grad(), plain.linear->weight.grad(), 1e-5, 1e-6, "weight grad");
  ember_test::expect_close(chunked.linear->bias.grad(), plain.linear->bias.grad(), 1e-5, 1e-6, "bias grad");
}

TEST(LinearCrossEntropyChunked, PyTorchsMessages) {
  const auto& m = golden().metadata;
  const Tensor x = randn({8, 4}), w = randn({6, 4}), target = randint(0, 6, {8}, kInt64);
  const auto chunked_error = [&](nn::LinearCrossEntropyOptions options) {
    return error_of([&] {
      F::linear_cross_entropy(x, w, target, Tensor(), Tensor(), nn::Reduction::Mean, std::nullopt, 0.0, options);
    });
  };
  EXPECT_EQ(chunked_error({.acc_policy = "fast"}), m.at("message.acc_policy"));
  EXPECT_EQ(chunked_error({.chunking_method = "aspect_ratio:0"}), m.at("message.chunking_method"));
  EXPECT_EQ(chunked_error({.chunking_method = "square"}), m.at("message.chunking_method_name"));
  EXPECT_EQ(chunked_error({.batch_chunk_size = 0}), m.at("message.batch_chunk_size"));
  EXPECT_EQ(chunked_error({.acc_dtype = kInt64}), m.at("message.acc_dtype"));
  EXPECT_EQ(chunked_error({.batch_chunk_size = 3, .chunking_method = "aspect_ratio"}), m.at("message.conflict"));
  EXPECT_EQ(chunked_error({.acc_dtype = kFloat64}), m.at("message.acc_dtype_compatible"));
  EXPECT_EQ(chunked_error({.batch_chunk_size = 4, .chunking_method = "aspect_ratio"}), "no error");
  EXPECT_EQ(
      error_of([] { nn::LinearCrossEntropyLoss(4, 6, {.options = nn::LinearCrossEntropyOptions{.acc_policy = "x"}}); }),
      "invalid acc_policy: 'x'; expected one of 'auto', 'accurate', 'compact'");

  // Backward hands the precomputed gradients out once unless allow_retain_graph.
  const Tensor leaf = x.clone().requires_grad_();
  const Tensor loss = F::linear_cross_entropy(leaf, w, target, Tensor(), Tensor(), nn::Reduction::Mean, std::nullopt,
                                              0.0, nn::LinearCrossEntropyOptions{.batch_chunk_size = 3});
  loss.backward(Tensor(), true);
  EXPECT_EQ(error_of([&] { loss.backward(); }), m.at("message.twice"));
  const Tensor retained =
      F::linear_cross_entropy(leaf, w, target, Tensor(), Tensor(), nn::Reduction::Mean, std::nullopt, 0.0,
                              nn::LinearCrossEntropyOptions{.allow_retain_graph = true});
  leaf.grad().zero_();
  retained.backward(Tensor(), true);
  const Tensor first = leaf.grad().clone();
  retained.backward();
  ember_test::expect_close(leaf.grad(), first * 2, 1e-6, 1e-7, "second backward");
}

TEST(LinearCrossEntropyChunked, WarnsWhenTheOptionsCannotApply) {
  const auto& m = golden().metadata;
  std::vector<std::string> warnings;
  const WarningHandler previous = set_warning_handler([&](const std::string& w) { warnings.push_back(w); });
  const Tensor x = randn({8, 4}), target = randint(0, 6, {8}, kInt64);
  const Tensor smoothed = F::linear_cross_entropy(x, randn({6, 4}), target, randn({6}), Tensor(), nn::Reduction::Mean,
                                                  std::nullopt, 0.25, nn::LinearCrossEntropyOptions{});
  F::linear_cross_entropy(x, randn({6, 3, 4}), randint(0, 6, {8, 3}, kInt64), Tensor(), Tensor(), nn::Reduction::Sum,
                          std::nullopt, 0.0, nn::LinearCrossEntropyOptions{});
  set_warning_handler(previous);
  ASSERT_EQ(warnings.size(), 2u);
  EXPECT_EQ(warnings[0], m.at("message.warning_smoothing"));
  EXPECT_EQ(warnings[1], m.at("message.warning_out_features"));
  EXPECT_TRUE(smoothed.defined());
}

class LinearCrossEntropyDevice : public ember_test::DeviceTest {};

TEST_P(LinearCrossEntropyDevice, MatchesTheCpu) {
  nn::LinearCrossEntropyLoss m(6, 4, {.out_features = {3}, .bias = true, .label_smoothing = 0.1});
  m.to(kFloat64);
  const Tensor x = randn({2, 6}, kFloat64);
  const Tensor target = tensor(std::vector<int64_t>{0, 3, 1, 2, 2, 0}).reshape({2, 3});
  const Tensor cpu = m(x, target);
  m.to(device());
  const Tensor on_device = m(x.to(device()), target.to(device()));
  EXPECT_CLOSE_TO_CPU(on_device, cpu, 1e-14, 1e-14);
  on_device.backward();
  EXPECT_EQ(m.linear->weight.grad().device(), device());

  const Tensor input = randn({7, 6}, kFloat64), w = randn({5, 6}, kFloat64), b = randn({5}, kFloat64);
  const Tensor classes = tensor(std::vector<int64_t>{0, 4, 2, -100, 1, 1, 3});
  for (const nn::Reduction reduction : {nn::Reduction::Mean, nn::Reduction::None}) {
    const auto chunked = [&](const Tensor& features, Device d) {
      return F::linear_cross_entropy(features, w.to(d), classes.to(d), b.to(d), Tensor(), reduction, std::nullopt, 0.0,
                                     nn::LinearCrossEntropyOptions{.batch_chunk_size = 3});
    };
    const Tensor leaf = input.to(device()).requires_grad_(), cpu_leaf = input.clone().requires_grad_();
    const Tensor loss = chunked(leaf, device()), cpu_loss = chunked(cpu_leaf, Device(kCPU));
    EXPECT_CLOSE_TO_CPU(loss, cpu_loss, 1e-14, 1e-14);
    loss.sum().backward();
    cpu_loss.sum().backward();
    EXPECT_CLOSE_TO_CPU(leaf.grad(), cpu_leaf.grad(), 1e-14, 1e-14);
  }
}

EMBER_INSTANTIATE_DEVICE_SUITE(LinearCrossEntropyDevice);

}  // namespace
