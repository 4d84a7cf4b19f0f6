// 3-D convolution (ember/nn/conv3d.h): conv3d and conv_transpose3d and the Conv3d and
// ConvTranspose3d layers against PyTorch's values and gradients
// (tools/gen_conv3d_pool3d_golden.py) in float64 and float32, the layers' initialisation and
// state_dict keys, finite-difference gradients and PyTorch's error messages.
#include <gtest/gtest.h>

#include <memory>
#include <sstream>
#include <string>
#include <vector>

#include "ember/ember.h"
#include "ember/io/safetensors.h"
#include "ember/nn/conv3d.h"
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
      io::load_safetensors(EMBER_SOURCE_DIR "/tests/nn/golden/conv3d_golden.safetensors");
  return data;
}

const Tensor& at(const GoldenCase& c, const std::string& name) { return golden().at(c.prefix + name); }
bool has(const GoldenCase& c, const std::string& name) { return golden().contains(c.prefix + name); }

std::vector<int64_t> list(const GoldenCase& c, const std::string& key) {
  std::vector<int64_t> out;
  std::istringstream in(c.options.at(key));
  for (int64_t v = 0; in >> v;) out.push_back(v);
  return out;
}

/// The upstream gradient the goldens used: cos(0.7 * k) for the k-th element of y.
Tensor upstream(const Tensor& y) { return cos(arange(y.numel(), kFloat64) * 0.7).reshape(y.sizes()).to(y.dtype()); }

/// The op of a functional case, in `dtype`.
Tensor run_op(const GoldenCase& c, const Tensor& x, const Tensor& w, const Tensor& b) {
  if (c.kind == "conv3d") {
    const std::string padding = c.options.at("padding");
    if (padding == "same" || padding == "valid") {
      return F::conv3d(x, w, b, list(c, "stride"), padding, list(c, "dilation"), c.num("groups"));
    }
    return F::conv3d(x, w, b, list(c, "stride"), list(c, "padding"), list(c, "dilation"), c.num("groups"));
  }
  return F::conv_transpose3d(x, w, b, list(c, "stride"), list(c, "padding"), list(c, "output_padding"), c.num("groups"),
                             list(c, "dilation"));
}

std::vector<GoldenCase> cases_of(bool layers) {
  std::vector<GoldenCase> out;
  for (GoldenCase& c : ember_test::golden_cases(golden().metadata)) {
    const bool layer = c.kind == "Conv3d" || c.kind == "ConvTranspose3d";
    if (layer == layers) out.push_back(std::move(c));
  }
  return out;
}

TEST(Conv3d, FunctionsMatchPyTorch) {
  const std::vector<GoldenCase> cases = cases_of(false);
  ASSERT_EQ(cases.size(), 13u);
  for (const GoldenCase& c : cases) {
    SCOPED_TRACE(c.description);
    for (Dtype dtype : {kFloat64, kFloat32}) {
      const bool f64 = dtype == kFloat64;
      const double rtol = f64 ? 1e-12 : 2e-5, atol = f64 ? 1e-12 : 2e-5;
      Tensor x = at(c, "x").to(dtype).requires_grad_();
      Tensor w = at(c, "w").to(dtype).requires_grad_();
      Tensor b = has(c, "b") ? at(c, "b").to(dtype).requires_grad_() : Tensor();
      const Tensor y = run_op(c, x, w, b);
      EXPECT_EQ(y.dtype(), dtype);
      expect_close(y, at(c, "y"), rtol, atol, "y");
      std::vector<Tensor> inputs{x, w};
      if (b.defined()) inputs.push_back(b);
      const std::vector<Tensor> g = autograd::grad({y}, inputs, {upstream(y)});
      expect_close(g[0], at(c, "gx"), rtol, atol, "gx");
      expect_close(g[1], at(c, "gw"), rtol, atol, "gw");
      if (b.defined()) expect_close(g[2], at(c, "gb"), rtol, atol, "gb");
    }
  }
}

