// 1-D pooling (ember/pool1d.h, src/ops/pooling.cpp) and its layers (ember/nn/pooling.h):
// max_pool1d (with its indices), avg_pool1d and adaptive_avg_pool1d against PyTorch's values and
// gradients (tools/gen_padding_pool1d_golden.py), finite-difference gradients, PyTorch's errors,
// and the same cases on every usable accelerator (and the stand-in device) against the CPU.
#include <gtest/gtest.h>

#include <cmath>
#include <memory>
#include <string>
#include <tuple>
#include <vector>

#include "ember/ember.h"
#include "ember/io/safetensors.h"
#include "ember/nn/pooling.h"
#include "ember/pool1d.h"
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
      io::load_safetensors(EMBER_SOURCE_DIR "/tests/nn/golden/padding_pool1d_golden.safetensors");
  return data;
}

std::vector<GoldenCase> pool_cases() {
  std::vector<GoldenCase> out;
  for (GoldenCase& c : ember_test::golden_cases(golden().metadata)) {
    if (c.kind.ends_with("pool1d")) out.push_back(std::move(c));
  }
  return out;
}

const Tensor& at(const GoldenCase& c, const std::string& name) { return golden().at(c.prefix + name); }

std::vector<int64_t> stride_of(const GoldenCase& c) {
  return c.options.at("stride") == "none" ? std::vector<int64_t>{} : std::vector<int64_t>{c.num("stride")};
}

/// The case as a call of the functional form.
Tensor run_functional(const GoldenCase& c, const Tensor& x) {
  if (c.kind == "max_pool1d") {
    return F::max_pool1d(x, {c.num("kernel")}, stride_of(c), {c.num("padding")}, {c.num("dilation")}, c.flag("ceil"));
  }
  if (c.kind == "avg_pool1d") {
    return F::avg_pool1d(x, {c.num("kernel")}, stride_of(c), {c.num("padding")}, c.flag("ceil"),
                         c.flag("count_include_pad"));
  }
  return F::adaptive_avg_pool1d(x, {c.num("output")});
}

/// The case's layer.
std::shared_ptr<nn::Module> layer_of(const GoldenCase& c) {
  if (c.kind == "max_pool1d") {
    return std::make_shared<nn::MaxPool1d>(std::vector<int64_t>{c.num("kernel")}, stride_of(c),
                                           std::vector<int64_t>{c.num("padding")},
                                           std::vector<int64_t>{c.num("dilation")}, false, c.flag("ceil"));
  }
  if (c.kind == "avg_pool1d") {
    return std::make_shared<nn::AvgPool1d>(std::vector<int64_t>{c.num("kernel")}, stride_of(c),
                                           std::vector<int64_t>{c.num("padding")}, c.flag("ceil"),
                                           c.flag("count_include_pad"));
  }
  return std::make_shared<nn::AdaptiveAvgPool1d>(std::vector<int64_t>{c.num("output")});
}

TEST(Pool1d, FunctionsAndLayersMatchPyTorch) {
  const std::vector<GoldenCase> cases = pool_cases();
  ASSERT_EQ(cases.size(), 15u);
  for (const GoldenCase& c : cases) {
    SCOPED_TRACE(c.description);
    Tensor x = at(c, "x").clone().requires_grad_();
    const Tensor y = run_functional(c, x);
    expect_close(y, at(c, "y"), 1e-12, 1e-13, "y");
    expect_close(autograd::grad({y}, {x}, {at(c, "gy")})[0], at(c, "gx"), 1e-12, 1e-13, "gx");
    const std::shared_ptr<nn::Module> m = layer_of(c);
    Tensor x2 = at(c, "x").clone().requires_grad_();
    const Tensor y2 = (*m)(x2);
    expect_close(y2, at(c, "y"), 1e-12, 1e-13, "layer y");
    expect_close(autograd::grad({y2}, {x2}, {at(c, "gy")})[0], at(c, "gx"), 1e-12, 1e-13, "layer gx");
    if (c.kind != "max_pool1d") continue;
    // return_indices: the functional form and the layer's forward_with_indices.
    Tensor x3 = at(c, "x").clone().requires_grad_();
    auto [y3, idx] = F::max_pool1d_with_indices(x3, {c.num("kernel")}, stride_of(c), {c.num("padding")},
                                                {c.num("dilation")}, c.flag("ceil"));
    expect_close(y3, at(c, "y"), 1e-12, 1e-13, "y with indices");
    EXPECT_EQ(idx.dtype(), kInt64);
    EXPECT_TRUE(equal(idx, at(c, "idx"))) << idx << "\n" << at(c, "idx");
    expect_close(autograd::grad({y3}, {x3}, {at(c, "gy")})[0], at(c, "gx"), 1e-12, 1e-13, "gx with indices");
    nn::MaxPool1d with_indices({c.num("kernel")}, stride_of(c), {c.num("padding")}, {c.num("dilation")},
                               /*return_indices=*/true, c.flag("ceil"));
    auto [y4, idx4] = with_indices.forward_with_indices(at(c, "x"));
    EXPECT_TRUE(equal(y4, at(c, "y")));
    EXPECT_TRUE(equal(idx4, at(c, "idx")));
  }
}

