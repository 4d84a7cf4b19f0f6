// The activations beyond ReLU/GELU/SiLU/tanh/sigmoid (src/ops/activation.cpp) and their torch.nn
// layers: values, gradients and double backward against PyTorch's (tools/gen_pointwise_golden.py),
// the in-place forms, the modules' parameters and modes, PyTorch's errors, and the same cases on
// every usable accelerator (and the stand-in device) against the CPU.
#include <gtest/gtest.h>

#include <functional>
#include <string>
#include <vector>

#include "ember/ember.h"
#include "ember/io/safetensors.h"
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
      io::load_safetensors(EMBER_SOURCE_DIR "/tests/ops/golden/pointwise_golden.safetensors");
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

using Fn = std::function<Tensor(const Tensor&)>;

/// The ember op a golden case names, with its keyword arguments.
Fn activation_of(const GoldenCase& c) {
  const std::string& op = c.options.at("op");
  auto real = [&](const char* key) { return c.real(key); };
  if (op == "elu") return [a = real("alpha")](const Tensor& x) { return elu(x, a); };
  if (op == "selu") return [](const Tensor& x) { return selu(x); };
  if (op == "celu") return [a = real("alpha")](const Tensor& x) { return celu(x, a); };
  if (op == "leaky_relu") return [s = real("negative_slope")](const Tensor& x) { return leaky_relu(x, s); };
  if (op == "hardtanh") {
    return [lo = real("min_val"), hi = real("max_val")](const Tensor& x) { return hardtanh(x, lo, hi); };
  }
  if (op == "relu6") return [](const Tensor& x) { return relu6(x); };
  if (op == "softplus") {
    return [b = real("beta"), t = real("threshold")](const Tensor& x) { return softplus(x, b, t); };
  }
  if (op == "threshold") {
    return [t = real("threshold"), v = real("value")](const Tensor& x) { return threshold(x, t, v); };
  }
  if (op == "hardshrink") return [l = real("lambd")](const Tensor& x) { return hardshrink(x, l); };
  if (op == "softshrink") return [l = real("lambd")](const Tensor& x) { return softshrink(x, l); };
  if (op == "hardsigmoid") return [](const Tensor& x) { return hardsigmoid(x); };
  if (op == "hardswish") return [](const Tensor& x) { return hardswish(x); };
  if (op == "mish") return [](const Tensor& x) { return mish(x); };
  if (op == "logsigmoid") return [](const Tensor& x) { return logsigmoid(x); };
  if (op == "softsign") return [](const Tensor& x) { return softsign(x); };
  if (op == "tanhshrink") return [](const Tensor& x) { return tanhshrink(x); };
  if (op == "rrelu") {
    return [lo = real("lower"), hi = real("upper")](const Tensor& x) { return rrelu(x, lo, hi, /*training=*/false); };
  }
  if (op == "glu") return [d = c.num("dim")](const Tensor& x) { return glu(x, d); };
  if (op == "softmin") return [d = c.num("dim")](const Tensor& x) { return softmin(x, d); };
  ADD_FAILURE() << "no activation " << op;
  return {};
}

TEST(Activation, MatchesPyTorchValuesGradientsAndDoubleBackward) {
  const std::vector<GoldenCase> cases = cases_of("activation");
  ASSERT_GE(cases.size(), 50u);
  int double_backward_cases = 0;
  for (const GoldenCase& c : cases) {
    SCOPED_TRACE(c.description);
    const bool f64 = c.options.at("dtype") == "float64";
    const double rtol = f64 ? 1e-12 : 4e-6, atol = f64 ? 1e-13 : 2e-6;
    Tensor x = at(c, "x").clone().requires_grad_();
    Tensor y = activation_of(c)(x);
    expect_close(y, at(c, "y"), rtol, atol, "y");
    if (!golden().contains(c.prefix + "ggx")) {
      const std::vector<Tensor> gx = autograd::grad({y}, {x}, {at(c, "gy")});
      expect_close(gx[0], at(c, "gx"), rtol, atol, "gx");
      continue;
    }
    // The backward recorded (create_graph) runs the gradient as ops; it must equal the fused
    // kernel's and PyTorch's, and differentiate once more to PyTorch's double backward.
    const Tensor gx = autograd::grad({y}, {x}, {at(c, "gy")}, std::nullopt, /*create_graph=*/true)[0];
    expect_close(gx, at(c, "gx"), rtol, atol, "gx (create_graph)");
    const Tensor fused = autograd::grad({activation_of(c)(x)}, {x}, {at(c, "gy")})[0];
    expect_close(fused, at(c, "gx"), rtol, atol, "gx (fused)");
    Tensor ggx;
    if (gx.requires_grad()) {
      ggx = autograd::grad({gx}, {x}, {at(c, "v")}, std::nullopt, false, /*allow_unused=*/true)[0];
    }
    if (!ggx.defined()) ggx = zeros_like(x);
    expect_close(ggx, at(c, "ggx"), 1e-11, 1e-12, "ggx");
    ++double_backward_cases;
  }
  EXPECT_GE(double_backward_cases, 20);
}

