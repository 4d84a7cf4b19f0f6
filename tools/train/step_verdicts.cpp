#include "train/step_verdicts.h"

#include <string>

#include "ember/ember.h"

namespace ember::train {

StepVerdicts::StepVerdicts(Device device, bool all_ranks)
    : all_ranks_(all_ranks), flag_(zeros({}, TensorOptions().dtype(kBool).device(device))) {
  device_ = flag_.device();  // with its index: "cuda" is the current GPU
  if (device_.is_cuda()) {
    // An event belongs to the GPU current when it is made: make them on the training GPU.
    const int previous = cuda::current_device();
    cuda::set_device(device_.index());
    try {
      for (Slot& slot : slots_) slot.copied.emplace();
    } catch (...) {
      cuda::set_device(previous);
      throw;
    }
    cuda::set_device(previous);
  }
  for (Slot& slot : slots_) {
    slot.host = empty({}, TensorOptions().dtype(kBool));
    // Pinned, so that the copy from the GPU is queued rather than waited for; allocated once,
    // since pinning memory is slow and may itself wait for the GPU.
    if (device_.is_cuda()) slot.host = slot.host.pin_memory();
  }
}

Tensor StepVerdicts::check(std::span<const Tensor> loss_and_grads) {
  flag_ = logical_or(flag_, logical_not(all_finite(loss_and_grads)));
  if (all_ranks_) distributed::all_reduce(flag_, distributed::ReduceOp::Max);
  return flag_;
}

int StepVerdicts::record() {
  for (int ticket = 0; ticket < kSlots; ++ticket) {
    Slot& slot = slots_[ticket];
    if (slot.in_use) continue;
    slot.in_use = true;
    if (slot.copied) {
      slot.host.copy_(flag_, /*non_blocking=*/true);
      slot.copied->record(device_.index());
    } else {
      slot.host.copy_(flag_);
    }
    return ticket;
  }
  throw Error("StepVerdicts: more than " + std::to_string(kSlots) + " steps await their verdict");
}

bool StepVerdicts::read(int ticket) {
  if (ticket < 0 || ticket >= kSlots || !slots_[ticket].in_use)
    throw Error("StepVerdicts: no verdict is recorded under ticket " + std::to_string(ticket));
  Slot& slot = slots_[ticket];
  if (slot.copied) slot.copied->synchronize();
  slot.in_use = false;
  return slot.host.item<bool>();
}

void StepVerdicts::release(int ticket) {
  if (ticket >= 0 && ticket < kSlots) slots_[ticket].in_use = false;
}

void StepVerdicts::clear() { flag_.fill_(false); }

}  // namespace ember::train
