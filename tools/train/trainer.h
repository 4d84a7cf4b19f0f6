#pragma once
// `ember train` and `ember eval`: training the MNIST-format networks of train/models.h and the
// run directory each run leaves behind.
//
// A run directory holds
//   config.json               the resolved options (what --resume continues with)
//   metrics.csv               epoch,train_loss,test_loss,test_accuracy,train_seconds,samples_per_second
//   events.out.tfevents.*     TensorBoard scalars: train/loss, test/loss, test/accuracy, lr
//   model.safetensors         the weights with the best test accuracy (PyTorch state_dict keys)
//   checkpoint.safetensors    the latest checkpoint (end of an epoch, or where Ctrl-C stopped it)
//   curves.png                loss and accuracy per epoch
// Every file is replaced atomically, so an interrupted run never leaves a half-written one.
#include <cstdint>
#include <filesystem>
#include <map>
#include <optional>
#include <ostream>
#include <string>

namespace ember::train {

/// How progress is shown during an epoch.
enum class ProgressStyle {
  Auto,   // a redrawn bar when standard output is a terminal, plain lines otherwise
  Bar,    // a bar redrawn in place
  Lines,  // a plain line every few seconds
  Quiet,  // the banner and the per-epoch results only
};

/// What a training step does when its loss or a gradient is NaN or infinite.
enum class NanPolicy {
  Error,  // stop: save a checkpoint of the state before the step, then throw an error naming the
          // step, the first non-finite tensor and (by re-running the step with anomaly detection)
          // the backward function that produced it
  Skip,   // leave the parameters and optimizer untouched for that batch, report it, go on
};

/// What `ember train` accepts. Unset fields take the model's recipe (see resolve()).
struct TrainOptions {
  std::string model = "mlp";
  std::optional<std::string> optimizer;  // sgd | adam | adamw | adadelta
  std::optional<double> lr;
  double momentum = 0.0;                 // sgd only
  std::optional<std::string> scheduler;  // none | step | cosine
  std::optional<int64_t> batch_size;
  std::optional<int64_t> epochs;
  uint64_t seed = 0;
  std::string data;                   // empty: Debian's Fashion-MNIST folder
  std::optional<int64_t> limit;       // train on the first N images only
  std::filesystem::path out;          // empty: runs/<date>-<time>
  std::optional<std::string> device;  // empty: best_device()
  int threads = 0;                    // CPU threads; 0: ember's default
  ProgressStyle progress = ProgressStyle::Auto;
  /// Checked at every optimizer step, on the training device; the host reads each step's answer
  /// a step later, so on a GPU the check does not make the host wait (see step_verdicts.h).
  NanPolicy nan_policy = NanPolicy::Error;
  /// Anomaly detection (AnomalyMode) for the whole run: slow, names the first op whose backward
  /// returns NaN as soon as it happens.
  bool detect_anomaly = false;
  /// Mixed precision: forward passes and losses (training and test) under amp::autocast in
  /// bfloat16 on the training device, with float32 parameters and optimizer state. bfloat16 has
  /// float32's range, so no loss scaling is needed. Recorded in config.json; a resumed run keeps it.
  bool amp = false;
  /// Deterministic algorithms for the whole run (ember::use_deterministic_algorithms, and cuDNN's
  /// deterministic = true, benchmark = false, as PyTorch's reproducibility notes advise), so that
  /// runs on a GPU repeat bit for bit: an interrupted and resumed run gives the unbroken run's
  /// weights. CPU runs are deterministic either way. Recorded in config.json; a resumed run keeps
  /// it. The switches are put back as they were when train() or resume() returns.
  bool deterministic = false;
  /// When the last saves of a run (at its end, or at Ctrl-C) fail, how long to keep retrying
  /// them, every few seconds, before giving up with an error. Saves during training that fail
  /// are reported and retried at the next save point; the state stays in memory meanwhile.
  double save_retry_seconds = 60;
  /// Stops as Ctrl-C does (checkpoint, then return) after this many optimizer steps of this
  /// invocation; 0 never. For tests of interruption and resume.
  int64_t stop_after_steps = 0;
  /// Multiplies the loss of the given steps of the run (numbered from 1) by the given factor: NaN
  /// makes a step non-finite where a test wants one. For tests of --nan-policy.
  std::map<int64_t, double> scale_loss_at_steps;
};

/// The options with every choice made: what config.json records.
struct RunConfig {
  std::string model, optimizer, scheduler, data;
  double lr = 0, momentum = 0;
  int64_t batch_size = 0, epochs = 0;
  uint64_t seed = 0;
  std::optional<int64_t> limit;
  bool amp = false;
  bool deterministic = false;
};

/// Fills in the model's recipe for what `options` leaves unset and checks every value; a bad
/// value is an ember::Error naming the flag.
///   mlp: adam, lr 1e-3, cosine schedule, batch 64, 10 epochs
///   cnn: adadelta, lr 1.0, step schedule (×0.7 per epoch, as pytorch/examples), batch 64, 5 epochs
/// The scheduler defaults to none for sgd, so the quickstart recipe runs as PyTorch's does.
RunConfig resolve(const TrainOptions& options);

struct TrainResult {
  std::filesystem::path run_dir;
  int64_t epochs_completed = 0;
  double best_accuracy = 0;  // in [0, 1]
  double last_accuracy = 0;
  bool interrupted = false;  // stopped by Ctrl-C (or stop_after_steps) after saving a checkpoint
};

/// Trains a new run into options.out. An --out folder that already holds a run is refused
/// (nothing saved is ever overwritten by a new run).
TrainResult train(const TrainOptions& options, std::ostream& out);

/// Continues the run in `run_dir` from its checkpoint with the options in its config.json;
/// `epochs` may raise the number of epochs, device/threads/progress/nan_policy/detect_anomaly/
/// save_retry_seconds/stop_after_steps come from `options` (its other fields must be left unset
/// by the caller).
TrainResult resume(const std::filesystem::path& run_dir, const TrainOptions& options, std::ostream& out);

struct EvalResult {
  int64_t correct = 0, total = 0;
  double loss = 0;  // mean cross-entropy
  double accuracy() const { return total == 0 ? 0 : static_cast<double>(correct) / static_cast<double>(total); }
};

/// Test accuracy of the best weights (model.safetensors) of a run directory, on the test split
/// of the data the run was trained on (or `data` when given).
EvalResult evaluate_run(const std::filesystem::path& run_dir, const std::optional<std::string>& data,
                        const std::optional<std::string>& device);

}  // namespace ember::train
