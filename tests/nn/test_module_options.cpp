// Layer constructors as libtorch's options (issue 30): every layer built from its positional
// arguments and from `<Layer>Options` with designated initializers, the two giving the same
// stored fields and, for several, the same forward result; sizes as one number or one per
// dimension; wrong-length sizes refused with PyTorch's messages when the layer is built; the new
// options' behaviour (Embedding's padding_idx / scale_grad_by_freq / max_norm, Conv's
// padding_mode, Dropout's inplace) against values PyTorch 2.15 printed; and the functional
// options of scaled_dot_product_attention and autograd::grad.
#include <gtest/gtest.h>

#include <cmath>
#include <memory>
#include <optional>
#include <string>
#include <tuple>
#include <vector>

#include "ember/autograd.h"
#include "ember/ember.h"
#include "ember/nn/adaptive_max_pool.h"
#include "ember/nn/batchnorm.h"
#include "ember/nn/conv.h"
#include "ember/nn/conv_transpose.h"
#include "ember/nn/dropout.h"
#include "ember/nn/embedding_bag.h"
#include "ember/nn/lppool.h"
#include "ember/nn/modules.h"
#include "ember/nn/normalization.h"
#include "ember/nn/pooling.h"
#include "ember/nn/rnn.h"
#include "ember/nn/transformer.h"
#include "ember/nn/upsampling.h"
#include "support/error_of.h"

