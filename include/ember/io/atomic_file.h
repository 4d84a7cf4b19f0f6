#pragma once
/// Files replaced atomically: readers (and a machine that loses power) see either the previous
/// contents or the new ones, never a mix or a truncated file. Every file ember saves — weights,
/// checkpoints, a run's metrics — goes through here.
#include <cstddef>
#include <filesystem>
#include <memory>
#include <string>
#include <string_view>

namespace ember::io {

/// Writes to a temporary file beside `path`; commit() flushes it to disk, renames it over `path`
/// and syncs the folder. Destroyed without commit() (an error, an exception elsewhere), it removes
/// the temporary file and leaves `path` as it was. Errors are ember::Error naming the file and the
/// reason, with what to do for a full disk, a read-only file system or a missing permission.
/// A process killed mid-save leaves its temporary file behind; the next save of the same path
/// removes the temporary files of processes that no longer run.
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
  [[noreturn]] void fail(const std::string& what, int err) const;

  struct ArmedFault;  // a fault injected for tests (EMBER_FAULT_INJECT, src/io/fault_injection.h)

  std::filesystem::path path_;
  std::string temp_path_;
  std::string context_;
  int fd_ = -1;
  bool committed_ = false;
  uint64_t written_ = 0;
  std::unique_ptr<ArmedFault> fault_;
};

/// Replaces `path` with `contents` atomically.
void write_file_atomically(const std::filesystem::path& path, std::string_view contents);

}  // namespace ember::io
