// interpolate (src/ops/interpolate.cpp, ember/interpolate.h) and the upsampling layers
// (ember/nn/upsampling.h): every mode with and without align_corners, by size, by scale factor
// and with the scale recomputed, up and down, against PyTorch's values and gradients
// (tools/gen_interpolate_golden.py); finite-difference gradients of first and second order;
// PyTorch's errors; the resample kernels' corners (16-bit floats, uint8, non-contiguous inputs,
// threads, tables of any tap count checked against kernels/resample_ops.h, the CUDA kernels'
// per-element math); and the same cases on every usable accelerator (and the stand-in device)
// against the CPU.
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <limits>
#include <map>
#include <memory>
#include <optional>
#include <sstream>
#include <string>
#include <type_traits>
#include <utility>
#include <vector>

#include "backend/backend.h"
#include "ember/ember.h"
#include "ember/interpolate.h"
#include "ember/io/safetensors.h"
#include "ember/nn/upsampling.h"
#include "kernels/resample_ops.h"
#include "support/collect_warnings.h"
#include "support/devices.h"
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
      io::load_safetensors(EMBER_SOURCE_DIR "/tests/ops/golden/interpolate_golden.safetensors");
  return data;
}

const Tensor& at(const GoldenCase& c, const std::string& name) { return golden().at(c.prefix + name); }

std::vector<int64_t> ints_of(const GoldenCase& c, const std::string& key) {
  std::vector<int64_t> out;
  if (!c.options.contains(key)) return out;
  std::istringstream in(c.options.at(key));
  for (int64_t v = 0; in >> v;) out.push_back(v);
  return out;
}

std::vector<double> reals_of(const GoldenCase& c, const std::string& key) {
  std::vector<double> out;
  if (!c.options.contains(key)) return out;
  std::istringstream in(c.options.at(key));
  for (std::string v; in >> v;) out.push_back(std::stod(v));
  return out;
}

std::optional<bool> flag_of(const GoldenCase& c, const std::string& key) {
  if (!c.options.contains(key)) return std::nullopt;
  return c.flag(key);
}

/// The generator's upstream gradient: ((7 k) mod 11 - 5) / 4 over y's elements.
Tensor upstream(const Tensor& y) {
  const Tensor k = arange(y.numel(), kInt64);
  return div(sub(remainder(mul(k, scalar_tensor(7, kInt64)), 11), scalar_tensor(5, kInt64)).to(kFloat64),
             scalar_tensor(4.0, kFloat64))
      .reshape(y.sizes())
      .to(y.dtype());
}

/// The golden case as a call of interpolate, a layer or a deprecated functional.
Tensor run_case(const GoldenCase& c, const Tensor& x) {
  const std::vector<int64_t> size = ints_of(c, "size");
  const std::vector<double> scale = reals_of(c, "scale");
  const std::string mode = c.options.contains("mode") ? c.options.at("mode") : "nearest";
  if (c.kind == "interpolate") {
    return interpolate(x, size, scale, mode, flag_of(c, "align"), flag_of(c, "recompute"));
  }
  if (c.kind == "Upsample") {
    if (mode == "nearest" && !c.options.contains("align") && !c.options.contains("recompute")) {
      return nn::Upsample(size, scale)(x);  // the defaults
    }
    return nn::Upsample(size, scale, mode, flag_of(c, "align"), flag_of(c, "recompute"))(x);
  }
  if (c.kind == "UpsamplingNearest2d") return nn::UpsamplingNearest2d(size, scale)(x);
  if (c.kind == "UpsamplingBilinear2d") return nn::UpsamplingBilinear2d(size, scale)(x);
  ember_test::CollectWarnings warnings;
  if (c.kind == "upsample_nearest") return F::upsample_nearest(x, size, scale);
  if (c.kind == "upsample_bilinear") return F::upsample_bilinear(x, size, scale);
  ADD_FAILURE() << "no case kind " << c.kind;
  return Tensor();
}

/// max |got - want| / (1 + |want|).
double worst_error(const Tensor& got, const Tensor& want) {
  NoGradGuard no_grad;
  const Tensor g = got.to(kFloat64), w = want.to(kFloat64);
  return amax(div(abs(sub(g, w)), add(abs(w), scalar_tensor(1.0, kFloat64)))).item<double>();
}

