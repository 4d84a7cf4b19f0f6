#pragma once
// Saving a run's files (rank 0 only): config.json at the start, and at each epoch's end (or a
// stop) the best weights, the TensorBoard events, metrics.csv, curves.png and the checkpoint. A
// save that fails during training is reported and remembered instead of thrown: training keeps
// its state in memory and the next save point tries again; at the end of a run the failed saves
// are retried for a while before the run gives up with an error naming them.
#include <cstdint>
#include <filesystem>
#include <functional>
#include <memory>
#include <optional>
#include <ostream>
#include <string>
#include <vector>

#include "ember/ember.h"
#include "ember/io/tensorboard.h"
#include "train/epoch_stats.h"
#include "train/trainer.h"
#include "train/training_setup.h"

namespace ember::train {

inline constexpr const char* kCheckpointFile = "checkpoint.safetensors";
inline constexpr const char* kModelFile = "model.safetensors";
inline constexpr const char* kConfigFile = "config.json";

class RunSaver {
 public:
  /// Saves into `dir` what `setup` and `stats` hold; warnings go to `out`.
  RunSaver(const RunConfig& config, std::filesystem::path dir, std::ostream& out, TrainingSetup& setup,
           EpochStats& stats);

  /// At the start of an invocation, on rank 0: creates the run folder, writes config.json and
  /// opens the TensorBoard writer (which then holds the epochs of the history so far).
  void start();
  /// Keeps a copy of the model's weights as the best so far (training goes on changing the
  /// model), held in memory until a save of model.safetensors succeeds. Rank 0 only.
  void keep_best();
  /// Saves everything an epoch's end saves; the names of those that failed are in failed().
  void save_files();
  /// Of the latest save round.
  const std::vector<std::string>& failed() const { return failed_saves_; }
  /// At the end of a run: retries failed saves for `seconds`, then gives up with an error naming
  /// them.
  void retry_failed_saves(double seconds);
  /// Saves a checkpoint of the state before a step that was not taken: the loader's position and
  /// the generators as they were then (--nan-policy error). Returns whether it was saved.
  bool save_checkpoint_before(const data::DataLoaderState& loader, const std::optional<RngStates>& rng);

 private:
  /// Runs one save. A failure is reported and remembered instead of thrown.
  bool attempt(const std::string& what, const std::function<void()>& save);
  /// `loader`/`rng` override the current ones: the state before a step that was not taken.
  void save_checkpoint(const std::optional<data::DataLoaderState>& loader = std::nullopt,
                       const std::optional<RngStates>& rng = std::nullopt);
  /// Writes the events of the epochs not yet written.
  void write_events();
  void write_curves();

  const RunConfig& config_;
  std::filesystem::path dir_;
  std::ostream& out_;
  TrainingSetup& setup_;
  EpochStats& stats_;
  std::unique_ptr<io::SummaryWriter> events_;  // null after a failed write, until one succeeds again
  size_t epochs_logged_ = 0;                   // epochs of the history written to events_
  std::vector<std::string> failed_saves_;      // of the latest save round
  nn::StateDict unsaved_best_;                 // best weights whose save failed, kept in memory
};

}  // namespace ember::train
