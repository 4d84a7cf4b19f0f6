#pragma once
// What tests/models/ shares with tools/gen_models_golden.py: the pattern() weights both sides
// compute bit for bit (so the goldens store no weights), and comparisons of whole models.
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <memory>
#include <optional>
#include <set>
#include <string>
#include <vector>

#include "ember/ember.h"
#include "ember/nn/functional.h"

namespace ember_models_test {

using ember::Tensor;

/// offset + scale * (u - 1/2), u = ((i A + t B) mod M) / M: tools/gen_models_golden.py's pattern().
inline Tensor pattern(ember::IntList sizes, int64_t t, double offset, double scale) {
  constexpr int64_t A = 40503, B = 7919, M = 65521;
  int64_t n = 1;
  for (int64_t s : sizes) n *= s;
  std::vector<double> values(static_cast<size_t>(n));
  for (int64_t i = 0; i < n; ++i) {
    const double u = static_cast<double>((i * A + t * B) % M) / static_cast<double>(M);
    values[static_cast<size_t>(i)] = offset + scale * (u - 0.5);
  }
  return ember::tensor(values, ember::TensorOptions().dtype(ember::kFloat64)).view(sizes);
}

/// The script's pattern_for: normalisation weights and running variances near 1, biases and
/// means near 0, matrices scaled by 2 / sqrt(fan_in).
inline Tensor pattern_for(const std::string& key, ember::IntList sizes, int64_t t) {
  auto ends_with = [&](const std::string& suffix) {
    return key.size() >= suffix.size() && key.compare(key.size() - suffix.size(), suffix.size(), suffix) == 0;
  };
  if (ends_with("running_var")) return pattern(sizes, t, 1.2, 0.4);
  if (sizes.size() == 1) return pattern(sizes, t, ends_with("weight") ? 1.0 : 0.0, 0.4);
  int64_t fan_in = 1;
  for (size_t d = 1; d < sizes.size(); ++d) fan_in *= sizes[d];
  return pattern(sizes, t, 0.0, 2.0 / std::sqrt(static_cast<double>(fan_in)));
}

/// Every floating-point state_dict entry of a float64 model, in order, shared tensors once.
inline void fill_state(ember::nn::Module& model) {
  ember::NoGradGuard no_grad;
  std::set<const void*> seen;
  int64_t t = 0;
  for (const auto& [key, value] : model.state_dict()) {
    if (!ember::is_floating_point(value.dtype()) || !seen.insert(value.data_ptr()).second) continue;
    Tensor shared = value;  // a handle on the model's storage
    shared.copy_(pattern_for(key, value.sizes(), t));
    ++t;
  }
}

/// "key:d0,d1;..." as the script writes the reference's state_dict.
inline std::vector<std::string> keys_and_shapes(const ember::nn::StateDict& state) {
  std::vector<std::string> out;
  for (const auto& [key, value] : state) {
    std::string item = key + ":";
    for (int64_t d = 0; d < value.dim(); ++d) item += (d ? "," : "") + std::to_string(value.size(d));
    out.push_back(item);
  }
  return out;
}

inline std::vector<std::string> split(const std::string& text, char separator) {
  std::vector<std::string> out;
  size_t start = 0;
  while (start <= text.size()) {
    const size_t end = std::min(text.find(separator, start), text.size());
    out.push_back(text.substr(start, end - start));
    start = end + 1;
  }
  return out;
}

/// The script's packed(): one float64 tensor per entry of `like` (in order), shaped like it.
inline std::vector<Tensor> unpack(const Tensor& packed, const std::vector<std::pair<std::string, Tensor>>& like) {
  std::vector<Tensor> out;
  int64_t offset = 0;
  for (const auto& item : like) {
    const int64_t n = item.second.numel();
    if (offset + n > packed.numel()) break;
    out.push_back(packed.narrow(0, offset, n).view(item.second.sizes()));
    offset += n;
  }
  EXPECT_EQ(offset, packed.numel());
  EXPECT_EQ(out.size(), like.size());
  out.resize(like.size());
  return out;
}

/// max |actual - expected| / max |expected| (the whole tensor's scale), the scale at least 1e-6:
/// a gradient that is zero in exact arithmetic (the stem's BatchNorm bias when every consumer
/// is a conv followed by a train-mode BatchNorm) comes out as rounding noise of 1e-18 on both
/// sides; such tensors are held to 1e-16 absolute instead (the models' losses are about 1).
inline double relative_error(const Tensor& actual, const Tensor& expected) {
  const Tensor e = expected.to(ember::kFloat64), a = actual.detach().to(ember::kFloat64);
  EXPECT_EQ(a.sizes().vec(), e.sizes().vec());
  if (a.sizes().vec() != e.sizes().vec()) return INFINITY;
  const double scale = std::max(e.abs().max().item<double>(), 1e-6);
  return (a - e).abs().max().item<double>() / scale;
}

}  // namespace ember_models_test

