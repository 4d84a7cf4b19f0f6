// Checkpoints: what goes in comes out, a torn or foreign file is refused, and — the point of
// them — training N steps equals N/2 steps, save, load into fresh objects, N/2 steps, bit for bit.
#include <gtest/gtest.h>

#include <cmath>
#include <cstring>
#include <filesystem>
#include <memory>

#include "ember/ember.h"
#include "support/error_of.h"
#include "support/temp_dir.h"

namespace {

using namespace ember;
using ember_test::error_of;
using ember_test::TempDir;

// 96 samples of 6 features in 3 classes, held in memory.
class ToyDataset : public data::Dataset {
 public:
  ToyDataset() {
    manual_seed(123);
    x_ = randn({96, 6});
    y_ = randint(0, 3, {96});
  }
  int64_t size() const override { return x_.size(0); }
  data::Example get(int64_t i) const override { return {x_[i], y_[i]}; }

 private:
  Tensor x_, y_;
};

// Everything a training loop holds, built afresh from the same seed.
struct Trainer {
  std::shared_ptr<nn::Sequential> model;
  std::unique_ptr<optim::SGD> optimizer;
  std::unique_ptr<optim::StepLR> scheduler;
  std::unique_ptr<data::DataLoader> loader;
  int64_t step = 0;

  explicit Trainer(const std::shared_ptr<const data::Dataset>& dataset) {
    manual_seed(7);
    model = std::make_shared<nn::Sequential>(std::make_shared<nn::Linear>(6, 16), std::make_shared<nn::ReLU>(),
                                             std::make_shared<nn::Dropout>(0.3), std::make_shared<nn::Linear>(16, 3));
    optimizer = std::make_unique<optim::SGD>(model->parameters(),
                                             optim::SGDOptions{.lr = 0.1, .momentum = 0.9, .nesterov = true});
    scheduler = std::make_unique<optim::StepLR>(*optimizer, 5, 0.5);
    loader = std::make_unique<data::DataLoader>(
        dataset, data::DataLoaderOptions{.batch_size = 10, .shuffle = true, .seed = 99, .prefetch = 2});
  }

  // One optimizer step per batch; the scheduler steps at each epoch's end.
  void train_steps(int64_t n) {
    model->train();
    while (n > 0) {
      std::optional<data::Batch> batch = loader->next();
      if (!batch) {
        scheduler->step();
        continue;
      }
      Tensor loss = nn::functional::cross_entropy(model->forward(batch->data), batch->target);
      optimizer->zero_grad();
      loss.backward();
      optimizer->step();
      ++step;
      --n;
    }
  }

  io::Checkpoint checkpoint() const {
    io::Checkpoint c;
    c.model = model->state_dict();
    c.optimizer = optimizer->state_dict();
    c.scheduler = scheduler->state_dict();
    c.rng = get_rng_state();
    c.loader = loader->state();
    c.epoch = loader->state().epoch;
    c.step = step;
    c.extra["note"] = "toy";
    return c;
  }