TEST(Interpolate, MatchesPyTorchValuesAndGradients) {
  const std::vector<GoldenCase> cases = ember_test::golden_cases(golden().metadata);
  ASSERT_GE(cases.size(), 100u);
  std::map<std::string, int> per_mode;
  double worst64[2] = {0, 0}, worst32[2] = {0, 0};  // forward, gradient
  int count64 = 0, exact_values = 0, exact_gradients = 0;
  for (const GoldenCase& c : cases) {
    SCOPED_TRACE(c.description);
    Tensor x = at(c, "x").clone().requires_grad_();
    const Tensor y = run_case(c, x);
    ASSERT_TRUE(y.defined());
    ASSERT_EQ(y.sizes().vec(), at(c, "y").sizes().vec());
    ASSERT_EQ(y.dtype(), at(c, "y").dtype());
    EXPECT_FALSE(y.is_alias_of(x));
    const Tensor gx = autograd::grad({y}, {x}, {upstream(y)})[0];
    const bool f64 = x.dtype() == kFloat64;
    // float64: a few ulp (the gradient's sums run in another order); float32: the same indices and
    // weights as PyTorch, so a few float ulp — up to 2.2e-6 relative in bicubic when the compiler
    // contracts differently (the sanitizer build's -O1), hence 4e-6.
    const double tol = f64 ? 1e-13 : 4e-6;
    const double ey = worst_error(y, at(c, "y")), eg = worst_error(gx, at(c, "gx"));
    if (f64) {
      exact_values += equal(y, at(c, "y")) ? 1 : 0;
      exact_gradients += equal(gx, at(c, "gx")) ? 1 : 0;
      ++count64;
    }
    EXPECT_LE(ey, tol) << "got\n" << y << "\nwant\n" << at(c, "y");
    EXPECT_LE(eg, tol) << "gx\n" << gx << "\nwant\n" << at(c, "gx");
    double* worst = f64 ? worst64 : worst32;
    worst[0] = std::max(worst[0], ey);
    worst[1] = std::max(worst[1], eg);
    const std::string mode = c.options.contains("mode") ? c.options.at("mode") : "";
    if (mode == "nearest" || mode == "nearest-exact") {
      EXPECT_TRUE(equal(y, at(c, "y"))) << "nearest copies values";
    }
    ++per_mode[c.kind == "interpolate" ? mode : c.kind];
  }
  for (const char* mode : {"nearest", "nearest-exact", "linear", "bilinear", "bicubic", "trilinear", "area"}) {
    EXPECT_GE(per_mode[mode], 6) << mode;
  }
  for (const char* kind : {"Upsample", "UpsamplingNearest2d", "UpsamplingBilinear2d"}) EXPECT_GE(per_mode[kind], 2);
  std::printf(
      "[ interpolate ] worst |ember - PyTorch| / (1 + |PyTorch|): float64 values %.3g, gradients %.3g; "
      "float32 values %.3g, gradients %.3g\n",
      worst64[0], worst64[1], worst32[0], worst32[1]);
  std::printf("[ interpolate ] float64 cases bit for bit: values %d of %d, gradients %d of %d\n", exact_values, count64,
              exact_gradients, count64);
}

TEST(Interpolate, IndexRulesAndScaleUse) {
  const Tensor x = arange(5, kFloat64).reshape({1, 1, 5});
  // nearest: floor(dst * in / out); nearest-exact: floor((dst + 0.5) * in / out).
  EXPECT_TRUE(equal(interpolate(x, {3}), tensor({{{0.0, 1.0, 3.0}}}, kFloat64)));
  EXPECT_TRUE(equal(interpolate(x, {3}, {}, "nearest-exact"), tensor({{{0.0, 2.0, 4.0}}}, kFloat64)));
  // A kept scale factor maps with 1 / scale (here 1 / 1.7, not 5 / 8); recomputing uses 5 / 8.
  const Tensor kept = interpolate(x, {}, {1.7}, "linear");
  const Tensor recomputed = interpolate(x, {}, {1.7}, "linear", std::nullopt, true);
  ASSERT_EQ(kept.size(2), 8);
  ASSERT_EQ(recomputed.size(2), 8);
  EXPECT_NEAR(kept[0][0][3].item<double>(), (3 + 0.5) / 1.7 - 0.5, 1e-15);
  EXPECT_NEAR(recomputed[0][0][3].item<double>(), (3 + 0.5) * 5.0 / 8.0 - 0.5, 1e-15);
  // align_corners maps the corners onto each other; one output takes the first input.
  EXPECT_TRUE(equal(interpolate(x, {9}, {}, "linear", true),
                    tensor({{{0.0, 0.5, 1.0, 1.5, 2.0, 2.5, 3.0, 3.5, 4.0}}}, kFloat64)));
  EXPECT_TRUE(equal(interpolate(x, {1}, {}, "linear", true), tensor({{{0.0}}}, kFloat64)));
  // Bicubic reproduces a straight line inside and clamps the border (A = -0.75).
  const Tensor ramp = arange(4, kFloat64).reshape({1, 1, 1, 4}).expand({1, 1, 4, 4});
  const Tensor up = interpolate(ramp, {4, 7}, {}, "bicubic", true);
  for (int64_t j : {0, 2, 3, 4, 6}) EXPECT_NEAR(up[0][0][1][j].item<double>(), j * 0.5, 1e-14) << j;
  // Next to the border the clamped neighbour bends it: at 0.5 the taps read x[0], x[0], x[1], x[2].
  const double t = 0.5, a = -0.75;
  const double c0 = ((a * (t + 1) - 5 * a) * (t + 1) + 8 * a) * (t + 1) - 4 * a;
  const double c1 = ((a + 2) * t - (a + 3)) * t * t + 1;
  const double c2 = ((a + 2) * (1 - t) - (a + 3)) * (1 - t) * (1 - t) + 1;
  const double c3 = ((a * (2 - t) - 5 * a) * (2 - t) + 8 * a) * (2 - t) - 4 * a;
  EXPECT_NEAR(up[0][0][1][1].item<double>(), c0 * 0 + c1 * 0 + c2 * 1 + c3 * 2, 1e-14);
  // The same size computes the weighted sum anyway, as PyTorch does: inf * 0 is NaN.
  const Tensor with_inf = tensor({{{1.0, std::numeric_limits<double>::infinity()}}}, kFloat64);
  EXPECT_TRUE(std::isnan(interpolate(with_inf, {2}, {}, "linear")[0][0][1].item<double>()));
  // A single value stands for every spatial dimension.
  EXPECT_EQ(interpolate(zeros({1, 1, 2, 3}), {}, {2.5}).sizes().vec(), (std::vector<int64_t>{1, 1, 5, 7}));
  EXPECT_EQ(interpolate(zeros({1, 1, 2, 3, 4}), {2}).sizes().vec(), (std::vector<int64_t>{1, 1, 2, 2, 2}));
  // Empty batches are allowed.
  EXPECT_EQ(interpolate(zeros({0, 2, 4, 4}), {3}, {}, "bilinear").sizes().vec(), (std::vector<int64_t>{0, 2, 3, 3}));
  // nearest at the same size is a copy, never the input or a view of it.
  const Tensor same = interpolate(x, {5});
  EXPECT_TRUE(equal(same, x));
  EXPECT_FALSE(same.is_alias_of(x));
}

