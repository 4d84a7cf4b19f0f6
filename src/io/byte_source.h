#pragma once
// Where a reader's bytes come from — a file read piece by piece with pread, or memory — and the
// small helpers every reader of outside data shares. Internal to ember (src/io).
#include <cstdint>
#include <filesystem>
#include <memory>
#include <optional>
#include <span>
#include <string>
#include <string_view>
#include <vector>

#include "ember/dtype.h"

namespace ember::io::internal {

/// Names and tokens from a hostile file can be megabytes long or hold control characters;
/// messages show a bounded, printable, quoted form.
std::string quote_bounded(std::string_view s);

/// The bytes a tensor of this dtype and shape needs, or nullopt when that overflows 64 bits
/// (checked after every factor). An empty tensor's other dimensions still enter its strides, so
/// they must not overflow either.
std::optional<uint64_t> bytes_needed(Dtype dtype, const std::vector<int64_t>& shape);

/// strerror's text for an errno value.
std::string errno_text(int err);

class ByteSource {
 public:
  /// `context` starts every error message ("load_npy('x.npy')").
  explicit ByteSource(std::string context) : context_(std::move(context)) {}
  virtual ~ByteSource() = default;
  ByteSource(const ByteSource&) = delete;
  ByteSource& operator=(const ByteSource&) = delete;

  virtual uint64_t size() const = 0;
  /// Reads exactly n bytes at `offset`; the caller has checked that they lie within size().
  virtual void read(uint64_t offset, void* dst, size_t n) const = 0;
  const std::string& context() const { return context_; }

 private:
  std::string context_;
};

/// A regular file (a FIFO, a folder or a device is refused), opened for the source's lifetime.
class FileSource final : public ByteSource {
 public:
  FileSource(const std::filesystem::path& path, std::string context);
  ~FileSource() override;
  uint64_t size() const override { return size_; }
  void read(uint64_t offset, void* dst, size_t n) const override;

 private:
  int fd_ = -1;
  uint64_t size_ = 0;
};

/// The first (up to) n bytes of a file, for readers that tell formats apart by their magic before
/// they open the file for real; errors (missing, not a regular file) as FileSource's.
std::vector<uint8_t> read_head(const std::filesystem::path& path, size_t n, const std::string& context);

/// A whole file mapped copy-on-write (MAP_PRIVATE): its pages are read on first touch, and writes
/// go to private copies that never reach the file. Tensors over it keep it mapped (a shared_ptr
/// to it is their storage's owner).
class MappedFile {
 public:
  static std::shared_ptr<MappedFile> open(const std::filesystem::path& path, const std::string& context);
  ~MappedFile();
  MappedFile(const MappedFile&) = delete;
  MappedFile& operator=(const MappedFile&) = delete;
  uint8_t* data() const { return data_; }
  uint64_t size() const { return size_; }

 private:
  MappedFile(uint8_t* data, uint64_t size) : data_(data), size_(size) {}
  uint8_t* data_;
  uint64_t size_;
};

/// Bytes the caller keeps alive while the source is read.
class MemorySource final : public ByteSource {
 public:
  MemorySource(std::span<const uint8_t> bytes, std::string context) : ByteSource(std::move(context)), bytes_(bytes) {}
  uint64_t size() const override { return bytes_.size(); }
  void read(uint64_t offset, void* dst, size_t n) const override;

 private:
  std::span<const uint8_t> bytes_;
};

}  // namespace ember::io::internal
