// io::optimizer_state and io::load_optimizer_state for Adagrad, Adamax, NAdam, RAdam, Rprop, ASGD,
// Adafactor, Muon and LBFGS, against the states PyTorch 2.15's torch.save writes for them after a
// few steps (tests/io/golden/optimizer_state_more_*, from tools/gen_optimizer_state_more_golden.py):
// PyTorch's state loads and the next step lands where PyTorch's unbroken run did; ember's state
// is PyTorch's, key for key and type for type, and reads back through torch.save's bytes; a state
// saved by another optimizer is refused with a message naming the keys that tell.
#include <gtest/gtest.h>

#include <algorithm>
#include <cstdlib>
#include <filesystem>
#include <functional>
#include <map>
#include <memory>
#include <set>
#include <stdexcept>
#include <string>
#include <vector>

#include "ember/ember.h"
#include "ember/io/pytorch.h"
#include "ember/io/safetensors.h"
#include "ember/optim/optimizers.h"
#include "support/error_of.h"

namespace {

using namespace ember;
using ember_test::error_of;
using io::Value;
namespace fs = std::filesystem;

struct Case {
  const char* name;        // the goldens' suffix
  const char* kind;        // ember's (and PyTorch's) class
  double tolerance;        // on the parameters after the next step
  double state_tolerance;  // on the state after it (relative to its size where that exceeds 1)
  // How many of the first groups the generator built without options of their own. A Python
  // dict keeps the order of insertion, so PyTorch's keys come in the constructor's order only
  // for those: a group's own options come first (PyTorch's loading does not care).
  size_t groups_in_constructor_order;
};

// Muon orthogonalises in bfloat16, whose rounding ember's matmuls do not follow bit for bit: its
// parameters land within a tenth of the step (0.006 to 0.015 here), and its momentum buffer,
// computed before, matches to 1e-12 (next_state_matches).
const std::vector<Case> kCases = {
    {"adagrad", "Adagrad", 1e-12, 1e-12, 1},
    {"adamax", "Adamax", 1e-12, 1e-12, 1},
    {"nadam", "NAdam", 1e-12, 1e-12, 1},
    {"radam", "RAdam", 1e-12, 1e-12, 1},
    {"rprop", "Rprop", 1e-12, 1e-12, 0},
    {"asgd", "ASGD", 1e-12, 1e-12, 1},
    {"adafactor", "Adafactor", 1e-12, 1e-12, 1},
    {"muon", "Muon", 2e-3, 1e-12, 1},
    {"lbfgs", "LBFGS", 1e-10, 1e-10, 1},
    {"lbfgs_strong_wolfe", "LBFGS", 1e-10, 1e-10, 1},
    {"nadam_float32", "NAdam", 1e-6, 1e-6, 1},
    // ember's LBFGS keeps its scalars in double, PyTorch's float32 ones round (lbfgs.h).
    {"lbfgs_float32", "LBFGS", 1e-5, 1e-5, 1},
};

fs::path golden(const std::string& name, const char* ext) {
  return fs::path(EMBER_SOURCE_DIR) / "tests" / "io" / "golden" / ("optimizer_state_more_" + name + ext);
}

struct Golden {
  Case c;
  Value state;  // what torch.save wrote
  io::SafetensorsData data;
  size_t num_params = 0;
  bool lbfgs() const { return std::string(c.kind) == "LBFGS"; }
  const Tensor& at(const std::string& what, size_t i) const { return data.at(what + "." + std::to_string(i)); }
};

Golden load_golden(const Case& c) {
  Golden g{c, io::torch_load(golden(c.name, ".pt")), io::load_safetensors(golden(c.name, ".safetensors"))};
  while (g.data.contains("param." + std::to_string(g.num_params))) ++g.num_params;
  return g;
}

std::unique_ptr<optim::Optimizer> make_optimizer(const std::string& kind, std::vector<optim::ParamGroup> groups) {
  using namespace optim;
  if (kind == "Adagrad") return std::make_unique<Adagrad>(std::move(groups));
  if (kind == "Adamax") return std::make_unique<Adamax>(std::move(groups));
  if (kind == "NAdam") return std::make_unique<NAdam>(std::move(groups));
  if (kind == "RAdam") return std::make_unique<RAdam>(std::move(groups));
  if (kind == "Rprop") return std::make_unique<Rprop>(std::move(groups));
  if (kind == "ASGD") return std::make_unique<ASGD>(std::move(groups));
  if (kind == "Adafactor") return std::make_unique<Adafactor>(std::move(groups));
  if (kind == "Muon") return std::make_unique<Muon>(std::move(groups));
  if (kind == "LBFGS") return std::make_unique<LBFGS>(std::move(groups));
  if (kind == "Adam") return std::make_unique<Adam>(std::move(groups));
  if (kind == "SGD") return std::make_unique<SGD>(std::move(groups));
  ADD_FAILURE() << "no optimizer " << kind;
  return nullptr;
}

/// An optimizer of `kind` over fresh parameters holding the golden's "param.<i>", grouped as its
/// param_groups say (with ember's defaults: the loaded state brings the options).
std::unique_ptr<optim::Optimizer> fresh(const Golden& g, std::vector<Tensor>& params, const std::string& kind = "") {
  params.clear();
  for (size_t i = 0; i < g.num_params; ++i) params.push_back(g.at("param", i).clone().requires_grad_());
  std::vector<optim::ParamGroup> groups;
  for (const Value& group : g.state["param_groups"].items()) {
    std::vector<Tensor> ps;
    for (const Value& index : group["params"].items()) ps.push_back(params.at(static_cast<size_t>(index.to_int())));
    groups.emplace_back(ps);
  }
  return make_optimizer(kind.empty() ? g.c.kind : kind, std::move(groups));
}

/// The generator's LBFGS objective: sum_i (i+1) |p_i - target_i|^2 + 0.1 sum p_i^4.
Tensor loss_of(const Golden& g, const std::vector<Tensor>& params) {
  Tensor loss;
  for (size_t i = 0; i < params.size(); ++i) {
    Tensor d = params[i] - g.at("target", i), q = params[i] * params[i];
    Tensor term = (d * d * (static_cast<double>(i) + 1.0)).sum() + (q * q).sum() * 0.1;
    loss = loss.defined() ? loss + term : term;
  }
  return loss;
}

/// The state tensors after the next step against PyTorch's: what shows a loaded state was
/// read as PyTorch meant it, entry by entry (LBFGS's lists and numbers are checked through its
/// parameters; "d" and "prev_flat_grad" here).
void next_state_matches(const Golden& g, optim::Optimizer& opt) {
  const double tolerance = g.c.state_tolerance;
  size_t compared = 0;
  for (const std::string& key : g.data.names()) {
    if (!key.starts_with("next_state.")) continue;
    const size_t dot = key.find('.', 11);
    const size_t id = std::stoul(key.substr(11, dot - 11));
    const std::string name = key.substr(dot + 1);
    const auto& state = opt.state(id);
    if (g.lbfgs() && name == "H_diag") continue;  // ember's in double, PyTorch's a tensor: via the parameters
    ASSERT_TRUE(state.count(name)) << key;
    const Tensor want = g.data.at(key), got = state.at(name).detach().to(want.dtype());
    ASSERT_EQ(got.sizes().vec(), want.sizes().vec()) << key;
    const double scale = std::max(1.0, want.abs().max().item<double>());
    EXPECT_LE((got - want).abs().max().item<double>(), tolerance * scale) << key;
    ++compared;
  }
  EXPECT_GT(compared, 0u);
}

/// The next step (PyTorch's gradients, or LBFGS's closure), then the parameters against PyTorch's.
void next_step_matches(const Golden& g, optim::Optimizer& opt, std::vector<Tensor>& params) {
  if (g.lbfgs()) {
    static_cast<optim::LBFGS&>(opt).step([&] {
      opt.zero_grad();
      Tensor loss = loss_of(g, params);
      loss.backward();
      return loss;
    });
  } else {
    for (size_t i = 0; i < params.size(); ++i) params[i].set_grad(g.at("grad", i).clone());
    opt.step();
  }
  for (size_t i = 0; i < params.size(); ++i) {
    const Tensor want = g.at("next", i), before = g.at("param", i);
    const double err = (params[i].detach() - want).abs().max().item<double>();
    EXPECT_LE(err, g.c.tolerance) << "parameter " << i << " after the step";
    // The step moved it: the comparison is not of two unchanged tensors.
    EXPECT_GT((want - before).abs().max().item<double>(), 2 * g.c.tolerance) << "parameter " << i;
  }
  next_state_matches(g, opt);
}

bool is_number(const Value& v) { return v.kind() == Value::Kind::Int || v.kind() == Value::Kind::Float; }

/// `ours` against PyTorch's `theirs`: tensors of the same dtype, sizes and bytes (or, with
/// `structure_only`, dtype and sizes), numbers equal as numbers (PyTorch writes a default 0 as an
/// int where ember writes 0.0), counts as ints, and booleans, None, strings and containers as such.
void expect_same(const Value& ours, const Value& theirs, const std::string& where, bool structure_only = false) {
  SCOPED_TRACE(where);
  if (is_number(theirs)) {
    ASSERT_TRUE(is_number(ours)) << ours.summary() << " vs PyTorch's " << theirs.summary();
    if (theirs.kind() == Value::Kind::Int &&
        (where.ends_with("func_evals']") || where.ends_with("n_iter']") || where.ends_with("steps']") ||
         where.ends_with("max_iter']") || where.ends_with("max_eval']") || where.ends_with("history_size']"))) {
      EXPECT_EQ(ours.kind(), Value::Kind::Int) << "a count is saved as a Python int";
    }
    if (!structure_only) {
      EXPECT_EQ(ours.to_double(), theirs.to_double());
    }
    return;
  }
  ASSERT_EQ(ours.kind(), theirs.kind()) << ours.summary() << " vs PyTorch's " << theirs.summary();
  switch (theirs.kind()) {
    case Value::Kind::Tensor: {
      const Tensor &a = ours.to_tensor(), &b = theirs.to_tensor();
      EXPECT_EQ(a.dtype(), b.dtype());
      EXPECT_EQ(a.sizes().vec(), b.sizes().vec());
      if (!structure_only && a.dtype() == b.dtype() && a.sizes().vec() == b.sizes().vec()) {
        EXPECT_TRUE(equal(a, b)) << a.str() << " vs PyTorch's " << b.str();
      }
      break;
    }
    case Value::Kind::List:
    case Value::Kind::Tuple:
      // LBFGS's "al" is scratch: ember writes Nones (see pytorch_state.cpp), PyTorch its last values.
      if (where.ends_with("['al']")) {
        EXPECT_TRUE(structure_only || ours.size() == theirs.size()) << ours.summary();
        break;
      }
      if (structure_only) {  // another run: LBFGS's history may differ in length
        if (ours.size() > 0 && theirs.size() > 0) expect_same(ours.items()[0], theirs.items()[0], where + "[0]", true);
        break;
      }
      ASSERT_EQ(ours.size(), theirs.size()) << ours.summary() << " vs PyTorch's " << theirs.summary();
      for (size_t i = 0; i < theirs.size(); ++i)
        expect_same(ours.items()[i], theirs.items()[i], where + "[" + std::to_string(i) + "]", structure_only);
      break;
    case Value::Kind::Dict: {
      std::vector<std::string> our_keys, their_keys;
      for (const auto& [k, v] : ours.dict_items()) our_keys.push_back(k.summary());
      for (const auto& [k, v] : theirs.dict_items()) their_keys.push_back(k.summary());
      // PyTorch's LBFGS inserts "al" where its first non-first iteration happened to fall.
      // A Python dict keeps the order of insertion, and a param_group's own options come first
      // (see Case): the order is checked apart, by expect_pytorchs_key_order.
      const bool a_group = where.find("['param_groups'][") != std::string::npos;
      if (a_group || (where.ends_with("['state'][0]") &&
                      std::find(their_keys.begin(), their_keys.end(), "'al'") != their_keys.end())) {
        std::sort(our_keys.begin(), our_keys.end());
        std::sort(their_keys.begin(), their_keys.end());
      }
      ASSERT_EQ(our_keys, their_keys) << "keys";
      for (const auto& [k, v] : theirs.dict_items())
        expect_same(ours[k], v, where + "[" + k.summary() + "]", structure_only);
      break;
    }
    default:
      EXPECT_TRUE(ours == theirs) << ours.summary() << " vs PyTorch's " << theirs.summary();
  }
}

void expect_same_state(const Value& ours, const Value& theirs, bool structure_only = false) {
  expect_same(ours["state"], theirs["state"], "['state']", structure_only);
  if (structure_only) return;
  expect_same(ours["param_groups"], theirs["param_groups"], "['param_groups']");
}

/// The keys of param_groups[g] in order, as Python lists them.
std::vector<std::string> group_keys(const Value& state, size_t g) {
  std::vector<std::string> keys;
  for (const auto& [k, v] : state["param_groups"].items().at(g).dict_items()) keys.push_back(k.to_string());
  return keys;
}

void expect_pytorchs_key_order(const Case& c, const Value& ours, const Value& theirs) {
  for (size_t g = 0; g < c.groups_in_constructor_order; ++g)
    EXPECT_EQ(group_keys(ours, g), group_keys(theirs, g)) << "param_groups[" << g << "]'s keys in PyTorch's order";
}

// ============================================================================================

TEST(OptimizerStateMore, PyTorchStatesContinueInEmber) {
  std::set<std::string> kinds;
  for (const Case& c : kCases) {
    SCOPED_TRACE(c.name);
    const Golden g = load_golden(c);
    kinds.insert(c.kind);
    std::vector<Tensor> params;
    auto opt = fresh(g, params);
    ASSERT_TRUE(opt);
    ASSERT_NO_THROW(io::load_optimizer_state(*opt, g.state))
        << error_of([&] { io::load_optimizer_state(*opt, g.state); });
    for (size_t i = 0; i < opt->param_groups().size(); ++i)
      EXPECT_EQ(opt->param_groups()[i].lr(), g.state["param_groups"].items()[i]["lr"].to_double());
    // What ember would save is what PyTorch saved.
    expect_same_state(io::optimizer_state(*opt), g.state);
    expect_pytorchs_key_order(c, io::optimizer_state(*opt), g.state);
    next_step_matches(g, *opt, params);
  }
  EXPECT_EQ(kinds.size(), 9u);
}

TEST(OptimizerStateMore, EmberStatesReadBackAndContinue) {
  const char* out_dir =
      std::getenv("EMBER_OPTIMIZER_STATE_MORE_OUT");  // for the check in PyTorch (the generator's --check)
  for (const Case& c : kCases) {
    SCOPED_TRACE(c.name);
    const Golden g = load_golden(c);
    std::vector<Tensor> params;
    auto opt = fresh(g, params);
    io::load_optimizer_state(*opt, g.state);
    const Value saved = io::torch_load_from_bytes(io::torch_save_to_bytes(io::optimizer_state(*opt)));
    expect_same_state(saved, g.state);
    if (out_dir)
      io::torch_save(fs::path(out_dir) / ("ember_" + std::string(c.name) + ".pt"), io::optimizer_state(*opt));
    // ember -> bytes -> ember, into a fresh optimizer over fresh parameters.
    std::vector<Tensor> params2;
    auto opt2 = fresh(g, params2);
    io::load_optimizer_state(*opt2, saved);
    next_step_matches(g, *opt2, params2);
  }
}

TEST(OptimizerStateMore, EmbersOwnRunsSaveInPyTorchsLayout) {
  // ember's optimizers from scratch, stepped twice: the same entries, types, dtypes and sizes as
  // PyTorch's state (values differ: other options, other steps).
  for (const Case& c : kCases) {
    SCOPED_TRACE(c.name);
    const Golden g = load_golden(c);
    std::vector<Tensor> params;
    auto opt = fresh(g, params);
    auto step = [&] {
      if (g.lbfgs()) {
        static_cast<optim::LBFGS&>(*opt).step([&] {
          opt->zero_grad();
          Tensor loss = loss_of(g, params);
          loss.backward();
          return loss;
        });
      } else {
        for (size_t i = 0; i < params.size(); ++i) params[i].set_grad(g.at("grad", i).clone());
        opt->step();
      }
    };
    step();
    step();
    const Value ours = io::torch_load_from_bytes(io::torch_save_to_bytes(io::optimizer_state(*opt)));
    if (const char* out_dir = std::getenv("EMBER_OPTIMIZER_STATE_MORE_OUT")) {
      // For the generator's --check: this state, the parameters, and where ember's next step takes them.
      const fs::path dir(out_dir);
      io::torch_save(dir / ("ember_own_" + std::string(c.name) + ".pt"), io::optimizer_state(*opt));
      std::map<std::string, Tensor> run;
      for (size_t i = 0; i < params.size(); ++i) run["param." + std::to_string(i)] = params[i].detach().clone();
      step();
      for (size_t i = 0; i < params.size(); ++i) run["next." + std::to_string(i)] = params[i].detach().clone();
      io::save_safetensors(dir / ("ember_own_" + std::string(c.name) + ".safetensors"), run);
    }
    expect_same_state(ours, g.state, /*structure_only=*/true);
    // The param_groups have PyTorch's keys in PyTorch's order, with PyTorch's kinds of value
    // where the options agree (None or a string, a tuple, a bool).
    expect_pytorchs_key_order(c, ours, g.state);
    for (size_t i = 0; i < g.state["param_groups"].size(); ++i) {
      const Value &mine = ours["param_groups"].items()[i], &theirs = g.state["param_groups"].items()[i];
      ASSERT_EQ(mine.size(), theirs.size()) << mine.summary();
      for (const auto& [name, value] : theirs.dict_items()) {
        ASSERT_TRUE(mine.contains(name)) << name.summary();
        const Value& m = mine[name];
        if (is_number(value)) {
          EXPECT_TRUE(is_number(m)) << name.summary();
        } else if (value.kind() != Value::Kind::String) {
          EXPECT_EQ(m.kind(), value.kind()) << name.summary() << ": " << m.summary() << " vs " << value.summary();
        }
      }
    }
  }
}

TEST(OptimizerStateMore, OptionsArriveUnderEmbersNames) {
  std::vector<Tensor> params;
  const Golden muon = load_golden(kCases[7]);
  auto m = fresh(muon, params);
  io::load_optimizer_state(*m, muon.state);
  const optim::ParamGroup& second = m->param_groups()[1];
  EXPECT_EQ(m->param_groups()[0].get("adjust_lr_fn"), optim::kMuonAdjustLrNone);
  EXPECT_EQ(second.get("adjust_lr_fn"), optim::kMuonAdjustLrMatchRmsAdamW);
  EXPECT_EQ(second.get("ns_steps"), 4);
  EXPECT_EQ(second.get("nesterov"), 0);
  EXPECT_EQ(second.get("ns_b"), -4.775);

  const Golden adafactor = load_golden(kCases[6]);
  auto a = fresh(adafactor, params);
  io::load_optimizer_state(*a, adafactor.state);
  EXPECT_FALSE(a->param_groups()[0].has("eps1"));  // None: the dtype's machine epsilon
  EXPECT_EQ(a->param_groups()[1].get("eps1"), 1e-20);
  EXPECT_EQ(a->param_groups()[1].get("eps2"), 1e-3);
  EXPECT_EQ(a->param_groups()[0].get("beta2_decay"), -0.7);

  const Golden rprop = load_golden(kCases[4]);
  auto r = fresh(rprop, params);
  io::load_optimizer_state(*r, rprop.state);
  EXPECT_EQ(r->param_groups()[1].get("etaminus"), 0.4);
  EXPECT_EQ(r->param_groups()[1].get("etaplus"), 1.3);
  EXPECT_EQ(r->param_groups()[1].get("step_size_min"), 1e-4);
  EXPECT_EQ(r->param_groups()[1].get("step_size_max"), 0.5);
  EXPECT_EQ(r->param_groups()[0].get("maximize"), 1);

  const Golden lbfgs = load_golden(kCases[9]);
  auto l = fresh(lbfgs, params);
  io::load_optimizer_state(*l, lbfgs.state);
  EXPECT_EQ(l->param_groups()[0].get("line_search_fn"), optim::kLBFGSStrongWolfe);
  EXPECT_EQ(l->param_groups()[0].get("history_size"), 3);
  // PyTorch's lists as ember's numbered entries, its numbers as host scalars.
  const auto& s = l->state(0);
  EXPECT_EQ(s.at("n_iter").dtype(), kInt64);
  EXPECT_EQ(s.at("n_iter").item<int64_t>(), lbfgs.state["state"][0]["n_iter"].to_int());
  EXPECT_EQ(s.at("t").item<double>(), lbfgs.state["state"][0]["t"].to_double());
  EXPECT_TRUE(s.count("old_dirs.0"));
  EXPECT_FALSE(s.count("al"));
}

/// The golden `name`'s state loaded into an optimizer of `kind`: the message.
std::string loading_into(const std::string& name, const std::string& kind,
                         const std::function<void(Value&)>& change = nullptr) {
  const Case* c = nullptr;
  for (const Case& k : kCases)
    if (name == k.name) c = &k;
  const Golden g = load_golden(*c);
  Value state = g.state;
  if (change) change(state);
  std::vector<Tensor> params;
  auto opt = fresh(g, params, kind);
  return error_of([&] { io::load_optimizer_state(*opt, state); });
}

Value& entry(Value& dict, const Value& key) {
  for (auto& [k, v] : dict.dict_items())
    if (k == key) return v;
  throw std::runtime_error("no key " + key.summary());
}

TEST(OptimizerStateMore, AnotherOptimizersStateIsRefusedByName) {
  EXPECT_EQ(loading_into("adagrad", "NAdam"),
            "io::load_optimizer_state: this state is not NAdam's: param_groups[0] lacks 'betas', "
            "'momentum_decay' and has 'lr_decay', 'initial_accumulator_value', which NAdam does not have (its keys "
            "are those of Adagrad)");
  EXPECT_EQ(loading_into("nadam", "RAdam"),
            "io::load_optimizer_state: this state is not RAdam's: param_groups[0] has 'momentum_decay', "
            "which RAdam does not have (its keys are those of NAdam)");
  EXPECT_EQ(loading_into("radam", "NAdam"),
            "io::load_optimizer_state: this state is not NAdam's: param_groups[0] lacks 'momentum_decay' "
            "(its keys are those of RAdam)");
  EXPECT_EQ(loading_into("rprop", "ASGD"),
            "io::load_optimizer_state: this state is not ASGD's: param_groups[0] lacks 'lambd', 'alpha', 't0', "
            "'weight_decay' and has 'etas', 'step_sizes', which ASGD does not have (its keys are those of Rprop)");
  // Adamax's options are a subset of Adam's: its state tells.
  EXPECT_EQ(loading_into("adamax", "Adam"),
            "io::load_optimizer_state: state[0]['exp_inf'] is not state that Adam keeps (it keeps 'step', 'exp_avg', "
            "'exp_avg_sq', 'max_exp_avg_sq'): is this the state of another optimizer?");
  const std::string lbfgs_into_adagrad = loading_into("lbfgs", "Adagrad");
  EXPECT_NE(lbfgs_into_adagrad.find("this state is not Adagrad's"), std::string::npos) << lbfgs_into_adagrad;
  EXPECT_NE(lbfgs_into_adagrad.find("(its keys are those of LBFGS)"), std::string::npos) << lbfgs_into_adagrad;
  // LBFGS keeps one group.
  EXPECT_NE(loading_into("muon", "SGD").find("its keys are those of Muon"), std::string::npos);
}

TEST(OptimizerStateMore, BrokenStatesAreRefusedByName) {
  // A state that lacks what the update reads.
  EXPECT_EQ(loading_into("nadam", "NAdam",
                         [](Value& s) {
                           Value& first = entry(entry(s, "state"), Value(0));
                           Value::DictItems kept;
                           for (auto& [k, v] : first.dict_items())
                             if (!(k == Value("mu_product"))) kept.emplace_back(k, v);
                           first = Value::dict(std::move(kept));
                         }),
            "io::load_optimizer_state: state[0] has no 'mu_product', which NAdam needs for this parameter once it "
            "has state (it has 'step', 'exp_avg', 'exp_avg_sq')");
  // Adafactor's factored moments of the wrong sizes.
  const std::string sizes = loading_into("adafactor", "Adafactor", [](Value& s) {
    entry(entry(s, "state"), Value(0)).set("row_var", Value(zeros({4, 1}, kFloat64)));
  });
  EXPECT_NE(sizes.find("'row_var' has size [4, 1] but its parameter of size [3, 4] needs [3, 1]"), std::string::npos)
      << sizes;
  // A matrix's state for a vector.
  EXPECT_EQ(loading_into("adafactor", "Adafactor",
                         [](Value& s) {
                           Value& last = entry(entry(s, "state"), Value(2));
                           last = Value::dict({{"step", last["step"]},
                                               {"row_var", Value(zeros({4, 1}, kFloat64))},
                                               {"col_var", Value(zeros({1, 1}, kFloat64))}});
                         }),
            "io::load_optimizer_state: state[2] has no 'variance', which Adafactor needs for this parameter once it "
            "has state (it has 'step', 'row_var', 'col_var')");
  // A string ember's Muon does not know, a tuple of the wrong length.
  EXPECT_EQ(loading_into("muon", "Muon",
                         [](Value& s) { entry(s, "param_groups").items()[1].set("adjust_lr_fn", Value("rms")); }),
            "io::load_optimizer_state: param_groups[1]['adjust_lr_fn'] is 'rms', which ember's Muon does not "
            "implement (it takes None, 'original', 'match_rms_adamw', 'spectral_unclamped')");
  EXPECT_EQ(loading_into("rprop", "Rprop",
                         [](Value& s) {
                           entry(s, "param_groups").items()[0].set("etas", Value::tuple({0.5, 1.2, 2.0}));
                         }),
            "io::load_optimizer_state: param_groups[0]['etas'] holds 3 values, not 2");
  EXPECT_EQ(loading_into("adafactor", "Adafactor",
                         [](Value& s) {
                           entry(s, "param_groups").items()[0].set("eps", Value::tuple({Value(), Value()}));
                         }),
            "io::load_optimizer_state: param_groups[0]['eps'][1] is a NoneType (None), not a number");
  // LBFGS's lists hold tensors.
  EXPECT_EQ(
      loading_into("lbfgs", "LBFGS",
                   [](Value& s) { entry(entry(s, "state"), Value(0)).set("old_dirs", Value::list({Value(1.5)})); }),
      "io::load_optimizer_state: state[0]['old_dirs'][0] is a float, not a tensor");
  EXPECT_EQ(
      loading_into("lbfgs", "LBFGS", [](Value& s) { entry(entry(s, "state"), Value(0)).set("ro", Value::list()); }),
      "io::load_optimizer_state: state[0] holds 3 'old_dirs', 3 'old_stps' and 0 'ro': LBFGS's history lists "
      "must be of one length");
  // An implementation choice ember lacks.
  EXPECT_EQ(loading_into("asgd", "ASGD",
                         [](Value& s) { entry(s, "param_groups").items()[0].set("capturable", Value(true)); }),
            "io::load_optimizer_state: param_groups[0] has capturable=True, which ember's ASGD does not implement");
}

TEST(OptimizerStateMore, OlderStatesWithoutNewerFlagsTakeThePresentOnes) {
  // A state saved before NAdam had decoupled_weight_decay and maximize (PyTorch's __setstate__
  // fills them in): the optimizer's own values stay.
  const Golden g = load_golden(kCases[2]);
  Value state = g.state;
  for (Value& group : entry(state, "param_groups").items()) {
    Value::DictItems kept;
    for (auto& [k, v] : group.dict_items())
      if (!(k == Value("decoupled_weight_decay")) && !(k == Value("maximize"))) kept.emplace_back(k, v);
    group = Value::dict(std::move(kept));
  }
  std::vector<Tensor> params;
  auto opt = fresh(g, params);
  ASSERT_NO_THROW(io::load_optimizer_state(*opt, state)) << error_of([&] { io::load_optimizer_state(*opt, state); });
  EXPECT_EQ(opt->param_groups()[1].get("decoupled_weight_decay"), 0);
  EXPECT_EQ(opt->param_groups()[1].get("maximize"), 0);
}

}  // namespace