TEST(Interpolate, Dtypes) {
  const Tensor x = randn({1, 2, 3, 4});
  // float16 and bfloat16 compute in float and round the result.
  for (Dtype dtype : {kFloat16, kBFloat16}) {
    for (const char* mode : {"nearest", "bilinear", "bicubic"}) {
      const Tensor y = interpolate(x.to(dtype), {5, 7}, {}, mode);
      EXPECT_EQ(y.dtype(), dtype);
      EXPECT_TRUE(equal(y, interpolate(x.to(dtype).to(kFloat32), {5, 7}, {}, mode).to(dtype))) << mode;
    }
  }
  // uint8 in the nearest modes copies values.
  const Tensor bytes = arange(6, kInt64).reshape({1, 1, 2, 3}).to(kUInt8);
  const Tensor up = interpolate(bytes, {}, {2.0}, "nearest-exact");
  EXPECT_EQ(up.dtype(), kUInt8);
  EXPECT_TRUE(equal(up.to(kInt64), interpolate(bytes.to(kFloat32), {}, {2.0}, "nearest-exact").to(kInt64)));
}

TEST(Interpolate, GradientsMatchFiniteDifferences) {
  manual_seed(5);
  struct Case {
    std::vector<int64_t> shape, size;
    std::vector<double> scale;
    const char* mode;
    std::optional<bool> align;
  };
  const std::vector<Case> cases = {
      {{2, 2, 5}, {8}, {}, "nearest", std::nullopt},
      {{1, 2, 7}, {}, {0.6}, "nearest-exact", std::nullopt},
      {{2, 2, 5}, {}, {1.7}, "linear", false},
      {{1, 2, 6}, {4}, {}, "linear", true},
      {{1, 2, 3, 4}, {5, 3}, {}, "bilinear", false},
      {{1, 2, 4, 3}, {}, {1.5, 2.0}, "bilinear", true},
      {{1, 1, 4, 5}, {6, 3}, {}, "bicubic", false},
      {{1, 1, 3, 4}, {}, {1.4}, "bicubic", true},
      {{1, 1, 2, 3, 3}, {3, 2, 4}, {}, "trilinear", false},
      {{1, 1, 2, 2, 3}, {}, {1.5}, "trilinear", true},
      {{1, 2, 6, 5}, {3, 2}, {}, "area", std::nullopt},
  };
  for (const Case& c : cases) {
    test::gradcheck(c.mode,
                    [&](const std::vector<Tensor>& in) { return interpolate(in[0], c.size, c.scale, c.mode, c.align); },
                    {randn(c.shape, kFloat64)});
  }
  // The gradient is the transpose kernel recorded as an op whose own gradient is the resampling,
  // so it differentiates again (and again).
  test::gradgradcheck("bicubic, twice",
                      [](const std::vector<Tensor>& in) {
                        return interpolate(in[0], {5, 3}, {}, "bicubic");
                      },
                      {randn({1, 1, 3, 4}, kFloat64)});
  test::gradgradcheck("bilinear align_corners, twice",
                      [](const std::vector<Tensor>& in) {
                        return interpolate(in[0], {}, {1.5, 0.6}, "bilinear", true);
                      },
                      {randn({2, 1, 3, 5}, kFloat64)});
  test::gradgradcheck("trilinear, twice",
                      [](const std::vector<Tensor>& in) {
                        return interpolate(in[0], {3, 1, 4}, {}, "trilinear");
                      },
                      {randn({1, 2, 2, 3, 2}, kFloat64)});
  test::gradgradcheck("nearest, twice",
                      [](const std::vector<Tensor>& in) {
                        return interpolate(in[0], {7, 2});
                      },
                      {randn({1, 2, 3, 5}, kFloat64)});
  test::gradgradcheck("linear downsampled, twice",
                      [](const std::vector<Tensor>& in) { return interpolate(in[0], {}, {0.4}, "linear"); },
                      {randn({1, 2, 9}, kFloat64)});
}

TEST(Interpolate, GradFnNamesArePyTorchs) {
  const auto name_of = [](std::vector<int64_t> shape, const char* mode) {
    const Tensor x = randn(shape, kFloat64).requires_grad_();
    return interpolate(x, {}, {2.0}, mode).grad_fn_name();
  };
  EXPECT_EQ(name_of({1, 1, 3}, "nearest"), "UpsampleNearest1DBackward0");
  EXPECT_EQ(name_of({1, 1, 3, 3}, "nearest"), "UpsampleNearest2DBackward0");
  EXPECT_EQ(name_of({1, 1, 3, 3, 3}, "nearest"), "UpsampleNearest3DBackward0");
  EXPECT_EQ(name_of({1, 1, 3, 3}, "nearest-exact"), "UpsampleNearestExact2DBackward0");
  EXPECT_EQ(name_of({1, 1, 3}, "linear"), "UpsampleLinear1DBackward0");
  EXPECT_EQ(name_of({1, 1, 3, 3}, "bilinear"), "UpsampleBilinear2DBackward0");
  EXPECT_EQ(name_of({1, 1, 3, 3}, "bicubic"), "UpsampleBicubic2DBackward0");
  EXPECT_EQ(name_of({1, 1, 3, 3, 3}, "trilinear"), "UpsampleTrilinear3DBackward0");
  // Under create_graph the gradient has a node of its own, whose gradient is the resampling.
  const Tensor x = randn({1, 1, 3, 3}, kFloat64).requires_grad_();
  const Tensor y = interpolate(x, {5, 4}, {}, "bilinear");
  const Tensor gy = randn(y.sizes(), kFloat64).requires_grad_();
  const Tensor gx = autograd::grad({y}, {x}, {gy}, std::nullopt, /*create_graph=*/true)[0];
  EXPECT_EQ(gx.grad_fn_name(), "UpsampleBilinear2DBackwardBackward0");
  const Tensor v = randn(x.sizes(), kFloat64);
  const Tensor ggy = autograd::grad({gx}, {gy}, {v})[0];
  NoGradGuard no_grad;
  EXPECT_LE(worst_error(ggy, interpolate(v, {5, 4}, {}, "bilinear")), 1e-15);
}

