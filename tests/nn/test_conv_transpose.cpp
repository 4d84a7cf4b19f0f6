// conv_transpose2d / conv_transpose1d (ember/conv_transpose.h, src/ops/conv_transpose.cpp) and
// the layers ConvTranspose1d / ConvTranspose2d (ember/nn/conv_transpose.h): values and the three
// gradients against PyTorch's goldens (tools/gen_conv_transpose_golden.py; float64, and float32
// through both of conv2d's CPU paths), finite-difference first and second derivatives, the
// layers' initialisation bounds and output_size, PyTorch's error messages, and every case on each
// usable accelerator (and the stand-in device) against the CPU.
#include <gtest/gtest.h>

#include <cmath>
#include <cstdlib>
#include <optional>
#include <sstream>
#include <string>
#include <vector>

#include "ember/conv_transpose.h"
#include "ember/ember.h"
#include "ember/io/safetensors.h"
#include "ember/nn/conv_transpose.h"
#include "support/devices.h"
#include "support/error_of.h"
#include "support/golden_cases.h"
#include "support/gradcheck.h"

namespace {

using namespace ember;
namespace nn = ember::nn;
namespace F = ember::nn::functional;
using ember_test::error_of;
using ember_test::expect_close;
using ember_test::GoldenCase;

const io::SafetensorsData& golden() {
  static const io::SafetensorsData data =
      io::load_safetensors(EMBER_SOURCE_DIR "/tests/nn/golden/conv_transpose_golden.safetensors");
  return data;
}

const Tensor& at(const GoldenCase& c, const std::string& name) { return golden().at(c.prefix + name); }

std::vector<int64_t> ints(const std::string& text) {
  std::vector<int64_t> out;
  std::stringstream ss(text);
  for (int64_t v; ss >> v;) out.push_back(v);
  return out;
}

/// Forces conv2d's float32 path (EMBER_CONV2D_PATH) for one scope.
class Float32Path {
 public:
  explicit Float32Path(const char* path) {
    if (const char* old = std::getenv("EMBER_CONV2D_PATH")) saved_ = old;
    setenv("EMBER_CONV2D_PATH", path, 1);
  }
  ~Float32Path() {
    if (saved_) {
      setenv("EMBER_CONV2D_PATH", saved_->c_str(), 1);
    } else {
      unsetenv("EMBER_CONV2D_PATH");
    }
  }
  Float32Path(const Float32Path&) = delete;
  Float32Path& operator=(const Float32Path&) = delete;