TEST(Activation, PReLUMatchesPyTorch) {
  for (const GoldenCase& c : cases_of("PReLU")) {
    SCOPED_TRACE(c.description);
    auto m = std::make_shared<nn::PReLU>(c.num("channels"));
    m->to(kFloat64);
    {
      NoGradGuard no_grad;
      m->weight.copy_(at(c, "w"));
    }
    Tensor x = at(c, "x").clone().requires_grad_();
    Tensor y = (*m)(x);
    expect_close(y, at(c, "y"), 1e-12, 1e-13, "y");
    y.backward(at(c, "gy"));
    expect_close(x.grad(), at(c, "gx"), 1e-12, 1e-13, "gx");
    expect_close(m->weight.grad(), at(c, "gw"), 1e-12, 1e-13, "gw");
  }
}

TEST(Activation, GradientsMatchFiniteDifferences) {
  const Tensor x = tensor({-2.2, -0.4, 0.3, 1.7, 4.1}, kFloat64);
  for (const auto& [name, f] : std::vector<std::pair<std::string, Fn>>{
           {"elu", [](const Tensor& v) { return elu(v, 0.8); }},
           {"celu", [](const Tensor& v) { return celu(v, 2.0); }},
           {"softplus", [](const Tensor& v) { return softplus(v, 1.5, 4.0); }},
           {"mish", [](const Tensor& v) { return mish(v); }},
           {"logsigmoid", [](const Tensor& v) { return logsigmoid(v); }},
           {"hardswish", [](const Tensor& v) { return hardswish(v); }},
       }) {
    ember::test::gradcheck(name, [&](const std::vector<Tensor>& in) { return f(in[0]); }, {x});
    ember::test::gradgradcheck(name, [&](const std::vector<Tensor>& in) { return f(in[0]); }, {x});
  }
}

TEST(Activation, InPlaceFormsWriteIntoTheInputAndKeepTheGradient) {
  const Tensor data = tensor({-2.0, -0.5, 0.25, 3.0, 7.0}, kFloat64);
  struct Form {
    std::string name;
    Fn out_of_place;
    std::function<void(Tensor&)> in_place;
  };
  const std::vector<Form> forms = {
      {"elu", [](const Tensor& v) { return elu(v, 0.5); }, [](Tensor& v) { elu_(v, 0.5); }},
      {"selu", [](const Tensor& v) { return selu(v); }, [](Tensor& v) { selu_(v); }},
      {"celu", [](const Tensor& v) { return celu(v, 2.0); }, [](Tensor& v) { celu_(v, 2.0); }},
      {"leaky_relu", [](const Tensor& v) { return leaky_relu(v, 0.1); }, [](Tensor& v) { leaky_relu_(v, 0.1); }},
      {"hardtanh", [](const Tensor& v) { return hardtanh(v, -1, 2); }, [](Tensor& v) { hardtanh_(v, -1, 2); }},
      {"threshold", [](const Tensor& v) { return threshold(v, 0.1, 9); }, [](Tensor& v) { threshold_(v, 0.1, 9); }},
      {"hardsigmoid", [](const Tensor& v) { return hardsigmoid(v); }, [](Tensor& v) { hardsigmoid_(v); }},
      {"hardswish", [](const Tensor& v) { return hardswish(v); }, [](Tensor& v) { hardswish_(v); }},
      {"mish", [](const Tensor& v) { return mish(v); }, [](Tensor& v) { mish_(v); }},
      {"relu6 (F, inplace)", [](const Tensor& v) { return relu6(v); }, [](Tensor& v) { F::relu6(v, true); }},
  };
  for (const Form& form : forms) {
    SCOPED_TRACE(form.name);
    Tensor a = data.clone().requires_grad_(), b = data.clone().requires_grad_();
    Tensor want = form.out_of_place(a);
    Tensor h = b * 1.0;  // not a leaf, so it may be written
    form.in_place(h);
    expect_close(h, want, 0, 0, "value");
    (want * want).sum().backward();
    (h * h).sum().backward();
    expect_close(b.grad(), a.grad(), 1e-15, 0, "grad");
  }
  Tensor leaf = data.clone().requires_grad_();
  EXPECT_NE(error_of([&] { elu_(leaf); }).find("leaf Variable that requires grad"), std::string::npos);
}

