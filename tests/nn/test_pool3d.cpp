// 3-D pooling (ember/nn/pool3d.h) and fractional max pooling (ember/nn/fractional_max_pool.h):
// max_pool3d (with indices), avg_pool3d, adaptive_avg_pool3d, adaptive_max_pool3d (with indices),
// lp_pool3d and fractional_max_pool2d/3d and their layers against PyTorch's values, gradients and
// indices (tools/gen_conv3d_pool3d_golden.py) in float64 and float32, finite-difference gradients
// and PyTorch's error messages.
#include <gtest/gtest.h>

#include <cmath>
#include <limits>
#include <memory>
#include <sstream>
#include <string>
#include <tuple>
#include <vector>

#include "ember/ember.h"
#include "ember/io/safetensors.h"
#include "ember/nn/fractional_max_pool.h"
#include "ember/nn/pool3d.h"
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
      io::load_safetensors(EMBER_SOURCE_DIR "/tests/nn/golden/pool3d_golden.safetensors");
  return data;
}

const Tensor& at(const GoldenCase& c, const std::string& name) { return golden().at(c.prefix + name); }

bool none(const GoldenCase& c, const std::string& key) { return c.options.at(key) == "none"; }

std::vector<int64_t> list(const GoldenCase& c, const std::string& key) {
  std::vector<int64_t> out;
  if (none(c, key)) return out;
  std::istringstream in(c.options.at(key));
  for (int64_t v = 0; in >> v;) out.push_back(v);
  return out;
}

std::vector<double> reals(const GoldenCase& c, const std::string& key) {
  std::vector<double> out;
  if (none(c, key)) return out;
  std::istringstream in(c.options.at(key));
  for (double v = 0; in >> v;) out.push_back(v);
  return out;
}

nn::ExpandingSize<3> size3(const GoldenCase& c, const std::string& key) { return nn::ExpandingSize<3>(list(c, key)); }
nn::OptionalSize<3> stride3(const GoldenCase& c) {
  if (none(c, "stride")) return {};
  return size3(c, "stride");
}

double norm_of(const GoldenCase& c) {
  const std::string& text = c.options.at("norm");
  if (text == "inf") return std::numeric_limits<double>::infinity();
  return std::stod(text);
}

/// The upstream gradient the goldens used: cos(0.7 * k) for the k-th element of y.
Tensor upstream(const Tensor& y) { return cos(arange(y.numel(), kFloat64) * 0.7).reshape(y.sizes()).to(y.dtype()); }

/// The case as a call of the functional form: (values, indices or undefined).
std::tuple<Tensor, Tensor> run_functional(const GoldenCase& c, const Tensor& x) {
  if (c.kind == "max_pool3d") {
    return F::max_pool3d_with_indices(x, list(c, "kernel"), list(c, "stride"), list(c, "padding"), list(c, "dilation"),
                                      c.flag("ceil"));
  }
  if (c.kind == "avg_pool3d") {
    const std::optional<int64_t> divisor = none(c, "divisor") ? std::nullopt : std::optional<int64_t>(c.num("divisor"));
    return {F::avg_pool3d(x, list(c, "kernel"), list(c, "stride"), list(c, "padding"), c.flag("ceil"),
                          c.flag("count_include_pad"), divisor),
            Tensor()};
  }
  if (c.kind == "adaptive_avg_pool3d") return {F::adaptive_avg_pool3d(x, list(c, "output")), Tensor()};
  if (c.kind == "adaptive_max_pool3d") return F::adaptive_max_pool3d_with_indices(x, list(c, "output"));
  if (c.kind == "lp_pool3d") {
    return {F::lp_pool3d(x, norm_of(c), list(c, "kernel"), list(c, "stride"), c.flag("ceil")), Tensor()};
  }
  const Tensor samples = at(c, "samples").to(x.dtype());
  if (c.kind == "fractional_max_pool2d") {
    return F::fractional_max_pool2d_with_indices(x, list(c, "kernel"), list(c, "output"), reals(c, "ratio"), samples);
  }
  return F::fractional_max_pool3d_with_indices(x, list(c, "kernel"), list(c, "output"), reals(c, "ratio"), samples);
}