 private:
  std::optional<std::string> saved_;
};

/// A new leaf holding a golden tensor in `dtype` (never the cached golden itself, which to() returns
/// when the dtype is already right).
Tensor leaf(const Tensor& golden_tensor, Dtype dtype) { return golden_tensor.to(dtype).clone().requires_grad_(); }

/// The case's op applied to x, w and b (undefined without a bias).
Tensor run_case(const GoldenCase& c, const Tensor& x, const Tensor& w, const Tensor& b) {
  if (c.kind == "conv_transpose1d") {
    return F::conv_transpose1d(x, w, b, c.num("stride"), c.num("padding"), c.num("output_padding"), c.num("groups"),
                               c.num("dilation"));
  }
  return F::conv_transpose2d(x, w, b, ints(c.options.at("stride")), ints(c.options.at("padding")),
                             ints(c.options.at("output_padding")), c.num("groups"), ints(c.options.at("dilation")));
}

/// Every golden case in `dtype`: the output, its node, and the three gradients.
void check_goldens(Dtype dtype, double rtol, double atol) {
  const std::vector<GoldenCase> cases = ember_test::golden_cases(golden().metadata);
  ASSERT_EQ(cases.size(), 14u);
  for (const GoldenCase& c : cases) {
    SCOPED_TRACE(c.description);
    const bool has_bias = c.flag("bias");
    Tensor x = leaf(at(c, "x"), dtype);
    Tensor w = leaf(at(c, "w"), dtype);
    Tensor b = has_bias ? leaf(at(c, "b"), dtype) : Tensor();
    const Tensor y = run_case(c, x, w, b);
    EXPECT_EQ(y.dtype(), dtype);
    expect_close(y, at(c, "y"), rtol, atol, "y");
    // Batched results are ConvolutionBackward0's, unbatched ones its squeezed view, as in PyTorch.
    EXPECT_EQ(y.grad_fn_name(), x.dim() == w.dim() ? "ConvolutionBackward0" : "SqueezeBackward1");
    std::vector<Tensor> wrt{x, w};
    if (has_bias) wrt.push_back(b);
    const std::vector<Tensor> grads = autograd::grad({y}, wrt, {at(c, "gy").to(dtype)});
    expect_close(grads[0], at(c, "gx"), rtol, atol, "gx");
    expect_close(grads[1], at(c, "gw"), rtol, atol, "gw");
    if (has_bias) expect_close(grads[2], at(c, "gb"), rtol, atol, "gb");
  }
}

TEST(ConvTransposeGolden, Float64) { check_goldens(kFloat64, 1e-12, 1e-12); }

TEST(ConvTransposeGolden, Float32OneDnn) {
  Float32Path path("onednn");
  check_goldens(kFloat32, 1e-4, 1e-4);
}

TEST(ConvTransposeGolden, Float32Im2col) {
  Float32Path path("im2col");
  check_goldens(kFloat32, 1e-4, 1e-4);
}

TEST(ConvTransposeGolden, OnlyWhatIsWantedGetsAGradient) {
  const GoldenCase c = ember_test::golden_cases(golden().metadata)[1];
  Tensor x = at(c, "x").clone();
  Tensor w = at(c, "w").clone().requires_grad_();
  Tensor b = at(c, "b").clone();
  run_case(c, x, w, b).backward(at(c, "gy"));
  expect_close(w.grad(), at(c, "gw"), 1e-12, 1e-12, "gw");
  EXPECT_FALSE(x.grad().defined());
  Tensor x2 = at(c, "x").clone().requires_grad_();
  run_case(c, x2, at(c, "w"), Tensor()).backward(at(c, "gy"));
  expect_close(x2.grad(), at(c, "gx"), 1e-12, 1e-12, "gx");
  // Without any input requiring a gradient nothing is recorded.
  EXPECT_FALSE(run_case(c, at(c, "x"), at(c, "w"), at(c, "b")).requires_grad());
}

TEST(ConvTransposeGolden, IsTheInputGradientOfConv2d) {
  // <conv_transpose2d(g, w), x> == <g, conv2d(x, w)>: the two ops are adjoint.
  manual_seed(11);
  const Tensor x = randn({2, 6, 9, 8}, kFloat64), w = randn({4, 3, 3, 2}, kFloat64);
  const Tensor y = conv2d(x, w, Tensor(), {2, 1}, {1, 0}, {1, 2}, 2);
  ASSERT_EQ(y.sizes().vec(), (std::vector<int64_t>{2, 4, 5, 6}));
  const Tensor g = randn(y.sizes(), kFloat64);
  const Tensor t = conv_transpose2d(g, w, Tensor(), {2, 1}, {1, 0}, {0, 0}, 2, {1, 2});
  ASSERT_EQ(t.sizes().vec(), (std::vector<int64_t>{2, 6, 9, 8}));
  EXPECT_NEAR((t * x).sum().item<double>(), (g * y).sum().item<double>(), 1e-9);
}

// ---------------------------------------------------------------- gradcheck

struct Geometry {
  std::vector<int64_t> x, w;
  std::vector<int64_t> stride, padding, output_padding, dilation;
  int64_t groups;
  bool bias;
};

const std::vector<Geometry>& geometries() {
  static const std::vector<Geometry> all = {
      {{2, 2, 3, 3}, {2, 3, 2, 2}, {1}, {0}, {0}, {1}, 1, true},
      {{1, 2, 3, 2}, {2, 2, 3, 2}, {2, 1}, {1, 0}, {1, 0}, {1}, 1, true},
      {{1, 2, 2, 3}, {2, 1, 2, 2}, {1}, {0}, {1}, {2}, 1, false},  // output_padding >= stride < dilation
      {{2, 4, 2, 2}, {4, 1, 2, 2}, {2}, {1}, {1}, {1}, 2, true},
      {{3, 2, 2}, {3, 2, 2, 2}, {2}, {0}, {1}, {1}, 1, true},  // unbatched
      {{1, 2, 4}, {2, 2, 3}, {2}, {1}, {1}, {1}, 1, true},     // 1-D
      {{2, 3}, {2, 1, 2}, {1}, {0}, {1}, {2}, 2, true},        // 1-D unbatched, grouped, padded up
  };
  return all;
}

std::vector<Tensor> inputs_of(const Geometry& g) {
  std::vector<Tensor> in{randn(g.x, kFloat64), randn(g.w, kFloat64)};
  if (g.bias) in.push_back(randn({g.w[1] * g.groups}, kFloat64));
  return in;
}

Tensor run_geometry(const Geometry& g, const std::vector<Tensor>& in) {
  const Tensor b = g.bias ? in[2] : Tensor();
  if (g.w.size() == 3) {
    return F::conv_transpose1d(in[0], in[1], b, g.stride[0], g.padding[0], g.output_padding[0], g.groups,
                               g.dilation[0]);
  }
  return F::conv_transpose2d(in[0], in[1], b, g.stride, g.padding, g.output_padding, g.groups, g.dilation);
}

TEST(ConvTransposeGradcheck, Float64OverGeometries) {
  manual_seed(3);
  for (const Geometry& g : geometries()) {
    test::gradcheck(
        "conv_transpose", [&](const std::vector<Tensor>& in) { return run_geometry(g, in); }, inputs_of(g));
  }
}

TEST(ConvTransposeGradcheck, SecondDerivatives) {
  manual_seed(5);
  for (const Geometry& g : geometries()) {
    test::gradgradcheck(
        "conv_transpose", [&](const std::vector<Tensor>& in) { return run_geometry(g, in); }, inputs_of(g));
  }
}

TEST(ConvTransposeGradcheck, BackwardRecordsItself) {
  manual_seed(6);
  Tensor x = randn({1, 2, 3, 3}, kFloat64).requires_grad_();
  Tensor w = randn({2, 2, 2, 2}, kFloat64).requires_grad_();
  const Tensor y = conv_transpose2d(x, w, Tensor(), {2});
  EXPECT_EQ(y.grad_fn_name(), "ConvolutionBackward0");
  const std::vector<Tensor> g = autograd::grad({y.sum()}, {x, w}, {}, std::nullopt, /*create_graph=*/true);
  EXPECT_EQ(g[0].grad_fn_name(), "ConvolutionBackward0");
  EXPECT_EQ(g[1].grad_fn_name(), "ConvolutionBackwardBackward0");
}

// ---------------------------------------------------------------- the layers

TEST(ConvTransposeLayer, ParametersAndTheirInitialisation) {
  manual_seed(0);
  nn::ConvTranspose2d layer(16, 6, {3, 5}, 2, 1, 1, 2);
  EXPECT_EQ(layer.name(), "ConvTranspose2d");
  EXPECT_EQ(layer.weight.sizes().vec(), (std::vector<int64_t>{16, 3, 3, 5}));
  EXPECT_EQ(layer.bias.sizes().vec(), (std::vector<int64_t>{6}));
  const auto params = layer.named_parameters();
  ASSERT_EQ(params.size(), 2u);
  EXPECT_EQ(params[0].first, "weight");
  EXPECT_EQ(params[1].first, "bias");
  // PyTorch's fan-in of a transposed weight is weight.size(1) * kH * kW = 3 * 15 = 45 (not the
  // in_channels' 240): kaiming_uniform_(a = √5) and the bias both draw within ±1/√45.
  const double bound = 1.0 / std::sqrt(45.0);
  const double w_max = layer.weight.detach().abs().max().item<double>();
  EXPECT_LE(w_max, bound);
  EXPECT_GT(w_max, 0.95 * bound);  // 720 draws reach close to the bound (1/√240 would not)
  const double w_mean = layer.weight.detach().mean().item<double>();
  EXPECT_LT(std::abs(w_mean), 0.1 * bound);
  EXPECT_LE(layer.bias.detach().abs().max().item<double>(), bound);
  EXPECT_GT(layer.bias.detach().abs().max().item<double>(), 0.0);

  nn::ConvTranspose1d one(8, 4, 5, 1, 0, 0, 1, /*bias=*/false);
  EXPECT_EQ(one.name(), "ConvTranspose1d");
  EXPECT_EQ(one.weight.sizes().vec(), (std::vector<int64_t>{8, 4, 5}));
  EXPECT_FALSE(one.bias.defined());
  EXPECT_EQ(one.named_parameters().size(), 1u);
  const double bound1 = 1.0 / std::sqrt(20.0);
  EXPECT_LE(one.weight.detach().abs().max().item<double>(), bound1);
  EXPECT_GT(one.weight.detach().abs().max().item<double>(), 0.9 * bound1);
}

TEST(ConvTransposeLayer, ForwardIsTheFunctional) {
  manual_seed(1);
  nn::ConvTranspose2d layer(4, 6, {3, 2}, {2, 1}, {1, 0}, {1, 0}, 2, true, {1, 2});
  EXPECT_EQ(layer.kernel_size[0], 3);
  EXPECT_EQ(layer.kernel_size[1], 2);
  EXPECT_EQ(layer.dilation[1], 2);
  const Tensor x = randn({2, 4, 5, 3});
  const Tensor y = layer(x);
  EXPECT_TRUE(equal(y, F::conv_transpose2d(x, layer.weight, layer.bias, {2, 1}, {1, 0}, {1, 0}, 2, {1, 2})));
  EXPECT_EQ(y.sizes().vec(), (std::vector<int64_t>{2, 6, 10, 5}));
  nn::ConvTranspose1d one(4, 2, 3, 2, 1, 1);
  const Tensor z = randn({4, 7});
  EXPECT_TRUE(equal(one(z), F::conv_transpose1d(z, one.weight, one.bias, 2, 1, 1)));
  EXPECT_EQ(one(z).sizes().vec(), (std::vector<int64_t>{2, 14}));
}

TEST(ConvTransposeLayer, OutputSizePicksTheOutputPadding) {
  manual_seed(2);
  nn::ConvTranspose2d layer(4, 3, 3, 2);
  const Tensor x = randn({1, 4, 5, 5});
  EXPECT_EQ(layer.forward(x, {11, 11}).sizes().vec(), (std::vector<int64_t>{1, 3, 11, 11}));
  EXPECT_EQ(layer.forward(x, {12, 11}).sizes().vec(), (std::vector<int64_t>{1, 3, 12, 11}));
  EXPECT_EQ(layer.forward(x, {1, 4, 12, 12}).sizes().vec(), (std::vector<int64_t>{1, 3, 12, 12}));
  EXPECT_TRUE(equal(layer.forward(x, {12, 11}), F::conv_transpose2d(x, layer.weight, layer.bias, {2}, {0}, {1, 0})));
  EXPECT_EQ(layer.forward(randn({4, 5, 5}), {4, 12, 12}).sizes().vec(), (std::vector<int64_t>{3, 12, 12}));
  EXPECT_EQ(error_of([&] {
              layer.forward(x, {13, 13});
            }),
            "requested an output size of [13, 13], but valid sizes range from [11, 11] to [12, 12] (for an input of "
            "torch.Size([5, 5]))");
  EXPECT_EQ(error_of([&] {
              layer.forward(x, {10, 11});
            }),
            "requested an output size of [10, 11], but valid sizes range from [11, 11] to [12, 12] (for an input of "
            "torch.Size([5, 5]))");
  EXPECT_EQ(error_of([&] { layer.forward(x, {12}); }),
            "ConvTranspose2D: for 4D input, output_size must have 2 or 4 elements (got 1)");
  EXPECT_EQ(error_of([&] {
              layer.forward(randn({4, 5, 5}), {1, 2, 3, 4});
            }),
            "ConvTranspose2D: for 3D input, output_size must have 2 or 3 elements (got 4)");

  nn::ConvTranspose1d one(4, 3, 3, 2);
  EXPECT_EQ(one.forward(randn({2, 4, 5}), {12}).sizes().vec(), (std::vector<int64_t>{2, 3, 12}));
  EXPECT_EQ(one.forward(randn({2, 4, 5}), {2, 3, 11}).sizes().vec(), (std::vector<int64_t>{2, 3, 11}));
  EXPECT_EQ(one.forward(randn({4, 5}), {12}).sizes().vec(), (std::vector<int64_t>{3, 12}));
  EXPECT_EQ(error_of([&] {
              one.forward(randn({2, 4, 5}), {13});
            }),
            "requested an output size of [13], but valid sizes range from [11] to [12] (for an input of "
            "torch.Size([5]))");
  // Dilation widens the range's start, not its width (stride - 1).
  nn::ConvTranspose1d dilated(4, 3, 3, 3, 1, 0, 1, true, 2);
  EXPECT_EQ(dilated.forward(randn({1, 4, 5}), {17}).sizes().vec(), (std::vector<int64_t>{1, 3, 17}));
  EXPECT_EQ(error_of([&] {
              dilated.forward(randn({1, 4, 5}), {18});
            }),
            "requested an output size of [18], but valid sizes range from [15] to [17] (for an input of "
            "torch.Size([5]))");
  // PyTorch names input.size()[2:], which for an unbatched input leaves nothing.
  EXPECT_EQ(error_of([&] {
              one.forward(randn({4, 5}), {13});
            }),
            "requested an output size of [13], but valid sizes range from [11] to [12] (for an input of "
            "torch.Size([]))");
}

TEST(ConvTransposeLayer, ConstructorChecksArePyTorchs) {
  EXPECT_EQ(error_of([] { nn::ConvTranspose2d(4, 3, 3, 1, 0, 0, 1, true, 1, "reflect"); }),
            "Only \"zeros\" padding mode is supported for ConvTranspose2d");
  EXPECT_EQ(error_of([] { nn::ConvTranspose1d(4, 3, 3, 1, 0, 0, 1, true, 1, "circular"); }),
            "Only \"zeros\" padding mode is supported for ConvTranspose1d");
  EXPECT_EQ(error_of([] { nn::ConvTranspose2d(4, 3, 3, 1, 0, 0, 0); }), "groups must be a positive integer");
  EXPECT_EQ(error_of([] { nn::ConvTranspose2d(4, 3, 3, 1, 0, 0, 3); }), "in_channels must be divisible by groups");
  EXPECT_EQ(error_of([] { nn::ConvTranspose2d(4, 3, 3, 1, 0, 0, 2); }), "out_channels must be divisible by groups");
  EXPECT_EQ(error_of([] {
              nn::ConvTranspose2d(4, 3, {1, 2, 3});
            }),
            "ConvTranspose2d: kernel_size must be a single integer or a list of 2 integers");
}

// ---------------------------------------------------------------- errors

TEST(ConvTransposeErrors, MessagesArePyTorchs) {
  const Tensor x = randn({2, 4, 5, 5}, kFloat64), w = randn({4, 3, 3, 3}, kFloat64);
  auto t2 = [](const Tensor& in, const Tensor& wt, const Tensor& b = Tensor(), IntList s = {1}, IntList p = {0},
               IntList op = {0}, int64_t g = 1,
               IntList d = {1}) { return [=] { conv_transpose2d(in, wt, b, s, p, op, g, d); }; };
  EXPECT_EQ(error_of(t2(x, w, {}, {1}, {0}, {1})),
            "output padding must be smaller than either stride or dilation, but got output_padding_height: 1 "
            "output_padding_width: 1 stride_height: 1 stride_width: 1 dilation_height: 1 dilation_width: 1");
  EXPECT_EQ(error_of(t2(randn({2, 3, 5, 5}, kFloat64), w)),
            "Given transposed=1, weight of size [4, 3, 3, 3], expected input[2, 3, 5, 5] to have 4 channels, but got "
            "3 channels instead");
  EXPECT_EQ(error_of(t2(randn({3, 5, 5}, kFloat64), w)),
            "Given transposed=1, weight of size [4, 3, 3, 3], expected input[1, 3, 5, 5] to have 4 channels, but got "
            "3 channels instead");
  EXPECT_EQ(error_of(t2(x, w, randn({4}, kFloat64))),
            "Given transposed=1, weight of size [4, 3, 3, 3], expected bias to be 1-dimensional with 3 elements, but "
            "got bias of size [4] instead");
  EXPECT_EQ(error_of(t2(x, w, randn({3}, kFloat64), {1}, {0}, {0}, 2)),
            "Given transposed=1, weight of size [4, 3, 3, 3], expected bias to be 1-dimensional with 6 elements, but "
            "got bias of size [3] instead");
  EXPECT_EQ(error_of(t2(x, w, {}, {1}, {0}, {0}, 3)),
            "Given groups=3, expected weight to be divisible by 3 at dimension 0, but got weight of size "
            "[[4, 3, 3, 3]] instead");
  EXPECT_EQ(error_of(t2(randn({2, 2, 5, 5}, kFloat64), randn({2, 3, 3, 3}, kFloat64), {}, {1}, {0}, {0}, 3)),
            "Given groups=3, expected weight to be at least 3 at dimension 0, but got weight of size [2, 3, 3, 3] "
            "instead");
  EXPECT_EQ(error_of(t2(x, w, {}, {1}, {0}, {0}, 0)), "non-positive groups is not supported");
  EXPECT_EQ(error_of(t2(x, w, {}, {1}, {-1})), "negative padding is not supported");
  EXPECT_EQ(error_of(t2(x, w, {}, {0})), "non-positive stride is not supported");
  EXPECT_EQ(error_of(t2(x, w, {}, {1}, {0}, {-1})), "negative output_padding is not supported");
  EXPECT_EQ(error_of(t2(x, w, {}, {0}, {0}, {-1})), "negative output_padding is not supported");
  EXPECT_EQ(error_of(t2(x, w, {}, {1}, {0}, {0}, 1, {-1})), "dilation should be greater than zero");
  EXPECT_EQ(error_of(t2(x, w, {}, {1}, {0}, {0}, 1, {0})),
            "dilation should be greater than zero, but got dilation_height: 0, dilation_width: 0");
  EXPECT_EQ(error_of(t2(randn({2, 4, 1, 1}, kFloat64), w, {}, {1}, {2})),
            "Given input size per channel: (1 x 1). Calculated output size per channel: (-1 x -1). Output size is "
            "too small");
  EXPECT_EQ(error_of(t2(randn({2, 4, 1, 1}, kFloat64), w, {}, {2}, {3}, {2})),
            "output padding must be smaller than either stride or dilation, but got output_padding_height: 2 "
            "output_padding_width: 2 stride_height: 2 stride_width: 2 dilation_height: 1 dilation_width: 1");
  EXPECT_EQ(error_of(t2(randn({4, 5}, kFloat64), w)),
            "Expected 3D (unbatched) or 4D (batched) input to conv_transpose2d, but got input of size: [4, 5]");
  EXPECT_EQ(error_of(t2(randn({1, 2, 4, 5, 5}, kFloat64), w, {}, {1, 1, 1})),
            "Expected 3D (unbatched) or 4D (batched) input to conv_transpose2d, but got input of size: "
            "[1, 2, 4, 5, 5]");
  EXPECT_EQ(error_of(t2(x, randn({4, 3, 3}, kFloat64))),
            "expected stride to be a single integer value or a list of 1 values to match the convolution "
            "dimensions, but got stride=[1, 1]");
  EXPECT_EQ(error_of(t2(x, randn({4, 3, 3, 3, 3}, kFloat64))),
            "expected stride to be a single integer value or a list of 3 values to match the convolution "
            "dimensions, but got stride=[1, 1]");
  EXPECT_EQ(error_of(t2(x, randn({4, 3}, kFloat64))), "weight should have at least three dimensions");
  EXPECT_EQ(error_of(t2(x, w, {}, {1, 2, 3})),
            "expected stride to be a single integer value or a list of 2 values to match the convolution "
            "dimensions, but got stride=[1, 2, 3]");
  EXPECT_EQ(error_of(t2(x, w, {}, {1}, {0}, {1, 2, 3})),
            "expected output_padding to be a single integer value or a list of 2 values to match the convolution "
            "dimensions, but got output_padding=[1, 2, 3]");
  EXPECT_EQ(error_of(t2(randn({2, 4, 0, 5}, kFloat64), w)),
            "Only zero batch or zero channel inputs are supported, but got input shape: [2, 4, 0, 5]");
  EXPECT_EQ(error_of(t2(x, randn({4, 0, 3, 3}, kFloat64))),
            "non-empty 2D or 4D weight tensor expected, but got: [4, 0, 3, 3]");
  EXPECT_EQ(error_of(t2(x, randn({4, 3, 0, 3}, kFloat64))),
            "kernel size should be greater than zero, but got kernel_height: 0 kernel_width: 3");
  EXPECT_EQ(error_of(t2(x, w.to(kFloat32))), "Input type (double) and weight type (float) should be the same");
  EXPECT_EQ(error_of(t2(x.to(kInt64), w.to(kInt64))), "\"conv_transpose2d\" not implemented for 'Long'");
}

TEST(ConvTransposeErrors, OneDimensionalMessagesArePyTorchs) {
  const Tensor x = randn({2, 4, 5}, kFloat64), w = randn({4, 3, 3}, kFloat64);
  EXPECT_EQ(error_of([&] { conv_transpose1d(x, w, Tensor(), 1, 0, 1); }),
            "output padding must be smaller than either stride or dilation, but got output_padding_height: 0 "
            "output_padding_width: 1 stride_height: 1 stride_width: 1 dilation_height: 1 dilation_width: 1");
  EXPECT_EQ(error_of([&] {
              conv_transpose1d(randn({2, 4, 5, 5}, kFloat64), w);
            }),
            "Expected 2D (unbatched) or 3D (batched) input to conv_transpose1d, but got input of size: [2, 4, 5, 5]");
  EXPECT_EQ(error_of([&] {
              conv_transpose1d(randn({2, 3, 5}, kFloat64), w);
            }),
            "Given transposed=1, weight of size [4, 3, 3], expected input[2, 3, 5] to have 4 channels, but got 3 "
            "channels instead");
  EXPECT_EQ(error_of([&] {
              conv_transpose1d(randn({3, 5}, kFloat64), w);
            }),
            "Given transposed=1, weight of size [4, 3, 3], expected input[1, 3, 5] to have 4 channels, but got 3 "
            "channels instead");
  EXPECT_EQ(error_of([&] {
              conv_transpose1d(x, randn({4, 3, 3, 3}, kFloat64));
            }),
            "Expected 4-dimensional input for 4-dimensional weight [4, 3, 3, 3], but got 3-dimensional input of size "
            "[2, 4, 5] instead");
  EXPECT_EQ(error_of([&] {
              conv_transpose1d(x, randn({4, 0, 3}, kFloat64));
            }),
            "non-empty 2D or 4D weight tensor expected, but got: [4, 0, 1, 3]");
  EXPECT_EQ(error_of([&] {
              conv_transpose1d(x, randn({4, 3}, kFloat64));
            }),
            "weight should have at least three dimensions");
  EXPECT_EQ(error_of([&] {
              conv_transpose1d(randn({2, 4, 1}, kFloat64), w, Tensor(), 1, 2);
            }),
            "Given input size per channel: (1 x 1). Calculated output size per channel: (1 x -1). Output size is too "
            "small");
  EXPECT_EQ(error_of([&] { conv_transpose1d(x, w, Tensor(), 1, 0, 0, 1, 0); }),
            "dilation should be greater than zero, but got dilation_height: 1, dilation_width: 0");
  EXPECT_EQ(error_of([&] { conv_transpose1d(x, w, Tensor(), 1, 0, 0, 0); }), "non-positive groups is not supported");
}

TEST(ConvTransposeErrors, EmptyBatchGivesAnEmptyResult) {
  Tensor x = randn({0, 4, 5, 5}, kFloat64).requires_grad_();
  Tensor w = randn({4, 3, 3, 3}, kFloat64).requires_grad_();
  Tensor b = randn({3}, kFloat64).requires_grad_();
  const Tensor y = conv_transpose2d(x, w, b);
  EXPECT_EQ(y.sizes().vec(), (std::vector<int64_t>{0, 3, 7, 7}));
  y.sum().backward();
  EXPECT_EQ(x.grad().sizes().vec(), (std::vector<int64_t>{0, 4, 5, 5}));
  EXPECT_TRUE(equal(w.grad(), zeros({4, 3, 3, 3}, kFloat64)));
  EXPECT_TRUE(equal(b.grad(), zeros({3}, kFloat64)));
}

// ---------------------------------------------------------------- devices

class ConvTransposeDevice : public ember_test::DeviceTest {};

TEST_P(ConvTransposeDevice, EveryCaseMatchesTheCpu) {
  for (const GoldenCase& c : ember_test::golden_cases(golden().metadata)) {
    SCOPED_TRACE(c.description);
    for (const Dtype dtype : {kFloat64, kFloat32}) {
      const double tol = dtype == kFloat64 ? 1e-12 : 1e-4;
      const bool has_bias = c.flag("bias");
      Tensor x_cpu = leaf(at(c, "x"), dtype), x_dev = at(c, "x").to(dtype).clone().to(device()).requires_grad_();
      Tensor w_cpu = leaf(at(c, "w"), dtype), w_dev = at(c, "w").to(dtype).clone().to(device()).requires_grad_();
      Tensor b_cpu = has_bias ? leaf(at(c, "b"), dtype) : Tensor();
      Tensor b_dev = has_bias ? at(c, "b").to(dtype).clone().to(device()).requires_grad_() : Tensor();
      const Tensor y_cpu = run_case(c, x_cpu, w_cpu, b_cpu), y_dev = run_case(c, x_dev, w_dev, b_dev);
      ASSERT_EQ(y_dev.device(), device());
      EXPECT_CLOSE_TO_CPU(y_dev, y_cpu, tol, tol);
      std::vector<Tensor> wrt_cpu{x_cpu, w_cpu}, wrt_dev{x_dev, w_dev};
      if (has_bias) {
        wrt_cpu.push_back(b_cpu);
        wrt_dev.push_back(b_dev);
      }
      const Tensor gy = at(c, "gy").to(dtype);
      const std::vector<Tensor> g_cpu = autograd::grad({y_cpu}, wrt_cpu, {gy});
      const std::vector<Tensor> g_dev = autograd::grad({y_dev}, wrt_dev, {gy.to(device())});
      for (size_t i = 0; i < g_cpu.size(); ++i) EXPECT_CLOSE_TO_CPU(g_dev[i], g_cpu[i], tol, tol);
    }
  }
}

TEST_P(ConvTransposeDevice, LayerAndSecondDerivativesMatchTheCpu) {
  manual_seed(9);
  nn::ConvTranspose2d layer(4, 2, 4, 2, 1);
  const Tensor x = randn({2, 4, 6, 6});
  const Tensor y_cpu = layer(x);
  layer.to(device());
  const Tensor y_dev = layer.forward(x.to(device()), {12, 12});
  EXPECT_CLOSE_TO_CPU(y_dev, y_cpu, 1e-4, 1e-4);
  // A double backward on the device: the gradient's own gradient.
  Tensor xd = randn({1, 2, 3, 3}, kFloat64).requires_grad_();
  Tensor wd = randn({2, 2, 2, 2}, kFloat64).requires_grad_();
  Tensor xv = xd.detach().to(device()).requires_grad_(), wv = wd.detach().to(device()).requires_grad_();
  auto second = [](const Tensor& in, const Tensor& wt) {
    const Tensor y = conv_transpose2d(in, wt, Tensor(), {2}, {0}, {1});
    const Tensor gx = autograd::grad({(y * y).sum()}, {in}, {}, std::nullopt, /*create_graph=*/true)[0];
    return autograd::grad({gx.sum()}, {wt})[0];
  };
  EXPECT_CLOSE_TO_CPU(second(xv, wv), second(xd, wd), 1e-12, 1e-12);
}

EMBER_INSTANTIATE_DEVICE_SUITE(ConvTransposeDevice);

}  // namespace
