// Padding (src/ops/padding.cpp, ember/pad.h) and its layers (ember/nn/padding.h): every mode in 1,
// 2 and 3 dimensions, batched and not, with negative pads, against PyTorch's values and gradients
// (tools/gen_padding_pool1d_golden.py); finite-difference gradients; the fill value's conversion;
// PyTorch's errors; and the same cases on every usable accelerator (and the stand-in device)
// against the CPU.
#include <gtest/gtest.h>

#include <cmath>
#include <limits>
#include <map>
#include <memory>
#include <optional>
#include <sstream>
#include <string>
#include <vector>

#include "ember/ember.h"
#include "ember/io/safetensors.h"
#include "ember/nn/padding.h"
#include "ember/pad.h"
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

std::vector<GoldenCase> cases_of(const std::string& kind) {
  std::vector<GoldenCase> out;
  for (GoldenCase& c : ember_test::golden_cases(golden().metadata)) {
    if (c.kind == kind) out.push_back(std::move(c));
  }
  return out;
}

const Tensor& at(const GoldenCase& c, const std::string& name) { return golden().at(c.prefix + name); }

std::vector<int64_t> ints_of(const std::string& text) {
  std::vector<int64_t> out;
  std::istringstream in(text);
  for (int64_t v = 0; in >> v;) out.push_back(v);
  return out;
}

/// The golden "pad" case as a call of ember::pad.
Tensor run_pad(const GoldenCase& c, const Tensor& x) {
  std::optional<double> value;
  if (c.options.contains("value")) value = c.real("value");
  return pad(x, ints_of(c.options.at("pad")), c.options.at("mode"), value);
}

