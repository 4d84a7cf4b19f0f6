#include "train/run_saver.h"

#include <algorithm>
#include <chrono>
#include <cmath>
#include <sstream>
#include <thread>
#include <utility>

#include "ember/io/atomic_file.h"
#include "train/curves.h"
#include "train/job.h"
#include "train/run_files.h"

namespace ember::train {

namespace {

using Clock = std::chrono::steady_clock;

io::NamedTensors named(const nn::StateDict& state) {
  io::NamedTensors tensors;
  for (const auto& [key, value] : state) tensors.emplace_back(key, value);
  return tensors;
}

}  // namespace

RunSaver::RunSaver(const RunConfig& config, std::filesystem::path dir, std::ostream& out, TrainingSetup& setup,
                   EpochStats& stats)
    : config_(config), dir_(std::move(dir)), out_(out), setup_(setup), stats_(stats) {}

void RunSaver::start() {
  if (!is_writer()) return;
  std::filesystem::create_directories(dir_);
  io::write_file_atomically(dir_ / kConfigFile,
                            config_to_json(config_, setup_.device().str(), setup_.parameter_count()));
  events_ = std::make_unique<io::SummaryWriter>(dir_);
  epochs_logged_ = stats_.history().size();
}

void RunSaver::keep_best() {
  if (!is_writer()) return;
  unsaved_best_ = nn::StateDict();
  for (const auto& [key, value] : setup_.model().state_dict()) unsaved_best_.insert(key, value.clone());
}

bool RunSaver::attempt(const std::string& what, const std::function<void()>& save) {
  try {
    save();
    return true;
  } catch (const std::exception& e) {  // ember::Error, and std::filesystem's errors
    failed_saves_.push_back(what);
    out_ << "warning: could not save " << what << ": " << e.what() << "\n" << std::flush;
    return false;
  }
}

void RunSaver::save_files() {
  failed_saves_.clear();
  if (!is_writer()) return;
  if (!unsaved_best_.empty() &&
      attempt("the best weights", [&] { io::save_safetensors(dir_ / kModelFile, named(unsaved_best_)); })) {
    unsaved_best_ = nn::StateDict();
  }
  attempt("the TensorBoard events", [&] { write_events(); });
  attempt("metrics.csv", [&] { io::write_file_atomically(dir_ / "metrics.csv", metrics_csv(stats_.history())); });
  if (!stats_.history().empty() && curves_available()) attempt("curves.png", [&] { write_curves(); });
  // Last: the checkpoint is what --resume starts from, so once it is on disk every other file
  // already shows the epochs it holds. A run killed before it redoes the epoch and rewrites them.
  attempt("the checkpoint", [&] { save_checkpoint(); });
}

void RunSaver::write_events() {
  if (!events_) events_ = std::make_unique<io::SummaryWriter>(dir_);  // a new file after a failed one
  const std::vector<EpochMetrics>& history = stats_.history();
  try {
    for (; epochs_logged_ < history.size(); ++epochs_logged_) {
      const EpochMetrics& m = history[epochs_logged_];
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
}

void RunSaver::write_curves() {
  std::vector<EpochPoint> points;
  for (const EpochMetrics& h : stats_.history())
    points.push_back({h.epoch, h.train_loss, h.test_loss, 100 * h.test_accuracy});
  std::ostringstream title;
  title << "ember train: " << config_.model << ", " << config_.optimizer << " lr " << config_.lr << ", batch "
        << config_.batch_size;
  write_curves_png(dir_ / "curves.png", points, title.str());
}

void RunSaver::save_checkpoint(const std::optional<data::DataLoaderState>& loader,
                               const std::optional<RngStates>& rng) {
  io::Checkpoint checkpoint;
  setup_.write_to(checkpoint, loader, rng);
  stats_.write_to(checkpoint);
  io::save_checkpoint(dir_ / kCheckpointFile, checkpoint);
}

bool RunSaver::save_checkpoint_before(const data::DataLoaderState& loader, const std::optional<RngStates>& rng) {
  failed_saves_.clear();
  attempt("the checkpoint", [&] { save_checkpoint(loader, rng); });
  return failed_saves_.empty();
}

void RunSaver::retry_failed_saves(double seconds) {
  if (failed_saves_.empty()) return;
  constexpr double kPause = 5;
  const auto deadline = Clock::now() + std::chrono::duration<double>(seconds);
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

}  // namespace ember::train
