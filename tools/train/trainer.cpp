// The trainer's parts: training_setup.h builds what a run trains with (device, data, model,
// optimizer), step_runner.h runs the training steps and deals with those that are not finite,
// epoch_stats.h counts steps, losses and epochs, and run_saver.h saves the run's files. This
// file wires them together and runs the epoch loop.
#include "train/trainer.h"

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <ctime>
#include <iomanip>
#include <memory>
#include <optional>
#include <sstream>
#include <utility>

#include "ember/backends.h"
#include "ember/ember.h"
#include "train/curves.h"
#include "train/epoch_stats.h"
#include "train/interrupt.h"
#include "train/job.h"
#include "train/models.h"
#include "train/progress.h"
#include "train/recipe.h"
#include "train/run_files.h"
#include "train/run_saver.h"
#include "train/step_runner.h"
#include "train/training_setup.h"

namespace ember::train {

namespace {

using Clock = std::chrono::steady_clock;

std::string default_run_dir() {
  const std::time_t now = std::time(nullptr);
  std::tm local{};
  ::localtime_r(&now, &local);
  std::ostringstream name;
  name << "runs/" << std::put_time(&local, "%Y%m%d-%H%M%S");
  std::filesystem::path dir = name.str();
  for (int n = 2; std::filesystem::exists(dir); ++n) dir = name.str() + "-" + std::to_string(n);
  return dir;
}

/// --deterministic's switches, for this run only, so that a program (or test) that trains twice
/// gets its own switches back.
class DeterministicScope {
 public:
  explicit DeterministicScope(bool on) {
    if (!on) return;
    algorithms_.emplace(true);
    cudnn_.emplace(backends::cudnn::Flags{.deterministic = true, .benchmark = false});
  }

 private:
  std::optional<DeterministicAlgorithmsGuard> algorithms_;
  std::optional<backends::cudnn::FlagsGuard> cudnn_;
};

// ---- one invocation of train() or resume() ----

class Session {
 public:
  Session(RunConfig config, std::filesystem::path dir, const TrainOptions& runtime, std::ostream& out)
      : config_(std::move(config)),
        dir_(std::move(dir)),
        runtime_(runtime),
        out_(out),
        deterministic_(config_.deterministic),
        setup_(config_, runtime_),
        stats_(setup_.device()),
        saver_(config_, dir_, out_, setup_, stats_),
        steps_(setup_, stats_, config_, runtime_,
               [this](const PendingStep& bad, const std::string& what, const std::string& op) {
                 stop_at(bad, what, op);
               }) {}

  TrainResult run(const io::Checkpoint* checkpoint);

 private:
  void print_banner(bool resumed) const;
  /// Evaluates the model, reports the epoch and saves the run's files.
  void finish_epoch(double train_seconds);
  /// The seconds the epoch in progress has trained: before this stretch, and in it.
  double epoch_seconds() const;
  /// --nan-policy error, at the step `bad` (see StepRunner::StopAt): saves the state before it
  /// and throws the error that describes it.
  [[noreturn]] void stop_at(const PendingStep& bad, const std::string& what, const std::string& op);