TEST(Pool1d, LayerArgumentsFollowPyTorch) {
  nn::MaxPool1d max({3});
  EXPECT_EQ(max.name(), "MaxPool1d");
  EXPECT_TRUE(max.stride.empty());
  EXPECT_EQ(max.padding, (std::vector<int64_t>{0}));
  EXPECT_EQ(max.dilation, (std::vector<int64_t>{1}));
  EXPECT_FALSE(max.return_indices);
  EXPECT_FALSE(max.ceil_mode);
  nn::AvgPool1d avg({2});
  EXPECT_EQ(avg.name(), "AvgPool1d");
  EXPECT_TRUE(avg.count_include_pad);
  EXPECT_FALSE(avg.ceil_mode);
  EXPECT_EQ(nn::AdaptiveAvgPool1d({4}).name(), "AdaptiveAvgPool1d");
  // The default stride is the kernel size.
  const Tensor x = arange(8, kFloat64).reshape({1, 8});
  EXPECT_TRUE(equal(max(x), tensor({{2.0, 5.0}}, kFloat64)));
  EXPECT_TRUE(equal(avg(x), tensor({{0.5, 2.5, 4.5, 6.5}}, kFloat64)));
  // A layer asked for indices does not drop them silently.
  nn::MaxPool1d indices({2}, {}, {0}, {1}, /*return_indices=*/true);
  EXPECT_EQ(error_of([&] { indices(x); }),
            "MaxPool1d(return_indices=true) returns (output, indices): call forward_with_indices instead of forward");
  auto [values, where] = indices.forward_with_indices(x);
  EXPECT_TRUE(equal(values, tensor({{1.0, 3.0, 5.0, 7.0}}, kFloat64)));
  EXPECT_TRUE(equal(where, tensor({{1, 3, 5, 7}}, kInt64)));
  // Empty batches pool; an output size of 0 gives an empty result.
  EXPECT_EQ(F::max_pool1d(zeros({0, 3, 5}), {2}).sizes().vec(), (std::vector<int64_t>{0, 3, 2}));
  EXPECT_EQ(F::adaptive_avg_pool1d(zeros({2, 3, 5}), {0}).sizes().vec(), (std::vector<int64_t>{2, 3, 0}));
  // A NaN in a window is that window's maximum.
  const Tensor nan = tensor({{1.0, std::nan(""), 0.5, 2.0}}, kFloat64);
  const Tensor m = F::max_pool1d(nan, {2});
  EXPECT_TRUE(std::isnan(m[0][0].item<double>()));
  EXPECT_EQ(m[0][1].item<double>(), 2.0);
}

TEST(Pool1d, GradientsMatchFiniteDifferences) {
  manual_seed(5);
  test::gradcheck("max_pool1d",
                  [](const std::vector<Tensor>& in) { return F::max_pool1d(in[0], {3}, {2}, {1}, {2}, true); },
                  {randn({2, 2, 9}, kFloat64)});
  test::gradcheck("avg_pool1d",
                  [](const std::vector<Tensor>& in) { return F::avg_pool1d(in[0], {3}, {2}, {1}, true, false); },
                  {randn({2, 2, 8}, kFloat64)});
  test::gradcheck("adaptive_avg_pool1d",
                  [](const std::vector<Tensor>& in) { return F::adaptive_avg_pool1d(in[0], {3}); },
                  {randn({3, 7}, kFloat64)});
  test::gradgradcheck("avg_pool1d, twice", [](const std::vector<Tensor>& in) { return F::avg_pool1d(in[0], {2}, {1}); },
                      {randn({2, 5}, kFloat64)});
}