std::shared_ptr<nn::Module> layer_of(const GoldenCase& c) {
  manual_seed(static_cast<uint64_t>(c.num("seed")));
  const std::vector<int64_t> kernel = list(c, "kernel");
  const nn::ExpandingSize<3> k = kernel.size() == 1 ? nn::ExpandingSize<3>(kernel[0]) : nn::ExpandingSize<3>(kernel);
  if (c.kind == "Conv3d") {
    nn::Conv3dOptions options{.stride = list(c, "stride"),
                              .padding = 0,
                              .dilation = list(c, "dilation"),
                              .groups = c.num("groups"),
                              .bias = c.flag("bias"),
                              .padding_mode = c.options.at("padding_mode")};
    const std::string padding = c.options.at("padding");
    if (padding == "same" || padding == "valid") {
      options.padding = padding;
    } else {
      options.padding = nn::ExpandingSize<3>(list(c, "padding"));
    }
    return std::make_shared<nn::Conv3d>(c.num("in"), c.num("out"), k, options);
  }
  return std::make_shared<nn::ConvTranspose3d>(c.num("in"), c.num("out"), k,
                                               nn::ConvTranspose3dOptions{.stride = list(c, "stride"),
                                                                          .padding = list(c, "padding"),
                                                                          .output_padding = list(c, "output_padding"),
                                                                          .groups = c.num("groups"),
                                                                          .bias = c.flag("bias"),
                                                                          .dilation = list(c, "dilation")});
}

TEST(Conv3d, LayersMatchPyTorch) {
  const std::vector<GoldenCase> cases = cases_of(true);
  ASSERT_EQ(cases.size(), 6u);
  for (const GoldenCase& c : cases) {
    SCOPED_TRACE(c.description);
    std::shared_ptr<nn::Module> m = layer_of(c);
    // The same seed draws PyTorch's initial weights (kaiming_uniform_(a = √5), then the bias).
    m->to(kFloat64);
    EXPECT_EQ(m->state_dict().keys(), c.keys);
    const Tensor weight = m->named_parameters().at(0).second;
    EXPECT_TRUE(allclose(weight.detach(), at(c, "weight"), 1e-7, 0)) << weight;
    if (has(c, "bias")) {
      EXPECT_TRUE(allclose(m->named_parameters().at(1).second.detach(), at(c, "bias"), 1e-7, 0));
    }
    // The values and gradients with PyTorch's weights.
    {
      NoGradGuard no_grad;
      m->named_parameters().at(0).second.copy_(at(c, "weight"));
      if (has(c, "bias")) m->named_parameters().at(1).second.copy_(at(c, "bias"));
    }
    Tensor x = at(c, "x").clone().requires_grad_();
    Tensor y;
    if (c.kind == "ConvTranspose3d" && c.options.at("output_size") != "none") {
      y = std::static_pointer_cast<nn::ConvTranspose3d>(m)->forward(x, list(c, "output_size"));
    } else {
      y = (*m)(x);
    }
    expect_close(y, at(c, "y"), 1e-12, 1e-12, "y");
    std::vector<Tensor> inputs{x};
    for (const auto& [name, p] : m->named_parameters()) inputs.push_back(p);
    const std::vector<Tensor> g = autograd::grad({y}, inputs, {upstream(y)});
    expect_close(g[0], at(c, "gx"), 1e-12, 1e-12, "gx");
    expect_close(g[1], at(c, "gw"), 1e-12, 1e-12, "gw");
    if (has(c, "bias")) expect_close(g[2], at(c, "gb"), 1e-12, 1e-12, "gb");
  }
}

template <typename T>
concept BracedFromThree = requires {
  T{2, 2, 2};
};
static_assert(!BracedFromThree<nn::Conv3dOptions> && !BracedFromThree<nn::ConvTranspose3dOptions>);

TEST(Conv3d, LayerArgumentsFollowPyTorch) {
  nn::Conv3d conv(4, 8, 3);
  EXPECT_EQ(conv.name(), "Conv3d");
  EXPECT_EQ(conv.weight.sizes().vec(), (std::vector<int64_t>{8, 4, 3, 3, 3}));
  EXPECT_EQ(conv.bias.sizes().vec(), (std::vector<int64_t>{8}));
  EXPECT_EQ(conv.stride, nn::ExpandingSize<3>(1));
  EXPECT_EQ(conv.padding, nn::ExpandingSize<3>(0));
  EXPECT_EQ(conv.padding_mode, "zeros");
  nn::Conv3d same(2, 2, {2, 3, 4}, {.padding = "same", .bias = false});
  EXPECT_FALSE(same.bias.defined());
  EXPECT_EQ(same(zeros({1, 2, 5, 6, 7})).sizes().vec(), (std::vector<int64_t>{1, 2, 5, 6, 7}));
  nn::ConvTranspose3d up(4, 2, 4, {.stride = 2, .padding = 1});
  EXPECT_EQ(up.name(), "ConvTranspose3d");
  EXPECT_EQ(up.weight.sizes().vec(), (std::vector<int64_t>{4, 2, 4, 4, 4}));
  EXPECT_EQ(up(zeros({1, 4, 3, 4, 5})).sizes().vec(), (std::vector<int64_t>{1, 2, 6, 8, 10}));
  // Empty batches convolve to empty batches.
  EXPECT_EQ(conv(zeros({0, 4, 5, 6, 7})).sizes().vec(), (std::vector<int64_t>{0, 8, 3, 4, 5}));
  EXPECT_EQ(F::conv_transpose3d(zeros({0, 4, 5, 6, 7}), zeros({4, 8, 3, 3, 3})).sizes().vec(),
            (std::vector<int64_t>{0, 8, 7, 8, 9}));
}

