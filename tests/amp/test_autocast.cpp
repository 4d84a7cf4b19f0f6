// ember::amp::autocast against PyTorch 2.15: the result dtype of each op in a CPU region (the
// table in tests/amp/golden/autocast_golden.safetensors, from tools/gen_autocast_golden.py), a
// small CNN and an LSTM trained one step in a bfloat16 region against PyTorch's values, CUDA's
// lists on the stand-in device, and the region's rules (nesting, threads, the weight cache,
// backward and checkpointing).
#include <gtest/gtest.h>

#include <functional>
#include <map>
#include <set>
#include <string>
#include <thread>

#include "amp/autocast_policy.h"
#include "ember/ember.h"
#include "ember/io/safetensors.h"
#include "support/collect_warnings.h"
#include "support/error_of.h"
#include "support/golden_cases.h"
#include "support/host_device_backend.h"

namespace {

using namespace ember;
using amp::autocast;
namespace F = nn::functional;

const io::SafetensorsData& golden() {
  static const io::SafetensorsData data =
      io::load_safetensors(EMBER_SOURCE_DIR "/tests/amp/golden/autocast_golden.safetensors");
  return data;
}

using Op = std::function<Tensor(const Tensor& x, const Tensor& y, const Tensor& w)>;

// The ops of tools/gen_autocast_golden.py, written with ember's API.
const std::map<std::string, Op>& ops() {
  static const std::map<std::string, Op> table = {
      {"matmul", [](const Tensor& x, const Tensor& y, const Tensor&) { return matmul(x, y); }},
      {"mm", [](const Tensor& x, const Tensor& y, const Tensor&) { return mm(x, y); }},
      {"bmm", [](const Tensor& x, const Tensor& y, const Tensor&) { return bmm(x.unsqueeze(0), y.unsqueeze(0)); }},
      {"linear", [](const Tensor& x, const Tensor& y, const Tensor&) { return F::linear(x, y); }},
      {"conv1d",
       [](const Tensor& x, const Tensor& y, const Tensor&) { return F::conv1d(x.unsqueeze(0), y.unsqueeze(2)); }},
      {"conv2d",
       [](const Tensor& x, const Tensor& y, const Tensor&) {
         return F::conv2d(x.unsqueeze(0).unsqueeze(0), y.slice(0, 0, 2).slice(1, 0, 2).unsqueeze(0).unsqueeze(0));
       }},
      {"sdpa",
       [](const Tensor& x, const Tensor& y, const Tensor&) {
         return F::scaled_dot_product_attention(x.unsqueeze(0), y.unsqueeze(0), x.unsqueeze(0));
       }},
      {"exp", [](const Tensor& x, const Tensor&, const Tensor&) { return exp(x); }},
      {"log", [](const Tensor& x, const Tensor&, const Tensor&) { return log(abs(x)); }},
      {"rsqrt", [](const Tensor& x, const Tensor&, const Tensor&) { return rsqrt(abs(x)); }},
      {"pow_scalar", [](const Tensor& x, const Tensor&, const Tensor&) { return pow(x, 2); }},
      {"pow_tensor", [](const Tensor& x, const Tensor& y, const Tensor&) { return pow(abs(x), y); }},
      {"tanh", [](const Tensor& x, const Tensor&, const Tensor&) { return tanh(x); }},
      {"relu", [](const Tensor& x, const Tensor&, const Tensor&) { return relu(x); }},
      {"gelu", [](const Tensor& x, const Tensor&, const Tensor&) { return gelu(x); }},
      {"add", [](const Tensor& x, const Tensor& y, const Tensor&) { return x + y; }},
      {"mul", [](const Tensor& x, const Tensor& y, const Tensor&) { return x * y; }},
      {"sum", [](const Tensor& x, const Tensor&, const Tensor&) { return sum(x); }},
      {"mean", [](const Tensor& x, const Tensor&, const Tensor&) { return mean(x); }},
      {"prod", [](const Tensor& x, const Tensor&, const Tensor&) { return prod(x); }},
      {"softmax", [](const Tensor& x, const Tensor&, const Tensor&) { return softmax(x, 1); }},
      {"log_softmax", [](const Tensor& x, const Tensor&, const Tensor&) { return log_softmax(x, 1); }},
      {"layer_norm", [](const Tensor& x, const Tensor&, const Tensor&) { return F::layer_norm(x, {4}); }},
      {"group_norm", [](const Tensor& x, const Tensor&, const Tensor&) { return F::group_norm(x.unsqueeze(0), 2); }},
      {"nll_loss",
       [](const Tensor& x, const Tensor&, const Tensor&) {
         return F::nll_loss(x, tensor({0, 1, 2, 3}, TensorOptions(kInt64).device(x.device())));
       }},
      {"cross_entropy",
       [](const Tensor& x, const Tensor&, const Tensor&) {
         return F::cross_entropy(x, tensor({0, 1, 2, 3}, TensorOptions(kInt64).device(x.device())));
       }},
      {"mse_loss", [](const Tensor& x, const Tensor& y, const Tensor&) { return F::mse_loss(x, y); }},
      {"bce_with_logits", [](const Tensor& x, const Tensor& y,
                             const Tensor&) { return F::binary_cross_entropy_with_logits(x, sigmoid(y)); }},
      {"cat",
       [](const Tensor& x, const Tensor& y, const Tensor&) {
         return cat({x, y});
       }},
      {"stack",
       [](const Tensor& x, const Tensor& y, const Tensor&) {
         return stack({x, y});
       }},
      {"where", [](const Tensor& x, const Tensor& y, const Tensor&) { return where(x > 0, x, y); }},
      {"dropout", [](const Tensor& x, const Tensor&, const Tensor&) { return F::dropout(x, 0.5); }},
      {"max_pool2d",
       [](const Tensor& x, const Tensor&, const Tensor&) { return F::max_pool2d(x.unsqueeze(0).unsqueeze(0), {2}); }},
  };
  return table;
}

Dtype dtype_named(const std::string& name) {
  for (Dtype d : {kFloat32, kFloat64, kFloat16, kBFloat16}) {
    if (std::string(dtype_name(d)) == "torch." + name) return d;
  }
  throw std::runtime_error("unknown dtype " + name);
}

/// The result dtype of every op for float32, lower-precision and mixed inputs on `device`,
/// against `want` ("op:inputs:dtype;...").
void expect_dtype_table(const Device& device, Dtype low, const std::string& want) {
  int checked = 0;
  for (const std::string& entry : ember_test::split_commas([&] {
         std::string s = want;
         for (char& c : s) c = c == ';' ? ',' : c;
         return s;
       }())) {
    const size_t a = entry.find(':'), b = entry.rfind(':');
    const std::string name = entry.substr(0, a), inputs = entry.substr(a + 1, b - a - 1), result = entry.substr(b + 1);
    SCOPED_TRACE(name + " with " + inputs + " inputs");
    manual_seed(0);
    const TensorOptions opts = TensorOptions(kFloat32).device(device);
    Tensor x = randn({4, 4}, opts), y = randn({4, 4}, opts), w = randn({4, 4}, opts);
    if (inputs == "low") x = x.to(low), y = y.to(low), w = w.to(low);
    if (inputs == "mixed") y = y.to(low);
    ASSERT_TRUE(ops().count(name)) << "no ember op for " << name;
    autocast region(device.type(), low);
    if (result == "error") {
      EXPECT_THROW(ops().at(name)(x, y, w), Error);
    } else {
      EXPECT_EQ(ops().at(name)(x, y, w).dtype(), dtype_named(result));
    }
    ++checked;
  }
  EXPECT_EQ(checked, 3 * static_cast<int>(ops().size()));
}

TEST(Autocast, CpuResultDtypesArePyTorchsForBFloat16) {
  expect_dtype_table(Device("cpu"), kBFloat16, golden().metadata.at("dtypes.bfloat16"));
}

TEST(Autocast, CpuResultDtypesArePyTorchsForFloat16) {
  expect_dtype_table(Device("cpu"), kFloat16, golden().metadata.at("dtypes.float16"));
}

// CUDA's and MPS's lists (ATen's autocast_mode.h, PyTorch 2.15) add exp, log, rsqrt, pow, sum,
// softmax, log_softmax, layer_norm and group_norm to the float32 ops. The stand-in device (mps:0
// here) runs the CPU's kernels under the MPS device type, so these are the GPU rules, checked
// without a GPU.
TEST(Autocast, GpuListsOnTheStandInDevice) {
  if (mps::is_built()) GTEST_SKIP() << "this build has a real MPS backend";
  ember_test::ScopedHostDevice stand_in;
  std::string table;
  const std::set<std::string> lower = {"matmul", "mm", "bmm", "linear", "conv1d", "conv2d", "sdpa"};
  const std::set<std::string> fp32 = {"exp",        "log",      "rsqrt",         "pow_scalar",  "pow_tensor",
                                      "sum",        "prod",     "softmax",       "log_softmax", "layer_norm",
                                      "group_norm", "nll_loss", "cross_entropy", "mse_loss",    "bce_with_logits"};
  for (const std::string inputs : {"float32", "low", "mixed"}) {
    for (const auto& [name, op] : ops()) {
      std::string result = inputs == "low" ? "float16" : "float32";
      if (lower.count(name)) result = "float16";
      if (fp32.count(name)) result = "float32";
      table += name + ":" + inputs + ":" + result + ";";
    }
  }
  table.pop_back();
  expect_dtype_table(Device("mps"), kFloat16, table);
}

TEST(Autocast, OnlyFloatingTensorsOfTheRegionsDeviceTypeAreCast) {
  const Tensor a = randn({3, 3}), b = randn({3, 3});
  {
    autocast region(kCUDA, std::nullopt, true);  // no CUDA here: disabled with a warning
    EXPECT_EQ(matmul(a, b).dtype(), kFloat32);
  }
  autocast region(kCPU);
  EXPECT_EQ(matmul(a, b).dtype(), kBFloat16);
  EXPECT_EQ(matmul(a.to(kFloat64), b.to(kFloat64)).dtype(), kFloat64);  // float64 is never cast
  const Tensor i = randint(0, 5, {3, 3});
  EXPECT_EQ(sum(i).dtype(), kInt64);
  EXPECT_EQ(prod(i).dtype(), kInt64);
  // A cast is recorded: gradients reach the float32 leaves, in float32.
  Tensor w = randn({3, 3}).requires_grad_();
  Tensor out = matmul(a, w);
  EXPECT_EQ(out.dtype(), kBFloat16);
  out.sum().backward();
  ASSERT_TRUE(w.grad().defined());
  EXPECT_EQ(w.grad().dtype(), kFloat32);
}

TEST(Autocast, MatchesCastingByHand) {
  manual_seed(3);
  const Tensor a = randn({5, 7}), b = randn({7, 6}), bias = randn({6});
  Tensor in_region, by_hand = F::linear(a.to(kBFloat16), b.t().to(kBFloat16), bias.to(kBFloat16));
  {
    autocast region(kCPU);
    in_region = F::linear(a, b.t(), bias);
  }
  EXPECT_TRUE(equal(in_region, by_hand));
}

TEST(Autocast, RegionsNestAndRestore) {
  EXPECT_FALSE(amp::is_autocast_enabled(kCPU));
  EXPECT_EQ(amp::get_autocast_dtype(kCPU), kBFloat16);
  EXPECT_EQ(amp::get_autocast_dtype(kCUDA), kFloat16);
  const Tensor a = randn({2, 2});
  {
    autocast outer(kCPU);
    EXPECT_TRUE(amp::is_autocast_enabled(kCPU));
    {
      autocast inner(kCPU, kFloat16);
      EXPECT_EQ(amp::get_autocast_dtype(kCPU), kFloat16);
      EXPECT_EQ(mm(a, a).dtype(), kFloat16);
      {
        autocast off(kCPU, std::nullopt, false);
        EXPECT_FALSE(amp::is_autocast_enabled(kCPU));
        EXPECT_EQ(mm(a, a).dtype(), kFloat32);
      }
      EXPECT_EQ(mm(a, a).dtype(), kFloat16);
    }
    EXPECT_EQ(amp::get_autocast_dtype(kCPU), kBFloat16);
    EXPECT_EQ(mm(a, a).dtype(), kBFloat16);
  }
  EXPECT_FALSE(amp::is_autocast_enabled(kCPU));
  EXPECT_EQ(mm(a, a).dtype(), kFloat32);
}

TEST(Autocast, StateIsPerThread) {
  autocast region(kCPU);
  const Tensor a = randn({2, 2});
  Dtype other = kFloat64;
  std::thread([&] { other = mm(a, a).dtype(); }).join();
  EXPECT_EQ(other, kFloat32);
  EXPECT_EQ(mm(a, a).dtype(), kBFloat16);
}

TEST(Autocast, UnsupportedDtypesAndDeviceTypesArePyTorchsMessages) {
  ember_test::CollectWarnings warnings;
  {
    autocast region(kCPU, kFloat32);
    EXPECT_FALSE(region.enabled());
    EXPECT_FALSE(amp::is_autocast_enabled(kCPU));
  }
  ASSERT_EQ(warnings.messages().size(), 1u);
  EXPECT_EQ(warnings.messages()[0],
            "In CPU autocast, but the target dtype is not supported. Disabling autocast.\n"
            "CPU Autocast only supports dtypes of torch.bfloat16, torch.float16 currently.");
  if (!cuda::is_available()) {
    autocast region("cuda");
    EXPECT_FALSE(region.enabled());
    EXPECT_EQ(warnings.messages().back(), "CUDA is not available. Disabling autocast.");
  }
  EXPECT_EQ(ember_test::error_of([] { autocast region("cuda:0"); }),
            "User specified an unsupported autocast device_type 'cuda:0'");
  EXPECT_NE(ember_test::error_of([] { amp::set_autocast_dtype(kCPU, kFloat32); }).find("torch.float16"),
            std::string::npos);
  // A disabled region with a usable dtype still sets it, as torch.autocast does.
  {
    autocast off(kCPU, kFloat16, false);
    EXPECT_EQ(amp::get_autocast_dtype(kCPU), kFloat16);
  }
  EXPECT_EQ(amp::get_autocast_dtype(kCPU), kBFloat16);
}

TEST(Autocast, ParametersAreCastOncePerRegion) {
  Tensor w = randn({4, 4}).requires_grad_();
  const Tensor x = randn({2, 4});
  Tensor first, second, later;
  {
    autocast region(kCPU);
    first = amp::detail::cast(w, kCPU, kBFloat16);
    second = amp::detail::cast(w, kCPU, kBFloat16);
    // Not leaves, or not requiring grad: cast afresh each time.
    EXPECT_FALSE(amp::detail::cast(x, kCPU, kBFloat16).is_same(amp::detail::cast(x, kCPU, kBFloat16)));
    // Used twice, the cached copy carries both gradients back.
    Tensor out = F::linear(x, w) + F::linear(2 * x, w);
    out.sum().backward();
  }
  EXPECT_TRUE(first.is_same(second));
  ASSERT_TRUE(w.grad().defined());
  EXPECT_TRUE(allclose(w.grad(), (3 * x).sum({0}).unsqueeze(0).expand({4, 4}), 2e-2, 2e-2)) << w.grad();
  {
    autocast region(kCPU);
    later = amp::detail::cast(w, kCPU, kBFloat16);
  }
  EXPECT_FALSE(later.is_same(first));  // the region's end cleared the cache
  {
    autocast region(kCPU, std::nullopt, true, /*cache_enabled=*/false);
    EXPECT_FALSE(amp::detail::cast(w, kCPU, kBFloat16).is_same(amp::detail::cast(w, kCPU, kBFloat16)));
  }
}

TEST(Autocast, BackwardInsideTheRegionEqualsBackwardAfterIt) {
  auto grads = [](bool inside) {
    manual_seed(4);
    nn::Linear layer(6, 3);
    const Tensor x = randn({5, 6});
    const Tensor target = tensor({0, 1, 2, 0, 1}, TensorOptions(kInt64));
    Tensor loss;
    {
      autocast region(kCPU);
      loss = F::cross_entropy(F::softmax(layer.forward(x), 1) * 3, target);
      EXPECT_EQ(loss.dtype(), kFloat32);
      if (inside) loss.backward();
    }
    if (!inside) loss.backward();
    return std::make_pair(layer.weight.grad(), layer.bias.grad());
  };
  const auto [w_in, b_in] = grads(true);
  const auto [w_out, b_out] = grads(false);
  EXPECT_EQ(w_in.dtype(), kFloat32);
  EXPECT_TRUE(equal(w_in, w_out));
  EXPECT_TRUE(equal(b_in, b_out));
}

// The engine runs backward functions (and the hooks among them) with autocast off, even when
// backward() is called inside a region: their inputs already have the forward's dtypes, and a
// GPU list would cast them again (a float32 sum of a float16 gradient).
TEST(Autocast, BackwardFunctionsRunWithAutocastOff) {
  const Tensor x = randn({2, 3});
  Tensor w = randn({3, 3}).requires_grad_();
  int active_in_backward = -1;
  autocast region(kCPU);
  Tensor y = mm(x, w);
  register_hook(y, [&](const Tensor& g) {
    active_in_backward = amp::detail::active_device_types();
    return g;
  });
  EXPECT_NE(amp::detail::active_device_types(), 0);
  y.sum().backward();
  EXPECT_EQ(active_in_backward, 0);
  EXPECT_NE(amp::detail::active_device_types(), 0);  // and back on afterwards
}

TEST(Autocast, CheckpointRecomputesUnderTheForwardsRegion) {
  auto grad_of = [](bool checkpointed) {
    manual_seed(5);
    Tensor w = randn({4, 4}).requires_grad_();
    const Tensor x = randn({3, 4});
    auto block = [&](const std::vector<Tensor>& in) { return tanh(mm(in[0], in[1])); };
    Tensor y;
    {
      autocast region(kCPU);
      y = checkpointed ? autograd::checkpoint(block, {x, w}) : block({x, w});
    }
    EXPECT_EQ(y.dtype(), kBFloat16);
    y.to(kFloat32).sum().backward();
    return w.grad();
  };
  EXPECT_TRUE(equal(grad_of(true), grad_of(false)));
}

/// The golden's float32 parameters "<prefix>p.<name>" copied into `m`.
void load_parameters(nn::Module& m, const std::string& prefix) {
  NoGradGuard no_grad;
  for (auto& [name, p] : m.named_parameters()) Tensor(p).copy_(golden().at(prefix + "p." + name));
}

void expect_near(const Tensor& got, const Tensor& want, double tol, const std::string& what) {
  ember_test::expect_close(got.to(kFloat32), want.to(kFloat32), tol, tol, what);
}

// PyTorch computes bfloat16 products with oneDNN, ember by widening to float32 and rounding once,
// so results agree to a bfloat16 rounding or two, not bit for bit.
TEST(Autocast, TrainingStepMatchesPyTorchInBFloat16) {
  nn::Sequential model(std::make_shared<nn::Conv2d>(1, 4, 3), std::make_shared<nn::BatchNorm2d>(4),
                       std::make_shared<nn::ReLU>(), std::make_shared<nn::Flatten>(),
                       std::make_shared<nn::Linear>(64, 5));
  load_parameters(model, "model.");
  Tensor logits, loss;
  {
    autocast region(kCPU);
    logits = model.forward(golden().at("model.x"));
    loss = F::cross_entropy(logits, golden().at("model.target"));
  }
  EXPECT_EQ(logits.dtype(), kBFloat16);
  EXPECT_EQ(loss.dtype(), kFloat32);
  loss.backward();
  expect_near(logits, golden().at("model.logits"), 3e-2, "logits");
  expect_near(loss, golden().at("model.loss"), 1e-2, "loss");
  for (auto& [name, p] : model.named_parameters()) {
    EXPECT_EQ(p.grad().dtype(), kFloat32) << name;
    expect_near(p.grad(), golden().at("model.g." + name), 3e-2, "gradient of " + name);
  }
  const auto buffers = model.named_buffers();
  for (const auto& [name, b] : buffers) {
    if (name == "1.running_mean") expect_near(b, golden().at("model.running_mean"), 1e-2, name);
    if (name == "1.running_var") expect_near(b, golden().at("model.running_var"), 1e-2, name);
  }
}

TEST(Autocast, LstmRunsAsOneBFloat16OpLikePyTorchs) {
  nn::LSTM lstm(6, 5, {.num_layers = 2});
  load_parameters(lstm, "lstm.");
  Tensor x = golden().at("lstm.x").clone().requires_grad_();
  nn::LSTMOutput out;
  {
    autocast region(kCPU);
    out = lstm.forward(x, Tensor(), Tensor());
  }
  EXPECT_EQ(out.output.dtype(), kBFloat16);
  EXPECT_EQ(out.h_n.dtype(), kBFloat16);
  EXPECT_EQ(out.c_n.dtype(), kBFloat16);
  (out.output.to(kFloat32).sum() + out.h_n.to(kFloat32).sum()).backward();
  expect_near(out.output, golden().at("lstm.out"), 3e-2, "output");
  expect_near(out.h_n, golden().at("lstm.h"), 3e-2, "h_n");
  expect_near(out.c_n, golden().at("lstm.c"), 3e-2, "c_n");
  expect_near(x.grad(), golden().at("lstm.gx"), 5e-2, "input gradient");
  for (auto& [name, p] : lstm.named_parameters()) {
    EXPECT_EQ(p.grad().dtype(), kFloat32) << name;
    expect_near(p.grad(), golden().at("lstm.g." + name), 1e-1, "gradient of " + name);
  }
}

// Where PyTorch composes the layer from ops on the CPU, ember runs it in its input's dtype.
TEST(Autocast, CpuGruAndPackedLstmStayInFloat32) {
  nn::GRU gru(3, 4);
  nn::LSTM lstm(3, 4);
  const Tensor x = randn({5, 2, 3});
  autocast region(kCPU);
  EXPECT_EQ(gru.forward(x, Tensor()).output.dtype(), kFloat32);
  const auto packed = lstm.forward(nn::utils::rnn::pack_padded_sequence(x, std::vector<int64_t>{5, 3}));
  EXPECT_EQ(packed.output.data.dtype(), kFloat32);
  EXPECT_EQ(lstm.forward(x, Tensor(), Tensor()).output.dtype(), kBFloat16);
}

}  // namespace
