#include "train/trainer.h"

#include <sched.h>

#include <algorithm>
#include <chrono>
#include <cmath>
#include <ctime>
#include <deque>
#include <functional>
#include <iomanip>
#include <memory>
#include <optional>
#include <sstream>
#include <thread>
#include <utility>
#include <vector>

#include "ember/backends.h"
#include "ember/ember.h"
#include "ember/io/atomic_file.h"
#include "ember/io/tensorboard.h"
#include "train/curves.h"
#include "train/device_batches.h"
#include "train/interrupt.h"
#include "train/job.h"
#include "train/models.h"
#include "train/progress.h"
#include "train/recipe.h"
#include "train/run_files.h"
#include "train/step_verdicts.h"

namespace ember::train {

namespace {

using Clock = std::chrono::steady_clock;

constexpr const char* kCheckpointFile = "checkpoint.safetensors";
constexpr const char* kModelFile = "model.safetensors";
constexpr const char* kConfigFile = "config.json";
constexpr int64_t kTestBatch = 1000;
// Under --nan-policy skip, the first skips of an epoch are printed; later ones only counted.
constexpr int64_t kReportedSkips = 10;

struct ChosenDevice {
  Device device;
  std::string why;
};

/// The generators a training step draws from: the CPU's and, when training on a GPU, that
/// device's (dropout there draws from it).
struct RngStates {
  Tensor cpu;
  Tensor cuda;  // undefined unless training on a GPU
};

ChosenDevice pick_device(const std::optional<std::string>& requested) {
  // In a job of several ranks, each takes the GPU of its local rank unless told an index.
  const bool own_gpu = job_size() > 1;
  if (requested && !requested->empty()) {
    Device device(*requested);
    if (own_gpu && device.is_cuda() && !device.has_index()) device = distributed::default_device();
    empty({0}, device);  // an unusable device fails here, with the reason
    return {device, "set by --device"};
  }
  const Device device = own_gpu && cuda::is_available() ? distributed::default_device() : best_device();
  if (std::getenv("EMBER_DEVICE") != nullptr) return {device, "set by EMBER_DEVICE"};
  if (device.is_cpu()) {
    std::string why = "best available; CUDA: " + cuda::unavailable_reason();
    return {device, why};
  }
  return {device, "best available"};
}

/// The device to train on, made this thread's current CUDA device when it is a GPU (as
/// torch.cuda.set_device(local_rank) in a PyTorch script): work that names no device index, and
/// the DataLoader's pinning threads, then stay on it instead of creating a context on cuda:0.
ChosenDevice choose_device(const std::optional<std::string>& requested) {
  ChosenDevice chosen = pick_device(requested);
  if (chosen.device.is_cuda() && chosen.device.has_index()) cuda::set_device(chosen.device.index());
  return chosen;
}

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

int64_t count_parameters(const nn::Module& model) {
  int64_t n = 0;
  for (const Tensor& p : model.parameters()) n += p.numel();
  return n;
}

io::NamedTensors named(const nn::StateDict& state) {
  io::NamedTensors tensors;
  for (const auto& [key, value] : state) tensors.emplace_back(key, value);
  return tensors;
}

// How many batches a loader thread prepares ahead of the step. On a GPU, or when the step's CPU
// threads leave a core free, loading overlaps the step. When they occupy every core (this
// rank's threads times the ranks on the machine), a loader thread can run only by preempting one
// of them, and the step's next OpenMP barrier then waits for the preempted thread: one mlp epoch
// on 2 threads and 2 cores ran 8-15% faster with the batch loaded in place (docs/PERFORMANCE.md
// §9). Loading an MNIST batch in place costs microseconds.
int64_t prefetch_batches(Device device, int64_t ahead) {
  if (!device.is_cpu()) return ahead;
  cpu_set_t allowed;
  const int cpus = sched_getaffinity(0, sizeof allowed, &allowed) == 0
                       ? CPU_COUNT(&allowed)
                       : static_cast<int>(std::thread::hardware_concurrency());
  const int busy = get_num_threads() * (job_size() > 1 ? distributed::local_world_size() : 1);
  return busy < cpus ? ahead : 0;
}

// In a job, rank r evaluates batches r, r + N, ... and the sums are added over the ranks, so
// every test image counts once.
EvalResult evaluate(nn::Module& model, const std::shared_ptr<const data::MNIST>& test_set, Device device, bool amp) {
  NoGradGuard no_grad;
  std::optional<amp::autocast> region;  // --amp: in bfloat16, as training ran
  if (amp) region.emplace(device.type(), kBFloat16);
  model.eval();
  data::DataLoader loader(test_set, {.batch_size = kTestBatch, .prefetch = prefetch_batches(device, 1)});
  EvalResult result;
  const int64_t ranks = job_size(), rank = job_rank();
  int64_t index = 0;
  for (data::Batch& batch : loader) {
    if (index++ % ranks != rank) continue;
    const Tensor x = batch.data.to(device);
    const Tensor y = batch.target.to(device);
    const Tensor logits = model.forward(x);
    result.loss += nn::functional::cross_entropy(logits, y, nn::Reduction::Sum).item<double>();
    result.correct += logits.argmax(1).eq(y).sum().item<int64_t>();
    result.total += y.size(0);
  }
  const std::vector<double> sums =
      sum_over_ranks({result.loss, static_cast<double>(result.correct), static_cast<double>(result.total)});
  result.loss = sums[0];
  result.correct = static_cast<int64_t>(sums[1]);
  result.total = static_cast<int64_t>(sums[2]);
  if (result.total > 0) result.loss /= static_cast<double>(result.total);
  return result;
}

// Copies of the module's buffers (BatchNorm's running statistics): a training-mode forward
// updates them, so they are part of the state before a step. Empty for models without any.
nn::StateDict copy_buffers(const nn::Module& model) {
  nn::StateDict copy;
  for (const auto& [name, buffer] : model.named_buffers()) copy.insert(name, buffer.clone());
  return copy;
}

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
  int ticket = -1;  // of the session's StepVerdicts
};

// ---- one invocation of train() or resume() ----

class Session {
 public:
  Session(RunConfig config, std::filesystem::path dir, const TrainOptions& runtime, std::ostream& out)
      : config_(std::move(config)), dir_(std::move(dir)), runtime_(runtime), out_(out) {}

