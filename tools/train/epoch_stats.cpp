#include "train/epoch_stats.h"

#include <iomanip>
#include <sstream>
#include <string>

#include "train/job.h"

namespace ember::train {

namespace {

// Doubles as text that reads back to the same bits.
std::string exact(double value) {
  std::ostringstream s;
  s << std::setprecision(17) << value;
  return s.str();
}

}  // namespace

void EpochStats::restore(const io::Checkpoint& checkpoint) {
  auto extra = [&](const char* key) -> const std::string& {
    auto it = checkpoint.extra.find(key);
    if (it == checkpoint.extra.end()) throw Error(std::string("the checkpoint has no '") + key + "' entry");
    return it->second;
  };
  global_step_ = checkpoint.step;
  history_ = history_from_json(extra("history"));
  best_accuracy_ = std::stod(extra("best_accuracy"));
  // The job's sums of the epoch so far: kept by rank 0, added to the others' at the epoch's end.
  loss_sum_ = is_writer() ? std::stod(extra("epoch_loss_sum")) : 0;
  samples_ = is_writer() ? std::stoll(extra("epoch_samples")) : 0;
  seconds_before_ = std::stod(extra("epoch_seconds"));
  auto skipped = checkpoint.extra.find("epoch_skipped");  // absent before --nan-policy existed
  skipped_ = skipped == checkpoint.extra.end() ? 0 : std::stoll(skipped->second);
}

void EpochStats::write_to(io::Checkpoint& checkpoint) {
  flush_loss();
  checkpoint.step = global_step_;
  checkpoint.extra["history"] = history_to_json(history_);
  checkpoint.extra["best_accuracy"] = exact(best_accuracy_);
  checkpoint.extra["epoch_loss_sum"] = exact(loss_sum_);
  checkpoint.extra["epoch_samples"] = std::to_string(samples_);
  checkpoint.extra["epoch_seconds"] = exact(seconds_before_);
  checkpoint.extra["epoch_skipped"] = std::to_string(skipped_);
}

void EpochStats::add_loss(const Tensor& loss, int64_t samples) {
  samples_ += samples;
  if (device_.is_cpu()) {
    loss_sum_ += loss.item<double>() * static_cast<double>(samples);
    return;
  }
  // On a GPU, reading the loss would make the host wait for the step: sum it on the device (in
  // float64, as the host sum) and read it only when it is shown or saved.
  const Tensor weighted = loss.detach().to(kFloat64) * static_cast<double>(samples);
  pending_loss_ = pending_loss_.defined() ? pending_loss_ + weighted : weighted;
}

void EpochStats::flush_loss() {
  if (!pending_loss_.defined()) return;
  loss_sum_ += pending_loss_.item<double>();
  pending_loss_ = Tensor();
}

double EpochStats::mean_loss() const { return samples_ > 0 ? loss_sum_ / static_cast<double>(samples_) : 0; }

void EpochStats::gather_over_ranks(int64_t ranks) {
  if (ranks == 1) return;
  flush_loss();
  const std::vector<double> totals = sum_over_ranks({loss_sum_, static_cast<double>(samples_)});
  loss_sum_ = is_writer() ? totals[0] : 0;
  samples_ = is_writer() ? static_cast<int64_t>(totals[1]) : 0;
}

bool EpochStats::finish_epoch(const EvalResult& test, double train_seconds, double lr, double peak_gpu_mib) {
  EpochMetrics m;
  m.epoch = epochs_finished() + 1;
  m.train_loss = mean_loss();
  m.test_loss = test.loss;
  m.test_accuracy = test.accuracy();
  m.train_seconds = train_seconds;
  m.samples_per_second = train_seconds > 0 ? static_cast<double>(samples_) / train_seconds : 0;
  m.lr = lr;
  m.peak_gpu_mib = peak_gpu_mib;
  m.skipped_steps = skipped_;
  history_.push_back(m);
  const bool best = m.test_accuracy > best_accuracy_;
  if (best) best_accuracy_ = m.test_accuracy;
  loss_sum_ = 0;
  samples_ = 0;
  seconds_before_ = 0;
  skipped_ = 0;
  return best;
}

}  // namespace ember::train
