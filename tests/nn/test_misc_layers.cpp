// LPPool1d/2d, Bilinear, Unfold/Fold, EmbeddingBag, NLLLoss2d and AdaptiveMaxPool1d/2d with their
// functionals (include/ember/nn/{lppool,bilinear,fold,embedding_bag,nll_loss2d,adaptive_max_pool}.h):
// values and gradients against PyTorch's (tools/gen_misc_layers_golden.py), finite differences,
// the modules' parameters and initialisation, PyTorch's errors, and every case on every usable
// accelerator (and the stand-in device) against the CPU.
#include <gtest/gtest.h>

#include <cmath>
#include <limits>
#include <memory>
#include <string>
#include <utility>
#include <vector>

#include "ember/ember.h"
#include "ember/io/safetensors.h"
#include "ember/nn/adaptive_max_pool.h"
#include "ember/nn/bilinear.h"
#include "ember/nn/embedding_bag.h"
#include "ember/nn/fold.h"
#include "ember/nn/lppool.h"
#include "ember/nn/nll_loss2d.h"
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
      io::load_safetensors(EMBER_SOURCE_DIR "/tests/nn/golden/misc_layers_golden.safetensors");
  return data;
}

std::vector<GoldenCase> all_cases() { return ember_test::golden_cases(golden().metadata); }

const Tensor& at(const GoldenCase& c, const std::string& name) { return golden().at(c.prefix + name); }
bool has(const GoldenCase& c, const std::string& name) { return golden().contains(c.prefix + name); }

/// "2:3" -> {2, 3}; "-" (None) -> {}.
std::vector<int64_t> list(const GoldenCase& c, const std::string& key) {
  std::vector<int64_t> out;
  const std::string& text = c.options.at(key);
  if (text == "-") return out;
  size_t start = 0;
  while (start <= text.size()) {
    const size_t end = text.find(':', start);
    out.push_back(std::stoll(text.substr(start, end - start)));
    if (end == std::string::npos) break;
    start = end + 1;
  }
  return out;
}

std::optional<double> maybe_real(const GoldenCase& c, const std::string& key) {
  const std::string& text = c.options.at(key);
  if (text == "-") return std::nullopt;
  return std::stod(text);
}

nn::Reduction reduction_of(const std::string& name) {
  return name == "none" ? nn::Reduction::None : name == "sum" ? nn::Reduction::Sum : nn::Reduction::Mean;
}

/// A leaf on `device` holding the golden tensor `name`.
Tensor leaf(const GoldenCase& c, const std::string& name, const Device& device) {
  return at(c, name).to(device).clone().requires_grad_();
}

using Named = std::vector<std::pair<std::string, Tensor>>;

