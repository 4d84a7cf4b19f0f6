// nn::Conv1d / functional::conv1d and nn::GroupNorm / functional::group_norm against PyTorch 2.15
// (tests/nn/golden/conv1d_groupnorm_golden.safetensors from tools/gen_conv1d_groupnorm_golden.py):
// outputs and every gradient in float64 and float32, through the layer (its state_dict loaded)
// and through the function, the layer's initial parameters for a seed, float64 gradchecks (and
// gradgradchecks for group_norm), and PyTorch's error messages.
#include <gtest/gtest.h>

#include <map>
#include <memory>
#include <string>
#include <vector>

#include "ember/ember.h"
#include "ember/io/safetensors.h"
#include "ember/nn/conv.h"
#include "ember/nn/functional.h"
#include "ember/nn/modules.h"
#include "support/error_of.h"
#include "support/golden_cases.h"
#include "support/gradcheck.h"

namespace {

using namespace ember;
namespace nn = ember::nn;
namespace F = ember::nn::functional;
using ember_test::error_of;

const io::SafetensorsData& golden() {
  static const io::SafetensorsData data =
      io::load_safetensors(EMBER_SOURCE_DIR "/tests/nn/golden/conv1d_groupnorm_golden.safetensors");
  return data;
}

/// One golden case: "KIND,key=value,..." with KIND Conv1d, GroupNorm or group_norm; keys are the
/// parameters (the state_dict keys, or group_norm's tensors).
struct Case : ember_test::GoldenCase {
  Tensor at(const std::string& name) const { return golden().at(prefix + name); }
  /// Conv1d's padding when it is "same" or "valid", otherwise empty.
  std::string padding_mode() const {
    const std::string& p = options.at("padding");
    return p == "same" || p == "valid" ? p : std::string();
  }
};

std::vector<Case> all_cases() {
  std::vector<Case> out;
  for (ember_test::GoldenCase& c : ember_test::golden_cases(golden().metadata)) out.push_back(Case{std::move(c)});
  return out;
}

std::shared_ptr<nn::Module> build(const Case& c) {
  if (c.kind == "GroupNorm") {
    return std::make_shared<nn::GroupNorm>(c.num("groups"), c.num("channels"), c.real("eps"), c.flag("affine"));
  }
  const std::string mode = c.padding_mode();
  const nn::Conv1dPadding padding = mode.empty() ? nn::Conv1dPadding(c.num("padding")) : nn::Conv1dPadding(mode);
  return std::make_shared<nn::Conv1d>(c.num("in"), c.num("out"), c.num("k"), c.num("stride"), padding,
                                      c.num("dilation"), c.num("groups"), c.flag("bias"));
}

/// The case through the function, with `params` (keyed as c.keys) as weight and bias.
Tensor run_functional(const Case& c, const Tensor& x, std::map<std::string, Tensor>& params) {
  const Tensor w = params.contains("weight") ? params.at("weight") : Tensor();
  const Tensor b = params.contains("bias") ? params.at("bias") : Tensor();
  if (c.kind != "Conv1d") return F::group_norm(x, c.num("groups"), w, b, c.real("eps"));
  const std::string mode = c.padding_mode();
  if (!mode.empty()) return F::conv1d(x, w, b, c.num("stride"), mode, c.num("dilation"), c.num("groups"));
  return F::conv1d(x, w, b, c.num("stride"), c.num("padding"), c.num("dilation"), c.num("groups"));
}

void expect_close(const Tensor& got, const Tensor& want, double tol, const std::string& what) {
  ASSERT_TRUE(got.defined()) << what << " is undefined";
  ASSERT_EQ(got.sizes().vec(), want.sizes().vec()) << what;
  EXPECT_TRUE(allclose(got.to(kFloat64), want, tol, tol)) << what << "\ngot\n" << got << "\nwant\n" << want;
}

/// Every case in `dtype`: through the layer (Conv1d and GroupNorm cases, their state_dict loaded)
/// when `layer`, otherwise through the function; the output, then the gradients of sum(y * gy)
/// with respect to the input and every parameter.
void check_goldens(Dtype dtype, double tol, bool layer) {
  const std::vector<Case> cases = all_cases();
  ASSERT_EQ(cases.size(), 21u);
  for (const Case& c : cases) {
    if (layer && c.kind == "group_norm") continue;
    SCOPED_TRACE(c.description + (layer ? " (layer) in " : " (function) in ") + std::string(dtype_name(dtype)));
    Tensor x = c.at("x").to(dtype).clone().requires_grad_();
    std::map<std::string, Tensor> grads;
    Tensor y;
    if (layer) {
      std::shared_ptr<nn::Module> m = build(c);
      EXPECT_EQ(m->state_dict().keys(), c.keys);
      m->to(dtype);
      nn::StateDict state;
      for (const std::string& key : c.keys) state.insert(key, c.at("p." + key).to(dtype));
      m->load_state_dict(state);
      y = m->forward(x);
      (y * c.at("gy").to(dtype)).sum().backward();
      for (const auto& [name, p] : m->named_parameters()) grads[name] = p.grad();
    } else {
      std::map<std::string, Tensor> params;
      for (const std::string& key : c.keys) params[key] = c.at("p." + key).to(dtype).clone().requires_grad_();
      y = run_functional(c, x, params);
      (y * c.at("gy").to(dtype)).sum().backward();
      for (const auto& [name, p] : params) grads[name] = p.grad();
    }
    ASSERT_EQ(y.dtype(), dtype);
    expect_close(y, c.at("y"), tol, "output");
    expect_close(x.grad(), c.at("gx"), tol, "grad of the input");
    ASSERT_EQ(grads.size(), c.keys.size());
    for (const std::string& key : c.keys) expect_close(grads[key], c.at("g." + key), tol, "grad of " + key);
  }
}

TEST(Conv1dGroupNormGolden, LayersFloat64) { check_goldens(kFloat64, 1e-10, true); }
TEST(Conv1dGroupNormGolden, FunctionsFloat64) { check_goldens(kFloat64, 1e-10, false); }
TEST(Conv1dGroupNormGolden, LayersFloat32) { check_goldens(kFloat32, 1e-5, true); }
TEST(Conv1dGroupNormGolden, FunctionsFloat32) { check_goldens(kFloat32, 1e-5, false); }

// ---------------------------------------------------------------- the layers

/// Every parameter of `m` equals the golden "<prefix><name>" (uniform draws: bit for bit).
void expect_init(const nn::Module& m, const std::string& prefix) { ember_test::expect_parameters(m, golden(), prefix); }

TEST(Conv1dLayer, InitialParametersForASeedArePyTorchs) {
  manual_seed(0);
  nn::Conv1d a(3, 8, 5);
  expect_init(a, "init.seed0.");
  manual_seed(123);
  nn::Conv1d b(4, 6, 3, 2, 1, 1, 2);
  expect_init(b, "init.seed123.");
  manual_seed(7);
  nn::Conv1d c(2, 4, 3, 1, "same", 2, 1, /*bias=*/false);
  expect_init(c, "init.seed7.");
  // reset_parameters() draws again, in the same order.
  manual_seed(123);
  b.reset_parameters();
  expect_init(b, "init.seed123.");
}

TEST(Conv1dLayer, AttributesShapesAndGradFn) {
  nn::Conv1d conv(4, 6, 3, 2, 1, 2, 2);
  EXPECT_EQ(conv.name(), "Conv1d");
  EXPECT_EQ(conv.state_dict().keys(), (std::vector<std::string>{"weight", "bias"}));
  EXPECT_EQ(conv.weight.sizes().vec(), (std::vector<int64_t>{6, 2, 3}));
  EXPECT_EQ(conv.bias.sizes().vec(), (std::vector<int64_t>{6}));
  EXPECT_EQ(conv.in_channels, 4);
  EXPECT_EQ(conv.out_channels, 6);
  EXPECT_EQ(conv.kernel_size, 3);
  EXPECT_EQ(conv.stride, 2);
  EXPECT_EQ(conv.padding, 1);
  EXPECT_EQ(conv.dilation, 2);
  EXPECT_EQ(conv.groups, 2);
  EXPECT_TRUE(conv.padding_string.empty());
  Tensor y = conv(randn({2, 4, 11}));
  EXPECT_EQ(y.sizes().vec(), (std::vector<int64_t>{2, 6, 5}));  // (11 + 2 - 5) / 2 + 1
  // PyTorch's grad_fn is ConvolutionBackward0 itself; ember's is the view that drops the unit
  // height, right after it (conv.h).
  EXPECT_EQ(y.grad_fn_name(), "SqueezeBackward1");
  EXPECT_TRUE(y.requires_grad());
  EXPECT_EQ(conv(randn({4, 11})).sizes().vec(), (std::vector<int64_t>{6, 5}));

  nn::Conv1d same(3, 5, 4, 1, "same", 1, 1, /*bias=*/false);
  EXPECT_EQ(same.padding_string, "same");
  EXPECT_EQ(same.state_dict().keys(), std::vector<std::string>{"weight"});
  EXPECT_FALSE(same.bias.defined());
  EXPECT_EQ(same(randn({2, 3, 7})).sizes().vec(), (std::vector<int64_t>{2, 5, 7}));
  nn::Conv1d valid(3, 5, 4, 2, std::string("valid"));
  EXPECT_EQ(valid.padding_string, "valid");
  EXPECT_EQ(valid(randn({3, 9})).sizes().vec(), (std::vector<int64_t>{5, 3}));
  EXPECT_EQ(F::conv1d(randn({1, 3, 7}), randn({5, 3, 3}), Tensor(), 1, "same", 3).sizes().vec(),
            (std::vector<int64_t>{1, 5, 7}));
}

TEST(GroupNormLayer, Defaults) {
  nn::GroupNorm gn(2, 6);
  EXPECT_EQ(gn.name(), "GroupNorm");
  EXPECT_EQ(gn.num_groups, 2);
  EXPECT_EQ(gn.num_channels, 6);
  EXPECT_EQ(gn.eps, 1e-5);
  EXPECT_EQ(gn.state_dict().keys(), (std::vector<std::string>{"weight", "bias"}));
  EXPECT_EQ(gn.weight.dtype(), kFloat32);
  EXPECT_TRUE(equal(gn.weight.detach(), ones({6})));
  EXPECT_TRUE(equal(gn.bias.detach(), zeros({6})));
  nn::GroupNorm plain(3, 6, 1e-3, /*affine=*/false);
  EXPECT_FALSE(plain.weight.defined());
  EXPECT_FALSE(plain.bias.defined());
  EXPECT_TRUE(plain.state_dict().keys().empty());
  // Without affine parameters the layer is the function.
  manual_seed(9);
  Tensor x = randn({2, 6, 4});
  EXPECT_TRUE(equal(plain(x), F::group_norm(x, 3, Tensor(), Tensor(), 1e-3)));
  EXPECT_TRUE(allclose(gn(x), F::group_norm(x, 2), 0, 0));
}

// ---------------------------------------------------------------- gradcheck

TEST(Conv1dGroupNormGradcheck, Conv1d) {
  struct Geometry {
    std::vector<int64_t> x, w;
    int64_t stride, padding, dilation, groups;
    bool bias;
  };
  const std::vector<Geometry> geometries = {
      {{2, 4, 7}, {6, 2, 3}, 2, 1, 2, 2, true},
      {{1, 3, 6}, {3, 1, 2}, 1, 0, 1, 3, false},
      {{3, 5}, {2, 3, 3}, 1, 2, 1, 1, true},
  };
  manual_seed(21);
  for (const Geometry& g : geometries) {
    std::vector<Tensor> inputs{randn(g.x, kFloat64), randn(g.w, kFloat64)};
    if (g.bias) inputs.push_back(randn({g.w[0]}, kFloat64));
    test::gradcheck(
        "conv1d",
        [&](const std::vector<Tensor>& in) {
          return F::conv1d(in[0], in[1], g.bias ? in[2] : Tensor(), g.stride, g.padding, g.dilation, g.groups);
        },
        inputs);
  }
  test::gradcheck("conv1d same",
                  [](const std::vector<Tensor>& in) { return F::conv1d(in[0], in[1], in[2], 1, "same", 1); },
                  {randn({2, 6}, kFloat64), randn({3, 2, 4}, kFloat64), randn({3}, kFloat64)});
}

TEST(Conv1dGroupNormGradcheck, GroupNorm) {
  manual_seed(22);
  test::gradcheck("group_norm", [](const std::vector<Tensor>& in) { return F::group_norm(in[0], 3, in[1], in[2]); },
                  {randn({2, 6, 3}, kFloat64), randn({6}, kFloat64), randn({6}, kFloat64)});
  test::gradcheck("group_norm 2-D", [](const std::vector<Tensor>& in) { return F::group_norm(in[0], 2, in[1]); },
                  {randn({3, 8}, kFloat64), randn({8}, kFloat64)});
  test::gradcheck("group_norm 4-D, no affine",
                  [](const std::vector<Tensor>& in) { return F::group_norm(in[0], 1, Tensor(), Tensor(), 1e-3); },
                  {randn({2, 2, 2, 3}, kFloat64)});
}

TEST(Conv1dGroupNormGradcheck, GroupNormSecondOrder) {
  manual_seed(23);
  test::gradgradcheck("group_norm",
                      [](const std::vector<Tensor>& in) { return F::group_norm(in[0], 2, in[1], in[2], 1e-3); },
                      {randn({2, 4, 3}, kFloat64), randn({4}, kFloat64), randn({4}, kFloat64)});
  test::gradgradcheck("group_norm, groups == C, no affine",
                      [](const std::vector<Tensor>& in) { return F::group_norm(in[0], 3); },
                      {randn({2, 3, 4}, kFloat64)});
}

// ---------------------------------------------------------------- errors

TEST(Conv1dErrors, PyTorchsMessages) {
  const Tensor x = zeros({1, 4, 5});
  const Tensor w4 = zeros({6, 4, 3});
  EXPECT_EQ(error_of([&] { F::conv1d(zeros({5}), w4); }),
            "Expected 2D (unbatched) or 3D (batched) input to conv1d, but got input of size: [5]");
  EXPECT_EQ(error_of([] {
              nn::Conv1d(2, 6, 3)(zeros({1, 2, 3, 4}));
            }),
            "Expected 2D (unbatched) or 3D (batched) input to conv1d, but got input of size: [1, 2, 3, 4]");
  EXPECT_EQ(error_of([&] {
              F::conv1d(x, zeros({6, 2, 3}));
            }),
            "Given groups=1, weight of size [6, 2, 3], expected input[1, 4, 5] to have 2 channels, but got 4 "
            "channels instead");
  // Unbatched, PyTorch names the input with its batch of one, as conv2d does.
  EXPECT_EQ(error_of([] {
              nn::Conv1d(4, 6, 3)(zeros({3, 5}));
            }),
            "Given groups=1, weight of size [6, 4, 3], expected input[1, 3, 5] to have 4 channels, but got 3 "
            "channels instead");
  EXPECT_EQ(error_of([&] {
              F::conv1d(x, zeros({6, 2, 3}), Tensor(), 1, 0, 1, 4);
            }),
            "Given groups=4, expected weight to be divisible by 4 at dimension 0, but got weight of size "
            "[[6, 2, 3]] instead");
  const std::string too_long =
      "Calculated padded input size per channel: (5). Kernel size: (7). Kernel size can't be greater than actual "
      "input size";
  EXPECT_EQ(error_of([&] { F::conv1d(x, zeros({6, 4, 7})); }), too_long);
  EXPECT_EQ(error_of([&] { F::conv1d(x, w4, Tensor(), 1, 0, 3); }), too_long);  // dilated kernel: 7
  EXPECT_EQ(error_of([] { F::conv1d(zeros({1, 4, 3}), zeros({6, 4, 7}), Tensor(), 1, 1); }), too_long);
  EXPECT_EQ(error_of([] { nn::Conv1d(4, 6, 7)(zeros({4, 5})); }), too_long);
  EXPECT_EQ(error_of([&] { F::conv1d(x, w4, zeros({5})); }),
            "Given weight of size [6, 4, 3], expected bias to be 1-dimensional with 6 elements, but got bias of "
            "size [5] instead");
  EXPECT_EQ(error_of([&] { F::conv1d(x, w4, Tensor(), 2, "same"); }),
            "padding='same' is not supported for strided convolutions");
  EXPECT_EQ(error_of([&] { F::conv1d(x, w4, Tensor(), 1, "foo"); }), "Invalid padding string: 'foo'");
  EXPECT_EQ(error_of([&] { F::conv1d(x, w4, Tensor(), 1, 0, 1, 0); }), "non-positive groups is not supported");
  EXPECT_EQ(error_of([&] { F::conv1d(x, w4, Tensor(), 0); }), "non-positive stride is not supported");
  EXPECT_EQ(error_of([&] { F::conv1d(x, w4, Tensor(), 1, -1); }), "negative padding is not supported");
  // PyTorch 2.15 says "but got [1, 0]" here, the dilation of its internal 2-D convolution.
  EXPECT_EQ(error_of([&] { F::conv1d(x, w4, Tensor(), 1, 0, 0); }),
            "dilation should be greater than zero, but got [0]");
  EXPECT_EQ(error_of([] { nn::Conv1d(4, 6, 3, 2, "same"); }),
            "padding='same' is not supported for strided convolutions");
  // PyTorch prints a Python set, {'same', 'valid'} or {'valid', 'same'} by the string hash seed.
  EXPECT_EQ(error_of([] { nn::Conv1d(4, 6, 3, 1, "foo"); }),
            "Invalid padding string 'foo', should be one of {'same', 'valid'}");
  EXPECT_EQ(error_of([] { nn::Conv1d(4, 6, 3, 1, 0, 1, 3); }), "in_channels must be divisible by groups");
  EXPECT_EQ(error_of([] { nn::Conv1d(4, 6, 3, 1, 0, 1, 4); }), "out_channels must be divisible by groups");
  EXPECT_EQ(error_of([] { nn::Conv1d(4, 6, 3, 1, 0, 1, 0); }), "groups must be a positive integer");
  // "valid" with a stride is allowed.
  EXPECT_EQ(F::conv1d(x, w4, Tensor(), 2, "valid").sizes().vec(), (std::vector<int64_t>{1, 6, 2}));
}

TEST(GroupNormErrors, PyTorchsMessages) {
  const Tensor x = zeros({2, 4, 5});
  EXPECT_EQ(error_of([] { nn::GroupNorm(3, 4); }), "num_channels (4) must be divisible by num_groups (3)");
  EXPECT_EQ(error_of([&] { F::group_norm(x, 3); }),
            "Expected number of channels in input to be divisible by num_groups, but got input of shape [2, 4, 5] "
            "and num_groups=3");
  EXPECT_EQ(error_of([] {
              nn::GroupNorm(2, 4)(zeros({2, 3, 5}));
            }),
            "Expected number of channels in input to be divisible by num_groups, but got input of shape [2, 3, 5] "
            "and num_groups=2");
  EXPECT_EQ(error_of([] {
              nn::GroupNorm(2, 4)(zeros({2, 6, 5}));
            }),
            "Expected weight to be a vector of size equal to the number of channels in input, but got weight of "
            "shape [4] and input of shape [2, 6, 5]");
  EXPECT_EQ(error_of([&] { F::group_norm(x, 2, ones({3})); }),
            "Expected weight to be a vector of size equal to the number of channels in input, but got weight of "
            "shape [3] and input of shape [2, 4, 5]");
  EXPECT_EQ(error_of([&] {
              F::group_norm(x, 2, ones({2, 2}));
            }),
            "Expected weight to be a vector of size equal to the number of channels in input, but got weight of "
            "shape [2, 2] and input of shape [2, 4, 5]");
  EXPECT_EQ(error_of([&] { F::group_norm(x, 2, ones({4}), zeros({3})); }),
            "Expected bias to be a vector of size equal to the number of channels in input, but got bias of shape "
            "[3] and input of shape [2, 4, 5]");
  EXPECT_EQ(error_of([&] { F::group_norm(x, 2, Tensor(), zeros({5})); }),
            "Expected bias to be a vector of size equal to the number of channels in input, but got bias of shape "
            "[5] and input of shape [2, 4, 5]");
  EXPECT_EQ(error_of([] { F::group_norm(zeros({4}), 2); }),
            "Expected at least 2 dimensions for input tensor but received 1");
  EXPECT_EQ(error_of([&] { F::group_norm(x, -2); }), "Expected num groups to be greater than 0, got -2");
  EXPECT_EQ(error_of([] {
              F::group_norm(zeros({1, 4}), 4);
            }),
            "Expected more than 1 value per channel when training, got input size [1, 4]");
  EXPECT_EQ(error_of([] {
              F::group_norm(zeros({2, 4}, kInt64), 2);
            }),
            "\"GroupNormKernelImpl\" not implemented for 'Long'");
  // Without affine parameters the layer does not know the channel count, as in PyTorch.
  EXPECT_EQ(nn::GroupNorm(2, 4, 1e-5, false)(zeros({2, 6, 5})).sizes().vec(), (std::vector<int64_t>{2, 6, 5}));
}

}  // namespace
