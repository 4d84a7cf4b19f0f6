// nn::ModuleDict, ParameterList and ParameterDict: what they register and under which names (the
// state_dict keys PyTorch 2.15 gives the same containers, e.g. "blocks.fc.weight", "pl.0",
// "pd.w"), order, lookup, replacement, moving and mode changes reaching the entries, the
// Parameter(tensor) conversion, and PyTorch's messages.
#include <gtest/gtest.h>

#include <memory>
#include <string>
#include <vector>

#include "ember/ember.h"
#include "ember/nn/batchnorm.h"
#include "ember/nn/containers.h"
#include "ember/nn/modules.h"
#include "support/error_of.h"

namespace {

using namespace ember;
namespace nn = ember::nn;
using ember_test::error_of;
using Strings = std::vector<std::string>;

/// PyTorch's
///   blocks = nn.ModuleDict([('fc', nn.Linear(2, 3)), ('bn', nn.BatchNorm1d(3))])
///   pl = nn.ParameterList([torch.ones(2), torch.zeros(3)])
///   pd = nn.ParameterDict([('w', torch.ones(2)), ('b', torch.zeros(1))])
struct Net : nn::Module {
  Net() {
    blocks = register_module(
        "blocks", std::make_shared<nn::ModuleDict>(std::vector<nn::ModuleDict::Item>{
                      {"fc", std::make_shared<nn::Linear>(2, 3)}, {"bn", std::make_shared<nn::BatchNorm1d>(3)}}));
    pl = register_module("pl", std::make_shared<nn::ParameterList>(std::vector<Tensor>{ones({2}), zeros({3})}));
    pd = register_module("pd", std::make_shared<nn::ParameterDict>(
                                   std::vector<nn::ParameterDict::Item>{{"w", ones({2})}, {"b", zeros({1})}}));
  }
  std::shared_ptr<nn::ModuleDict> blocks;
  std::shared_ptr<nn::ParameterList> pl;
  std::shared_ptr<nn::ParameterDict> pd;
};

TEST(Containers, StateDictKeysArePyTorchs) {
  Net net;
  EXPECT_EQ(net.state_dict().keys(), (Strings{"blocks.fc.weight", "blocks.fc.bias", "blocks.bn.weight",
                                              "blocks.bn.bias", "blocks.bn.running_mean", "blocks.bn.running_var",
                                              "blocks.bn.num_batches_tracked", "pl.0", "pl.1", "pd.w", "pd.b"}));
  Strings names;
  for (const auto& [name, p] : net.named_parameters()) names.push_back(name);
  EXPECT_EQ(names, (Strings{"blocks.fc.weight", "blocks.fc.bias", "blocks.bn.weight", "blocks.bn.bias", "pl.0", "pl.1",
                            "pd.w", "pd.b"}));
  // A state_dict goes back in.
  Net other;
  {
    NoGradGuard no_grad;
    net.pl->operator[](1).fill_(4);
    net.pd->at("b").fill_(-2);
  }
  other.load_state_dict(net.state_dict());
  EXPECT_TRUE(equal((*other.pl)[1].detach(), full({3}, 4.0f)));
  EXPECT_TRUE(equal(other.pd->at("b").detach(), full({1}, -2.0f)));
}

// ---------------------------------------------------------------- ModuleDict

TEST(ModuleDict, OrderLookupAndIteration) {
  auto relu = std::make_shared<nn::ReLU>();
  auto tanh = std::make_shared<nn::Tanh>();
  nn::ModuleDict md{{"act", relu}, {"out", tanh}};
  EXPECT_EQ(md.name(), "ModuleDict");
  EXPECT_EQ(md.size(), 2u);
  EXPECT_FALSE(md.empty());
  EXPECT_EQ(md.keys(), (Strings{"act", "out"}));
  EXPECT_TRUE(md.contains("act"));
  EXPECT_FALSE(md.contains("fc"));
  EXPECT_EQ(md.at("act"), relu);
  EXPECT_EQ(md["out"], tanh);
  Strings seen;
  for (const auto& [key, module] : md) seen.push_back(key + ":" + module->name());
  EXPECT_EQ(seen, (Strings{"act:ReLU", "out:Tanh"}));
  EXPECT_EQ(md.values().size(), 2u);
  EXPECT_EQ(md.items()[1].first, "out");
  // Children in the module tree, with their keys as names.
  auto fc = std::make_shared<nn::Linear>(3, 2);
  md.insert("fc", fc);
  EXPECT_EQ(md.keys(), (Strings{"act", "out", "fc"}));
  EXPECT_EQ(md.state_dict().keys(), (Strings{"fc.weight", "fc.bias"}));
  EXPECT_EQ(md.parameters().size(), 2u);
  EXPECT_EQ(md.named_modules().size(), 4u);
  // train() / eval() reach the entries.
  md.eval();
  EXPECT_FALSE(fc->is_training());
  md.train();
  EXPECT_TRUE(fc->is_training());
  // An update adds in order.
  md.update({{"x", std::make_shared<nn::SiLU>()}, {"y", std::make_shared<nn::Sigmoid>()}});
  EXPECT_EQ(md.keys(), (Strings{"act", "out", "fc", "x", "y"}));
}

TEST(ModuleDict, AssigningAnExistingKeyReplacesInPlace) {
  nn::ModuleDict md{{"a", std::make_shared<nn::ReLU>()}, {"b", std::make_shared<nn::Tanh>()}};
  auto linear = std::make_shared<nn::Linear>(2, 2);
  md.insert("a", linear);
  EXPECT_EQ(md.keys(), (Strings{"a", "b"}));
  EXPECT_EQ(md.at("a"), linear);
  EXPECT_EQ(md.state_dict().keys(), (Strings{"a.weight", "a.bias"}));
  EXPECT_EQ(md.children().size(), 2u);
}

TEST(ModuleDict, ErrorsArePyTorchs) {
  nn::ModuleDict md{{"a", std::make_shared<nn::ReLU>()}};
  EXPECT_EQ(error_of([&] { md.at("b"); }), "'b'");
  EXPECT_EQ(error_of([&] { md.insert("a.b", std::make_shared<nn::ReLU>()); }),
            "module name can't contain \".\", got: a.b");
  EXPECT_EQ(error_of([&] { md.insert("", std::make_shared<nn::ReLU>()); }), "module name can't be empty string \"\"");
  EXPECT_EQ(error_of([&] { md.forward(ones({1})); }),
            "Module [ModuleDict] is missing the required \"forward\" function");
  EXPECT_EQ(md.size(), 1u);
}

// ---------------------------------------------------------------- ParameterList

TEST(ParameterList, RegistersParametersInOrder) {
  Tensor a = ones({2});
  Tensor b = zeros({3});
  nn::ParameterList pl({a, b});
  EXPECT_EQ(pl.name(), "ParameterList");
  EXPECT_EQ(pl.size(), 2u);
  EXPECT_EQ(pl.state_dict().keys(), (Strings{"0", "1"}));
  // Parameter(tensor): a leaf that requires grad, the caller's own handle.
  EXPECT_TRUE(pl[0].is_same(a));
  EXPECT_TRUE(a.requires_grad());
  EXPECT_TRUE(pl[-1].is_same(b));
  Tensor c = pl.append(full({1}, 5.0f));
  EXPECT_EQ(pl.size(), 3u);
  EXPECT_TRUE(pl[2].is_same(c));
  pl.extend({randn({2, 2})});
  EXPECT_EQ(pl.state_dict().keys(), (Strings{"0", "1", "2", "3"}));
  std::vector<Tensor> iterated(pl.begin(), pl.end());
  ASSERT_EQ(iterated.size(), 4u);
  EXPECT_TRUE(iterated[2].is_same(c));
  // A non-leaf becomes a leaf sharing its storage, as Parameter(x * 2) in PyTorch.
  Tensor leaf = ones({2}).requires_grad_();
  Tensor doubled = leaf * 2;
  Tensor p = pl.append(doubled);
  EXPECT_TRUE(p.is_leaf());
  EXPECT_TRUE(p.requires_grad());
  EXPECT_TRUE(p.is_alias_of(doubled));
  // Gradients, zero_grad and to() reach the entries, and the handles stay valid.
  (pl[0] * pl[0]).sum().backward();
  EXPECT_TRUE(equal(pl[0].grad(), full({2}, 2.0f)));
  pl.zero_grad();
  EXPECT_FALSE(pl[0].grad().defined());
  pl.to(kFloat64);
  EXPECT_EQ(pl[1].dtype(), kFloat64);
  EXPECT_EQ(b.dtype(), kFloat64);
}

TEST(ParameterList, ErrorsArePyTorchs) {
  nn::ParameterList pl({ones({1})});
  EXPECT_EQ(error_of([&] { pl[3]; }), "index 3 is out of range");
  EXPECT_EQ(error_of([&] { pl[-2]; }), "index -2 is out of range");
  EXPECT_EQ(error_of([&] { pl.forward(ones({1})); }), "ParameterList should not be called.");
  EXPECT_EQ(error_of([&] { pl(ones({1})); }), "ParameterList should not be called.");
  nn::ParameterList empty_list;
  EXPECT_TRUE(empty_list.empty());
  EXPECT_EQ(error_of([&] { empty_list[0]; }), "index 0 is out of range");
}

// ---------------------------------------------------------------- ParameterDict

TEST(ParameterDict, RegistersParametersUnderTheirKeys) {
  Tensor w = ones({2, 2});
  nn::ParameterDict pd{{"weight", w}, {"alpha", zeros({1})}};
  EXPECT_EQ(pd.name(), "ParameterDict");
  EXPECT_EQ(pd.size(), 2u);
  EXPECT_EQ(pd.keys(), (Strings{"weight", "alpha"}));
  EXPECT_EQ(pd.state_dict().keys(), (Strings{"weight", "alpha"}));
  EXPECT_TRUE(pd.at("weight").is_same(w));
  EXPECT_TRUE(pd["weight"].requires_grad());
  EXPECT_TRUE(pd.contains("alpha"));
  EXPECT_FALSE(pd.contains("beta"));
  EXPECT_FALSE(pd.get("beta").defined());
  Tensor fallback = ones({1});
  EXPECT_TRUE(pd.get("beta", fallback).is_same(fallback));
  EXPECT_TRUE(pd.get("alpha", fallback).is_same(pd.at("alpha")));
  pd.insert("beta", full({3}, 2.0f));
  pd.update({{"gamma", ones({1})}});
  EXPECT_EQ(pd.keys(), (Strings{"weight", "alpha", "beta", "gamma"}));
  Strings seen;
  for (const auto& [key, p] : pd) seen.push_back(key + ":" + std::to_string(p.numel()));
  EXPECT_EQ(seen, (Strings{"weight:4", "alpha:1", "beta:3", "gamma:1"}));
  EXPECT_EQ(pd.values().size(), 4u);
  EXPECT_EQ(pd.parameters().size(), 4u);
}

TEST(ParameterDict, ErrorsArePyTorchs) {
  nn::ParameterDict pd{{"a", ones({1})}};
  EXPECT_EQ(error_of([&] { pd.at("b"); }), "'ParameterDict' object has no attribute 'b'");
  EXPECT_EQ(error_of([&] { pd.insert("a.b", ones({1})); }), "parameter name can't contain \".\"");
  EXPECT_EQ(error_of([&] { pd.insert("", ones({1})); }), "parameter name can't be empty string \"\"");
  EXPECT_EQ(error_of([&] { pd.forward(ones({1})); }), "ParameterDict should not be called.");
  // ember's own limit: a registered parameter cannot be replaced (PyTorch would replace it).
  EXPECT_EQ(error_of([&] { pd.insert("a", zeros({1})); }),
            "ParameterDict: key 'a' is already present, and ember cannot replace a registered parameter");
  EXPECT_EQ(pd.keys(), Strings{"a"});
}

}  // namespace