TEST(Pool1d, ErrorsMatchPyTorch) {
  const Tensor x = zeros({2, 3, 5});
  // max_pool1d checks everything itself.
  EXPECT_EQ(error_of([] {
              F::max_pool1d(zeros({1, 2, 3, 5}), {2});
            }),
            "max_pool1d: Expected 2D or 3D (batch mode) tensor with optional 0 dim batch size for input, but "
            "got:[1, 2, 3, 5]");
  EXPECT_EQ(error_of([] {
              F::max_pool1d(zeros({2, 0, 5}), {2});
            }),
            "max_pool1d: Expected 2D or 3D (batch mode) tensor with optional 0 dim batch size for input, but "
            "got:[2, 0, 5]");
  EXPECT_EQ(error_of([&] {
              F::max_pool1d(x, {2, 2});
            }),
            "max_pool1d() kernel_size must be an int, list of ints or tuple of ints of size 1 but got size 2");
  EXPECT_EQ(error_of([&] {
              F::max_pool1d(x, {2}, {1, 1});
            }),
            "max_pool1d() stride must be None, an int, list of ints, or tuple of ints of size 1 but got size 2");
  EXPECT_EQ(error_of([&] {
              F::max_pool1d(x, {2}, {1}, {0, 0});
            }),
            "max_pool1d() padding must be an int, list of ints, or tuple of ints of size 1 but got size 2");
  EXPECT_EQ(error_of([&] {
              F::max_pool1d(x, {2}, {1}, {0}, {1, 1});
            }),
            "max_pool1d() dilation must be an int, list of ints or tuple of ints of size 1 but got size 2");
  EXPECT_EQ(error_of([&] { F::max_pool1d(x, {0}); }), "max_pool1d() kernel_size must be greater than zero, but got 0");
  EXPECT_EQ(error_of([&] { F::max_pool1d(x, {2}, {-1}); }),
            "max_pool1d() stride must be greater than zero, but got -1");
  EXPECT_EQ(error_of([&] { F::max_pool1d(x, {2}, {1}, {-1}); }),
            "max_pool1d() padding must be non-negative, but got -1");
  EXPECT_EQ(error_of([&] { F::max_pool1d(x, {3}, {1}, {2}); }),
            "max_pool1d() padding should be at most half of kernel size, but got padding=2 and kernel_size=3");
  EXPECT_EQ(error_of([&] { F::max_pool1d(x, {2}, {1}, {0}, {0}); }),
            "max_pool1d() dilation must be greater than zero, but got 0");
  EXPECT_EQ(error_of([&] { F::max_pool1d(x, {6}); }), "max_pool1d() Invalid computed output size: 0");
  EXPECT_EQ(error_of([&] { F::max_pool1d(x, {3}, {1}, {0}, {3}); }), "max_pool1d() Invalid computed output size: -1");
  EXPECT_EQ(error_of([] {
              F::max_pool1d(arange(10).reshape({2, 5}), {2});
            }),
            "\"max_pool1d_impl\" not implemented for 'Long'");
  // max_pool1d_with_indices, avg_pool1d and adaptive_avg_pool1d check the rank and the argument
  // lengths, and leave the rest to the 2-D op.
  EXPECT_EQ(error_of([] {
              F::max_pool1d_with_indices(zeros({1, 2, 3, 5}), {2});
            }),
            "Expected 2 to 3 dimensions, but got 4-dimensional tensor for argument #1 'self' (while checking "
            "arguments for max_pool1d)");
  EXPECT_EQ(error_of([&] {
              F::max_pool1d_with_indices(x, {2, 2});
            }),
            "max_pool1d() argument 'kernel_size' should contain one int (got 2)");
  EXPECT_EQ(error_of([&] {
              F::max_pool1d_with_indices(x, {2}, {}, {0}, {1, 1});
            }),
            "max_pool1d() argument 'dilation' should contain one int (got 2)");
  EXPECT_EQ(error_of([&] { F::max_pool1d_with_indices(x, {6}); }),
            "Given input size: (3x1x5). Calculated output size: (3x1x0). Output size is too small");
  EXPECT_EQ(error_of([] { F::avg_pool1d(zeros({5}), {2}); }),
            "Expected 2 to 3 dimensions, but got 1-dimensional tensor for argument #1 'self' (while checking "
            "arguments for avg_pool1d)");
  EXPECT_EQ(error_of([&] {
              F::avg_pool1d(x, {2, 2});
            }),
            "avg_pool1d() argument 'kernel_size' should contain one int (got 2)");
  EXPECT_EQ(error_of([&] {
              F::avg_pool1d(x, {2}, {1, 1});
            }),
            "avg_pool1d() argument 'stride' should contain one int (got 2)");
  EXPECT_EQ(error_of([&] {
              F::avg_pool1d(x, {2}, {1}, {0, 0});
            }),
            "avg_pool1d() argument 'padding' should contain one int (got 2)");
  EXPECT_EQ(error_of([&] { F::avg_pool1d(x, {0}); }), "stride should not be zero");
  EXPECT_EQ(error_of([&] { F::avg_pool1d(x, {3}, {1}, {2}); }),
            "pad should be at most half of effective kernel size, but got pad=2, kernel_size=3 and dilation=1");
  EXPECT_EQ(error_of([&] { F::avg_pool1d(x, {6}); }),
            "Given input size: (3x1x5). Calculated output size: (3x1x0). Output size is too small");
  EXPECT_EQ(error_of([] {
              F::avg_pool1d(zeros({2, 0, 5}), {2});
            }),
            "Expected 3D or 4D (batch mode) tensor with optional 0 dim batch size for input, but got:[2, 0, 1, 5]");
  EXPECT_EQ(error_of([] {
              F::adaptive_avg_pool1d(zeros({1, 2, 3, 5}), {2});
            }),
            "Expected 2 to 3 dimensions, but got 4-dimensional tensor for argument #1 'self' (while checking "
            "arguments for adaptive_avg_pool1d)");
  EXPECT_EQ(error_of([&] {
              F::adaptive_avg_pool1d(x, {2, 2});
            }),
            "adaptive_avg_pool1d() argument 'output_size' should contain one int (got 2)");
  EXPECT_EQ(error_of([&] { F::adaptive_avg_pool1d(x, {-1}); }),
            "adaptive_avg_pool2d: elements of output_size must be greater than or equal to 0 but received {1, -1}");
  EXPECT_EQ(error_of([] {
              F::adaptive_avg_pool1d(zeros({2, 3, 0}), {2});
            }),
            "adaptive_avg_pool2d(): Expected input to have non-zero size for non-batch dimensions, but input has "
            "sizes [2, 3, 1, 0] with dimension 3 being empty");
  EXPECT_EQ(error_of([] {
              F::adaptive_avg_pool1d(arange(10).reshape({2, 5}), {2});
            }),
            "\"adaptive_avg_pool2d\" not implemented for 'Long'");
  // The context line names the 1-D op the user called.
  EXPECT_NE(
      ember_test::full_error_of([&] { F::avg_pool1d(x, {6}); }).find("\n  in avg_pool1d(input: float32 [2, 3, 5]"),
      std::string::npos);
}

