// State dicts between ember's types and the layout PyTorch's state_dict() methods produce, so
// that a torch.save'd checkpoint loads into ember and ember's loads into PyTorch.
#include <algorithm>
#include <set>
#include <typeinfo>

#include "core/check.h"
#include "ember/factories.h"
#include "ember/io/pytorch.h"
#include "ember/optim/optimizers.h"

namespace ember::io {

using detail::concat;
using detail::fail;

Value to_value(const nn::StateDict& state) {
  Value::DictItems items;
  items.reserve(state.size());
  // state_dict() in PyTorch detaches (keep_vars=False): the saved tensors do not require grad.
  for (const auto& [name, tensor] : state) items.emplace_back(Value(name), Value(tensor.detach()));
  return Value::ordered_dict(std::move(items));
}

nn::StateDict to_state_dict(const Value& value) {
  if (!value.is_dict())
    fail("io::to_state_dict: expected a dict of tensors (a state_dict) but got a ", value.type_name(), ": ",
         value.summary(120));
  nn::StateDict out;
  for (const auto& [key, v] : value.dict_items()) {
    if (key.kind() != Value::Kind::String)
      fail("io::to_state_dict: a state_dict's keys are strings, but this dict has the key ", key.summary(60));
    if (!v.is_tensor()) {
      std::string keys;
      for (const auto& [k, x] : value.dict_items()) keys += (keys.empty() ? "" : ", ") + k.summary(40);
      fail("io::to_state_dict: the entry ", key.summary(60), " is a ", v.type_name(),
           ", not a tensor. Is this a checkpoint holding the state_dict under one of its keys (", keys,
           ")? Then pass that entry, e.g. io::to_state_dict(value[\"model\"])");
    }
    out.insert(key.to_string(), v.to_tensor());
  }
  return out;
}

namespace {

// How one optimizer's hyper-parameters appear in PyTorch's param_groups, in PyTorch's order.
struct GroupKey {
  const char* torch_name;
  enum class Kind { Number, Bool, Betas, None, False, True } kind;
};

struct OptimizerLayout {
  const char* name;
  std::vector<GroupKey> keys;
};

const OptimizerLayout* layout_of(const optim::Optimizer& o) {
  using K = GroupKey::Kind;
  static const OptimizerLayout kSGD{"SGD",
                                    {{"lr", K::Number},
                                     {"momentum", K::Number},
                                     {"dampening", K::Number},
                                     {"weight_decay", K::Number},
                                     {"nesterov", K::Bool},
                                     {"maximize", K::Bool},
                                     {"foreach", K::None},
                                     {"differentiable", K::False},
                                     {"fused", K::None}}};
  auto adam = [](const char* name, bool decoupled) {
    return OptimizerLayout{name,
                           {{"lr", K::Number},
                            {"betas", K::Betas},
                            {"eps", K::Number},
                            {"weight_decay", K::Number},
                            {"amsgrad", K::Bool},
                            {"maximize", K::Bool},
                            {"foreach", K::None},
                            {"capturable", K::False},
                            {"differentiable", K::False},
                            {"fused", K::None},
                            {"decoupled_weight_decay", decoupled ? K::True : K::False}}};
  };
  static const OptimizerLayout kAdam = adam("Adam", false), kAdamW = adam("AdamW", true);
  static const OptimizerLayout kAdadelta{"Adadelta",
                                         {{"lr", K::Number},
                                          {"rho", K::Number},
                                          {"eps", K::Number},
                                          {"weight_decay", K::Number},
                                          {"maximize", K::Bool},
                                          {"capturable", K::False},
                                          {"foreach", K::None},
                                          {"differentiable", K::False}}};
  static const OptimizerLayout kRMSprop{"RMSprop",
                                        {{"lr", K::Number},
                                         {"momentum", K::Number},
                                         {"alpha", K::Number},
                                         {"eps", K::Number},
                                         {"centered", K::Bool},
                                         {"weight_decay", K::Number},
                                         {"capturable", K::False},
                                         {"foreach", K::None},
                                         {"maximize", K::Bool},
                                         {"differentiable", K::False}}};
  // AdamW derives from Adam: test it first.
  if (dynamic_cast<const optim::AdamW*>(&o)) return &kAdamW;
  if (dynamic_cast<const optim::Adam*>(&o)) return &kAdam;
  if (dynamic_cast<const optim::SGD*>(&o)) return &kSGD;
  if (dynamic_cast<const optim::Adadelta*>(&o)) return &kAdadelta;
  if (dynamic_cast<const optim::RMSprop*>(&o)) return &kRMSprop;
  return nullptr;  // a user's optimizer: its options are written as floats
}

// "state.3.exp_avg" -> (3, "exp_avg")
std::pair<int64_t, std::string> split_state_key(const std::string& key) {
  const size_t dot = key.find('.', 6);
  return {std::stoll(key.substr(6, dot - 6)), key.substr(dot + 1)};
}

}  // namespace

Value optimizer_state(const optim::Optimizer& optimizer) {
  const optim::OptimizerStateDict flat = optimizer.state_dict();
  const OptimizerLayout* layout = layout_of(optimizer);

  // "state": {index: {name: tensor}}, indices in ascending order as PyTorch lists them.
  std::map<int64_t, Value::DictItems> per_param;
  for (const auto& [key, tensor] : flat.tensors) {
    auto [index, name] = split_state_key(key);
    per_param[index].emplace_back(Value(name), Value(tensor));
  }
  Value::DictItems state;
  for (auto& [index, entries] : per_param) state.emplace_back(Value(index), Value::dict(std::move(entries)));

  Value::Items groups;
  int64_t next_index = 0;
  for (const optim::ParamGroup& group : optimizer.param_groups()) {
    Value::DictItems g;
    std::set<std::string> used;
    auto option = [&](const std::string& name) {
      used.insert(name);
      return group.has(name) ? group.get(name) : 0.0;
    };
    if (layout) {
      for (const GroupKey& k : layout->keys) {
        Value v;
        switch (k.kind) {
          case GroupKey::Kind::Number:
            v = Value(option(k.torch_name));
            break;
          case GroupKey::Kind::Bool:
            v = Value(option(k.torch_name) != 0);
            break;
          case GroupKey::Kind::Betas:
            v = Value::tuple({Value(option("beta1")), Value(option("beta2"))});
            break;
          case GroupKey::Kind::None:
            break;
          case GroupKey::Kind::False:
            v = Value(false);
            break;
          case GroupKey::Kind::True:
            v = Value(true);
            break;
        }
        g.emplace_back(Value(k.torch_name), std::move(v));
      }
    }
    // What a scheduler added ("initial_lr", "max_lr", ...) and a user optimizer's options.
    for (const auto& [name, value] : group.options)
      if (!used.count(name)) g.emplace_back(Value(name), Value(value));
    Value::Items params;
    for (size_t i = 0; i < group.params.size(); ++i) params.emplace_back(Value(next_index++));
    g.emplace_back(Value("params"), Value::list(std::move(params)));
    groups.push_back(Value::dict(std::move(g)));
  }
  return Value::dict({{"state", Value::dict(std::move(state))}, {"param_groups", Value::list(std::move(groups))}});
}

void load_optimizer_state(optim::Optimizer& optimizer, const Value& state) {
  const char* where = "io::load_optimizer_state";
  if (!state.is_dict() || !state.contains("state") || !state.contains("param_groups"))
    fail(where, ": expected PyTorch's optimizer state_dict ({'state': ..., 'param_groups': [...]}) but got ",
         state.summary(120));
  const Value& groups = state["param_groups"];
  if (groups.kind() != Value::Kind::List) fail(where, ": 'param_groups' is a ", groups.type_name(), ", not a list");
  if (groups.size() != optimizer.param_groups().size())
    fail(where, ": the saved state has ", groups.size(), " parameter groups but the optimizer has ",
         optimizer.param_groups().size());
  const OptimizerLayout* layout = layout_of(optimizer);

  optim::OptimizerStateDict flat;
  flat.numbers["num_param_groups"] = static_cast<double>(groups.size());
  std::map<int64_t, int64_t> position;  // a saved parameter id -> its place across the groups
  for (size_t g = 0; g < groups.size(); ++g) {
    const Value& group = groups.items()[g];
    if (!group.is_dict()) fail(where, ": param_groups[", g, "] is a ", group.type_name(), ", not a dict");
    const std::string prefix = concat("param_groups.", g, ".");
    for (const auto& [k, v] : group.dict_items()) {
      if (k.kind() != Value::Kind::String)
        fail(where, ": param_groups[", g, "] has the non-string key ", k.summary(40));
      const std::string& name = k.to_string();
      const GroupKey* known = nullptr;
      if (layout)
        for (const GroupKey& key : layout->keys)
          if (name == key.torch_name) known = &key;
      if (name == "params") {
        if (v.kind() != Value::Kind::List) fail(where, ": param_groups[", g, "]['params'] is not a list");
        flat.numbers[prefix + "num_params"] = static_cast<double>(v.size());
        for (const Value& id : v.items()) {
          const auto next = static_cast<int64_t>(position.size());
          if (!position.emplace(id.to_int(), next).second)
            fail(where, ": parameter id ", id.to_int(), " appears twice in param_groups");
        }
      } else if (name == "betas") {
        if (v.kind() != Value::Kind::Tuple && v.kind() != Value::Kind::List) fail(where, ": 'betas' is not a pair");
        if (v.size() != 2) fail(where, ": 'betas' holds ", v.size(), " values, not 2");
        flat.numbers[prefix + "beta1"] = v.items()[0].to_double();
        flat.numbers[prefix + "beta2"] = v.items()[1].to_double();
      } else if (known && known->kind != GroupKey::Kind::Number && known->kind != GroupKey::Kind::Bool) {
        // Keys for PyTorch's implementation choices: ember's own update is the one they select
        // when they hold their defaults.
        const bool want_true = known->kind == GroupKey::Kind::True;
        const bool ok = known->kind == GroupKey::Kind::None
                            ? (v.is_none() || (v.kind() == Value::Kind::Bool && !v.to_bool()))
                            : (v.kind() == Value::Kind::Bool && v.to_bool() == want_true);
        if (!ok)
          fail(where, ": param_groups[", g, "] has ", name, "=", v.summary(40), ", which ember's ", layout->name,
               " does not implement",
               name == "decoupled_weight_decay" ? " (load it into the other of Adam and AdamW)" : "");
      } else if (v.kind() == Value::Kind::Bool || v.kind() == Value::Kind::Int || v.kind() == Value::Kind::Float) {
        flat.numbers[prefix + name] = v.to_double();
      } else if (!v.is_none()) {
        fail(where, ": param_groups[", g, "]['", name, "'] is a ", v.type_name(), " (", v.summary(60),
             "); ember keeps numbers and booleans only");
      }
    }
    if (!flat.numbers.count(prefix + "num_params")) fail(where, ": param_groups[", g, "] has no 'params'");
  }

  const Value& per_param = state["state"];
  if (!per_param.is_dict()) fail(where, ": 'state' is a ", per_param.type_name(), ", not a dict");
  for (const auto& [id, entries] : per_param.dict_items()) {
    auto it = position.find(id.to_int());
    if (it == position.end())
      fail(where, ": 'state' has an entry for parameter id ", id.to_int(), ", which no group lists");
    if (!entries.is_dict()) fail(where, ": state[", id.to_int(), "] is not a dict");
    for (const auto& [name, value] : entries.dict_items()) {
      if (value.is_none()) continue;  // e.g. SGD's momentum_buffer before the first step
      if (name.kind() == Value::Kind::String && name.to_string() == "step" &&
          (value.kind() == Value::Kind::Int || value.kind() == Value::Kind::Float)) {
        // PyTorch before 1.12 kept the step count as a Python number.
        flat.tensors[concat("state.", it->second, ".step")] = scalar_tensor(value.to_double(), TensorOptions(kFloat32));
        continue;
      }
      if (!value.is_tensor())
        fail(where, ": state[", id.to_int(), "][", name.summary(40), "] is a ", value.type_name(), ", not a tensor");
      flat.tensors[concat("state.", it->second, ".", name.to_string())] = value.to_tensor();
    }
  }
  optimizer.load_state_dict(flat);
}

}  // namespace ember::io
