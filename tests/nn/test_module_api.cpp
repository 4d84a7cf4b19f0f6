// nn::Module's API beyond bookkeeping: load_state_dict(strict=false)'s key lists and messages
// against PyTorch's (tools/gen_parametrize_golden.py), the safetensors one-call load, apply,
// requires_grad_, modules/named_modules/get_submodule/get_parameter/get_buffer, register_module
// replacing a child, and the hooks operator() runs: forward pre-hooks and hooks (order, return
// values, removal, always_call) and full backward (pre-)hooks with grad_input/grad_output.
#include <gtest/gtest.h>

#include <algorithm>
#include <memory>
#include <string>
#include <vector>

#include "ember/ember.h"
#include "ember/io/safetensors.h"
#include "ember/io/safetensors_module.h"
#include "ember/nn/nn.h"
#include "support/collect_warnings.h"
#include "support/error_of.h"
#include "support/temp_dir.h"

namespace {

using namespace ember;
namespace nn = ember::nn;
using ember_test::error_of;

const io::SafetensorsData& golden() {
  static const io::SafetensorsData data =
      io::load_safetensors(EMBER_SOURCE_DIR "/tests/nn/golden/parametrize_golden.safetensors");
  return data;
}

std::vector<std::string> split(const std::string& text) {
  std::vector<std::string> out;
  if (text.empty()) return out;
  size_t start = 0;
  while (true) {
    const size_t comma = text.find(',', start);
    out.push_back(text.substr(start, comma - start));
    if (comma == std::string::npos) return out;
    start = comma + 1;
  }
}

// The model of the golden's state_dict cases: Sequential(Linear(2, 3), ReLU(),
// Sequential(Linear(3, 2), BatchNorm1d(2))).
std::shared_ptr<nn::Sequential> golden_model() {
  return std::make_shared<nn::Sequential>(
      std::make_shared<nn::Linear>(2, 3), std::make_shared<nn::ReLU>(),
      std::make_shared<nn::Sequential>(std::make_shared<nn::Linear>(3, 2), std::make_shared<nn::BatchNorm1d>(2)));
}

TEST(NnModuleApi, LoadStateDictNonStrictReportsPyTorchsKeyLists) {
  auto model = golden_model();
  const auto& meta = golden().metadata;
  const nn::StateDict own = model->state_dict();
  nn::StateDict given;
  for (const std::string& key : split(meta.at("sd.keys"))) {
    given.insert(key, own.contains(key) ? own.at(key).clone() + 1 : zeros({1}));
  }
  const Tensor before = model->state_dict().at("0.bias").clone();
  const nn::IncompatibleKeys keys = model->load_state_dict(given, false);
  EXPECT_EQ(keys.missing_keys, split(meta.at("sd.missing")));
  EXPECT_EQ(keys.unexpected_keys, split(meta.at("sd.unexpected")));
  // The matching keys were loaded, the missing ones left alone.
  EXPECT_TRUE(equal(model->state_dict().at("0.weight"), given.at("0.weight")));
  EXPECT_TRUE(equal(model->state_dict().at("0.bias"), before));
  EXPECT_EQ(error_of([&] { model->load_state_dict(given, true); }), meta.at("sd.strict_error"));
  EXPECT_EQ(keys.to_string(),
            "_IncompatibleKeys(missing_keys=['0.bias', '2.1.running_var'], unexpected_keys=['extra', "
            "'0', '3.weight', '0.weight.x', '2.5.weight', '2.1.extra_buffer'])");
  EXPECT_EQ(model->load_state_dict(model->state_dict()).to_string(), "<All keys matched successfully>");
}

TEST(NnModuleApi, SizeMismatchThrowsInBothModesAndChangesNothing) {
  auto model = golden_model();
  nn::StateDict bad;
  for (const auto& [key, value] : model->state_dict()) {
    if (key == "0.bias") continue;
    bad.insert(key, key == "2.0.weight" ? zeros({3, 3}) : value.clone() + 1);
  }
  const Tensor weight_before = model->state_dict().at("0.weight").clone();
  EXPECT_EQ(error_of([&] { model->load_state_dict(bad, false); }), golden().metadata.at("sd.size_error"));
  EXPECT_TRUE(equal(model->state_dict().at("0.weight"), weight_before));
}

TEST(NnModuleApi, LoadStateDictTakesAOneElementVectorForAScalar) {
  nn::Module m;
  Tensor s = m.register_parameter("s", zeros({}));
  nn::StateDict state;
  state.insert("s", full({1}, 2.5));
  m.load_state_dict(state);
  EXPECT_EQ(s.item<float>(), 2.5f);
}

TEST(NnModuleApi, SafetensorsOneCallLoad) {
  ember_test::TempDir dir("module_api");
  auto source = golden_model();
  const auto path = dir.path() / "model.safetensors";
  io::save_model(*source, path);
  const nn::StateDict state = io::load_safetensors_state_dict(path);
  // Sorted by name, as safetensors' load_file gives them to PyTorch.
  std::vector<std::string> sorted = source->state_dict().keys();
  std::sort(sorted.begin(), sorted.end());
  EXPECT_EQ(state.keys(), sorted);

  auto target = golden_model();
  const nn::IncompatibleKeys keys = io::load_model(*target, path);
  EXPECT_TRUE(keys.missing_keys.empty() && keys.unexpected_keys.empty());
  for (const auto& [key, value] : source->state_dict()) EXPECT_TRUE(equal(target->state_dict().at(key), value)) << key;

  // A file for another model: strict names the differences, non-strict reports them.
  auto other = std::make_shared<nn::Sequential>(std::make_shared<nn::Linear>(2, 3));
  io::save_model(*other, dir.path() / "other.safetensors");
  const nn::IncompatibleKeys partial = io::load_model(*target, dir.path() / "other.safetensors", false);
  EXPECT_EQ(partial.missing_keys.size(), 7u);  // 0.weight and 0.bias match
  EXPECT_TRUE(partial.unexpected_keys.empty());
  EXPECT_NE(error_of([&] {
              io::load_model(*target, dir.path() / "other.safetensors");
            }).find("Error(s) in loading state_dict for Sequential:\n\tMissing key(s) in state_dict: \"2.0.weight\""),
            std::string::npos);
}

// ---------------------------------------------------------------- traversal

TEST(NnModuleApi, ApplyVisitsChildrenFirstThenSelf) {
  auto inner = std::make_shared<nn::Sequential>(std::make_shared<nn::Linear>(3, 2), std::make_shared<nn::ReLU>());
  auto shared = std::make_shared<nn::Linear>(2, 2);
  auto model = std::make_shared<nn::Sequential>(std::make_shared<nn::Linear>(2, 3), inner, shared, shared);
  std::vector<std::string> order;
  nn::Module& returned = model->apply([&](nn::Module& m) { order.push_back(m.name()); });
  EXPECT_EQ(&returned, model.get());
  // As PyTorch: 0, then 1's children then 1, then the shared Linear once, then the root.
  EXPECT_EQ(order, (std::vector<std::string>{"Linear", "Linear", "ReLU", "Sequential", "Linear", "Sequential"}));
  // The typical use: initialising every Linear.
  model->apply([](nn::Module& m) {
    if (auto* linear = dynamic_cast<nn::Linear*>(&m)) {
      NoGradGuard no_grad;
      linear->weight.fill_(0.5);
    }
  });
  for (const auto& [name, p] : model->named_parameters()) {
    if (name.ends_with("weight")) {
      EXPECT_TRUE(equal(p, full_like(p, 0.5))) << name;
    }
  }
}

TEST(NnModuleApi, RequiresGradFreezesAndUnfreezes) {
  auto model = golden_model();
  EXPECT_EQ(&model->requires_grad_(false), model.get());
  for (const Tensor& p : model->parameters()) EXPECT_FALSE(p.requires_grad());
  EXPECT_FALSE((*model)(ones({4, 2})).requires_grad());
  model->get_submodule("2")->requires_grad_();
  EXPECT_FALSE(model->get_parameter("0.weight").requires_grad());
  EXPECT_TRUE(model->get_parameter("2.0.weight").requires_grad());
  EXPECT_TRUE(model->get_parameter("2.1.bias").requires_grad());
}

TEST(NnModuleApi, ModulesNamedModulesAndLookups) {
  auto shared = std::make_shared<nn::Linear>(2, 2);
  auto model = std::make_shared<nn::Sequential>(shared, shared, golden_model());
  std::vector<std::string> names;
  for (const auto& [name, m] : model->named_modules("net")) names.push_back(name);
  EXPECT_EQ(names, (std::vector<std::string>{"net", "net.0", "net.2", "net.2.0", "net.2.1", "net.2.2", "net.2.2.0",
                                             "net.2.2.1"}));
  EXPECT_EQ(model->named_modules("", false).size(), 9u);  // the shared Linear under both names
  EXPECT_EQ(model->modules().size(), 8u);
  EXPECT_EQ(model->modules()[0].get(), model.get());

  EXPECT_EQ(model->get_submodule("").get(), model.get());
  EXPECT_EQ(model->get_submodule("2.2.1")->name(), "BatchNorm1d");
  EXPECT_EQ(model->get_submodule("1").get(), shared.get());
  EXPECT_TRUE(model->get_parameter("2.2.0.bias").is_same(model->get_submodule("2.2.0")->named_parameters()[1].second));
  EXPECT_EQ(model->get_buffer("2.2.1.running_mean").sizes().vec(), (std::vector<int64_t>{2}));
  EXPECT_EQ(error_of([&] { model->get_submodule("2.7"); }), "Sequential has no attribute `7`");
  EXPECT_EQ(error_of([&] { model->get_submodule("0.weight"); }), "`weight` is not an nn.Module");
  EXPECT_EQ(error_of([&] { model->get_submodule("0.weight.x"); }), "`weight` is not an nn.Module");
  EXPECT_EQ(error_of([&] { model->get_parameter("2.2.1.running_mean"); }), "`running_mean` is not an nn.Parameter");
  EXPECT_EQ(error_of([&] { model->get_parameter("2.2.1.foo"); }), "BatchNorm1d has no attribute `foo`");
  EXPECT_EQ(error_of([&] { model->get_parameter("2.2"); }), "`2` is not an nn.Parameter");
  EXPECT_EQ(error_of([&] { model->get_buffer("2.2.0.weight"); }), "`weight` is not a buffer");
  // A parameter registered as None (undefined) is not an nn.Parameter either.
  nn::Module with_none;
  with_none.register_parameter("bias", Tensor());
  EXPECT_EQ(error_of([&] { with_none.get_parameter("bias"); }), "`bias` is not an nn.Parameter");
}

TEST(NnModuleApi, RegisterModuleReplacesAChildInPlace) {
  auto model = std::make_shared<nn::Sequential>(std::make_shared<nn::Linear>(2, 3), std::make_shared<nn::ReLU>(),
                                                std::make_shared<nn::Linear>(3, 1));
  auto doubled = std::make_shared<nn::Linear>(2, 3);
  model->register_module("0", doubled);
  EXPECT_EQ(model->get_submodule("0").get(), doubled.get());
  EXPECT_EQ(model->state_dict().keys(), (std::vector<std::string>{"0.weight", "0.bias", "2.weight", "2.bias"}));
  // A name that is a parameter stays refused.
  nn::Module m;
  m.register_parameter("w", zeros({1}));
  EXPECT_EQ(error_of([&] { m.register_module("w", std::make_shared<nn::ReLU>()); }), "attribute 'w' already exists");
}

// ---------------------------------------------------------------- forward hooks

TEST(NnModuleApi, ForwardHooksRunInOrderAndReplaceValues) {
  auto relu = std::make_shared<nn::ReLU>();
  std::vector<std::string> log;
  auto pre1 = relu->register_forward_pre_hook([&](nn::Module& m, const Tensor& x) -> std::optional<Tensor> {
    log.push_back("pre1 " + m.name());
    return x - 1.0;  // replaces the input
  });
  auto pre0 = relu->register_forward_pre_hook(
      [&](nn::Module&, const Tensor&) -> std::optional<Tensor> {
        log.push_back("pre0");
        return std::nullopt;
      },
      /*prepend=*/true);
  Tensor seen_input;
  auto fwd = relu->register_forward_hook([&](nn::Module&, const Tensor& x, const Tensor& y) -> std::optional<Tensor> {
    log.push_back("fwd");
    seen_input = x;
    return y * 10.0;  // replaces the output
  });
  auto fwd2 = relu->register_forward_hook([&](nn::Module&, const Tensor&, const Tensor& y) -> std::optional<Tensor> {
    log.push_back("fwd2 " + std::to_string(y.item<float>()));
    return std::nullopt;
  });
  Tensor y = (*relu)(full({}, 3.0f));
  EXPECT_EQ(log, (std::vector<std::string>{"pre0", "pre1 ReLU", "fwd", "fwd2 20.000000"}));
  EXPECT_EQ(y.item<float>(), 20.0f);                             // relu(3 - 1) * 10
  EXPECT_EQ(seen_input.item<float>(), 2.0f);                     // the hook sees the replaced input
  EXPECT_EQ(relu->forward(full({}, 3.0f)).item<float>(), 3.0f);  // forward() itself runs no hook

  log.clear();
  pre1.remove();
  fwd.remove();
  fwd.remove();  // twice: nothing
  y = (*relu)(full({}, 3.0f));
  EXPECT_EQ(log, (std::vector<std::string>{"pre0", "fwd2 3.000000"}));
  EXPECT_EQ(y.item<float>(), 3.0f);
  pre0.remove();
  fwd2.remove();
  log.clear();
  EXPECT_EQ((*relu)(full({}, -3.0f)).item<float>(), 0.0f);
  EXPECT_TRUE(log.empty());
  // A handle that outlives its module does nothing.
  nn::RemovableHandle orphan;
  {
    auto temporary = std::make_shared<nn::ReLU>();
    orphan = temporary->register_forward_hook([](nn::Module&, const Tensor&, const Tensor&) { return std::nullopt; });
  }
  orphan.remove();
}

TEST(NnModuleApi, HooksRunForChildrenCalledThroughOperatorCall) {
  // A parent whose forward calls its child as PyTorch's modules do: module(x).
  struct Parent : nn::Module {
    Parent() { fc = register_module("fc", std::make_shared<nn::Linear>(2, 2)); }
    Tensor forward(const Tensor& x) override { return (*fc)(x); }
    std::shared_ptr<nn::Linear> fc;
  };
  auto parent = std::make_shared<Parent>();
  int calls = 0;
  parent->fc->register_forward_hook([&](nn::Module&, const Tensor&, const Tensor&) -> std::optional<Tensor> {
    ++calls;
    return std::nullopt;
  });
  (*parent)(ones({1, 2}));
  parent->forward(ones({1, 2}));  // the parent's forward still calls its child with hooks
  EXPECT_EQ(calls, 2);
}

TEST(NnModuleApi, AlwaysCallForwardHookRunsWhenForwardThrows) {
  auto linear = std::make_shared<nn::Linear>(3, 2);
  int always = 0, normal = 0;
  linear->register_forward_hook(
      [&](nn::Module&, const Tensor&, const Tensor& y) -> std::optional<Tensor> {
        ++always;
        EXPECT_FALSE(y.defined());
        throw Error("hook error");  // silenced into a warning: forward's error propagates
      },
      false, /*always_call=*/true);
  linear->register_forward_hook([&](nn::Module&, const Tensor&, const Tensor&) -> std::optional<Tensor> {
    ++normal;
    return std::nullopt;
  });
  ember_test::CollectWarnings warnings;
  const std::string message = error_of([&] { (*linear)(ones({1, 4})); });
  EXPECT_NE(message.find("cannot be multiplied"), std::string::npos) << message;
  EXPECT_EQ(always, 1);
  EXPECT_EQ(normal, 0);
  ASSERT_EQ(warnings.messages().size(), 1u);
  EXPECT_EQ(warnings.messages()[0],
            "module forward hook with ``always_call=True`` raised an exception that was silenced as another error was "
            "raised in forward: hook error");
}

// ---------------------------------------------------------------- backward hooks

TEST(NnModuleApi, FullBackwardHookSeesGradInputAndGradOutput) {
  auto linear = std::make_shared<nn::Linear>(3, 2);
  linear->to(kFloat64);
  Tensor seen_grad_input, seen_grad_output, pre_grad_output;
  std::vector<std::string> order;
  linear->register_full_backward_pre_hook([&](nn::Module& m, const Tensor& go) -> std::optional<Tensor> {
    order.push_back("pre " + m.name());
    pre_grad_output = go;
    return std::nullopt;
  });
  linear->register_full_backward_hook([&](nn::Module&, const Tensor& gi, const Tensor& go) -> std::optional<Tensor> {
    order.push_back("full");
    seen_grad_input = gi;
    seen_grad_output = go;
    return std::nullopt;
  });
  Tensor x = arange(6, TensorOptions().dtype(kFloat64)).reshape({2, 3}).requires_grad_();
  Tensor y = (*linear)(x);
  EXPECT_EQ(y.grad_fn_name(), "BackwardHookFunctionBackward");
  const Tensor gy = arange(4, TensorOptions().dtype(kFloat64)).reshape({2, 2}) - 1.5;
  y.backward(gy);
  EXPECT_EQ(order, (std::vector<std::string>{"pre Linear", "full"}));
  EXPECT_TRUE(equal(pre_grad_output, gy));
  EXPECT_TRUE(equal(seen_grad_output, gy));
  EXPECT_TRUE(allclose(seen_grad_input, matmul(gy, linear->weight.detach()), 1e-12, 1e-12));
  EXPECT_TRUE(allclose(x.grad(), seen_grad_input, 1e-12, 1e-12));
}

TEST(NnModuleApi, BackwardHooksReplaceGradients) {
  auto linear = std::make_shared<nn::Linear>(3, 2);
  linear->to(kFloat64);
  Tensor x = ones({2, 3}, TensorOptions().dtype(kFloat64)).requires_grad_();
  const Tensor gy = ones({2, 2}, TensorOptions().dtype(kFloat64));
  // Reference gradients without hooks.
  (*linear)(x).backward(gy);
  const Tensor x_grad = x.grad().clone();
  const Tensor w_grad = linear->weight.grad().clone();
  x.set_grad(Tensor());
  linear->zero_grad();

  // A pre-hook doubling grad_output doubles every gradient inside the module; a full hook
  // replacing grad_input changes only what reaches the input.
  auto pre = linear->register_full_backward_pre_hook(
      [](nn::Module&, const Tensor& go) -> std::optional<Tensor> { return go * 2.0; });
  auto full = linear->register_full_backward_hook(
      [](nn::Module&, const Tensor& gi, const Tensor&) -> std::optional<Tensor> { return gi * 0.0 + 7.0; });
  (*linear)(x).backward(gy);
  EXPECT_TRUE(allclose(linear->weight.grad(), w_grad * 2.0, 1e-12, 1e-12));
  EXPECT_TRUE(allclose(x.grad(), full_like(x_grad, 7.0), 1e-12, 1e-12));

  // Removed: plain gradients again.
  pre.remove();
  full.remove();
  x.set_grad(Tensor());
  linear->zero_grad();
  (*linear)(x).backward(gy);
  EXPECT_TRUE(allclose(x.grad(), x_grad, 1e-12, 1e-12));
  EXPECT_TRUE(allclose(linear->weight.grad(), w_grad, 1e-12, 1e-12));
}

TEST(NnModuleApi, FullBackwardHookWithoutInputGradFiresAtTheOutput) {
  auto linear = std::make_shared<nn::Linear>(3, 2);
  int calls = 0;
  linear->register_full_backward_hook([&](nn::Module&, const Tensor& gi, const Tensor& go) -> std::optional<Tensor> {
    ++calls;
    EXPECT_FALSE(gi.defined());
    EXPECT_EQ(go.sizes().vec(), (std::vector<int64_t>{4, 2}));
    return std::nullopt;
  });
  ember_test::CollectWarnings warnings;
  (*linear)(ones({4, 3})).sum().backward();
  EXPECT_EQ(calls, 1);
  ASSERT_EQ(warnings.messages().size(), 1u);
  EXPECT_EQ(warnings.messages()[0].rfind("Full backward hook is firing when gradients are computed with respect to "
                                         "module outputs since no inputs require gradients.",
                                         0),
            0u);
  EXPECT_TRUE(linear->weight.grad().defined());

  // Returning a gradient there is an error.
  auto bad = std::make_shared<nn::Linear>(3, 2);
  bad->register_full_backward_hook(
      [](nn::Module&, const Tensor&, const Tensor& go) -> std::optional<Tensor> { return go; });
  EXPECT_EQ(error_of([&] {
              (*bad)(ones({4, 3})).sum().backward();
            }),
            "Backward hook for Modules where no input requires gradient should always return None or None for all "
            "gradients.");
}

TEST(NnModuleApi, BackwardHooksNeedAGraph) {
  auto linear = std::make_shared<nn::Linear>(3, 2);
  int calls = 0;
  linear->register_full_backward_hook([&](nn::Module&, const Tensor&, const Tensor&) -> std::optional<Tensor> {
    ++calls;
    return std::nullopt;
  });
  NoGradGuard no_grad;
  Tensor y = (*linear)(ones({1, 3}));
  EXPECT_FALSE(y.requires_grad());
  EXPECT_EQ(calls, 0);
}

}  // namespace
