#pragma once
// Whether each training step was finite, decided on the training device and read by the host a
// step late, so that checking every step does not make the host wait for the GPU.
//
// A step folds "its loss and every gradient are finite" (ember::all_finite) into a sticky flag on
// the device and hands the flag to Optimizer::step(skip): the update kernels read it, so a step
// that is not finite changes no parameter. The flag stays set, so every step queued after it is
// skipped as well, until the host has read it and cleared it (clear()). The host can then rebuild
// exactly the state an immediate check would have left (see StepRunner, step_runner.h).
//
// record() queues a copy of the flag to pinned host memory behind an event; read() waits for that
// event only. The trainer reads step k's copy after queueing step k + 1, by which time step k is
// finished or nearly, while the GPU has step k + 1 to work on.
#include <array>
#include <optional>
#include <span>

#include "ember/cuda.h"
#include "ember/tensor.h"

namespace ember::train {

class StepVerdicts {
 public:
  /// `all_ranks`: in a job of several ranks the flag is or-ed over the ranks on the device, so
  /// that every rank skips the same steps.
  StepVerdicts(Device device, bool all_ranks);

  /// Folds this step's loss and gradients into the flag; returns the flag, for
  /// Optimizer::step(skip). Queues work only: nothing is read back.
  Tensor check(std::span<const Tensor> loss_and_grads);
  /// Queues a copy of the flag as it stands now, and returns the ticket to read it by. At most
  /// kSlots copies are outstanding.
  int record();
  /// Whether the flag was set when `ticket` was recorded (waiting for that point of the device's
  /// work only); releases the ticket.
  bool read(int ticket);
  /// Releases a ticket without reading it.
  void release(int ticket);
  /// Clears the flag, once the host has dealt with the step that set it.
  void clear();

  static constexpr int kSlots = 2;

 private:
  bool all_ranks_;
  Tensor flag_;                     // 0-dim bool: some step since the last clear() was not finite
  Device device_{DeviceType::CPU};  // flag_'s, with its index
  struct Slot {
    Tensor host;                        // 0-dim bool; pinned when device_ is a GPU
    std::optional<cuda::Event> copied;  // GPU only: recorded after the copy into `host`
    bool in_use = false;
  };
  std::array<Slot, kSlots> slots_;
};

}  // namespace ember::train
