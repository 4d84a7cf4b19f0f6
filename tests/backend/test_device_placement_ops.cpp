// Device placement of ops without a GPU (harness: support/device_placement.h): the stand-in
// device itself, factories and moves, element-wise ops, reductions, matrix products, softmax,
// losses, views and indexing, each forward and backward on mps:0 against the CPU.
#include <gtest/gtest.h>

#include <cmath>
#include <functional>
#include <limits>
#include <map>
#include <memory>
#include <string>
#include <utility>
#include <vector>

#include "support/device_placement.h"

namespace {

using namespace ember;
using namespace ember_test::placement;
namespace nn = ember::nn;
namespace F = ember::nn::functional;
namespace optim = ember::optim;
using ember_test::close_to_cpu;
using ember_test::full_error_of;

// ---------------------------------------------------------------------------------------------
// The stand-in device itself.

TEST_F(DevicePlacement, StandInDeviceIsRegisteredOnlyForTheTest) {
  EXPECT_EQ(find_backend(DeviceType::MPS), &ember_test::host_device_backend());
  EXPECT_FALSE(mps::is_available());  // nothing else changes: best_device() never picks it
  Tensor x = zeros({2}, Device("mps"));
  EXPECT_EQ(x.device(), Device(DeviceType::MPS, 0));  // normalised to its index
  EXPECT_NE(full_error_of([] { zeros({2}, Device("mps:1")); }).find("invalid device ordinal"), std::string::npos);
}

TEST_F(DevicePlacement, MixingDevicesIsTheLibrarysError) {
  Tensor a = ones({3}, dev()), b = ones({3});
  EXPECT_NE(full_error_of([&] { (void)(a + b); }).find("Expected all tensors to be on the same device"),
            std::string::npos);
  EXPECT_NE(full_error_of([&] {
              (void)matmul(ones({2, 2}, dev()), ones({2, 2}));
            }).find("Expected all tensors to be on the same device"),
            std::string::npos);
}

TEST_F(DevicePlacement, HostMemoryInADeviceKernelIsCaught) {
  // Straight at the backend, as a front end that forgot a move would call it.
  Tensor out = empty({4}, dev()), host = ones({4});
  Backend& backend = backend_for(dev());
  const std::string error = full_error_of([&] { backend.copy(view_of(out), view_of(host)); });
  EXPECT_NE(error.find("[host-device backend] copy: argument 'src'"), std::string::npos) << error;
  EXPECT_NO_THROW(backend.copy(view_of(out), view_of(on(host))));
  EXPECT_NO_THROW(backend.copy(view_of(out.slice(0, 1, 3)), view_of(on(host).slice(0, 0, 2))));
}

TEST_F(DevicePlacement, HarnessCatchesACpuTemporary) {
  // The bug class this suite is for: a temporary made without a device, in a forward or in a
  // backward formula, then mixed with device tensors.
  const Tensor x = randn({2, 3});
  const std::string forward =
      full_error_of([&] { run_on(dev(), {leaf(x)}, [](auto& v) { return v[0] * ones(v[0].sizes()); }); });
  EXPECT_NE(forward.find("Expected all tensors to be on the same device"), std::string::npos) << forward;
  // A backward formula that builds its gradient on the CPU (the bug fixed in index_select's,
  // gather's, max(dim)'s and select/slice's): y = x * 2 recorded by hand with such a formula,
  // used twice so that the engine has to add the CPU gradient to a device one.
  const Fn buggy = [](const std::vector<Tensor>& v) {
    Tensor y;
    {
      NoGradGuard no_grad;
      y = v[0] * 2.0;
    }
    autograd::record(y, "BuggyBackward0", {&v[0]},
                     [](const Tensor& g) { return std::vector<Tensor>{full(g.sizes(), 2.0)}; });
    return y + v[0];
  };
  EXPECT_EQ(full_error_of([&] { run_on(kCpu, {leaf(x)}, buggy); }), "no error");
  const std::string backward = full_error_of([&] { run_on(dev(), {leaf(x)}, buggy); });
  EXPECT_NE(backward.find("Function BuggyBackward0 returned an invalid gradient at index 0 - expected device mps:0 but "
                          "got cpu"),
            std::string::npos)
      << backward;
}

TEST_F(DevicePlacement, MixedDeviceArgumentsAreRefused) {
  // Tensors on two devices are the library's error ("Expected all tensors to be on the same
  // device", PyTorch's words), never a host pointer handed to a device kernel.
  const Tensor xd = on(randn({4, 3})), target = tensor(std::vector<int64_t>{0, 2, 1, 2});
  using R = nn::Reduction;
  const std::vector<std::pair<std::string, std::function<Tensor()>>> cases = {
      {"add",
       [&] {
         return xd + randn({4, 3});
       }},
      {"where with a CPU condition",
       [&] {
         return where(randn({4, 3}) > 0.0, xd, xd);
       }},
      {"mm",
       [&] {
         return mm(xd, randn({3, 2}));
       }},
      {"cat",
       [&] {
         return cat({xd, randn({1, 3})});
       }},
      {"index_select with a CPU index", [&] { return index_select(xd, 0, target); }},
      {"gather with a CPU index", [&] { return gather(xd, 1, target.unsqueeze(1)); }},
      {"scatter_add with a CPU index", [&] { return scatter_add(xd, 1, target.unsqueeze(1), xd.narrow(1, 0, 1)); }},
      {"embedding with CPU indices", [&] { return F::embedding(target, xd); }},
      {"linear with a CPU weight",
       [&] {
         return F::linear(xd, randn({2, 3}));
       }},
      {"layer_norm with a CPU weight", [&] { return F::layer_norm(xd, {3}, ones({3})); }},
      {"conv2d with a CPU weight",
       [&] {
         return F::conv2d(on(randn({1, 2, 4, 4})), randn({1, 2, 3, 3}));
       }},
      {"batch_norm with CPU running stats", [&] { return F::batch_norm(xd, zeros({3}), ones({3}), {}, {}, true); }},
      {"mse_loss with a CPU target",
       [&] {
         return F::mse_loss(xd, randn({4, 3}));
       }},
      {"cross_entropy with a CPU weight", [&] { return F::cross_entropy(xd, on(target), R::Mean, 0.0, ones({3})); }},
      {"cross_entropy with CPU targets", [&] { return F::cross_entropy(xd, target); }},
      {"cross_entropy with CPU targets, smoothing", [&] { return F::cross_entropy(xd, target, R::Mean, 0.1); }},
      {"nll_loss with CPU targets", [&] { return F::nll_loss(xd, target); }},
      {"all_finite",
       [&] {
         return all_finite(std::vector<Tensor>{xd, randn({2})});
       }},
  };
  for (const auto& [name, run_case] : cases) {
    const auto& run = run_case;  // clang before 16 cannot capture a structured binding
    const std::string error = full_error_of([&] { (void)run(); });
    EXPECT_NE(error.find("xpected all tensors to be on the same device"), std::string::npos) << name << ": " << error;
  }
}

// ---------------------------------------------------------------------------------------------
// Factories and moves.

TEST_F(DevicePlacement, FactoriesWithADevice) {
  const TensorOptions o = TensorOptions().device(dev());
  const std::vector<std::pair<std::string, std::function<Tensor(const TensorOptions&)>>> cases = {
      {"zeros",
       [](const TensorOptions& t) {
         return zeros({2, 3}, t);
       }},
      {"ones int64", [](const TensorOptions& t) { return ones({4}, t.dtype(kInt64)); }},
      {"full",
       [](const TensorOptions& t) {
         return full({3, 1}, 2.5, t);
       }},
      {"full bool", [](const TensorOptions& t) { return full({2}, true, t); }},
      {"arange int", [](const TensorOptions& t) { return arange(7, t); }},
      {"arange float", [](const TensorOptions& t) { return arange(0.5, 3.0, 0.25, t); }},
      {"linspace", [](const TensorOptions& t) { return linspace(-1.0, 2.0, 9, t); }},
      {"eye", [](const TensorOptions& t) { return eye(3, 4, t); }},
      {"tensor",
       [](const TensorOptions& t) {
         return tensor({{1.f, 2.f}, {3.f, 4.f}}, t);
       }},
      {"tensor int64 vector",
       [](const TensorOptions& t) {
         return tensor(std::vector<int64_t>{3, 1, 2}, t);
       }},
      {"scalar_tensor", [](const TensorOptions& t) { return scalar_tensor(1.5, t); }},
      {"from_blob_copy",
       [](const TensorOptions& t) {
         const double data[] = {1, 2, 3, 4, 5, 6};
         return from_blob_copy(data, {2, 3}, kFloat64, t);
       }},
      {"zeros_like",
       [](const TensorOptions& t) {
         return zeros_like(ones({2, 2}, t));
       }},
      {"ones_like",
       [](const TensorOptions& t) {
         return ones_like(ones({2, 2}, t), kFloat64);
       }},
      {"full_like", [](const TensorOptions& t) { return full_like(ones({3}, t), 7); }},
  };
  for (const auto& [name, make] : cases) {
    Tensor got = make(o);
    EXPECT_EQ(got.device(), dev()) << name;
    EXPECT_TRUE(close_to_cpu(got, make(TensorOptions()), 0, 0, name));
  }
  // empty and the random factories: device and shape only.
  const std::vector<std::pair<std::string, Tensor>> drawn = {
      {"empty", empty({2, 5}, o)},
      {"empty_like", empty_like(ones({3, 2}, o))},
      {"empty_strided", empty_strided({2, 3}, {1, 2}, o)},
      {"rand", rand({3, 4}, o)},
      {"randn", randn({3, 4}, o.dtype(kFloat64))},
      {"randint", randint(0, 10, {3, 4}, o)},
      {"randperm", randperm(6, o)},
      {"rand_like", rand_like(ones({3, 4}, o))},
      {"randn_like", randn_like(ones({3, 4}, o))},
      {"randint_like", randint_like(ones({3, 4}, o), 0, 5)},
  };
  for (const auto& [name, t] : drawn) {
    EXPECT_EQ(t.device(), dev()) << name;
    EXPECT_EQ(t.dim(), 2 - (name == "randperm")) << name;
  }
  EXPECT_EQ(randperm(6, o).sum().item<int64_t>(), 15);
  Tensor u = rand({1000}, o);
  EXPECT_EQ(logical_and(u >= 0.0, u < 1.0).sum().item<int64_t>(), 1000);
}

TEST_F(DevicePlacement, MovesBetweenDevices) {
  Tensor x = randn({3, 4});
  Tensor d = x.to(dev());
  EXPECT_EQ(d.device(), dev());
  EXPECT_TRUE(equal(d.cpu(), x));
  EXPECT_TRUE(equal(d.to(kCpu), x));
  EXPECT_EQ(d.to(dev()).is_same(d), true);                    // nothing to do
  EXPECT_EQ(d.to(Device(DeviceType::MPS)).is_same(d), true);  // "mps" is mps:0
  EXPECT_TRUE(close_to_cpu(x.to(dev(), kFloat64), x.to(kFloat64), 0, 0, "to(device, dtype)"));
  EXPECT_TRUE(close_to_cpu(d.to(kFloat16), x.to(kFloat16), 0, 0, "to(dtype) on the device"));
  EXPECT_TRUE(equal(d.to(kCpu, kInt32), x.to(kInt32)));
  // Non-contiguous sources, both ways.
  EXPECT_TRUE(close_to_cpu(x.t().to(dev()), x.t(), 0, 0, "transposed to device"));
  EXPECT_TRUE(equal(d.t().cpu(), x.t()));
  // copy_ across devices, with broadcasting and conversion.
  Tensor target = zeros({3, 4}, TensorOptions().device(dev()).dtype(kFloat64));
  target.copy_(x);
  EXPECT_TRUE(close_to_cpu(target, x.to(kFloat64), 0, 0, "copy_ from the CPU"));
  Tensor row = zeros({3, 4});
  row.copy_(d.select(0, 1));
  EXPECT_TRUE(equal(row, x.select(0, 1).expand({3, 4})));
  Tensor into_view = zeros({4, 3}, dev());
  into_view.t().copy_(x);
  EXPECT_TRUE(equal(into_view.cpu(), x.t()));
  // clone, contiguous, fill_, zero_, item, printing.
  EXPECT_TRUE(close_to_cpu(d.t().contiguous(), x.t().contiguous(), 0, 0, "contiguous"));
  EXPECT_TRUE(close_to_cpu(d.clone(), x, 0, 0, "clone"));
  Tensor f = empty({2, 2}, dev());
  f.fill_(3.0);
  EXPECT_TRUE(close_to_cpu(f, full({2, 2}, 3.0), 0, 0, "fill_"));
  f.zero_();
  EXPECT_TRUE(close_to_cpu(f, zeros({2, 2}), 0, 0, "zero_"));
  EXPECT_EQ(d.sum().item<float>(), x.sum().item<float>());
  EXPECT_NE(d.str().find("device='mps:0'"), std::string::npos) << d.str();
  // Gradients flow back across the move: ToCopyBackward0 returns them to the source's device.
  Tensor leaf_cpu = x.clone().requires_grad_();
  (leaf_cpu.to(dev()) * 2.0).sum().backward();
  EXPECT_EQ(leaf_cpu.grad().device(), kCpu);
  EXPECT_TRUE(equal(leaf_cpu.grad(), full({3, 4}, 2.0)));
  Tensor leaf_dev = on(x).requires_grad_();
  (leaf_dev.cpu() * 3.0).sum().backward();
  EXPECT_EQ(leaf_dev.grad().device(), dev());
  EXPECT_TRUE(close_to_cpu(leaf_dev.grad(), full({3, 4}, 3.0), 0, 0, "grad through .cpu()"));
}

// ---------------------------------------------------------------------------------------------
// Element-wise.

TEST_F(DevicePlacement, BinaryOpsWithBroadcastingAndScalars) {
  const Tensor a = randn({3, 1, 4}), b = randn({2, 4}), pos = rand({2, 4}) + 0.5;
  const std::vector<std::pair<std::string, Fn>> ops = {
      {"add", [](auto& v) { return v[0] + v[1]; }},
      {"add alpha", [](auto& v) { return add(v[0], v[1], 2.5); }},
      {"sub alpha", [](auto& v) { return sub(v[0], v[1], 0.5); }},
      {"mul", [](auto& v) { return v[0] * v[1]; }},
      {"div", [](auto& v) { return v[0] / v[2]; }},
      {"maximum", [](auto& v) { return maximum(v[0], v[1]); }},
      {"minimum", [](auto& v) { return minimum(v[0], v[1]); }},
      {"pow tensor", [](auto& v) { return pow(v[2], v[0]); }},
      {"pow scalar", [](auto& v) { return pow(v[0], 3); }},
      {"pow fractional", [](auto& v) { return v[2].pow(1.5); }},
      {"tensor + scalar", [](auto& v) { return v[0] + 2.0; }},
      {"scalar - tensor", [](auto& v) { return 2.0 - v[1]; }},
      {"tensor * scalar", [](auto& v) { return v[0] * 3; }},
      {"tensor / scalar", [](auto& v) { return v[1] / 4.0; }},
      {"scalar / tensor", [](auto& v) { return 1.0 / v[2]; }},
      {"negation", [](auto& v) { return -v[0]; }},
      {"chained", [](auto& v) { return (v[0] * v[1] - v[2]).pow(2) / (v[2] + 1.0); }},
  };
  for (const auto& [name, f] : ops) expect_same(name, {leaf(a), leaf(b), leaf(pos)}, f);

  // Comparisons and logical ops (no gradient).
  const std::vector<std::pair<std::string, Fn>> compare = {
      {"eq", [](auto& v) { return v[0] == v[1]; }},
      {"ne", [](auto& v) { return v[0] != v[1]; }},
      {"lt", [](auto& v) { return v[0] < v[1]; }},
      {"le scalar", [](auto& v) { return v[0] <= 0.0; }},
      {"gt", [](auto& v) { return gt(v[0], v[1]); }},
      {"ge scalar", [](auto& v) { return v[1] >= 0.5; }},
      {"logical_and", [](auto& v) { return logical_and(v[0] > 0.0, v[1] > 0.0); }},
      {"logical_or", [](auto& v) { return logical_or(v[0] > 0.0, v[1] > 0.0); }},
      {"logical_not", [](auto& v) { return logical_not(v[0] > 0.0); }},
  };
  for (const auto& [name, f] : compare) expect_same(name, {constant(a), constant(b)}, f);

  // Type promotion with integer tensors; in-place forms.
  expect_same("int64 + float", {constant(randint(0, 5, {2, 4})), leaf(b)}, [](auto& v) { return v[0] + v[1]; });
  expect_same("int / int", {constant(randint(1, 5, {3})), constant(randint(1, 5, {3}))},
              [](auto& v) { return v[0] / v[1]; });
  expect_same("in-place", {constant(a), constant(b)}, [](auto& v) {
    Tensor t = (v[0] + v[1]).clone();
    t += v[1];
    t -= 1.0;
    t *= v[1];
    t /= 2.0;
    t.add_(v[1], 0.5);
    t.mul_(3.0);
    return t;
  });
}

TEST_F(DevicePlacement, ZeroDimTensorOperands) {
  // A 0-dim tensor on the device joins any op, with and without gradients.
  const Tensor x = randn({2, 3}), s = scalar_tensor(1.5);
  expect_same("device 0-dim * tensor", {leaf(x), leaf(s)}, [](auto& v) { return v[0] * v[1] + v[1]; });
  expect_same("0-dim result", {leaf(s)}, [](auto& v) { return v[0].exp() * 2.0; });
}

TEST_F(DevicePlacement, CpuScalarTensorJoinsADeviceOp) {
  // PyTorch lets a 0-dim CPU tensor join an element-wise op on another device
  // (ops::common_device allows it too): the scalar must then reach the device kernel in device
  // memory, and its gradient must come back to the CPU.
  const Tensor x = randn({2, 3});
  auto cpu_scalar = [] { return scalar_tensor(2.0).to(kCpu); };
  const std::vector<std::pair<std::string, Fn>> ops = {
      {"tensor * cpu scalar", [&](auto& v) { return v[0] * cpu_scalar(); }},
      {"cpu scalar + tensor", [&](auto& v) { return cpu_scalar() + v[0]; }},
      {"add alpha", [&](auto& v) { return add(v[0], cpu_scalar(), 0.5); }},
      {"pow", [&](auto& v) { return pow(v[0], cpu_scalar()); }},
      {"maximum", [&](auto& v) { return maximum(v[0], cpu_scalar()); }},
      {"comparison", [&](auto& v) { return (v[0] > cpu_scalar()).to(kFloat32) * v[0]; }},
      {"where", [&](auto& v) { return where(v[0] > 0.0, v[0], cpu_scalar()); }},
      {"in-place add_", [&](auto& v) { return v[0].detach().clone().add_(cpu_scalar()) * v[0]; }},
  };
  for (const auto& [name, f] : ops) expect_same(name, {leaf(x)}, f);
  // A CPU 0-dim leaf that requires grad: its gradient lands on the CPU, as in PyTorch.
  Tensor s = scalar_tensor(2.0).requires_grad_();
  Tensor xd = on(x).requires_grad_();
  ASSERT_EQ(full_error_of([&] { (xd * s).sum().backward(); }), "no error");
  ASSERT_TRUE(s.grad().defined());
  EXPECT_EQ(s.grad().device(), kCpu);
  EXPECT_EQ(xd.grad().device(), dev());
}

TEST_F(DevicePlacement, UnaryOps) {
  const Tensor x = randn({3, 5}), pos = rand({3, 5}) + 0.1;
  const std::vector<std::pair<std::string, Fn>> ops = {
      {"neg", [](auto& v) { return neg(v[0]); }},
      {"abs", [](auto& v) { return abs(v[0]); }},
      {"exp", [](auto& v) { return exp(v[0]); }},
      {"log", [](auto& v) { return log(v[1]); }},
      {"sqrt", [](auto& v) { return sqrt(v[1]); }},
      {"rsqrt", [](auto& v) { return rsqrt(v[1]); }},
      {"sin", [](auto& v) { return sin(v[0]); }},
      {"cos", [](auto& v) { return cos(v[0]); }},
      {"tanh", [](auto& v) { return tanh(v[0]); }},
      {"erf", [](auto& v) { return erf(v[0]); }},
      {"sigmoid", [](auto& v) { return sigmoid(v[0]); }},
      {"relu", [](auto& v) { return relu(v[0]); }},
      {"gelu", [](auto& v) { return gelu(v[0]); }},
      {"gelu tanh", [](auto& v) { return gelu(v[0], "tanh"); }},
      {"silu", [](auto& v) { return silu(v[0]); }},
      {"F::relu", [](auto& v) { return F::relu(v[0]); }},
      {"F::gelu", [](auto& v) { return F::gelu(v[0], "tanh"); }},
      {"F::silu", [](auto& v) { return F::silu(v[0]); }},
      {"F::tanh", [](auto& v) { return F::tanh(v[0]); }},
      {"F::sigmoid", [](auto& v) { return F::sigmoid(v[0]); }},
  };
  for (const auto& [name, f] : ops) expect_same(name, {leaf(x), leaf(pos)}, f);
  const double inf = std::numeric_limits<double>::infinity(), nan = std::numeric_limits<double>::quiet_NaN();
  const Tensor special = tensor({1.0, -inf, inf, nan, 0.0});
  expect_same("isfinite", {constant(special)}, [](auto& v) { return isfinite(v[0]); });
  expect_same("isnan", {constant(special)}, [](auto& v) { return isnan(v[0]); });
  expect_same("isinf", {constant(special)}, [](auto& v) { return isinf(v[0]); });
  expect_same("float64 chain", {leaf(x.to(kFloat64))}, [](auto& v) { return tanh(v[0]).exp().log(); });
}

TEST_F(DevicePlacement, WhereAndClamp) {
  const Tensor x = randn({4, 3}), y = randn({3}), c = randn({4, 1}) > 0.0;
  expect_same("where", {constant(c), leaf(x), leaf(y)}, [](auto& v) { return where(v[0], v[1], v[2]); });
  expect_same("where from a comparison", {leaf(x)}, [](auto& v) { return where(v[0] > 0.0, v[0], v[0] * 0.1); });
  expect_same("clamp both", {leaf(x)}, [](auto& v) { return clamp(v[0], -0.5, 0.5); });
  expect_same("clamp min", {leaf(x)}, [](auto& v) { return v[0].clamp(0.0); });
  expect_same("clamp max", {leaf(x)}, [](auto& v) { return clamp(v[0], std::nullopt, 0.25); });
  expect_same("clamp int", {constant(randint(-5, 5, {6}))}, [](auto& v) { return clamp(v[0], -2, 3); });
}

// ---------------------------------------------------------------------------------------------
// Reductions and linear algebra.

TEST_F(DevicePlacement, Reductions) {
  const Tensor x = randn({3, 4, 5});
  const std::vector<std::pair<std::string, Fn>> ops = {
      {"sum", [](auto& v) { return v[0].sum(); }},
      {"sum dims",
       [](auto& v) {
         return sum(v[0], {0, 2});
       }},
      {"sum keepdim", [](auto& v) { return sum(v[0], {1}, true); }},
      {"mean", [](auto& v) { return v[0].mean(); }},
      {"mean dim", [](auto& v) { return mean(v[0], {-1}); }},
      {"prod", [](auto& v) { return v[0].prod(); }},
      {"prod dim", [](auto& v) { return prod(v[0], 1, true); }},
      {"max", [](auto& v) { return v[0].max(); }},
      {"min", [](auto& v) { return v[0].min(); }},
      {"amax",
       [](auto& v) {
         return amax(v[0], {0, 2});
       }},
      {"amin keepdim", [](auto& v) { return amin(v[0], {1}, true); }},
      {"max(dim) values", [](auto& v) { return std::get<0>(ember::max(v[0], 1)); }},
      {"max(dim) keepdim", [](auto& v) { return std::get<0>(ember::max(v[0], -1, true)); }},
      {"min(dim) values", [](auto& v) { return std::get<0>(ember::min(v[0], 2)); }},
      {"var", [](auto& v) { return v[0].var(); }},
      {"var dims",
       [](auto& v) {
         return var(v[0], {0, 1});
       }},
      {"var population keepdim", [](auto& v) { return var(v[0], {2}, 0, true); }},
      {"std", [](auto& v) { return v[0].std(); }},
      {"std dim", [](auto& v) { return ember::std(v[0], {1}, 1, true); }},
  };
  for (const auto& [name, f] : ops) expect_same(name, {leaf(x)}, f);
  expect_same("max(dim) indices", {constant(x)}, [](auto& v) { return std::get<1>(ember::max(v[0], 1)); });
  expect_same("min(dim) indices", {constant(x)}, [](auto& v) { return std::get<1>(ember::min(v[0], 0, true)); });
  expect_same("argmax", {constant(x)}, [](auto& v) { return v[0].argmax(); });
  expect_same("argmax dim", {constant(x)}, [](auto& v) { return argmax(v[0], 2); });
  expect_same("argmin dim keepdim", {constant(x)}, [](auto& v) { return argmin(v[0], 1, true); });
  expect_same("sum int64", {constant(randint(0, 9, {4, 3}))}, [](auto& v) { return sum(v[0], {1}); });
  expect_same("sum bool", {constant(x > 0.0)}, [](auto& v) { return v[0].sum(); });
  expect_same("mean of a view", {leaf(x)}, [](auto& v) { return v[0].transpose(0, 2).mean({1}); });
  // Ties spread the gradient of a full max over the tied elements.
  expect_same("max with ties", {leaf(tensor({1.0f, 3.0f, 3.0f, 2.0f}))}, [](auto& v) { return v[0].max(); });
  expect_same("amax with ties", {leaf(tensor({{1.0f, 3.0f, 3.0f}, {2.0f, 2.0f, 0.0f}}))},
              [](auto& v) { return amax(v[0], {1}); });
}

TEST_F(DevicePlacement, MatmulAndLinear) {
  expect_same("mm", {leaf(randn({3, 4})), leaf(randn({4, 5}))}, [](auto& v) { return mm(v[0], v[1]); });
  expect_same("matmul 2-D", {leaf(randn({3, 4})), leaf(randn({4, 2}))}, [](auto& v) { return v[0].matmul(v[1]); });
  expect_same("matmul batched broadcast", {leaf(randn({2, 3, 4})), leaf(randn({4, 5}))},
              [](auto& v) { return matmul(v[0], v[1]); });
  expect_same("matmul broadcast batch dims", {leaf(randn({2, 1, 3, 4})), leaf(randn({3, 4, 2}))},
              [](auto& v) { return matmul(v[0], v[1]); });
  expect_same("matmul vector-matrix", {leaf(randn({4})), leaf(randn({4, 3}))},
              [](auto& v) { return matmul(v[0], v[1]); });
  expect_same("matmul matrix-vector", {leaf(randn({3, 4})), leaf(randn({4}))},
              [](auto& v) { return matmul(v[0], v[1]); });
  expect_same("dot", {leaf(randn({4})), leaf(randn({4}))}, [](auto& v) { return matmul(v[0], v[1]); });
  expect_same("bmm", {leaf(randn({2, 3, 4})), leaf(randn({2, 4, 5}))}, [](auto& v) { return bmm(v[0], v[1]); });
  expect_same("mm transposed", {leaf(randn({4, 3})), leaf(randn({5, 4}))},
              [](auto& v) { return mm(v[0].t(), v[1].t()); });
  expect_same("linear", {leaf(randn({5, 4})), leaf(randn({3, 4})), leaf(randn({3}))},
              [](auto& v) { return F::linear(v[0], v[1], v[2]); });
  expect_same("linear 3-D no bias", {leaf(randn({2, 5, 4})), leaf(randn({3, 4}))},
              [](auto& v) { return F::linear(v[0], v[1]); });
  expect_same("linear float64",
              {leaf(randn({5, 4}, kFloat64)), leaf(randn({3, 4}, kFloat64)), leaf(randn({3}, kFloat64))},
              [](auto& v) { return F::linear(v[0], v[1], v[2]); });
}

TEST_F(DevicePlacement, SoftmaxAndLogSoftmax) {
  const Tensor x = randn({4, 6});
  expect_same("softmax", {leaf(x)}, [](auto& v) { return softmax(v[0], 1); });
  expect_same("softmax dim 0", {leaf(x)}, [](auto& v) { return v[0].softmax(0); });
  expect_same("log_softmax", {leaf(x)}, [](auto& v) { return log_softmax(v[0], -1); });
  expect_same("log_softmax 3-D middle", {leaf(randn({2, 5, 3}))}, [](auto& v) { return v[0].log_softmax(1); });
  expect_same("F::softmax", {leaf(x)}, [](auto& v) { return F::softmax(v[0], 1); });
  expect_same("F::log_softmax", {leaf(x)}, [](auto& v) { return F::log_softmax(v[0], 0); });
}

// ---------------------------------------------------------------------------------------------
// Losses.

TEST_F(DevicePlacement, CrossEntropy) {
  const Tensor logits = randn({6, 5});
  const Tensor target = tensor(std::vector<int64_t>{0, 4, 2, 1, 3, 2});
  const Tensor ignored = tensor(std::vector<int64_t>{0, -100, 2, 1, -100, 4});
  const Tensor weight = rand({5}) + 0.5;
  using R = nn::Reduction;
  for (R r : {R::Mean, R::Sum, R::None}) {
    const std::string rn = r == R::Mean ? " mean" : r == R::Sum ? " sum" : " none";
    expect_same("cross_entropy" + rn, {leaf(logits), constant(target)},
                [r](auto& v) { return F::cross_entropy(v[0], v[1], r); });
    expect_same("cross_entropy weight" + rn, {leaf(logits), constant(target), constant(weight)},
                [r](auto& v) { return F::cross_entropy(v[0], v[1], r, 0.0, v[2]); });
    expect_same("cross_entropy label_smoothing" + rn, {leaf(logits), constant(target)},
                [r](auto& v) { return F::cross_entropy(v[0], v[1], r, 0.1); });
    expect_same("cross_entropy ignore_index" + rn, {leaf(logits), constant(ignored)},
                [r](auto& v) { return F::cross_entropy(v[0], v[1], r); });
    expect_same("cross_entropy ignore_index 2" + rn, {leaf(logits), constant(target)},
                [r](auto& v) { return F::cross_entropy(v[0], v[1], r, 0.0, Tensor(), 2); });
    expect_same("cross_entropy everything" + rn, {leaf(logits), constant(ignored), constant(weight)},
                [r](auto& v) { return F::cross_entropy(v[0], v[1], r, 0.2, v[2]); });
    expect_same("cross_entropy probabilities" + rn, {leaf(logits), constant(softmax(randn({6, 5}), 1))},
                [r](auto& v) { return F::cross_entropy(v[0], v[1], r); });
    expect_same("cross_entropy probabilities weight smoothing" + rn,
                {leaf(logits), constant(softmax(randn({6, 5}), 1)), constant(weight)},
                [r](auto& v) { return F::cross_entropy(v[0], v[1], r, 0.1, v[2]); });
  }
  // [N, C, d] inputs, a single sample [C], float64, and the module (its weight is a buffer that
  // Module::to moves).
  expect_same("cross_entropy spatial", {leaf(randn({2, 4, 3})), constant(randint(0, 4, {2, 3}))},
              [](auto& v) { return F::cross_entropy(v[0], v[1], R::Mean, 0.05); });
  expect_same("cross_entropy unbatched", {leaf(randn({5})), constant(scalar_tensor(int64_t{3}))},
              [](auto& v) { return F::cross_entropy(v[0], v[1]); });
  expect_same("cross_entropy float64", {leaf(logits.to(kFloat64)), constant(ignored), constant(weight.to(kFloat64))},
              [](auto& v) { return F::cross_entropy(v[0], v[1], R::Mean, 0.1, v[2]); });
  nn::CrossEntropyLoss cpu_loss(weight, -100, R::Mean, 0.1);
  nn::CrossEntropyLoss dev_loss(weight.clone(), -100, R::Mean, 0.1);
  dev_loss.to(dev());
  EXPECT_EQ(dev_loss.weight.device(), dev());
  Tensor got = dev_loss(on(logits), on(ignored));
  EXPECT_TRUE(close_to_cpu(got, cpu_loss(logits, ignored), 0, 0, "CrossEntropyLoss module"));
}

TEST_F(DevicePlacement, NllMseAndBceLosses) {
  const Tensor logp = log_softmax(randn({6, 5}), 1);
  const Tensor target = tensor(std::vector<int64_t>{0, 4, 2, 1, 3, 2});
  const Tensor ignored = tensor(std::vector<int64_t>{0, 4, -1, 1, 3, -1});
  const Tensor weight = rand({5}) + 0.5;
  using R = nn::Reduction;
  for (R r : {R::Mean, R::Sum, R::None}) {
    const std::string rn = r == R::Mean ? " mean" : r == R::Sum ? " sum" : " none";
    expect_same("nll_loss" + rn, {leaf(logp), constant(target)}, [r](auto& v) { return F::nll_loss(v[0], v[1], r); });
    expect_same("nll_loss weight ignore_index" + rn, {leaf(logp), constant(ignored), constant(weight)},
                [r](auto& v) { return F::nll_loss(v[0], v[1], r, v[2], -1); });
    expect_same("mse_loss" + rn, {leaf(randn({4, 3})), leaf(randn({4, 3}))},
                [r](auto& v) { return F::mse_loss(v[0], v[1], r); });
    expect_same("bce_with_logits" + rn, {leaf(randn({4, 3})), constant(rand({4, 3}))},
                [r](auto& v) { return F::binary_cross_entropy_with_logits(v[0], v[1], r); });
    expect_same("bce_with_logits pos_weight" + rn,
                {leaf(randn({4, 3})), constant(rand({4, 3})), constant(rand({3}) + 1.0)},
                [r](auto& v) { return F::binary_cross_entropy_with_logits(v[0], v[1], r, v[2]); });
  }
  expect_same("nll_loss spatial", {leaf(log_softmax(randn({2, 4, 3}), 1)), constant(randint(0, 4, {2, 3}))},
              [](auto& v) { return F::nll_loss(v[0], v[1]); });
  expect_same("mse_loss broadcast", {leaf(randn({4, 3})), leaf(randn({3}))}, [](auto& v) {
    return F::mse_loss(v[0], v[1].expand({4, 3}));
  });
  // The loss modules, with their weight buffers moved by Module::to.
  nn::NLLLoss cpu_nll(weight, -1);
  nn::NLLLoss dev_nll(weight.clone(), -1);
  dev_nll.to(dev());
  EXPECT_TRUE(close_to_cpu(dev_nll(on(logp), on(ignored)), cpu_nll(logp, ignored), 0, 0, "NLLLoss module"));
  nn::MSELoss mse;
  Tensor a = randn({3, 2}), b = randn({3, 2});
  EXPECT_TRUE(close_to_cpu(mse(on(a), on(b)), mse(a, b), 0, 0, "MSELoss module"));
  nn::BCEWithLogitsLoss cpu_bce(nn::Reduction::Mean, full({2}, 2.0));
  nn::BCEWithLogitsLoss dev_bce(nn::Reduction::Mean, full({2}, 2.0));
  dev_bce.to(dev());
  Tensor t = rand({3, 2});
  EXPECT_TRUE(close_to_cpu(dev_bce(on(a), on(t)), cpu_bce(a, t), 0, 0, "BCEWithLogitsLoss module"));
}

// ---------------------------------------------------------------------------------------------
// Views, joins and indexing.

TEST_F(DevicePlacement, ViewsWithBackward) {
  const Tensor x = randn({4, 5, 3});
  const std::vector<std::pair<std::string, Fn>> ops = {
      {"select", [](auto& v) { return v[0].select(1, 2); }},
      {"select negative", [](auto& v) { return v[0].select(-1, -1); }},
      {"operator[]", [](auto& v) { return v[0][3]; }},
      {"operator[][]", [](auto& v) { return v[0][1][2]; }},
      {"slice", [](auto& v) { return v[0].slice(1, 1, 4); }},
      {"slice step", [](auto& v) { return v[0].slice(0, std::nullopt, std::nullopt, 2); }},
      {"slice clamped", [](auto& v) { return v[0].slice(2, -2, 100); }},
      {"narrow", [](auto& v) { return v[0].narrow(1, 2, 2); }},
      {"transpose", [](auto& v) { return v[0].transpose(0, 2); }},
      {"permute",
       [](auto& v) {
         return v[0].permute({2, 0, 1});
       }},
      {"t", [](auto& v) { return v[0][0].t(); }},
      {"view",
       [](auto& v) {
         return v[0].view({20, 3});
       }},
      {"reshape of a transpose", [](auto& v) { return v[0].transpose(0, 1).reshape({-1}); }},
      {"flatten", [](auto& v) { return v[0].flatten(1); }},
      {"F::flatten", [](auto& v) { return F::flatten(v[0]); }},
      {"squeeze unsqueeze", [](auto& v) { return v[0].unsqueeze(1).squeeze(1).unsqueeze(0).squeeze(); }},
      {"expand",
       [](auto& v) {
         return v[0].select(1, 0).unsqueeze(0).expand({2, 4, 3});
       }},
      {"expand_as", [](auto& v) { return v[0].narrow(0, 0, 1).expand_as(v[0]); }},
      {"as_strided",
       [](auto& v) {
         return v[0].as_strided({3, 3}, {1, 3}, 2);
       }},
      {"contiguous of a view", [](auto& v) { return v[0].transpose(1, 2).contiguous(); }},
      {"clone of a view", [](auto& v) { return v[0].slice(1, 0, 5, 2).clone(); }},
      {"detach", [](auto& v) { return v[0].detach() * 2.0 + v[0]; }},
      {"overlapping uses",
       [](auto& v) { return v[0].select(0, 0) * v[0].select(0, 1) + v[0].narrow(0, 1, 1).squeeze(0); }},
  };
  for (const auto& [name, f] : ops) expect_same(name, {leaf(x)}, f);
}

TEST_F(DevicePlacement, CatAndStack) {
  const Tensor a = randn({2, 3}), b = randn({4, 3}), c = randn({2, 3});
  expect_same("cat dim 0", {leaf(a), leaf(b)}, [](auto& v) { return cat({v[0], v[1]}); });
  expect_same("cat dim 1", {leaf(a), leaf(c)}, [](auto& v) { return cat({v[0], v[1]}, 1); });
  expect_same("cat with a constant", {leaf(a), constant(c)}, [](auto& v) { return cat({v[0], v[1], v[0]}, -1); });
  expect_same("cat of views", {leaf(b)}, [](auto& v) { return cat({v[0].t(), v[0].t().narrow(1, 0, 2)}, 1); });
  expect_same("stack", {leaf(a), leaf(c)}, [](auto& v) { return stack({v[0], v[1]}); });
  expect_same("stack dim -1", {leaf(a), leaf(c)}, [](auto& v) { return stack({v[0], v[1], v[0]}, -1); });
  expect_same("cat int64", {constant(randint(0, 5, {3})), constant(randint(0, 5, {2}))}, [](auto& v) {
    return cat({v[0], v[1]});
  });
}

TEST_F(DevicePlacement, IndexSelectGatherScatterAdd) {
  const Tensor x = randn({4, 5});
  const Tensor idx = tensor(std::vector<int64_t>{3, 0, 3, 1});
  expect_same("index_select dim 0", {leaf(x), constant(idx)}, [](auto& v) { return index_select(v[0], 0, v[1]); });
  expect_same("index_select dim 1", {leaf(x), constant(idx)}, [](auto& v) { return v[0].index_select(1, v[1]); });
  expect_same("index_select 0-dim index", {leaf(x), constant(scalar_tensor(int64_t{2}))},
              [](auto& v) { return index_select(v[0], 0, v[1]); });
  const Tensor gidx = randint(0, 5, {4, 3});
  expect_same("gather dim 1", {leaf(x), constant(gidx)}, [](auto& v) { return gather(v[0], 1, v[1]); });
  expect_same("gather dim 0", {leaf(x), constant(randint(0, 4, {2, 5}))}, [](auto& v) { return v[0].gather(0, v[1]); });
  expect_same("scatter_add", {leaf(x), constant(gidx), leaf(randn({4, 3}))},
              [](auto& v) { return scatter_add(v[0], 1, v[1], v[2]); });
  expect_same("scatter_add dim 0", {leaf(x), constant(randint(0, 4, {3, 5})), leaf(randn({3, 5}))},
              [](auto& v) { return v[0].scatter_add(0, v[1], v[2]); });
}

TEST_F(DevicePlacement, InplaceWritesWithBackward) {
  // The nodes an in-place write records (CopySlices, AsStridedBackward0, CopyBackwards) build
  // their index buffers and zeros in their backward pass: they must land on the gradient's device.
  const Tensor x = randn({3, 4}), y = randn({4});
  auto buffer_like = [](const Tensor& t, IntList sizes) {
    return zeros(sizes, TensorOptions(t.dtype()).device(t.device()));
  };
  expect_same("add_ mul_ div_ on a result", {leaf(x), leaf(y)}, [](auto& v) {
    Tensor h = v[0] * 2.0;
    h.add_(v[1]);
    h.mul_(v[1]);
    h.div_(v[1] * v[1] + 1.0);
    return h;
  });
  expect_same("a row written through a view", {leaf(x), leaf(y)}, [](auto& v) {
    Tensor h = v[0] * 1.0;
    Tensor old_row = h.select(0, 2);
    h.select(0, 1).mul_(v[1]);
    h.slice(1, 0, 4, 2).fill_(0.5);
    return cat({h.reshape({-1}), old_row});
  });
  expect_same("copy_ into a buffer that needed no gradient", {leaf(x), leaf(y)}, [&](auto& v) {
    Tensor states = buffer_like(v[0], {2, 3, 4});
    states.select(0, 0).copy_(v[0]);
    states.select(0, 1).select(1, 3).copy_(v[1].narrow(0, 0, 3));
    return states;
  });
  expect_same("a view of a base that is not contiguous", {leaf(y)}, [&](auto& v) {
    Tensor m = buffer_like(v[0], {4, 2}).t().detach();
    m.select(0, 1).copy_(v[0]);
    return m * 3.0;
  });
  expect_same("masked_fill with a 0-dim value from the CPU, relu_, clamp_", {leaf(x), leaf(scalar_tensor(0.3))},
              [](auto& v) {
                Tensor h = v[0].masked_fill(v[0] > 0.5, v[1].to(Device(DeviceType::CPU)));
                h.masked_fill_(v[0] < -1.0, 0.25);
                h.clamp_(-0.5, std::nullopt);
                h.relu_();
                return h * v[0];
              });
  expect_same("copy_ from a CPU tensor", {leaf(y)}, [&](auto& v) {
    Tensor cpu_source = v[0].to(Device(DeviceType::CPU)) * 2.0;  // on the CPU run, a plain copy
    Tensor h = buffer_like(v[0], {4});
    h.copy_(cpu_source);
    return h * v[0];
  });
}

}  // namespace
