// Writes files with io::torch_save for tools/check_torch_interop.py, which checks them with
// PyTorch itself (torch.load, weights-only and mmap; load_state_dict; optimizer steps):
//
//   build/tools/ember_torch_interop_files /tmp/interop && python3 tools/check_torch_interop.py /tmp/interop
//
// Each <name>.pt comes with a <name>.safetensors holding its tensors under their paths (dict keys
// and list indices joined by dots), which the checker compares bit for bit.
#include <cmath>
#include <cstdio>
#include <filesystem>
#include <limits>
#include <string>

#include "ember/ember.h"

namespace {

using namespace ember;
namespace fs = std::filesystem;

// The tensors of `v` under their paths, as the checker names them.
void collect(const io::Value& v, const std::string& path, io::NamedTensors& out) {
  switch (v.kind()) {
    case io::Value::Kind::Tensor:
      out.emplace_back(path.empty() ? "tensor" : path, v.to_tensor().contiguous());
      break;
    case io::Value::Kind::List:
    case io::Value::Kind::Tuple:
      for (size_t i = 0; i < v.items().size(); ++i)
        collect(v.items()[i], path.empty() ? std::to_string(i) : path + "." + std::to_string(i), out);
      break;
    case io::Value::Kind::Dict:
      for (const auto& [k, x] : v.dict_items()) {
        const std::string key = k.kind() == io::Value::Kind::String ? k.to_string() : std::to_string(k.to_int());
        collect(x, path.empty() ? key : path + "." + key, out);
      }
      break;
    default:
      break;
  }
}

void write(const fs::path& dir, const std::string& name, const io::Value& v, io::NamedTensors extra = {}) {
  io::torch_save(dir / (name + ".pt"), v);
  io::NamedTensors tensors;
  collect(v, "", tensors);
  for (auto& e : extra) tensors.push_back(std::move(e));
  // A tensor saved twice appears once.
  io::NamedTensors unique;
  for (auto& [n, t] : tensors) {
    bool seen = false;
    for (const auto& [m, u] : unique) seen = seen || m == n;
    if (!seen) unique.emplace_back(n, t);
  }
  if (!unique.empty()) io::save_safetensors(dir / (name + ".safetensors"), unique);
  std::printf("wrote %s.pt (%zu tensors)\n", name.c_str(), unique.size());
}

std::shared_ptr<nn::Sequential> mlp() {
  return std::make_shared<nn::Sequential>(std::make_shared<nn::Linear>(3, 4), std::make_shared<nn::BatchNorm1d>(4),
                                          std::make_shared<nn::ReLU>(), std::make_shared<nn::Linear>(4, 2));
}

void train_steps(nn::Module& model, optim::Optimizer& opt, int steps) {
  for (int s = 0; s < steps; ++s) {
    opt.zero_grad();
    const Tensor x = randn({8, 3});
    model.forward(x).pow(2).mean().backward();
    opt.step();
  }
}

// The optimizer's state after a few steps, with one more step's start, gradient and result.
void write_optimizer(const fs::path& dir, const std::string& kind) {
  manual_seed(1);
  auto model = mlp();
  std::vector<Tensor> params = model->parameters();
  std::vector<optim::ParamGroup> groups{optim::ParamGroup({params.begin(), params.begin() + 2}),
                                        optim::ParamGroup({params.begin() + 2, params.end()}, {{"lr", 0.005}})};
  std::unique_ptr<optim::Optimizer> opt;
  if (kind == "SGD")
    opt = std::make_unique<optim::SGD>(groups, optim::SGDOptions{.lr = 0.01, .momentum = 0.9, .nesterov = true});
  if (kind == "Adam") opt = std::make_unique<optim::Adam>(groups, optim::AdamOptions{.lr = 0.01, .weight_decay = 0.1});
  if (kind == "AdamW") opt = std::make_unique<optim::AdamW>(groups, optim::AdamWOptions{.lr = 0.01, .amsgrad = true});
  if (kind == "RMSprop")
    opt =
        std::make_unique<optim::RMSprop>(groups, optim::RMSpropOptions{.lr = 0.01, .momentum = 0.5, .centered = true});
  if (kind == "Adadelta") opt = std::make_unique<optim::Adadelta>(groups, optim::AdadeltaOptions{.lr = 0.5});
  train_steps(*model, *opt, 3);
  const io::Value state = io::optimizer_state(*opt);

  io::NamedTensors extra;
  for (size_t i = 0; i < params.size(); ++i) {
    extra.emplace_back("step.param." + std::to_string(i), params[i].detach().clone());
    const Tensor grad = randn(params[i].sizes());
    extra.emplace_back("step.grad." + std::to_string(i), grad);
    params[i].set_grad(grad.clone());
  }
  opt->step();
  for (size_t i = 0; i < params.size(); ++i)
    extra.emplace_back("step.next." + std::to_string(i), params[i].detach().clone());
  write(dir, "optim_" + kind, state, std::move(extra));
}

}  // namespace

