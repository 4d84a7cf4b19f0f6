// Fuzzes io::load_checkpoint_from_bytes: a safetensors file whose metadata must also describe an
// ember checkpoint. An accepted checkpoint must hold well-formed tensors.
#include "ember/io/checkpoint.h"
#include "fuzz_common.h"

namespace ember::fuzz {

void checkpoint_one_input(std::span<const uint8_t> bytes) {
  io::Checkpoint checkpoint;
  try {
    checkpoint = io::load_checkpoint_from_bytes(bytes, "fuzz input");
  } catch (const Error&) {
    return;
  }
  accepted("reading the tensors of an accepted checkpoint", [&] {
    for (const auto& [key, tensor] : checkpoint.model) touch(tensor);
    for (const auto& [key, tensor] : checkpoint.optimizer.tensors) touch(tensor);
    if (checkpoint.rng.defined()) touch(checkpoint.rng);
  });
}

}  // namespace ember::fuzz

EMBER_FUZZ_ENTRY(ember::fuzz::checkpoint_one_input)
