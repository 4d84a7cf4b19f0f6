#pragma once
// The progress display of `ember train`: a bar redrawn in place on a terminal, or a plain line
// every few seconds when the output is a file or a pipe (CI logs, `| tee`).
#include <chrono>
#include <cstdint>
#include <ostream>
#include <string>

#include "train/trainer.h"

namespace ember::train {

class Progress {
 public:
  /// `style` Auto becomes Bar or Lines depending on whether standard output is a terminal.
  Progress(std::ostream& out, ProgressStyle style);

  void start_epoch(int64_t epoch, int64_t epochs, int64_t steps, int64_t first_step);
  /// Whether update() would draw after `step` steps. Reading the loss of a GPU step makes the
  /// host wait for the device, so the trainer reads it only when this says it will be shown.
  bool due(int64_t step) const;
  /// After a step whose loss is shown: `step` steps of the epoch are done, `loss` is the running
  /// mean loss, `note` is appended to the line (the GPU's peak memory).
  void update(int64_t step, double loss, int64_t samples_done, const std::string& note = "");
  /// After a step whose loss is not read: keeps the sample count for the rate.
  void count(int64_t samples_done) { samples_ = samples_done; }
  /// Clears the bar so that the epoch's summary line starts on a clean line.
  void finish_epoch();
  /// Prints `line` on a line of its own; a bar is redrawn below it at the next update.
  void message(const std::string& line);

  /// "1:05", "12:03:09".
  static std::string format_duration(double seconds);
  /// "12,345".
  static std::string format_count(double value);

 private:
  std::string status_text(int64_t step, double loss, const std::string& note) const;

  std::ostream& out_;
  ProgressStyle style_;
  int64_t epoch_ = 0, epochs_ = 0, steps_ = 0, first_step_ = 0, samples_ = 0;
  std::chrono::steady_clock::time_point epoch_start_, last_draw_;
  bool drawn_ = false;
};

}  // namespace ember::train
