#pragma once
// The training step and its verdicts. Each step is queued on the device whole (forward, backward,
// the finiteness check and the optimizer update) and its verdict read a step later (see
// step_verdicts.h), so a step that turns out not finite is found after the next one has been
// queued. The runner keeps what it needs to undo that: the state before each queued step. Under
// --nan-policy skip it puts that state back and runs the following step again; under error it
// puts it back, finds what was not finite and hands the step to the caller, which stops the run.
#include <cstddef>
#include <cstdint>
#include <deque>
#include <functional>
#include <memory>
#include <optional>
#include <string>
#include <utility>
#include <vector>

#include "ember/ember.h"
#include "train/epoch_stats.h"
#include "train/progress.h"
#include "train/step_verdicts.h"
#include "train/trainer.h"
#include "train/training_setup.h"

namespace ember::train {

/// A training step queued on the device whose verdict (finite or not) the host has not read.
struct PendingStep {
  data::Batch batch;
  int64_t step = 0;         // its index in the epoch, from 0
  int64_t global_step = 0;  // the run's steps before it
  // The state before it, to go back to should it turn out not finite.
  data::DataLoaderState loader_before;
  std::optional<RngStates> rng_before;  // only when the forward pass draws random numbers
  nn::StateDict buffers_before;
  optim::Optimizer::HostState optimizer_before;
  Tensor loss;      // detached
  int ticket = -1;  // of the StepRunner's StepVerdicts
};

class StepRunner {
 public:
  /// Under --nan-policy error, called with a step that was not finite once the state is back to
  /// before it (but for the run's step count): `what` describes the first NaN or infinity, `op`
  /// is what anomaly detection says of the op that produced it ("" when it finds none). It saves
  /// that state and throws; it does not return.
  using StopAt = std::function<void(const PendingStep& bad, const std::string& what, const std::string& op)>;

  StepRunner(TrainingSetup& setup, EpochStats& stats, const RunConfig& config, const TrainOptions& runtime,
             StopAt stop_at);

  /// The epoch the coming steps belong to, and the display that reports skipped steps.
  void start_epoch(int64_t epoch, Progress& progress);
  /// Queues `step` on the device, forward to optimizer update, reading nothing back.
  void launch(PendingStep step);
  /// Reads the verdicts of the queued steps, oldest first, until `keep` remain; a finite step's
  /// loss then counts. A step that was not finite is handled by handle_non_finite().
  void settle(size_t keep);
  /// A step to run again (--nan-policy skip): skipped on the device only because the one before
  /// it was not finite. The loop launches it before drawing a new batch.
  std::optional<PendingStep> take_redo() { return std::exchange(redo_, std::nullopt); }
  bool has_redo() const { return redo_.has_value(); }

 private:
  /// The training loss of `batch` (scaled as runtime_.scale_loss_at_steps asks).
  Tensor batch_loss(nn::Module& model, const data::Batch& batch, int64_t global_step);
  /// The oldest queued step was not finite. Every step queued after it was skipped on the
  /// device too (the flag is sticky): puts the host's state back to before it, then stops the
  /// run (--nan-policy error) or leaves the step after it in redo_ (skip).
  void handle_non_finite();
  /// Re-runs `step` on this rank alone and describes its first NaN or infinity.
  std::string describe_non_finite(const PendingStep& step);
  /// The step's loss (detached) followed by every parameter's gradient: what all_finite checks.
  std::vector<Tensor> loss_and_grads(const Tensor& loss) const;
  /// Runs `step`'s forward and backward again on this rank alone, returning its loss: from the
  /// state before the step, this leaves buffers and generators as the step itself did. Each rank
  /// re-runs its own batch without averaging, because what follows (anomaly detection) may stop
  /// backward on one rank and not another, and a collective started by only some ranks would
  /// never finish.
  Tensor rerun_alone(const PendingStep& step);
  /// The first NaN or infinity in the loss or the gradients, described; nullopt when all finite.
  std::optional<std::string> first_non_finite(const Tensor& loss) const;
  /// Re-runs the step's forward and backward on `step`'s batch with anomaly detection, returning
  /// what it says about the op that produced the first NaN ("" when it finds none).
  std::string find_nan_op(const PendingStep& step);

  TrainingSetup& setup_;
  EpochStats& stats_;
  const RunConfig& config_;
  const TrainOptions& runtime_;
  StopAt stop_at_;
  StepVerdicts verdicts_;
  std::deque<PendingStep> pending_;  // queued on the device, verdicts unread
  std::optional<PendingStep> redo_;
  Progress* progress_ = nullptr;
  int64_t epoch_ = 0;
};

}  // namespace ember::train