TEST(Activation, ModulesHavePyTorchsDefaultsAndParameters) {
  const Tensor x = tensor({-3.0, -1.0, 0.5, 2.0, 8.0}, kFloat64);
  EXPECT_TRUE(equal(nn::ELU()(x), elu(x)));
  EXPECT_TRUE(equal(nn::CELU(0.5)(x), celu(x, 0.5)));
  EXPECT_TRUE(equal(nn::SELU()(x), selu(x)));
  EXPECT_TRUE(equal(nn::LeakyReLU()(x), leaky_relu(x, 0.01)));
  EXPECT_TRUE(equal(nn::Hardtanh()(x), clamp(x, -1.0, 1.0)));
  EXPECT_TRUE(equal(nn::ReLU6()(x), clamp(x, 0.0, 6.0)));
  EXPECT_TRUE(equal(nn::Threshold(0.5, -7.0)(x), where(x > 0.5, x, full_like(x, -7.0))));
  EXPECT_TRUE(equal(nn::Softplus()(x), softplus(x, 1.0, 20.0)));
  EXPECT_TRUE(equal(nn::Hardshrink()(x), hardshrink(x, 0.5)));
  EXPECT_TRUE(equal(nn::Softshrink()(x), softshrink(x, 0.5)));
  EXPECT_TRUE(equal(nn::Hardsigmoid()(x), hardsigmoid(x)));
  EXPECT_TRUE(equal(nn::Hardswish()(x), hardswish(x)));
  EXPECT_TRUE(equal(nn::Mish()(x), mish(x)));
  EXPECT_TRUE(equal(nn::LogSigmoid()(x), logsigmoid(x)));
  EXPECT_TRUE(equal(nn::Softsign()(x), x / (x.abs() + 1)));
  EXPECT_TRUE(equal(nn::Tanhshrink()(x), x - x.tanh()));
  EXPECT_TRUE(equal(nn::Identity()(x), x));
  EXPECT_EQ(nn::Identity().named_parameters().size(), 0u);

  nn::PReLU shared, per_channel(3, 0.1);
  ASSERT_EQ(shared.named_parameters().size(), 1u);
  EXPECT_EQ(shared.named_parameters()[0].first, "weight");
  EXPECT_TRUE(equal(shared.weight, tensor({0.25f})));
  EXPECT_TRUE(equal(per_channel.weight, full({3}, 0.1f, kFloat32)));
  EXPECT_EQ(per_channel.state_dict().keys(), std::vector<std::string>{"weight"});

  const Tensor grid = arange(24, kFloat64).reshape({2, 3, 2, 2});
  EXPECT_TRUE(allclose(nn::Softmax2d()(grid), softmax(grid, 1)));
  EXPECT_TRUE(allclose(nn::Softmin(1)(grid), softmax(-grid, 1)));
  EXPECT_EQ(nn::GLU()(grid).sizes().vec(), (std::vector<int64_t>{2, 3, 2, 1}));
  EXPECT_EQ(nn::Unflatten(1, {2, -1})(arange(12).reshape({2, 6})).sizes().vec(), (std::vector<int64_t>{2, 2, 3}));
}