/// Runs a golden case on `device` and returns its results under the golden's names (all on the CPU).
Named run_case(const GoldenCase& c, const Device& device) {
  Named out;
  auto grads_of = [&](const Tensor& y, const std::vector<Tensor>& inputs, const std::vector<std::string>& names) {
    out.emplace_back("y", y.detach().cpu());
    const Tensor gy = at(c, "gy").to(device);
    if (y.numel() == 0 || !y.requires_grad()) {
      for (size_t k = 0; k < inputs.size(); ++k) out.emplace_back(names[k], zeros_like(inputs[k]).cpu());
      return;
    }
    const std::vector<Tensor> gs = autograd::grad({y}, inputs, {gy}, std::nullopt, false, /*allow_unused=*/true);
    for (size_t k = 0; k < inputs.size(); ++k) {
      out.emplace_back(names[k], gs[k].defined() ? gs[k].cpu() : zeros_like(inputs[k]).cpu());
    }
  };
  if (c.kind == "lp_pool1d" || c.kind == "lp_pool2d") {
    Tensor x = leaf(c, "x", device);
    const double norm = c.options.at("norm") == "inf" ? std::numeric_limits<double>::infinity() : c.real("norm");
    const std::vector<int64_t> kernel = list(c, "kernel"), stride = list(c, "stride");
    Tensor y;
    if (c.kind == "lp_pool1d") {
      y = nn::LPPool1d(norm, kernel, stride, c.flag("ceil"))(x);
      EXPECT_TRUE(equal(y, F::lp_pool1d(x, norm, kernel, stride, c.flag("ceil"))));
    } else {
      y = nn::LPPool2d(norm, kernel, stride, c.flag("ceil"))(x);
      EXPECT_TRUE(equal(y, F::lp_pool2d(x, norm, kernel, stride, c.flag("ceil"))));
    }
    grads_of(y, {x}, {"gx"});
  } else if (c.kind == "bilinear") {
    Tensor x1 = leaf(c, "x1", device), x2 = leaf(c, "x2", device), w = leaf(c, "w", device);
    if (c.flag("bias")) {
      Tensor b = leaf(c, "b", device);
      grads_of(F::bilinear(x1, x2, w, b), {x1, x2, w, b}, {"gx1", "gx2", "gw", "gb"});
    } else {
      grads_of(F::bilinear(x1, x2, w), {x1, x2, w}, {"gx1", "gx2", "gw"});
    }
  } else if (c.kind == "unfold") {
    Tensor x = leaf(c, "x", device);
    nn::Unfold m(list(c, "kernel"), list(c, "dilation"), list(c, "padding"), list(c, "stride"));
    grads_of(m(x), {x}, {"gx"});
  } else if (c.kind == "fold") {
    Tensor x = leaf(c, "x", device);
    nn::Fold m(list(c, "output"), list(c, "kernel"), list(c, "dilation"), list(c, "padding"), list(c, "stride"));
    grads_of(m(x), {x}, {"gx"});
  } else if (c.kind == "embedding_bag") {
    Tensor w = leaf(c, "w", device);
    const Tensor input = at(c, "input").to(device);
    const Tensor offsets = c.flag("offsets") ? at(c, "offsets").to(device) : Tensor();
    Tensor psw = c.flag("psw") ? leaf(c, "psw", device) : Tensor();
    std::optional<int64_t> padding;
    if (c.options.at("padding") != "-") padding = c.num("padding");
    const Tensor y = F::embedding_bag(input, w, offsets, maybe_real(c, "max_norm"), c.real("norm_type"), c.flag("freq"),
                                      c.options.at("mode"), false, psw, c.flag("last"), padding);
    out.emplace_back("w_after", w.detach().cpu());
    if (psw.defined()) {
      grads_of(y, {w, psw}, {"gw", "gpsw"});
    } else {
      grads_of(y, {w}, {"gw"});
    }
  } else if (c.kind == "adaptive_max_pool1d" || c.kind == "adaptive_max_pool2d") {
    Tensor x = leaf(c, "x", device);
    const std::vector<int64_t> size = list(c, "output");
    auto [y, indices] = c.kind == "adaptive_max_pool1d" ? nn::AdaptiveMaxPool1d(size, true).forward_with_indices(x)
                                                        : nn::AdaptiveMaxPool2d(size, true).forward_with_indices(x);
    out.emplace_back("indices", indices.cpu());
    grads_of(y, {x}, {"gx"});
  } else if (c.kind == "nll_loss2d") {
    Tensor x = leaf(c, "x", device);
    const Tensor weight = c.flag("weight") ? at(c, "weight").to(device) : Tensor();
    nn::NLLLoss2d loss(weight, c.num("ignore"), reduction_of(c.options.at("reduction")));
    grads_of(loss(x, at(c, "target").to(device)), {x}, {"gx"});
  } else {
    ADD_FAILURE() << "unknown kind " << c.kind;
  }
  return out;
}

TEST(MiscLayersGolden, ValuesAndGradientsMatchPyTorch) {
  const std::vector<GoldenCase> cases = all_cases();
  ASSERT_GE(cases.size(), 60u);
  std::map<std::string, int> per_kind;
  for (const GoldenCase& c : cases) {
    SCOPED_TRACE(c.description);
    ++per_kind[c.kind];
    for (const auto& [name, got] : run_case(c, Device(DeviceType::CPU))) {
      ASSERT_TRUE(has(c, name)) << name;
      const Tensor& want = at(c, name);
      if (name == "indices") {
        EXPECT_EQ(got.dtype(), kInt64);
        EXPECT_TRUE(equal(got, want)) << "indices\n" << got << "\n" << want;
      } else {
        EXPECT_EQ(got.dtype(), want.dtype()) << name;
        expect_close(got, want, 1e-12, 1e-12, name);
      }
    }
  }
  for (const char* kind : {"lp_pool1d", "lp_pool2d", "bilinear", "unfold", "fold", "embedding_bag",
                           "adaptive_max_pool1d", "adaptive_max_pool2d", "nll_loss2d"}) {
    EXPECT_GE(per_kind[kind], 4) << kind;
  }
}

// ---------------------------------------------------------------- finite differences

