// State dicts between ember's types and the layout PyTorch's state_dict() methods produce, so
// that a torch.save'd checkpoint loads into ember and ember's loads into PyTorch.
#include <algorithm>
#include <cmath>
#include <map>
#include <set>
#include <string>
#include <utility>
#include <vector>

#include "core/check.h"
#include "ember/factories.h"
#include "ember/io/pytorch.h"
#include "io/optimizer_layouts.h"

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

using layouts::GroupKey;
using layouts::OptimizerLayout;

// "state.3.exp_avg" -> (3, "exp_avg")
std::pair<int64_t, std::string> split_state_key(const std::string& key) {
  const size_t dot = key.find('.', 6);
  return {std::stoll(key.substr(6, dot - 6)), key.substr(dot + 1)};
}

}  // namespace

namespace {

using K = GroupKey::Kind;

std::string quoted_list(const std::vector<std::string>& names) {
  std::string out;
  for (const std::string& n : names) out += (out.empty() ? "'" : ", '") + n + "'";
  return out;
}

// ---- saving ----

/// The value of param_group key `k` from ember's options; `used` collects the options it read.
Value group_value(const GroupKey& k, const optim::ParamGroup& group, std::set<std::string>& used) {
  auto option = [&](const std::string& name) {
    used.insert(name);
    return group.has(name) ? group.get(name) : 0.0;
  };
  switch (k.kind) {
    case K::Number:
      return Value(option(k.torch_name));
    case K::Int:
      return Value(static_cast<int64_t>(std::llround(option(k.torch_name))));
    case K::Bool:
      return Value(option(k.torch_name) != 0);
    case K::Tuple: {
      Value::Items items;
      for (const char* part : k.parts) {
        const bool optional = part[0] == '?';
        const std::string name = optional ? part + 1 : part;
        if (optional && !group.has(name)) {
          used.insert(name);
          items.emplace_back();  // None: e.g. Adafactor's eps1, the dtype's machine epsilon
        } else {
          items.emplace_back(option(name));
        }
      }
      return Value::tuple(std::move(items));
    }
    case K::Choice: {
      const double code = option(k.torch_name);
      const auto index = static_cast<size_t>(code);
      if (code >= 0 && index < k.parts.size() && k.parts[index]) return Value(k.parts[index]);
      return Value();
    }
    case K::None:
      return Value();
    case K::False:
      return Value(false);
    case K::True:
      return Value(true);
  }
  return Value();
}

/// LBFGS's state as PyTorch keeps it. ember keeps PyTorch's lists as numbered entries ("ro.0",
/// ...) and its Python numbers as 0-dim tensors on the host; PyTorch's H_diag and ro are tensors
/// of the flat direction's dtype and device.
Value::DictItems saved_lbfgs_state(const OptimizerLayout& layout, std::map<std::string, Tensor> entries,
                                   const optim::Optimizer& optimizer) {
  const optim::ParamGroup& group = optimizer.param_groups().front();
  const auto direction = entries.find("d");
  const Tensor like = direction != entries.end() ? direction->second : group.params.front();
  auto like_direction = [&](const Tensor& t) { return t.to(like.device(), like.dtype(), false, /*copy=*/true); };
  // PyTorch sets d, t, the lists and the rest together at the end of a step that iterated.
  const bool iterated = direction != entries.end();
  auto take_list = [&](const std::string& name) {
    Value::Items items;
    for (size_t i = 0;; ++i) {
      auto it = entries.find(concat(name, ".", i));
      if (it == entries.end()) break;
      items.emplace_back(name == "ro" ? like_direction(it->second) : it->second);
      entries.erase(it);
    }
    return items;
  };
  Value::DictItems out;
  int64_t n_iter = 0;
  for (const char* name_chars : layout.state_names) {
    const std::string name = name_chars;
    if (name == "old_dirs" || name == "old_stps" || name == "ro") {
      if (iterated) out.emplace_back(Value(name), Value::list(take_list(name)));
      continue;
    }
    if (name == "al") {
      // The two-loop recursion's scratch list, made by the first iteration after the first: each
      // iteration writes its entries before reading them, so Nones continue the run exactly.
      const auto history_size = static_cast<size_t>(group.has("history_size") ? group.get("history_size") : 0);
      if (n_iter >= 2) out.emplace_back(Value(name), Value::list(Value::Items(history_size)));
      continue;
    }
    auto it = entries.find(name);
    if (it == entries.end()) continue;
    const Tensor t = it->second;
    entries.erase(it);
    if (name == "func_evals" || name == "n_iter") {
      const auto count = static_cast<int64_t>(t.item<double>());
      if (name == "n_iter") n_iter = count;
      out.emplace_back(Value(name), Value(count));
    } else if (name == "t" || name == "prev_loss") {
      out.emplace_back(Value(name), Value(t.item<double>()));
    } else if (name == "H_diag") {
      out.emplace_back(Value(name), Value(like_direction(t)));
    } else {
      out.emplace_back(Value(name), Value(t));
    }
  }
  for (auto& [name, t] : entries) out.emplace_back(Value(name), Value(t));
  return out;
}

/// One parameter's state in PyTorch's order of insertion.
Value::DictItems saved_state(const OptimizerLayout* layout, std::map<std::string, Tensor> entries,
                             const optim::Optimizer& optimizer) {
  if (layout && layout->form == layouts::StateForm::LBFGS)
    return saved_lbfgs_state(*layout, std::move(entries), optimizer);
  Value::DictItems out;
  if (layout) {
    for (const char* name : layout->state_names) {
      auto it = entries.find(name);
      if (it == entries.end()) continue;
      out.emplace_back(Value(name), Value(it->second));
      entries.erase(it);
    }
  }
  for (auto& [name, t] : entries) out.emplace_back(Value(name), Value(t));
  return out;
}

}  // namespace

