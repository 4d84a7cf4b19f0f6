// conv2d and Conv2d against PyTorch: values and all three gradients from goldens written by
// tools/gen_conv_golden.py (float64 through im2col, float32 through both oneDNN and im2col, the
// 16-bit floats), float64 finite-difference gradchecks, PyTorch's error messages, the layer's
// initialisation for a seed, and the autograd node's name.
#include <gtest/gtest.h>

#include <cstdlib>
#include <optional>
#include <sstream>
#include <string>
#include <thread>
#include <vector>

#include "ember/ember.h"
#include "ember/io/safetensors.h"
#include "ember/nn/conv.h"
#include "support/error_of.h"
#include "support/gradcheck.h"

namespace {

using namespace ember;
namespace nn = ember::nn;
namespace F = ember::nn::functional;
using ember_test::error_of;

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

const io::SafetensorsData& cases() {
  static const io::SafetensorsData data =
      io::load_safetensors(EMBER_SOURCE_DIR "/tests/nn/golden/conv_cases.safetensors");
  return data;
}

/// One golden case's arguments, parsed from the metadata "sh,sw,ph|mode,pw,dh,dw,groups".
struct Case {
  std::string prefix;
  std::vector<int64_t> stride, padding, dilation;
  std::string padding_mode;
  int64_t groups = 1;
};

std::vector<Case> all_cases() {
  std::vector<Case> out;
  const int count = std::stoi(cases().metadata.at("count"));
  for (int i = 0; i < count; ++i) {
    Case c;
    c.prefix = "case" + std::to_string(i) + ".";
    std::stringstream ss(cases().metadata.at("case" + std::to_string(i)));
    std::vector<std::string> f;
    for (std::string item; std::getline(ss, item, ',');) f.push_back(item);
    c.stride = {std::stoll(f[0]), std::stoll(f[1])};
    size_t next = 2;
    if (f[2] == "same" || f[2] == "valid") {
      c.padding_mode = f[2];
      next = 3;
    } else {
      c.padding = {std::stoll(f[2]), std::stoll(f[3])};
      next = 4;
    }
    c.dilation = {std::stoll(f[next]), std::stoll(f[next + 1])};
    c.groups = std::stoll(f[next + 2]);
    out.push_back(c);
  }
  return out;
}

Tensor golden(const Case& c, const std::string& name) { return cases().at(c.prefix + name); }

/// A new leaf holding a golden tensor in `dtype` (never the cached golden itself).
Tensor leaf(const Tensor& t, Dtype dtype) { return t.to(dtype).clone().requires_grad_(); }

Tensor run(const Case& c, const Tensor& x, const Tensor& w, const Tensor& b) {
  if (!c.padding_mode.empty()) return F::conv2d(x, w, b, c.stride, c.padding_mode, c.dilation, c.groups);
  return F::conv2d(x, w, b, c.stride, c.padding, c.dilation, c.groups);
}

/// Runs every golden case in `dtype`, comparing the output and the three gradients.
void check_goldens(Dtype dtype, double rtol, double atol) {
  for (const Case& c : all_cases()) {
    SCOPED_TRACE(c.prefix + " in " + std::string(dtype_name(dtype)));
    const bool has_bias = cases().contains(c.prefix + "b");
    Tensor x = leaf(golden(c, "x"), dtype);
    Tensor w = leaf(golden(c, "w"), dtype);
    Tensor b = has_bias ? leaf(golden(c, "b"), dtype) : Tensor();
    Tensor y = run(c, x, w, b);
    ASSERT_EQ(y.dtype(), dtype);
    ASSERT_EQ(y.sizes().vec(), golden(c, "y").sizes().vec());
    EXPECT_TRUE(allclose(y.to(kFloat64), golden(c, "y"), rtol, atol)) << y;
    y.backward(golden(c, "gy").to(dtype));
    EXPECT_TRUE(allclose(x.grad().to(kFloat64), golden(c, "gx"), rtol, atol)) << x.grad();
    EXPECT_TRUE(allclose(w.grad().to(kFloat64), golden(c, "gw"), rtol, atol)) << w.grad();
    if (has_bias) {
      EXPECT_TRUE(allclose(b.grad().to(kFloat64), golden(c, "gb"), rtol, atol)) << b.grad();
    }
  }
}

TEST(ConvGolden, Float64Im2col) { check_goldens(kFloat64, 1e-12, 1e-12); }

TEST(ConvGolden, Float32OneDnn) {
  Float32Path path("onednn");
  check_goldens(kFloat32, 1e-4, 1e-4);
}

TEST(ConvGolden, Float32Im2col) {
  Float32Path path("im2col");
  check_goldens(kFloat32, 1e-4, 1e-4);
}

TEST(ConvGolden, HalfTypesComputeInFloat32) {
  // Inputs rounded to 16 bits, sums of up to ~60 terms: a few units in the last place.
  check_goldens(kFloat16, 2e-2, 5e-2);
  check_goldens(kBFloat16, 5e-2, 2e-1);
}

// Channel counts like the MNIST CNN's, where oneDNN picks blocked layouts (and reorders to
// them): both float32 paths against float64.
TEST(ConvGolden, Float32PathsAgreeOnWiderLayers) {
  struct Config {
    std::vector<int64_t> x, w;
    int64_t stride, padding, groups;
  };
  const std::vector<Config> configs = {
      {{3, 32, 10, 10}, {64, 32, 3, 3}, 1, 1, 1},
      {{2, 32, 9, 11}, {48, 16, 3, 3}, 2, 0, 2},
      {{2, 1, 12, 12}, {32, 1, 3, 3}, 1, 0, 1},
  };
  manual_seed(11);
  for (const Config& c : configs) {
    Tensor x = randn(c.x, kFloat64), w = randn(c.w, kFloat64), b = randn({c.w[0]}, kFloat64);
    Tensor y64 = F::conv2d(x, w, b, {c.stride}, {c.padding}, {1}, c.groups);
    Tensor gy = randn(y64.sizes(), kFloat64);
    Tensor x64 = leaf(x, kFloat64), w64 = leaf(w, kFloat64), b64 = leaf(b, kFloat64);
    F::conv2d(x64, w64, b64, {c.stride}, {c.padding}, {1}, c.groups).backward(gy);
    for (const char* path : {"onednn", "im2col"}) {
      SCOPED_TRACE(path);
      Float32Path p(path);
      Tensor x32 = leaf(x, kFloat32), w32 = leaf(w, kFloat32), b32 = leaf(b, kFloat32);
      Tensor y32 = F::conv2d(x32, w32, b32, {c.stride}, {c.padding}, {1}, c.groups);
      y32.backward(gy.to(kFloat32));
      EXPECT_TRUE(allclose(y32.to(kFloat64), y64, 1e-4, 1e-4));
      EXPECT_TRUE(allclose(x32.grad().to(kFloat64), x64.grad(), 1e-4, 1e-4));
      EXPECT_TRUE(allclose(w32.grad().to(kFloat64), w64.grad(), 1e-4, 1e-3));
      EXPECT_TRUE(allclose(b32.grad().to(kFloat64), b64.grad(), 1e-4, 1e-3));
    }
  }
}

TEST(ConvGolden, BadPathVariableIsAnError) {
  Float32Path path("fast");
  EXPECT_EQ(error_of([] {
              F::conv2d(ones({1, 1, 3, 3}), ones({1, 1, 2, 2}));
            }),
            "EMBER_CONV2D_PATH must be \"onednn\" or \"im2col\", got \"fast\"");
}

// ---------------------------------------------------------------- gradcheck

struct Geometry {
  std::vector<int64_t> x, w;
  std::vector<int64_t> stride, padding, dilation;
  int64_t groups;
  bool bias;
};

TEST(ConvGradcheck, Float64OverGeometries) {
  const std::vector<Geometry> geometries = {
      {{2, 2, 5, 4}, {3, 2, 2, 2}, {1}, {0}, {1}, 1, true},
      {{1, 2, 6, 5}, {2, 2, 3, 2}, {2, 1}, {1, 0}, {1}, 1, true},
      {{1, 1, 7, 6}, {2, 1, 2, 3}, {1}, {2, 1}, {2, 1}, 1, false},
      {{2, 4, 4, 4}, {4, 2, 2, 2}, {1, 2}, {1}, {1}, 2, true},
      {{1, 3, 5, 5}, {3, 1, 3, 3}, {2}, {1}, {2}, 3, true},
      {{1, 2, 3, 3}, {3, 2, 1, 1}, {1}, {0}, {1}, 1, true},
  };
  manual_seed(3);
  for (const Geometry& g : geometries) {
    std::vector<Tensor> inputs{randn(g.x, kFloat64), randn(g.w, kFloat64)};
    if (g.bias) inputs.push_back(randn({g.w[0]}, kFloat64));
    test::gradcheck(
        "conv2d",
        [&](const std::vector<Tensor>& in) {
          return F::conv2d(in[0], in[1], g.bias ? in[2] : Tensor(), g.stride, g.padding, g.dilation, g.groups);
        },
        inputs);
  }
}

TEST(ConvGradcheck, SamePaddingAndUnbatched) {
  manual_seed(4);
  test::gradcheck("conv2d same",
                  [](const std::vector<Tensor>& in) {
                    return F::conv2d(in[0], in[1], in[2], {1}, "same", {1, 2});
                  },
                  {randn({2, 4, 3}, kFloat64), randn({2, 2, 2, 2}, kFloat64), randn({2}, kFloat64)});
}

TEST(ConvGradcheck, OnlySomeInputsRequireGrad) {
  manual_seed(5);
  Tensor x = randn({2, 2, 5, 5}, kFloat64);
  Tensor w = randn({3, 2, 3, 3}, kFloat64).requires_grad_();
  Tensor b = randn({3}, kFloat64);
  F::conv2d(x, w, b).sum().backward();
  EXPECT_FALSE(x.grad().defined());
  EXPECT_TRUE(w.grad().defined());
  Tensor x2 = x.clone().requires_grad_();
  F::conv2d(x2, w.detach(), b).sum().backward();
  EXPECT_TRUE(x2.grad().defined());
  EXPECT_EQ(x2.grad().sizes().vec(), x.sizes().vec());
}

// ---------------------------------------------------------------- semantics

TEST(ConvOp, GradFnNameAndShapes) {
  Tensor x = randn({2, 3, 8, 8});
  Tensor w = randn({4, 3, 3, 3}).requires_grad_();
  Tensor y = F::conv2d(x, w, Tensor(), {2}, {1});
  EXPECT_EQ(y.grad_fn_name(), "ConvolutionBackward0");
  EXPECT_EQ(y.sizes().vec(), (std::vector<int64_t>{2, 4, 4, 4}));
  EXPECT_EQ(F::conv2d(x[0], w).sizes().vec(), (std::vector<int64_t>{4, 6, 6}));
  EXPECT_EQ(F::conv2d(x, w, Tensor(), {1}, "valid").sizes().vec(), (std::vector<int64_t>{2, 4, 6, 6}));
  EXPECT_EQ(F::conv2d(x, w, Tensor(), {1}, std::string("same")).sizes().vec(), (std::vector<int64_t>{2, 4, 8, 8}));
}

TEST(ConvOp, ZeroBatch) {
  for (const char* path : {"onednn", "im2col"}) {
    Float32Path p(path);
    Tensor x = zeros({0, 3, 6, 6}).requires_grad_();
    Tensor w = randn({4, 3, 3, 3}).requires_grad_();
    Tensor b = randn({4}).requires_grad_();
    Tensor y = F::conv2d(x, w, b);
    EXPECT_EQ(y.sizes().vec(), (std::vector<int64_t>{0, 4, 4, 4}));
    y.sum().backward();
    EXPECT_EQ(x.grad().sizes().vec(), (std::vector<int64_t>{0, 3, 6, 6}));
    EXPECT_TRUE(equal(w.grad(), zeros({4, 3, 3, 3})));
    EXPECT_TRUE(equal(b.grad(), zeros({4})));
  }
}

// Cached oneDNN primitives are created on one thread and may run on any other (a data loader's,
// a second model's); each thread brings its own scratchpad.
TEST(ConvOp, OneDnnPrimitivesRunOnOtherThreads) {
  Float32Path path("onednn");
  manual_seed(8);
  Tensor x = randn({4, 16, 12, 12}), w = randn({32, 16, 3, 3}).requires_grad_(), b = randn({32});
  Tensor expected = F::conv2d(x, w, b, {1}, {1});
  expected.sum().backward();
  Tensor expected_grad = w.grad().clone();
  std::vector<Tensor> results(4), grads(4);
  std::vector<std::thread> threads;
  for (size_t t = 0; t < results.size(); ++t) {
    threads.emplace_back([&, t] {
      Tensor wt = w.detach().clone().requires_grad_();
      results[t] = F::conv2d(x, wt, b, {1}, {1});
      results[t].sum().backward();
      grads[t] = wt.grad();
    });
  }
  for (std::thread& t : threads) t.join();
  for (size_t t = 0; t < results.size(); ++t) {
    EXPECT_TRUE(equal(results[t].detach(), expected.detach()));
    EXPECT_TRUE(allclose(grads[t], expected_grad, 1e-5, 1e-4));
  }
}

TEST(ConvOp, NonContiguousOperands) {
  manual_seed(6);
  Tensor x = randn({2, 5, 6, 3}, kFloat64).permute({0, 3, 1, 2});  // [2, 3, 5, 6], channels last
  Tensor w = randn({4, 3, 2, 2}, kFloat64).transpose(2, 3);
  EXPECT_TRUE(allclose(F::conv2d(x, w), F::conv2d(x.contiguous(), w.contiguous()), 0, 0));
}

TEST(ConvOp, Errors) {
  Tensor x = zeros({1, 4, 5, 5});
  Tensor w = zeros({6, 2, 3, 3});
  Tensor w4 = zeros({6, 4, 3, 3});
  EXPECT_EQ(error_of([] {
              F::conv2d(zeros({2, 3}), zeros({6, 2, 3, 3}));
            }),
            "Expected 3D (unbatched) or 4D (batched) input to conv2d, but got input of size: [2, 3]");
  EXPECT_EQ(error_of([&] {
              F::conv2d(zeros({1, 2, 3, 4, 5}), w);
            }),
            "Expected 3D (unbatched) or 4D (batched) input to conv2d, but got input of size: [1, 2, 3, 4, 5]");
  EXPECT_EQ(error_of([&] {
              F::conv2d(x, zeros({6, 2, 3}));
            }),
            "Expected 4-dimensional weight [out_channels, in_channels/groups, kH, kW] for conv2d, but got weight of "
            "size [6, 2, 3]");
  EXPECT_EQ(error_of([&] { F::conv2d(x, w, Tensor(), {1}, {0}, {1}, 0); }), "non-positive groups is not supported");
  EXPECT_EQ(error_of([&] { F::conv2d(x, w, Tensor(), {1}, {0}, {1}, 4); }),
            "Given groups=4, expected weight to be divisible by 4 at dimension 0, but got weight of size "
            "[[6, 2, 3, 3]] instead");
  EXPECT_EQ(error_of([&] { F::conv2d(x, w); }),
            "Given groups=1, weight of size [6, 2, 3, 3], expected input[1, 4, 5, 5] to have 2 channels, but got 4 "
            "channels instead");
  EXPECT_EQ(error_of([&] { F::conv2d(x, w4, zeros({5})); }),
            "Given weight of size [6, 4, 3, 3], expected bias to be 1-dimensional with 6 elements, but got bias of "
            "size [5] instead");
  EXPECT_EQ(error_of([&] {
              F::conv2d(zeros({4, 5, 5}), w4, zeros({6, 1}));
            }),
            "Given weight of size [6, 4, 3, 3], expected bias to be 1-dimensional with 6 elements, but got bias of "
            "size [6, 1] instead");
  EXPECT_EQ(error_of([&] {
              F::conv2d(x, zeros({6, 4, 7, 3}));
            }),
            "Calculated padded input size per channel: (5 x 5). Kernel size: (7 x 3). Kernel size can't be greater "
            "than actual input size");
  EXPECT_EQ(error_of([&] { F::conv2d(x, w4, Tensor(), {1}, {0}, {3}); }),
            "Calculated padded input size per channel: (5 x 5). Kernel size: (7 x 7). Kernel size can't be greater "
            "than actual input size");
  EXPECT_EQ(error_of([&] { F::conv2d(x, w4, Tensor(), {0}); }), "non-positive stride is not supported");
  EXPECT_EQ(error_of([&] { F::conv2d(x, w4, Tensor(), {1}, {-1}); }), "negative padding is not supported");
  EXPECT_EQ(error_of([&] { F::conv2d(x, w4, Tensor(), {1}, {0}, {0}); }),
            "dilation should be greater than zero, but got [0, 0]");
  EXPECT_EQ(error_of([&] {
              F::conv2d(x, w4, Tensor(), {1, 2, 3});
            }),
            "expected stride to be a single integer value or a list of 2 values to match the convolution "
            "dimensions, but got stride=[1, 2, 3]");
  EXPECT_EQ(error_of([&] {
              F::conv2d(x, w4, Tensor(), {1}, {1, 2, 3});
            }),
            "expected padding to be a single integer value or a list of 2 values to match the convolution "
            "dimensions, but got padding=[1, 2, 3]");
  EXPECT_EQ(error_of([&] {
              F::conv2d(x, w4, Tensor(), {1}, {0}, {1, 2, 3});
            }),
            "expected dilation to be a single integer value or a list of 2 values to match the convolution "
            "dimensions, but got dilation=[1, 2, 3]");
  EXPECT_EQ(error_of([&] { F::conv2d(x, w4.to(kFloat64)); }),
            "Input type (float) and weight type (double) should be the same");
  EXPECT_EQ(error_of([&] { F::conv2d(x, w4, zeros({6}, kFloat64)); }),
            "Input type (float) and bias type (double) should be the same");
  EXPECT_EQ(error_of([&] { F::conv2d(x.to(kFloat16), w4.to(kFloat16), zeros({6})); }),
            "Input type (c10::Half) and bias type (float) should be the same");
  EXPECT_EQ(error_of([&] { F::conv2d(x.to(kInt32), w4.to(kInt32)); }), "\"conv2d\" not implemented for 'Int'");
  EXPECT_EQ(error_of([&] { F::conv2d(x, w4, Tensor(), {1}, "foo"); }), "Invalid padding string: 'foo'");
  EXPECT_EQ(error_of([&] { F::conv2d(x, w4, Tensor(), {2}, "same"); }),
            "padding='same' is not supported for strided convolutions");
  EXPECT_THROW(F::conv2d(Tensor(), w4), Error);
  EXPECT_THROW(F::conv2d(x, Tensor()), Error);
}

// ---------------------------------------------------------------- the layer

TEST(ConvLayer, InitialisationMatchesTorch) {
  const io::SafetensorsData init = io::load_safetensors(EMBER_SOURCE_DIR "/tests/nn/golden/conv_init.safetensors");
  manual_seed(0);
  nn::Conv2d a(1, 32, 3);
  EXPECT_TRUE(equal(a.weight.detach(), init.at("seed0.weight")));
  EXPECT_TRUE(equal(a.bias.detach(), init.at("seed0.bias")));
  manual_seed(123);
  nn::Conv2d b(4, 6, {3, 5}, 2, 0, 1, 2);
  EXPECT_TRUE(equal(b.weight.detach(), init.at("seed123.weight")));
  EXPECT_TRUE(equal(b.bias.detach(), init.at("seed123.bias")));
}

TEST(ConvLayer, ParametersAndForward) {
  nn::Conv2d conv(3, 8, {3, 5}, {2}, {1, 2}, 1, 1, /*bias=*/false);
  EXPECT_EQ(conv.name(), "Conv2d");
  EXPECT_EQ(conv.state_dict().keys(), std::vector<std::string>{"weight"});
  EXPECT_EQ(conv.weight.sizes().vec(), (std::vector<int64_t>{8, 3, 3, 5}));
  EXPECT_FALSE(conv.bias.defined());
  EXPECT_EQ(conv.stride[0], 2);
  EXPECT_EQ(conv.padding[1], 2);
  Tensor x = randn({2, 3, 9, 9});
  Tensor y = conv(x);
  EXPECT_TRUE(equal(y, F::conv2d(x, conv.weight, Tensor(), {2}, {1, 2})));
  y.sum().backward();
  EXPECT_TRUE(conv.weight.grad().defined());

  nn::Conv2d grouped(4, 4, 3, 1, "same", 2, 2);
  EXPECT_EQ(grouped.state_dict().keys(), (std::vector<std::string>{"weight", "bias"}));
  EXPECT_EQ(grouped.weight.sizes().vec(), (std::vector<int64_t>{4, 2, 3, 3}));
  EXPECT_EQ(grouped(randn({1, 4, 7, 6})).sizes().vec(), (std::vector<int64_t>{1, 4, 7, 6}));
  EXPECT_EQ(grouped(randn({4, 7, 6})).sizes().vec(), (std::vector<int64_t>{4, 7, 6}));
}

TEST(ConvLayer, Errors) {
  EXPECT_EQ(error_of([] { nn::Conv2d(4, 6, 3, 1, 0, 1, 0); }), "groups must be a positive integer");
  EXPECT_EQ(error_of([] { nn::Conv2d(4, 6, 3, 1, 0, 1, 3); }), "in_channels must be divisible by groups");
  EXPECT_EQ(error_of([] { nn::Conv2d(4, 6, 3, 1, 0, 1, 4); }), "out_channels must be divisible by groups");
  EXPECT_EQ(error_of([] { nn::Conv2d(4, 6, 3, 2, "same"); }),
            "padding='same' is not supported for strided convolutions");
  EXPECT_EQ(error_of([] { nn::Conv2d(4, 6, 3, 1, "foo"); }),
            "Invalid padding string 'foo', should be one of {'same', 'valid'}");
  EXPECT_EQ(error_of([] {
              nn::Conv2d(4, 6, {3, 3, 3});
            }),
            "Conv2d: kernel_size must be a single integer or a list of 2 integers");
  EXPECT_EQ(error_of([] { nn::Conv2d(4, 6, 0); }), "Conv2d: kernel_size must be positive, got [0, 0]");
}

}  // namespace