  RunConfig config_;
  std::filesystem::path dir_;
  const TrainOptions& runtime_;
  std::ostream& out_;
  DeterministicScope deterministic_;  // before setup_: the switches hold while it is built
  TrainingSetup setup_;
  EpochStats stats_;
  RunSaver saver_;
  StepRunner steps_;
  Clock::time_point epoch_start_;  // of the epoch's stretch in this invocation
};

double Session::epoch_seconds() const {
  return stats_.seconds_before() + std::chrono::duration<double>(Clock::now() - epoch_start_).count();
}

void Session::stop_at(const PendingStep& bad, const std::string& what, const std::string& op) {
  const int64_t epoch = stats_.epochs_finished() + 1;
  stats_.rewind_to(bad.global_step);
  stats_.set_seconds_before(epoch_seconds());
  stats_.gather_over_ranks(setup_.ranks());
  if (!is_writer()) throw Error("stopped with the job at a non-finite step; rank 0 reports it");
  const bool saved = saver_.save_checkpoint_before(bad.loader_before, bad.rng_before);
  std::ostringstream message;
  message << "step " << bad.step + 1 << " of epoch " << epoch << " (step " << bad.global_step + 1
          << " of the run): " << what << ".";
  if (!op.empty()) message << "\nAnomaly detection, re-running the step: " << op;
  if (saved) {
    message << "\nThe state before this step is saved in " << (dir_ / kCheckpointFile).string()
            << ". `ember train --resume " << dir_.string()
            << " --nan-policy skip` continues from it, stepping over batches like this one; a new run with a "
               "lower --lr may avoid them.";
  } else {
    message << "\nThe state before this step could not be saved (see the warning above); "
            << (dir_ / kCheckpointFile).string() << " holds the last state saved before it.";
  }
  throw Error(message.str());
}

void Session::print_banner(bool resumed) const {
  const int64_t params = setup_.parameter_count();
  const ChosenDevice& device = setup_.chosen_device();
  const int64_t ranks = setup_.ranks();
  out_ << "ember " << kVersion << (resumed ? " — resuming " : " — training ") << config_.model << " on "
       << data_dir(config_.data) << "\n"
       << "  device     " << device.device << " (" << device.why << ")";
  if (device.device.is_cpu()) out_ << ", " << get_num_threads() << " threads";
  out_ << "\n"
       << "  model      " << config_.model << ", " << Progress::format_count(static_cast<double>(params))
       << " parameters\n"
       << "  data       " << Progress::format_count(static_cast<double>(setup_.train_set()->size())) << " training, "
       << Progress::format_count(static_cast<double>(setup_.test_set()->size())) << " test images\n"
       << "  recipe     " << config_.optimizer << " lr " << config_.lr;
  if (config_.optimizer == "sgd" && config_.momentum != 0) out_ << " momentum " << config_.momentum;
  out_ << ", " << config_.scheduler << " schedule, batch " << config_.batch_size << ", " << config_.epochs
       << " epochs, seed " << config_.seed << (config_.amp ? ", mixed precision (bfloat16)" : "")
       << (config_.deterministic ? ", deterministic algorithms" : "") << "\n"
       << "  run dir    " << dir_.string() << "\n";
  if (!curves_available())
    out_ << "  note       curves.png is not drawn: this ember was built without cairo (libcairo2-dev)\n";
  if (ranks > 1) {
    out_ << "  ranks      " << ranks << " (mpirun): each trains on its shard with batch " << config_.batch_size
         << ", so a step averages " << ranks * config_.batch_size << " samples; rank 0 logs and saves\n";
  }
  out_.flush();
}

void Session::finish_epoch(double train_seconds) {
  stats_.flush_loss();  // on a GPU, the losses summed there since the last progress line or save
  stats_.gather_over_ranks(setup_.ranks());
  // Every rank evaluates rank 0's model: the running statistics (BatchNorm) each rank updated in
  // its last forward are replaced by rank 0's, the ones that get saved.
  if (setup_.ranks() > 1) {
    NoGradGuard no_grad;
    for (const Tensor& buffer : setup_.model().buffers()) distributed::broadcast(buffer, 0);
  }
  const Device device = setup_.device();
  const EvalResult test = evaluate(setup_.model(), setup_.test_set(), device, config_.amp);
  const double peak_gpu_mib =
      device.is_cuda() ? static_cast<double>(cuda::max_memory_allocated(device.index())) / (1 << 20) : 0;
  const bool best =
      stats_.finish_epoch(test, train_seconds, setup_.optimizer().param_groups().front().lr(), peak_gpu_mib);
  const EpochMetrics& m = stats_.history().back();

  char line[256];
  std::snprintf(line, sizeof line,
                "epoch %lld/%lld  train_loss %.4f  test_loss %.4f  test_accuracy %.2f%%  (%.1f s, %s samples/s)",
                static_cast<long long>(m.epoch), static_cast<long long>(config_.epochs), m.train_loss, m.test_loss,
                100 * m.test_accuracy, train_seconds, Progress::format_count(m.samples_per_second).c_str());
  out_ << line << setup_.memory_note();
  if (m.skipped_steps > 0) out_ << "  " << m.skipped_steps << " steps skipped (non-finite)";
  if (best) out_ << "  best so far";
  out_ << "\n" << std::flush;
  if (best) saver_.keep_best();  // saved by save_files() below, kept in memory until a save succeeds

  if (setup_.scheduler()) setup_.scheduler()->step();
  saver_.save_files();
}

TrainResult Session::run(const io::Checkpoint* checkpoint) {
  if (checkpoint) {
    setup_.restore(*checkpoint);
    stats_.restore(*checkpoint);
  }
  saver_.start();
  InterruptHandler interrupt_handler(setup_.ranks() > 1);
  std::unique_ptr<DetectAnomalyGuard> anomaly;
  if (runtime_.detect_anomaly) anomaly = std::make_unique<DetectAnomalyGuard>();
  print_banner(checkpoint != nullptr);

  TrainResult result;
  result.run_dir = dir_;
  Progress progress(out_, runtime_.progress);
  int64_t steps_here = 0;
  const int64_t steps_per_epoch = setup_.batches_per_epoch();

  while (stats_.epochs_finished() < config_.epochs) {
    setup_.model().train();
    const int64_t epoch = stats_.epochs_finished() + 1;
    const int64_t first_step = setup_.loader_state().position;
    progress.start_epoch(epoch, config_.epochs, steps_per_epoch, first_step);
    steps_.start_epoch(epoch, progress);
    epoch_start_ = Clock::now();
    int64_t step = first_step;  // the epoch's steps so far, skipped ones included
    bool stop = false;
    while (true) {
      std::optional<PendingStep> next = steps_.take_redo();
      if (!next) {
        next.emplace();
        next->loader_before = setup_.loader_state();
        std::optional<data::Batch> batch = setup_.next_batch();
        if (!batch) {
          steps_.settle(0);  // the epoch's last step; one not finite may leave a step to run again
          if (steps_.has_redo()) continue;
          break;
        }
        next->batch = std::move(*batch);
        next->step = step++;
        next->global_step = stats_.next_global_step();
        ++steps_here;
      }
      steps_.launch(std::move(*next));
      // The step before this one: on a GPU it has finished, or nearly, and the device has this
      // one queued meanwhile, so reading its verdict does not leave the device idle.
      steps_.settle(1);
      bool interrupted = InterruptHandler::requested();
      if (setup_.ranks() > 1) interrupted = any_rank({interrupted})[0];  // a Ctrl-C is one rank's
      const bool stopping = interrupted || (runtime_.stop_after_steps > 0 && steps_here >= runtime_.stop_after_steps);
      if (progress.due(step) || stopping) {
        steps_.settle(0);
        stats_.flush_loss();
        progress.update(step, stats_.mean_loss(), stats_.samples(), setup_.memory_note());
      } else {
        progress.count(stats_.samples());
      }
      if (stopping && !steps_.has_redo()) {
        stop = true;
        break;
      }
    }
    const double seconds = epoch_seconds();
    progress.finish_epoch();
    if (stop) {
      // Stopped on the epoch's last step, the loader stands at the epoch's end: a resumed run
      // then finds no batch left and finishes the epoch (evaluation, files) as usual.
      stats_.set_seconds_before(seconds);
      stats_.gather_over_ranks(setup_.ranks());
      saver_.save_files();
      saver_.retry_failed_saves(runtime_.save_retry_seconds);
      out_ << "interrupted in epoch " << epoch << " after step " << step << "/" << steps_per_epoch
           << ": checkpoint saved to " << (dir_ / kCheckpointFile).string() << "\n"
           << "resume with: ember train --resume " << dir_.string() << "\n"
           << std::flush;
      result.interrupted = true;
      break;
    }
    finish_epoch(seconds);
    const bool more = stats_.epochs_finished() < config_.epochs;
    if (more && !saver_.failed().empty())
      out_ << "  training goes on with its state in memory; the next epoch's end saves again\n" << std::flush;
  }
  if (!result.interrupted) saver_.retry_failed_saves(runtime_.save_retry_seconds);
  result.epochs_completed = stats_.epochs_finished();
  result.best_accuracy = std::max(stats_.best_accuracy(), 0.0);
  result.last_accuracy = stats_.history().empty() ? 0 : stats_.history().back().test_accuracy;
  if (!result.interrupted) {
    out_ << "done: best test accuracy " << std::fixed << std::setprecision(2) << 100 * result.best_accuracy
         << "%; weights in " << (dir_ / kModelFile).string() << "\n"
         << std::defaultfloat << std::flush;
  }
  return result;
}

}  // namespace

TrainResult train(const TrainOptions& options, std::ostream& out) {
  JobScope job;
  std::ostream silent(nullptr);
  std::ostream& shown = is_writer() ? out : silent;
  const RunConfig config = resolve(options);
  const std::filesystem::path dir = options.out.empty() ? std::filesystem::path(default_run_dir()) : options.out;
  if (std::filesystem::exists(dir / kCheckpointFile) || std::filesystem::exists(dir / kModelFile) ||
      std::filesystem::exists(dir / kConfigFile)) {
    throw Error("'" + dir.string() + "' already holds a run; continue it with `ember train --resume " + dir.string() +
                "` or choose another --out");
  }
  if (std::filesystem::exists(dir) && !std::filesystem::is_directory(dir))
    throw Error("--out '" + dir.string() + "' exists and is not a folder");
  // Every rank has looked before rank 0 writes there. Only rank 0's folder name matters: the
  // others write nothing.
  if (job_size() > 1) distributed::barrier();
  Session session(config, dir, options, shown);
  return session.run(nullptr);
}

TrainResult resume(const std::filesystem::path& run_dir, const TrainOptions& options, std::ostream& out_all) {
  JobScope job;
  std::ostream silent(nullptr);
  std::ostream& out = is_writer() ? out_all : silent;
  RunConfig config = read_config(run_dir / kConfigFile);
  const std::filesystem::path checkpoint_path = run_dir / kCheckpointFile;
  if (!std::filesystem::exists(checkpoint_path))
    throw Error("'" + run_dir.string() + "' has no " + kCheckpointFile +
                ": the run stopped before its first checkpoint, so there is nothing to resume; remove the folder or "
                "choose another --out to start again");
  const io::Checkpoint checkpoint = io::load_checkpoint(checkpoint_path);
  // The loader's epoch counts the epochs finished (a checkpoint taken mid-epoch is in the next).
  const int64_t done = checkpoint.loader.epoch;
  if (options.epochs) {
    if (*options.epochs < done)
      throw Error("--epochs " + std::to_string(*options.epochs) + " is fewer than the " + std::to_string(done) +
                  " epochs the run has already completed");
    if (*options.epochs != config.epochs && config.scheduler == "cosine")
      throw Error("--epochs cannot change a run with a cosine schedule: its learning rates depend on the total");
    config.epochs = *options.epochs;
  }
  if (done >= config.epochs) {
    out << "'" << run_dir.string() << "' has already completed its " << config.epochs
        << " epochs; raise --epochs to train further\n";
    TrainResult result;
    result.run_dir = run_dir;
    result.epochs_completed = done;
    return result;
  }
  Session session(config, run_dir, options, out);
  return session.run(&checkpoint);
}

EvalResult evaluate_run(const std::filesystem::path& run_dir, const std::optional<std::string>& data,
                        const std::optional<std::string>& device) {
  const RunConfig config = read_config(run_dir / kConfigFile);
  const std::filesystem::path weights = run_dir / kModelFile;
  if (!std::filesystem::exists(weights))
    throw Error("'" + run_dir.string() + "' has no " + kModelFile + ": the run finished no epoch yet");
  const ChosenDevice chosen = choose_device(device);
  auto test_set = std::make_shared<data::MNIST>(data ? *data : std::string(config.data), data::MNIST::Split::Test);
  std::shared_ptr<nn::Module> model = make_model(config.model);
  nn::StateDict state;
  for (auto& [name, tensor] : io::load_safetensors(weights).tensors) state.insert(name, tensor);
  model->load_state_dict(state);
  model->to(chosen.device);
  return evaluate(*model, test_set, chosen.device, config.amp);
}

}  // namespace ember::train
