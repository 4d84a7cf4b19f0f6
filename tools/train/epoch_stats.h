#pragma once
// What a run has counted: its optimizer steps, the running sums of the epoch in progress (carried
// through a checkpoint taken mid-epoch, so that a resumed epoch reports what an unbroken one
// would), and the metrics of the finished epochs with the best test accuracy among them.
#include <cstdint>
#include <vector>

#include "ember/ember.h"
#include "train/run_files.h"
#include "train/trainer.h"

namespace ember::train {

class EpochStats {
 public:
  /// `device`: where the steps' losses are. On a GPU they are summed there and read back only
  /// when shown or saved, since reading one makes the host wait for its step.
  explicit EpochStats(Device device) : device_(device) {}

  /// Takes the counters a checkpoint holds. In a job, rank 0 alone takes the sums of the epoch
  /// so far (the job's, see gather_over_ranks()).
  void restore(const io::Checkpoint& checkpoint);
  /// Records the counters in `checkpoint`, reading back the losses still summed on the GPU.
  void write_to(io::Checkpoint& checkpoint);

  /// The run's optimizer steps so far, skipped ones included.
  int64_t global_step() const { return global_step_; }
  /// Counts a new step; returns the run's steps before it.
  int64_t next_global_step() { return global_step_++; }
  /// Back to before the step numbered `step` (from 0), which was not taken.
  void rewind_to(int64_t step) { global_step_ = step; }

  /// Adds a step's mean loss to the epoch's sum; on a GPU without reading it back yet.
  void add_loss(const Tensor& loss, int64_t samples);
  /// Reads the losses summed on the GPU since the last flush into the epoch's sum.
  void flush_loss();
  /// The epoch's mean training loss as of the last flush (0 before its first sample).
  double mean_loss() const;
  int64_t samples() const { return samples_; }
  /// Counts a step of the epoch skipped for a non-finite value; returns the epoch's count so far.
  int64_t count_skipped() { return ++skipped_; }
  /// Seconds the epoch trained before the current stretch (before a resume, or a stop).
  double seconds_before() const { return seconds_before_; }
  void set_seconds_before(double seconds) { seconds_before_ = seconds; }
  /// In a job of `ranks` ranks: replaces each rank's running sums of the epoch with their totals
  /// on rank 0 and zeros elsewhere, so that a checkpoint holds the job's sums and adding them up
  /// again at the epoch's end (after a resume) counts each sample once.
  void gather_over_ranks(int64_t ranks);

  /// Ends the epoch in progress: appends its metrics (training loss and rate from the epoch's
  /// sums, which start again from zero) to the history. Returns whether its test accuracy is the
  /// best so far.
  bool finish_epoch(const EvalResult& test, double train_seconds, double lr, double peak_gpu_mib);
  const std::vector<EpochMetrics>& history() const { return history_; }
  int64_t epochs_finished() const { return static_cast<int64_t>(history_.size()); }
  /// -1 before the first epoch ends.
  double best_accuracy() const { return best_accuracy_; }

 private:
  Device device_;
  int64_t global_step_ = 0;
  double loss_sum_ = 0;  // of the epoch in progress, as the other sums below
  int64_t samples_ = 0;
  double seconds_before_ = 0;
  int64_t skipped_ = 0;
  Tensor pending_loss_;  // GPU only: summed losses not yet read
  std::vector<EpochMetrics> history_;
  double best_accuracy_ = -1;
};

}  // namespace ember::train