TEST(Conv3d, GradientsMatchFiniteDifferences) {
  manual_seed(3);
  test::gradcheck("conv3d",
                  [](const std::vector<Tensor>& in) {
                    return F::conv3d(in[0], in[1], in[2], {2, 1, 1}, {1, 0, 1}, {1, 1, 2}, 2);
                  },
                  {randn({1, 4, 3, 3, 4}, kFloat64), randn({2, 2, 2, 2, 2}, kFloat64), randn({2}, kFloat64)});
  test::gradcheck("conv_transpose3d",
                  [](const std::vector<Tensor>& in) {
                    return F::conv_transpose3d(in[0], in[1], in[2], {2, 1, 1}, {1, 0, 0}, {1, 0, 0}, 2, {1, 1, 2});
                  },
                  {randn({1, 2, 2, 2, 2}, kFloat64), randn({2, 1, 3, 2, 2}, kFloat64), randn({2}, kFloat64)});
  // Second derivatives come with the composition (conv2d's backward records itself).
  test::gradgradcheck("conv3d, twice",
                      [](const std::vector<Tensor>& in) {
                        return F::conv3d(in[0], in[1], Tensor(), {1, 2, 1}, {1, 0, 0});
                      },
                      {randn({1, 2, 3, 3, 2}, kFloat64), randn({2, 2, 2, 2, 2}, kFloat64)});
  test::gradgradcheck("conv_transpose3d, twice",
                      [](const std::vector<Tensor>& in) { return F::conv_transpose3d(in[0], in[1], Tensor(), {2}); },
                      {randn({1, 2, 2, 1, 2}, kFloat64), randn({2, 1, 2, 2, 1}, kFloat64)});
}