TEST(Interpolate, LayersFollowPyTorch) {
  nn::Upsample up(std::vector<int64_t>{}, {2.0});
  EXPECT_EQ(up.name(), "Upsample");
  EXPECT_EQ(up.mode, "nearest");
  EXPECT_FALSE(up.align_corners.has_value());
  EXPECT_TRUE(up.parameters().empty());
  EXPECT_EQ(up.extra_repr(), "scale_factor=2.0, mode='nearest'");
  EXPECT_EQ(nn::Upsample({5, 7}, {}, "bilinear").extra_repr(), "size=(5, 7), mode='bilinear'");
  EXPECT_EQ(nn::Upsample(std::vector<int64_t>{}, {1.5, 2.0}).extra_repr(), "scale_factor=(1.5, 2.0), mode='nearest'");
  // A scale factor of 0 is None, as Python's `float(s) if s else None`.
  EXPECT_TRUE(nn::Upsample(std::vector<int64_t>{3}, {0.0}).scale_factor.empty());
  nn::UpsamplingBilinear2d bilinear(std::vector<int64_t>{}, {2.0});
  EXPECT_EQ(bilinear.name(), "UpsamplingBilinear2d");
  EXPECT_EQ(bilinear.mode, "bilinear");
  EXPECT_EQ(bilinear.align_corners, std::optional<bool>(true));
  EXPECT_EQ(nn::UpsamplingNearest2d(std::vector<int64_t>{4}).name(), "UpsamplingNearest2d");
  // Errors come when the layer runs.
  EXPECT_EQ(error_of([] { nn::Upsample()(zeros({1, 1, 2, 2})); }), "either size or scale_factor should be defined");
  // The functionals are the op; the deprecated ones warn with PyTorch's messages.
  const Tensor x = randn({1, 2, 3, 4}, kFloat64);
  EXPECT_TRUE(equal(F::interpolate(x, {5, 6}, {}, "bicubic"), interpolate(x, {5, 6}, {}, "bicubic")));
  ember_test::CollectWarnings warnings;
  EXPECT_TRUE(equal(F::upsample(x, {5, 6}, {}, "bilinear"), interpolate(x, {5, 6}, {}, "bilinear")));
  EXPECT_TRUE(equal(F::upsample_bilinear(x, {}, {2.0}), interpolate(x, {}, {2.0}, "bilinear", true)));
  EXPECT_TRUE(equal(F::upsample_nearest(x, {7}), interpolate(x, {7})));
  ASSERT_EQ(warnings.messages().size(), 3u);
  EXPECT_EQ(warnings.messages()[0], "`nn.functional.upsample` is deprecated. Use `nn.functional.interpolate` instead.");
  EXPECT_EQ(warnings.messages()[1],
            "`nn.functional.upsample_bilinear` is deprecated. Use `nn.functional.interpolate` instead.");
  EXPECT_EQ(warnings.messages()[2],
            "`nn.functional.upsample_nearest` is deprecated. Use `nn.functional.interpolate` instead.");
}