class Pool1dDevice : public ember_test::DeviceTest {};

TEST_P(Pool1dDevice, EveryCaseMatchesTheCpu) {
  for (const GoldenCase& c : pool_cases()) {
    SCOPED_TRACE(c.description);
    Tensor x_cpu = at(c, "x").clone().requires_grad_();
    Tensor x_dev = at(c, "x").to(device()).requires_grad_();
    const Tensor y_cpu = run_functional(c, x_cpu), y_dev = run_functional(c, x_dev);
    EXPECT_EQ(y_dev.device(), device());
    EXPECT_CLOSE_TO_CPU(y_dev, y_cpu, 1e-12, 1e-13);
    const Tensor gy = at(c, "gy");
    EXPECT_CLOSE_TO_CPU(autograd::grad({y_dev}, {x_dev}, {gy.to(device())})[0],
                        autograd::grad({y_cpu}, {x_cpu}, {gy})[0], 1e-12, 1e-13);
    if (c.kind == "max_pool1d") {
      auto [v, i] = F::max_pool1d_with_indices(at(c, "x").to(device()), {c.num("kernel")}, stride_of(c),
                                               {c.num("padding")}, {c.num("dilation")}, c.flag("ceil"));
      EXPECT_CLOSE_TO_CPU(i, at(c, "idx"), 0, 0);
    }
  }
}

EMBER_INSTANTIATE_DEVICE_SUITE(Pool1dDevice);

}  // namespace