Value optimizer_state(const optim::Optimizer& optimizer) {
  const optim::OptimizerStateDict flat = optimizer.state_dict();
  const OptimizerLayout* layout = layouts::layout_of(optimizer);

  // "state": {index: {name: value}}, indices in ascending order as PyTorch lists them.
  std::map<int64_t, std::map<std::string, Tensor>> per_param;
  for (const auto& [key, tensor] : flat.tensors) {
    auto [index, name] = split_state_key(key);
    per_param[index][name] = tensor;
  }
  Value::DictItems state;
  for (auto& [index, entries] : per_param)
    state.emplace_back(Value(index), Value::dict(saved_state(layout, std::move(entries), optimizer)));

  Value::Items groups;
  int64_t next_index = 0;
  for (const optim::ParamGroup& group : optimizer.param_groups()) {
    Value::DictItems g;
    std::set<std::string> used;
    if (layout)
      for (const GroupKey& k : layout->keys) g.emplace_back(Value(k.torch_name), group_value(k, group, used));
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

namespace {

// ---- loading ----

constexpr const char* kWhere = "io::load_optimizer_state";

/// Whether `layout`'s optimizer could have saved `group`: it has every hyper-parameter key of
/// the layout, no hyper-parameter key that only other optimizers have, and the implementation
/// choices that tell Adam from AdamW.
bool could_have_saved(const OptimizerLayout& layout, const Value& group) {
  for (const GroupKey& k : layout.keys) {
    if (!group.contains(k.torch_name)) {
      if (!k.may_be_absent()) return false;
      continue;
    }
    const Value& v = group[k.torch_name];
    if ((k.kind == K::True || k.kind == K::False) && v.kind() == Value::Kind::Bool &&
        v.to_bool() != (k.kind == K::True))
      return false;
  }
  for (const auto& [key, v] : group.dict_items()) {
    if (key.kind() != Value::Kind::String || layout.key(key.to_string())) continue;
    for (const OptimizerLayout* other : layouts::all_layouts()) {
      const GroupKey* k = other->key(key.to_string());
      if (k && k->is_hyper_parameter()) return false;
    }
  }
  return true;
}

/// Refuses a param_group saved by another optimizer, naming the keys that tell and, where the
/// keys say, the optimizer that saved it. Keys no optimizer has (a scheduler's "initial_lr") pass.
void check_group_is_for(const OptimizerLayout& layout, const Value& group, size_t g) {
  std::vector<std::string> missing, foreign;
  for (const GroupKey& k : layout.keys)
    if (!k.may_be_absent() && !group.contains(k.torch_name)) missing.emplace_back(k.torch_name);
  for (const auto& [key, v] : group.dict_items()) {
    if (key.kind() != Value::Kind::String || layout.key(key.to_string())) continue;
    for (const OptimizerLayout* other : layouts::all_layouts()) {
      const GroupKey* k = other->key(key.to_string());
      if (k && k->is_hyper_parameter()) {
        foreign.push_back(key.to_string());
        break;
      }
    }
  }
  if (missing.empty() && foreign.empty()) return;
  // The optimizers that could have saved it; of those, the ones whose every key it has when
  // there are such (a state that lacks a flag may be older than the flag, but rarely is).
  std::vector<std::string> savers, exact;
  for (const OptimizerLayout* other : layouts::all_layouts()) {
    if (other == &layout || !could_have_saved(*other, group)) continue;
    savers.emplace_back(other->name);
    if (std::all_of(other->keys.begin(), other->keys.end(),
                    [&](const GroupKey& k) { return group.contains(k.torch_name); }))
      exact.emplace_back(other->name);
  }
  if (!exact.empty()) savers = exact;
  std::string which;
  for (size_t i = 0; i < savers.size(); ++i) which += (i == 0 ? "" : " or ") + savers[i];
  fail(kWhere, ": this state is not ", layout.name, "'s: param_groups[", g, "]",
       missing.empty() ? "" : concat(" lacks ", quoted_list(missing)),
       !missing.empty() && !foreign.empty() ? " and" : "",
       foreign.empty() ? "" : concat(" has ", quoted_list(foreign), ", which ", layout.name, " does not have"),
       which.empty() ? "" : concat(" (its keys are those of ", which, ")"));
}

double number_of(const Value& v, const std::string& what) {
  if (v.kind() == Value::Kind::Bool || v.kind() == Value::Kind::Int || v.kind() == Value::Kind::Float)
    return v.to_double();
  if (v.is_tensor() && v.to_tensor().numel() == 1) return v.to_tensor().item<double>();  // a tensor lr, say
  fail(kWhere, ": ", what, " is a ", v.type_name(), " (", v.summary(60), "), not a number");
  return 0;
}

/// Reads the param_group key `k` of `layout` into ember's options under `prefix`.
void load_group_key(const OptimizerLayout& layout, const GroupKey& k, const Value& v, size_t g,
                    const std::string& prefix, std::map<std::string, double>& numbers) {
  const std::string name = k.torch_name;
  switch (k.kind) {
    case K::Number:
    case K::Int:
    case K::Bool:
      numbers[prefix + name] = number_of(v, concat("param_groups[", g, "]['", name, "']"));
      return;
    case K::Tuple: {
      if (v.kind() != Value::Kind::Tuple && v.kind() != Value::Kind::List)
        fail(kWhere, ": param_groups[", g, "]['", name, "'] is a ", v.type_name(), ", not a tuple of ", k.parts.size());
      if (v.size() != k.parts.size())
        fail(kWhere, ": param_groups[", g, "]['", name, "'] holds ", v.size(), " values, not ", k.parts.size());
      for (size_t i = 0; i < k.parts.size(); ++i) {
        const bool optional = k.parts[i][0] == '?';
        const std::string part = optional ? k.parts[i] + 1 : k.parts[i];
        if (v.items()[i].is_none() && optional) continue;  // ember's group then lacks the option
        numbers[prefix + part] = number_of(v.items()[i], concat("param_groups[", g, "]['", name, "'][", i, "]"));
      }
      return;
    }
    case K::Choice: {
      if (v.is_none()) {
        numbers[prefix + name] = 0;
        return;
      }
      std::string known = "None";
      for (size_t i = 1; i < k.parts.size(); ++i) {
        if (v.kind() == Value::Kind::String && v.to_string() == k.parts[i]) {
          numbers[prefix + name] = static_cast<double>(i);
          return;
        }
        known += concat(", '", k.parts[i], "'");
      }
      fail(kWhere, ": param_groups[", g, "]['", name, "'] is ", v.summary(60), ", which ember's ", layout.name,
           " does not implement (it takes ", known, ")");
      return;
    }
    case K::None:
    case K::False:
    case K::True: {
      // Keys for PyTorch's implementation choices: ember's own update is the one they select
      // when they hold their defaults.
      const bool want_true = k.kind == K::True;
      const bool ok = k.kind == K::None ? (v.is_none() || (v.kind() == Value::Kind::Bool && !v.to_bool()))
                                        : (v.kind() == Value::Kind::Bool && v.to_bool() == want_true);
      if (!ok)
        fail(kWhere, ": param_groups[", g, "] has ", name, "=", v.summary(40), ", which ember's ", layout.name,
             " does not implement",
             name == "decoupled_weight_decay" ? " (load it into the other of Adam and AdamW)" : "");
      return;
    }
  }
}

Tensor host_scalar_of(const Value& v, Dtype dtype, const std::string& what) {
  if (v.is_tensor()) return v.to_tensor().detach().to(dtype);
  if (v.kind() == Value::Kind::Int || v.kind() == Value::Kind::Float || v.kind() == Value::Kind::Bool)
    return scalar_tensor(v.to_double(), TensorOptions(dtype));
  fail(kWhere, ": ", what, " is a ", v.type_name(), " (", v.summary(60), "), not a number");
  return {};
}

/// One parameter's saved state into ember's entries `state.<position>.<name>`.
void load_param_state(const OptimizerLayout* layout, const Value& entries, int64_t id, int64_t position,
                      const Tensor& param, std::map<std::string, Tensor>& tensors) {
  if (!entries.is_dict()) fail(kWhere, ": state[", id, "] is not a dict");
  const std::string prefix = concat("state.", position, ".");
  const bool lbfgs = layout && layout->form == layouts::StateForm::LBFGS;
  std::vector<std::string> names;
  std::map<std::string, size_t> list_sizes;  // LBFGS's history lists
  for (const auto& [key, value] : entries.dict_items()) {
    if (key.kind() != Value::Kind::String) fail(kWhere, ": state[", id, "] has the non-string key ", key.summary(40));
    const std::string& name = key.to_string();
    const std::string what = concat("state[", id, "]['", name, "']");
    if (layout && !layout->keeps_state(name)) {
      std::vector<std::string> kept(layout->state_names.begin(), layout->state_names.end());
      fail(kWhere, ": ", what, " is not state that ", layout->name, " keeps (it keeps ", quoted_list(kept),
           "): is this the state of another optimizer?");
    }
    if (value.is_none()) continue;  // e.g. SGD's momentum_buffer before the first step
    names.push_back(name);
    if (lbfgs && name == "al") continue;  // scratch, rewritten before it is read
    if (lbfgs && (name == "old_dirs" || name == "old_stps" || name == "ro")) {
      if (value.kind() != Value::Kind::List && value.kind() != Value::Kind::Tuple)
        fail(kWhere, ": ", what, " is a ", value.type_name(), ", not a list");
      list_sizes[name] = value.size();
      for (size_t i = 0; i < value.size(); ++i) {
        const Value& item = value.items()[i];
        const std::string item_what = concat(what, "[", i, "]");
        if (name == "ro") {
          tensors[concat(prefix, name, ".", i)] = host_scalar_of(item, kFloat64, item_what);
        } else {
          if (!item.is_tensor()) fail(kWhere, ": ", item_what, " is a ", item.type_name(), ", not a tensor");
          tensors[concat(prefix, name, ".", i)] = item.to_tensor();
        }
      }
      continue;
    }
    if (lbfgs && (name == "func_evals" || name == "n_iter")) {
      tensors[prefix + name] = host_scalar_of(value, kInt64, what);
      continue;
    }
    if (lbfgs && (name == "t" || name == "H_diag" || name == "prev_loss")) {
      tensors[prefix + name] = host_scalar_of(value, kFloat64, what);  // ember computes them in double
      continue;
    }
    if (name == "step" && (value.kind() == Value::Kind::Int || value.kind() == Value::Kind::Float)) {
      // PyTorch before 1.12 kept the step count as a Python number.
      tensors[prefix + name] = scalar_tensor(value.to_double(), TensorOptions(kFloat32));
      continue;
    }
    if (!value.is_tensor()) fail(kWhere, ": ", what, " is a ", value.type_name(), ", not a tensor");
    tensors[prefix + name] = value.to_tensor();
  }
  // The curvature pairs and their 1/(y.s) go together: the two-loop recursion reads all three.
  if (!list_sizes.empty() &&
      (list_sizes["old_dirs"] != list_sizes["old_stps"] || list_sizes["old_dirs"] != list_sizes["ro"]))
    fail(kWhere, ": state[", id, "] holds ", list_sizes["old_dirs"], " 'old_dirs', ", list_sizes["old_stps"],
         " 'old_stps' and ", list_sizes["ro"], " 'ro': LBFGS's history lists must be of one length");
  if (!layout || names.empty()) return;
  for (const std::string& needed : layout->required_state(param))
    if (std::find(names.begin(), names.end(), needed) == names.end())
      fail(kWhere, ": state[", id, "] has no '", needed, "', which ", layout->name,
           " needs for this parameter once it has state (it has ", quoted_list(names), ")");
}

}  // namespace

void load_optimizer_state(optim::Optimizer& optimizer, const Value& state) {
  const char* where = kWhere;
  if (!state.is_dict() || !state.contains("state") || !state.contains("param_groups"))
    fail(where, ": expected PyTorch's optimizer state_dict ({'state': ..., 'param_groups': [...]}) but got ",
         state.summary(120));
  const Value& groups = state["param_groups"];
  if (groups.kind() != Value::Kind::List) fail(where, ": 'param_groups' is a ", groups.type_name(), ", not a list");
  if (groups.size() != optimizer.param_groups().size())
    fail(where, ": the saved state has ", groups.size(), " parameter groups but the optimizer has ",
         optimizer.param_groups().size());
  const OptimizerLayout* layout = layouts::layout_of(optimizer);

  optim::OptimizerStateDict flat;
  flat.numbers["num_param_groups"] = static_cast<double>(groups.size());
  std::map<int64_t, int64_t> position;  // a saved parameter id -> its place across the groups
  std::vector<Tensor> params;           // by place
  for (size_t g = 0; g < groups.size(); ++g) {
    const Value& group = groups.items()[g];
    if (!group.is_dict()) fail(where, ": param_groups[", g, "] is a ", group.type_name(), ", not a dict");
    if (layout) check_group_is_for(*layout, group, g);
    const optim::ParamGroup& current = optimizer.param_groups()[g];
    params.insert(params.end(), current.params.begin(), current.params.end());
    const std::string prefix = concat("param_groups.", g, ".");
    for (const auto& [k, v] : group.dict_items()) {
      if (k.kind() != Value::Kind::String)
        fail(where, ": param_groups[", g, "] has the non-string key ", k.summary(40));
      const std::string& name = k.to_string();
      const GroupKey* known = layout ? layout->key(name) : nullptr;
      if (name == "params") {
        if (v.kind() != Value::Kind::List) fail(where, ": param_groups[", g, "]['params'] is not a list");
        if (v.size() != current.params.size())
          fail(where, ": param_groups[", g, "] holds ", v.size(), " parameters but the optimizer's group ", g, " has ",
               current.params.size(), " (PyTorch: loaded state dict contains a parameter group that doesn't match ",
               "the size of optimizer's group)");
        flat.numbers[prefix + "num_params"] = static_cast<double>(v.size());
        for (const Value& id : v.items()) {
          const auto next = static_cast<int64_t>(position.size());
          if (!position.emplace(id.to_int(), next).second)
            fail(where, ": parameter id ", id.to_int(), " appears twice in param_groups");
        }
      } else if (known) {
        load_group_key(*layout, *known, v, g, prefix, flat.numbers);
      } else if (name == "betas") {  // a user's optimizer
        if (v.kind() != Value::Kind::Tuple && v.kind() != Value::Kind::List) fail(where, ": 'betas' is not a pair");
        if (v.size() != 2) fail(where, ": 'betas' holds ", v.size(), " values, not 2");
        flat.numbers[prefix + "beta1"] = v.items()[0].to_double();
        flat.numbers[prefix + "beta2"] = v.items()[1].to_double();
      } else if (v.kind() == Value::Kind::Bool || v.kind() == Value::Kind::Int || v.kind() == Value::Kind::Float) {
        flat.numbers[prefix + name] = v.to_double();
      } else if (!v.is_none()) {
        fail(where, ": param_groups[", g, "]['", name, "'] is a ", v.type_name(), " (", v.summary(60),
             "); ember keeps numbers and booleans only");
      }
    }
    if (!flat.numbers.count(prefix + "num_params")) fail(where, ": param_groups[", g, "] has no 'params'");
    // Options a state saved before they existed lacks keep their present values, as PyTorch's
    // __setstate__ fills in its defaults.
    if (layout)
      for (const GroupKey& key : layout->keys)
        if (key.kind == K::Bool && !group.contains(key.torch_name) && current.has(key.torch_name))
          flat.numbers[prefix + key.torch_name] = current.get(key.torch_name);
  }

  const Value& per_param = state["state"];
  if (!per_param.is_dict()) fail(where, ": 'state' is a ", per_param.type_name(), ", not a dict");
  for (const auto& [id, entries] : per_param.dict_items()) {
    auto it = position.find(id.to_int());
    if (it == position.end())
      fail(where, ": 'state' has an entry for parameter id ", id.to_int(), ", which no group lists");
    if (it->second >= static_cast<int64_t>(params.size()))
      fail(where, ": 'state' has an entry for parameter id ", id.to_int(), " but the optimizer has ", params.size(),
           " parameters");
    load_param_state(layout, entries, id.to_int(), it->second, params[static_cast<size_t>(it->second)], flat.tensors);
  }
  optimizer.load_state_dict(flat);
}

}  // namespace ember::io
