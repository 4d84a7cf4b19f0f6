// nn::RMSNorm, InstanceNorm1d/2d/3d, LocalResponseNorm and BatchNorm3d and the functionals
// rms_norm, instance_norm and local_response_norm against PyTorch 2.15
// (tests/nn/golden/nn_layers_golden.safetensors from tools/gen_nn_layers_golden.py): outputs,
// input and parameter gradients and the running statistics after the forward pass, in float64
// and float32, through the layer (its state_dict loaded, in training or eval mode) and through
// the function; float64 gradchecks; parameter and buffer names; modes; PyTorch's warnings and
// error messages.
#include <gtest/gtest.h>

#include <cfloat>
#include <cmath>
#include <map>
#include <memory>
#include <optional>
#include <sstream>
#include <string>
#include <vector>

#include "ember/ember.h"
#include "ember/io/safetensors.h"
#include "ember/nn/normalization.h"
#include "support/collect_warnings.h"
#include "support/error_of.h"
#include "support/golden_cases.h"
#include "support/gradcheck.h"

namespace {

using namespace ember;
namespace nn = ember::nn;
namespace F = ember::nn::functional;
using ember_test::error_of;
using ember_test::GoldenCase;

const io::SafetensorsData& golden() {
  static const io::SafetensorsData data =
      io::load_safetensors(EMBER_SOURCE_DIR "/tests/nn/golden/nn_layers_golden.safetensors");
  return data;
}

const Tensor& at(const GoldenCase& c, const std::string& name) { return golden().at(c.prefix + name); }

bool is_norm(const std::string& kind) {
  return kind == "RMSNorm" || kind.starts_with("InstanceNorm") || kind == "LocalResponseNorm" || kind == "BatchNorm3d";
}

std::vector<GoldenCase> norm_cases() {
  std::vector<GoldenCase> out;
  for (GoldenCase& c : ember_test::golden_cases(golden().metadata)) {
    if (is_norm(c.kind)) out.push_back(std::move(c));
  }
  return out;
}

std::optional<double> optional_real(const GoldenCase& c, const std::string& key) {
  if (c.options.at(key) == "none") return std::nullopt;
  return c.real(key);
}

std::vector<int64_t> shape_of(const GoldenCase& c) {
  std::vector<int64_t> out;
  std::stringstream ss(c.options.at("shape"));
  for (std::string item; std::getline(ss, item, 'x');) out.push_back(std::stoll(item));
  return out;
}

std::shared_ptr<nn::Module> build(const GoldenCase& c) {
  if (c.kind == "RMSNorm") return std::make_shared<nn::RMSNorm>(shape_of(c), optional_real(c, "eps"), c.flag("affine"));
  if (c.kind == "LocalResponseNorm") {
    return std::make_shared<nn::LocalResponseNorm>(c.num("size"), c.real("alpha"), c.real("beta"), c.real("k"));
  }
  if (c.kind == "BatchNorm3d") {
    return std::make_shared<nn::BatchNorm3d>(c.num("features"), c.real("eps"), c.real("momentum"), c.flag("affine"),
                                             c.flag("track"));
  }
  const int64_t f = c.num("features");
  const double eps = c.real("eps");
  const std::optional<double> momentum = optional_real(c, "momentum");
  const bool affine = c.flag("affine"), track = c.flag("track"), bias = c.flag("bias");
  if (c.kind == "InstanceNorm1d") return std::make_shared<nn::InstanceNorm1d>(f, eps, momentum, affine, track, bias);
  if (c.kind == "InstanceNorm2d") return std::make_shared<nn::InstanceNorm2d>(f, eps, momentum, affine, track, bias);
  return std::make_shared<nn::InstanceNorm3d>(f, eps, momentum, affine, track, bias);
}

/// The golden state before the forward pass ("s.<key>"), floating tensors in `dtype`.
nn::StateDict state_of(const GoldenCase& c, Dtype dtype, const std::string& series = "s.") {
  nn::StateDict state;
  for (const std::string& key : c.keys) {
    const Tensor& t = at(c, series + key);
    // Copies, so that the function's in-place updates and requires_grad_() leave the golden alone.
    state.insert(key, t.is_floating_point() ? t.to(dtype, false, /*copy=*/true) : t.clone());
  }
  return state;
}

/// The case through the function, with the golden state as tensors of its own (which the
/// function updates as the layer would). Returns the output; `state` holds the tensors.
Tensor run_functional(const GoldenCase& c, const Tensor& x, std::map<std::string, Tensor>& state) {
  auto get = [&](const char* key) { return state.contains(key) ? state.at(key) : Tensor(); };
  if (c.kind == "RMSNorm") return F::rms_norm(x, shape_of(c), get("weight"), optional_real(c, "eps"));
  if (c.kind == "LocalResponseNorm") {
    return F::local_response_norm(x, c.num("size"), c.real("alpha"), c.real("beta"), c.real("k"));
  }
  const bool train = c.flag("train"), track = c.flag("track");
  if (c.kind == "BatchNorm3d") {
    return F::batch_norm(x, get("running_mean"), get("running_var"), get("weight"), get("bias"), train || !track,
                         c.real("momentum"), c.real("eps"));
  }
  const int64_t no_batch_dim = c.kind == "InstanceNorm1d" ? 2 : c.kind == "InstanceNorm2d" ? 3 : 4;
  const bool unbatched = x.dim() == no_batch_dim;
  const double momentum = optional_real(c, "momentum").value_or(0.0);
  Tensor y = F::instance_norm(unbatched ? x.unsqueeze(0) : x, get("running_mean"), get("running_var"), get("weight"),
                              get("bias"), train || !track, momentum, c.real("eps"));
  return unbatched ? y.squeeze(0) : y;
}

void check_goldens(Dtype dtype, double tol, bool layer) {
  const std::vector<GoldenCase> cases = norm_cases();
  ASSERT_EQ(cases.size(), 21u);
  for (const GoldenCase& c : cases) {
    SCOPED_TRACE(c.description + (layer ? " (layer) in " : " (function) in ") + std::string(dtype_name(dtype)));
    Tensor x = at(c, "x").to(dtype).clone().requires_grad_();
    const Tensor gy = at(c, "gy").to(dtype);
    Tensor y;
    std::map<std::string, Tensor> params, buffers;
    if (layer) {
      std::shared_ptr<nn::Module> m = build(c);
      EXPECT_EQ(m->state_dict().keys(), c.keys);
      m->to(dtype);
      m->load_state_dict(state_of(c, dtype));
      m->train(c.flag("train"));
      y = m->forward(x);
      for (const auto& [name, p] : m->named_parameters()) params[name] = p;
      for (const auto& [name, b] : m->named_buffers()) buffers[name] = b;
    } else {
      std::map<std::string, Tensor> state;
      for (const auto& [key, t] : state_of(c, dtype)) state[key] = t;
      for (auto& [key, t] : state) {
        if (key == "weight" || key == "bias") {
          t.requires_grad_();
          params[key] = t;
        } else {
          buffers[key] = t;
        }
      }
      y = run_functional(c, x, state);
    }
    ASSERT_EQ(y.dtype(), dtype);
    (y * gy).sum().backward();
    ember_test::expect_close(y, at(c, "y"), tol, tol, "output");
    ember_test::expect_close(x.grad(), at(c, "gx"), tol, tol, "grad of the input");
    for (const auto& [name, p] : params)
      ember_test::expect_close(p.grad(), at(c, "g." + name), tol, tol, "grad of " + name);
    for (const auto& [name, b] : buffers) {
      // num_batches_tracked: BatchNorm3d counts training steps; instance norm never does.
      if (name == "num_batches_tracked" && !layer) continue;
      ember_test::expect_close(b, at(c, "after." + name), tol, tol, name + " after the step");
    }
  }
}

TEST(NormalizationGolden, LayersFloat64) { check_goldens(kFloat64, 1e-12, true); }
TEST(NormalizationGolden, FunctionsFloat64) { check_goldens(kFloat64, 1e-12, false); }
TEST(NormalizationGolden, LayersFloat32) { check_goldens(kFloat32, 1e-5, true); }
TEST(NormalizationGolden, FunctionsFloat32) { check_goldens(kFloat32, 1e-5, false); }

// ---------------------------------------------------------------- RMSNorm

TEST(RMSNorm, ParametersAndDefaults) {
  nn::RMSNorm norm({2, 3});
  EXPECT_EQ(norm.name(), "RMSNorm");
  EXPECT_EQ(norm.state_dict().keys(), std::vector<std::string>{"weight"});
  EXPECT_EQ(norm.weight.sizes().vec(), (std::vector<int64_t>{2, 3}));
  EXPECT_TRUE(equal(norm.weight.detach(), ones({2, 3})));
  EXPECT_TRUE(norm.weight.requires_grad());
  EXPECT_FALSE(norm.eps.has_value());
  EXPECT_TRUE(norm.elementwise_affine);
  nn::RMSNorm plain({4}, 1e-3, /*elementwise_affine=*/false);
  EXPECT_FALSE(plain.weight.defined());
  EXPECT_TRUE(plain.state_dict().keys().empty());
  EXPECT_EQ(*plain.eps, 1e-3);
  {
    NoGradGuard no_grad;
    norm.weight.mul_(tensor({3.0f}));
  }
  norm.reset_parameters();
  EXPECT_TRUE(equal(norm.weight.detach(), ones({2, 3})));
}

TEST(RMSNorm, DefaultEpsIsTheComputationTypesEpsilon) {
  // Values so small that eps decides the result: x / sqrt(mean(x^2) + eps).
  Tensor x64 = full({1, 2}, 1e-9, kFloat64);
  const double want64 = 1e-9 / std::sqrt(1e-18 + DBL_EPSILON);
  EXPECT_NEAR(F::rms_norm(x64, {2})[0][0].item<double>(), want64, 1e-12 * want64);
  Tensor x32 = full({1, 2}, 1e-4f, kFloat32);
  const double want32 = 1e-4 / std::sqrt(1e-8 + FLT_EPSILON);
  EXPECT_NEAR(F::rms_norm(x32, {2})[0][0].item<double>(), want32, 1e-5 * want32);
  // float16 computes in float32 with float32's epsilon (not float16's 9.8e-4), then rounds.
  Tensor x16 = full({1, 2}, 1e-2, kFloat16);
  Tensor y16 = F::rms_norm(x16, {2});
  EXPECT_EQ(y16.dtype(), kFloat16);
  const Tensor xf = x16.to(kFloat32);
  const Tensor want16 = (xf * rsqrt(xf * xf + FLT_EPSILON)).to(kFloat16);
  EXPECT_TRUE(equal(y16, want16)) << y16 << want16;
  // A given eps.
  EXPECT_NEAR(F::rms_norm(x64, {2}, Tensor(), 1e-16)[0][0].item<double>(), 1e-9 / std::sqrt(1e-18 + 1e-16), 1e-12);
}

TEST(RMSNorm, WeightPromotesAsAProduct) {
  Tensor x = randn({3, 4}, kFloat64);
  EXPECT_EQ(F::rms_norm(x, {4}, ones({4}, kFloat32)).dtype(), kFloat64);
  EXPECT_EQ(F::rms_norm(x.to(kFloat32), {4}, ones({4}, kFloat64)).dtype(), kFloat64);
  EXPECT_EQ(F::rms_norm(zeros({0, 3}), {3}).sizes().vec(), (std::vector<int64_t>{0, 3}));
}

TEST(RMSNorm, Gradcheck) {
  manual_seed(11);
  test::gradcheck("rms_norm weight",
                  [](const std::vector<Tensor>& in) {
                    return F::rms_norm(in[0], {2, 3}, in[1], 1e-3);
                  },
                  {randn({2, 2, 3}), randn({2, 3})});
  test::gradcheck("rms_norm", [](const std::vector<Tensor>& in) { return F::rms_norm(in[0], {4}); }, {randn({3, 4})});
  test::gradgradcheck("rms_norm", [](const std::vector<Tensor>& in) { return F::rms_norm(in[0], {3}, in[1]); },
                      {randn({2, 3}), randn({3})});
}

TEST(RMSNorm, ErrorsArePyTorchs) {
  EXPECT_EQ(error_of([] {
              F::rms_norm(randn({2, 3}), {4});
            }),
            "Given normalized_shape=[4], expected input with shape [*4], but got input of size[2, 3]");
  EXPECT_EQ(error_of([] {
              nn::RMSNorm({2, 3})(randn({3, 3}));
            }),
            "Given normalized_shape=[2, 3], expected input with shape [*2, 3], but got input of size[3, 3]");
  EXPECT_EQ(error_of([] {
              F::rms_norm(randn({2, 3}), {});
            }),
            "Expected normalized_shape to be at least 1-dimensional, i.e., containing at least one element, but got "
            "normalized_shape = []");
  EXPECT_EQ(error_of([] {
              F::rms_norm(randn({3}), {2, 3}, randn({5}));
            }),
            "Expected weight to be of same shape as normalized_shape, but got weight of shape [5] and "
            "normalized_shape = [2, 3]");
  EXPECT_EQ(error_of([] {
              F::rms_norm(randn({3}), {2, 3});
            }),
            "Input tensor must have at least 2 dimensions, but got 1");
  EXPECT_EQ(error_of([] { F::rms_norm(arange(6).reshape({2, 3}), {3}); }), "\"rms_norm\" not implemented for 'Long'");
}

// ---------------------------------------------------------------- InstanceNorm

TEST(InstanceNorm, ParametersBuffersAndDefaults) {
  nn::InstanceNorm2d plain(3);
  EXPECT_EQ(plain.name(), "InstanceNorm2d");
  EXPECT_EQ(plain.eps, 1e-5);
  EXPECT_EQ(plain.momentum, 0.1);
  EXPECT_FALSE(plain.affine);
  EXPECT_FALSE(plain.track_running_stats);
  EXPECT_TRUE(plain.state_dict().keys().empty());
  nn::InstanceNorm1d full_(4, 1e-3, 0.2, /*affine=*/true, /*track_running_stats=*/true);
  EXPECT_EQ(full_.name(), "InstanceNorm1d");
  EXPECT_EQ(full_.state_dict().keys(),
            (std::vector<std::string>{"weight", "bias", "running_mean", "running_var", "num_batches_tracked"}));
  EXPECT_TRUE(equal(full_.weight.detach(), ones({4})));
  EXPECT_TRUE(equal(full_.bias.detach(), zeros({4})));
  EXPECT_TRUE(equal(full_.running_mean, zeros({4})));
  EXPECT_TRUE(equal(full_.running_var, ones({4})));
  EXPECT_EQ(full_.num_batches_tracked.dtype(), kInt64);
  EXPECT_EQ(full_.num_batches_tracked.dim(), 0);
  nn::InstanceNorm3d no_bias(2, 1e-5, 0.1, /*affine=*/true, false, /*bias=*/false);
  EXPECT_EQ(no_bias.name(), "InstanceNorm3d");
  EXPECT_EQ(no_bias.state_dict().keys(), std::vector<std::string>{"weight"});
  EXPECT_FALSE(no_bias.bias.defined());
}

TEST(InstanceNorm, TrainingUpdatesRunningStatsButNotTheCount) {
  manual_seed(12);
  nn::InstanceNorm1d norm(3, 1e-5, 0.1, false, /*track_running_stats=*/true);
  Tensor x = randn({4, 3, 6}, kFloat64) * 2 + 1;
  norm.to(kFloat64);
  Tensor y = norm(x);
  // Each instance is normalised by its own statistics.
  Tensor want = (x - x.mean({2}, true)) / sqrt(x.var({2}, 0, true) + 1e-5);
  EXPECT_TRUE(allclose(y, want, 1e-12, 1e-12));
  // running = 0.9 running + 0.1 * (the batch's average of the instances' mean / unbiased variance)
  EXPECT_TRUE(allclose(norm.running_mean, 0.1 * x.mean({2}).mean({0}), 1e-12, 1e-12));
  EXPECT_TRUE(allclose(norm.running_var, 0.9 + 0.1 * x.var({2}).mean({0}), 1e-12, 1e-12));
  EXPECT_EQ(norm.num_batches_tracked.item<int64_t>(), 0);
  // eval() uses them.
  norm.eval();
  Tensor z = norm(x);
  Tensor want_eval = (x - norm.running_mean.view({1, 3, 1})) / sqrt(norm.running_var.view({1, 3, 1}) + 1e-5);
  EXPECT_TRUE(allclose(z, want_eval, 1e-12, 1e-12));
  // Without tracking, eval() still uses the instance statistics.
  nn::InstanceNorm1d untracked(3);
  untracked.to(kFloat64);
  untracked.eval();
  EXPECT_TRUE(allclose(untracked(x), want, 1e-12, 1e-12));
  // reset_running_stats() goes back to the defaults.
  norm.reset_running_stats();
  EXPECT_TRUE(equal(norm.running_mean, zeros({3}, kFloat64)));
  EXPECT_TRUE(equal(norm.running_var, ones({3}, kFloat64)));
}

TEST(InstanceNorm, UnbatchedInputIsABatchOfOne) {
  manual_seed(13);
  nn::InstanceNorm2d norm(2, 1e-5, 0.1, /*affine=*/true, /*track_running_stats=*/true);
  {
    NoGradGuard no_grad;
    norm.weight.copy_(tensor({2.0f, -1.0f}));
    norm.bias.copy_(tensor({0.5f, 0.25f}));
  }
  Tensor x = randn({2, 3, 4});
  nn::InstanceNorm2d twin(2, 1e-5, 0.1, true, true);
  twin.load_state_dict(norm.state_dict());
  Tensor y = norm(x);
  EXPECT_EQ(y.sizes().vec(), (std::vector<int64_t>{2, 3, 4}));
  EXPECT_TRUE(allclose(y, twin(x.unsqueeze(0)).squeeze(0), 0, 0));
  EXPECT_TRUE(allclose(norm.running_mean, twin.running_mean, 0, 0));
}

TEST(InstanceNorm, Gradcheck) {
  manual_seed(14);
  test::gradcheck("instance_norm affine",
                  [](const std::vector<Tensor>& in) {
                    return F::instance_norm(in[0], Tensor(), Tensor(), in[1], in[2], true, 0.1, 1e-5);
                  },
                  {randn({2, 3, 5}), randn({3}), randn({3})});
  test::gradcheck("instance_norm running stats",
                  [](const std::vector<Tensor>& in) {
                    // Fresh statistics each call: the function updates them.
                    return F::instance_norm(in[0], full({2}, 0.3, kFloat64), full({2}, 1.7, kFloat64), in[1], Tensor(),
                                            true, 0.1, 1e-5);
                  },
                  {randn({2, 2, 2, 3}), randn({2})});
  test::gradcheck("instance_norm eval",
                  [](const std::vector<Tensor>& in) {
                    return F::instance_norm(in[0], full({2}, 0.3, kFloat64), full({2}, 1.7, kFloat64), in[1], in[2],
                                            false, 0.1, 1e-5);
                  },
                  {randn({2, 2, 4}), randn({2}), randn({2})});
  test::gradgradcheck("instance_norm",
                      [](const std::vector<Tensor>& in) {
                        return F::instance_norm(in[0], Tensor(), Tensor(), in[1], Tensor(), true, 0.1, 1e-5);
                      },
                      {randn({2, 2, 3}), randn({2})});
}

TEST(InstanceNorm, NumFeaturesMismatchWarnsWithoutAffineAndFailsWithIt) {
  Tensor x = randn({2, 4, 5});
  {
    ember_test::CollectWarnings warnings;
    nn::InstanceNorm1d norm(3);
    EXPECT_EQ(norm(x).sizes().vec(), x.sizes().vec());
    ASSERT_EQ(warnings.messages().size(), 1u);
    EXPECT_EQ(warnings.messages()[0],
              "input's size at dim=1 does not match num_features. You can silence this warning by not passing in "
              "num_features, which is not used because affine=False");
  }
  EXPECT_EQ(error_of([&] { nn::InstanceNorm1d(3, 1e-5, 0.1, true)(x); }),
            "expected input's size at dim=1 to match num_features (3), but got: 4.");
  // The feature dimension of an unbatched input is 0.
  EXPECT_EQ(error_of([] {
              nn::InstanceNorm2d(3, 1e-5, 0.1, true)(randn({2, 3, 4}));
            }),
            "expected input's size at dim=0 to match num_features (3), but got: 2.");
}

TEST(InstanceNorm, ErrorsArePyTorchs) {
  EXPECT_EQ(error_of([] { nn::InstanceNorm1d(3)(randn({2, 3, 4, 5})); }), "expected 2D or 3D input (got 4D input)");
  EXPECT_EQ(error_of([] { nn::InstanceNorm2d(3)(randn({2, 3})); }), "expected 3D or 4D input (got 2D input)");
  EXPECT_EQ(error_of([] { nn::InstanceNorm3d(3)(randn({2, 3})); }), "expected 4D or 5D input (got 2D input)");
  EXPECT_EQ(error_of([] {
              F::instance_norm(randn({2, 3, 1}));
            }),
            "Expected more than 1 spatial element when training, got input size torch.Size([2, 3, 1])");
  EXPECT_EQ(error_of([] {
              nn::InstanceNorm1d(3, 1e-5, 0.1, false, true)(randn({3, 1}));
            }),
            "Expected more than 1 spatial element when training, got input size torch.Size([1, 3, 1])");
  // In eval() with running statistics a single value per instance is fine.
  nn::InstanceNorm1d tracked(3, 1e-5, 0.1, false, true);
  tracked.eval();
  EXPECT_EQ(tracked(randn({2, 3, 1})).sizes().vec(), (std::vector<int64_t>{2, 3, 1}));
  EXPECT_EQ(error_of([] {
              F::instance_norm(randn({2, 3, 4}), Tensor(), Tensor(), Tensor(), Tensor(), false);
            }),
            "Expected running_mean and running_var to be defined when use_input_stats is false");
  EXPECT_EQ(error_of([] {
              F::instance_norm(randn({2, 3, 4}), zeros({3}));
            }),
            "running_mean and running_var must either both be None or neither be None");
  EXPECT_EQ(error_of([] {
              F::instance_norm(randn({2, 3, 4}), zeros({2}), ones({2}));
            }),
            "running_mean should contain 6 elements not 4");
  EXPECT_EQ(error_of([] {
              F::instance_norm(randn({2, 3, 4}), Tensor(), Tensor(), ones({2}));
            }),
            "weight should contain 6 elements not 4");
  EXPECT_EQ(error_of([] { F::instance_norm(randn({3}), zeros({3}), ones({3}), Tensor(), Tensor(), false); }),
            "Dimension out of range (expected to be in range of [-1, 0], but got 1)");
  EXPECT_EQ(error_of([] {
              F::instance_norm(randint(0, 5, {2, 3, 4}, kInt32));
            }),
            "\"batch_norm\" not implemented for 'Int'");
}

// ---------------------------------------------------------------- LocalResponseNorm

TEST(LocalResponseNorm, ArgumentsAndDefinition) {
  nn::LocalResponseNorm lrn(3);
  EXPECT_EQ(lrn.name(), "LocalResponseNorm");
  EXPECT_EQ(lrn.size, 3);
  EXPECT_EQ(lrn.alpha, 1e-4);
  EXPECT_EQ(lrn.beta, 0.75);
  EXPECT_EQ(lrn.k, 1.0);
  EXPECT_TRUE(lrn.state_dict().keys().empty());
  // b[c] = a[c] / (k + alpha / n * sum over c' in [c - n/2, c + (n-1)/2] of a[c']^2)^beta, by hand.
  manual_seed(15);
  const int64_t channels = 5, n = 4;
  Tensor x = randn({2, channels, 3}, kFloat64);
  Tensor y = F::local_response_norm(x, n, 0.5, 0.6, 1.5);
  for (int64_t c = 0; c < channels; ++c) {
    Tensor sum = zeros({2, 3}, kFloat64);
    for (int64_t j = c - n / 2; j <= c + (n - 1) / 2; ++j) {
      if (j >= 0 && j < channels) sum = sum + x.select(1, j) * x.select(1, j);
    }
    Tensor want = x.select(1, c) / pow(sum * (0.5 / n) + 1.5, 0.6);
    EXPECT_TRUE(allclose(y.select(1, c), want, 1e-13, 1e-13)) << c;
  }
  // An empty input is returned as it is.
  Tensor empty_input = zeros({0, 3, 4});
  EXPECT_TRUE(F::local_response_norm(empty_input, 2).is_same(empty_input));
  // Strided inputs.
  Tensor strided = randn({2, 4, 3, 5}, kFloat64).transpose(2, 3);
  EXPECT_TRUE(allclose(F::local_response_norm(strided, 3, 0.1), F::local_response_norm(strided.contiguous(), 3, 0.1),
                       1e-14, 1e-14));
}

TEST(LocalResponseNorm, Gradcheck) {
  manual_seed(16);
  test::gradcheck("local_response_norm 3-D",
                  [](const std::vector<Tensor>& in) { return F::local_response_norm(in[0], 3, 0.5, 0.75, 1.0); },
                  {randn({2, 4, 3})});
  test::gradcheck("local_response_norm 4-D",
                  [](const std::vector<Tensor>& in) { return F::local_response_norm(in[0], 2, 0.3, 0.5, 2.0); },
                  {randn({1, 3, 2, 2})});
  test::gradgradcheck("local_response_norm",
                      [](const std::vector<Tensor>& in) { return F::local_response_norm(in[0], 3, 0.5); },
                      {randn({1, 3, 2})});
}

TEST(LocalResponseNorm, ErrorsArePyTorchs) {
  EXPECT_EQ(error_of([] {
              F::local_response_norm(randn({2, 3}), 2);
            }),
            "Expected 3D or higher dimensionality                          input (got 2 dimensions)");
  EXPECT_EQ(error_of([] {
              nn::LocalResponseNorm(0)(randn({2, 3, 4}));
            }),
            "kernel size should be greater than zero, but got kH: 0 kW: 1");
  EXPECT_EQ(error_of([] {
              F::local_response_norm(randn({2, 3, 4, 5}), -1);
            }),
            "kernel size should be greater than zero, but got kT: -1 kH: 1 kW: 1");
  EXPECT_EQ(error_of([] {
              F::local_response_norm(randint(0, 5, {2, 3, 4}, kInt32), 2);
            }),
            "\"avg_pool2d\" not implemented for 'Int'");
  EXPECT_EQ(error_of([] {
              F::local_response_norm(randint(0, 5, {2, 3, 4, 5}, kInt32), 2);
            }),
            "\"avg_pool3d_out_frame\" not implemented for 'Int'");
}

// ---------------------------------------------------------------- BatchNorm3d

TEST(BatchNorm3d, IsABatchNormOfFiveDimensions) {
  nn::BatchNorm3d bn(3);
  EXPECT_EQ(bn.name(), "BatchNorm3d");
  EXPECT_EQ(bn.state_dict().keys(),
            (std::vector<std::string>{"weight", "bias", "running_mean", "running_var", "num_batches_tracked"}));
  EXPECT_EQ(bn.momentum, 0.1);
  manual_seed(17);
  Tensor x = randn({2, 3, 2, 2, 2});
  Tensor y = bn(x);
  EXPECT_EQ(bn.num_batches_tracked.item<int64_t>(), 1);
  std::vector<int64_t> dims{0, 2, 3, 4};
  EXPECT_TRUE(allclose(y, (x - x.mean(dims, true)) / sqrt(x.var(dims, 0, true) + 1e-5), 1e-5, 1e-5));
  EXPECT_EQ(error_of([&] { bn(randn({2, 3, 4})); }), "expected 5D input (got 3D input)");
  EXPECT_EQ(error_of([&] { bn(randn({2, 3, 4, 4})); }), "expected 5D input (got 4D input)");
}

}  // namespace