int main(int argc, char** argv) {
  if (argc != 2) {
    std::fprintf(stderr, "usage: %s DIR\n", argv[0]);
    return 2;
  }
  try {
    const fs::path dir = argv[1];
    fs::create_directories(dir);
    manual_seed(0);

    auto model = mlp();
    optim::Adam adam(model->parameters(), {.lr = 0.01});
    train_steps(*model, adam, 2);
    write(dir, "state_dict", io::to_value(model->state_dict()));
    write(dir, "checkpoint",
          io::Value::dict(
              {{"model", io::to_value(model->state_dict())}, {"optimizer", io::optimizer_state(adam)}, {"epoch", 3}}));

    const Tensor t = arange(24, TensorOptions(kFloat32)).reshape({4, 6});
    write(dir, "views", io::Value::list({t, t.slice(0, 1, 4), t.t(), t.slice(1, 0, 6, 2), t.select(0, 2)}));

    io::Value::DictItems dtypes;
    for (Dtype d : {kFloat32, kFloat64, kFloat16, kBFloat16, kInt64, kInt32, kInt16, kInt8, kUInt8, kBool})
      dtypes.emplace_back(std::string(dtype_name(d)).substr(6), (arange(6, TensorOptions(kFloat64)) - 2).to(d));
    write(dir, "dtypes", io::Value::dict(std::move(dtypes)));

    io::Value::DictItems int_keys;
    int_keys.emplace_back(io::Value(0), io::Value("zero"));
    int_keys.emplace_back(io::Value(int64_t{1} << 40), io::Value(-2.5));
    write(dir, "values",
          io::Value::dict(
              {{"none", io::Value()},
               {"flags", io::Value::list({true, false})},
               {"big", io::Value(std::numeric_limits<int64_t>::min())},
               {"floats", io::Value::tuple({std::nan(""), -0.0, 1e-300, 3.0})},
               {"text", "ember → torch ✓"},
               {"bytes", io::Value::bytes(std::string("\x00\xff\x80 a", 5))},
               {"empty", io::Value::bytes("")},
               {"int_keys", io::Value::dict(std::move(int_keys))},
               {"ordered", io::Value::ordered_dict({{io::Value("b"), io::Value(1)}, {io::Value("a"), io::Value(2)}})},
               {"dtype", io::Value(kBFloat16)},
               {"device", io::Value(Device("cuda:1"))},
               {"scalar", io::Value(tensor(7.5))},
               {"grad", io::Value(randn({2}).requires_grad_())}}));

    for (const char* kind : {"SGD", "Adam", "AdamW", "RMSprop", "Adadelta"}) write_optimizer(dir, kind);
  } catch (const std::exception& e) {
    std::fprintf(stderr, "error: %s\n", e.what());
    return 1;
  }
  return 0;
}