TEST(Conv3d, ErrorsMatchPyTorch) {
  const Tensor x = zeros({2, 4, 5, 6, 7}), w = zeros({8, 4, 3, 3, 3});
  EXPECT_EQ(error_of([&] {
              F::conv3d(zeros({4, 5, 6}), w);
            }),
            "Expected 4D (unbatched) or 5D (batched) input to conv3d, but got input of size: [4, 5, 6]");
  EXPECT_EQ(error_of([&] {
              F::conv3d(x, zeros({8, 3, 3, 3, 3}));
            }),
            "Given groups=1, weight of size [8, 3, 3, 3, 3], expected input[2, 4, 5, 6, 7] to have 3 channels, but "
            "got 4 channels instead");
  EXPECT_EQ(error_of([&] {
              F::conv3d(x, zeros({7, 2, 3, 3, 3}), Tensor(), {1}, {0}, {1}, 2);
            }),
            "Given groups=2, expected weight to be divisible by 2 at dimension 0, but got weight of size [[7, 2, 3, 3, "
            "3]] instead");
  EXPECT_EQ(error_of([&] { F::conv3d(x, w, zeros({7})); }),
            "Given weight of size [8, 4, 3, 3, 3], expected bias to be 1-dimensional with 8 elements, but got bias of "
            "size [7] instead");
  EXPECT_EQ(error_of([&] {
              F::conv3d(zeros({1, 4, 2, 6, 7}), w);
            }),
            "Calculated padded input size per channel: (2 x 6 x 7). Kernel size: (3 x 3 x 3). Kernel size can't be "
            "greater than actual input size");
  EXPECT_EQ(error_of([&] { F::conv3d(x, w, Tensor(), {1}, {-1}); }), "negative padding is not supported");
  EXPECT_EQ(error_of([&] { F::conv3d(x, w, Tensor(), {0}); }), "non-positive stride is not supported");
  EXPECT_EQ(error_of([&] { F::conv3d(x, w, Tensor(), {1}, {0}, {0}); }), "non-positive dilation is not supported");
  EXPECT_EQ(error_of([&] { F::conv3d(x, w, Tensor(), {1}, {0}, {1}, 0); }), "non-positive groups is not supported");
  EXPECT_EQ(error_of([&] { F::conv3d(x, w, Tensor(), {1}, {0}, {-1}); }), "dilation should be greater than zero");
  EXPECT_EQ(error_of([] {
              F::conv3d(zeros({1, 4, 5, 6, 7}), zeros({1, 4, 3, 3, 3}), Tensor(), {1}, {0}, {1}, 2);
            }),
            "Given groups=2, expected weight to be at least 2 at dimension 0, but got weight of size [1, 4, 3, 3, 3] "
            "instead");
  EXPECT_EQ(error_of([&] {
              F::conv3d(x, w, Tensor(), {1, 2});
            }),
            "expected stride to be a single integer value or a list of 3 values to match the convolution dimensions, "
            "but got stride=[1, 2]");
  EXPECT_EQ(error_of([&] { F::conv3d(x, w.to(kFloat64)); }),
            "Input type (torch.FloatTensor) and weight type (torch.DoubleTensor) should be the same or input should "
            "be a MKLDNN tensor and weight is a dense tensor");
  EXPECT_EQ(error_of([&] { F::conv3d(x, w, Tensor(), {2}, "same"); }),
            "padding='same' is not supported for strided convolutions");
  EXPECT_EQ(error_of([&] { F::conv3d(x, w, Tensor(), {1}, "full"); }), "Invalid padding string: 'full'");
  EXPECT_EQ(error_of([&] {
              F::conv3d(zeros({1, 4, 0, 6, 7}), w);
            }),
            "Calculated padded input size per channel: (0 x 6 x 7). Kernel size: (3 x 3 x 3). Kernel size can't be "
            "greater than actual input size");
  // Layers.
  EXPECT_EQ(error_of([] { nn::Conv3d(4, 8, 3, {.padding = "full"}); }),
            "Invalid padding string 'full', should be one of {'valid', 'same'}");
  EXPECT_EQ(error_of([] { nn::Conv3d(4, 8, 3, {.stride = 2, .padding = "same"}); }),
            "padding='same' is not supported for strided convolutions");
  EXPECT_EQ(error_of([] { nn::Conv3d(4, 8, 3, {.groups = 3}); }), "in_channels must be divisible by groups");
  EXPECT_EQ(error_of([] { nn::Conv3d(4, 8, 3, {.groups = 0}); }), "groups must be a positive integer");
  EXPECT_EQ(error_of([] { nn::Conv3d(4, 6, 3, {.groups = 4}); }), "out_channels must be divisible by groups");
  EXPECT_EQ(error_of([] { nn::Conv3d(4, 6, 3, {.padding_mode = "foo"}); }),
            "padding_mode must be one of {'reflect', 'circular', 'zeros', 'replicate'}, but got padding_mode='foo'");
  EXPECT_EQ(error_of([] {
              nn::Conv3d(4, 6, {3, 3});
            }),
            "Conv3d: kernel_size must either be a single int, or a tuple of 3 ints");
  // Transposed.
  const Tensor xt = zeros({2, 4, 3, 4, 5}), wt = zeros({4, 2, 3, 3, 3});
  EXPECT_EQ(error_of([&] {
              F::conv_transpose3d(zeros({4, 5, 6}), wt);
            }),
            "Expected 4D (unbatched) or 5D (batched) input to conv_transpose3d, but got input of size: [4, 5, 6]");
  EXPECT_EQ(error_of([&] {
              F::conv_transpose3d(xt, zeros({3, 2, 3, 3, 3}));
            }),
            "Given transposed=1, weight of size [3, 2, 3, 3, 3], expected input[2, 4, 3, 4, 5] to have 3 channels, "
            "but got 4 channels instead");
  EXPECT_EQ(error_of([&] { F::conv_transpose3d(xt, wt, Tensor(), {2}, {0}, {2}); }),
            "output padding must be smaller than either stride or dilation, but got output_padding_depth: 2 "
            "output_padding_height: 2 output_padding_width: 2 stride_depth: 2 stride_height: 2 stride_width: 2 "
            "dilation_depth: 1 dilation_height: 1 dilation_width: 1");
  EXPECT_EQ(error_of([&] {
              F::conv_transpose3d(zeros({1, 4, 1, 1, 1}), wt, Tensor(), {1}, {3});
            }),
            "Given input size per channel: (1 x 1 x 1). Calculated output size per channel: (-3 x -3 x -3). Output "
            "size is too small");
  EXPECT_EQ(error_of([&] { F::conv_transpose3d(xt, wt, zeros({3})); }),
            "Given transposed=1, weight of size [4, 2, 3, 3, 3], expected bias to be 1-dimensional with 2 elements, "
            "but got bias of size [3] instead");
  EXPECT_EQ(error_of([&] {
              F::conv_transpose3d(zeros({1, 4, 5, 6, 7}), zeros({4, 3, 3, 3, 3}), Tensor(), {1}, {0}, {0}, 3);
            }),
            "Given groups=3, expected weight to be divisible by 3 at dimension 0, but got weight of size [[4, 3, 3, 3, "
            "3]] instead");
  EXPECT_EQ(error_of([&] { F::conv_transpose3d(xt, wt, Tensor(), {1}, {0}, {-1}); }),
            "negative output_padding is not supported");
  EXPECT_EQ(error_of([&] { F::conv_transpose3d(xt, wt, Tensor(), {1}, {0}, {0}, 1, {0}); }),
            "dilation should be greater than zero, but got dilation_depth: 0, dilation_height: 0, dilation_width: 0");
  EXPECT_EQ(error_of([] { nn::ConvTranspose3d(4, 6, 3, {.padding_mode = "reflect"}); }),
            "Only \"zeros\" padding mode is supported for ConvTranspose3d");
  nn::ConvTranspose3d up(4, 2, 3, {.stride = 2});
  EXPECT_EQ(error_of([&] {
              up.forward(xt, {20, 20, 20});
            }),
            "requested an output size of [20, 20, 20], but valid sizes range from [7, 9, 11] to [8, 10, 12] (for an "
            "input of torch.Size([3, 4, 5]))");
  EXPECT_EQ(error_of([&] {
              up.forward(xt, {20, 20});
            }),
            "ConvTranspose3D: for 5D input, output_size must have 3 or 5 elements (got 2)");
}

