#pragma once
// ZIP archives as torch.save and numpy.savez use them: a reader for hostile files and a writer
// of PyTorch's layout. Internal to ember (src/io).
//
// The reader takes what Python's zipfile and PyTorch's miniz read: entries stored or deflated,
// ZIP64 sizes and offsets, an archive comment. It checks everything against the file's size before
// it trusts a number: entry names, offsets and sizes come from the central directory, each local
// header must agree with it, and every entry's CRC-32 is verified as it is read. Encrypted,
// multi-disk and otherwise-compressed (bzip2, lzma, ...) archives are refused by name.
//
// The writer stores entries uncompressed, each record's data aligned to `alignment` bytes with an
// extra field as PyTorch's writer does (so a reader may map the tensors in place), and switches
// to ZIP64 records where sizes or offsets need them.
#include <cstdint>
#include <filesystem>
#include <functional>
#include <memory>
#include <span>
#include <string>
#include <string_view>
#include <unordered_set>
#include <vector>

namespace ember::io::internal {

class ByteSource;

struct ZipEntry {
  std::string name;
  uint64_t compressed_size = 0;
  uint64_t size = 0;  // uncompressed
  uint64_t local_header_offset = 0;
  uint32_t crc32 = 0;
  uint16_t method = 0;  // 0 stored, 8 deflated
};

class ZipReader {
 public:
  /// Opens `path` and reads its central directory. `context` starts every error message
  /// ("torch_load('model.pt')").
  static ZipReader open(const std::filesystem::path& path, std::string context);
  /// Reads an archive already in memory (the caller keeps `bytes` alive while reading).
  static ZipReader from_bytes(std::span<const uint8_t> bytes, std::string context);

  ZipReader(ZipReader&&) noexcept;
  ZipReader& operator=(ZipReader&&) noexcept;
  ~ZipReader();

  /// Whether the first bytes look like a ZIP archive at all (a local file header or an empty
  /// archive's end record), for callers that also accept other formats.
  static bool looks_like_zip(std::span<const uint8_t> first_bytes);

  const std::vector<ZipEntry>& entries() const { return entries_; }
  /// The entry called `name`, or nullptr.
  const ZipEntry* find(std::string_view name) const;
  /// Where `entry`'s data starts in the archive, after checking its local header (which repeats
  /// the name and has its own extra field) against the central directory and the file's size.
  uint64_t data_offset(const ZipEntry& entry) const;
  /// Uncompresses `entry` into dst (exactly entry.size bytes), checking its CRC-32.
  void read(const ZipEntry& entry, void* dst) const;
  /// The whole entry as bytes; refuses entries larger than `max_bytes` (for small records such as
  /// a pickle or a version string, whose size a hostile file could inflate).
  std::vector<uint8_t> read_bytes(const ZipEntry& entry, uint64_t max_bytes) const;
  const std::string& context() const;

 private:
  explicit ZipReader(std::unique_ptr<ByteSource> source);
  void read_central_directory();
  [[noreturn]] void fail_entry(const ZipEntry& entry, const std::string& what) const;

  std::unique_ptr<ByteSource> source_;
  std::vector<ZipEntry> entries_;
};

/// Streams an archive to a sink (a file being written atomically, or memory), entries in the
/// order added; nothing but the directory is buffered.
class ZipWriter {
 public:
  using Sink = std::function<void(const void* data, size_t size)>;
  /// Each entry's data starts at a multiple of `alignment` (a power of two, at most 4096; 1 for
  /// none), padded as PyTorch pads, with an extra field of id "FB".
  explicit ZipWriter(Sink sink, uint32_t alignment = 64);

  /// Appends an entry with these bytes (stored, not compressed) and returns their CRC-32. Names
  /// are unique, non-empty and at most 65535 bytes.
  uint32_t add(std::string_view name, std::span<const uint8_t> data);
  uint32_t add(std::string_view name, std::string_view data) {
    return add(name, std::span(reinterpret_cast<const uint8_t*>(data.data()), data.size()));
  }
  /// Writes the central directory; the archive is complete once this returns.
  void finish();

 private:
  void emit(const void* data, size_t size);

  Sink sink_;
  uint32_t alignment_;
  uint64_t offset_ = 0;
  std::vector<ZipEntry> entries_;
  std::unordered_set<std::string> names_;
  bool finished_ = false;
};

/// zlib's CRC-32 of `data`.
uint32_t crc32_of(std::span<const uint8_t> data);

}  // namespace ember::io::internal
