// Fuzzes io::load_safetensors_from_bytes. An accepted file must give well-formed tensors, and
// ember's writer must reproduce it: saving what was read and reading that back gives the same
// names, tensors and metadata, and a second save gives the very same bytes.
#include <algorithm>

#include "ember/io/safetensors.h"
#include "fuzz_common.h"

namespace ember::fuzz {
namespace {

void expect_same(const io::SafetensorsData& a, const io::SafetensorsData& b) {
  expect(a.metadata == b.metadata, "the metadata changed through a save and a load");
  expect(a.tensors.size() == b.tensors.size(), "the number of tensors changed through a save and a load");
  for (const auto& [name, tensor] : a.tensors) {
    expect(b.contains(name), "a tensor disappeared through a save and a load");
    expect(same_tensor(tensor, b.at(name)), "a tensor changed through a save and a load");
  }
}

}  // namespace

void safetensors_one_input(std::span<const uint8_t> bytes) {
  io::SafetensorsData data;
  try {
    data = io::load_safetensors_from_bytes(bytes, "fuzz input");
  } catch (const Error&) {
    return;  // rejected, as bad input should be
  }
  accepted("re-saving an accepted safetensors file", [&] {
    for (const auto& [name, tensor] : data.tensors) touch(tensor);
    const std::vector<uint8_t> saved = io::save_safetensors_to_bytes(data.tensors, data.metadata);
    const io::SafetensorsData again = io::load_safetensors_from_bytes(saved, "re-saved fuzz input");
    expect_same(data, again);
    const std::vector<uint8_t> saved_again = io::save_safetensors_to_bytes(again.tensors, again.metadata);
    expect(saved == saved_again, "saving the same tensors twice gave different bytes");
  });
}

}  // namespace ember::fuzz

EMBER_FUZZ_ENTRY(ember::fuzz::safetensors_one_input)
