#include "train/progress.h"

#include <unistd.h>

#include <cmath>
#include <cstdio>

namespace ember::train {

namespace {

using Clock = std::chrono::steady_clock;

// A bar redraw costs a write(); ten a second is smooth without slowing a fast epoch down.
constexpr auto kBarInterval = std::chrono::milliseconds(100);
// Plain lines are for logs: one every few seconds keeps them readable.
constexpr auto kLineInterval = std::chrono::seconds(5);
constexpr int kBarWidth = 24;

double seconds_between(Clock::time_point a, Clock::time_point b) {
  return std::chrono::duration<double>(b - a).count();
}

}  // namespace

Progress::Progress(std::ostream& out, ProgressStyle style) : out_(out), style_(style) {
  if (style_ == ProgressStyle::Auto) style_ = ::isatty(STDOUT_FILENO) ? ProgressStyle::Bar : ProgressStyle::Lines;
}

std::string Progress::format_duration(double seconds) {
  if (!std::isfinite(seconds) || seconds < 0) return "?";
  const auto total = static_cast<int64_t>(std::llround(seconds));
  char text[32];
  if (total >= 3600) {
    std::snprintf(text, sizeof text, "%lld:%02lld:%02lld", static_cast<long long>(total / 3600),
                  static_cast<long long>(total / 60 % 60), static_cast<long long>(total % 60));
  } else {
    std::snprintf(text, sizeof text, "%lld:%02lld", static_cast<long long>(total / 60),
                  static_cast<long long>(total % 60));
  }
  return text;
}

std::string Progress::format_count(double value) {
  std::string digits = std::to_string(static_cast<int64_t>(std::llround(value)));
  std::string out;
  const size_t start = digits[0] == '-' ? 1 : 0;
  for (size_t i = 0; i < digits.size(); ++i) {
    if (i > start && (digits.size() - i) % 3 == 0) out += ',';
    out += digits[i];
  }
  return out;
}

void Progress::start_epoch(int64_t epoch, int64_t epochs, int64_t steps, int64_t first_step) {
  epoch_ = epoch;
  epochs_ = epochs;
  steps_ = steps;
  first_step_ = first_step;
  samples_ = 0;
  epoch_start_ = last_draw_ = Clock::now();
  drawn_ = false;
}

std::string Progress::status_text(int64_t step, double loss, const std::string& note) const {
  const double elapsed = seconds_between(epoch_start_, Clock::now());
  const double rate = elapsed > 0 ? static_cast<double>(samples_) / elapsed : 0;
  const int64_t done_here = step - first_step_;
  const double eta =
      done_here > 0 ? elapsed / static_cast<double>(done_here) * static_cast<double>(steps_ - step) : NAN;
  char text[160];
  std::snprintf(text, sizeof text, "step %lld/%lld  loss %.4f  %s samples/s  ETA %s", static_cast<long long>(step),
                static_cast<long long>(steps_), loss, format_count(rate).c_str(), format_duration(eta).c_str());
  return text + note;
}

bool Progress::due(int64_t step) const {
  const auto since = Clock::now() - last_draw_;
  switch (style_) {
    case ProgressStyle::Bar:
      return step == steps_ || since >= kBarInterval;
    case ProgressStyle::Lines:
      return since >= kLineInterval;
    default:
      return false;
  }
}

void Progress::update(int64_t step, double loss, int64_t samples_done, const std::string& note) {
  samples_ = samples_done;
  if (style_ == ProgressStyle::Quiet) return;
  const auto now = Clock::now();
  const bool last = step == steps_;
  if (style_ == ProgressStyle::Bar) {
    if (!last && now - last_draw_ < kBarInterval) return;
    const int filled = steps_ > 0 ? static_cast<int>(kBarWidth * step / steps_) : kBarWidth;
    std::string bar(static_cast<size_t>(filled), '#');
    bar.resize(kBarWidth, '.');
    // \r returns to the line start; \x1b[K clears what a longer previous line left.
    out_ << "\r\x1b[Kepoch " << epoch_ << "/" << epochs_ << " [" << bar << "] " << status_text(step, loss, note)
         << std::flush;
    drawn_ = true;
  } else {
    if (now - last_draw_ < kLineInterval) return;
    out_ << "epoch " << epoch_ << "/" << epochs_ << "  " << status_text(step, loss, note) << "\n" << std::flush;
  }
  last_draw_ = now;
}

void Progress::finish_epoch() {
  if (drawn_) out_ << "\r\x1b[K" << std::flush;
  drawn_ = false;
}

void Progress::message(const std::string& line) {
  finish_epoch();
  out_ << line << "\n" << std::flush;
}

}  // namespace ember::train
