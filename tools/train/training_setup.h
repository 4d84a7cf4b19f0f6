#pragma once
// What a run of `ember train` trains with, built from its RunConfig: the device, the data and the
// batches drawn from it, the model (wrapped for data parallelism in a job of several ranks), its
// optimizer and learning-rate schedule, and the random generators a step draws from. The step
// loop (step_runner.h) trains it, and a checkpoint (run_saver.h) records and restores it.
#include <cstdint>
#include <memory>
#include <optional>
#include <string>
#include <utility>
#include <vector>

#include "ember/ember.h"
#include "train/device_batches.h"
#include "train/trainer.h"

namespace ember::train {

/// The training device and why it is the one (the banner shows both).
struct ChosenDevice {
  Device device;
  std::string why;
};

/// The device to train on, made this thread's current CUDA device when it is a GPU (as
/// torch.cuda.set_device(local_rank) in a PyTorch script): work that names no device index, and
/// the DataLoader's pinning threads, then stay on it instead of creating a context on cuda:0.
ChosenDevice choose_device(const std::optional<std::string>& requested);

/// Test loss and accuracy of `model` on `test_set`, under autocast when `amp` (as training ran).
EvalResult evaluate(nn::Module& model, const std::shared_ptr<const data::MNIST>& test_set, Device device, bool amp);

/// The generators a training step draws from: the CPU's and, when training on a GPU, that
/// device's (dropout there draws from it).
struct RngStates {
  Tensor cpu;
  Tensor cuda;  // undefined unless training on a GPU
};

class TrainingSetup {
 public:
  /// Chooses the device, loads the data, seeds the generator and builds the model, optimizer,
  /// schedule and batches, in that order (the seed decides the model's initial weights).
  TrainingSetup(const RunConfig& config, const TrainOptions& runtime);

  /// Puts back the state a checkpoint holds (model, optimizer, schedule, generators, the batches'
  /// position), which a job of another size may have written.
  void restore(const io::Checkpoint& checkpoint);
  /// Records that state in `checkpoint`. `loader`/`rng` override the current ones: the state
  /// before a step that was not taken.
  void write_to(io::Checkpoint& checkpoint, const std::optional<data::DataLoaderState>& loader,
                const std::optional<RngStates>& rng) const;

  /// The generators' states now, and their inverse. `step_only`: only the generator a training
  /// step draws from (the training device's); set_rng_states leaves an undefined one as it is.
  RngStates rng_states(bool step_only = false) const;
  void set_rng_states(const RngStates& states);

  data::DataLoaderState loader_state() const;
  int64_t batches_per_epoch() const;
  /// The next training batch, already on the training device; std::nullopt ends the epoch.
  std::optional<data::Batch> next_batch();

  const ChosenDevice& chosen_device() const { return device_; }
  Device device() const { return device_.device; }
  int64_t ranks() const { return ranks_; }
  const std::shared_ptr<const data::MNIST>& train_set() const { return train_set_; }
  const std::shared_ptr<const data::MNIST>& test_set() const { return test_set_; }
  nn::Module& model() { return *model_; }
  const nn::Module& model() const { return *model_; }
  /// The data-parallel wrapper of model() in a job of several ranks; null otherwise.
  nn::DistributedDataParallel* ddp() { return ddp_.get(); }
  /// What the training step runs: the data-parallel wrapper in a job, the model alone.
  nn::Module& trained() { return ddp_ ? *ddp_ : *model_; }
  optim::Optimizer& optimizer() { return *optimizer_; }
  optim::LRScheduler* scheduler() { return scheduler_.get(); }
  /// The model's parameters with their names, listed once: the per-step check walks them.
  const std::vector<std::pair<std::string, Tensor>>& named_params() const { return named_params_; }
  /// Whether the forward pass draws random numbers (dropout).
  bool uses_dropout() const { return uses_dropout_; }
  int64_t parameter_count() const;
  /// "  GPU peak 1.23 GiB" when training on a GPU, "" otherwise.
  std::string memory_note() const;

 private:
  int64_t batch_size_ = 0;
  ChosenDevice device_{Device("cpu"), ""};
  int64_t ranks_ = 1;
  std::shared_ptr<const data::MNIST> train_set_, test_set_;
  std::shared_ptr<nn::Module> model_;
  std::shared_ptr<nn::DistributedDataParallel> ddp_;  // wraps model_ in a job of several ranks
  std::vector<std::pair<std::string, Tensor>> named_params_;
  bool uses_dropout_ = false;
  std::unique_ptr<optim::Optimizer> optimizer_;
  std::unique_ptr<optim::LRScheduler> scheduler_;
  std::unique_ptr<data::DataLoader> loader_;       // batches loaded on the host, or
  std::unique_ptr<DeviceBatches> device_batches_;  // the training set held on the GPU
};

}  // namespace ember::train
