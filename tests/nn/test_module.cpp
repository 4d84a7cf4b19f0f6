// nn::Module bookkeeping: names, counts, modes, in-place moves, state dicts, PyTorch's init.
#include <gtest/gtest.h>

#include <cmath>
#include <memory>
#include <string>
#include <vector>

#include "ember/ember.h"
#include "ember/nn/nn.h"

namespace {

using namespace ember;
namespace nn = ember::nn;

std::shared_ptr<nn::Sequential> quickstart_mlp() {
  return std::make_shared<nn::Sequential>(std::make_shared<nn::Flatten>(), std::make_shared<nn::Linear>(28 * 28, 512),
                                          std::make_shared<nn::ReLU>(), std::make_shared<nn::Linear>(512, 512),
                                          std::make_shared<nn::ReLU>(), std::make_shared<nn::Linear>(512, 10));
}

std::vector<std::string> names_of(const std::vector<std::pair<std::string, Tensor>>& named) {
  std::vector<std::string> out;
  for (const auto& item : named) out.push_back(item.first);
  return out;
}

// A module with its own parameter and buffer plus children, registered in a mixed order, to pin
// down PyTorch's ordering: own parameters, own buffers, then each child recursively.
struct Net : nn::Module {
  Net() {
    fc1 = register_module("fc1", std::make_shared<nn::Linear>(2, 3));
    steps = register_buffer("steps", zeros({1}, kInt64));
    scale = register_parameter("scale", ones({3}));
    block = register_module("block", std::make_shared<nn::Sequential>(std::make_shared<nn::ReLU>(),
                                                                      std::make_shared<nn::Linear>(3, 2, false)));
  }
  std::string name() const override { return "Net"; }
  Tensor forward(const Tensor& x) override { return block->forward(fc1->forward(x) * scale); }
  std::shared_ptr<nn::Linear> fc1;
  std::shared_ptr<nn::Sequential> block;
  Tensor steps, scale;
};

TEST(NnModule, QuickstartMlpNamesAndParameterCount) {
  auto model = quickstart_mlp();
  EXPECT_EQ(names_of(model->named_parameters()),
            (std::vector<std::string>{"1.weight", "1.bias", "3.weight", "3.bias", "5.weight", "5.bias"}));
  int64_t count = 0;
  for (const Tensor& p : model->parameters()) {
    EXPECT_TRUE(p.requires_grad());
    EXPECT_TRUE(p.is_leaf());
    count += p.numel();
  }
  EXPECT_EQ(count, 669706);
  Tensor out = model->forward(zeros({2, 1, 28, 28}));
  EXPECT_EQ(out.sizes().vec(), (std::vector<int64_t>{2, 10}));
  EXPECT_EQ(model->children().size(), 6u);
}

TEST(NnModule, NestedOrderFollowsPyTorch) {
  auto net = std::make_shared<Net>();
  EXPECT_EQ(names_of(net->named_parameters()),
            (std::vector<std::string>{"scale", "fc1.weight", "fc1.bias", "block.1.weight"}));
  EXPECT_EQ(names_of(net->named_parameters(false)), (std::vector<std::string>{"scale"}));
  EXPECT_EQ(names_of(net->named_buffers()), (std::vector<std::string>{"steps"}));
  EXPECT_EQ(net->state_dict().keys(),
            (std::vector<std::string>{"scale", "steps", "fc1.weight", "fc1.bias", "block.1.weight"}));
  std::vector<std::string> module_names;
  for (const auto& item : net->named_modules()) module_names.push_back(item.first);
  EXPECT_EQ(module_names, (std::vector<std::string>{"", "fc1", "block", "block.0", "block.1"}));
}

TEST(NnModule, SharedParametersAreListedOnce) {
  auto shared = std::make_shared<nn::Linear>(2, 2);
  auto seq = std::make_shared<nn::Sequential>(shared, std::make_shared<nn::ReLU>(), shared);
  EXPECT_EQ(names_of(seq->named_parameters()), (std::vector<std::string>{"0.weight", "0.bias"}));
  EXPECT_EQ(seq->state_dict().size(), 4u);  // state_dict lists every path, as PyTorch's does
}

TEST(NnModule, RegistrationRejectsBadNames) {
  nn::Module m;
  m.register_parameter("w", zeros({2}));
  EXPECT_THROW(m.register_parameter("w", zeros({2})), Error);
  EXPECT_THROW(m.register_buffer("a.b", zeros({2})), Error);
  EXPECT_THROW(m.register_module("", std::make_shared<nn::ReLU>()), Error);
  EXPECT_THROW(m.forward(zeros({1})), Error);
}

TEST(NnModule, TrainEvalRecurse) {
  auto net = std::make_shared<Net>();
  EXPECT_TRUE(net->is_training());
  net->eval();
  for (const auto& item : net->named_modules()) EXPECT_FALSE(item.second->is_training()) << item.first;
  net->train();
  for (const auto& item : net->named_modules()) EXPECT_TRUE(item.second->is_training()) << item.first;
}

TEST(NnModule, ToDtypeKeepsTheSameTensorObjects) {
  auto net = std::make_shared<Net>();
  std::vector<Tensor> before = net->parameters();
  std::vector<Tensor> values;
  for (const Tensor& p : before) values.push_back(p.clone());
  Tensor steps = net->steps;

  (void)net->forward(ones({4, 2})).sum().backward();
  ASSERT_TRUE(net->fc1->weight.grad().defined());

  net->to(kFloat64);
  std::vector<Tensor> after = net->parameters();
  ASSERT_EQ(after.size(), before.size());
  for (size_t i = 0; i < after.size(); ++i) {
    EXPECT_TRUE(after[i].is_same(before[i]));
    EXPECT_EQ(before[i].dtype(), kFloat64);  // the optimizer's handle sees the change
    EXPECT_TRUE(before[i].requires_grad());
    EXPECT_TRUE(before[i].is_leaf());
    EXPECT_TRUE(allclose(before[i], values[i].to(kFloat64)));
  }
  EXPECT_EQ(net->fc1->weight.grad().dtype(), kFloat64);
  EXPECT_EQ(steps.dtype(), kInt64);  // integer buffers keep their dtype
  EXPECT_TRUE(steps.is_same(net->steps));

  // The converted model still trains: gradients arrive in float64 on the same leaves.
  net->zero_grad();
  EXPECT_FALSE(net->fc1->weight.grad().defined());
  (void)net->forward(ones({4, 2}, kFloat64)).sum().backward();
  EXPECT_EQ(before[1].grad().dtype(), kFloat64);

  net->to(Device(DeviceType::CPU));  // no-op move keeps everything
  EXPECT_TRUE(net->parameters()[0].is_same(before[0]));
  try {
    net->to(kInt32);
    FAIL() << "expected an error";
  } catch (const Error& e) {
    EXPECT_EQ(std::string(e.what()),
              "nn.Module.to only accepts floating point or complex dtypes, but got desired dtype=torch.int32");
  }
}

TEST(NnModule, ZeroGradWithoutSetToNone) {
  auto lin = std::make_shared<nn::Linear>(3, 2);
  (void)lin->forward(ones({1, 3})).sum().backward();
  lin->zero_grad(false);
  ASSERT_TRUE(lin->weight.grad().defined());
  EXPECT_TRUE(equal(lin->weight.grad(), zeros({2, 3})));
}

TEST(NnModule, StateDictRoundTrip) {
  manual_seed(1);
  auto a = std::make_shared<Net>();
  auto b = std::make_shared<Net>();
  ASSERT_FALSE(equal(a->fc1->weight, b->fc1->weight));
  Tensor b_weight = b->fc1->weight;
  nn::StateDict state = a->state_dict();
  EXPECT_FALSE(state.at("fc1.weight").requires_grad());
  EXPECT_TRUE(state.at("fc1.weight").is_alias_of(a->fc1->weight));
  b->load_state_dict(state);
  EXPECT_TRUE(b->fc1->weight.is_same(b_weight));  // loaded in place
  EXPECT_TRUE(b->fc1->weight.requires_grad());
  for (const auto& [key, value] : a->state_dict()) EXPECT_TRUE(equal(value, b->state_dict().at(key))) << key;
  EXPECT_TRUE(equal(a->forward(ones({2, 2})), b->forward(ones({2, 2}))));
}

TEST(NnModule, LoadStateDictErrorsListEveryProblem) {
  auto model = std::make_shared<nn::Sequential>(std::make_shared<nn::Linear>(4, 3), std::make_shared<nn::ReLU>(),
                                                std::make_shared<nn::Linear>(3, 2));
  Tensor original = model->state_dict().at("0.bias").clone();
  nn::StateDict bad;
  bad.insert("0.weight", zeros({3, 5}));
  bad.insert("0.bias", zeros({3}));
  bad.insert("2.weight", zeros({2, 3}));
  bad.insert("extra", zeros({1}));
  try {
    model->load_state_dict(bad);
    FAIL() << "expected an error";
  } catch (const Error& e) {
    EXPECT_EQ(std::string(e.what()),
              "Error(s) in loading state_dict for Sequential:\n"
              "\tMissing key(s) in state_dict: \"2.bias\". \n"
              "\tUnexpected key(s) in state_dict: \"extra\". \n"
              "\tsize mismatch for 0.weight: copying a param with shape torch.Size([3, 5]) from checkpoint, the "
              "shape in current model is torch.Size([3, 4]).");
  }
  EXPECT_TRUE(equal(model->state_dict().at("0.bias"), original));  // nothing was applied

  // Non-strict loading ignores missing and unexpected keys but never a size mismatch.
  EXPECT_THROW(model->load_state_dict(bad, false), Error);
  nn::StateDict partial;
  partial.insert("0.bias", full({3}, 2.0));
  partial.insert("extra", zeros({1}));
  model->load_state_dict(partial, false);
  EXPECT_TRUE(equal(model->state_dict().at("0.bias"), full({3}, 2.0)));
}

TEST(NnInit, LinearMatchesPyTorchDefaultInit) {
  // torch.manual_seed(0); l = nn.Linear(4, 3) prints
  // weight [[-0.0037, 0.2682, -0.4115, -0.3680], [-0.1926, 0.1341, -0.0099, 0.3964],
  //         [-0.0444, 0.1323, -0.1511, -0.0983]], bias [-0.4777, -0.3311, -0.2061].
  manual_seed(0);
  nn::Linear lin(4, 3);
  Tensor expected_weight = tensor(
      {{-0.0037, 0.2682, -0.4115, -0.3680}, {-0.1926, 0.1341, -0.0099, 0.3964}, {-0.0444, 0.1323, -0.1511, -0.0983}});
  Tensor expected_bias = tensor({-0.4777, -0.3311, -0.2061});
  EXPECT_TRUE(allclose(lin.weight, expected_weight, 0, 5.1e-5)) << lin.weight;
  EXPECT_TRUE(allclose(lin.bias, expected_bias, 0, 5.1e-5)) << lin.bias;
  // Exactly: both bounds are ±1/2 for fan_in 4, so the draws are rand - 0.5, weight first.
  manual_seed(0);
  Tensor draws = rand({15});
  EXPECT_TRUE(equal(lin.weight.reshape({-1}), draws.narrow(0, 0, 12) - 0.5));
  EXPECT_TRUE(equal(lin.bias, draws.narrow(0, 12, 3) - 0.5));
}

TEST(NnInit, InitialisersRespectTheirBounds) {
  manual_seed(3);
  Tensor w = empty({64, 32});
  nn::init::xavier_uniform_(w);
  const double xavier_bound = std::sqrt(6.0 / (64 + 32));
  EXPECT_LE(w.abs().max().item<double>(), xavier_bound);
  EXPECT_GT(w.abs().max().item<double>(), 0.9 * xavier_bound);

  nn::init::kaiming_uniform_(w, 0.0, "fan_in", "relu");
  const double kaiming_bound = std::sqrt(2.0) * std::sqrt(3.0 / 32);
  EXPECT_LE(w.abs().max().item<double>(), kaiming_bound);
  EXPECT_GT(w.abs().max().item<double>(), 0.9 * kaiming_bound);

  Tensor big = empty({256, 128});
  nn::init::kaiming_normal_(big, 0.0, "fan_out", "relu");
  EXPECT_NEAR(big.std().item<double>(), std::sqrt(2.0 / 256), 0.01 * std::sqrt(2.0 / 256) * 3);
  EXPECT_NEAR(big.mean().item<double>(), 0.0, 0.003);

  nn::init::ones_(w);
  EXPECT_TRUE(equal(w, ones({64, 32})));
  nn::init::zeros_(w);
  EXPECT_TRUE(equal(w, zeros({64, 32})));
  Tensor v = empty({10});
  EXPECT_THROW(nn::init::xavier_uniform_(v), Error);
  EXPECT_DOUBLE_EQ(nn::init::calculate_gain("tanh"), 5.0 / 3.0);
  EXPECT_DOUBLE_EQ(nn::init::calculate_gain("leaky_relu", 0.2), std::sqrt(2.0 / 1.04));

  // Parameters are filled in place without recording a graph.
  nn::Linear lin(3, 3);
  Tensor handle = lin.weight;
  nn::init::uniform_(lin.weight, -0.1, 0.1);
  EXPECT_TRUE(handle.is_same(lin.weight));
  EXPECT_TRUE(lin.weight.is_leaf());
  EXPECT_LE(lin.weight.abs().max().item<double>(), 0.1);
}

}  // namespace