TEST(MiscLayers, GradientsMatchFiniteDifferences) {
  manual_seed(11);
  using ember::test::gradcheck;
  using ember::test::gradgradcheck;
  using V = std::vector<Tensor>;
  const Tensor positive = rand({2, 2, 5, 6}, kFloat64) + 0.2;
  gradcheck("lp_pool2d", [](const V& in) { return F::lp_pool2d(in[0], 2.5, {2, 3}, {1, 2}, true); }, {positive});
  gradcheck("lp_pool1d", [](const V& in) { return F::lp_pool1d(in[0], 3.0, {3}, {2}); },
            {rand({2, 7}, kFloat64) + 0.2});
  const V bil = {randn({3, 2}, kFloat64), randn({3, 4}, kFloat64), randn({2, 2, 4}, kFloat64), randn({2}, kFloat64)};
  gradcheck(
      "bilinear", [](const V& in) { return F::bilinear(in[0], in[1], in[2], in[3]); }, bil);
  gradgradcheck(
      "bilinear", [](const V& in) { return F::bilinear(in[0], in[1], in[2], in[3]); }, bil);
  const Tensor image = randn({1, 2, 4, 5}, kFloat64);
  gradcheck("unfold", [](const V& in) { return F::unfold(in[0], {2, 3}, {1}, {1}, {2, 1}); }, {image});
  gradgradcheck("unfold", [](const V& in) { return F::unfold(in[0], {2}, {2}, {1}, {1}); }, {image});
  const Tensor cols = randn({1, 8, 6}, kFloat64);
  gradcheck("fold", [](const V& in) { return F::fold(in[0], {3, 4}, {2}); }, {cols});
  gradgradcheck("fold", [](const V& in) { return F::fold(in[0], {3, 4}, {2}); }, {cols});
  const Tensor input = tensor({1, 3, 3, 0, 4, 2, 5}, kInt64), offsets = tensor({0, 2, 2, 5}, kInt64);
  for (const char* mode : {"sum", "mean", "max"}) {
    gradcheck(std::string("embedding_bag ") + mode,
              [&](const V& in) { return F::embedding_bag(input, in[0], offsets, std::nullopt, 2.0, false, mode); },
              {randn({6, 3}, kFloat64)});
  }
  gradcheck("embedding_bag per_sample_weights",
            [&](const V& in) {
              return F::embedding_bag(input, in[0], offsets, std::nullopt, 2.0, false, "sum", false, in[1], false, 3);
            },
            {randn({6, 3}, kFloat64), rand({7}, kFloat64)});
  gradgradcheck("embedding_bag per_sample_weights",
                [&](const V& in) {
                  return F::embedding_bag(input, in[0], offsets, std::nullopt, 2.0, false, "sum", false, in[1]);
                },
                {randn({6, 3}, kFloat64), rand({7}, kFloat64)});
  gradcheck("adaptive_max_pool2d",
            [](const V& in) {
              return F::adaptive_max_pool2d(in[0], {3, 2});
            },
            {randn({2, 5, 7}, kFloat64)});
  gradcheck("adaptive_max_pool1d", [](const V& in) { return F::adaptive_max_pool1d(in[0], {4}); },
            {randn({2, 3, 9}, kFloat64)});
}

TEST(MiscLayers, FoldIsTheAdjointOfUnfold) {
  // <unfold(x), c> = <x, fold(c)> for every x and c.
  manual_seed(5);
  const Tensor x = randn({2, 3, 6, 7}, kFloat64);
  const Tensor u = F::unfold(x, {2, 3}, {2, 1}, {1, 2}, {1, 2});
  const Tensor c = randn(u.sizes(), kFloat64);
  const Tensor f = F::fold(c, {6, 7}, {2, 3}, {2, 1}, {1, 2}, {1, 2});
  EXPECT_NEAR((u * c).sum().item<double>(), (x * f).sum().item<double>(), 1e-10);
  // Non-overlapping blocks without padding: fold undoes unfold.
  EXPECT_TRUE(equal(F::fold(F::unfold(x.narrow(3, 0, 6), {2, 3}, {1}, {0}, {2, 3}), {6, 6}, {2, 3}, {1}, {0}, {2, 3}),
                    x.narrow(3, 0, 6)));
  // Empty batches keep their shape.
  EXPECT_EQ(F::unfold(zeros({0, 2, 3, 4}), {2}).sizes().vec(), (std::vector<int64_t>{0, 8, 6}));
  EXPECT_EQ(F::fold(zeros({0, 12, 6}), {3, 4}, {2}).sizes().vec(), (std::vector<int64_t>{0, 3, 3, 4}));
}