class Conv3dDevice : public ember_test::DeviceTest {};

TEST_P(Conv3dDevice, EveryCaseMatchesTheCpu) {
  for (const GoldenCase& c : cases_of(false)) {
    SCOPED_TRACE(c.description);
    std::vector<Tensor> cpu{at(c, "x").clone(), at(c, "w").clone()},
        dev{at(c, "x").to(device()), at(c, "w").to(device())};
    if (has(c, "b")) {
      cpu.push_back(at(c, "b").clone());
      dev.push_back(at(c, "b").to(device()));
    }
    for (Tensor& t : cpu) t.requires_grad_();
    for (Tensor& t : dev) t.requires_grad_();
    const Tensor y_cpu = run_op(c, cpu[0], cpu[1], cpu.size() > 2 ? cpu[2] : Tensor());
    const Tensor y_dev = run_op(c, dev[0], dev[1], dev.size() > 2 ? dev[2] : Tensor());
    EXPECT_EQ(y_dev.device(), device());
    EXPECT_CLOSE_TO_CPU(y_dev, y_cpu, 1e-12, 1e-12);
    const Tensor gy = upstream(y_cpu);
    const std::vector<Tensor> g_cpu = autograd::grad({y_cpu}, cpu, {gy});
    const std::vector<Tensor> g_dev = autograd::grad({y_dev}, dev, {gy.to(device())});
    for (size_t i = 0; i < g_cpu.size(); ++i) {
      EXPECT_CLOSE_TO_CPU(g_dev[i], g_cpu[i], 1e-12, 1e-12);
    }
  }
  nn::Conv3d layer(2, 3, 3, {.padding = 1, .padding_mode = "circular"});
  const Tensor x = randn({1, 2, 3, 4, 5});
  const Tensor y_cpu = layer(x);
  layer.to(device());
  EXPECT_CLOSE_TO_CPU(layer(x.to(device())), y_cpu, 1e-5, 1e-5);
}

EMBER_INSTANTIATE_DEVICE_SUITE(Conv3dDevice);

}  // namespace