namespace ember_models_test {

/// Compares a freshly built float32 model with the script's init_summary (per parameter: its
/// sum in float64, then its first four values): the same draws as PyTorch after manual_seed(0).
template <typename Golden>
void expect_init_summary(const ember::nn::Module& model, const Golden& golden, const std::string& prefix) {
  int64_t checked = 0;
  for (const auto& [key, p] : model.named_parameters()) {
    const Tensor expected = golden.at(prefix + "." + key);
    const Tensor flat = p.detach().reshape({-1}).to(ember::kFloat64);
    const double sum = flat.sum().item<double>(), magnitude = flat.abs().sum().item<double>();
    // To float32's rounding: a few values land one unit in the last place away (the scale of a
    // distribution is computed in another precision), the draws themselves are the same.
    EXPECT_NEAR(sum, expected[0].template item<double>(), 1e-7 * (magnitude + 1.0)) << key;
    for (int64_t i = 0; i < std::min<int64_t>(4, flat.numel()); ++i) {
      const double want = expected[i + 1].template item<double>();
      EXPECT_NEAR(flat[i].template item<double>(), want, 2e-7 * std::abs(want)) << key << "[" << i << "]";
    }
    ++checked;
  }
  EXPECT_GT(checked, 10);
}

// Summaries, for models whose full gradients would make the golden too large (MobileNetV2,
// EfficientNet: 17-32 MB): the number of entries a summary samples (the scripts' summary()).
constexpr int64_t kSamples = 16;

/// Compares `actual` with its summary in `packed` at `offset` (advanced past it), as the script's
/// summary() makes it: [sum, sum |t|, up to 16 entries every max(1, n / 16)]: the sum and the sum of
/// magnitudes to 1e-10 of that sum, the sampled entries to 1e-10 of their largest. Gradients that
/// are zero in exact arithmetic (the bias of a BatchNorm whose every consumer is a convolution
/// followed by a train-mode BatchNorm) come out as rounding noise near 1e-15 on both sides: the
/// scales are at least 1e-3 (1e-13 absolute; the losses are about 1, other gradients up to 1e5).
inline void expect_summary(const Tensor& actual, const Tensor& packed, int64_t& offset, const std::string& what) {
  constexpr double tolerance = 1e-10, floor = 1e-3;
  const Tensor flat = actual.detach().reshape({-1}).to(ember::kFloat64);
  const int64_t n = flat.numel(), length = 2 + std::min(n, kSamples);
  ASSERT_LE(offset + length, packed.numel()) << what;
  const Tensor expected = packed.narrow(0, offset, length);
  offset += length;
  const double magnitude = std::max(expected[1].item<double>(), floor);
  EXPECT_LE(std::abs(flat.sum().item<double>() - expected[0].item<double>()), tolerance * magnitude) << what;
  EXPECT_LE(std::abs(flat.abs().sum().item<double>() - expected[1].item<double>()), tolerance * magnitude) << what;
  const int64_t step = std::max<int64_t>(1, n / kSamples);
  const Tensor samples = flat.slice(0, 0, std::min(n, step * kSamples), step);
  const Tensor expected_samples = expected.narrow(0, 2, length - 2);
  ASSERT_EQ(samples.numel(), expected_samples.numel()) << what;
  const double scale = std::max(expected_samples.abs().max().item<double>(), floor);
  EXPECT_LE((samples - expected_samples).abs().max().item<double>(), tolerance * scale) << what;
}

inline void expect_summaries(const std::vector<std::pair<std::string, Tensor>>& items, const Tensor& packed,
                             bool grads) {
  int64_t offset = 0;
  for (const auto& [key, value] : items) {
    const Tensor actual = grads ? value.grad() : value;
    ASSERT_TRUE(actual.defined()) << key;
    expect_summary(actual, packed, offset, key);
  }
  EXPECT_EQ(offset, packed.numel());
}

/// The scripts' calibrate_running_stats: every BatchNorm2d's running statistics from one batch in
/// train mode with momentum None (a cumulative average), then momentum 0.1 again.
inline void calibrate_running_stats(ember::nn::Module& model, const Tensor& x) {
  ember::NoGradGuard no_grad;
  model.train();
  std::vector<std::shared_ptr<ember::nn::BatchNorm2d>> norms;
  for (const auto& module : model.modules()) {
    if (auto bn = std::dynamic_pointer_cast<ember::nn::BatchNorm2d>(module)) norms.push_back(bn);
  }
  for (const auto& bn : norms) {
    bn->reset_running_stats();
    bn->momentum = std::nullopt;
  }
  model(x);
  for (const auto& bn : norms) bn->momentum = 0.1;
}

/// The torchvision classifiers' parity against gradient summaries (MobileNetV2, EfficientNet):
/// `model` (dropout and stochastic depth 0) in float64 with pattern() weights, in train mode on
/// the pattern input [2, 3, 64, 64]: logits, loss, summaries of the input's and every parameter's
/// gradient and of the buffers after the step. Then `evaluated` (the defaults, all inactive in
/// eval mode) holding model's state after calibrate_running_stats on 4 other images: logits,
/// loss and the parameters' gradients in eval mode. Cross-entropy against the golden's target.
template <typename Golden>
void expect_classifier_parity(ember::nn::Module& model, ember::nn::Module& evaluated, const Golden& g,
                              size_t min_parameters) {
  namespace F = ember::nn::functional;
  model.to(ember::kFloat64);
  fill_state(model);
  const Tensor x = pattern({2, 3, 64, 64}, 1000, 0.0, 4.0);
  const Tensor target = g.at("target");

  model.train();
  const Tensor input = x.clone().requires_grad_(true);
  Tensor out = model(input);
  Tensor loss = F::cross_entropy(out, target);
  loss.backward();
  EXPECT_LT(relative_error(out, g.at("train.out")), 1e-10);
  EXPECT_LT(relative_error(loss, g.at("train.loss")), 1e-12);
  int64_t offset = 0;
  expect_summary(input.grad(), g.at("train.gx"), offset, "input");
  expect_summaries(model.named_parameters(), g.at("train.grads"), true);
  expect_summaries(model.named_buffers(), g.at("train.after"), false);

  calibrate_running_stats(model, pattern({4, 3, 64, 64}, 2000, 0.0, 4.0));
  evaluated.to(ember::kFloat64);
  EXPECT_EQ(evaluated.load_state_dict(model.state_dict()).to_string(), "<All keys matched successfully>");
  evaluated.eval();
  out = evaluated(x);
  loss = F::cross_entropy(out, target);
  loss.backward();
  EXPECT_LT(relative_error(out, g.at("eval.out")), 1e-10);
  EXPECT_LT(relative_error(loss, g.at("eval.loss")), 1e-12);
  expect_summaries(evaluated.named_parameters(), g.at("eval.grads"), true);
  EXPECT_GT(evaluated.named_parameters().size(), min_parameters);
}

}  // namespace ember_models_test