// ---------------------------------------------------------------- the modules

TEST(MiscLayers, ModulesHavePyTorchsParametersAndInitialisation) {
  manual_seed(3);
  nn::Bilinear a(3, 5, 2);
  ember_test::expect_parameters(a, golden(), "init.bilinear.");
  EXPECT_EQ(a.weight.sizes().vec(), (std::vector<int64_t>{2, 3, 5}));
  EXPECT_EQ(a.state_dict().keys(), (std::vector<std::string>{"weight", "bias"}));
  manual_seed(11);
  nn::Bilinear b(4, 2, 3, /*bias=*/false);
  ember_test::expect_parameters(b, golden(), "init.bilinear_nobias.");
  EXPECT_FALSE(b.bias.defined());
  EXPECT_EQ(b.state_dict().keys(), std::vector<std::string>{"weight"});
  // reset_parameters draws again in the same order; the bound is 1/sqrt(in1_features).
  manual_seed(3);
  a.reset_parameters();
  ember_test::expect_parameters(a, golden(), "init.bilinear.");
  nn::Bilinear wide(16, 3, 50);
  EXPECT_LE(wide.weight.abs().max().item<float>(), 0.25f);
  EXPECT_GT(wide.weight.abs().max().item<float>(), 0.24f);
  EXPECT_LE(wide.bias.abs().max().item<float>(), 0.25f);
  const Tensor x1 = randn({4, 16}), x2 = randn({4, 3});
  EXPECT_TRUE(equal(wide(x1, x2), F::bilinear(x1, x2, wide.weight, wide.bias)));

  manual_seed(5);
  nn::EmbeddingBag bag(7, 3, std::nullopt, 2.0, false, "mean", false, false, 2);
  ember_test::expect_parameters(bag, golden(), "init.embedding_bag.",
                                [](const std::string&) { return true; });  // normal draws: to 2 ulp
  EXPECT_TRUE(equal(bag.weight[2], zeros({3})));
  EXPECT_EQ(bag.state_dict().keys(), std::vector<std::string>{"weight"});
  nn::EmbeddingBag negative(7, 3, std::nullopt, 2.0, false, "sum", false, false, -1);
  EXPECT_EQ(negative.padding_idx, std::optional<int64_t>(6));
  EXPECT_TRUE(equal(negative.weight[6], zeros({3})));
  const Tensor idx = tensor({1, 6, 3, 3}, kInt64), off = tensor({0, 2}, kInt64);
  EXPECT_TRUE(equal(negative(idx, off), F::embedding_bag(idx, negative.weight, off, std::nullopt, 2.0, false, "sum",
                                                         false, Tensor(), false, 6)));
  EXPECT_TRUE(equal(bag(idx.view({2, 2})), F::embedding_bag(idx.view({2, 2}), bag.weight, Tensor(), std::nullopt, 2.0,
                                                            false, "mean", false, Tensor(), false, 2)));

  EXPECT_EQ(nn::NLLLoss2d().name(), "NLLLoss2d");
  EXPECT_EQ(nn::LPPool2d(2, {3}).name(), "LPPool2d");
  EXPECT_EQ(nn::Unfold({2}).named_parameters().size(), 0u);
  EXPECT_EQ(nn::Fold({4}, {2}).named_parameters().size(), 0u);
  nn::AdaptiveMaxPool2d with_indices({2}, true);
  EXPECT_NE(error_of([&] { with_indices(zeros({1, 4, 4})); }).find("call forward_with_indices"), std::string::npos);
  const Tensor img = randn({2, 3, 5, 4});
  EXPECT_TRUE(equal(nn::AdaptiveMaxPool2d({2, 3})(img), F::adaptive_max_pool2d(img, {2, 3})));
  EXPECT_TRUE(equal(nn::AdaptiveMaxPool1d({3})(img[0]), F::adaptive_max_pool1d(img[0], {3})));
  // Windows that tile the input exactly are max_pool2d's.
  EXPECT_TRUE(equal(F::adaptive_max_pool2d(img, {5, 2}), ember::max_pool2d(img, {1, 2})));
}

