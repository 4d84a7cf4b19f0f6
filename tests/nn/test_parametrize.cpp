// Parametrizations (ember/nn/parametrize.h): weight_norm and spectral_norm on Linear and Conv2d
// against PyTorch's goldens (tools/gen_parametrize_golden.py: outputs, gradients of the originals
// and the input, the spectral_norm buffers per training-mode call, state_dict keys in order, the
// weight remove_parametrizations leaves), float64 to 1e-12; a user parametrization with a chain,
// load_state_dict with PyTorch's keys, and PyTorch's messages.
#include <gtest/gtest.h>

#include <memory>
#include <sstream>
#include <string>
#include <vector>

#include "ember/ember.h"
#include "ember/io/safetensors.h"
#include "ember/nn/nn.h"
#include "ember/nn/parametrize.h"
#include "support/error_of.h"
#include "support/gradcheck.h"

namespace {

using namespace ember;
namespace nn = ember::nn;
namespace pz = ember::nn::utils::parametrize;
namespace pzs = ember::nn::utils::parametrizations;
using ember_test::error_of;

const io::SafetensorsData& golden() {
  static const io::SafetensorsData data =
      io::load_safetensors(EMBER_SOURCE_DIR "/tests/nn/golden/parametrize_golden.safetensors");
  return data;
}

const Tensor& g(const std::string& key) { return golden().at(key); }

std::string joined(const std::vector<std::string>& names) {
  std::string out;
  for (size_t i = 0; i < names.size(); ++i) out += (i ? "," : "") + names[i];
  return out;
}

std::string param_names(nn::Module& m) {
  std::vector<std::string> names;
  for (const auto& item : m.named_parameters()) names.push_back(item.first);
  return joined(names);
}

double max_abs_diff(const Tensor& a, const Tensor& b) {
  EXPECT_EQ(a.sizes().vec(), b.sizes().vec());
  if (a.sizes().vec() != b.sizes().vec()) return 1e300;
  return (a.to(kFloat64) - b.to(kFloat64)).abs().max().item<double>();
}

#define EXPECT_NEAR_T(a, b, tol) EXPECT_LE(max_abs_diff((a), (b)), (tol)) << #a << " vs " << #b

std::shared_ptr<nn::Module> make_layer(const std::string& name) {
  std::shared_ptr<nn::Module> layer;
  if (name.starts_with("wn_linear")) layer = std::make_shared<nn::Linear>(4, 3);
  if (name == "sn_linear") layer = std::make_shared<nn::Linear>(5, 4);
  if (name.find("conv") != std::string::npos) layer = std::make_shared<nn::Conv2d>(2, 3, 3);
  layer->to(kFloat64);
  NoGradGuard no_grad;
  layer->get_parameter("weight").copy_(g(name + ".weight"));
  layer->get_parameter("bias").copy_(g(name + ".bias"));
  return layer;
}

void parametrize_as_case(const std::string& name, nn::Module& layer) {
  if (name == "wn_linear" || name == "wn_conv") pzs::weight_norm(layer);
  if (name == "wn_linear_all") pzs::weight_norm(layer, "weight", std::nullopt);
  if (name == "wn_conv_dim1") pzs::weight_norm(layer, "weight", 1);
  if (name == "sn_linear") pzs::spectral_norm(layer);
  if (name == "sn_conv") pzs::spectral_norm(layer, "weight", 2);
}

// The weight as the layer's forward reads it (its member).
Tensor member_weight(nn::Module& layer) {
  if (auto* linear = dynamic_cast<nn::Linear*>(&layer)) return linear->weight;
  return dynamic_cast<nn::Conv2d&>(layer).weight;
}

void check_case(const std::string& name) {
  SCOPED_TRACE(name);
  const auto& meta = golden().metadata;
  const bool spectral = name.starts_with("sn_");
  auto layer = make_layer(name);
  parametrize_as_case(name, *layer);
  EXPECT_TRUE(pz::is_parametrized(*layer));
  EXPECT_TRUE(pz::is_parametrized(*layer, "weight"));
  EXPECT_FALSE(pz::is_parametrized(*layer, "bias"));
  EXPECT_EQ(joined(layer->state_dict().keys()), meta.at(name + ".keys"));
  EXPECT_EQ(param_names(*layer), meta.at(name + ".params"));
  for (const auto& [pname, p] : layer->named_parameters()) {
    EXPECT_NEAR_T(p, g(name + ".orig." + pname), 1e-12);
    EXPECT_TRUE(p.is_leaf());
  }
  if (spectral) {
    // The buffers start from PyTorch's draws (ember's generator differs), then follow the calls.
    NoGradGuard no_grad;
    layer->get_buffer("parametrizations.weight.0._u").copy_(g(name + ".u.init"));
    layer->get_buffer("parametrizations.weight.0._v").copy_(g(name + ".v.init"));
  }
  Tensor total;
  Tensor x0;
  for (int k = 0; k < 3; ++k) {
    const std::string ks = std::to_string(k);
    Tensor x = g(name + ".x" + ks).clone();
    if (k == 0) {
      x.requires_grad_(true);
      x0 = x;
    }
    Tensor y = (*layer)(x);
    EXPECT_NEAR_T(y, g(name + ".y" + ks), 1e-12);
    if (spectral) {
      EXPECT_NEAR_T(layer->get_buffer("parametrizations.weight.0._u"), g(name + ".u" + ks), 1e-12);
      EXPECT_NEAR_T(layer->get_buffer("parametrizations.weight.0._v"), g(name + ".v" + ks), 1e-12);
    }
    Tensor term = (y * g(name + ".gy" + ks)).sum();
    total = k == 0 ? term : total + term;
  }
  // The member the layer reads is a non-leaf computed from the originals.
  EXPECT_FALSE(member_weight(*layer).is_leaf());
  total.backward();
  for (const auto& [pname, p] : layer->named_parameters()) {
    ASSERT_TRUE(p.grad().defined()) << pname;
    EXPECT_NEAR_T(p.grad(), g(name + ".grad." + pname), 1e-12);
  }
  EXPECT_NEAR_T(x0.grad(), g(name + ".grad.x0"), 1e-12);
  if (spectral) {
    layer->eval();
    const Tensor u_before = layer->get_buffer("parametrizations.weight.0._u").clone();
    EXPECT_NEAR_T((*layer)(g(name + ".x0")), g(name + ".y.eval"), 1e-12);
    EXPECT_NEAR_T(layer->get_buffer("parametrizations.weight.0._u"), u_before, 0.0);  // eval: no power iteration
    layer->train();
  }
  pz::remove_parametrizations(*layer, "weight");
  EXPECT_FALSE(pz::is_parametrized(*layer));
  EXPECT_EQ(joined(layer->state_dict().keys()), meta.at(name + ".keys_after_remove"));
  Tensor plain = member_weight(*layer);
  EXPECT_TRUE(plain.is_leaf());
  EXPECT_TRUE(plain.requires_grad());
  EXPECT_TRUE(plain.is_same(layer->get_parameter("weight")));
  EXPECT_NEAR_T(plain, g(name + ".after_remove"), 1e-12);
  // And the layer works as a plain one again, gradient into its weight.
  (*layer)(g(name + ".x1")).sum().backward();
  EXPECT_TRUE(plain.grad().defined());
}

TEST(NnParametrize, GoldenCasesAgainstPyTorch) {
  const int count = std::stoi(golden().metadata.at("count"));
  for (int i = 0; i < count; ++i) check_case(golden().metadata.at("case" + std::to_string(i)));
}

TEST(NnParametrize, SpectralNormConstructorRunsFifteenPowerIterations) {
  for (const std::string name : {"sn_linear", "sn_conv"}) {
    SCOPED_TRACE(name);
    const Tensor weight = g(name + ".weight");
    pzs::SpectralNorm sn(weight);
    {
      NoGradGuard no_grad;
      const Tensor u = g(name + ".u.raw");
      const Tensor v = g(name + ".v.raw");
      sn.u.copy_(u / vector_norm(u));
      sn.v.copy_(v / vector_norm(v));
    }
    sn.power_method(sn.reshape_weight_to_matrix(weight), 15);
    EXPECT_NEAR_T(sn.u, g(name + ".u.ctor"), 1e-12);
    EXPECT_NEAR_T(sn.v, g(name + ".v.ctor"), 1e-12);
    EXPECT_EQ(sn.name(), "_SpectralNorm");
  }
}

TEST(NnParametrize, GradcheckOfTheParametrizations) {
  for (const std::string name : {"wn_linear", "wn_linear_all", "wn_conv", "wn_conv_dim1"}) {
    const std::optional<int64_t> dim = name == "wn_linear_all"  ? std::nullopt
                                       : name == "wn_conv_dim1" ? std::optional<int64_t>(1)
                                                                : std::optional<int64_t>(0);
    pzs::WeightNorm wn(dim);
    ember::test::gradcheck(
        name, [&](const std::vector<Tensor>& in) { return wn.forward(in); },
        {g(name + ".orig.parametrizations.weight.original0"), g(name + ".orig.parametrizations.weight.original1")});
  }
  for (const std::string name : {"sn_linear", "sn_conv"}) {
    pzs::SpectralNorm sn(g(name + ".weight"));
    sn.eval();  // fixed u and v: sigma(W) = u^T W v
    ember::test::gradcheck(name, [&](const std::vector<Tensor>& in) { return sn(in[0]); }, {g(name + ".weight")});
  }
}

TEST(NnParametrize, LoadStateDictWithPyTorchKeys) {
  // The originals PyTorch's weight_norm gave, loaded under its keys, reproduce its output.
  auto layer = std::make_shared<nn::Linear>(4, 3);
  layer->to(kFloat64);
  pzs::weight_norm(layer);
  nn::StateDict state;
  state.insert("bias", g("wn_linear.orig.bias"));
  state.insert("parametrizations.weight.original0", g("wn_linear.orig.parametrizations.weight.original0"));
  state.insert("parametrizations.weight.original1", g("wn_linear.orig.parametrizations.weight.original1"));
  const nn::IncompatibleKeys keys = layer->load_state_dict(state);
  EXPECT_TRUE(keys.missing_keys.empty());
  EXPECT_TRUE(keys.unexpected_keys.empty());
  EXPECT_NEAR_T((*layer)(g("wn_linear.x0")), g("wn_linear.y0"), 1e-12);
  // Messages name the class as PyTorch's swapped class does.
  nn::StateDict partial;
  partial.insert("bias", g("wn_linear.orig.bias"));
  EXPECT_EQ(error_of([&] { layer->load_state_dict(partial); }),
            "Error(s) in loading state_dict for ParametrizedLinear:\n\tMissing key(s) in state_dict: "
            "\"parametrizations.weight.original0\", \"parametrizations.weight.original1\". ");
}

TEST(NnParametrize, WeightNormLoadsTheOlderWeightGAndWeightVKeys) {
  // torch.nn.utils.weight_norm (deprecated) saved g and v as weight_g and weight_v; nested here
  // under a Sequential, so the keys carry a prefix.
  auto layer = std::make_shared<nn::Linear>(4, 3);
  layer->to(kFloat64);
  pzs::weight_norm(layer);
  auto model = std::make_shared<nn::Sequential>(std::make_shared<nn::ReLU>(), layer);
  nn::StateDict old_style;
  old_style.insert("1.bias", g("wn_linear.orig.bias"));
  old_style.insert("1.weight_g", g("wn_linear.orig.parametrizations.weight.original0"));
  old_style.insert("1.weight_v", g("wn_linear.orig.parametrizations.weight.original1"));
  const nn::IncompatibleKeys keys = model->load_state_dict(old_style);
  EXPECT_TRUE(keys.missing_keys.empty() && keys.unexpected_keys.empty());
  EXPECT_NEAR_T((*layer)(g("wn_linear.x0")), g("wn_linear.y0"), 1e-12);
  // Only g without v: left as it is, so both are reported.
  nn::StateDict half;
  half.insert("1.bias", g("wn_linear.orig.bias"));
  half.insert("1.weight_g", g("wn_linear.orig.parametrizations.weight.original0"));
  const nn::IncompatibleKeys half_keys = model->load_state_dict(half, false);
  EXPECT_EQ(joined(half_keys.missing_keys), "1.parametrizations.weight.original0,1.parametrizations.weight.original1");
  EXPECT_EQ(joined(half_keys.unexpected_keys), "1.weight_g");
}

// A user parametrization: a symmetric matrix from its upper triangle.
struct Symmetric : nn::Module {
  std::string name() const override { return "Symmetric"; }
  Tensor forward(const Tensor& x) override { return x.triu() + x.triu(1).t(); }
};

struct Scale : nn::Module {
  explicit Scale(double s) : s(s) {}
  std::string name() const override { return "Scale"; }
  Tensor forward(const Tensor& x) override { return x * s; }
  double s;
};

TEST(NnParametrize, UserParametrizationChainAndGradients) {
  auto layer = std::make_shared<nn::Linear>(3, 3);
  layer->to(kFloat64);
  const Tensor w0 = layer->weight.detach().clone();
  pz::register_parametrization(layer, "weight", std::make_shared<Symmetric>());
  // No right_inverse: the original is the weight as it was (sharing its storage).
  Tensor original = layer->get_parameter("parametrizations.weight.original");
  EXPECT_NEAR_T(original, w0, 0.0);
  EXPECT_NEAR_T(layer->weight, w0.triu() + w0.triu(1).t(), 0.0);  // computed at registration
  pz::register_parametrization(layer, "weight", std::make_shared<Scale>(2.0));
  EXPECT_EQ(pz::parametrizations_of(*layer, "weight")->size(), 2u);
  EXPECT_EQ(joined(layer->state_dict().keys()), "bias,parametrizations.weight.original");

  Tensor x = arange(6, TensorOptions().dtype(kFloat64)).reshape({2, 3});
  Tensor y = (*layer)(x);
  const Tensor w = 2.0 * (w0.triu() + w0.triu(1).t());
  EXPECT_NEAR_T(y, matmul(x, w.t()) + layer->bias, 1e-12);
  y.sum().backward();
  // d(sum(x W^T))/dW = colsum(x) per row; W = 2 (U + U1^T): the original gets 2 (G.triu + G^T.triu(1)).
  const Tensor gw =
      ones({2, 3}, TensorOptions().dtype(kFloat64)).t().matmul(x).t();  // [3, 3]: gw[i][j] = sum_n x[n][j]
  EXPECT_NEAR_T(original.grad(), 2.0 * (gw.triu() + gw.t().triu(1)), 1e-12);

  // Updating the original changes the next call's weight.
  {
    NoGradGuard no_grad;
    original.zero_();
  }
  EXPECT_NEAR_T((*layer)(x), layer->bias.expand({2, 3}), 0.0);
  // leave_parametrized=false: the weight becomes the original itself.
  pz::remove_parametrizations(layer, "weight", false);
  EXPECT_NEAR_T(layer->weight, zeros({3, 3}, TensorOptions().dtype(kFloat64)), 0.0);
  EXPECT_EQ(joined(layer->state_dict().keys()), "bias,weight");
}

TEST(NnParametrize, ApplyOnlyThroughCallsAndNoGrad) {
  auto layer = std::make_shared<nn::Linear>(4, 3);
  layer->to(kFloat64);
  pzs::weight_norm(layer);
  {
    NoGradGuard no_grad;
    Tensor y = (*layer)(g("wn_linear.x0"));
    EXPECT_FALSE(y.requires_grad());
    EXPECT_FALSE(layer->weight.requires_grad());
  }
  Tensor y = (*layer)(g("wn_linear.x0"));
  EXPECT_TRUE(y.requires_grad());
  // Two backward passes through two calls: each call has a graph of its own.
  Tensor y2 = (*layer)(g("wn_linear.x1"));
  y.sum().backward();
  y2.sum().backward();
  EXPECT_TRUE(layer->get_parameter("parametrizations.weight.original0").grad().defined());
}

TEST(NnParametrize, CachedComputesOncePerGuard) {
  auto layer = std::make_shared<nn::Linear>(5, 4);
  layer->to(kFloat64);
  pzs::spectral_norm(layer);
  Tensor u = layer->get_buffer("parametrizations.weight.0._u");
  const Tensor x = g("sn_linear.x0");
  Tensor total;
  {
    pz::Cached outer;
    const Tensor u_before = u.clone();
    Tensor y0 = (*layer)(x);
    const Tensor u_after_first = u.clone();
    EXPECT_FALSE(equal(u_after_first, u_before));  // the first call runs the power iteration
    {
      pz::Cached inner;
      Tensor y1 = (*layer)(x);
      EXPECT_TRUE(equal(y1, y0));
    }
    Tensor y2 = (*layer)(x);  // still inside the outer guard: the cached weight
    EXPECT_TRUE(equal(u, u_after_first));
    EXPECT_TRUE(equal(y2, y0));
    total = y0.sum() + y2.sum();
  }
  total.backward();  // both calls' gradients reach the original through the one value
  EXPECT_TRUE(layer->get_parameter("parametrizations.weight.original").grad().defined());
  const Tensor u_cached = u.clone();
  (*layer)(x);  // the guard is gone: recomputed, one more power iteration
  EXPECT_FALSE(equal(u, u_cached));
}

TEST(NnParametrize, ForwardPreHooksRunBeforeTheValueIsComputed) {
  // A pre-hook that changes an original is seen by the same call, as PyTorch computes the value
  // when forward reads it.
  auto layer = std::make_shared<nn::Linear>(3, 2);
  pz::register_parametrization(layer, "weight", std::make_shared<Scale>(1.0));
  Tensor original = layer->get_parameter("parametrizations.weight.original");
  layer->register_forward_pre_hook([&](nn::Module&, const Tensor&) -> std::optional<Tensor> {
    NoGradGuard no_grad;
    original.zero_();
    return std::nullopt;
  });
  EXPECT_TRUE(equal((*layer)(ones({1, 3})), layer->bias.detach().unsqueeze(0)));
}

TEST(NnParametrize, MovedModulesRecomputeAtTheNextCall) {
  auto layer = std::make_shared<nn::Linear>(4, 3);
  pzs::spectral_norm(layer);
  layer->to(kFloat64);  // the originals and buffers move; the weight follows at the next call
  Tensor y = (*layer)(g("sn_linear.x0").narrow(1, 0, 4));
  EXPECT_EQ(y.dtype(), kFloat64);
  EXPECT_EQ(layer->weight.dtype(), kFloat64);
  y.sum().backward();
  EXPECT_EQ(layer->get_parameter("parametrizations.weight.original").grad().dtype(), kFloat64);
}

TEST(NnParametrize, ErrorsInPyTorchsWords) {
  auto layer = std::make_shared<nn::Linear>(4, 3);
  EXPECT_EQ(error_of([&] { pzs::spectral_norm(layer, "foo"); }),
            "Module 'Linear' has no parameter or buffer with name 'foo'");
  EXPECT_EQ(error_of([&] { pz::register_parametrization(layer, "foo", std::make_shared<Scale>(1.0)); }),
            "Module 'Linear' does not have a parameter, a buffer, or a parametrized element with name 'foo'");
  EXPECT_EQ(error_of([&] { pz::remove_parametrizations(layer, "weight"); }),
            "Module Linear does not have a parametrization on weight");
  EXPECT_EQ(error_of([&] { pzs::SpectralNorm(layer->weight, 1, 2); }),
            "Dimension out of range (expected to be in range of [-2, 1] but got 2)");
  EXPECT_EQ(error_of([&] { pzs::SpectralNorm(layer->weight, 0); }),
            "Expected n_power_iterations to be positive, but got n_power_iterations=0");
  struct Shrink : nn::Module {
    Tensor forward(const Tensor& x) override { return x.sum({0}); }
  };
  EXPECT_EQ(error_of([&] { pz::register_parametrization(layer, "weight", std::make_shared<Shrink>()); }),
            "Registering a parametrization may not change the shape of the tensor, unless `unsafe` flag is enabled.\n"
            "unparametrized shape: torch.Size([3, 4])\nparametrized shape: torch.Size([4])");
  EXPECT_FALSE(pz::is_parametrized(*layer));  // the failed registration changed nothing
  EXPECT_EQ(joined(layer->state_dict().keys()), "weight,bias");
  pzs::weight_norm(layer);
  EXPECT_EQ(error_of([&] { pz::remove_parametrizations(layer, "weight", false); }),
            "Cannot leave unparametrized (`leave_parametrized=False`) a tensor that is parametrized in terms of a "
            "sequence of tensors.");
  EXPECT_EQ(error_of([&] { layer->get_parameter("weight"); }), "`weight` is not an nn.Parameter");
  EXPECT_EQ(error_of([&] { layer->get_submodule("foo"); }), "ParametrizedLinear has no attribute `foo`");
}

}  // namespace
