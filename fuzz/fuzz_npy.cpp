// Fuzzes io::load_npy_from_bytes and, for inputs that start like a ZIP archive, io::load_npz_from_bytes
// (numpy.load's own choice by the first bytes). An accepted file must give well-formed tensors, and
// ember's writer must reproduce them: saving what was read and reading that back gives the same
// tensors (and names), and a second save gives the very same bytes.
#include <cstdint>
#include <span>
#include <vector>

#include "ember/io/numpy.h"
#include "fuzz_common.h"

namespace ember::fuzz {

namespace {

bool looks_like_zip(std::span<const uint8_t> bytes) { return bytes.size() >= 2 && bytes[0] == 'P' && bytes[1] == 'K'; }

void check_npy(std::span<const uint8_t> bytes) {
  Tensor t;
  try {
    t = io::load_npy_from_bytes(bytes, "fuzz input");
  } catch (const Error&) {
    return;  // rejected, as bad input should be
  }
  accepted("re-saving an accepted .npy file", [&] {
    touch(t);
    const std::vector<uint8_t> saved = io::save_npy_to_bytes(t);
    const Tensor again = io::load_npy_from_bytes(saved, "re-saved fuzz input");
    expect(same_tensor(t, again), "a tensor changed through a save and a load");
    expect(saved == io::save_npy_to_bytes(again), "saving the same tensor twice gave different bytes");
  });
}

void check_npz(std::span<const uint8_t> bytes) {
  io::NamedTensors arrays;
  try {
    arrays = io::load_npz_from_bytes(bytes, "fuzz input");
  } catch (const Error&) {
    return;
  }
  accepted("re-saving an accepted .npz archive", [&] {
    for (const auto& [name, t] : arrays) touch(t);
    const std::vector<uint8_t> saved = io::save_npz_to_bytes(arrays);
    const io::NamedTensors again = io::load_npz_from_bytes(saved, "re-saved fuzz input");
    expect(again.size() == arrays.size(), "the number of arrays changed through a save and a load");
    for (size_t i = 0; i < arrays.size() && i < again.size(); ++i) {
      expect(again[i].first == arrays[i].first, "an array's name changed through a save and a load");
      expect(same_tensor(arrays[i].second, again[i].second), "an array changed through a save and a load");
    }
    expect(saved == io::save_npz_to_bytes(again), "saving the same arrays twice gave different bytes");
  });
}

}  // namespace

void npy_one_input(std::span<const uint8_t> bytes) {
  if (looks_like_zip(bytes))
    check_npz(bytes);
  else
    check_npy(bytes);
}

}  // namespace ember::fuzz

EMBER_FUZZ_ENTRY(ember::fuzz::npy_one_input)