  TrainResult run(const io::Checkpoint* checkpoint);

 private:
  void build();
  void restore(const io::Checkpoint& checkpoint);
  void print_banner(bool resumed) const;
  /// `loader`/`rng` override the current ones: the state before a step that was not taken.
  void save_checkpoint(const std::optional<data::DataLoaderState>& loader = std::nullopt,
                       const std::optional<RngStates>& rng = std::nullopt);
  /// The generators' states now, and their inverse. `step_only`: only the generator a training
  /// step draws from (the training device's); set_rng_states leaves an undefined one as it is.
  RngStates rng_states(bool step_only = false) const;
  void set_rng_states(const RngStates& states);
  void finish_epoch(double train_seconds);
  /// Runs one save. A failure is reported and remembered instead of thrown: training keeps its
  /// state in memory, and the next save point (or the retries at the end) tries again.
  bool attempt(const std::string& what, const std::function<void()>& save);
  /// Saves everything an epoch's end saves; the names of those that failed are in failed_saves_.
  void save_files();
  /// At the end of a run: retries failed saves for runtime_.save_retry_seconds, then gives up
  /// with an error naming them.
  void retry_failed_saves();
  /// The training loss of `batch` (scaled as runtime_.scale_loss_at_steps asks).
  Tensor batch_loss(nn::Module& model, const data::Batch& batch, int64_t global_step);
  /// Queues one step on the device, forward to optimizer update, reading nothing back.
  void launch(PendingStep& step);
  /// Reads the verdicts of the queued steps, oldest first, until `keep` remain; a finite step's
  /// loss then counts. A step that was not finite is handled by handle_non_finite().
  void settle(size_t keep);
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
  data::DataLoaderState loader_state() const;
  /// The next training batch, already on the training device; std::nullopt ends the epoch.
  std::optional<data::Batch> next_batch();
  /// Adds a step's mean loss to the epoch's sum; on a GPU without reading it back yet.
  void add_loss(const Tensor& loss, int64_t samples);
  /// Reads the losses summed on the GPU since the last flush into epoch_loss_sum_.
  void flush_loss();
  /// "  GPU peak 1.23 GiB" when training on a GPU, "" otherwise.
  std::string memory_note() const;
  /// What the training step runs: the data-parallel wrapper in a job, the model alone.
  nn::Module& trained() { return ddp_ ? *ddp_ : *model_; }
  /// In a job: replaces each rank's running sums of the epoch with their totals on rank 0 and
  /// zeros elsewhere, so that a checkpoint holds the job's sums and adding them up again at the
  /// epoch's end (after a resume) counts each sample once.
  void gather_epoch_sums();

  RunConfig config_;
  std::filesystem::path dir_;
  const TrainOptions& runtime_;
  std::ostream& out_;

