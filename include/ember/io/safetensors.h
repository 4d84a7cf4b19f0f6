#pragma once
/// Reading and writing the safetensors format (https://github.com/huggingface/safetensors):
/// 8 bytes of little-endian header length N, N bytes of JSON describing each tensor (dtype, shape,
/// data_offsets) plus an optional "__metadata__" object of strings, then the tensors' bytes.
///
/// Writing follows the reference implementation byte for byte: tensors are laid out by dtype
/// (widest first, in the reference's dtype order) then by name, the JSON is compact and padded with
/// spaces to a multiple of 8, so `safetensors.torch.save_file` and ember produce the same file for
/// the same tensors (with at most one metadata entry; with more, ember sorts the keys and the
/// reference uses hash order). Files are written atomically: a temporary file in the same folder,
/// fsync, rename over the destination, fsync of the folder; a failed or interrupted save leaves
/// any earlier file at that path as it was.
///
/// Reading accepts what the reference reader accepts, except duplicate keys (which the reference
/// silently resolves), dtypes ember lacks (U16, U32, U64, F8_*, F4, F6_*, C64) and empty tensors
/// whose other dimensions overflow 64-bit strides. It treats every file as hostile: each malformed
/// file gives an ember::Error naming the file and the problem, and nothing is allocated for tensors
/// before the header has been checked against the file's size.
#include <cstdint>
#include <filesystem>
#include <map>
#include <span>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "ember/tensor.h"

namespace ember::io {

/// Tensors with their names, in a chosen order.
using NamedTensors = std::vector<std::pair<std::string, Tensor>>;
/// The free-form "__metadata__" of a safetensors file.
using SafetensorsMetadata = std::map<std::string, std::string>;

/// What a safetensors file holds. Tensors are contiguous CPU tensors in the order their data
/// appears in the file (for files written by ember or the reference: dtype, then name).
struct SafetensorsData {
  NamedTensors tensors;
  SafetensorsMetadata metadata;

  bool contains(std::string_view name) const;
  /// The tensor called `name`; throws ember::Error when there is none.
  const Tensor& at(std::string_view name) const;
  std::vector<std::string> names() const;
};

/// The largest header either side accepts (the reference reader's limit).
inline constexpr uint64_t kSafetensorsMaxHeaderBytes = 100'000'000;

/// Writes `tensors` (any device, any layout; stored contiguous, little-endian) to `path`
/// atomically. Names must be unique, valid UTF-8 and not "__metadata__". Errors (bad input, no
/// space, unwritable folder) are ember::Error naming the path and the reason.
void save_safetensors(const std::filesystem::path& path, const NamedTensors& tensors,
                      const SafetensorsMetadata& metadata = {});
void save_safetensors(const std::filesystem::path& path, const std::map<std::string, Tensor>& tensors,
                      const SafetensorsMetadata& metadata = {});

/// The bytes save_safetensors would write.
std::vector<uint8_t> save_safetensors_to_bytes(const NamedTensors& tensors, const SafetensorsMetadata& metadata = {});
std::vector<uint8_t> save_safetensors_to_bytes(const std::map<std::string, Tensor>& tensors,
                                               const SafetensorsMetadata& metadata = {});

struct SafetensorsLoadOptions {
  /// Maps the file instead of reading it (safetensors' zero-copy load): each tensor reads its
  /// pages of the file on first use, processes that map one file share its page cache, and writes
  /// to a tensor go to private copies that never reach the file. Bool tensors (whose bytes must be
  /// checked) and tensors misaligned for their dtype are read as without it.
  bool mmap = false;
};

/// Reads a safetensors file into CPU tensors.
SafetensorsData load_safetensors(const std::filesystem::path& path, const SafetensorsLoadOptions& options = {});

/// Reads safetensors bytes already in memory; `source` names them in error messages.
SafetensorsData load_safetensors_from_bytes(std::span<const uint8_t> bytes, std::string_view source = "<memory>");
SafetensorsData load_safetensors_from_bytes(std::string_view bytes, std::string_view source = "<memory>");

}  // namespace ember::io