TEST(MiscLayers, EmbeddingBagEdgeCases) {
  const Tensor w = arange(12, kFloat64).view({4, 3}).requires_grad_();
  // Every bag empty: zeros that are still a function of the weight.
  const Tensor y = F::embedding_bag(tensor({2, 2}, kInt64), w, tensor({0, 0, 2}, kInt64), std::nullopt, 2.0, false,
                                    "max", false, Tensor(), false, 2);
  EXPECT_TRUE(equal(y, zeros({3, 3}, kFloat64)));
  y.sum().backward();
  EXPECT_TRUE(equal(w.grad(), zeros({4, 3}, kFloat64)));
  // int32 indices and offsets.
  const Tensor i32 = tensor({0, 3, 1}, kInt64).to(kInt32);
  EXPECT_TRUE(equal(F::embedding_bag(i32, w, tensor({0, 1}, kInt64).to(kInt32), std::nullopt, 2.0, false, "sum"),
                    tensor({{0.0, 1.0, 2.0}, {12.0, 14.0, 16.0}}, kFloat64)));
  // max_norm rescales the rows used, in place, without recording.
  Tensor big = full({3, 2}, 3.0, kFloat64).requires_grad_();
  F::embedding_bag(tensor({0, 2}, kInt64), big, tensor({0}, kInt64), 1.0);
  EXPECT_NEAR(big[0].square().sum().item<double>(), 1.0, 1e-6);
  EXPECT_TRUE(equal(big[1], full({2}, 3.0, kFloat64)));
}

// ---------------------------------------------------------------- errors