  ChosenDevice device_{Device("cpu"), ""};
  std::shared_ptr<const data::MNIST> train_set_, test_set_;
  std::shared_ptr<nn::Module> model_;
  std::shared_ptr<nn::DistributedDataParallel> ddp_;  // wraps model_ in a job of several ranks
  int64_t ranks_ = 1;
  std::unique_ptr<optim::Optimizer> optimizer_;
  std::unique_ptr<optim::LRScheduler> scheduler_;
  std::unique_ptr<data::DataLoader> loader_;       // batches loaded on the host, or
  std::unique_ptr<DeviceBatches> device_batches_;  // the training set held on the GPU
  Tensor pending_loss_;                            // GPU only: summed losses not yet read
  std::unique_ptr<io::SummaryWriter> events_;      // null after a failed write, until one succeeds again
  size_t epochs_logged_ = 0;                       // epochs of history_ written to events_
  std::vector<std::string> failed_saves_;          // of the latest save round
  nn::StateDict unsaved_best_;                     // best weights whose save failed, kept in memory

  std::vector<EpochMetrics> history_;
  double best_accuracy_ = -1;
  int64_t global_step_ = 0;
  // The epoch in progress: sums since its start, carried through a checkpoint taken mid-epoch.
  double epoch_loss_sum_ = 0;
  int64_t epoch_samples_ = 0;
  double epoch_seconds_before_ = 0;
  int64_t epoch_skipped_ = 0;
  bool uses_dropout_ = false;  // whether the forward pass draws random numbers
  // The model's parameters with their names, listed once: the per-step check walks them.
  std::vector<std::pair<std::string, Tensor>> named_params_;

