// 2-D pooling against PyTorch: forward values, indices and input gradients from
// tests/nn/golden/pool_golden.safetensors (tools/gen_pool_bn_golden.py), float64 gradchecks,
// PyTorch's error messages and the layers.
#include <gtest/gtest.h>

#include <cmath>
#include <functional>
#include <limits>
#include <string>

#include "ember/ember.h"
#include "ember/io/safetensors.h"
#include "ember/nn/pooling.h"
#include "support/error_of.h"
#include "support/gradcheck.h"

namespace {

using namespace ember;
namespace nn = ember::nn;
namespace F = ember::nn::functional;
using ember_test::error_of;

const io::SafetensorsData& golden() {
  static const io::SafetensorsData data =
      io::load_safetensors(EMBER_SOURCE_DIR "/tests/nn/golden/pool_golden.safetensors");
  return data;
}

using PoolFn = std::function<Tensor(const Tensor&)>;

// Runs `fn` on the case's input; checks the output (NaNs must match) and d sum(out * w) / dx.
void check_case(const std::string& name, const PoolFn& fn, double tol = 1e-12) {
  SCOPED_TRACE(name);
  const Tensor x = golden().at(name + ".x").clone().requires_grad_();
  const Tensor out = fn(x);
  const Tensor expected = golden().at(name + ".out");
  ASSERT_EQ(out.sizes().vec(), expected.sizes().vec());
  EXPECT_TRUE(allclose(out, expected, tol, tol, /*equal_nan=*/true)) << out << "\n" << expected;
  (out * golden().at(name + ".w")).sum().backward();
  EXPECT_TRUE(allclose(x.grad(), golden().at(name + ".gx"), tol, tol)) << x.grad() << "\n" << golden().at(name + ".gx");
}

// As check_case, for max pooling, also comparing the indices.
void check_max_case(const std::string& name, IntList k, IntList s, IntList p, IntList d, bool ceil) {
  check_case(name, [&](const Tensor& x) { return F::max_pool2d(x, k, s, p, d, ceil); });
  const Tensor x = golden().at(name + ".x");
  auto [out, indices] = F::max_pool2d_with_indices(x, k, s, p, d, ceil);
  EXPECT_EQ(indices.dtype(), kInt64);
  EXPECT_TRUE(equal(indices, golden().at(name + ".indices"))) << name << "\n" << indices;
}

TEST(PoolMax, MatchesPyTorch) {
  check_max_case("max_k3s2p1", {3}, {2}, {1}, {1}, false);
  check_max_case("max_rect_dil", {3, 2}, {2, 1}, {1, 0}, {2, 1}, false);
  check_max_case("max_ceil", {2}, {2}, {0}, {1}, true);
  check_max_case("max_ceil_pad_dil", {3}, {2}, {1}, {2}, true);
  check_max_case("max_nan", {2}, {1}, {0}, {1}, false);
  check_max_case("max_ties", {3}, {1}, {1}, {1}, false);
  check_max_case("max_unbatched", {2}, {}, {0}, {1}, false);
}

TEST(PoolAvg, MatchesPyTorch) {
  check_case("avg_k3s2p1", [](const Tensor& x) { return F::avg_pool2d(x, {3}, {2}, {1}); });
  check_case("avg_nopad", [](const Tensor& x) { return F::avg_pool2d(x, {3}, {2}, {1}, false, false); });
  check_case("avg_ceil", [](const Tensor& x) { return F::avg_pool2d(x, {3, 2}, {2, 3}, {1, 1}, true); });
  check_case("avg_ceil_nopad", [](const Tensor& x) { return F::avg_pool2d(x, {3, 2}, {2, 3}, {1, 1}, true, false); });
  check_case("avg_divisor", [](const Tensor& x) { return F::avg_pool2d(x, {2}, {1}, {1}, false, true, 5); });
  check_case("avg_unbatched", [](const Tensor& x) { return F::avg_pool2d(x, {2}, {3}); });
}

TEST(PoolAdaptiveAvg, MatchesPyTorch) {
  check_case("adaptive_3x4", [](const Tensor& x) { return F::adaptive_avg_pool2d(x, {3, 4}); });
  check_case("adaptive_1x1", [](const Tensor& x) { return F::adaptive_avg_pool2d(x, {1}); });
  check_case("adaptive_up", [](const Tensor& x) { return F::adaptive_avg_pool2d(x, {9, 8}); });
  check_case("adaptive_unbatched", [](const Tensor& x) { return F::adaptive_avg_pool2d(x, {2, 3}); });
}

// float32 and the 16-bit types (computed in float) against the float64 goldens.
TEST(PoolDtypes, LowerPrecisionMatchesGolden) {
  const Tensor x = golden().at("avg_ceil_nopad.x");
  const Tensor want_avg = golden().at("avg_ceil_nopad.out");
  const Tensor want_max = golden().at("max_rect_dil.out");
  const Tensor want_ad = golden().at("adaptive_3x4.out");
  struct Case {
    Dtype dtype;
    double tol;
  };
  for (Case c : {Case{kFloat32, 1e-5}, Case{kFloat16, 1e-2}, Case{kBFloat16, 5e-2}}) {
    SCOPED_TRACE(dtype_name(c.dtype));
    const Tensor xl = x.to(c.dtype).requires_grad_();
    Tensor avg = F::avg_pool2d(xl, {3, 2}, {2, 3}, {1, 1}, true, false);
    EXPECT_EQ(avg.dtype(), c.dtype);
    EXPECT_TRUE(allclose(avg.to(kFloat64), want_avg, c.tol, c.tol));
    Tensor mx = F::max_pool2d(x.to(c.dtype), {3, 2}, {2, 1}, {1, 0}, {2, 1});
    EXPECT_TRUE(allclose(mx.to(kFloat64), want_max, c.tol, c.tol));
    Tensor ad = F::adaptive_avg_pool2d(x.to(c.dtype), {3, 4});
    EXPECT_TRUE(allclose(ad.to(kFloat64), want_ad, c.tol, c.tol));
    (avg.to(kFloat64) * golden().at("avg_ceil_nopad.w")).sum().backward();
    EXPECT_EQ(xl.grad().dtype(), c.dtype);
    EXPECT_TRUE(allclose(xl.grad().to(kFloat64), golden().at("avg_ceil_nopad.gx"), c.tol, c.tol));
  }
}

TEST(PoolGradcheck, EveryOpFloat64) {
  manual_seed(3);
  const Tensor x = randn({2, 2, 6, 5}, kFloat64);
  auto one = [](std::function<Tensor(const Tensor&)> f) {
    return [f](const std::vector<Tensor>& in) { return f(in[0]); };
  };
  test::gradcheck("max_pool2d", one([](const Tensor& t) { return F::max_pool2d(t, {3}, {2}, {1}, {1}, true); }), {x});
  test::gradcheck("max_pool2d dilated", one([](const Tensor& t) {
                    return F::max_pool2d(t, {2, 3}, {1, 2}, {1, 1}, {2, 1});
                  }),
                  {x});
  test::gradcheck("avg_pool2d", one([](const Tensor& t) { return F::avg_pool2d(t, {3}, {2}, {1}, true, true); }), {x});
  test::gradcheck("avg_pool2d no pad", one([](const Tensor& t) {
                    return F::avg_pool2d(t, {3, 2}, {2, 1}, {1, 1}, true, false);
                  }),
                  {x});
  test::gradcheck("avg_pool2d divisor",
                  one([](const Tensor& t) { return F::avg_pool2d(t, {2}, {1}, {0}, false, true, 3); }), {x});
  test::gradcheck("adaptive_avg_pool2d", one([](const Tensor& t) { return F::adaptive_avg_pool2d(t, {4, 3}); }), {x});
  test::gradcheck("adaptive_avg_pool2d unbatched", one([](const Tensor& t) {
                    return F::adaptive_avg_pool2d(t, {7, 2});
                  }),
                  {x[0]});
}

TEST(PoolSemantics, GradFnNamesAndShapes) {
  const Tensor x = randn({1, 2, 4, 4}).requires_grad_();
  EXPECT_EQ(F::max_pool2d(x, {2}).grad_fn_name(), "MaxPool2DWithIndicesBackward0");
  EXPECT_EQ(std::get<0>(F::max_pool2d_with_indices(x, {2})).grad_fn_name(), "MaxPool2DWithIndicesBackward0");
  EXPECT_EQ(F::avg_pool2d(x, {2}).grad_fn_name(), "AvgPool2DBackward0");
  EXPECT_EQ(F::adaptive_avg_pool2d(x, {2}).grad_fn_name(), "AdaptiveAvgPool2DBackward0");
  EXPECT_FALSE(std::get<1>(F::max_pool2d_with_indices(x, {2})).requires_grad());
  {
    NoGradGuard no_grad;
    EXPECT_FALSE(F::max_pool2d(x, {2}).requires_grad());
  }
  // An empty batch gives an empty result; an output size of 0 is allowed for adaptive pooling.
  EXPECT_EQ(F::max_pool2d(zeros({0, 3, 4, 4}), {2}).sizes().vec(), (std::vector<int64_t>{0, 3, 2, 2}));
  EXPECT_EQ(F::adaptive_avg_pool2d(zeros({1, 3, 4, 4}), {0, 2}).sizes().vec(), (std::vector<int64_t>{1, 3, 0, 2}));
  // Non-contiguous input (a transposed view) pools the values it shows.
  const Tensor base = randn({1, 2, 5, 4});
  const Tensor tr = base.transpose(2, 3);
  EXPECT_TRUE(equal(F::max_pool2d(tr, {2}), F::max_pool2d(tr.contiguous(), {2})));
  // A window over padding only: -inf for max (never chosen when any real value is there).
  const Tensor ninf = full({1, 1, 2, 2}, -std::numeric_limits<double>::infinity(), kFloat64);
  auto [m, idx] = F::max_pool2d_with_indices(ninf, {2}, {1}, {1});
  EXPECT_TRUE(std::isinf(m.max().item<double>()));
  EXPECT_EQ(idx.min().item<int64_t>(), 0);
}

// A large input is split over threads by planes; each plane pooled alone (too small to split)
// must give the same numbers, forward and backward.
TEST(PoolSemantics, ParallelPlanesMatchSerial) {
  manual_seed(11);
  const Tensor x = randn({2, 96, 33, 31}).requires_grad_();
  const Tensor w = randn({2, 96, 17, 16});
  const Tensor out = F::max_pool2d(x, {3}, {2}, {1}, {1}, true);
  (out * w).sum().backward();
  const Tensor avg = F::avg_pool2d(x.detach(), {3}, {2}, {1}, true, false);
  for (int64_t n = 0; n < 2; ++n) {
    for (int64_t c = 0; c < 96; c += 7) {
      const Tensor plane = x.detach()[n][c].unsqueeze(0).clone().requires_grad_();
      const Tensor one = F::max_pool2d(plane, {3}, {2}, {1}, {1}, true);
      (one * w[n][c].unsqueeze(0)).sum().backward();
      EXPECT_TRUE(equal(one[0], out.detach()[n][c]));
      EXPECT_TRUE(equal(plane.grad()[0], x.grad()[n][c]));
      EXPECT_TRUE(equal(F::avg_pool2d(plane.detach(), {3}, {2}, {1}, true, false)[0], avg[n][c]));
    }
  }
}

// Kernel 2, stride 2 without padding has its own vectorised loop on the CPU. It must follow the
// general rule exactly: taps in row-major order, the first strict maximum wins a tie, a NaN wins
// and a later NaN replaces an earlier one, an all -inf window reports its first tap, and the
// last row and column of an odd-sized input are dropped. Checked against that rule written out
// here, for each floating dtype, with and without indices (a no-grad forward skips them).
TEST(PoolMax, Plain2x2WindowsFollowTheTapRule) {
  const double nan = std::numeric_limits<double>::quiet_NaN(), inf = std::numeric_limits<double>::infinity();
  manual_seed(5);
  // 2 x 3 planes of 7 x 41: a row of 20 windows spans a 16-wide vector and a remainder.
  Tensor x = randint(-3, 4, {2, 3, 7, 41}, TensorOptions().dtype(kFloat64));  // many ties
  double* v = x.data_ptr<double>();
  const int64_t plane = 7 * 41;
  for (int64_t i = 0; i < x.numel(); i += 13) v[i] = nan;
  for (int64_t i = 5; i < x.numel(); i += 17) v[i] = nan;
  for (int64_t p = 0; p < 6; ++p) {  // an all -inf window, and one with -inf then a NaN
    v[p * plane + 0] = v[p * plane + 1] = v[p * plane + 41] = v[p * plane + 42] = -inf;
    v[p * plane + 2] = -inf;
    v[p * plane + 44] = nan;
  }
  for (const Dtype dtype : {kFloat32, kFloat64, kBFloat16, kFloat16}) {
    SCOPED_TRACE(dtype_name(dtype));
    const Tensor input = x.to(dtype);
    auto [out, indices] = F::max_pool2d_with_indices(input, {2});
    ASSERT_EQ(out.sizes().vec(), (std::vector<int64_t>{2, 3, 3, 20}));
    const Tensor values = out.to(kFloat64).contiguous();
    const Tensor rounded = input.to(kFloat64).contiguous();  // what the pooling saw
    const double* in = rounded.data_ptr<double>();
    for (int64_t p = 0; p < 6; ++p) {
      for (int64_t oh = 0; oh < 3; ++oh) {
        for (int64_t ow = 0; ow < 20; ++ow) {
          int64_t best_at = 2 * oh * 41 + 2 * ow;
          double best = -inf;
          for (int64_t ih = 2 * oh; ih < 2 * oh + 2; ++ih) {
            for (int64_t iw = 2 * ow; iw < 2 * ow + 2; ++iw) {
              const double t = in[p * plane + ih * 41 + iw];
              if (t > best || std::isnan(t)) {
                best = t;
                best_at = ih * 41 + iw;
              }
            }
          }
          const int64_t o = p * 60 + oh * 20 + ow;
          ASSERT_EQ(indices.data_ptr<int64_t>()[o], best_at) << "plane " << p << " window " << oh << "," << ow;
          const double got = values.data_ptr<double>()[o];
          EXPECT_TRUE(std::isnan(best) ? std::isnan(got) : got == best) << got << " vs " << best;
        }
      }
    }
    NoGradGuard no_grad;
    EXPECT_TRUE(allclose(F::max_pool2d(input, {2}), out, 0, 0, /*equal_nan=*/true));
  }
}

TEST(PoolErrors, PyTorchMessages) {
  const Tensor x = randn({1, 3, 4, 4});
  EXPECT_EQ(error_of([&] { F::max_pool2d(x, {3}, {}, {2}); }),
            "pad should be at most half of effective kernel size, but got pad=2, kernel_size=3 and dilation=1");
  EXPECT_EQ(error_of([&] { F::max_pool2d(x, {3}, {}, {-1}); }), "pad must be non-negative, but got pad: -1");
  EXPECT_EQ(error_of([&] { F::max_pool2d(x, {0}); }), "stride should not be zero");
  EXPECT_EQ(error_of([&] { F::max_pool2d(x, {2}, {0}); }), "stride should not be zero");
  EXPECT_EQ(error_of([&] { F::max_pool2d(x, {2}, {}, {0}, {0}); }),
            "dilation should be greater than zero, but got dilationH: 0 dilationW: 0");
  EXPECT_EQ(error_of([&] {
              F::max_pool2d(x, {2, 2, 2});
            }),
            "max_pool2d: kernel_size must either be a single int, or a tuple of two ints");
  EXPECT_EQ(error_of([&] {
              F::max_pool2d(x, {2}, {1, 1, 1});
            }),
            "max_pool2d: stride must either be omitted, a single int, or a tuple of two ints");
  EXPECT_EQ(error_of([&] {
              F::max_pool2d(x, {2}, {}, {1, 1, 1});
            }),
            "max_pool2d: padding must either be a single int, or a tuple of two ints");
  EXPECT_EQ(error_of([&] {
              F::max_pool2d(x, {2}, {}, {0}, {1, 1, 1});
            }),
            "max_pool2d: dilation must be either a single int, or a tuple of two ints");
  EXPECT_EQ(error_of([&] { F::max_pool2d(x, {5}); }),
            "Given input size: (3x4x4). Calculated output size: (3x0x0). Output size is too small");
  EXPECT_EQ(error_of([&] { F::max_pool2d(x, {3}, {}, {0}, {2}); }),
            "Given input size: (3x4x4). Calculated output size: (3x0x0). Output size is too small");
  EXPECT_EQ(error_of([&] { F::max_pool2d(x[0][0], {2}); }),
            "non-empty 3D or 4D (batch mode) tensor expected for input");
  EXPECT_EQ(error_of([&] {
              F::max_pool2d(zeros({2, 0, 4, 4}), {2});
            }),
            "Expected 3D or 4D (batch mode) tensor with optional 0 dim batch size for input, but got:[2, 0, 4, 4]");
  EXPECT_EQ(error_of([&] { F::max_pool2d(x.to(kInt64), {2}); }), "\"max_pool2d\" not implemented for 'Long'");

  EXPECT_EQ(error_of([&] { F::avg_pool2d(x, {3}, {}, {2}); }),
            "pad should be at most half of effective kernel size, but got pad=2, kernel_size=3 and dilation=1");
  EXPECT_EQ(error_of([&] { F::avg_pool2d(x, {5}); }),
            "Given input size: (3x4x4). Calculated output size: (3x0x0). Output size is too small");
  EXPECT_EQ(error_of([&] { F::avg_pool2d(x, {2}, {}, {0}, false, true, 0); }), "divisor must be not zero");
  EXPECT_EQ(error_of([&] { F::avg_pool2d(x, {2}, {0}); }), "stride should not be zero");
  EXPECT_EQ(error_of([&] {
              F::avg_pool2d(x, {2, 2, 2});
            }),
            "avg_pool2d: kernel_size must either be a single int, or a tuple of two ints");
  EXPECT_EQ(error_of([&] { F::avg_pool2d(x[0][0], {2}); }),
            "Dimension out of range (expected to be in range of [-2, 1], but got -3)");
  EXPECT_EQ(error_of([&] {
              F::avg_pool2d(zeros({3, 0, 4}), {2});
            }),
            "Expected 3D or 4D (batch mode) tensor with optional 0 dim batch size for input, but got:[3, 0, 4]");

  EXPECT_EQ(error_of([&] { F::adaptive_avg_pool2d(x, {2, 2, 2}); }), "adaptive_avg_pool2d: output_size must be 2");
  EXPECT_EQ(error_of([&] { F::adaptive_avg_pool2d(x[0][0], {2}); }),
            "adaptive_avg_pool2d(): Expected 3D or 4D tensor, but got [4, 4]");
  EXPECT_EQ(error_of([&] {
              F::adaptive_avg_pool2d(x, {-1, 2});
            }),
            "adaptive_avg_pool2d: elements of output_size must be greater than or equal to 0 but received {-1, 2}");
  EXPECT_EQ(error_of([&] {
              F::adaptive_avg_pool2d(zeros({3, 0, 4}), {2});
            }),
            "adaptive_avg_pool2d(): Expected input to have non-zero size for non-batch dimensions, but input has "
            "sizes [3, 0, 4] with dimension 1 being empty");
  EXPECT_EQ(error_of([&] { F::adaptive_avg_pool2d(x.to(kInt64), {2}); }),
            "\"adaptive_avg_pool2d\" not implemented for 'Long'");
}

TEST(PoolLayers, ModulesCallFunctional) {
  const Tensor x = golden().at("max_k3s2p1.x");
  nn::MaxPool2d max_layer({3}, {2}, {1});
  EXPECT_EQ(max_layer.name(), "MaxPool2d");
  EXPECT_TRUE(allclose(max_layer(x), golden().at("max_k3s2p1.out")));
  nn::AvgPool2d avg_layer({3, 2}, {2, 3}, {1, 1}, true, false);
  EXPECT_EQ(avg_layer.name(), "AvgPool2d");
  EXPECT_TRUE(allclose(avg_layer(x), golden().at("avg_ceil_nopad.out")));
  nn::AdaptiveAvgPool2d ad_layer({3, 4});
  EXPECT_EQ(ad_layer.name(), "AdaptiveAvgPool2d");
  EXPECT_TRUE(allclose(ad_layer(x), golden().at("adaptive_3x4.out")));
  EXPECT_TRUE(max_layer.parameters().empty());
  EXPECT_TRUE(avg_layer.state_dict().empty());
  // stride omitted means stride = kernel_size.
  EXPECT_TRUE(equal(nn::MaxPool2d({2})(x), F::max_pool2d(x, {2}, {2})));
}

}  // namespace
