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
  /// After each step: `step` steps of the epoch are done, `loss` is the running mean loss.
  void update(int64_t step, double loss, int64_t samples_done);
  /// Clears the bar so that the epoch's summary line starts on a clean line.
  void finish_epoch();

  /// "1:05", "12:03:09".
  static std::string format_duration(double seconds);
  /// "12,345".
  static std::string format_count(double value);

 private:
  std::string status_text(int64_t step, double loss) const;

  std::ostream& out_;
  ProgressStyle style_;
  int64_t epoch_ = 0, epochs_ = 0, steps_ = 0, first_step_ = 0, samples_ = 0;
  std::chrono::steady_clock::time_point epoch_start_, last_draw_;
  bool drawn_ = false;
};

}  // namespace ember::train