  // The step loop (run()): steps queued on the device whose verdicts are unread, and a step to
  // run again, skipped on the device only because one before it was not finite.
  std::unique_ptr<StepVerdicts> verdicts_;
  std::deque<PendingStep> pending_;
  std::optional<PendingStep> redo_;
  Progress* progress_ = nullptr;
  int64_t epoch_ = 0;
  Clock::time_point epoch_start_;
};

void Session::build() {
  ranks_ = job_size();
  device_ = choose_device(runtime_.device);
  if (runtime_.threads > 0) set_num_threads(runtime_.threads);
  const std::string root = data_dir(config_.data);
  train_set_ = std::make_shared<data::MNIST>(root, data::MNIST::Split::Train, config_.limit);
  test_set_ = std::make_shared<data::MNIST>(root, data::MNIST::Split::Test);
  manual_seed(config_.seed);
  model_ = make_model(config_.model);
  model_->to(device_.device);
  if (ranks_ > 1) ddp_ = std::make_shared<nn::DistributedDataParallel>(model_);
  named_params_ = model_->named_parameters();
  for (const auto& [name, module] : model_->named_modules())
    uses_dropout_ = uses_dropout_ || std::dynamic_pointer_cast<nn::Dropout>(module) != nullptr;
  optimizer_ = make_optimizer(config_, model_->parameters());
  verdicts_ = std::make_unique<StepVerdicts>(device_.device, ranks_ > 1);
  scheduler_ = make_scheduler(config_, *optimizer_);
  if (DeviceBatches::fits(*train_set_, device_.device)) {
    device_batches_ = std::make_unique<DeviceBatches>(*train_set_, device_.device, config_.batch_size, config_.seed,
                                                      ranks_, job_rank());
  } else {
    loader_ = std::make_unique<data::DataLoader>(
        train_set_, data::DataLoaderOptions{.batch_size = config_.batch_size,
                                            .shuffle = true,
                                            .seed = config_.seed,
                                            .num_replicas = ranks_,
                                            .rank = job_rank(),
                                            .prefetch = prefetch_batches(device_.device, 2),
                                            .pin_memory = device_.device.is_cuda()});
  }
}

data::DataLoaderState Session::loader_state() const {
  return device_batches_ ? device_batches_->state() : loader_->state();
}

std::optional<data::Batch> Session::next_batch() {
  if (device_batches_) return device_batches_->next();
  std::optional<data::Batch> batch = loader_->next();
  if (batch) {
    // From pinned memory on a GPU (the loader's pin_memory): queued, not waited for.
    batch->data = batch->data.to(device_.device, /*non_blocking=*/true);
    batch->target = batch->target.to(device_.device, /*non_blocking=*/true);
  }
  return batch;
}

void Session::add_loss(const Tensor& loss, int64_t samples) {
  epoch_samples_ += samples;
  if (device_.device.is_cpu()) {
    epoch_loss_sum_ += loss.item<double>() * static_cast<double>(samples);
    return;
  }
  // On a GPU, reading the loss would make the host wait for the step: sum it on the device (in
  // float64, as the host sum) and read it only when it is shown or saved.
  const Tensor weighted = loss.detach().to(kFloat64) * static_cast<double>(samples);
  pending_loss_ = pending_loss_.defined() ? pending_loss_ + weighted : weighted;
}

void Session::flush_loss() {
  if (!pending_loss_.defined()) return;
  epoch_loss_sum_ += pending_loss_.item<double>();
  pending_loss_ = Tensor();
}

std::string Session::memory_note() const {
  if (!device_.device.is_cuda()) return "";
  const double gib = static_cast<double>(cuda::max_memory_allocated(device_.device.index())) / (1 << 30);
  char text[48];
  std::snprintf(text, sizeof text, "  GPU peak %.2f GiB", gib);
  return text;
}

void Session::restore(const io::Checkpoint& checkpoint) {
  model_->load_state_dict(checkpoint.model);
  optimizer_->load_state_dict(checkpoint.optimizer);
  if (scheduler_) scheduler_->load_state_dict(checkpoint.scheduler);
  set_rng_states({checkpoint.rng, checkpoint.rng_cuda});
  auto extra = [&](const char* key) -> const std::string& {
    auto it = checkpoint.extra.find(key);
    if (it == checkpoint.extra.end()) throw Error(std::string("the checkpoint has no '") + key + "' entry");
    return it->second;
  };
  // A checkpoint from a job of another size resumes where that job's ranks together stopped.
  auto saved_ranks_entry = checkpoint.extra.find("ranks");  // absent before distributed training existed
  const int64_t saved_ranks = saved_ranks_entry == checkpoint.extra.end() ? 1 : std::stoll(saved_ranks_entry->second);
  auto batches_for = [&](int64_t ranks) {
    return (data::replica_size(train_set_->size(), ranks) + config_.batch_size - 1) / config_.batch_size;
  };
  const data::DataLoaderState at =
      resume_state(checkpoint.loader, saved_ranks, ranks_, batches_for(saved_ranks), batches_for(ranks_));
  if (device_batches_) {
    device_batches_->set_state(at);
  } else {
    loader_->set_state(at);
  }
  global_step_ = checkpoint.step;
  history_ = history_from_json(extra("history"));
  best_accuracy_ = std::stod(extra("best_accuracy"));
  // The job's sums of the epoch so far: kept by rank 0, added to the others' at the epoch's end.
  epoch_loss_sum_ = is_writer() ? std::stod(extra("epoch_loss_sum")) : 0;
  epoch_samples_ = is_writer() ? std::stoll(extra("epoch_samples")) : 0;
  epoch_seconds_before_ = std::stod(extra("epoch_seconds"));
  auto skipped = checkpoint.extra.find("epoch_skipped");  // absent before --nan-policy existed
  epoch_skipped_ = skipped == checkpoint.extra.end() ? 0 : std::stoll(skipped->second);
  epochs_logged_ = history_.size();
}

// Doubles as text that reads back to the same bits.
std::string exact(double value) {
  std::ostringstream s;
  s << std::setprecision(17) << value;
  return s.str();
}

RngStates Session::rng_states(bool step_only) const {
  const bool gpu = device_.device.is_cuda();
  RngStates states;
  // On a GPU, dropout draws from the GPU's generator and a step leaves the CPU's as it was;
  // reading the CPU's (a copy of its whole state) would cost tens of microseconds a step.
  if (!(step_only && gpu)) states.cpu = get_rng_state();
  if (gpu) states.cuda = cuda::get_rng_state(device_.device.index());
  return states;
}

void Session::set_rng_states(const RngStates& states) {
  if (states.cpu.defined()) set_rng_state(states.cpu);
  // A GPU run's generator; a run resumed on another kind of device draws from its own.
  if (states.cuda.defined() && device_.device.is_cuda()) cuda::set_rng_state(states.cuda, device_.device.index());
}

void Session::save_checkpoint(const std::optional<data::DataLoaderState>& loader, const std::optional<RngStates>& rng) {
  io::Checkpoint checkpoint;
  checkpoint.model = model_->state_dict();
  checkpoint.optimizer = optimizer_->state_dict();
  if (scheduler_) checkpoint.scheduler = scheduler_->state_dict();
  RngStates states = rng_states();
  if (rng && rng->cpu.defined()) states.cpu = rng->cpu;
  if (rng && rng->cuda.defined()) states.cuda = rng->cuda;
  checkpoint.rng = states.cpu;
  checkpoint.rng_cuda = states.cuda;
  flush_loss();
  checkpoint.loader = loader ? *loader : loader_state();
  checkpoint.epoch = checkpoint.loader.epoch;
  checkpoint.step = global_step_;
  checkpoint.extra["history"] = history_to_json(history_);
  checkpoint.extra["best_accuracy"] = exact(best_accuracy_);
  checkpoint.extra["epoch_loss_sum"] = exact(epoch_loss_sum_);
  checkpoint.extra["epoch_samples"] = std::to_string(epoch_samples_);
  checkpoint.extra["epoch_seconds"] = exact(epoch_seconds_before_);
  checkpoint.extra["epoch_skipped"] = std::to_string(epoch_skipped_);
  checkpoint.extra["ranks"] = std::to_string(ranks_);
  io::save_checkpoint(dir_ / kCheckpointFile, checkpoint);
}

void Session::gather_epoch_sums() {
  if (ranks_ == 1) return;
  flush_loss();
  const std::vector<double> totals = sum_over_ranks({epoch_loss_sum_, static_cast<double>(epoch_samples_)});
  epoch_loss_sum_ = is_writer() ? totals[0] : 0;
  epoch_samples_ = is_writer() ? static_cast<int64_t>(totals[1]) : 0;
}

bool Session::attempt(const std::string& what, const std::function<void()>& save) {
  try {
    save();
    return true;
  } catch (const std::exception& e) {  // ember::Error, and std::filesystem's errors
    failed_saves_.push_back(what);
    out_ << "warning: could not save " << what << ": " << e.what() << "\n" << std::flush;
    return false;
  }
}

void Session::save_files() {
  failed_saves_.clear();
  if (!is_writer()) return;
  if (!unsaved_best_.empty() &&
      attempt("the best weights", [&] { io::save_safetensors(dir_ / kModelFile, named(unsaved_best_)); })) {
    unsaved_best_ = nn::StateDict();
  }
  attempt("the TensorBoard events", [&] {
    if (!events_) events_ = std::make_unique<io::SummaryWriter>(dir_);  // a new file after a failed one
    try {
      for (; epochs_logged_ < history_.size(); ++epochs_logged_) {
        const EpochMetrics& m = history_[epochs_logged_];
        events_->add_scalar("train/loss", m.train_loss, m.epoch);
        events_->add_scalar("test/loss", m.test_loss, m.epoch);
        events_->add_scalar("test/accuracy", m.test_accuracy, m.epoch);
        events_->add_scalar("lr", m.lr, m.epoch);
      }
      events_->flush();
    } catch (const Error&) {
      events_.reset();  // a writer refuses further events after a failed one
      throw;
    }
  });
  attempt("metrics.csv", [&] { io::write_file_atomically(dir_ / "metrics.csv", metrics_csv(history_)); });
  if (!history_.empty() && curves_available())
    attempt("curves.png", [&] {
      std::vector<EpochPoint> points;
      for (const EpochMetrics& h : history_)
        points.push_back({h.epoch, h.train_loss, h.test_loss, 100 * h.test_accuracy});
      std::ostringstream title;
      title << "ember train: " << config_.model << ", " << config_.optimizer << " lr " << config_.lr << ", batch "
            << config_.batch_size;
      write_curves_png(dir_ / "curves.png", points, title.str());
    });
  // Last: the checkpoint is what --resume starts from, so once it is on disk every other file
  // already shows the epochs it holds. A run killed before it redoes the epoch and rewrites them.
  attempt("the checkpoint", [&] { save_checkpoint(); });
}

void Session::retry_failed_saves() {
  if (failed_saves_.empty()) return;
  constexpr double kPause = 5;
  const auto deadline = Clock::now() + std::chrono::duration<double>(runtime_.save_retry_seconds);
  while (Clock::now() < deadline) {
    const double left = std::chrono::duration<double>(deadline - Clock::now()).count();
    out_ << "retrying the failed saves in " << std::lround(std::min(kPause, left)) << " s (until " << std::lround(left)
         << " s have passed)\n"
         << std::flush;
    std::this_thread::sleep_for(std::chrono::duration<double>(std::min(kPause, left)));
    save_files();
    if (failed_saves_.empty()) {
      out_ << "saved everything on retrying\n" << std::flush;
      return;
    }
  }
  std::string names;
  for (const std::string& name : failed_saves_) names += (names.empty() ? "" : ", ") + name;
  throw Error("could not save " + names + " in '" + dir_.string() +
              "' (reasons above); what is on disk is from the last successful save, and the rest of this run's "
              "state is lost when ember exits");
}

std::optional<std::string> Session::first_non_finite(const Tensor& loss) const {
  // One fused check of the loss and every gradient (ember::all_finite) first; the exact search
  // below runs only when something is not finite.
  const auto& params = named_params_;
  if (all_finite(loss_and_grads(loss)).item<bool>()) return std::nullopt;
  auto count = [](const Tensor& t) { return logical_not(isfinite(t)).sum().item<int64_t>(); };
  if (const int64_t bad = count(loss.detach()); bad > 0)
    return "the loss is " + std::string(std::isnan(loss.item<double>()) ? "NaN" : "infinite");
  for (const auto& [name, p] : params) {
    if (!p.grad().defined()) continue;
    if (const int64_t bad = count(p.grad()); bad > 0)
      return "the gradient of " + name + " has " + std::to_string(bad) + " non-finite values (of " +
             std::to_string(p.numel()) + ")";
  }
  return std::nullopt;  // not reached: all_finite found a value that is not finite
}

std::vector<Tensor> Session::loss_and_grads(const Tensor& loss) const {
  std::vector<Tensor> tensors;
  tensors.reserve(named_params_.size() + 1);
  tensors.push_back(loss.detach());
  for (const auto& [name, p] : named_params_) tensors.push_back(p.grad());
  return tensors;
}

Tensor Session::rerun_alone(const PendingStep& step) {
  std::optional<nn::NoSyncGuard> local;
  if (ddp_) local.emplace(*ddp_);
  const Tensor loss = batch_loss(*model_, step.batch, step.global_step);
  optimizer_->zero_grad();
  loss.backward();
  return loss;
}

std::string Session::find_nan_op(const PendingStep& step) {
  if (step.rng_before) set_rng_states(*step.rng_before);  // the same dropout masks as the failed step
  DetectAnomalyGuard anomaly;
  try {
    rerun_alone(step);
  } catch (const Error& e) {
    return e.what();
  }
  return "";
}

Tensor Session::batch_loss(nn::Module& model, const data::Batch& batch, int64_t global_step) {
  std::optional<amp::autocast> region;  // --amp: the forward pass and the loss in bfloat16
  if (config_.amp) region.emplace(device_.device.type(), kBFloat16);
  const Tensor loss = nn::functional::cross_entropy(model.forward(batch.data), batch.target);
  auto scale = runtime_.scale_loss_at_steps.find(global_step + 1);
  return scale == runtime_.scale_loss_at_steps.end() ? loss : loss * scale->second;
}

void Session::launch(PendingStep& step) {
  // Only when the model draws random numbers in its forward pass does the generators' state
  // before the step differ from after (reading the CPU's costs tens of microseconds).
  step.rng_before = uses_dropout_ ? std::optional<RngStates>(rng_states(/*step_only=*/true)) : std::nullopt;
  step.buffers_before = copy_buffers(*model_);
  step.optimizer_before = optimizer_->host_state();
  const Tensor loss = batch_loss(trained(), step.batch, step.global_step);
  optimizer_->zero_grad();
  loss.backward();
  step.loss = loss.detach();
  optimizer_->step(verdicts_->check(loss_and_grads(loss)));
  step.ticket = verdicts_->record();
}

void Session::settle(size_t keep) {
  while (pending_.size() > keep) {
    PendingStep& oldest = pending_.front();
    const bool skipped = verdicts_->read(oldest.ticket);
    oldest.ticket = -1;
    if (skipped) {
      handle_non_finite();
      return;
    }
    add_loss(oldest.loss, oldest.batch.target.size(0));
    pending_.pop_front();
  }
}

std::string Session::describe_non_finite(const PendingStep& step) {
  // Its gradients are overwritten by now: run it again.
  if (std::optional<std::string> what = first_non_finite(rerun_alone(step))) return *what;
  return ranks_ > 1 ? "another rank's loss or gradients are not finite"
                    : "the loss or a gradient was not finite (and was finite when the step was run again)";
}

void Session::handle_non_finite() {
  PendingStep bad = std::move(pending_.front());
  pending_.pop_front();
  // The trainer reads each verdict one step late, so at most one step was queued after it.
  std::optional<PendingStep> after;
  if (!pending_.empty()) {
    after = std::move(pending_.front());
    verdicts_->release(after->ticket);
    after->ticket = -1;
    pending_.clear();
  }
  // Since the step, the device changed no parameter and no optimizer state: put back what the
  // host changed, and the buffers and generators the forward passes moved on.
  optimizer_->restore_host_state(bad.optimizer_before);
  model_->load_state_dict(bad.buffers_before, /*strict=*/false);
  if (bad.rng_before) set_rng_states(*bad.rng_before);
  verdicts_->clear();
  const std::string what = describe_non_finite(bad);

  if (runtime_.nan_policy == NanPolicy::Skip) {
    // The state is now what skipping the step leaves; the step after it runs again from there.
    if (++epoch_skipped_ <= kReportedSkips) {
      progress_->message("step " + std::to_string(bad.step + 1) + " of epoch " + std::to_string(epoch_) + ": " + what +
                         "; step skipped (--nan-policy skip)" +
                         (epoch_skipped_ == kReportedSkips ? "; further skips this epoch are only counted" : ""));
    }
    redo_ = std::move(after);
    return;
  }

  progress_->finish_epoch();
  const std::string op = find_nan_op(bad);
  // The step changed nothing but gradients and (in training mode) buffers: put those back, and
  // save the state as it was before the batch.
  model_->load_state_dict(bad.buffers_before, /*strict=*/false);
  global_step_ = bad.global_step;
  epoch_seconds_before_ += std::chrono::duration<double>(Clock::now() - epoch_start_).count();
  gather_epoch_sums();
  failed_saves_.clear();
  if (!is_writer()) throw Error("stopped with the job at a non-finite step; rank 0 reports it");
  attempt("the checkpoint", [&] { save_checkpoint(bad.loader_before, bad.rng_before); });
  std::ostringstream message;
  message << "step " << bad.step + 1 << " of epoch " << epoch_ << " (step " << bad.global_step + 1
          << " of the run): " << what << ".";
  if (!op.empty()) message << "\nAnomaly detection, re-running the step: " << op;
  if (failed_saves_.empty()) {
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
  const int64_t params = count_parameters(*model_);
  out_ << "ember " << kVersion << (resumed ? " — resuming " : " — training ") << config_.model << " on "
       << data_dir(config_.data) << "\n"
       << "  device     " << device_.device << " (" << device_.why << ")";
  if (device_.device.is_cpu()) out_ << ", " << get_num_threads() << " threads";
  out_ << "\n"
       << "  model      " << config_.model << ", " << Progress::format_count(static_cast<double>(params))
       << " parameters\n"
       << "  data       " << Progress::format_count(static_cast<double>(train_set_->size())) << " training, "
       << Progress::format_count(static_cast<double>(test_set_->size())) << " test images\n"
       << "  recipe     " << config_.optimizer << " lr " << config_.lr;
  if (config_.optimizer == "sgd" && config_.momentum != 0) out_ << " momentum " << config_.momentum;
  out_ << ", " << config_.scheduler << " schedule, batch " << config_.batch_size << ", " << config_.epochs
       << " epochs, seed " << config_.seed << (config_.amp ? ", mixed precision (bfloat16)" : "")
       << (config_.deterministic ? ", deterministic algorithms" : "") << "\n"
       << "  run dir    " << dir_.string() << "\n";
  if (!curves_available())
    out_ << "  note       curves.png is not drawn: this ember was built without cairo (libcairo2-dev)\n";
  if (ranks_ > 1) {
    out_ << "  ranks      " << ranks_ << " (mpirun): each trains on its shard with batch " << config_.batch_size
         << ", so a step averages " << ranks_ * config_.batch_size << " samples; rank 0 logs and saves\n";
  }
  out_.flush();
}

void Session::finish_epoch(double train_seconds) {
  const int64_t epoch = static_cast<int64_t>(history_.size()) + 1;
  flush_loss();  // on a GPU, the losses summed there since the last progress line or save
  gather_epoch_sums();
  // Every rank evaluates rank 0's model: the running statistics (BatchNorm) each rank updated in
  // its last forward are replaced by rank 0's, the ones that get saved.
  if (ranks_ > 1) {
    NoGradGuard no_grad;
    for (const Tensor& buffer : model_->buffers()) distributed::broadcast(buffer, 0);
  }
  const EvalResult test = evaluate(*model_, test_set_, device_.device, config_.amp);
  EpochMetrics m;
  m.epoch = epoch;
  m.train_loss = epoch_samples_ > 0 ? epoch_loss_sum_ / static_cast<double>(epoch_samples_) : 0;
  m.test_loss = test.loss;
  m.test_accuracy = test.accuracy();
  m.train_seconds = train_seconds;
  m.samples_per_second = train_seconds > 0 ? static_cast<double>(epoch_samples_) / train_seconds : 0;
  m.lr = optimizer_->param_groups().front().lr();
  if (device_.device.is_cuda()) {
    m.peak_gpu_mib = static_cast<double>(cuda::max_memory_allocated(device_.device.index())) / (1 << 20);
  }
  m.skipped_steps = epoch_skipped_;
  history_.push_back(m);

  char line[256];
  std::snprintf(line, sizeof line,
                "epoch %lld/%lld  train_loss %.4f  test_loss %.4f  test_accuracy %.2f%%  (%.1f s, %s samples/s)",
                static_cast<long long>(epoch), static_cast<long long>(config_.epochs), m.train_loss, m.test_loss,
                100 * m.test_accuracy, train_seconds, Progress::format_count(m.samples_per_second).c_str());
  out_ << line << memory_note();
  if (m.skipped_steps > 0) out_ << "  " << m.skipped_steps << " steps skipped (non-finite)";
  const bool best = m.test_accuracy > best_accuracy_;
  if (best) {
    best_accuracy_ = m.test_accuracy;
    out_ << "  best so far";
  }
  out_ << "\n" << std::flush;
  if (best && is_writer()) {
    // A copy (training goes on changing the model), saved by save_files() and kept in memory
    // until a save succeeds.
    unsaved_best_ = nn::StateDict();
    for (const auto& [key, value] : model_->state_dict()) unsaved_best_.insert(key, value.clone());
  }

  if (scheduler_) scheduler_->step();
  epoch_loss_sum_ = 0;
  epoch_samples_ = 0;
  epoch_seconds_before_ = 0;
  epoch_skipped_ = 0;
  save_files();
}

TrainResult Session::run(const io::Checkpoint* checkpoint) {
  // --deterministic: for this run only, so that a program (or test) that trains twice gets its
  // own switches back.
  std::optional<DeterministicAlgorithmsGuard> deterministic_algorithms;
  std::optional<backends::cudnn::FlagsGuard> deterministic_cudnn;
  if (config_.deterministic) {
    deterministic_algorithms.emplace(true);
    deterministic_cudnn.emplace(backends::cudnn::Flags{.deterministic = true, .benchmark = false});
  }
  build();
  if (checkpoint) restore(*checkpoint);
  if (is_writer()) {
    std::filesystem::create_directories(dir_);
    io::write_file_atomically(dir_ / kConfigFile,
                              config_to_json(config_, device_.device.str(), count_parameters(*model_)));
    events_ = std::make_unique<io::SummaryWriter>(dir_);
  }
  InterruptHandler interrupt_handler(ranks_ > 1);
  std::unique_ptr<DetectAnomalyGuard> anomaly;
  if (runtime_.detect_anomaly) anomaly = std::make_unique<DetectAnomalyGuard>();
  print_banner(checkpoint != nullptr);

  TrainResult result;
  result.run_dir = dir_;
  Progress progress(out_, runtime_.progress);
  progress_ = &progress;
  int64_t steps_here = 0;
  const int64_t steps_per_epoch = device_batches_ ? device_batches_->batches_per_epoch() : loader_->batches_per_epoch();

  while (static_cast<int64_t>(history_.size()) < config_.epochs) {
    model_->train();
    const int64_t epoch = static_cast<int64_t>(history_.size()) + 1;
    const int64_t first_step = loader_state().position;
    progress.start_epoch(epoch, config_.epochs, steps_per_epoch, first_step);
    epoch_ = epoch;
    epoch_start_ = Clock::now();
    int64_t step = first_step;  // the epoch's steps so far, skipped ones included
    bool stop = false;
    while (true) {
      std::optional<PendingStep> next = std::exchange(redo_, std::nullopt);
      if (!next) {
        next.emplace();
        next->loader_before = loader_state();
        std::optional<data::Batch> batch = next_batch();
        if (!batch) {
          settle(0);  // the epoch's last step; one not finite may leave a step to run again
          if (redo_) continue;
          break;
        }
        next->batch = std::move(*batch);
        next->step = step++;
        next->global_step = global_step_++;
        ++steps_here;
      }
      pending_.push_back(std::move(*next));
      launch(pending_.back());
      // The step before this one: on a GPU it has finished, or nearly, and the device has this
      // one queued meanwhile, so reading its verdict does not leave the device idle.
      settle(1);
      bool interrupted = InterruptHandler::requested();
      if (ranks_ > 1) interrupted = any_rank({interrupted})[0];  // a Ctrl-C is one rank's
      const bool stopping = interrupted || (runtime_.stop_after_steps > 0 && steps_here >= runtime_.stop_after_steps);
      if (progress.due(step) || stopping) {
        settle(0);
        flush_loss();
        const double mean = epoch_samples_ > 0 ? epoch_loss_sum_ / static_cast<double>(epoch_samples_) : 0;
        progress.update(step, mean, epoch_samples_, memory_note());
      } else {
        progress.count(epoch_samples_);
      }
      if (stopping && !redo_) {
        stop = true;
        break;
      }
    }
    const double seconds = epoch_seconds_before_ + std::chrono::duration<double>(Clock::now() - epoch_start_).count();
    progress.finish_epoch();
    if (stop) {
      // Stopped on the epoch's last step, the loader stands at the epoch's end: a resumed run
      // then finds no batch left and finishes the epoch (evaluation, files) as usual.
      epoch_seconds_before_ = seconds;
      gather_epoch_sums();
      save_files();
      retry_failed_saves();
      out_ << "interrupted in epoch " << epoch << " after step " << step << "/" << steps_per_epoch
           << ": checkpoint saved to " << (dir_ / kCheckpointFile).string() << "\n"
           << "resume with: ember train --resume " << dir_.string() << "\n"
           << std::flush;
      result.interrupted = true;
      break;
    }
    finish_epoch(seconds);
    const bool more = static_cast<int64_t>(history_.size()) < config_.epochs;
    if (more && !failed_saves_.empty())
      out_ << "  training goes on with its state in memory; the next epoch's end saves again\n" << std::flush;
  }
  if (!result.interrupted) retry_failed_saves();
  result.epochs_completed = static_cast<int64_t>(history_.size());
  result.best_accuracy = std::max(best_accuracy_, 0.0);
  result.last_accuracy = history_.empty() ? 0 : history_.back().test_accuracy;
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