/// The case's layer; `with_indices` layers are called through forward_with_indices.
std::tuple<Tensor, Tensor> run_layer(const GoldenCase& c, const Tensor& x) {
  if (c.kind == "max_pool3d") {
    nn::MaxPool3d m(size3(c, "kernel"), {.stride = stride3(c),
                                         .padding = size3(c, "padding"),
                                         .dilation = size3(c, "dilation"),
                                         .return_indices = true,
                                         .ceil_mode = c.flag("ceil")});
    return m.forward_with_indices(x);
  }
  if (c.kind == "avg_pool3d") {
    nn::AvgPool3d m(size3(c, "kernel"),
                    {.stride = stride3(c),
                     .padding = size3(c, "padding"),
                     .ceil_mode = c.flag("ceil"),
                     .count_include_pad = c.flag("count_include_pad"),
                     .divisor_override = none(c, "divisor") ? std::nullopt : std::optional<int64_t>(c.num("divisor"))});
    return {m(x), Tensor()};
  }
  if (c.kind == "adaptive_avg_pool3d") return {nn::AdaptiveAvgPool3d(size3(c, "output"))(x), Tensor()};
  if (c.kind == "adaptive_max_pool3d") {
    return nn::AdaptiveMaxPool3d(size3(c, "output"), {.return_indices = true}).forward_with_indices(x);
  }
  if (c.kind == "lp_pool3d") {
    return {nn::LPPool3d(norm_of(c), size3(c, "kernel"), {.stride = stride3(c), .ceil_mode = c.flag("ceil")})(x),
            Tensor()};
  }
  const Tensor samples = at(c, "samples").to(x.dtype());
  const std::vector<int64_t> out = list(c, "output");
  const std::vector<double> ratio = reals(c, "ratio");
  if (c.kind == "fractional_max_pool2d") {
    nn::FractionalMaxPool2dOptions options{.return_indices = true, .random_samples = samples};
    if (!out.empty()) options.output_size = nn::ExpandingSize<2>(out);
    if (ratio.size() == 1) options.output_ratio = ratio[0];
    if (ratio.size() == 2) options.output_ratio = nn::ExpandingRatio<2>{ratio[0], ratio[1]};
    return nn::FractionalMaxPool2d(nn::ExpandingSize<2>(list(c, "kernel")), options).forward_with_indices(x);
  }
  nn::FractionalMaxPool3dOptions options{.return_indices = true, .random_samples = samples};
  if (!out.empty()) options.output_size = nn::ExpandingSize<3>(out);
  if (ratio.size() == 1) options.output_ratio = ratio[0];
  if (ratio.size() == 3) options.output_ratio = nn::ExpandingRatio<3>{ratio[0], ratio[1], ratio[2]};
  return nn::FractionalMaxPool3d(size3(c, "kernel"), options).forward_with_indices(x);
}

TEST(Pool3d, FunctionsAndLayersMatchPyTorch) {
  const std::vector<GoldenCase> cases = ember_test::golden_cases(golden().metadata);
  ASSERT_EQ(cases.size(), 28u);
  for (const GoldenCase& c : cases) {
    SCOPED_TRACE(c.description);
    const Dtype stored = at(c, "x").dtype();
    // float64 cases also run in float32, held to float32's precision (fractional pooling's window
    // starts depend on the dtype, so those cases run in their own dtype only).
    std::vector<Dtype> dtypes{stored};
    if (stored == kFloat64 && !c.kind.starts_with("fractional")) dtypes.push_back(kFloat32);
    for (Dtype dtype : dtypes) {
      const bool exact = dtype == kFloat64;
      const double tol = exact ? 1e-12 : (stored == kFloat32 ? 1e-6 : 2e-5);
      for (bool layer : {false, true}) {
        SCOPED_TRACE(layer ? "layer" : "functional");
        Tensor x = at(c, "x").to(dtype).requires_grad_();
        auto [y, idx] = layer ? run_layer(c, x) : run_functional(c, x);
        EXPECT_EQ(y.dtype(), dtype);
        expect_close(y, at(c, "y"), tol, tol, "y");
        if (golden().contains(c.prefix + "idx") && exact) {
          ASSERT_TRUE(idx.defined());
          EXPECT_EQ(idx.dtype(), kInt64);
          EXPECT_TRUE(equal(idx, at(c, "idx"))) << idx << "\n" << at(c, "idx");
        }
        expect_close(autograd::grad({y}, {x}, {upstream(y)})[0], at(c, "gx"), tol, tol, "gx");
      }
    }
  }
}