TEST(Interpolate, ErrorsMatchPyTorch) {
  const Tensor x3 = zeros({1, 2, 4}), x4 = zeros({1, 2, 4, 4}), x5 = zeros({1, 1, 2, 3, 4});
  EXPECT_EQ(error_of([&] {
              interpolate(x4, {3, 3}, {}, "nearest", false);
            }),
            "align_corners option can only be set with the interpolating modes: linear | bilinear | bicubic | "
            "trilinear");
  EXPECT_EQ(error_of([&] { interpolate(x4, {}, {0.5}, "area", true); }),
            "align_corners option can only be set with the interpolating modes: linear | bilinear | bicubic | "
            "trilinear");
  EXPECT_EQ(error_of([&] { interpolate(x4, {3, 3}, {2.0}); }), "only one of size or scale_factor should be defined");
  EXPECT_EQ(error_of([&] { interpolate(x4); }), "either size or scale_factor should be defined");
  EXPECT_EQ(error_of([&] {
              interpolate(x4, {3, 3, 3});
            }),
            "Input and output must have the same number of spatial dimensions, but got input with spatial dimensions "
            "of [4, 4] and output size of [3, 3, 3]. Please provide input tensor in (N, C, d1, d2, ...,dK) format "
            "and output size in (o1, o2, ...,oK) format.");
  EXPECT_EQ(error_of([&] {
              interpolate(x4, {}, {2.0, 2.0, 2.0});
            }),
            "Input and scale_factor must have the same number of spatial dimensions, but got input with spatial "
            "dimensions of [4, 4] and scale_factor of shape [2.0, 2.0, 2.0]. Please provide input tensor in (N, C, "
            "d1, d2, ...,dK) format and scale_factor in (s1, s2, ...,sK) format.");
  EXPECT_EQ(error_of([&] {
              interpolate(x4, {3, 3}, {}, "nearest", std::nullopt, true);
            }),
            "recompute_scale_factor is not meaningful with an explicit size.");
  const std::string aa =
      "Anti-alias option is restricted to bilinear, bicubic, and lanczos modes and requires a 4-D tensor as input";
  EXPECT_EQ(error_of([&] { interpolate(x3, {}, {2.0}, "linear", std::nullopt, std::nullopt, true); }), aa);
  EXPECT_EQ(error_of([&] { interpolate(x5, {}, {2.0}, "bilinear", std::nullopt, std::nullopt, true); }), aa);
  // antialias itself is not supported by ember.
  EXPECT_EQ(error_of([&] { interpolate(x4, {}, {2.0}, "bilinear", std::nullopt, std::nullopt, true); }),
            "interpolate: antialias=True (PyTorch's _upsample_bilinear2d_aa) is not supported by ember");
  EXPECT_EQ(error_of([&] { interpolate(x4, {}, {2.0}, "lanczos"); }), "Lanczos mode requires antialias=True");
  EXPECT_EQ(error_of([&] { interpolate(x4, {}, {2.0}, "lanczos", true); }),
            "Lanczos mode does not support align_corners=True");
  EXPECT_EQ(error_of([&] { interpolate(x3, {}, {2.0}, "bilinear"); }),
            "Got 3D input, but bilinear mode needs 4D input");
  EXPECT_EQ(error_of([&] { interpolate(x3, {}, {2.0}, "trilinear"); }),
            "Got 3D input, but trilinear mode needs 5D input");
  EXPECT_EQ(error_of([&] { interpolate(x4, {}, {2.0}, "linear"); }), "Got 4D input, but linear mode needs 3D input");
  EXPECT_EQ(error_of([&] { interpolate(x4, {}, {2.0}, "trilinear"); }),
            "Got 4D input, but trilinear mode needs 5D input");
  EXPECT_EQ(error_of([&] { interpolate(x5, {}, {2.0}, "linear"); }), "Got 5D input, but linear mode needs 3D input");
  EXPECT_EQ(error_of([&] { interpolate(x5, {}, {2.0}, "bilinear"); }),
            "Got 5D input, but bilinear mode needs 4D input");
  const std::string modes =
      "D) for the modes: nearest | linear | bilinear | bicubic | trilinear | lanczos | area | "
      "nearest-exact (got ";
  EXPECT_EQ(error_of([&] { interpolate(x5, {}, {2.0}, "bicubic"); }),
            "Input Error: Only 3D, 4D and 5D input Tensors supported (got 5" + modes + "bicubic)");
  EXPECT_EQ(error_of([&] { interpolate(x4, {}, {2.0}, "foo"); }),
            "Input Error: Only 3D, 4D and 5D input Tensors supported (got 4" + modes + "foo)");
  EXPECT_EQ(error_of([] {
              interpolate(zeros({2, 3}), {}, {2.0});
            }),
            "Input Error: Only 3D, 4D and 5D input Tensors supported (got 2" + modes + "nearest)");
  EXPECT_EQ(error_of([] {
              interpolate(zeros({1, 1, 1, 2, 3, 4}), {}, {2.0});
            }),
            "Input Error: Only 3D, 4D and 5D input Tensors supported (got 6" + modes + "nearest)");
  // ATen's size checks.
  EXPECT_EQ(error_of([&] {
              interpolate(x4, {0, 3}, {}, "bilinear");
            }),
            "Input and output sizes should be greater than 0, but got input (H: 4, W: 4) output (H: 0, W: 3)");
  EXPECT_EQ(error_of([&] { interpolate(x3, {0}, {}, "nearest-exact"); }),
            "Input and output sizes should be greater than 0, but got input (W: 4) and output (W: 0)");
  EXPECT_EQ(error_of([&] {
              interpolate(x5, {1, 0, 2}, {}, "trilinear");
            }),
            "Input and output sizes should be greater than 0, but got input (D: 2, H: 3, W: 4) output (D: 1, H: 0, W: "
            "2)");
  EXPECT_EQ(error_of([&] { interpolate(x4, {}, {-1.0}); }),
            "Input and output sizes should be greater than 0, but got input (H: 4, W: 4) output (H: -4, W: -4)");
  EXPECT_EQ(error_of([&] { interpolate(x4, {}, {0.1}, "bilinear", std::nullopt, true); }),
            "Input and output sizes should be greater than 0, but got input (H: 4, W: 4) output (H: 0, W: 0)");
  EXPECT_EQ(error_of([] {
              interpolate(zeros({1, 2, 0, 4}), {3}, {}, "bilinear");
            }),
            "Input and output sizes should be greater than 0, but got input (H: 0, W: 4) output (H: 3, W: 3)");
  EXPECT_EQ(error_of([] {
              interpolate(zeros({1, 0, 4}), {3}, {}, "linear");
            }),
            "Non-empty 3D data tensor expected but got a tensor with sizes [1, 0, 4]");
  EXPECT_EQ(error_of([] {
              interpolate(zeros({1, 0, 4, 4}), {3});
            }),
            "Non-empty 4D data tensor expected but got a tensor with sizes [1, 0, 4, 4]");
  EXPECT_EQ(error_of([] {
              interpolate(zeros({1, 0, 4, 4, 4}), {3}, {}, "trilinear");
            }),
            "Non-empty 5D data tensor expected but got a tensor with sizes [1, 0, 4, 4, 4]");
  EXPECT_EQ(error_of([&] { interpolate(x4, {}, {std::numeric_limits<double>::infinity()}); }),
            "value cannot be converted to type int64_t without overflow");
  EXPECT_EQ(error_of([&] { interpolate(x4, {}, {std::nan("")}); }),
            "value cannot be converted to type int64_t without overflow");
  // The kernels' dtypes: floating types, and uint8 for nearest.
  EXPECT_EQ(error_of([] {
              interpolate(zeros({1, 3, 4, 4}, kInt64), {}, {2.0});
            }),
            "\"upsample_nearest2d_channels_last\" not implemented for 'Long'");
  EXPECT_EQ(error_of([] {
              interpolate(zeros({1, 3, 4}, kInt32), {}, {2.0}, "nearest-exact");
            }),
            "\"compute_indices_weights_nearest\" not implemented for 'Int'");
  EXPECT_EQ(error_of([] {
              interpolate(zeros({1, 3, 4, 4}, kBool), {}, {2.0}, "bilinear");
            }),
            "\"upsample_bilinear2d_channels_last\" not implemented for 'Bool'");
  EXPECT_EQ(error_of([] {
              interpolate(zeros({1, 3, 4, 4}, kInt8), {}, {2.0}, "bicubic");
            }),
            "\"compute_indices_weights_cubic\" not implemented for 'Char'");
  EXPECT_EQ(error_of([] {
              interpolate(zeros({1, 3, 4}, kUInt8), {}, {2.0}, "linear");
            }),
            "\"compute_indices_weights_linear\" not implemented for 'Byte'");
  // Not supported by ember.
  EXPECT_EQ(error_of([] {
              interpolate(zeros({1, 3, 4, 4}, kUInt8), {}, {2.0}, "bilinear");
            }),
            "interpolate: mode 'bilinear' on uint8 tensors is not supported by ember (PyTorch rounds and saturates); "
            "convert the input to a floating type first");
  EXPECT_EQ(error_of([&] { interpolate(x5, {2}, {}, "area"); }),
            "interpolate: mode 'area' on a 5-D input (adaptive_avg_pool3d) is not supported by ember");
  EXPECT_EQ(error_of([] { interpolate(Tensor(), {2}); }),
            "[interpolate] the tensor is undefined (default-constructed); create it with a factory such as "
            "ember::zeros first");
  EXPECT_NE(ember_test::full_error_of([&] { interpolate(x4); }).find("\n  in interpolate(input: float32 [1, 2, 4, 4]"),
            std::string::npos);
}