namespace {

using namespace ember;
namespace nn = ember::nn;
namespace F = ember::nn::functional;
using ember_test::error_of;
using Sizes = std::vector<int64_t>;

/// Every element of `t` (as float64) next to `expected`, to 1e-12.
void expect_values(const Tensor& t, const std::vector<double>& expected) {
  const Tensor flat = t.detach().cpu().to(kFloat64).contiguous().reshape({-1});
  ASSERT_EQ(flat.numel(), static_cast<int64_t>(expected.size()));
  const double* p = flat.data_ptr<double>();
  for (size_t i = 0; i < expected.size(); ++i) EXPECT_NEAR(p[i], expected[i], 1e-12) << "element " << i;
}

Tensor ramp(std::vector<int64_t> shape, int64_t modulus = 7) {
  int64_t n = 1;
  for (int64_t s : shape) n *= s;
  return (remainder(arange(n, TensorOptions().dtype(kFloat64)), Scalar(modulus)) / Scalar(modulus)).reshape(shape);
}

// ---------------------------------------------------------------- convolution

TEST(ModuleOptions, Conv2dBothSpellings) {
  manual_seed(3);
  nn::Conv2d positional(3, 8, 7, 2, 3, 1, 1, false);
  manual_seed(3);
  nn::Conv2d options(3, 8, 7, {.stride = 2, .padding = 3, .bias = false});
  for (const nn::Conv2d* c : {&positional, &options}) {
    EXPECT_EQ(c->kernel_size[0], 7);
    EXPECT_EQ(c->kernel_size[1], 7);
    EXPECT_EQ(c->stride[0], 2);
    EXPECT_EQ(c->stride[1], 2);
    EXPECT_EQ(c->padding[0], 3);
    EXPECT_EQ(c->padding[1], 3);
    EXPECT_EQ(c->dilation[1], 1);
    EXPECT_EQ(c->groups, 1);
    EXPECT_FALSE(c->bias.defined());
    EXPECT_EQ(c->padding_mode, "zeros");
  }
  EXPECT_TRUE(equal(positional.weight, options.weight));
  const Tensor x = randn({2, 3, 16, 16});
  EXPECT_TRUE(equal(positional(x), options(x)));
}

TEST(ModuleOptions, Conv2dPositionalFormsKeepTheirMeaning) {
  nn::Conv2d plain(1, 32, 3);
  EXPECT_EQ(plain.stride[0], 1);
  EXPECT_EQ(plain.padding[0], 0);
  EXPECT_TRUE(plain.bias.defined());
  nn::Conv2d padded(1, 32, 3, 1, 1);
  EXPECT_EQ(padded.padding[0], 1);
  EXPECT_EQ(padded.padding[1], 1);
  nn::Conv2d pairs(2, 4, {3, 5}, {2, 1}, {1, 2});
  EXPECT_EQ(pairs.kernel_size[1], 5);
  EXPECT_EQ(pairs.stride[0], 2);
  EXPECT_EQ(pairs.stride[1], 1);
  EXPECT_EQ(pairs.padding[1], 2);
  nn::Conv2d braced_stride(2, 4, {3, 5}, {2, 2});  // a plain braced list is a size, not options
  EXPECT_EQ(braced_stride.stride[0], 2);
  EXPECT_EQ(braced_stride.padding[0], 0);
  nn::Conv2d same(4, 4, 3, 1, "same", 1, 2);
  EXPECT_EQ(same.padding_string, "same");
  EXPECT_EQ(same.groups, 2);
  nn::Conv2d one_option(2, 4, 3, {.dilation = 2});  // a single designator picks the options
  EXPECT_EQ(one_option.dilation[0], 2);
  EXPECT_EQ(one_option.stride[0], 1);
  nn::Conv2d stride_pair(2, 4, 3, {.stride = {1, 2}});
  EXPECT_EQ(stride_pair.stride[1], 2);
  nn::Conv2d same_groups(4, 6, 3, {.padding = "same", .groups = 2});
  EXPECT_EQ(same_groups.padding_string, "same");
  EXPECT_EQ(same_groups.weight.sizes().vec(), (Sizes{6, 2, 3, 3}));
}

TEST(ModuleOptions, Conv2dErrors) {
  EXPECT_EQ(error_of([] {
              nn::Conv2d(1, 1, 3, {.stride = {1, 2, 3}});
            }),
            "Conv2d: stride must be a single integer or a list of 2 integers");
  EXPECT_EQ(error_of([] {
              nn::Conv2d(1, 1, {1, 2, 3});
            }),
            "Conv2d: kernel_size must be a single integer or a list of 2 integers");
  EXPECT_EQ(error_of([] { nn::Conv2d(1, 1, 3, {.padding_mode = "mirror"}); }),
            "padding_mode must be one of {'reflect', 'circular', 'zeros', 'replicate'}, but got padding_mode='mirror'");
}

TEST(ModuleOptions, Conv2dPaddingModesMatchPyTorch) {
  const Tensor x = ramp({1, 2, 5, 6});
  const Tensor w = arange(18, TensorOptions().dtype(kFloat64)).reshape({1, 2, 3, 3}) / Scalar(18) - Scalar(0.5);
  for (const std::string mode : {"reflect", "circular", "replicate"}) {
    nn::Conv2d conv(2, 1, 3, {.padding = {1, 2}, .bias = false, .padding_mode = mode});
    conv.to(kFloat64);
    {
      NoGradGuard no_grad;
      conv.weight.copy_(w);
    }
    const Tensor y = conv(x);
    EXPECT_EQ(y.sizes().vec(), (Sizes{1, 1, 5, 8}));
    EXPECT_TRUE(allclose(y, F::conv2d(pad(x, {2, 2, 1, 1}, mode), w), 0, 0)) << mode;
    if (mode == "reflect") {
      // PyTorch 2.15: nn.Conv2d(2, 1, 3, padding=(1, 2), padding_mode='reflect'), the first row.
      expect_values(y.select(2, 0),
                    {0.007936507936507974, 0.01587301587301588, -0.023809523809523874, 0.5714285714285714, 0.5,
                     0.15079365079365054, 0.08730158730158745, 0.07142857142857141});
    }
    if (mode == "circular") {
      expect_values(y.select(2, 4),
                    {0.15079365079365067, -0.2777777777777776, -0.5873015873015873, -0.49206349206349176,
                     -0.06349206349206368, 0.19841269841269848, 0.15079365079365067, -0.2777777777777776});
    }
  }
}

TEST(ModuleOptions, Conv1dBothSpellings) {
  manual_seed(5);
  nn::Conv1d positional(2, 4, 3, 2, 1, 1, 2, false);
  manual_seed(5);
  nn::Conv1d options(2, 4, 3, {.stride = 2, .padding = 1, .groups = 2, .bias = false});
  for (const nn::Conv1d* c : {&positional, &options}) {
    EXPECT_EQ(c->kernel_size, 3);
    EXPECT_EQ(c->stride, 2);
    EXPECT_EQ(c->padding, 1);
    EXPECT_EQ(c->groups, 2);
    EXPECT_FALSE(c->bias.defined());
  }
  const Tensor x = randn({1, 2, 9});
  EXPECT_TRUE(equal(positional(x), options(x)));
  nn::Conv1d braced(2, 4, {3}, {2});
  EXPECT_EQ(braced.stride, 2);
  EXPECT_EQ(error_of([] {
              nn::Conv1d(1, 1, {3, 3});
            }),
            "Conv1d: kernel_size must be a single integer or a list of one integer");
}

TEST(ModuleOptions, Conv1dSameReflectMatchesPyTorch) {
  nn::Conv1d conv(1, 1, 4, {.padding = "same", .bias = false, .padding_mode = "reflect"});
  conv.to(kFloat64);
  {
    NoGradGuard no_grad;
    conv.weight.copy_(tensor({1.0, -2.0, 0.5, 3.0}, TensorOptions().dtype(kFloat64)).reshape({1, 1, 4}));
  }
  const Tensor x = tensor({1.0, 2.0, 4.0, 8.0, 16.0, 32.0}, TensorOptions().dtype(kFloat64)).reshape({1, 1, 6});
  expect_values(conv(x), {13.0, 23.0, 46.0, 92.0, 40.0, -16.0});  // PyTorch 2.15's values
}

TEST(ModuleOptions, ConvTransposeBothSpellings) {
  manual_seed(7);
  nn::ConvTranspose2d positional(4, 2, 4, 2, 1, 0, 1, false);
  manual_seed(7);
  nn::ConvTranspose2d options(4, 2, 4, {.stride = 2, .padding = 1, .bias = false});
  EXPECT_EQ(options.stride[1], 2);
  EXPECT_EQ(options.padding[0], 1);
  EXPECT_FALSE(options.bias.defined());
  const Tensor x = randn({1, 4, 5, 5});
  EXPECT_TRUE(equal(positional(x), options(x)));
  nn::ConvTranspose2d pairs(4, 2, {3, 2}, {.output_padding = {1, 0}, .dilation = {1, 2}, .padding_mode = "zeros"});
  EXPECT_EQ(pairs.kernel_size[0], 3);
  EXPECT_EQ(pairs.output_padding[0], 1);
  EXPECT_EQ(pairs.dilation[1], 2);

  manual_seed(8);
  nn::ConvTranspose1d positional1(3, 6, 4, 2, 1, 1, 3);
  manual_seed(8);
  nn::ConvTranspose1d options1(3, 6, 4, {.stride = 2, .padding = 1, .output_padding = 1, .groups = 3});
  EXPECT_EQ(options1.output_padding, 1);
  EXPECT_EQ(options1.groups, 3);
  const Tensor x1 = randn({2, 3, 7});
  EXPECT_TRUE(equal(positional1(x1), options1(x1)));
  EXPECT_EQ(error_of([] {
              nn::ConvTranspose2d(1, 1, 3, {.padding = {1, 1, 1}});
            }),
            "ConvTranspose2d: padding must be a single integer or a list of 2 integers");
}

// ---------------------------------------------------------------- pooling

TEST(ModuleOptions, MaxPool2dBothSpellings) {
  nn::MaxPool2d positional(3, 2, 1);
  nn::MaxPool2d options(3, {.stride = 2, .padding = 1});
  nn::MaxPool2d lists({3, 3}, {2, 2}, {1, 1});
  for (const nn::MaxPool2d* p : {&positional, &options, &lists}) {
    EXPECT_EQ(p->kernel_size, (Sizes{3, 3}));
    EXPECT_EQ(p->stride, (Sizes{2, 2}));
    EXPECT_EQ(p->padding, (Sizes{1, 1}));
    EXPECT_EQ(p->dilation, (Sizes{1, 1}));
    EXPECT_FALSE(p->ceil_mode);
  }
  const Tensor x = randn({2, 3, 9, 9});
  EXPECT_TRUE(equal(positional(x), F::max_pool2d(x, {3}, {2}, {1})));
  EXPECT_TRUE(equal(options(x), positional(x)));
  EXPECT_TRUE(equal(lists(x), positional(x)));

  nn::MaxPool2d omitted(2);
  EXPECT_TRUE(omitted.stride.empty());  // PyTorch's stride=None: the kernel size
  nn::MaxPool2d two_lists({3, 3}, {2, 2});
  EXPECT_EQ(two_lists.stride, (Sizes{2, 2}));
  EXPECT_EQ(two_lists.padding, (Sizes{0, 0}));
  nn::MaxPool2d ceil(3, {.ceil_mode = true});
  EXPECT_TRUE(ceil.ceil_mode);
  EXPECT_TRUE(ceil.stride.empty());

  nn::MaxPool2d with_indices(2, {.return_indices = true});
  const auto [values, indices] = with_indices.forward_with_indices(x);
  const auto [expected_values, expected_indices] = F::max_pool2d_with_indices(x, {2});
  EXPECT_TRUE(equal(values, expected_values));
  EXPECT_TRUE(equal(indices, expected_indices));
  EXPECT_EQ(error_of([&] { with_indices(x); }),
            "MaxPool2d(return_indices=true) returns (output, indices): call forward_with_indices instead of forward");
}

TEST(ModuleOptions, PoolingSizesOfTheWrongLength) {
  EXPECT_EQ(error_of([] {
              nn::MaxPool2d({1, 2, 3});
            }),
            "max_pool2d: kernel_size must either be a single int, or a tuple of two ints");
  EXPECT_EQ(error_of([] {
              nn::MaxPool2d(2, {.stride = {1, 2, 3}});
            }),
            "max_pool2d: stride must either be omitted, a single int, or a tuple of two ints");
  EXPECT_EQ(error_of([] {
              nn::MaxPool2d(2, {.dilation = {1, 2, 3}});
            }),
            "max_pool2d: dilation must be either a single int, or a tuple of two ints");
  EXPECT_EQ(error_of([] {
              nn::AvgPool2d({1, 2, 3});
            }),
            "avg_pool2d: kernel_size must either be a single int, or a tuple of two ints");
  EXPECT_EQ(error_of([] {
              nn::AvgPool2d(2, {.stride = {1, 2, 3}});
            }),
            "avg_pool2d: stride must either be omitted, a single int, or a tuple of two ints");
  EXPECT_EQ(error_of([] { nn::AdaptiveAvgPool2d({1, 2, 3}); }), "adaptive_avg_pool2d: output_size must be 2");
  EXPECT_EQ(error_of([] {
              nn::MaxPool1d({1, 2});
            }),
            "max_pool1d() kernel_size must be an int, list of ints or tuple of ints of size 1 but got size 2");
  EXPECT_EQ(error_of([] {
              nn::AvgPool1d({1, 2});
            }),
            "avg_pool1d() argument 'kernel_size' should contain one int (got 2)");
  EXPECT_EQ(error_of([] {
              nn::AdaptiveAvgPool1d({1, 2});
            }),
            "adaptive_avg_pool1d() argument 'output_size' should contain one int (got 2)");
  EXPECT_EQ(error_of([] {
              nn::AdaptiveMaxPool2d({1, 2, 3});
            }),
            "adaptive_max_pool2d(): internal error: output_size.size() must be 2");
  EXPECT_EQ(error_of([] {
              nn::LPPool2d(2, {1, 2, 3});
            }),
            "avg_pool2d: kernel_size must either be a single int, or a tuple of two ints");
}

TEST(ModuleOptions, AvgAndAdaptivePooling) {
  const Tensor x = randn({2, 3, 8, 8});
  nn::AvgPool2d two(2);
  EXPECT_EQ(two.kernel_size, (Sizes{2, 2}));
  EXPECT_TRUE(equal(two(x), F::avg_pool2d(x, {2})));
  nn::AvgPool2d positional(3, 1, 1, false, false, 2);
  nn::AvgPool2d options(3, {.stride = 1, .padding = 1, .count_include_pad = false, .divisor_override = 2});
  EXPECT_FALSE(options.count_include_pad);
  EXPECT_EQ(options.divisor_override, std::optional<int64_t>(2));
  EXPECT_TRUE(equal(positional(x), options(x)));

  nn::AdaptiveAvgPool2d one(1);
  EXPECT_EQ(one.output_size, (Sizes{1, 1}));
  EXPECT_EQ(one(x).sizes().vec(), (Sizes{2, 3, 1, 1}));
  nn::AdaptiveAvgPool2d seven({7, 7});
  EXPECT_EQ(seven.output_size, (Sizes{7, 7}));
  EXPECT_TRUE(equal(seven(x), F::adaptive_avg_pool2d(x, {7, 7})));
  nn::AdaptiveAvgPool1d five(5);
  EXPECT_EQ(five.output_size, (Sizes{5}));

  const Tensor s = randn({2, 3, 10});
  nn::MaxPool1d max_positional(3, 2, 1, 1, true);
  nn::MaxPool1d max_options(3, {.stride = 2, .padding = 1, .return_indices = true});
  EXPECT_TRUE(max_options.return_indices);
  EXPECT_EQ(max_options.stride, (Sizes{2}));
  EXPECT_TRUE(
      equal(std::get<1>(max_positional.forward_with_indices(s)), std::get<1>(max_options.forward_with_indices(s))));
  nn::AvgPool1d avg_positional(4, 2, 0, true);
  nn::AvgPool1d avg_options(4, {.stride = 2, .ceil_mode = true});
  EXPECT_TRUE(avg_options.ceil_mode);
  EXPECT_TRUE(equal(avg_positional(s), avg_options(s)));
  nn::AvgPool1d avg_default(4);
  EXPECT_TRUE(avg_default.stride.empty());

  nn::AdaptiveMaxPool2d amax(3, {.return_indices = true});
  EXPECT_EQ(amax.output_size, (Sizes{3, 3}));
  EXPECT_TRUE(amax.return_indices);
  nn::AdaptiveMaxPool1d amax1(4, {.return_indices = true});
  EXPECT_TRUE(equal(std::get<0>(amax1.forward_with_indices(s)), F::adaptive_max_pool1d(s, {4})));

  nn::LPPool2d lp_positional(2, 3, 2, true);
  nn::LPPool2d lp_options(2, 3, {.stride = 2, .ceil_mode = true});
  EXPECT_EQ(lp_options.kernel_size, (Sizes{3, 3}));
  EXPECT_EQ(lp_options.stride, (Sizes{2, 2}));
  EXPECT_TRUE(equal(lp_positional(x), lp_options(x)));
  nn::LPPool1d lp1(1.5, 3, {.stride = 2});
  EXPECT_TRUE(equal(lp1(s.abs()), F::lp_pool1d(s.abs(), 1.5, {3}, {2})));
  EXPECT_TRUE(nn::LPPool1d(2, 3).stride.empty());
}

// ---------------------------------------------------------------- linear, embedding, flatten

TEST(ModuleOptions, LinearAndFlatten) {
  manual_seed(1);
  nn::Linear positional(10, 5, false);
  manual_seed(1);
  nn::Linear options(10, 5, {.bias = false});
  EXPECT_FALSE(options.bias.defined());
  EXPECT_TRUE(equal(positional.weight, options.weight));
  EXPECT_TRUE(nn::Linear(10, 5).bias.defined());

  nn::Flatten flatten({.start_dim = 0});
  EXPECT_EQ(flatten.start_dim, 0);
  EXPECT_EQ(flatten.end_dim, -1);
  nn::Flatten inner({.start_dim = 1, .end_dim = 2});
  EXPECT_EQ(inner(zeros({2, 3, 4, 5})).sizes().vec(), (Sizes{2, 12, 5}));
  EXPECT_EQ(nn::Flatten(0, 1)(zeros({2, 3, 4})).sizes().vec(), (Sizes{6, 4}));
}

TEST(ModuleOptions, EmbeddingOptions) {
  nn::Embedding plain(100, 16);
  EXPECT_FALSE(plain.padding_idx.has_value());
  nn::Embedding padded(100, 16, {.padding_idx = 0});
  EXPECT_EQ(padded.padding_idx, std::optional<int64_t>(0));
  EXPECT_TRUE(equal(padded.weight.select(0, 0), zeros({16})));
  EXPECT_EQ(nn::Embedding(10, 4, {.padding_idx = -1}).padding_idx, std::optional<int64_t>(9));
  EXPECT_EQ(error_of([] { nn::Embedding(10, 4, {.padding_idx = 10}); }), "Padding_idx must be within num_embeddings");
  EXPECT_EQ(error_of([] { nn::Embedding(10, 4, {.sparse = true}); }),
            "Embedding: sparse=True is not supported: ember has no sparse gradients");
}

TEST(ModuleOptions, EmbeddingGradientsMatchPyTorch) {
  const Tensor w = arange(12, TensorOptions().dtype(kFloat64)).reshape({4, 3}) / Scalar(4) - Scalar(1);
  const Tensor indices = tensor({0, 2, 2, 3, 0, 2}, TensorOptions().dtype(kInt64)).reshape({2, 3});
  const Tensor g = arange(18, TensorOptions().dtype(kFloat64)).reshape({2, 3, 3}) / Scalar(10);
  struct Case {
    nn::EmbeddingOptions options;
    std::vector<double> expected;  // PyTorch 2.15's weight.grad
  };
  const std::vector<Case> cases = {
      {{.padding_idx = 2}, {1.2, 1.4, 1.6, 0, 0, 0, 0, 0, 0, 0.9, 1.0, 1.1}},
      {{.scale_grad_by_freq = true}, {0.6, 0.7, 0.8, 0, 0, 0, 0.8, 0.9, 1.0, 0.9, 1.0, 1.1}},
      {{.padding_idx = 0, .scale_grad_by_freq = true}, {0, 0, 0, 0, 0, 0, 0.8, 0.9, 1.0, 0.9, 1.0, 1.1}},
  };
  for (const Case& c : cases) {
    nn::Embedding embedding(4, 3, c.options);
    embedding.to(kFloat64);
    {
      NoGradGuard no_grad;
      embedding.weight.copy_(w);
    }
    const Tensor y = embedding(indices);
    EXPECT_TRUE(equal(y, F::embedding(indices, w)));  // the values are the rows, exactly
    y.backward(g);
    expect_values(embedding.weight.grad(), c.expected);
  }
  nn::Embedding renormed(4, 3, {.max_norm = 1.0});
  renormed.to(kFloat64);
  {
    NoGradGuard no_grad;
    renormed.weight.copy_(w);
  }
  renormed(tensor({0, 3}, TensorOptions().dtype(kInt64)));
  expect_values(renormed.weight, {-0.7427812975357978, -0.5570859731518484, -0.3713906487678989, -0.25, 0.0, 0.25, 0.5,
                                  0.75, 1.0, 0.4767312764409787, 0.5720775317291744, 0.6674237870173702});
}

TEST(ModuleOptions, EmbeddingBag) {
  manual_seed(2);
  nn::EmbeddingBag positional(10, 3, std::nullopt, 2.0, false, "sum", false, false, 0);
  manual_seed(2);
  nn::EmbeddingBag options(10, 3, {.mode = "sum", .padding_idx = 0});
  EXPECT_EQ(options.mode, "sum");
  EXPECT_EQ(options.padding_idx, std::optional<int64_t>(0));
  const Tensor input = tensor({1, 0, 4, 4, 9}, TensorOptions().dtype(kInt64));
  const Tensor offsets = tensor({0, 2}, TensorOptions().dtype(kInt64));
  EXPECT_TRUE(equal(positional(input, offsets), options(input, offsets)));
}

// ---------------------------------------------------------------- normalisation and dropout

TEST(ModuleOptions, LayerNormAndRMSNorm) {
  nn::LayerNorm one(64);
  EXPECT_EQ(one.normalized_shape, (Sizes{64}));
  EXPECT_EQ(one.eps, 1e-5);
  nn::LayerNorm two({8, 64});
  EXPECT_EQ(two.normalized_shape, (Sizes{8, 64}));
  EXPECT_EQ(two.weight.sizes().vec(), (Sizes{8, 64}));
  nn::LayerNorm options(64, {.eps = 1e-6});
  EXPECT_EQ(options.eps, 1e-6);
  nn::LayerNorm positional(64, 1e-6);
  const Tensor x = randn({3, 64});
  EXPECT_TRUE(equal(options(x), positional(x)));
  nn::LayerNorm no_bias(64, {.bias = false});
  EXPECT_TRUE(no_bias.weight.defined());
  EXPECT_FALSE(no_bias.bias.defined());
  nn::LayerNorm plain(64, {.elementwise_affine = false});
  EXPECT_FALSE(plain.weight.defined());
  EXPECT_FALSE(plain.elementwise_affine);
  EXPECT_TRUE(equal(plain(x), F::layer_norm(x, {64})));

  nn::RMSNorm rms(64, {.eps = 1e-6});
  EXPECT_EQ(rms.eps, std::optional<double>(1e-6));
  EXPECT_TRUE(equal(rms(x), nn::RMSNorm(64, 1e-6)(x)));
  nn::RMSNorm rms_pair({3, 64}, {.elementwise_affine = false});
  EXPECT_EQ(rms_pair.normalized_shape, (Sizes{3, 64}));
  EXPECT_FALSE(rms_pair.weight.defined());
}

TEST(ModuleOptions, GroupNormAndInstanceNorm) {
  nn::GroupNorm options(2, 4, {.eps = 1e-3, .affine = false});
  EXPECT_EQ(options.eps, 1e-3);
  EXPECT_FALSE(options.weight.defined());
  const Tensor x = randn({2, 4, 3, 3});
  EXPECT_TRUE(equal(options(x), nn::GroupNorm(2, 4, 1e-3, false)(x)));
  nn::GroupNorm no_bias(2, 4, {.bias = false});
  EXPECT_TRUE(no_bias.weight.defined());
  EXPECT_FALSE(no_bias.bias.defined());
  EXPECT_EQ(no_bias.named_parameters().size(), 1u);

  nn::InstanceNorm2d instance(4, {.affine = true, .track_running_stats = true});
  EXPECT_TRUE(instance.affine);
  EXPECT_TRUE(instance.running_mean.defined());
  EXPECT_EQ(instance.momentum, std::optional<double>(0.1));
  nn::InstanceNorm1d instance1(4, {.eps = 1e-3, .momentum = std::nullopt});
  EXPECT_EQ(instance1.eps, 1e-3);
  EXPECT_FALSE(instance1.momentum.has_value());
  nn::LocalResponseNorm lrn(3, {.alpha = 1e-3, .k = 2.0});
  EXPECT_EQ(lrn.alpha, 1e-3);
  EXPECT_EQ(lrn.beta, 0.75);
  EXPECT_EQ(lrn.k, 2.0);
  EXPECT_TRUE(equal(lrn(x), nn::LocalResponseNorm(3, 1e-3, 0.75, 2.0)(x)));
}

TEST(ModuleOptions, BatchNorm) {
  nn::BatchNorm2d momentum(64, {.momentum = 0.01});
  EXPECT_EQ(momentum.momentum, std::optional<double>(0.01));
  EXPECT_EQ(momentum.eps, 1e-5);
  EXPECT_TRUE(momentum.affine);
  nn::BatchNorm1d cumulative(8, {.momentum = std::nullopt, .affine = false});
  EXPECT_FALSE(cumulative.momentum.has_value());
  EXPECT_FALSE(cumulative.weight.defined());
  EXPECT_TRUE(cumulative.running_mean.defined());
  nn::BatchNorm3d untracked(4, {.track_running_stats = false});
  EXPECT_FALSE(untracked.running_mean.defined());

  nn::BatchNorm2d positional(3, 1e-3, 0.3);
  nn::BatchNorm2d options(3, {.eps = 1e-3, .momentum = 0.3});
  const Tensor x = randn({4, 3, 2, 2});
  EXPECT_TRUE(equal(positional(x), options(x)));
  EXPECT_TRUE(equal(positional.running_var, options.running_var));
}

TEST(ModuleOptions, Dropout) {
  EXPECT_EQ(nn::Dropout({.p = 0.1}).p, 0.1);
  EXPECT_EQ(nn::Dropout(0.1).p, 0.1);
  EXPECT_EQ(nn::Dropout().p, 0.5);
  EXPECT_FALSE(nn::Dropout().inplace);
  nn::Dropout inplace({.p = 0.5, .inplace = true});
  EXPECT_TRUE(inplace.inplace);
  Tensor x = ones({1000});
  const Tensor y = inplace(x);
  EXPECT_TRUE(equal(x, y));  // written into the input, as PyTorch's dropout_
  EXPECT_GT(sum(eq(x, zeros_like(x))).item<int64_t>(), 0);
  inplace.eval();
  Tensor z = ones({10});
  EXPECT_TRUE(equal(inplace(z), ones({10})));

  EXPECT_EQ(nn::Dropout2d({.p = 0.2}).p, 0.2);
  EXPECT_TRUE(nn::Dropout1d({.inplace = true}).inplace);
  EXPECT_EQ(nn::Dropout3d({.p = 0.3, .inplace = true}).p, 0.3);
  EXPECT_EQ(nn::AlphaDropout({.p = 0.25}).p, 0.25);
  EXPECT_EQ(nn::FeatureAlphaDropout({.p = 0.75}).p, 0.75);
  EXPECT_EQ(error_of([] { nn::Dropout2d({.p = 1.5}); }), "dropout probability has to be between 0 and 1, but got 1.5");
}

// ---------------------------------------------------------------- recurrent and attention

TEST(ModuleOptions, RecurrentLayers) {
  manual_seed(4);
  nn::LSTM options(32, 64, {.num_layers = 2, .batch_first = true});
  manual_seed(4);
  nn::LSTM positional(32, 64, 2, true, true);
  for (const nn::LSTM* l : {&options, &positional}) {
    EXPECT_EQ(l->options.num_layers, 2);
    EXPECT_TRUE(l->options.batch_first);
    EXPECT_TRUE(l->options.bias);
  }
  const Tensor x = randn({3, 5, 32});
  EXPECT_TRUE(equal(options(x), positional(x)));

  nn::GRU gru(8, 16, 1, false, false, 0.0, true);
  EXPECT_FALSE(gru.options.bias);
  EXPECT_TRUE(gru.options.bidirectional);
  nn::RNN rnn(8, 16, 2, "relu");
  EXPECT_EQ(rnn.mode, nn::RNNBase::Mode::RNN_RELU);
  EXPECT_EQ(rnn.options.num_layers, 2);
  nn::LSTM projected(8, 16, {.proj_size = 4});
  EXPECT_EQ(projected.options.proj_size, 4);

  nn::RNNCell cell(4, 8, {.bias = false, .nonlinearity = "relu"});
  EXPECT_FALSE(cell.bias_ih.defined());
  EXPECT_EQ(cell.nonlinearity, "relu");
  EXPECT_FALSE(nn::LSTMCell(4, 8, {.bias = false}).bias_hh.defined());
  EXPECT_EQ(nn::GRUCell(4, 8, {.bias = true}).bias_ih.sizes().vec(), (Sizes{24}));
  manual_seed(6);
  nn::GRUCell gru_cell_positional(4, 8, false);
  manual_seed(6);
  nn::GRUCell gru_cell_options(4, 8, {.bias = false});
  const Tensor step = randn({2, 4});
  EXPECT_TRUE(equal(gru_cell_positional(step), gru_cell_options(step)));
}

TEST(ModuleOptions, AttentionAndTransformer) {
  nn::MultiheadAttention attention(64, 4, {.batch_first = true});
  EXPECT_TRUE(attention.options.batch_first);
  EXPECT_EQ(attention.head_dim, 16);
  nn::TransformerEncoderLayer layer(64, 4, {.dim_feedforward = 128, .dropout = 0.0, .batch_first = true});
  EXPECT_EQ(layer.linear1->out_features, 128);
  EXPECT_TRUE(layer.options.batch_first);
  EXPECT_EQ(layer.options.dropout, 0.0);

  const Tensor q = randn({2, 2, 5, 8}), k = randn({2, 2, 5, 8}), v = randn({2, 2, 5, 8});
  EXPECT_TRUE(equal(F::scaled_dot_product_attention(q, k, v, {.is_causal = true}),
                    F::scaled_dot_product_attention(q, k, v, Tensor(), 0.0, true)));
  EXPECT_TRUE(equal(F::scaled_dot_product_attention(q, k, v, {.scale = 0.5}),
                    F::scaled_dot_product_attention(q, k, v, Tensor(), 0.0, false, 0.5)));
}

TEST(ModuleOptions, UpsampleOptions) {
  nn::Upsample scaled({.scale_factor = {2.0}, .mode = "bilinear"});
  EXPECT_EQ(scaled.scale_factor, (std::vector<double>{2.0}));
  EXPECT_EQ(scaled.mode, "bilinear");
  EXPECT_TRUE(scaled.size.empty());
  const Tensor x = randn({1, 2, 3, 3});
  EXPECT_TRUE(equal(scaled(x), nn::Upsample(Sizes{}, {2.0}, "bilinear")(x)));
  nn::Upsample sized({.size = 5});
  EXPECT_EQ(sized.size, (Sizes{5}));
  EXPECT_EQ(sized(x).sizes().vec(), (Sizes{1, 2, 5, 5}));
  nn::Upsample pair({.size = {4, 6}, .mode = "bicubic", .align_corners = true});
  EXPECT_EQ(pair.align_corners, std::optional<bool>(true));
  EXPECT_EQ(pair(x).sizes().vec(), (Sizes{1, 2, 4, 6}));
}

TEST(ModuleOptions, AutogradGradOptions) {
  const Tensor x = randn({3}).requires_grad_(), unused = randn({3}).requires_grad_();
  const Tensor y = (x * x).sum();
  const std::vector<Tensor> grads = autograd::grad({y}, {x, unused}, {.retain_graph = true, .allow_unused = true});
  EXPECT_TRUE(allclose(grads[0], x.detach() * 2));
  EXPECT_FALSE(grads[1].defined());
  const std::vector<Tensor> second = autograd::grad({y}, {x}, {.create_graph = true});
  EXPECT_TRUE(second[0].requires_grad());
}

}  // namespace