  void restore(const io::Checkpoint& c) {
    model->load_state_dict(c.model);
    optimizer->load_state_dict(c.optimizer);
    scheduler->load_state_dict(c.scheduler);
    set_rng_state(c.rng);
    loader->set_state(c.loader);
    step = c.step;
  }
};

void expect_bitwise_equal(const nn::StateDict& a, const nn::StateDict& b) {
  ASSERT_EQ(a.keys(), b.keys());
  for (const auto& [key, value] : a) {
    const Tensor other = b.at(key);
    ASSERT_EQ(value.sizes().vec(), other.sizes().vec()) << key;
    EXPECT_EQ(std::memcmp(value.contiguous().data_ptr(), other.contiguous().data_ptr(),
                          static_cast<size_t>(value.numel()) * value.element_size()),
              0)
        << key << " differs";
  }
}

TEST(Checkpoint, ResumingMidEpochIsBitExact) {
  auto dataset = std::make_shared<ToyDataset>();
  const TempDir dir("checkpoint_exact");
  // 10 batches per epoch: 27 steps cross two epoch ends and two StepLR changes; 13 stops mid-epoch.
  constexpr int64_t kSteps = 27, kHalf = 13;

  Trainer straight(dataset);
  straight.train_steps(kSteps);

  {
    Trainer first(dataset);
    first.train_steps(kHalf);
    io::save_checkpoint(dir / "ckpt.safetensors", first.checkpoint());
    // Draw from the generator after saving: the resumed run must not depend on what happened
    // in this process after the checkpoint.
    rand({100});
  }
  Trainer second(dataset);
  const io::Checkpoint loaded = io::load_checkpoint(dir / "ckpt.safetensors");
  EXPECT_EQ(loaded.step, kHalf);
  EXPECT_EQ(loaded.loader, (data::DataLoaderState{1, 3}));
  EXPECT_EQ(loaded.extra.at("note"), "toy");
  second.restore(loaded);
  second.train_steps(kSteps - kHalf);

  expect_bitwise_equal(straight.model->state_dict(), second.model->state_dict());
  EXPECT_EQ(straight.optimizer->param_groups()[0].lr(), second.optimizer->param_groups()[0].lr());
  const auto a = straight.optimizer->state_dict(), b = second.optimizer->state_dict();
  ASSERT_EQ(a.tensors.size(), b.tensors.size());
  for (const auto& [key, value] : a.tensors) EXPECT_TRUE(equal(value, b.tensors.at(key))) << key;
}

TEST(Checkpoint, RngStateRoundTripsIncludingTheCachedNormal) {
  manual_seed(5);
  randn({3});  // an odd count leaves the second Box–Muller value cached
  const Tensor state = get_rng_state();
  const Tensor expected = randn({5});
  rand({17});
  set_rng_state(state);
  EXPECT_TRUE(equal(randn({5}), expected));
  EXPECT_EQ(initial_seed(), 5u);
}

TEST(Checkpoint, BadRngStatesAreRefused) {
  EXPECT_NE(error_of([] { set_rng_state(zeros({4}, kUInt8)); }).find("not a CPU generator state saved by ember"),
            std::string::npos);
  EXPECT_NE(error_of([] { set_rng_state(zeros({4})); }).find("expected a 1-D uint8 CPU tensor"), std::string::npos);
}

TEST(Checkpoint, ModelTensorsAreReadableAsPlainSafetensors) {
  const TempDir dir("checkpoint_plain");
  io::Checkpoint c;
  c.model.insert("fc.weight", ones({2, 3}));
  c.optimizer.tensors["state.0.momentum_buffer"] = zeros({2, 3});
  c.optimizer.numbers["param_groups.0.lr"] = 0.1;
  io::save_checkpoint(dir / "c.safetensors", c);
  const io::SafetensorsData raw = io::load_safetensors(dir / "c.safetensors");
  EXPECT_TRUE(raw.contains("model.fc.weight"));
  EXPECT_TRUE(raw.contains("optimizer.state.0.momentum_buffer"));
  EXPECT_EQ(raw.metadata.at("format"), "ember-checkpoint");
  const io::Checkpoint back = io::load_checkpoint(dir / "c.safetensors");
  EXPECT_EQ(back.optimizer.numbers.at("param_groups.0.lr"), 0.1);
  EXPECT_FALSE(back.rng.defined());
  EXPECT_FALSE(back.rng_cuda.defined());
}

TEST(Checkpoint, BothGeneratorStatesRoundTripUnderTheirOwnNames) {
  // What a GPU run saves: the CPU generator and the GPU's (any bytes here: the checkpoint stores
  // them as they are, and cuda::set_rng_state checks them when a run resumes).
  const TempDir dir("checkpoint_rng");
  io::Checkpoint c;
  c.rng = get_rng_state();
  c.rng_cuda = arange(0, 32, 1, kUInt8);
  io::save_checkpoint(dir / "c.safetensors", c);
  const io::SafetensorsData raw = io::load_safetensors(dir / "c.safetensors");
  EXPECT_TRUE(raw.contains("rng.cpu"));
  EXPECT_TRUE(raw.contains("rng.cuda"));
  const io::Checkpoint back = io::load_checkpoint(dir / "c.safetensors");
  EXPECT_TRUE(equal(back.rng, c.rng));
  EXPECT_TRUE(equal(back.rng_cuda, c.rng_cuda));
}

// A GradScaler's state goes with the rest: a scale that has backed off and a growth count come
// back exactly, and a checkpoint saved without a scaler has none (nor any metadata entry).
TEST(Checkpoint, GradScalerStateRoundTrips) {
  const TempDir dir("checkpoint_scaler");
  amp::GradScaler scaler({.device = kCPU, .init_scale = 1024, .growth_interval = 5});
  Tensor w = tensor({1.0f, 2.0f}).requires_grad_();
  optim::SGD sgd({w}, optim::SGDOptions{.lr = 0.1});
  for (float factor : {1.0f, INFINITY, 1.0f, 1.0f}) {  // one overflow, then two clean steps
    sgd.zero_grad();
    scaler.scale((w * factor).sum()).backward();
    scaler.step(sgd);
    scaler.update();
  }
  ASSERT_EQ(scaler.get_scale(), 512.0);
  ASSERT_EQ(scaler.get_growth_tracker(), 2);
  io::Checkpoint c;
  c.grad_scaler = scaler.state_dict();
  io::save_checkpoint(dir / "with.safetensors", c);
  amp::GradScaler resumed({.device = kCPU});
  resumed.load_state_dict(io::load_checkpoint(dir / "with.safetensors").grad_scaler);
  EXPECT_EQ(resumed.state_dict(), scaler.state_dict());
  EXPECT_EQ(resumed.get_growth_interval(), 5);

  io::save_checkpoint(dir / "without.safetensors", io::Checkpoint{});
  EXPECT_TRUE(io::load_checkpoint(dir / "without.safetensors").grad_scaler.empty());
  EXPECT_EQ(io::load_safetensors(dir / "without.safetensors").metadata.count("grad_scaler"), 0u);
}

TEST(Checkpoint, ForeignTruncatedAndMissingFilesAreErrors) {
  const TempDir dir("checkpoint_bad");
  io::save_safetensors(dir / "weights.safetensors", io::NamedTensors{{"w", ones({2})}});
  EXPECT_NE(error_of([&] { io::load_checkpoint(dir / "weights.safetensors"); }).find("not an ember checkpoint"),
            std::string::npos);

  io::Checkpoint c;
  c.model.insert("w", ones({1000}));
  io::save_checkpoint(dir / "ckpt.safetensors", c);
  const auto size = std::filesystem::file_size(dir / "ckpt.safetensors");
  std::filesystem::resize_file(dir / "ckpt.safetensors", size / 2);
  const std::string truncated = error_of([&] { io::load_checkpoint(dir / "ckpt.safetensors"); });
  EXPECT_NE(truncated.find("ckpt.safetensors"), std::string::npos) << truncated;

  EXPECT_NE(error_of([&] { io::load_checkpoint(dir / "nope.safetensors"); }).find("nope.safetensors"),
            std::string::npos);
}

TEST(Checkpoint, AFailedSaveKeepsThePreviousCheckpoint) {
  const TempDir dir("checkpoint_keep");
  io::Checkpoint good;
  good.model.insert("w", full({3}, 2.0));
  good.step = 41;
  io::save_checkpoint(dir / "ckpt.safetensors", good);
  io::Checkpoint bad;
  bad.model.insert("w", Tensor());  // undefined: refused before the disk is touched
  EXPECT_NE(error_of([&] { io::save_checkpoint(dir / "ckpt.safetensors", bad); }), "no error");
  const io::Checkpoint back = io::load_checkpoint(dir / "ckpt.safetensors");
  EXPECT_EQ(back.step, 41);
  EXPECT_TRUE(equal(back.model.at("w"), full({3}, 2.0)));
  // Only the checkpoint is there: no temporary file was left behind.
  EXPECT_EQ(dir.entries().size(), 1u);
}

}  // namespace