/// The golden "PadModule" case's layer: "3" is one int, "1 2 " a list.
std::shared_ptr<nn::Module> module_of(const GoldenCase& c) {
  const std::string& name = c.options.at("module");
  const std::string& text = c.options.at("padding");
  const bool list = text.ends_with(' ');
  const std::vector<int64_t> p = ints_of(text);
  const int64_t one = p.at(0);
  const double value = c.options.contains("value") ? c.real("value") : 0.0;
#define EMBER_PAD_LAYER(Name) \
  if (name == #Name) return list ? std::make_shared<nn::Name>(p) : std::make_shared<nn::Name>(one);
#define EMBER_PAD_LAYER_VALUE(Name) \
  if (name == #Name) return list ? std::make_shared<nn::Name>(p, value) : std::make_shared<nn::Name>(one, value);
  EMBER_PAD_LAYER(ZeroPad1d)
  EMBER_PAD_LAYER(ZeroPad2d)
  EMBER_PAD_LAYER(ZeroPad3d)
  EMBER_PAD_LAYER_VALUE(ConstantPad1d)
  EMBER_PAD_LAYER_VALUE(ConstantPad2d)
  EMBER_PAD_LAYER_VALUE(ConstantPad3d)
  EMBER_PAD_LAYER(ReflectionPad1d)
  EMBER_PAD_LAYER(ReflectionPad2d)
  EMBER_PAD_LAYER(ReflectionPad3d)
  EMBER_PAD_LAYER(ReplicationPad1d)
  EMBER_PAD_LAYER(ReplicationPad2d)
  EMBER_PAD_LAYER(ReplicationPad3d)
  EMBER_PAD_LAYER(CircularPad1d)
  EMBER_PAD_LAYER(CircularPad2d)
  EMBER_PAD_LAYER(CircularPad3d)
#undef EMBER_PAD_LAYER
#undef EMBER_PAD_LAYER_VALUE
  ADD_FAILURE() << "no layer " << name;
  return nullptr;
}

TEST(Padding, MatchesPyTorchValuesAndGradients) {
  const std::vector<GoldenCase> cases = cases_of("pad");
  ASSERT_GE(cases.size(), 45u);
  std::map<std::string, int> per_mode;
  for (const GoldenCase& c : cases) {
    SCOPED_TRACE(c.description);
    Tensor x = at(c, "x").clone().requires_grad_();
    const Tensor y = run_pad(c, x);
    // Padding copies values: they are exact.
    ASSERT_EQ(y.sizes().vec(), at(c, "y").sizes().vec());
    EXPECT_TRUE(equal(y, at(c, "y"))) << "got\n" << y << "\nwant\n" << at(c, "y");
    EXPECT_FALSE(y.is_alias_of(x));
    const Tensor gx = autograd::grad({y}, {x}, {at(c, "gy")})[0];
    expect_close(gx, at(c, "gx"), 1e-12, 1e-13, "gx");
    ++per_mode[c.options.at("mode")];
  }
  for (const char* mode : {"constant", "reflect", "replicate", "circular"}) EXPECT_GE(per_mode[mode], 10) << mode;
}

TEST(Padding, LayersMatchPyTorch) {
  const std::vector<GoldenCase> cases = cases_of("PadModule");
  ASSERT_EQ(cases.size(), 16u);
  for (const GoldenCase& c : cases) {
    SCOPED_TRACE(c.description);
    const std::shared_ptr<nn::Module> m = module_of(c);
    ASSERT_TRUE(m);
    EXPECT_EQ(m->name(), c.options.at("module"));
    EXPECT_TRUE(m->parameters().empty());
    Tensor x = at(c, "x").clone().requires_grad_();
    const Tensor y = (*m)(x);
    ASSERT_EQ(y.sizes().vec(), at(c, "y").sizes().vec());
    EXPECT_TRUE(equal(y, at(c, "y")));
    expect_close(autograd::grad({y}, {x}, {at(c, "gy")})[0], at(c, "gx"), 1e-12, 1e-13, "gx");
  }
}

TEST(Padding, LayerArgumentsFollowPyTorch) {
  // One value stands for every side; a list is kept as given.
  EXPECT_EQ(nn::ZeroPad1d(2).padding, (std::vector<int64_t>{2, 2}));
  EXPECT_EQ(nn::ReflectionPad2d(1).padding, (std::vector<int64_t>{1, 1, 1, 1}));
  EXPECT_EQ(nn::CircularPad3d(3).padding, (std::vector<int64_t>(6, 3)));
  EXPECT_EQ(nn::ReplicationPad2d(std::vector<int64_t>{1, 2, 3, 4}).padding, (std::vector<int64_t>{1, 2, 3, 4}));
  nn::ConstantPad2d constant(std::vector<int64_t>{1, 0, 0, 2}, 3.5);
  EXPECT_EQ(constant.value, 3.5);
  EXPECT_EQ(nn::ZeroPad3d(1).value, 0.0);
  // A list of the wrong length is pad's error when the layer runs, as in PyTorch.
  EXPECT_EQ(error_of([] {
              nn::ReflectionPad1d(std::vector<int64_t>{1, 2, 3})(zeros({2, 3, 4}));
            }),
            "Padding length must be divisible by 2");
  // Only the circular layers check the rank themselves (PyTorch's ValueError).
  EXPECT_EQ(error_of([] { nn::CircularPad1d(1)(zeros({1, 2, 3, 4})); }), "expected 2D or 3D input (got 4D input)");
  EXPECT_EQ(error_of([] { nn::CircularPad2d(1)(zeros({3, 4})); }), "expected 3D or 4D input (got 2D input)");
  EXPECT_EQ(error_of([] {
              nn::CircularPad3d(1)(zeros({1, 2, 3, 4, 5, 6}));
            }),
            "expected 4D or 5D input (got 6D input)");
  // ZeroPad2d pads a 2-D tensor (both its dimensions), which the circular layer refuses.
  EXPECT_EQ(nn::ZeroPad2d(1)(ones({2, 3})).sizes().vec(), (std::vector<int64_t>{4, 5}));
  // functional::pad is the op.
  const Tensor x = arange(6, kFloat64).reshape({1, 2, 3});
  EXPECT_TRUE(equal(F::pad(x, {2, 1}, "reflect"), pad(x, {2, 1}, "reflect")));
}

TEST(Padding, GradientsMatchFiniteDifferences) {
  manual_seed(3);
  struct Case {
    std::vector<int64_t> shape, pad;
    const char* mode;
  };
  const std::vector<Case> cases = {
      {{2, 2, 5}, {2, -1}, "constant"},
      {{2, 3, 4}, {1, 0, 1, 2, 0, 1}, "constant"},
      {{2, 2, 5}, {3, 4}, "reflect"},
      {{1, 2, 3, 4}, {-1, 3, 2, -1}, "reflect"},
      {{1, 1, 3, 3, 4}, {1, 2, 2, 0, 1, 2}, "reflect"},
      {{2, 2, 4}, {5, -2}, "replicate"},
      {{2, 3, 3}, {2, 1, 0, 3}, "replicate"},
      {{1, 1, 2, 2, 3}, {1, 2, 3, 0, 1, 1}, "replicate"},
      {{2, 2, 4}, {3, -1}, "circular"},
      {{1, 2, 3, 3}, {2, 3, -1, 1}, "circular"},
      {{1, 2, 2, 3}, {1, 2, 2, 0, 2, 1}, "circular"},
  };
  for (const Case& c : cases) {
    const std::string what = std::string(c.mode) + " " + ::testing::PrintToString(c.pad);
    const std::vector<int64_t> p = c.pad;
    const std::string mode = c.mode;
    test::gradcheck(what, [&](const std::vector<Tensor>& in) { return pad(in[0], p, mode, std::nullopt); },
                    {randn(c.shape, kFloat64)});
  }
  // The gradient is made of ops, so it differentiates again (it is linear in the incoming one).
  test::gradgradcheck("reflect, twice",
                      [](const std::vector<Tensor>& in) {
                        return pad(in[0], {2, 1, 1, 2}, "reflect");
                      },
                      {randn({1, 2, 3, 4}, kFloat64)});
  test::gradgradcheck("constant, twice",
                      [](const std::vector<Tensor>& in) {
                        return pad(in[0], {2, -1}, "constant", 1.5);
                      },
                      {randn({2, 4}, kFloat64)});
}

TEST(Padding, ValuesDtypesAndCopies) {
  // The fill value is converted as fill_ converts it (truncated for integers, any non-zero is true).
  EXPECT_EQ(pad(zeros({3}, kInt64), {1, 1}, "constant", -2.7)[0].item<int64_t>(), -2);
  EXPECT_TRUE(pad(zeros({3}, kBool), {1, 1}, "constant", 0.5)[0].item<bool>());
  EXPECT_TRUE(std::isnan(pad(zeros({3}), {1, 1}, "constant", std::nan(""))[4].item<float>()));
  EXPECT_EQ(pad(zeros({3}, kUInt8), {1, 0}, "constant", 2.5)[0].item<int64_t>(), 2);
  // Integer and half tensors pad in every mode; bool only in constant and circular mode.
  const Tensor i = arange(6, kInt64).reshape({1, 2, 3});
  EXPECT_TRUE(equal(pad(i, {2, 1}, "reflect"), tensor({{{2, 1, 0, 1, 2, 1}, {5, 4, 3, 4, 5, 4}}}, kInt64)));
  EXPECT_TRUE(equal(pad(i, {1, 2}, "replicate"), tensor({{{0, 0, 1, 2, 2, 2}, {3, 3, 4, 5, 5, 5}}}, kInt64)));
  EXPECT_TRUE(equal(pad(i, {1, 2}, "circular"), tensor({{{2, 0, 1, 2, 0, 1}, {5, 3, 4, 5, 3, 4}}}, kInt64)));
  EXPECT_EQ(pad(i.to(kFloat16), {1, 1}, "reflect").dtype(), kFloat16);
  EXPECT_EQ(pad(ones({1, 2, 3}, kBool), {1, 1}, "circular").dtype(), kBool);
  // Negative pads crop; all of them non-positive is still a copy, never a view.
  const Tensor x = arange(12, kFloat64).reshape({3, 4});
  const Tensor cropped = pad(x, {-1, 0, 0, -1});
  EXPECT_TRUE(equal(cropped, tensor({{1.0, 2.0, 3.0}, {5.0, 6.0, 7.0}}, kFloat64)));
  EXPECT_FALSE(cropped.is_alias_of(x));
  EXPECT_FALSE(pad(x, {}).is_alias_of(x));
  EXPECT_FALSE(pad(x.unsqueeze(0), {0, 0}, "reflect").is_alias_of(x));
  // A 0-dim tensor takes an empty padding; a zero value is accepted by the other modes.
  EXPECT_EQ(pad(scalar_tensor(1.5, kFloat64), {}).item<double>(), 1.5);
  EXPECT_EQ(pad(x.unsqueeze(0), {1, 1}, "replicate", 0.0).sizes().vec(), (std::vector<int64_t>{1, 3, 6}));
  // Empty batches pad; circular padding also allows other empty dimensions.
  EXPECT_EQ(pad(zeros({0, 2, 3}), {1, 1}, "reflect").sizes().vec(), (std::vector<int64_t>{0, 2, 5}));
  EXPECT_EQ(pad(zeros({0, 2, 3}), {1, 1}, "replicate").sizes().vec(), (std::vector<int64_t>{0, 2, 5}));
  EXPECT_EQ(pad(zeros({2, 0, 3}), {1, 1}, "circular").sizes().vec(), (std::vector<int64_t>{2, 0, 5}));
  EXPECT_EQ(pad(zeros({2, 2, 0}), {0, 0}, "circular").sizes().vec(), (std::vector<int64_t>{2, 2, 0}));
  EXPECT_EQ(pad(zeros({1, 3, 4}), {-2, -2}, "circular").sizes().vec(), (std::vector<int64_t>{1, 3, 0}));
  EXPECT_EQ(pad(zeros({1, 3, 4}), {-2, -2}).sizes().vec(), (std::vector<int64_t>{1, 3, 0}));
  // Constant padding reaches every dimension; the others only the last three.
  EXPECT_EQ(pad(zeros({2, 3, 2, 2}), {1, 0, 0, 1, 1, 0, 0, 1}).sizes().vec(), (std::vector<int64_t>{3, 4, 3, 3}));
  EXPECT_EQ(pad(zeros({4}), {1, 2}).sizes().vec(), (std::vector<int64_t>{7}));
}

TEST(Padding, ErrorsMatchPyTorch) {
  const Tensor x = zeros({1, 3, 4});
  EXPECT_EQ(error_of([&] { pad(x, {1}); }), "Padding length must be divisible by 2");
  EXPECT_EQ(error_of([&] {
              pad(x, {1, 1, 1, 1, 1, 1, 1, 1});
            }),
            "Padding length should be less than or equal to two times the input dimension but got padding length 8 "
            "and input of dimension 3");
  EXPECT_EQ(error_of([] {
              pad(zeros({3}), {1, 1, 1, 1});
            }),
            "Padding length should be less than or equal to two times the input dimension but got padding length 4 "
            "and input of dimension 1");
  EXPECT_EQ(error_of([&] { pad(x, {1, 1}, "foo"); }), "Unrecognised padding mode foo");
  EXPECT_EQ(error_of([&] {
              pad(x, {1, 1}, "reflect", 1.0);
            }),
            "Padding mode \"reflect\" doesn't take in value argument");
  EXPECT_EQ(error_of([&] {
              pad(x, {1, 1}, "circular", -2.0);
            }),
            "Padding mode \"circular\" doesn't take in value argument");
  const std::string combinations =
      "D input tensor.\nSupported combinations for non-constant padding:\n"
      "  - 2D or 3D input: padding size = 2 (pads last dimension)\n"
      "  - 3D or 4D input: padding size = 4 (pads last 2 dimensions)\n"
      "  - 4D or 5D input: padding size = 6 (pads last 3 dimensions)";
  EXPECT_EQ(error_of([] {
              pad(zeros({4}), {1, 1}, "reflect");
            }),
            "Padding size 2 is not supported for 1" + combinations);
  EXPECT_EQ(error_of([] {
              pad(zeros({1, 1, 3, 4}), {1, 1}, "circular");
            }),
            "Padding size 2 is not supported for 4" + combinations);
  EXPECT_EQ(error_of([&] { pad(x, {}, "replicate"); }), "Padding size 0 is not supported for 3" + combinations);
  // reflect: each pad smaller than its dimension, checked from the last dimension.
  EXPECT_EQ(error_of([&] {
              pad(x, {4, 4}, "reflect");
            }),
            "Argument #4: Padding size should be less than the corresponding input dimension, but got: padding (4, "
            "4) at dimension 2 of input [1, 3, 4]");
  EXPECT_EQ(error_of([] {
              pad(zeros({3, 4}), {-2, 4}, "reflect");
            }),
            "Argument #4: Padding size should be less than the corresponding input dimension, but got: padding (-2, "
            "4) at dimension 1 of input [3, 4]");
  EXPECT_EQ(error_of([] {
              pad(zeros({1, 2, 3, 4}), {1, 1, 3, 0}, "reflect");
            }),
            "Argument #6: Padding size should be less than the corresponding input dimension, but got: padding (3, "
            "0) at dimension 2 of input [1, 2, 3, 4]");
  EXPECT_EQ(error_of([] {
              pad(zeros({1, 2, 3, 4, 5}), {1, 1, 1, 1, 3, 0}, "reflect");
            }),
            "Argument #8: Padding size should be less than the corresponding input dimension, but got: padding (3, "
            "0) at dimension 2 of input [1, 2, 3, 4, 5]");
  // reflect and replicate: a non-empty result, and no empty dimension but the batch.
  EXPECT_EQ(error_of([&] { pad(x, {-2, -2}, "replicate"); }), "input (W: 4) is too small. Calculated output W: 0");
  EXPECT_EQ(error_of([&] { pad(x, {-3, -2}, "reflect"); }), "input (W: 4) is too small. Calculated output W: -1");
  EXPECT_EQ(error_of([] {
              pad(zeros({1, 2, 3, 4}), {-3, -2, 0, 0}, "replicate");
            }),
            "Calculated output H: 3 W: -1 must be >= 1 in every dimension (input H: 3, W: 4)");
  EXPECT_EQ(error_of([] {
              pad(zeros({1, 2, 3, 4, 5}), {1, 1, 1, 1, -3, 0}, "reflect");
            }),
            "Calculated output D: 0 H: 6 W: 7 must be >= 1 in every dimension (input D: 3, H: 4, W: 5)");
  EXPECT_EQ(error_of([] {
              pad(zeros({2, 0, 3}), {1, 1}, "reflect");
            }),
            "Expected 2D or 3D (batch mode) tensor with possibly 0 batch size and other non-zero dimensions for "
            "input, but got: [2, 0, 3]");
  EXPECT_EQ(error_of([] {
              pad(zeros({2, 2, 0}), {0, 0}, "replicate");
            }),
            "Expected 2D or 3D (batch mode) tensor with possibly 0 batch size and other non-zero dimensions for "
            "input, but got: [2, 2, 0]");
  EXPECT_EQ(error_of([] {
              pad(zeros({2, 0, 3, 3}), {1, 1, 1, 1}, "replicate");
            }),
            "Expected 3D or 4D (batch mode) tensor with possibly 0 batch size and other non-zero dimensions for "
            "input, but got: [2, 0, 3, 3]");
  EXPECT_EQ(error_of([] {
              pad(zeros({2, 0, 3, 3, 3}), {1, 1, 1, 1, 1, 1}, "reflect");
            }),
            "Expected 4D or 5D (batch mode) tensor with possibly 0 batch size and other non-zero dimensions for "
            "input, but got: [2, 0, 3, 3, 3]");
  EXPECT_EQ(error_of([] {
              pad(ones({1, 2, 3}, kBool), {1, 1}, "reflect");
            }),
            "\"reflection_pad1d\" not implemented for 'Bool'");
  EXPECT_EQ(error_of([] {
              pad(ones({1, 2, 3, 3}, kBool), {1, 1, 1, 1}, "replicate");
            }),
            "\"replication_pad2d\" not implemented for 'Bool'");
  // circular
  EXPECT_EQ(error_of([&] { pad(x, {5, 1}, "circular"); }), "Padding value causes wrapping around more than once.");
  EXPECT_EQ(error_of([&] {
              pad(x, {-3, -2}, "circular");
            }),
            "Negative padding value is resulting in an empty dimension");
  EXPECT_EQ(error_of([&] {
              pad(x, {3, -2}, "circular");
            }),
            "unsupported operation: some elements of the input tensor and the written-to tensor refer to a single "
            "memory location. Please clone() the tensor before performing the operation.");
  // constant: the crop comes first, with narrow's message.
  EXPECT_EQ(error_of([&] { pad(x, {-3, -2}); }), "narrow(): length must be non-negative.");
  EXPECT_EQ(error_of([&] { pad(x, {3, -6}); }), "narrow(): length must be non-negative.");
  // The value must fit the tensor's type, as fill_ checks.
  EXPECT_EQ(error_of([] {
              pad(zeros({3}, kUInt8), {1, 1}, "constant", -1.0);
            }),
            "value cannot be converted to type uint8_t without overflow");
  EXPECT_EQ(error_of([] {
              pad(zeros({3}, kInt8), {1, 1}, "constant", 300.0);
            }),
            "value cannot be converted to type int8_t without overflow");
  EXPECT_EQ(error_of([] {
              pad(zeros({3}, kInt32), {1, 1}, "constant", 1e10);
            }),
            "value cannot be converted to type int without overflow");
  EXPECT_EQ(error_of([] {
              pad(zeros({3}, kInt64), {1, 1}, "constant", std::nan(""));
            }),
            "value cannot be converted to type int64_t without overflow");
  EXPECT_EQ(error_of([] {
              pad(zeros({3}, kFloat16), {1, 1}, "constant", 1e10);
            }),
            "value cannot be converted to type c10::Half without overflow");
  EXPECT_EQ(error_of([] {
              pad(zeros({3}, kFloat32), {1, 1}, "constant", 1e300);
            }),
            "value cannot be converted to type float without overflow");
  EXPECT_EQ(pad(zeros({3}, kFloat16), {1, 1}, "constant", std::numeric_limits<double>::infinity())[0].item<float>(),
            std::numeric_limits<float>::infinity());
  EXPECT_EQ(error_of([] {
              pad(Tensor(), {1, 1});
            }),
            "[pad] the tensor is undefined (default-constructed); create it with a factory such as ember::zeros first");
  // The context line names the op.
  EXPECT_NE(ember_test::full_error_of([&] { pad(x, {1}); }).find("\n  in pad(input: float32 [1, 3, 4]"),
            std::string::npos);
}

class PaddingDevice : public ember_test::DeviceTest {};

TEST_P(PaddingDevice, EveryCaseMatchesTheCpu) {
  std::vector<GoldenCase> cases = cases_of("pad");
  for (const GoldenCase& c : cases_of("PadModule")) cases.push_back(c);
  for (const GoldenCase& c : cases) {
    SCOPED_TRACE(c.description);
    Tensor x_cpu = at(c, "x").clone().requires_grad_();
    Tensor x_dev = at(c, "x").to(device()).requires_grad_();
    Tensor y_cpu, y_dev;
    if (c.kind == "pad") {
      y_cpu = run_pad(c, x_cpu);
      y_dev = run_pad(c, x_dev);
    } else {
      const std::shared_ptr<nn::Module> m = module_of(c);
      y_cpu = (*m)(x_cpu);
      y_dev = (*m)(x_dev);
    }
    EXPECT_EQ(y_dev.device(), device());
    EXPECT_CLOSE_TO_CPU(y_dev, y_cpu, 0, 0);
    const Tensor gy = at(c, "gy");
    const Tensor g_cpu = autograd::grad({y_cpu}, {x_cpu}, {gy})[0];
    const Tensor g_dev = autograd::grad({y_dev}, {x_dev}, {gy.to(device())})[0];
    EXPECT_CLOSE_TO_CPU(g_dev, g_cpu, 1e-12, 1e-13);
  }
  const Tensor h = arange(12).reshape({1, 3, 4}).to(kFloat16);
  for (const char* mode : {"constant", "reflect", "replicate", "circular"}) {
    EXPECT_CLOSE_TO_CPU(pad(h.to(device()), {2, 1}, mode), pad(h, {2, 1}, mode), 0, 0);
  }
}

EMBER_INSTANTIATE_DEVICE_SUITE(PaddingDevice);

}  // namespace