TEST(MiscLayers, ErrorsArePyTorchs) {
  const Tensor x = randn({2, 3, 4, 5});
  // unfold / fold
  EXPECT_EQ(error_of([&] {
              F::unfold(randn({3, 4}), {2});
            }),
            "Dimension out of range (expected to be in range of [-2, 1], but got 2)");
  EXPECT_EQ(error_of([&] {
              F::unfold(randn({1, 2, 3, 4, 5}), {2});
            }),
            "Expected 3D or 4D (batch mode) tensor with possibly 0 batch size and other non-zero dimensions for "
            "input, but got: [1, 2, 3, 4, 5]");
  EXPECT_EQ(error_of([&] {
              F::unfold(randn({0, 3, 4}), {2});
            }),
            "Expected 3D or 4D (batch mode) tensor with possibly 0 batch size and other non-zero dimensions for "
            "input, but got: [0, 3, 4]");
  EXPECT_EQ(error_of([&] { F::unfold(x, {0}); }),
            "kernel size should be greater than zero, but got kernel_height: 0 "
            "kernel_width: 0");
  EXPECT_EQ(error_of([&] { F::unfold(x, {2}, {0}); }),
            "dilation should be greater than zero, but got dilation_height: 0 dilation_width: 0");
  EXPECT_EQ(error_of([&] { F::unfold(x, {2}, {1}, {-1}); }),
            "padding should be non-negative, but got pad_height: -1 pad_width: -1");
  EXPECT_EQ(error_of([&] { F::unfold(x, {2}, {1}, {0}, {0}); }),
            "stride should be greater than zero, but got stride_height: 0 stride_width: 0");
  EXPECT_EQ(error_of([&] {
              F::unfold(x, {5, 2});
            }),
            "Given input with spatial size (4, 5), kernel_size=(5, 2), dilation=(1, 1), padding=(0, 0), calculated "
            "shape of the array of sliding blocks as (0, 4), but its components must be at least one.");
  EXPECT_EQ(error_of([&] { F::unfold(x, {2, 2, 2}); }), "It is expected kernel_size equals to 2, but got size 3");
  EXPECT_EQ(error_of([&] { F::unfold(x.to(kInt64), {2}); }), "\"im2col_out_cpu\" not implemented for 'Long'");
  const Tensor c = randn({2, 12, 6});
  EXPECT_EQ(error_of([&] {
              F::fold(c, {4, 5}, {2});
            }),
            "Given output_size=(4, 5), kernel_size=(2, 2), dilation=(1, 1), padding=(0, 0), stride=(1, 1), expected "
            "size of input's dimension 2 to match the calculated number of sliding blocks 3 * 4 = 12, but got "
            "input.size(2)=6.");
  EXPECT_EQ(error_of([&] {
              F::fold(c, {3, 4}, {5});
            }),
            "Expected size of input's dimension 1 to be divisible by the product of kernel_size, but got "
            "input.size(1)=12 and kernel_size=(5, 5).");
  EXPECT_EQ(error_of([&] {
              F::fold(randn({12}), {3, 4}, {2});
            }),
            "Expected 2D or 3D (batch mode) tensor for input with possibly 0 batch size and non-zero dimensions for "
            "input, but got: [12]");
  EXPECT_EQ(error_of([&] {
              F::fold(randn({2, 12, 0}), {1, 1}, {2});
            }),
            "Expected 2D or 3D (batch mode) tensor for input with possibly 0 batch size and non-zero dimensions for "
            "input, but got: [2, 12, 0]");
  EXPECT_EQ(error_of([&] { F::fold(c, {3, 4, 5}, {2}); }), "It is expected output_size equals to 2, but got size 3");
  EXPECT_EQ(error_of([&] {
              F::fold(c, {0, 4}, {2});
            }),
            "Given output_size=(0, 4), kernel_size=(2, 2), dilation=(1, 1), padding=(0, 0), stride=(1, 1), expected "
            "size of input's dimension 2 to match the calculated number of sliding blocks -1 * 3 = -3, but got "
            "input.size(2)=6.");
  EXPECT_EQ(error_of([&] {
              F::fold(c, {3, 4}, {2}, {1}, {0}, {0});
            }),
            "stride should be greater than zero, but got stride_height: 0 stride_width: 0");
  EXPECT_EQ(error_of([&] { F::fold(c.to(kInt64), {3, 4}, {2}); }), "\"col2im_out_cpu\" not implemented for 'Long'");
  // bilinear
  const Tensor w = randn({4, 3, 5}, kFloat64), b = randn({4}, kFloat64);
  EXPECT_EQ(error_of([&] {
              F::bilinear(randn({2, 3}, kFloat64), randn({2, 5}), w, b);
            }),
            "All tensors must have the same dtype, got input1: double, input2: float, weight: double, bias: double");
  EXPECT_EQ(error_of([&] {
              F::bilinear(randn({2, 3}, kFloat64), randn({2, 5}, kFloat64), w.to(kFloat32));
            }),
            "All tensors must have the same dtype, got input1: double, input2: double, weight: float");
  EXPECT_EQ(error_of([&] {
              F::bilinear(randn({2, 3}, kFloat64), randn({2, 2, 5}, kFloat64), w, b);
            }),
            "bilinear(): input dimensions do not match: got 2 and 3");
  EXPECT_EQ(error_of([&] {
              F::bilinear(randn({2, 3}, kFloat64), randn({3, 5}, kFloat64), w, b);
            }),
            "bilinear(): input batch dimensions do not match at dim 0: got 2 and 3");
  EXPECT_EQ(error_of([&] {
              F::bilinear(randn({2, 4}, kFloat64), randn({2, 5}, kFloat64), w, b);
            }),
            "bilinear(): input1 size does not match weight size: got 4 but expected 3");
  EXPECT_EQ(error_of([&] {
              F::bilinear(randn({2, 3}, kFloat64), randn({2, 6}, kFloat64), w, b);
            }),
            "bilinear(): input2 size does not match weight size: got 6 but expected 5");
  EXPECT_EQ(error_of([&] {
              F::bilinear(randn({2, 3}, kFloat64), randn({2, 5}, kFloat64), w, randn({3}, kFloat64));
            }),
            "bilinear(): bias size does not match weight size: got 3 but expected 4");
  EXPECT_EQ(error_of([] { nn::Bilinear(0, 2, 3); }), "in1_features must be > 0, but got (in1_features=0)");
  // lp_pool
  EXPECT_EQ(error_of([&] { F::lp_pool2d(x, 0, {2}); }), "norm_type must be a non-zero value, but got 0.0");
  EXPECT_EQ(error_of([] { nn::LPPool1d(0, {2}); }), "norm_type must be a non-zero value, but got 0.0");
  // adaptive max pooling
  EXPECT_EQ(error_of([] {
              F::adaptive_max_pool2d(randn({5, 7}), {2});
            }),
            "adaptive_max_pool2d(): Expected 3D or 4D tensor, but got: [5, 7]");
  EXPECT_EQ(error_of([] {
              F::adaptive_max_pool2d(randn({2, 0, 5, 7}), {2});
            }),
            "adaptive_max_pool2d(): Expected input to have non-zero size for non-batch dimensions, but input has "
            "sizes [2, 0, 5, 7] with dimension 1 being empty");
  EXPECT_EQ(error_of([&] {
              F::adaptive_max_pool2d(x, {2, 3, 4});
            }),
            "adaptive_max_pool2d(): internal error: output_size.size() must be 2");
  EXPECT_EQ(error_of([&] {
              F::adaptive_max_pool2d(x, {-1, 3});
            }),
            "Trying to create tensor with negative dimension -1: [2, 3, -1, 3]");
  EXPECT_EQ(error_of([&] {
              F::adaptive_max_pool2d(x.to(kInt64), {2, 3});
            }),
            "\"adaptive_max_pool2d\" not implemented for 'Long'");
  EXPECT_EQ(error_of([] { F::adaptive_max_pool1d(randn({5}), {2}); }),
            "Expected 2 to 3 dimensions, but got 1-dimensional tensor for argument #1 'self' (while checking "
            "arguments for adaptive_max_pool1d)");
  EXPECT_EQ(error_of([] {
              F::adaptive_max_pool1d(randn({2, 0, 5}), {2});
            }),
            "adaptive_max_pool1d(): Expected input to have non-zero size for non-batch dimensions, but input has "
            "sizes [2, 0, 5] with dimension 1 being empty");
  EXPECT_EQ(error_of([] {
              F::adaptive_max_pool1d(randn({2, 3, 5}), {2, 3});
            }),
            "adaptive_max_pool1d() argument 'output_size' should contain one int (got 2)");
  EXPECT_EQ(error_of([] {
              F::adaptive_max_pool1d(randn({2, 3, 5}), {-1});
            }),
            "Trying to create tensor with negative dimension -1: [2, 3, 1, -1]");
  EXPECT_EQ(F::adaptive_max_pool2d(x, {0, 3}).sizes().vec(), (std::vector<int64_t>{2, 3, 0, 3}));
  // embedding_bag
  const Tensor wt = randn({6, 3}, kFloat64), i = tensor({0, 2, 4, 5, 1}, kInt64), o = tensor({0, 2}, kInt64);
  auto bag = [&](const Tensor& in, const Tensor& off, const std::string& mode = "mean", const Tensor& psw = Tensor(),
                 bool last = false, std::optional<int64_t> pad = std::nullopt) {
    return F::embedding_bag(in, wt, off, std::nullopt, 2.0, false, mode, false, psw, last, pad);
  };
  EXPECT_EQ(error_of([&] {
              bag(i, tensor({1, 2}, kInt64));
            }),
            "offsets[0] has to be 0, i.e., the first sequence in the mini-batch has to start from position 0. However, "
            "got 1");
  EXPECT_EQ(error_of([&] {
              bag(i, tensor({0, 7}, kInt64));
            }),
            "offsets[-1] can not be greater than input's length 5 but got offsets[-1] of 7");
  EXPECT_EQ(error_of([&] {
              bag(tensor({0, 2, 4, 6, 1}, kInt64), o);
            }),
            "embedding_bag: Expected idx >= 0 && idx < num_embeddings but found idx to be 6");
  EXPECT_EQ(error_of([&] {
              bag(tensor({0, 2, 4, -1, 1}, kInt64), o, "max");
            }),
            "embedding_bag: Expected idx >= 0 && idx < num_embeddings but found idx to be -1");
  EXPECT_EQ(error_of([&] { bag(i.to(kFloat32), o); }),
            "Expected tensor for argument #1 'indices' to have one of the following scalar types: Long, Int; but got "
            "torch.FloatTensor instead (while checking arguments for embedding_bag)");
  EXPECT_EQ(error_of([&] { bag(i, o.to(kFloat32)); }),
            "Expected tensor for argument #1 'indices' to have one of the following scalar types: Long, Int; but got "
            "torch.FloatTensor instead (while checking arguments for embedding_bag)");
  EXPECT_EQ(error_of([&] { bag(i, o, "sum", ones({5}, kFloat32)); }),
            "Expected tensor for argument #1 'weight' to have the same type as tensor for argument #1 "
            "'per_sample_weights'; but type torch.DoubleTensor does not equal torch.FloatTensor (while checking "
            "arguments for embedding_bag)");
  EXPECT_EQ(error_of([&] { bag(i, o, "sum", ones({4}, kFloat64)); }),
            "embedding_bag: If per_sample_weights (torch.Size([4])) is not None, then it must have the same shape as "
            "the input (torch.Size([5]))");
  EXPECT_EQ(error_of([&] { bag(i, o, "mean", ones({5}, kFloat64)); }),
            "embedding_bag: per_sample_weights was not None. per_sample_weights is only supported for mode='sum' "
            "(got mode='mean'). Please open a feature request on GitHub.");
  EXPECT_EQ(error_of([&] { bag(i, o, "min"); }), "mode has to be one of sum, mean or max");
  EXPECT_EQ(error_of([&] { bag(i, Tensor()); }), "offsets has to be a 1D Tensor but got None");
  EXPECT_EQ(error_of([&] { bag(i, o.view({2, 1})); }), "offsets has to be a 1D Tensor");
  EXPECT_EQ(error_of([&] {
              bag(i.view({5, 1, 1}), o);
            }),
            "input has to be 1D or 2D Tensor, but got Tensor of dimension 3");
  EXPECT_EQ(error_of([&] {
              bag(i.view({1, 5}), o);
            }),
            "if input is 2D, then offsets has to be None, as input is treated is a mini-batch of fixed length "
            "sequences. However, found offsets of type <class 'torch.Tensor'>");
  EXPECT_EQ(error_of([&] { bag(zeros({2, 0}, kInt64), Tensor()); }), "step must be nonzero");
  EXPECT_EQ(error_of([&] { F::embedding_bag(i, wt.view({-1}), o); }),
            "weight has to be a 2D Tensor, but got Tensor of dimension 1");
  EXPECT_EQ(error_of([&] { bag(i, o, "mean", Tensor(), false, 6); }),
            "padding_idx must be within the number of embeddings, -6 through 5, but got 6");
  EXPECT_EQ(error_of([&] { bag(i, o, "mean", Tensor(), false, -7); }),
            "padding_idx must be within the number of embeddings, -6 through 5, but got -7");
  EXPECT_EQ(error_of([&] { bag(i, tensor(std::vector<int64_t>{}, kInt64), "mean", Tensor(), true); }),
            "include_last_offset: number of offset should be at least 1");
  EXPECT_EQ(error_of([&] { F::embedding_bag(i, wt, o, std::nullopt, 2.0, true, "max"); }),
            "max mode does not support scaling the gradient by the frequency");
  EXPECT_EQ(error_of([&] { F::embedding_bag(i, wt, o, std::nullopt, 2.0, false, "max", true); }),
            "max mode does not support sparse weights");
  EXPECT_EQ(error_of([&] { F::embedding_bag(i, wt.to(kInt64), o); }),
            "Expected tensor for argument #1 'weight' to have one of the following scalar types: Half, BFloat16, "
            "Float, Double; but got torch.LongTensor instead (while checking arguments for embedding_bag)");
  EXPECT_EQ(error_of([] { nn::EmbeddingBag(6, 3, std::nullopt, 2.0, false, "mean", false, false, 6); }),
            "padding_idx must be within num_embeddings");
  // ember's own refusals, where PyTorch has no check (or sparse gradients).
  EXPECT_EQ(error_of([&] {
              bag(i, tensor({0, 3, 2}, kInt64));
            }),
            "embedding_bag: offsets must be non-decreasing, but offsets[2] = 2 is less than offsets[1] = 3");
  EXPECT_NE(error_of([] { nn::EmbeddingBag(6, 3, std::nullopt, 2.0, false, "sum", true); }).find("sparse"),
            std::string::npos);
}

