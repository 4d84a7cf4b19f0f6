// io::torch_save: round trips of every golden, PyTorch's archive layout, atomic saves, refusals;
// and optimizer states that continue PyTorch's runs step for step in ember and back.
#include <gtest/gtest.h>

#include "io/pytorch_format_support.h"

namespace {

using namespace ember_test::pytorch_format;

// ============================================================================================
// Saving
// ============================================================================================

TEST(TorchSave, EveryGoldenRoundTrips) {
  for (const std::string& file : readable_goldens()) {
    SCOPED_TRACE(file);
    const Value v = load_golden(file);
    Bytes bytes;
    ASSERT_NO_THROW(bytes = io::torch_save_to_bytes(v)) << error_of([&] { io::torch_save_to_bytes(v); });
    const Value back = io::torch_load_from_bytes(bytes, file + " re-saved");
    expect_same_value(v, back);
    check_golden_value(file, back, /*resaved=*/true);
    // Shared storages are saved once: one record per storage of the file.
    EXPECT_EQ(count_data_records(bytes), expected()["files"][file]["storages"].get<int>());
    // Deterministic.
    EXPECT_TRUE(io::torch_save_to_bytes(back) == bytes) << "saving the same value twice gave different bytes";
  }
}

TEST(TorchSave, ArchiveLayoutIsPyTorchs) {
  const Tensor t = arange(0, 12, 1, kFloat32).reshape({3, 4});
  const Value v = Value::list({t, t.slice(0, 1), t.t(), t.slice(1, std::nullopt, std::nullopt, 2), ones({2}, kInt64)});
  const Bytes bytes = io::torch_save_to_bytes(v, "my_model");
  const std::vector<std::string> names = entry_names(bytes);
  ASSERT_FALSE(names.empty());
  EXPECT_EQ(names.front(), "my_model/data.pkl");
  for (const char* name :
       {"my_model/data.pkl", "my_model/version", "my_model/byteorder", "my_model/data/0", "my_model/data/1"})
    EXPECT_NE(std::find(names.begin(), names.end(), name), names.end()) << name;
  for (const std::string& name : names) EXPECT_EQ(name.rfind("my_model/", 0), 0u) << name;
  EXPECT_EQ(count_data_records(bytes), 2);  // t and its views once, the int64 tensor once
  // Version 3, little-endian, records aligned to 64 bytes.
  auto reader = zip::ZipReader::from_bytes(bytes, "test");
  const Bytes version = reader.read_bytes(*reader.find("my_model/version"), 100);
  EXPECT_EQ(std::string(version.begin(), version.end()), "3\n");
  const Bytes order = reader.read_bytes(*reader.find("my_model/byteorder"), 100);
  EXPECT_EQ(std::string(order.begin(), order.end()), "little");
  for (const auto& e : reader.entries()) {
    if (e.name.find("/data/") == std::string::npos) continue;
    const uint64_t h = e.local_header_offset;
    ASSERT_LE(h + 30, bytes.size());
    const uint64_t name_len = bytes[h + 26] | (bytes[h + 27] << 8), extra_len = bytes[h + 28] | (bytes[h + 29] << 8);
    EXPECT_EQ((h + 30 + name_len + extra_len) % 64, 0u) << e.name;
    EXPECT_EQ(e.method, 0) << e.name << " is compressed";
  }
  // Read back: the views are views again.
  const Value back = io::torch_load_from_bytes(bytes);
  expect_same_value(v, back);
  for (size_t i = 1; i < 4; ++i)
    EXPECT_EQ(storage_of(back.items()[i].to_tensor()), storage_of(back.items()[0].to_tensor()));
}

TEST(TorchSave, FileArchiveIsNamedAfterTheStemAndSavesAtomically) {
  TempDir dir("torch_save");
  const fs::path path = dir / "ckpt.pt";
  const Value first = Value::dict({{"w", full({64, 64}, 1.0)}, {"epoch", 1}});
  io::torch_save(path, first);
  const Bytes before = read_file(path);
  EXPECT_EQ(entry_names(before).front(), "ckpt/data.pkl");
  EXPECT_EQ(io::torch_load(path)["epoch"].to_int(), 1);
  const Value second = Value::dict({{"w", full({64, 64}, 2.0)}, {"epoch", 2}});
  for (const char* point : {"open", "byte=0", "byte=100", "byte=9000", "sync", "rename"}) {
    ember_test::InjectFault fault(std::string("ENOSPC:ckpt.pt:") + point);
    const std::string message = error_of([&] { io::torch_save(path, second); });
    EXPECT_TRUE(contains(message, path.string())) << point << ": " << message;
    EXPECT_TRUE(read_file(path) == before) << point << ": the earlier file changed";
    EXPECT_EQ(dir.entries(), std::vector<std::string>{"ckpt.pt"}) << point << ": a temporary file was left";
  }
  io::torch_save(path, second);
  EXPECT_EQ(io::torch_load(path)["epoch"].to_int(), 2);
  EXPECT_EQ(at<float>(io::torch_load(path)["w"].to_tensor(), {3, 3}), 2.f);
  // Into a folder that does not exist: an error naming the path.
  EXPECT_TRUE(contains(error_of([&] { io::torch_save(dir / "no" / "such" / "x.pt", first); }), "x.pt"));
  EXPECT_TRUE(contains(error_of([&] { io::torch_load(dir / "missing.pt"); }), "missing.pt"));
}

TEST(TorchSave, NonLeafTensorsThatRequireGradAreRefused) {
  Tensor a = rand({2}).requires_grad_();
  Tensor b = a * 2;
  const std::string message = error_of([&] { io::torch_save_to_bytes(Value::dict({{"b", b}})); });
  // PyTorch: "Cowardly refusing to serialize non-leaf tensor which requires_grad, ... call detach()".
  EXPECT_TRUE(contains(message, "non-leaf tensor")) << message;
  EXPECT_TRUE(contains(message, "requires grad") || contains(message, "requires_grad")) << message;
  EXPECT_TRUE(contains(message, "detach()")) << message;
  // Leaves and detached results are fine, and requires_grad comes back.
  const Value back = io::torch_load_from_bytes(io::torch_save_to_bytes(Value::list({a, b.detach()})));
  EXPECT_TRUE(back.items()[0].to_tensor().requires_grad());
  EXPECT_FALSE(back.items()[1].to_tensor().requires_grad());
}

TEST(TorchSave, ValuesOfEveryKindRoundTrip) {
  const Value v = Value::dict({
      {"none", Value()},
      {"bool", true},
      {"int", int64_t{-1} << 40},
      {"min", INT64_MIN},
      {"small", 255},
      {"float", -0.0},
      {"nan", std::nan("")},
      {"str", "h\xc3\xa9llo"},
      {"bytes", Value::bytes(std::string("\0\x01\xff", 3))},
      {"dtype", kBFloat16},
      {"device", Device("cuda:1")},
      {"list", Value::list({1, 2.5, "x"})},
      {"tuple", Value::tuple({})},
      {"odict", Value::ordered_dict({{Value(2), Value("b")}, {Value(1), Value("a")}})},
      {"scalar", tensor(3.5)},
      {"bool_tensor", ones({3}, kBool)},
  });
  const Value back = io::torch_load_from_bytes(io::torch_save_to_bytes(v));
  expect_same_value(v, back);
  EXPECT_TRUE(back == back);
  EXPECT_FALSE(Value(1) == Value(1.0));
  EXPECT_TRUE(Value("a") == Value(std::string("a")));
  Value d = Value::dict({{"a", 1}, {"b", 2}});
  d.set("a", 3);
  d.set("c", 4);
  EXPECT_EQ(d.dict_items()[0].first.to_string(), "a");
  EXPECT_EQ(d["a"].to_int(), 3);
  EXPECT_EQ(d.dict_items()[2].first.to_string(), "c");
}

TEST(TorchSave, OneTensorTwiceIsOneTensorAgain) {
  const Tensor t = rand({3});
  const Tensor view = t.slice(0, 1);
  const Bytes bytes = io::torch_save_to_bytes(Value::dict({{"a", t}, {"b", t}, {"view", view}}));
  EXPECT_EQ(count_data_records(bytes), 1);
  const Value back = io::torch_load_from_bytes(bytes);
  EXPECT_TRUE(back["a"].to_tensor().is_same(back["b"].to_tensor()));  // as PyTorch's memo gives `a is b`
  EXPECT_TRUE(back["a"] == back["b"]);
  EXPECT_FALSE(back["a"] == back["view"]);
  EXPECT_EQ(storage_of(back["view"].to_tensor()), storage_of(back["a"].to_tensor()));
}

TEST(TorchSave, DictKeysFollowPython) {
  EXPECT_THROW(Value::dict({{"a", 1}, {"a", 2}}), Error);
  EXPECT_THROW(Value::ordered_dict({{Value(1), Value(1)}, {Value(true), Value(2)}}), Error);  // 1 == True in Python
  EXPECT_THROW(Value::dict({{Value::list({1}), Value(1)}}), Error);                           // unhashable
  const Value ints = Value::dict({{Value(-5), Value("m")}, {Value(int64_t{1} << 40), Value("big")}});
  EXPECT_EQ(ints[Value(-5)].to_string(), "m");
  EXPECT_EQ(io::torch_load_from_bytes(io::torch_save_to_bytes(ints))[Value(int64_t{1} << 40)].to_string(), "big");
}

TEST(TorchSave, StateDictOfAModuleRoundTrips) {
  manual_seed(3);
  auto model =
      std::make_shared<nn::Sequential>(std::make_shared<nn::Linear>(3, 4), std::make_shared<nn::BatchNorm1d>(4),
                                       std::make_shared<nn::ReLU>(), std::make_shared<nn::Linear>(4, 2));
  const Value v = io::to_value(model->state_dict());
  EXPECT_TRUE(v.is_ordered_dict());
  const nn::StateDict back = io::to_state_dict(io::torch_load_from_bytes(io::torch_save_to_bytes(v)));
  EXPECT_EQ(back.keys(), model->state_dict().keys());
  for (const auto& [name, t] : model->state_dict()) {
    EXPECT_TRUE(equal(back.at(name), t)) << name;
    EXPECT_FALSE(back.at(name).requires_grad()) << name;  // state_dict tensors are detached
  }
}

// ============================================================================================
// Optimizers: PyTorch's state continues in ember exactly as in PyTorch
// ============================================================================================

std::unique_ptr<optim::Optimizer> make_optimizer(const std::string& kind, std::vector<optim::ParamGroup> groups) {
  if (kind == "SGD") return std::make_unique<optim::SGD>(std::move(groups));
  if (kind == "Adam") return std::make_unique<optim::Adam>(std::move(groups));
  if (kind == "AdamW") return std::make_unique<optim::AdamW>(std::move(groups));
  if (kind == "Adadelta") return std::make_unique<optim::Adadelta>(std::move(groups));
  if (kind == "RMSprop") return std::make_unique<optim::RMSprop>(std::move(groups));
  ADD_FAILURE() << "unknown optimizer " << kind;
  return nullptr;
}

struct OptimizerGolden {
  std::string file, kind;
  Value state;                // PyTorch's optimizer.state_dict()
  io::SafetensorsData steps;  // step.param.<i>, step.grad.<i>, step.next.<i>
  size_t num_params = 0;
};

std::vector<OptimizerGolden> optimizer_goldens() {
  std::vector<OptimizerGolden> out;
  for (const auto& [file, entry] : expected()["files"].items()) {
    if (!entry.contains("optimizer")) continue;
    OptimizerGolden g;
    g.file = file;
    g.kind = entry["optimizer"]["kind"];
    const Value v = io::torch_load(golden(file));
    g.state = v.contains("optimizer") ? v["optimizer"] : v;
    g.steps = golden_tensors(file);
    g.num_params = entry["optimizer"]["num_params"].get<size_t>();
    out.push_back(std::move(g));
  }
  return out;
}

/// Fresh parameters holding the golden's "step.param.<i>", grouped as its param_groups say.
std::vector<optim::ParamGroup> groups_for(const OptimizerGolden& g, std::vector<Tensor>& params) {
  params.clear();
  for (size_t i = 0; i < g.num_params; ++i)
    params.push_back(g.steps.at("step.param." + std::to_string(i)).clone().requires_grad_());
  std::vector<optim::ParamGroup> groups;
  for (const Value& group : g.state["param_groups"].items()) {
    std::vector<Tensor> ps;
    for (const Value& index : group["params"].items()) ps.push_back(params.at(static_cast<size_t>(index.to_int())));
    groups.emplace_back(ps);
  }
  return groups;
}

/// One more step from PyTorch's gradients; the parameters must be PyTorch's after its step.
void step_and_compare(const OptimizerGolden& g, optim::Optimizer& opt, std::vector<Tensor>& params) {
  for (size_t i = 0; i < params.size(); ++i) params[i].set_grad(g.steps.at("step.grad." + std::to_string(i)).clone());
  opt.step();
  for (size_t i = 0; i < params.size(); ++i) {
    const Tensor want = g.steps.at("step.next." + std::to_string(i));
    const Tensor got = params[i].detach();
    const double err = (got - want).abs().max().item<double>();
    const double scale = want.abs().max().item<double>();
    EXPECT_LE(err, 1e-6 + 1e-5 * scale) << "parameter " << i << " after the step: " << got.str() << " vs PyTorch's "
                                        << want.str();
  }
}

/// ember's optimizer_state against PyTorch's: the same state tensors and every group key with
/// the same value (ints and floats compared as numbers; booleans and None as such).
void expect_same_optimizer_state(const Value& ours, const Value& torch) {
  ASSERT_TRUE(ours.is_dict()) << ours.summary();
  const Value& state = torch["state"];
  ASSERT_EQ(ours["state"].size(), state.size());
  for (const auto& [index, entries] : state.dict_items()) {
    SCOPED_TRACE("state " + index.summary());
    ASSERT_TRUE(ours["state"].contains(index)) << ours["state"].summary();
    const Value& mine = ours["state"][index];
    ASSERT_EQ(mine.size(), entries.size()) << mine.summary() << " vs " << entries.summary();
    for (const auto& [name, tensor] : entries.dict_items()) {
      ASSERT_TRUE(mine.contains(name)) << name.summary();
      const Tensor &a = mine[name].to_tensor(), &b = tensor.to_tensor();
      EXPECT_EQ(a.dtype(), b.dtype()) << name.summary();
      EXPECT_EQ(vec(a.sizes()), vec(b.sizes())) << name.summary();
      EXPECT_EQ(raw_bytes(a), raw_bytes(b)) << name.summary();
    }
  }
  const Value& groups = torch["param_groups"];
  ASSERT_EQ(ours["param_groups"].size(), groups.size());
  for (size_t g = 0; g < groups.size(); ++g) {
    const Value& mine = ours["param_groups"].items()[g];
    for (const auto& [key, value] : groups.items()[g].dict_items()) {
      SCOPED_TRACE("param_groups[" + std::to_string(g) + "][" + key.summary() + "]");
      ASSERT_TRUE(mine.contains(key)) << mine.summary();
      const Value& m = mine[key];
      switch (value.kind()) {
        case Value::Kind::Int:
        case Value::Kind::Float:
          ASSERT_TRUE(m.kind() == Value::Kind::Int || m.kind() == Value::Kind::Float) << m.summary();
          EXPECT_EQ(m.to_double(), value.to_double());
          break;
        case Value::Kind::Tuple:
          ASSERT_EQ(m.kind(), Value::Kind::Tuple) << m.summary();
          ASSERT_EQ(m.size(), value.size());
          for (size_t i = 0; i < value.size(); ++i) EXPECT_EQ(m.items()[i].to_double(), value.items()[i].to_double());
          break;
        default:
          EXPECT_TRUE(m == value) << m.summary() << " vs PyTorch's " << value.summary();
      }
    }
  }
}

TEST(TorchOptimizer, PyTorchStatesContinueInEmber) {
  const auto goldens = optimizer_goldens();
  ASSERT_EQ(goldens.size(), 6u);
  std::set<std::string> kinds;
  for (const OptimizerGolden& g : goldens) {
    SCOPED_TRACE(g.file);
    kinds.insert(g.kind);
    std::vector<Tensor> params;
    auto opt = make_optimizer(g.kind, groups_for(g, params));
    ASSERT_TRUE(opt);
    ASSERT_NO_THROW(io::load_optimizer_state(*opt, g.state))
        << error_of([&] { io::load_optimizer_state(*opt, g.state); });
    for (size_t i = 0; i < opt->param_groups().size(); ++i)
      EXPECT_EQ(opt->param_groups()[i].lr(), g.state["param_groups"].items()[i]["lr"].to_double());
    // What ember would save is what PyTorch saved.
    expect_same_optimizer_state(io::optimizer_state(*opt), g.state);
    step_and_compare(g, *opt, params);
  }
  EXPECT_EQ(kinds, (std::set<std::string>{"SGD", "Adam", "AdamW", "RMSprop", "Adadelta"}));
}

TEST(TorchOptimizer, StatesSavedByEmberContinueTheSame) {
  for (const OptimizerGolden& g : optimizer_goldens()) {
    SCOPED_TRACE(g.file);
    std::vector<Tensor> params;
    auto opt = make_optimizer(g.kind, groups_for(g, params));
    io::load_optimizer_state(*opt, g.state);
    // ember -> bytes -> ember, into a fresh optimizer over fresh parameters.
    const Value saved = io::torch_load_from_bytes(io::torch_save_to_bytes(io::optimizer_state(*opt)));
    expect_same_optimizer_state(saved, g.state);
    std::vector<Tensor> params2;
    auto opt2 = make_optimizer(g.kind, groups_for(g, params2));
    io::load_optimizer_state(*opt2, saved);
    step_and_compare(g, *opt2, params2);
  }
}

TEST(TorchOptimizer, CheckpointResumesAModelAndItsAdam) {
  const Value ckpt = io::torch_load(golden("checkpoint.pt"));
  const io::SafetensorsData steps = golden_tensors("checkpoint.pt");
  auto model =
      std::make_shared<nn::Sequential>(std::make_shared<nn::Linear>(3, 4), std::make_shared<nn::BatchNorm1d>(4),
                                       std::make_shared<nn::ReLU>(), std::make_shared<nn::Linear>(4, 2));
  model->load_state_dict(io::to_state_dict(ckpt["model"]));
  std::vector<Tensor> params = model->parameters();
  ASSERT_EQ(params.size(), 6u);
  for (size_t i = 0; i < params.size(); ++i)
    EXPECT_TRUE(equal(params[i].detach(), steps.at("step.param." + std::to_string(i)))) << i;
  optim::Adam adam(params);
  io::load_optimizer_state(adam, ckpt["optimizer"]);
  EXPECT_EQ(adam.param_groups()[0].lr(), 0.01);
  EXPECT_EQ(adam.state(0).at("step").item<float>(), 2.f);
  OptimizerGolden g{"checkpoint.pt", "Adam", ckpt["optimizer"], steps, 6};
  step_and_compare(g, adam, params);
}

TEST(TorchOptimizer, MismatchesAreRefused) {
  const auto goldens = optimizer_goldens();
  const OptimizerGolden* sgd = nullptr;
  for (const auto& g : goldens)
    if (g.kind == "SGD") sgd = &g;
  ASSERT_TRUE(sgd);
  // Two groups in the file, one in the optimizer.
  std::vector<Tensor> params;
  groups_for(*sgd, params);
  optim::SGD one_group(params);
  EXPECT_THROW(io::load_optimizer_state(one_group, sgd->state), Error);
  // A hyper-parameter ember lacks, away from PyTorch's default: refused by name.
  Value changed = sgd->state;
  entry(changed, "param_groups").items()[0].set("differentiable", true);
  auto opt = make_optimizer("SGD", groups_for(*sgd, params));
  const std::string message = error_of([&] { io::load_optimizer_state(*opt, changed); });
  EXPECT_TRUE(contains(message, "differentiable")) << message;
  // Not an optimizer state at all.
  EXPECT_THROW(io::load_optimizer_state(*opt, io::torch_load(golden("state_dict.pt"))), Error);
}

}  // namespace
