// Checkpoints in PyTorch's own format: a run saves {"model", "optimizer", "step", "rng"} with
// io::torch_save halfway, a second model and optimizer built from scratch load it with
// io::torch_load and train on, and the resumed run ends with the unbroken run's parameters bit
// for bit. The file is what torch.save writes, so Python picks it up as it is:
//
//   ckpt = torch.load("checkpoint.pt")
//   model.load_state_dict(ckpt["model"]); optimizer.load_state_dict(ckpt["optimizer"])
//
// where model is nn.Sequential(nn.Linear(16, 64), nn.ReLU(), nn.Linear(64, 4)) and optimizer
// torch.optim.AdamW(model.parameters(), lr=1e-2).
//   usage: pytorch_checkpoint [DIR]   (the file goes to DIR, by default the system's temp folder)
#include <ember/ember.h>

#include <cstdio>
#include <filesystem>
#include <memory>

namespace {

using namespace ember;

constexpr int kSteps = 100, kSaveAt = 50;

std::shared_ptr<nn::Sequential> make_model() {
  return std::make_shared<nn::Sequential>(std::make_shared<nn::Linear>(16, 64), std::make_shared<nn::ReLU>(),
                                          std::make_shared<nn::Linear>(64, 4));
}

// One step on a batch drawn from the generator: points whose label is the sign pattern of two of
// their coordinates.
void train_step(nn::Module& model, optim::Optimizer& optimizer) {
  const Tensor x = randn({32, 16});
  const Tensor y = (x.select(1, 0) > 0).to(kInt64) * 2 + (x.select(1, 1) > 0).to(kInt64);
  optimizer.zero_grad();
  nn::functional::cross_entropy(model.forward(x), y).backward();
  optimizer.step();
}

}  // namespace

int main(int argc, char** argv) try {
  const std::filesystem::path dir = argc > 1 ? std::filesystem::path(argv[1]) : std::filesystem::temp_directory_path();
  const std::filesystem::path path = dir / "checkpoint.pt";

  // The unbroken run, saving a checkpoint halfway.
  manual_seed(0);
  auto model = make_model();
  optim::AdamW optimizer(model->parameters(), {.lr = 1e-2});
  for (int step = 1; step <= kSteps; ++step) {
    train_step(*model, optimizer);
    if (step == kSaveAt) {
      io::torch_save(path, io::Value::dict({{"model", io::to_value(model->state_dict())},
                                            {"optimizer", io::optimizer_state(optimizer)},
                                            {"step", step},
                                            {"rng", get_rng_state()}}));
      std::printf("saved %s at step %d\n", path.string().c_str(), step);
    }
  }

  // A fresh model and optimizer resume from the file.
  const io::Value ckpt = io::torch_load(path);
  manual_seed(123);  // a different initialisation: everything must come from the checkpoint
  auto resumed = make_model();
  optim::AdamW resumed_optimizer(resumed->parameters(), {.lr = 1e-2});
  resumed->load_state_dict(io::to_state_dict(ckpt["model"]));
  io::load_optimizer_state(resumed_optimizer, ckpt["optimizer"]);
  set_rng_state(ckpt["rng"].to_tensor());
  const int64_t start = ckpt["step"].to_int();
  std::printf("resumed at step %lld with %s\n", static_cast<long long>(start),
              ckpt["optimizer"]["param_groups"].summary(120).c_str());
  for (int64_t step = start + 1; step <= kSteps; ++step) train_step(*resumed, resumed_optimizer);

  bool same = true;
  const auto a = model->state_dict(), b = resumed->state_dict();
  for (const auto& [name, t] : a) same = same && equal(t, b.at(name));
  std::printf("after %d steps the resumed run %s the unbroken one\n", kSteps, same ? "equals" : "DIFFERS FROM");
  return same ? 0 : 1;
} catch (const std::exception& e) {
  std::fprintf(stderr, "error: %s\n", e.what());
  return 1;
}
