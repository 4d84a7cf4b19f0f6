#pragma once
// The JSON header of a safetensors file: the dtype names the format uses, and the reader of a
// hostile header, which builds only what the format needs and checks it completely (value types,
// names, and the layout of the data it describes) before anything is allocated for the tensors.
// Internal to ember (src/io); safetensors.cpp reads and writes the tensors.
#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "ember/dtype.h"
#include "ember/io/safetensors.h"

namespace ember::io::internal {

/// One of ember's ten dtypes with its safetensors name and its position in the reference's dtype
/// enum, which decides the order tensors are written in (largest first).
struct SafetensorsDtype {
  Dtype dtype;
  std::string_view name;
  int reference_rank;
};

const SafetensorsDtype& safetensors_dtype(Dtype dtype);

/// A tensor's entry in the header. The parser fills the fields as they arrive; every entry that
/// parse_safetensors_header() returns has all three.
struct SafetensorsEntry {
  std::string name;
  std::optional<Dtype> dtype;
  std::optional<std::vector<int64_t>> shape;
  std::optional<std::pair<uint64_t, uint64_t>> offsets;
};

struct SafetensorsHeader {
  std::vector<SafetensorsEntry> entries;  // in the header's order
  SafetensorsMetadata metadata;
};

/// Parses the header's JSON (the bytes after the 8-byte length), checking each value's type as it
/// arrives; memory stays proportional to the header whatever the JSON holds. Every problem is an
/// ember::Error whose message starts with `context`.
SafetensorsHeader parse_safetensors_header(std::string_view json, const std::string& context);

/// Checks the parsed entries against the data buffer of `data_size` bytes that follows the header:
/// no name twice, and, in offset order (which `entries` is sorted into), tensors that tile the
/// buffer exactly, each spanning the bytes its shape and dtype need.
void check_safetensors_entries(std::vector<SafetensorsEntry>& entries, uint64_t data_size, const std::string& context);

}  // namespace ember::io::internal