TEST(Activation, RReLUDrawsSlopesWhileTrainingAndUsesTheirMeanInEval) {
  manual_seed(3);
  const Tensor x = -arange(1, 2001, 1, kFloat64);
  nn::RReLU m(0.1, 0.3);
  const Tensor y = m(x);
  const Tensor slope = y / x;
  EXPECT_GE(slope.min().item<double>(), 0.1);
  EXPECT_LE(slope.max().item<double>(), 0.3);
  EXPECT_NEAR(slope.mean().item<double>(), 0.2, 0.01);
  EXPECT_GT(slope.std().item<double>(), 0.04);  // drawn per element, not one slope
  Tensor positive = tensor({0.5, 2.0}, kFloat64);
  EXPECT_TRUE(equal(m(positive), positive));
  m.eval();
  EXPECT_TRUE(allclose(m(x), x * 0.2, 1e-15, 0));
  // While training, the gradient of each element is its own slope.
  m.train();
  Tensor v = x.clone().requires_grad_();
  Tensor out = m(v);
  out.sum().backward();
  EXPECT_TRUE(allclose(v.grad(), out.detach() / x, 1e-12, 0));
}

TEST(Activation, ErrorsNameTheProblem) {
  const Tensor x = tensor({1.0, 2.0, 3.0});
  EXPECT_EQ(error_of([&] { glu(x); }), "Halving dimension must be even, but dimension 0 is size 3");
  EXPECT_EQ(error_of([&] { softshrink(x, -1.0); }), "lambda must be greater or equal to 0, but found to be -1.0.");
  EXPECT_EQ(error_of([&] { celu(x, 0.0); }), "ZeroDivisionError from celu: alpha cannot be 0.");
  EXPECT_EQ(error_of([&] { hardtanh(x, 2.0, 1.0); }), "min_val cannot be greater than max_val");
  EXPECT_EQ(error_of([] { elu(tensor({1, 2}, kInt64)); }), "\"elu\" not implemented for 'Long'");
  EXPECT_EQ(error_of([] {
              nn::Softmax2d()(zeros({2, 3}));
            }),
            "Softmax2d: expected input to be 3D or 4D, got 2D instead");
  EXPECT_EQ(error_of([] {
              prelu(zeros({2, 3, 4}), ones({2}));
            }),
            "Mismatch of parameter numbers and input channel size. Found parameter numbers = 2 and channel size = 3.");
  EXPECT_EQ(error_of([] {
              arange(12).reshape({2, 6}).unflatten(1, {4, 2});
            }),
            "unflatten: Provided sizes [4, 2] don't multiply up to the size of dim 1 (6) in the input tensor");
}

class ActivationDevice : public ember_test::DeviceTest {};

TEST_P(ActivationDevice, EveryCaseMatchesTheCpu) {
  for (const GoldenCase& c : cases_of("activation")) {
    SCOPED_TRACE(c.description);
    const Fn f = activation_of(c);
    const bool f64 = c.options.at("dtype") == "float64";
    const double rtol = f64 ? 1e-12 : 2e-6, atol = f64 ? 1e-13 : 1e-6;
    Tensor x_cpu = at(c, "x").clone().requires_grad_();
    Tensor x_dev = at(c, "x").to(device()).requires_grad_();
    Tensor y_cpu = f(x_cpu), y_dev = f(x_dev);
    EXPECT_CLOSE_TO_CPU(y_dev, y_cpu, rtol, atol);
    const Tensor gy = at(c, "gy");
    const Tensor g_cpu = autograd::grad({y_cpu}, {x_cpu}, {gy})[0];
    const Tensor g_dev = autograd::grad({y_dev}, {x_dev}, {gy.to(device())})[0];
    EXPECT_CLOSE_TO_CPU(g_dev, g_cpu, rtol, atol);
  }
  // Half precision runs in float and rounds once, as on the CPU.
  const Tensor h = tensor({-3.5, -0.2, 0.7, 2.5}).to(kFloat16);
  EXPECT_CLOSE_TO_CPU(elu(h.to(device())), elu(h), 1e-3, 1e-3);
  EXPECT_CLOSE_TO_CPU(mish(h.to(device())), mish(h), 1e-3, 1e-3);
}

EMBER_INSTANTIATE_DEVICE_SUITE(ActivationDevice);

}  // namespace