/// interpolate's value and its gradient against the upstream gradient of the generator.
std::pair<Tensor, Tensor> value_and_gradient(const Tensor& x, IntList size, const std::vector<double>& scale,
                                             const char* mode) {
  Tensor leaf = x.detach().requires_grad_();
  const Tensor y = interpolate(leaf, size, scale, mode);
  return {y.detach(), autograd::grad({y}, {leaf}, {upstream(y).to(y.device())})[0]};
}

TEST(Interpolate, NonContiguousInputs) {
  manual_seed(3);
  const Tensor base = randn({2, 3, 6, 5}, kFloat64);
  const Tensor transposed = base.transpose(2, 3);                               // [2, 3, 5, 6]
  const Tensor broadcast = randn({1, 3, 1, 5}, kFloat64).expand({2, 3, 4, 5});  // stride 0
  for (const char* mode : {"nearest", "nearest-exact", "bilinear", "bicubic"}) {
    for (const Tensor& x : {transposed, broadcast}) {
      SCOPED_TRACE(mode);
      ASSERT_FALSE(x.is_contiguous());
      const auto [y, gx] = value_and_gradient(x, {7, 4}, {}, mode);
      const auto [want_y, want_gx] = value_and_gradient(x.contiguous(), {7, 4}, {}, mode);
      EXPECT_TRUE(equal(y, want_y));
      EXPECT_TRUE(equal(gx, want_gx));
    }
  }
  const Tensor volume = randn({1, 2, 4, 3, 5}, kFloat64).transpose(2, 4);
  const auto [y, gx] = value_and_gradient(volume, {}, {1.5, 0.7, 2.0}, "trilinear");
  const auto [want_y, want_gx] = value_and_gradient(volume.contiguous(), {}, {1.5, 0.7, 2.0}, "trilinear");
  EXPECT_TRUE(equal(y, want_y));
  EXPECT_TRUE(equal(gx, want_gx));
}

// The CPU kernel threads over (n, c) planes, each computed whole by one thread: the thread count
// changes nothing, and a plane's values do not depend on its neighbours.
TEST(Interpolate, PlanesAndThreads) {
  manual_seed(4);
  const Tensor x = randn({4, 8, 24, 20});  // 4 * 8 planes, well past the kernel's grain
  const int threads = get_num_threads();
  struct Case {
    std::vector<int64_t> size;
    std::vector<double> scale;
    const char* mode;
  };
  for (const Case& c : {Case{{}, {2.0}, "bilinear"}, Case{{}, {2.0}, "nearest"}, Case{{13, 41}, {}, "bicubic"},
                        Case{{7, 9}, {}, "nearest-exact"}}) {
    SCOPED_TRACE(c.mode);
    set_num_threads(1);
    const auto [y1, g1] = value_and_gradient(x, c.size, c.scale, c.mode);
    set_num_threads(2);
    const auto [y2, g2] = value_and_gradient(x, c.size, c.scale, c.mode);
    set_num_threads(threads);
    EXPECT_TRUE(equal(y1, y2));
    EXPECT_TRUE(equal(g1, g2));
    for (int64_t n : {0, 3}) {
      const Tensor plane = x.narrow(0, n, 1).narrow(1, 5, 1);
      EXPECT_TRUE(equal(interpolate(plane, c.size, c.scale, c.mode), y1.narrow(0, n, 1).narrow(1, 5, 1)));
    }
  }
}