// ---------------------------------------------------------------- devices

class MiscLayersDevice : public ember_test::DeviceTest {};

TEST_P(MiscLayersDevice, EveryCaseMatchesTheCpu) {
  for (const GoldenCase& c : all_cases()) {
    SCOPED_TRACE(c.description);
    const Named cpu = run_case(c, Device(DeviceType::CPU));
    const Named dev = run_case(c, device());
    ASSERT_EQ(cpu.size(), dev.size());
    for (size_t k = 0; k < cpu.size(); ++k) {
      EXPECT_TRUE(ember_test::close_to_cpu(dev[k].second, cpu[k].second, 1e-12, 1e-12, cpu[k].first));
    }
  }
  // float32 on the device, too.
  const Tensor x = randn({2, 3, 6, 7});
  EXPECT_CLOSE_TO_CPU(F::unfold(x.to(device()), {2, 3}, {1}, {1}, {2}), F::unfold(x, {2, 3}, {1}, {1}, {2}), 1e-6,
                      1e-6);
  EXPECT_CLOSE_TO_CPU(F::adaptive_max_pool2d(x.to(device()), {4, 5}), F::adaptive_max_pool2d(x, {4, 5}), 0, 0);
  EXPECT_CLOSE_TO_CPU(F::lp_pool2d(x.abs().to(device()), 2, {2}), F::lp_pool2d(x.abs(), 2, {2}), 1e-5, 1e-6);
}

EMBER_INSTANTIATE_DEVICE_SUITE(MiscLayersDevice);

}  // namespace
