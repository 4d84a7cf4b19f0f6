// nn::Dropout1d / Dropout2d / Dropout3d / AlphaDropout / FeatureAlphaDropout and their functional
// forms. The masks come from ember's generator, so these check what is PyTorch's: which elements
// share a mask value (one per (sample, channel) for the channel-wise forms, read through
// PyTorch's rank rules), the fraction dropped, the scaling (and alpha dropout's affine map, which
// keeps zero mean and unit variance), gradients equal to the mask times the scale, identity in
// eval() and at p = 0, zeros at p = 1, in-place forms, and PyTorch's warnings and errors.
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <string>
#include <vector>

#include "ember/ember.h"
#include "ember/nn/dropout.h"
#include "support/collect_warnings.h"
#include "support/error_of.h"

namespace {

using namespace ember;
namespace nn = ember::nn;
namespace F = ember::nn::functional;
using ember_test::CollectWarnings;
using ember_test::error_of;

constexpr double kAlpha = 1.7580993408473766;

/// Positive inputs (no element is zero, so a zero in the output means "dropped").
Tensor positive(IntList sizes, Dtype dtype = kFloat64) { return rand(sizes, dtype) + 0.5; }

/// Whether every element of `t` that shares the indices of the dimensions in `channel_dims` has
/// the same value: the mask is one value per such slice.
bool constant_over_others(const Tensor& t, const std::vector<int64_t>& channel_dims) {
  std::vector<int64_t> others;
  for (int64_t d = 0; d < t.dim(); ++d) {
    if (std::find(channel_dims.begin(), channel_dims.end(), d) == channel_dims.end()) others.push_back(d);
  }
  if (others.empty()) return true;
  return equal(t.amax(others, true).expand(t.sizes()), t) && equal(t.amin(others, true).expand(t.sizes()), t);
}

/// For a channel-wise dropout y of positive x: the mask y / x is 0 or 1 / (1 - p) everywhere,
/// constant over the dimensions not in `channel_dims`, with about p of the slices dropped; and
/// the gradient of sum(y * gy) is gy times the mask.
void check_channel_dropout(const std::string& what, const Tensor& x, const Tensor& y, double p,
                           const std::vector<int64_t>& channel_dims, double tolerance = 0.05) {
  SCOPED_TRACE(what);
  ASSERT_EQ(y.sizes().vec(), x.sizes().vec());
  const Tensor kept = (y != 0);
  // Kept values are x / (1 - p), computed as PyTorch's x * (1 / (1 - p)).
  const Tensor scale = full({}, 1.0, x.dtype()) / (1.0 - p);
  const Tensor noise = kept.to(x.dtype()) * scale;
  EXPECT_TRUE(equal(y.detach(), x.detach() * noise));
  EXPECT_TRUE(constant_over_others(noise, channel_dims));
  int64_t slices = 1;
  for (int64_t d : channel_dims) slices *= x.size(d);
  const double dropped = 1.0 - kept.to(kFloat64).sum().item<double>() / static_cast<double>(x.numel());
  EXPECT_NEAR(dropped, p, tolerance) << slices << " slices";
  if (x.requires_grad()) {
    manual_seed(99);
    const Tensor gy = randn(y.sizes(), x.dtype());
    (y * gy).sum().backward();
    EXPECT_TRUE(equal(x.grad(), gy * noise));
  }
}

// ---------------------------------------------------------------- channel-wise dropout

TEST(Dropout2d, MasksWholeChannelsAndScalesTheRest) {
  manual_seed(1);
  for (Dtype dtype : {kFloat64, kFloat32}) {
    Tensor x = positive({32, 64, 3, 4}, dtype).requires_grad_();
    check_channel_dropout("dropout2d 4-D", x, F::dropout2d(x, 0.3), 0.3, {0, 1});
  }
  nn::Dropout2d layer(0.6);
  EXPECT_EQ(layer.name(), "Dropout2d");
  EXPECT_EQ(layer.p, 0.6);
  EXPECT_FALSE(layer.inplace);
  Tensor x = positive({40, 50, 2, 2}).requires_grad_();
  check_channel_dropout("Dropout2d", x, layer(x), 0.6, {0, 1});
}

TEST(Dropout1d, BatchedAndUnbatched) {
  manual_seed(2);
  Tensor x = positive({40, 50, 6}).requires_grad_();
  check_channel_dropout("dropout1d [N, C, L]", x, F::dropout1d(x, 0.25), 0.25, {0, 1});
  Tensor single = positive({2000, 5}).requires_grad_();
  Tensor y = nn::Dropout1d(0.4)(single);
  check_channel_dropout("Dropout1d [C, L]", single, y, 0.4, {0});
  EXPECT_EQ(nn::Dropout1d().name(), "Dropout1d");
  EXPECT_EQ(nn::Dropout1d().p, 0.5);
}

TEST(Dropout3d, BatchedAndUnbatched) {
  manual_seed(3);
  Tensor x = positive({30, 60, 2, 2, 2}).requires_grad_();
  check_channel_dropout("dropout3d [N, C, D, H, W]", x, F::dropout3d(x, 0.5), 0.5, {0, 1});
  Tensor single = positive({2000, 2, 1, 3}).requires_grad_();
  check_channel_dropout("Dropout3d [C, D, H, W]", single, nn::Dropout3d(0.2)(single), 0.2, {0});
  EXPECT_EQ(nn::Dropout3d().name(), "Dropout3d");
}

TEST(Dropout2d, OtherRanksFollowPyTorchsRulesAndWarn) {
  manual_seed(4);
  const std::string deprecated_2d =
      "-D input to dropout2d, which is deprecated and will result in an error in a future release. To retain the "
      "behavior and silence this warning, please use dropout instead. Note that dropout2d exists to provide "
      "channel-wise dropout on inputs with 2 spatial dimensions, a channel dimension, and an optional batch "
      "dimension (i.e. 3D or 4D inputs).";
  {
    // 3-D: read as [N, C, L] (PyTorch's issue 77081), not as an unbatched image.
    CollectWarnings warnings;
    Tensor x = positive({40, 50, 4});
    check_channel_dropout("dropout2d 3-D", x, F::dropout2d(x, 0.5), 0.5, {0, 1});
    ASSERT_EQ(warnings.messages().size(), 1u);
    EXPECT_EQ(warnings.messages()[0],
              "dropout2d: Received a 3D input to dropout2d and assuming that channel-wise 1D dropout behavior is "
              "desired - input is interpreted as shape (N, C, L), where C is the channel dim. This behavior will "
              "change in a future release to interpret the input as one without a batch dimension, i.e. shape (C, H, "
              "W). To maintain the 1D channel-wise dropout behavior, please switch to using dropout1d instead.");
  }
  {
    // 2-D: one mask value per element of [N, C]; deprecated.
    CollectWarnings warnings;
    Tensor x = positive({100, 50});
    check_channel_dropout("dropout2d 2-D", x, F::dropout2d(x, 0.5), 0.5, {0, 1});
    ASSERT_EQ(warnings.messages().size(), 1u);
    EXPECT_EQ(warnings.messages()[0], "dropout2d: Received a 2" + deprecated_2d);
  }
  {
    // 5-D: warns, then [N, C, *] masks.
    CollectWarnings warnings;
    Tensor x = positive({30, 40, 2, 1, 2});
    check_channel_dropout("dropout2d 5-D", x, F::dropout2d(x, 0.5), 0.5, {0, 1});
    ASSERT_EQ(warnings.messages().size(), 1u);
    EXPECT_EQ(warnings.messages()[0], "dropout2d: Received a 5" + deprecated_2d);
  }
  {
    // 1-D: warns, then fails where the mask is made; not when nothing is drawn.
    CollectWarnings warnings;
    EXPECT_EQ(error_of([] { F::dropout2d(randn({3}), 0.5); }),
              "Feature dropout requires at least 2 dimensions in the input");
    EXPECT_EQ(F::dropout2d(randn({3}), 1.0).sizes().vec(), std::vector<int64_t>{3});
    EXPECT_EQ(warnings.messages().size(), 2u);
    EXPECT_EQ(warnings.messages()[0], "dropout2d: Received a 1" + deprecated_2d);
  }
}

TEST(Dropout3d, OtherRanksAreReadAsUnbatchedWithAWarning) {
  manual_seed(5);
  CollectWarnings warnings;
  Tensor x = positive({2000, 3, 2});
  check_channel_dropout("dropout3d 3-D", x, F::dropout3d(x, 0.5), 0.5, {0});
  ASSERT_EQ(warnings.messages().size(), 1u);
  EXPECT_EQ(warnings.messages()[0],
            "dropout3d: Received a 3-D input to dropout3d, which is deprecated and will result in an error in a future "
            "release. To retain the behavior and silence this warning, please use dropout instead. Note that dropout3d "
            "exists to provide channel-wise dropout on inputs with 3 spatial dimensions, a channel dimension, and an "
            "optional batch dimension (i.e. 4D or 5D inputs).");
  // A 1-D input becomes [1, n]: one mask value per element.
  Tensor v = positive({4000});
  check_channel_dropout("dropout3d 1-D", v, F::dropout3d(v, 0.5), 0.5, {0});
}

// ---------------------------------------------------------------- modes and special values

TEST(ChannelDropout, EvalZeroAndOne) {
  manual_seed(6);
  Tensor x = positive({4, 3, 2, 2}).requires_grad_();
  nn::Dropout2d layer(0.5);
  layer.eval();
  EXPECT_TRUE(layer(x).is_same(x));
  EXPECT_TRUE(F::dropout2d(x, 0.5, /*training=*/false).is_same(x));
  EXPECT_TRUE(F::dropout2d(x, 0.0).is_same(x));
  EXPECT_TRUE(F::dropout3d(x.detach().unsqueeze(0), 0.5, false).sizes().vec() == (std::vector<int64_t>{1, 4, 3, 2, 2}));
  // Unbatched, the input comes back through the leading dimension PyTorch adds: a view.
  Tensor single = positive({3, 5});
  Tensor same = F::dropout1d(single, 0.5, false);
  EXPECT_TRUE(same.is_alias_of(single));
  EXPECT_TRUE(equal(same, single));
  // Nothing to drop in an empty tensor.
  Tensor empty_input = zeros({0, 3, 2});
  EXPECT_TRUE(F::dropout1d(empty_input, 0.5).is_same(empty_input));
  // p = 1: zeros, and zero gradients.
  Tensor y = F::dropout2d(x, 1.0);
  EXPECT_TRUE(equal(y.detach(), zeros_like(x)));
  y.sum().backward();
  EXPECT_TRUE(equal(x.grad(), zeros_like(x)));
  // Training again after eval().
  layer.train();
  EXPECT_FALSE(layer(x).is_same(x));
}

TEST(ChannelDropout, InPlace) {
  manual_seed(7);
  Tensor x = positive({20, 30, 4});
  const Tensor original = x.clone();
  Tensor y = F::dropout1d(x, 0.5, true, /*inplace=*/true);
  EXPECT_TRUE(y.is_same(x));
  check_channel_dropout("dropout1d in place", original, x, 0.5, {0, 1}, 0.1);
  // Unbatched in place: the same tensor, its shape unchanged.
  Tensor single = positive({400, 3});
  const Tensor single_original = single.clone();
  Tensor z = nn::Dropout1d(0.5, /*inplace=*/true)(single);
  EXPECT_TRUE(z.is_same(single));
  EXPECT_EQ(single.sizes().vec(), (std::vector<int64_t>{400, 3}));
  check_channel_dropout("Dropout1d unbatched in place", single_original, single, 0.5, {0}, 0.1);
  Tensor image = positive({4, 30, 2, 2, 2});
  const Tensor image_original = image.clone();
  EXPECT_TRUE(F::dropout3d(image, 0.5, true, true).is_same(image));
  check_channel_dropout("dropout3d in place", image_original, image, 0.5, {0, 1}, 0.15);
  // Gradients flow through an in-place dropout of a non-leaf.
  Tensor leaf = positive({10, 40, 3}).requires_grad_();
  Tensor t = leaf * 1.0;
  F::dropout1d(t, 0.5, true, true);
  const Tensor mask = (t.detach() != 0).to(kFloat64) * 2.0;
  t.sum().backward();
  EXPECT_TRUE(equal(leaf.grad(), mask));
}

// ---------------------------------------------------------------- alpha dropout

/// y of alpha dropout of x: kept elements are a x + alpha a p, dropped ones -alpha a (1 - p), with one mask value per
/// slice of `channel_dims`, about p of them dropped, and the gradient a on the kept elements.
void check_alpha(const std::string& what, const Tensor& x, const Tensor& y, double p,
                 const std::vector<int64_t>& channel_dims, double tolerance = 0.03) {
  SCOPED_TRACE(what);
  const double a = 1.0 / std::sqrt((kAlpha * kAlpha * p + 1.0) * (1.0 - p));
  const Tensor dropped_value = (zeros({}, x.dtype()) - 1.0) * (kAlpha * a) + kAlpha * a * p;
  const Tensor kept_values = x.detach() * a + kAlpha * a * p;
  // Near, not equal: the library may round a (or fuse its products) differently from this test.
  const Tensor dropped = logical_and(abs(y.detach() - dropped_value) < 1e-5, abs(kept_values - dropped_value) > 1e-5);
  const Tensor kept = logical_not(dropped);
  EXPECT_TRUE(allclose(y.detach(), where(kept, kept_values, dropped_value), 1e-6, 1e-6));
  EXPECT_TRUE(constant_over_others(kept.to(kFloat64), channel_dims));
  const double fraction = dropped.to(kFloat64).mean().item<double>();
  EXPECT_NEAR(fraction, p, tolerance);
  if (x.requires_grad()) {
    manual_seed(98);
    const Tensor gy = randn(y.sizes(), x.dtype());
    (y * gy).sum().backward();
    EXPECT_TRUE(allclose(x.grad(), gy * (kept.to(x.dtype()) * a), 1e-6, 0));
  }
}

TEST(AlphaDropout, KeepsZeroMeanAndUnitVariance) {
  manual_seed(8);
  Tensor x = randn({400, 500}, kFloat64);
  for (double p : {0.2, 0.5}) {
    Tensor y = F::alpha_dropout(x, p, /*training=*/true);
    EXPECT_NEAR(y.mean().item<double>(), 0.0, 0.02) << p;
    EXPECT_NEAR(y.var().item<double>(), 1.0, 0.02) << p;
  }
  Tensor leaf = randn({100, 80}, kFloat64).requires_grad_();
  check_alpha("alpha_dropout", leaf, F::alpha_dropout(leaf, 0.3, true), 0.3, {0, 1});
  Tensor small = randn({100, 80}, kFloat32).requires_grad_();
  nn::AlphaDropout layer(0.4);
  EXPECT_EQ(layer.name(), "AlphaDropout");
  check_alpha("AlphaDropout float32", small, layer(small), 0.4, {0, 1});
}

TEST(FeatureAlphaDropout, OneMaskValuePerChannel) {
  manual_seed(9);
  Tensor x = randn({50, 60, 3, 2}, kFloat64).requires_grad_();
  check_alpha("feature_alpha_dropout", x, F::feature_alpha_dropout(x, 0.35, true), 0.35, {0, 1});
  Tensor y = randn({40, 50, 4}, kFloat64);
  nn::FeatureAlphaDropout layer(0.5);
  EXPECT_EQ(layer.name(), "FeatureAlphaDropout");
  check_alpha("FeatureAlphaDropout", y, layer(y), 0.5, {0, 1}, 0.04);
  EXPECT_EQ(error_of([] { F::feature_alpha_dropout(randn({3}), 0.5, true); }),
            "Feature dropout requires at least 2 dimensions in the input");
}

TEST(AlphaDropout, DefaultsModesAndSpecialValues) {
  Tensor x = randn({4, 5});
  // PyTorch's functional default is training = false.
  EXPECT_TRUE(F::alpha_dropout(x).is_same(x));
  EXPECT_TRUE(F::feature_alpha_dropout(x).is_same(x));
  EXPECT_TRUE(F::alpha_dropout(x, 0.0, true).is_same(x));
  EXPECT_TRUE(equal(F::alpha_dropout(x, 1.0, true), zeros({4, 5})));
  EXPECT_TRUE(equal(F::feature_alpha_dropout(x, 1.0, true), zeros({4, 5})));
  nn::AlphaDropout layer;
  EXPECT_EQ(layer.p, 0.5);
  layer.eval();
  EXPECT_TRUE(layer(x).is_same(x));
  // The layers never work in place, whatever `inplace` says (as PyTorch's forward).
  Tensor y = randn({6, 7});
  const Tensor original = y.clone();
  nn::AlphaDropout in_place(0.5, /*inplace=*/true);
  EXPECT_TRUE(in_place.inplace);
  Tensor out = in_place(y);
  EXPECT_FALSE(out.is_same(y));
  EXPECT_TRUE(equal(y, original));
  nn::FeatureAlphaDropout feature_in_place(0.5, true);
  feature_in_place(y);
  EXPECT_TRUE(equal(y, original));
  // The functional in-place form does write into its input.
  manual_seed(10);
  Tensor z = randn({50, 40}, kFloat64);
  const Tensor z_original = z.clone();
  EXPECT_TRUE(F::alpha_dropout(z, 0.3, true, /*inplace=*/true).is_same(z));
  check_alpha("alpha_dropout in place", z_original, z, 0.3, {0, 1});
}

// ---------------------------------------------------------------- errors

TEST(Dropout, ErrorsArePyTorchs) {
  const std::string range = "dropout probability has to be between 0 and 1, but got ";
  EXPECT_EQ(error_of([] { F::dropout1d(randn({3, 4}), 1.5); }), range + "1.5");
  EXPECT_EQ(error_of([] { F::dropout2d(randn({3, 4, 5}), -0.5); }), range + "-0.5");
  EXPECT_EQ(error_of([] { F::dropout3d(randn({3, 4, 5, 6}), 2.0); }), range + "2.0");
  EXPECT_EQ(error_of([] { F::alpha_dropout(randn({3, 4}), 2.0); }), range + "2.0");
  EXPECT_EQ(error_of([] { F::feature_alpha_dropout(randn({3, 4}), -1.0); }), range + "-1.0");
  EXPECT_EQ(error_of([] { nn::Dropout2d(1.25); }), range + "1.25");
  EXPECT_EQ(error_of([] { nn::AlphaDropout(2.0); }), range + "2.0");
  EXPECT_EQ(error_of([] { nn::FeatureAlphaDropout(-0.1); }), range + "-0.1");
  EXPECT_EQ(error_of([] { F::dropout1d(randn({3})); }),
            "dropout1d: Expected 2D or 3D input, but received a 1D input. Note that dropout1d exists to provide "
            "channel-wise dropout on inputs with 1 spatial dimension, a channel dimension, and an optional batch "
            "dimension (i.e. 2D or 3D inputs).");
  EXPECT_EQ(error_of([] {
              nn::Dropout1d()(randn({2, 3, 4, 5}));
            }),
            "dropout1d: Expected 2D or 3D input, but received a 4D input. Note that dropout1d exists to provide "
            "channel-wise dropout on inputs with 1 spatial dimension, a channel dimension, and an optional batch "
            "dimension (i.e. 2D or 3D inputs).");
  // Integer inputs: PyTorch's mask has their dtype and cannot hold the scaled values.
  EXPECT_EQ(error_of([] {
              F::dropout1d(arange(12).reshape({3, 4}), 0.5);
            }),
            "result type Float can't be cast to the desired output type Long");
  EXPECT_EQ(error_of([] {
              F::alpha_dropout(arange(12, kInt32).reshape({3, 4}), 0.5, true);
            }),
            "result type Float can't be cast to the desired output type Int");
  // ... but nothing is drawn when not training.
  EXPECT_EQ(F::dropout1d(arange(12).reshape({3, 4}), 0.5, false).dtype(), kInt64);
}

}  // namespace