/// Whether a plain braced list of three numbers converts to T.
template <typename T>
concept BracedFromThree = requires {
  T{2, 2, 2};
};
// The options take designated initializers only: {2, 2, 2} stays a size, never stride/padding/dilation.
static_assert(!BracedFromThree<nn::MaxPool3dOptions> && !BracedFromThree<nn::AvgPool3dOptions> &&
              !BracedFromThree<nn::LPPool3dOptions> && !BracedFromThree<nn::FractionalMaxPool3dOptions>);
static_assert(BracedFromThree<nn::ExpandingSize<3>>);

TEST(Pool3d, LayerArgumentsFollowPyTorch) {
  nn::MaxPool3d max(2);
  EXPECT_EQ(max.name(), "MaxPool3d");
  EXPECT_EQ(max.stride, nn::ExpandingSize<3>(2));  // the kernel size when not given
  EXPECT_EQ(max.padding, nn::ExpandingSize<3>(0));
  EXPECT_EQ(max.dilation, nn::ExpandingSize<3>(1));
  EXPECT_FALSE(max.return_indices);
  EXPECT_FALSE(max.ceil_mode);
  nn::AvgPool3d avg({2, 1, 2}, {.stride = 1});
  EXPECT_EQ(avg.name(), "AvgPool3d");
  EXPECT_EQ(avg.stride, nn::ExpandingSize<3>(1));
  EXPECT_TRUE(avg.count_include_pad);
  EXPECT_FALSE(avg.divisor_override.has_value());
  EXPECT_EQ(nn::AdaptiveAvgPool3d(2).name(), "AdaptiveAvgPool3d");
  EXPECT_EQ(nn::AdaptiveMaxPool3d(2).name(), "AdaptiveMaxPool3d");
  EXPECT_EQ(nn::LPPool3d(2, 2).name(), "LPPool3d");
  EXPECT_EQ(nn::FractionalMaxPool2d(2, {.output_size = 3}).name(), "FractionalMaxPool2d");
  EXPECT_EQ(nn::FractionalMaxPool3d(2, {.output_ratio = 0.5}).name(), "FractionalMaxPool3d");
  // No state unless fixed samples are given; then PyTorch's buffer name.
  EXPECT_TRUE(nn::FractionalMaxPool2d(2, {.output_size = 3}).state_dict().empty());
  const nn::StateDict fixed =
      nn::FractionalMaxPool2d(2, {.output_size = 3, .random_samples = rand({1, 1, 2})}).state_dict();
  EXPECT_EQ(fixed.keys(), (std::vector<std::string>{"_random_samples"}));
  // A layer asked for indices does not drop them silently.
  const Tensor x = arange(64, kFloat64).reshape({1, 4, 4, 4});
  nn::MaxPool3d indices(2, {.return_indices = true});
  EXPECT_EQ(error_of([&] { indices(x); }),
            "MaxPool3d(return_indices=true) returns (output, indices): call forward_with_indices instead of forward");
  auto [values, where] = indices.forward_with_indices(x);
  // Each window's maximum is its last element, d*16 + h*4 + w, which is also its index.
  EXPECT_TRUE(equal(values, tensor({21.0, 23.0, 29.0, 31.0, 53.0, 55.0, 61.0, 63.0}, kFloat64).reshape({1, 2, 2, 2})));
  EXPECT_TRUE(equal(where, values.to(kInt64)));
  // Integers are max-pooled too; empty batches pool; sizes of 0 give empty results.
  const Tensor pooled_integers = F::max_pool3d(arange(8).reshape({1, 1, 2, 2, 2}), {2});
  EXPECT_EQ(pooled_integers.dtype(), kInt64);
  EXPECT_EQ(pooled_integers.item<int64_t>(), 7);
  // int64 averages are PyTorch's truncated quotients (values from PyTorch 2.15).
  const Tensor longs = tensor(std::vector<int64_t>{-3, -4, 5, 7, 1, 2, -9, 8}).reshape({1, 1, 2, 2, 2});
  EXPECT_EQ(F::avg_pool3d(longs, {2}).item<int64_t>(), 0);
  const Tensor halves = F::avg_pool3d(longs, {1, 1, 2});
  EXPECT_EQ(halves.dtype(), kInt64);
  EXPECT_TRUE(equal(halves, tensor(std::vector<int64_t>{-3, 6, 1, 0}).reshape({1, 1, 2, 2, 1})));
  EXPECT_TRUE(equal(F::avg_pool3d(longs, {1, 1, 2}, {}, {0}, false, true, 3),
                    tensor(std::vector<int64_t>{-2, 4, 1, 0}).reshape({1, 1, 2, 2, 1})));
  EXPECT_TRUE(equal(F::avg_pool3d(longs, {1, 2, 2}, {}, {0, 1, 0}, false, false),
                    tensor(std::vector<int64_t>{-3, 6, 1, 0}).reshape({1, 1, 2, 2, 1})));
  EXPECT_EQ(error_of([&] { F::avg_pool3d(longs.to(kInt32), {2}); }),
            "\"avg_pool3d_out_frame\" not implemented for 'Int'");
  EXPECT_EQ(F::max_pool3d(zeros({0, 3, 4, 5, 6}), {2}).sizes().vec(), (std::vector<int64_t>{0, 3, 2, 2, 3}));
  EXPECT_EQ(F::avg_pool3d(zeros({0, 3, 4, 5, 6}), {2}).sizes().vec(), (std::vector<int64_t>{0, 3, 2, 2, 3}));
  EXPECT_EQ(F::adaptive_avg_pool3d(zeros({2, 3, 4, 5, 6}), {0}).sizes().vec(), (std::vector<int64_t>{2, 3, 0, 0, 0}));
  EXPECT_EQ(F::adaptive_max_pool3d(zeros({0, 3, 4, 5, 6}), {2}).sizes().vec(), (std::vector<int64_t>{0, 3, 2, 2, 2}));
  EXPECT_EQ(F::fractional_max_pool2d(zeros({2, 3, 8, 8}), {2}, {0}, {}, rand({2, 3, 2})).sizes().vec(),
            (std::vector<int64_t>{2, 3, 0, 0}));
  // A NaN in a window is that window's maximum.
  Tensor nan = zeros({1, 1, 2, 2, 2}, kFloat64);
  {
    NoGradGuard no_grad;
    nan.view({-1}).narrow(0, 5, 1).fill_(std::nan(""));
  }
  EXPECT_TRUE(std::isnan(F::max_pool3d(nan, {2}).item<double>()));
  // Without samples, fractional pooling draws them: same seed, same windows.
  const Tensor r = randn({2, 3, 9, 9});
  manual_seed(4);
  const Tensor a = F::fractional_max_pool2d(r, {2}, {4});
  manual_seed(4);
  EXPECT_TRUE(equal(a, F::fractional_max_pool2d(r, {2}, {}, {0.5})));
}

