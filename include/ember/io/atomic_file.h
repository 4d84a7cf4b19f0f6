#pragma once
/// Files replaced atomically: readers (and a machine that loses power) see either the previous
/// contents or the new ones, never a mix or a truncated file. Every file ember saves — weights,
/// checkpoints, a run's metrics — goes through here.
#include <cstddef>
#include <filesystem>
#include <string>
#include <string_view>

namespace ember::io {

/// Writes to a temporary file beside `path`; commit() flushes it to disk, renames it over `path`
/// and syncs the folder. Destroyed without commit() (an error, an exception elsewhere), it removes
/// the temporary file and leaves `path` as it was. Errors are ember::Error naming the file.
class AtomicFileWriter {
 public:
  /// `context` starts every error message ("save_safetensors('w.safetensors')").
  AtomicFileWriter(std::filesystem::path path, std::string context);
  ~AtomicFileWriter();
  AtomicFileWriter(const AtomicFileWriter&) = delete;
  AtomicFileWriter& operator=(const AtomicFileWriter&) = delete;

  void write(const void* data, size_t size);
  void write(std::string_view text) { write(text.data(), text.size()); }
  void commit();

 private:
  std::filesystem::path path_;
  std::string temp_path_;
  std::string context_;
  int fd_ = -1;
  bool committed_ = false;
};

/// Replaces `path` with `contents` atomically.
void write_file_atomically(const std::filesystem::path& path, std::string_view contents);

}  // namespace ember::io