// float16 and bfloat16 read into float, combine in float and round once: float32's values and
// gradients (accumulated in float), rounded.
TEST(Interpolate, SixteenBitFloatsRoundOnce) {
  manual_seed(6);
  struct Case {
    std::vector<int64_t> shape, size;
    std::vector<double> scale;
    const char* mode;
  };
  const std::vector<Case> cases = {
      {{2, 2, 9}, {}, {1.7}, "linear"},      {{1, 2, 5, 6}, {}, {2.0}, "bilinear"},
      {{1, 2, 5, 6}, {3, 4}, {}, "bicubic"}, {{1, 1, 3, 4, 5}, {}, {1.5, 0.5, 2.0}, "trilinear"},
      {{1, 2, 5, 6}, {}, {2.0}, "nearest"},  {{1, 1, 3, 4, 5}, {4, 2, 9}, {}, "nearest-exact"},
  };
  for (Dtype dtype : {kFloat16, kBFloat16}) {
    for (const Case& c : cases) {
      SCOPED_TRACE(std::string(c.mode) + " " + std::string(dtype_name(dtype)));
      const Tensor x = randn(c.shape).to(dtype);
      const auto [y, gx] = value_and_gradient(x, c.size, c.scale, c.mode);
      const auto [y32, gx32] = value_and_gradient(x.to(kFloat32), c.size, c.scale, c.mode);
      EXPECT_EQ(y.dtype(), dtype);
      EXPECT_EQ(gx.dtype(), dtype);
      EXPECT_TRUE(equal(y, y32.to(dtype)));
      EXPECT_TRUE(equal(gx, gx32.to(dtype)));
    }
  }
}

TEST(Interpolate, UInt8NearestCopiesValues) {
  const Tensor bytes = remainder(arange(2 * 3 * 4 * 5 * 3, kInt64), 256).reshape({2, 3, 4, 5, 3}).to(kUInt8);
  for (const char* mode : {"nearest", "nearest-exact"}) {
    SCOPED_TRACE(mode);
    for (const std::vector<int64_t>& size : {std::vector<int64_t>{7, 2, 6}, std::vector<int64_t>{1, 5, 3}}) {
      const Tensor up = interpolate(bytes, size, {}, mode);
      EXPECT_EQ(up.dtype(), kUInt8);
      EXPECT_TRUE(equal(up, interpolate(bytes.to(kFloat32), size, {}, mode).to(kUInt8)));
    }
    const Tensor row = bytes.reshape({2, 3, 60});
    EXPECT_TRUE(equal(interpolate(row, {}, {0.3}, mode), interpolate(row.to(kFloat64), {}, {0.3}, mode).to(kUInt8)));
    const Tensor image = bytes.reshape({6, 4, 5, 3}).transpose(2, 3);
    EXPECT_TRUE(
        equal(interpolate(image, {}, {2.0}, mode), interpolate(image.to(kFloat32), {}, {2.0}, mode).to(kUInt8)));
  }
}

// Random tables of 1 to 5 taps (weighted or not) straight into the CPU kernels, against
// kernels/resample_ops.h's per-element sums, which are the CUDA kernels' arithmetic: the same
// values bit for bit (the separable passes round every partial sum as the per-element form does),
// and the backward pass's sums to rounding.
template <typename C, int K>
void check_against_per_element_math(std::vector<int64_t> in, std::vector<int64_t> out, std::vector<int64_t> taps,
                                    std::vector<bool> weighted) {
  const Dtype dtype = std::is_same_v<C, double> ? kFloat64 : kFloat32;
  const int64_t planes = 3;
  std::vector<int64_t> x_sizes = {planes}, y_sizes = {planes};
  x_sizes.insert(x_sizes.end(), in.begin(), in.end());
  y_sizes.insert(y_sizes.end(), out.begin(), out.end());
  const Tensor x = randn(x_sizes, dtype);
  std::vector<Tensor> index, weight;
  kernels::ResampleGeometry<C> g;
  g.dims = K;
  for (int d = 0; d < K; ++d) {
    index.push_back(randint(0, in[d], {taps[d], out[d]}, kInt64));
    weight.push_back(weighted[d] ? randn({taps[d], out[d]}, dtype) : Tensor());
    g.axis[d] = {index[d].data_ptr<int64_t>(), weighted[d] ? weight[d].data_ptr<C>() : nullptr, taps[d], in[d], out[d]};
    g.in_plane *= in[d];
    g.out_plane *= out[d];
  }
  std::vector<TensorView> index_views, weight_views;
  for (int d = 0; d < K; ++d) {
    index_views.push_back(view_of(index[d]));
    weight_views.push_back(weighted[d] ? view_of(weight[d]) : TensorView{});
  }
  Backend& cpu = backend_for(Device("cpu"));
  const Tensor y = empty(y_sizes, dtype);
  cpu.resample(view_of(x), index_views, weight_views, view_of(y));
  const Tensor gy = randn(y_sizes, dtype);
  const Tensor gx = empty(x_sizes, dtype);
  cpu.resample_backward(view_of(gy), index_views, weight_views, view_of(gx));
  const Tensor want_gx = zeros(x_sizes, kFloat64);
  int64_t mismatches = 0;
  for (int64_t p = 0; p < planes; ++p) {
    for (int64_t e = 0; e < g.out_plane; ++e) {
      int64_t j[kernels::kMaxResampleDims] = {}, rest = e;
      for (int d = K - 1; d >= 0; --d) {
        j[d] = rest % out[d];
        rest /= out[d];
      }
      const C want = kernels::resample_combine<0, K, C, C>(g, x.data_ptr<C>() + p * g.in_plane, 0, j);
      mismatches += want == y.data_ptr<C>()[p * g.out_plane + e] ? 0 : 1;
      double* sums = want_gx.data_ptr<double>() + p * g.in_plane;
      kernels::resample_spread<0, K, C>(g, gy.data_ptr<C>()[p * g.out_plane + e], 0, j,
                                        [sums](int64_t at, C v) { sums[at] += static_cast<double>(v); });
    }
  }
  EXPECT_EQ(mismatches, 0);
  EXPECT_LE(worst_error(gx, want_gx), (std::is_same_v<C, double> ? 1e-13 : 1e-5));
}