TEST(Pool3d, GradientsMatchFiniteDifferences) {
  manual_seed(5);
  test::gradcheck("max_pool3d",
                  [](const std::vector<Tensor>& in) {
                    return F::max_pool3d(in[0], {2, 3, 2}, {1, 2, 1}, {1}, {1}, true);
                  },
                  {randn({1, 2, 3, 4, 3}, kFloat64)});
  test::gradcheck("avg_pool3d",
                  [](const std::vector<Tensor>& in) {
                    return F::avg_pool3d(in[0], {3, 2, 2}, {2, 1, 2}, {1, 1, 0}, true, false);
                  },
                  {randn({2, 4, 3, 4}, kFloat64)});
  test::gradcheck("adaptive_avg_pool3d",
                  [](const std::vector<Tensor>& in) {
                    return F::adaptive_avg_pool3d(in[0], {2, 3, 2});
                  },
                  {randn({1, 2, 3, 4, 3}, kFloat64)});
  test::gradcheck("adaptive_max_pool3d",
                  [](const std::vector<Tensor>& in) {
                    return F::adaptive_max_pool3d(in[0], {2, 2, 3});
                  },
                  {randn({1, 2, 3, 4, 4}, kFloat64)});
  test::gradcheck("lp_pool3d", [](const std::vector<Tensor>& in) { return F::lp_pool3d(in[0], 2.0, {2}, {1}); },
                  {randn({1, 2, 3, 3, 3}, kFloat64)});
  test::gradgradcheck("avg_pool3d, twice",
                      [](const std::vector<Tensor>& in) { return F::avg_pool3d(in[0], {2}, {1}, {1}, false, false); },
                      {randn({1, 3, 3, 2}, kFloat64)});
  test::gradgradcheck("max_pool3d, twice", [](const std::vector<Tensor>& in) { return F::max_pool3d(in[0], {2}, {1}); },
                      {randn({1, 3, 3, 3}, kFloat64)});
  const Tensor samples2 = rand({1, 2, 2}, kFloat64), samples3 = rand({1, 1, 3}, kFloat64);
  test::gradcheck("fractional_max_pool2d",
                  [&](const std::vector<Tensor>& in) {
                    return F::fractional_max_pool2d(in[0], {2}, {3, 3}, {}, samples2);
                  },
                  {randn({1, 2, 5, 6}, kFloat64)});
  test::gradcheck("fractional_max_pool3d",
                  [&](const std::vector<Tensor>& in) {
                    return F::fractional_max_pool3d(in[0], {2}, {2, 3, 2}, {}, samples3);
                  },
                  {randn({1, 1, 4, 5, 4}, kFloat64)});
}