namespace {

// bfloat16 convolutions run natively through oneDNN on CPUs with AVX512-BF16 and widen to float32
// elsewhere; both sum in float32 and round once. With small integers every sum is exact, so the
// output and every gradient must be the float32 results rounded to bfloat16, bit for bit.
TEST(BFloat16Conv2d, RoundsTheFloat32ResultsOnce) {
  using namespace ember;
  namespace F = ember::nn::functional;
  for (const int64_t groups : {1, 2}) {
    SCOPED_TRACE("groups " + std::to_string(groups));
    manual_seed(8);
    const Tensor x = randint(-3, 4, {4, 6, 11, 9}).to(kFloat32);
    const Tensor w = randint(-3, 4, {8, 6 / groups, 3, 3}).to(kFloat32);
    const Tensor b = randint(-3, 4, {8}).to(kFloat32);
    const Tensor g = randint(-2, 3, {4, 8, 6, 9}).to(kFloat32);
    auto run = [&](Dtype dtype) {
      Tensor xd = x.to(dtype).detach().requires_grad_(), wd = w.to(dtype).detach().requires_grad_();
      Tensor bd = b.to(dtype).detach().requires_grad_();
      Tensor y = F::conv2d(xd, wd, bd, {2, 1}, {1, 1}, {1, 1}, groups);
      y.backward(g.to(dtype));
      return std::vector<Tensor>{y, xd.grad(), wd.grad(), bd.grad()};
    };
    const std::vector<Tensor> want = run(kFloat32), got = run(kBFloat16);
    const char* names[] = {"output", "input gradient", "weight gradient", "bias gradient"};
    for (size_t i = 0; i < want.size(); ++i) {
      EXPECT_EQ(got[i].dtype(), kBFloat16) << names[i];
      EXPECT_TRUE(equal(got[i], want[i].to(kBFloat16))) << names[i];
    }
  }
}

}  // namespace