TEST(Interpolate, KernelsMatchThePerElementMath) {
  manual_seed(8);
  check_against_per_element_math<double, 1>({7}, {11}, {3}, {true});
  check_against_per_element_math<float, 1>({9}, {4}, {1}, {false});
  check_against_per_element_math<double, 2>({5, 6}, {8, 3}, {4, 2}, {true, true});
  check_against_per_element_math<float, 2>({5, 6}, {7, 9}, {1, 5}, {false, true});
  check_against_per_element_math<double, 2>({1, 6}, {4, 1}, {2, 1}, {true, false});
  check_against_per_element_math<double, 3>({3, 4, 5}, {4, 2, 7}, {2, 3, 4}, {true, true, true});
  check_against_per_element_math<float, 3>({2, 3, 4}, {5, 4, 3}, {1, 2, 1}, {false, true, false});
  check_against_per_element_math<float, 3>({1, 1, 4}, {2, 3, 1}, {1, 1, 1}, {false, false, false});
}

TEST(Interpolate, KernelsRefuseBadTables) {
  Backend& cpu = backend_for(Device("cpu"));
  const Tensor x = zeros({1, 1, 4});
  const Tensor y = empty({1, 1, 3});
  const Tensor bad = tensor(std::vector<int64_t>{0, 4, 1}, kInt64).reshape({1, 3});
  const std::vector<TensorView> index = {view_of(bad)}, no_weight = {TensorView{}};
  EXPECT_EQ(error_of([&] { cpu.resample(view_of(x), index, no_weight, view_of(y)); }),
            "[resample] index 4 is out of bounds for a dimension of size 4");
  const Tensor two_taps = zeros({2, 3}, kInt64);
  const std::vector<TensorView> two = {view_of(two_taps)};
  EXPECT_NE(error_of([&] { cpu.resample(view_of(x), two, no_weight, view_of(y)); }).find("weight 0 must match"),
            std::string::npos);
}

class InterpolateDevice : public ember_test::DeviceTest {};

TEST_P(InterpolateDevice, EveryCaseMatchesTheCpu) {
  for (const GoldenCase& c : ember_test::golden_cases(golden().metadata)) {
    SCOPED_TRACE(c.description);
    Tensor x_cpu = at(c, "x").clone().requires_grad_();
    Tensor x_dev = at(c, "x").to(device()).requires_grad_();
    const Tensor y_cpu = run_case(c, x_cpu);
    const Tensor y_dev = run_case(c, x_dev);
    EXPECT_EQ(y_dev.device(), device());
    const double tol = x_cpu.dtype() == kFloat64 ? 1e-13 : 1e-6;
    EXPECT_CLOSE_TO_CPU(y_dev, y_cpu, tol, tol);
    const Tensor gy = upstream(y_cpu);
    const Tensor g_cpu = autograd::grad({y_cpu}, {x_cpu}, {gy})[0];
    const Tensor g_dev = autograd::grad({y_dev}, {x_dev}, {gy.to(device())})[0];
    EXPECT_EQ(g_dev.device(), device());
    EXPECT_CLOSE_TO_CPU(g_dev, g_cpu, tol, tol);
  }
  const Tensor h = randn({1, 2, 3, 4}).to(kFloat16);
  for (const char* mode : {"nearest", "nearest-exact", "bilinear", "bicubic", "area"}) {
    EXPECT_CLOSE_TO_CPU(interpolate(h.to(device()), {5, 7}, {}, mode), interpolate(h, {5, 7}, {}, mode), 1e-3, 1e-3);
  }
  // 16-bit gradients (summed in float on every device, rounded once), uint8 and a non-contiguous
  // input.
  for (const char* mode : {"nearest", "bilinear", "bicubic"}) {
    SCOPED_TRACE(mode);
    const auto [y_cpu, g_cpu] = value_and_gradient(h.to(kBFloat16), {}, {2.0}, mode);
    const auto [y_dev, g_dev] = value_and_gradient(h.to(kBFloat16).to(device()), {}, {2.0}, mode);
    EXPECT_EQ(g_dev.device(), device());
    EXPECT_CLOSE_TO_CPU(y_dev, y_cpu, 1e-2, 1e-2);
    EXPECT_CLOSE_TO_CPU(g_dev, g_cpu, 1e-2, 1e-2);
  }
  const Tensor bytes = remainder(arange(60, kInt64), 256).reshape({1, 3, 4, 5}).to(kUInt8);
  EXPECT_TRUE(equal(interpolate(bytes.to(device()), {7, 3}, {}, "nearest-exact").to(Device("cpu")),
                    interpolate(bytes, {7, 3}, {}, "nearest-exact")));
  const Tensor volume = randn({1, 2, 4, 3, 5}, kFloat64).transpose(2, 4);
  const auto [y_cpu, g_cpu] = value_and_gradient(volume, {}, {1.5, 0.7, 2.0}, "trilinear");
  const auto [y_dev, g_dev] = value_and_gradient(volume.to(device()), {}, {1.5, 0.7, 2.0}, "trilinear");
  EXPECT_CLOSE_TO_CPU(y_dev, y_cpu, 1e-13, 1e-13);
  EXPECT_CLOSE_TO_CPU(g_dev, g_cpu, 1e-13, 1e-13);
}

EMBER_INSTANTIATE_DEVICE_SUITE(InterpolateDevice);

}  // namespace