TEST(Pool3d, ErrorsMatchPyTorch) {
  const Tensor p = zeros({2, 3, 4, 5, 6});
  EXPECT_EQ(error_of([] {
              F::max_pool3d(zeros({3, 4, 5}), {2});
            }),
            "non-empty 4D or 5D (batch mode) tensor expected for input");
  EXPECT_EQ(error_of([] {
              F::max_pool3d(zeros({2, 0, 4, 5, 6}), {2});
            }),
            "max_pool3d_with_indices_out_cpu_template(): Expected input to have non-zero size for non-batch "
            "dimensions, but input has sizes [2, 0, 4, 5, 6] with dimension 1 being empty");
  EXPECT_EQ(error_of([] {
              F::max_pool3d(zeros({0, 4, 5, 6}), {2});
            }),
            "max_pool3d_with_indices_out_cpu_template(): Expected input to have non-zero size for non-batch "
            "dimensions, but input has sizes [0, 4, 5, 6] with dimension 0 being empty");
  EXPECT_EQ(error_of([&] {
              F::max_pool3d(p, {2, 2});
            }),
            "max_pool3d: kernel_size must either be a single int, or a tuple of three ints");
  EXPECT_EQ(error_of([&] {
              F::max_pool3d(p, {2}, {2, 2});
            }),
            "max_pool3d: stride must either be omitted, a single int, or a tuple of three ints");
  EXPECT_EQ(error_of([&] {
              F::max_pool3d(p, {2}, {2}, {0, 0});
            }),
            "max_pool3d: padding must either be a single int, or a tuple of three ints");
  EXPECT_EQ(error_of([&] {
              F::max_pool3d(p, {2}, {2}, {0}, {1, 1});
            }),
            "max_pool3d: dilation must be either a single int, or a tuple of three ints");
  EXPECT_EQ(error_of([&] { F::max_pool3d(p, {0}); }), "stride should not be zero");
  EXPECT_EQ(error_of([&] { F::max_pool3d(p, {2}, {1}, {0}, {0}); }),
            "dilation should be greater than zero, but got dilationT: 0 dilationH: 0 dilationW: 0");
  EXPECT_EQ(error_of([&] { F::max_pool3d(p, {2}, {1}, {2}); }),
            "pad should be at most half of effective kernel size, but got pad=2, kernel_size=2 and dilation=1");
  EXPECT_EQ(error_of([&] { F::max_pool3d(p, {2}, {1}, {-1}); }), "pad must be non-negative, but got pad: -1");
  EXPECT_EQ(error_of([&] { F::max_pool3d(p, {3}, {1}, {2}, {2}); }),
            "pad should be smaller than or equal to half of kernel size, but got kT: 3 kW: 3 kH: 3 padT: 2 padW: 2 "
            "padH: 2");
  EXPECT_EQ(error_of([&] { F::max_pool3d(p, {5}); }),
            "Given input size: (3x4x5x6). Calculated output size: (3x0x1x1). Output size is too small");
  EXPECT_EQ(error_of([] {
              F::avg_pool3d(zeros({2, 0, 4, 5, 6}), {2});
            }),
            "avg_pool3d(): Expected input to have non-zero size for non-batch dimensions, but input has sizes "
            "[2, 0, 4, 5, 6] with dimension 1 being empty");
  EXPECT_EQ(error_of([&] {
              F::avg_pool3d(p, {2, 2});
            }),
            "avg_pool3d: kernel_size must be a single int, or a tuple of three ints");
  EXPECT_EQ(error_of([&] {
              F::avg_pool3d(p, {2}, {2, 2});
            }),
            "avg_pool3d: stride must be omitted, a single int, or a tuple of three ints");
  EXPECT_EQ(error_of([&] {
              F::avg_pool3d(p, {2}, {2}, {0, 0});
            }),
            "avg_pool3d: padding must be a single int, or a tuple of three ints");
  EXPECT_EQ(error_of([&] { F::avg_pool3d(p, {5}); }),
            "input image (T: 4 H: 5 W: 6) smaller than kernel size (kT: 5 kH: 5 kW: 5)");
  EXPECT_EQ(error_of([&] {
              F::avg_pool3d(zeros({1, 1, 2, 5, 5}), {3}, {1}, {1});
            }),
            "input image (T: 2 H: 5 W: 5) smaller than kernel size (kT: 3 kH: 3 kW: 3)");
  EXPECT_EQ(error_of([&] { F::avg_pool3d(p, {2}, {}, {0}, false, true, 0); }), "divisor must be not zero");
  EXPECT_EQ(error_of([] {
              F::adaptive_avg_pool3d(zeros({3, 4, 5}), {2});
            }),
            "adaptive_avg_pool3d(): Expected 4D or 5D tensor, but got [3, 4, 5]");
  EXPECT_EQ(error_of([] {
              F::adaptive_avg_pool3d(zeros({2, 3, 0, 5, 6}), {2});
            }),
            "adaptive_avg_pool3d(): Expected input to have non-zero size for non-batch dimensions, but input has "
            "sizes [2, 3, 0, 5, 6] with dimension 2 being empty");
  EXPECT_EQ(error_of([&] { F::adaptive_avg_pool3d(p, {2, 2}); }), "adaptive_avg_pool3d: output_size must be 3");
  EXPECT_EQ(error_of([&] {
              F::adaptive_avg_pool3d(p, {2, -1, 2});
            }),
            "adaptive_avg_pool3d: elements of output_size must be greater than or equal to 0 but received {2, -1,2}");
  EXPECT_EQ(error_of([&] { F::adaptive_avg_pool3d(p.to(kInt64), {2}); }),
            "\"adaptive_avg_pool3d_cpu\" not implemented for 'Long'");
  EXPECT_EQ(error_of([] {
              F::adaptive_max_pool3d(zeros({3, 4, 5}), {2});
            }),
            "adaptive_max_pool3d(): Expected 4D or 5D tensor, but got: [3, 4, 5]");
  EXPECT_EQ(error_of([&] {
              F::adaptive_max_pool3d(p, {2, 2});
            }),
            "adaptive_max_pool3d(): internal error: output_size.size() must be 3");
  EXPECT_EQ(error_of([&] {
              F::adaptive_max_pool3d(p, {2, -1, 2});
            }),
            "Trying to create tensor with negative dimension -1: [2, 3, 2, -1, 2]");
  EXPECT_EQ(error_of([&] { F::lp_pool3d(p, 0, {2}); }), "norm_type must be a non-zero value, but got 0.0");
  EXPECT_EQ(error_of([] { nn::LPPool3d(0, 2); }), "norm_type must be a non-zero value, but got 0.0");
  EXPECT_EQ(error_of([] {
              nn::MaxPool3d({2, 2});
            }),
            "MaxPool3d: kernel_size must either be a single int, or a tuple of 3 ints");
  // Fractional max pooling.
  const Tensor q = zeros({2, 3, 8, 8}), s = rand({2, 3, 2});
  EXPECT_EQ(error_of([] { nn::FractionalMaxPool2d(2); }),
            "FractionalMaxPool2d requires specifying either an output size, or a pooling ratio");
  EXPECT_EQ(error_of([] { nn::FractionalMaxPool2d(2, {.output_size = 2, .output_ratio = 0.5}); }),
            "only one of output_size and output_ratio may be specified");
  EXPECT_EQ(error_of([] { nn::FractionalMaxPool2d(2, {.output_ratio = 1.5}); }),
            "output_ratio must be between 0 and 1 (got 1.5)");
  EXPECT_EQ(error_of([] {
              nn::FractionalMaxPool3d(2, {.output_ratio = {0.5, 0.5, 1.0}});
            }),
            "output_ratio must be between 0 and 1 (got (0.5, 0.5, 1.0))");
  EXPECT_EQ(error_of([] { nn::FractionalMaxPool3d(2); }),
            "FractionalMaxPool3d requires specifying either an output size, or a pooling ratio");
  EXPECT_EQ(error_of([&] { F::fractional_max_pool2d(q, {2}); }),
            "fractional_max_pool2d requires specifying either an output_size or an output_ratio");
  EXPECT_EQ(error_of([] {
              F::fractional_max_pool2d(zeros({8, 8}), {2}, {3});
            }),
            "Dimension out of range (expected to be in range of [-2, 1], but got -3)");
  EXPECT_EQ(error_of([&] { F::fractional_max_pool2d(q, {2}, {8}, {}, s); }),
            "fractional_max_pool2d(): pool height 2 too large relative to input height 8");
  EXPECT_EQ(error_of([&] {
              F::fractional_max_pool2d(q, {2}, {4, 8}, {}, s);
            }),
            "fractional_max_pool2d(): pool width 2 too large relative to input width 8");
  EXPECT_EQ(error_of([&] {
              F::fractional_max_pool2d(q, {2}, {4}, {}, rand({2, 3, 3}));
            }),
            "Expect _random_samples.size(2) equals to 2; got 3.");
  EXPECT_EQ(error_of([&] {
              F::fractional_max_pool2d(q, {2}, {4}, {}, rand({1, 3, 2}));
            }),
            "Expect _random_samples.size(0) no less then input batch size.");
  EXPECT_EQ(error_of([&] {
              F::fractional_max_pool2d(q, {2}, {4}, {}, rand({2, 2, 2}));
            }),
            "Expect _random_samples.size(1) equals to input channel size.");
  EXPECT_EQ(error_of([&] {
              F::fractional_max_pool2d(q, {2}, {4}, {}, rand({2, 3}));
            }),
            "Expect _random_samples to have 3 dimensions, got 2");
  EXPECT_EQ(error_of([&] { F::fractional_max_pool2d(q, {2}, {4}, {}, s.to(kFloat64)); }),
            "Expect _random_samples to have the same dtype as input");
  EXPECT_EQ(error_of([] {
              F::fractional_max_pool2d(zeros({2, 3, 0, 8}), {2}, {4});
            }),
            "fractional_max_pool2d(): Expected input to have non-zero size for non-batch dimensions, but got[2, 3, 0, "
            "8] with dimension 2 being empty.");
  EXPECT_EQ(error_of([&] { F::fractional_max_pool2d(q, {0}, {4}, {}, s); }),
            "fractional_max_pool2d(): kernel size should be greater than zero, but got 0x0");
  EXPECT_EQ(error_of([&] {
              F::fractional_max_pool2d(q, {2, 2, 2}, {4}, {}, s);
            }),
            "fractional_max_pool2d: kernel_size must either be a single Int or tuple of Ints");
  EXPECT_EQ(error_of([&] { F::fractional_max_pool2d(q, {2}, {-1}, {}, s); }),
            "Trying to create tensor with negative dimension -1: [2, 3, -1, -1]");
  EXPECT_EQ(error_of([] {
              F::fractional_max_pool2d(zeros({1, 2, 3, 8, 8}), {2}, {4}, {}, rand({1, 3, 2}));
            }),
            "fractional_max_pool2d(): Expected 3D or 4D tensor, but got: [1, 2, 3, 8, 8]");
  const Tensor v = zeros({2, 3, 8, 8, 8}), s3 = rand({2, 3, 3});
  EXPECT_EQ(error_of([&] {
              F::fractional_max_pool3d(v, {2}, {8, 4, 4}, {}, s3);
            }),
            "fractional_max_pool3d_out(): pool time 2 too large relative to input time 8");
  EXPECT_EQ(error_of([&] { F::fractional_max_pool3d(v, {0}, {4}, {}, s3); }),
            "fractional_max_pool3d(): kernel size should be greater than zero, but got 0x0x0");
  EXPECT_EQ(error_of([&] {
              F::fractional_max_pool3d(v, {2, 2}, {4}, {}, s3);
            }),
            "fractional_max_pool3d: kernel_size must either be a single Int or tuple of three Ints");
  EXPECT_EQ(error_of([&] {
              F::fractional_max_pool3d(v, {2}, {4, 4}, {}, s3);
            }),
            "fractional_max_pool3d: output_size must either be a single Int or tuple of three Ints");
  EXPECT_EQ(error_of([&] {
              F::fractional_max_pool3d(v, {2}, {4}, {}, rand({2, 3, 2}));
            }),
            "Expect _random_samples.size(2) equals to 3; got 2.");
  EXPECT_EQ(error_of([] {
              F::fractional_max_pool3d(zeros({2, 3, 0, 8, 8}), {2}, {4});
            }),
            "fractional_max_pool3d_out(): Expected input to have non-zero size for non-batch dimensions, but got[2, 3, "
            "0, 8, 8] with dimension 2 being empty.");
}

