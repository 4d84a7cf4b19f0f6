#pragma once
// Ctrl-C during `ember train`: the first one asks the step loop to stop after the current step
// and save a checkpoint; the second ends the process at once (the handler resets itself).
//
// Under mpirun, Ctrl-C reaches mpirun, which sends SIGTERM to every rank: in a job, SIGTERM is
// handled the same way, so the ranks agree to stop (see the step loop) and rank 0 saves.
#include <signal.h>

namespace ember::train {

class InterruptHandler {
 public:
  /// Installs the handler for SIGINT, and for SIGTERM too when `in_job`; clears requested().
  explicit InterruptHandler(bool in_job);
  /// Puts the previous handlers back.
  ~InterruptHandler();
  InterruptHandler(const InterruptHandler&) = delete;
  InterruptHandler& operator=(const InterruptHandler&) = delete;

  /// Whether a Ctrl-C (or, in a job, a SIGTERM) arrived since the handler was installed.
  static bool requested();

 private:
  struct sigaction previous_int_ {};
  struct sigaction previous_term_ {};
  bool installed_int_ = false;
  bool installed_term_ = false;
};

}  // namespace ember::train