class Pool3dDevice : public ember_test::DeviceTest {};

TEST_P(Pool3dDevice, EveryCaseMatchesTheCpu) {
  for (const GoldenCase& c : ember_test::golden_cases(golden().metadata)) {
    SCOPED_TRACE(c.description);
    Tensor x_cpu = at(c, "x").clone().requires_grad_();
    Tensor x_dev = at(c, "x").to(device()).requires_grad_();
    auto [y_cpu, idx_cpu] = run_functional(c, x_cpu);
    auto [y_dev, idx_dev] = run_functional(c, x_dev);
    EXPECT_EQ(y_dev.device(), device());
    EXPECT_CLOSE_TO_CPU(y_dev, y_cpu, 1e-12, 1e-12);
    if (idx_cpu.defined()) {
      EXPECT_CLOSE_TO_CPU(idx_dev, idx_cpu, 0, 0);
    }
    const Tensor gy = upstream(y_cpu);
    EXPECT_CLOSE_TO_CPU(autograd::grad({y_dev}, {x_dev}, {gy.to(device())})[0],
                        autograd::grad({y_cpu}, {x_cpu}, {gy})[0], 1e-12, 1e-12);
  }
  // Samples drawn on the device, and the int64 paths.
  EXPECT_EQ(F::fractional_max_pool3d(randn({1, 2, 6, 6, 6}).to(device()), {2}, {3}).device(), device());
  const Tensor longs = arange(16).reshape({1, 2, 2, 2, 2});
  EXPECT_CLOSE_TO_CPU(F::avg_pool3d(longs.to(device()), {1, 2, 2}), F::avg_pool3d(longs, {1, 2, 2}), 0, 0);
  EXPECT_CLOSE_TO_CPU(F::max_pool3d(longs.to(device()), {2}), F::max_pool3d(longs, {2}), 0, 0);
}

EMBER_INSTANTIATE_DEVICE_SUITE(Pool3dDevice);

}  // namespace
