// Reads IDX files (MNIST's format), plain or gzip-compressed. Nothing in a header is trusted
// until the file's size backs it up: a header can claim any size, and memory is allocated only
// for what the bytes on disk can actually hold.
#include <sys/stat.h>
// The compressed bytes are read-only (they may be the caller's); zlib promises not to write them.
#define ZLIB_CONST
#include <zlib.h>

#include <algorithm>
#include <cerrno>
#include <climits>
#include <cstdio>
#include <cstring>
#include <limits>
#include <memory>
#include <span>
#include <string>
#include <string_view>
#include <vector>

#include "core/check.h"
#include "ember/data/mnist.h"
#include "ember/factories.h"

namespace ember::data {
namespace {

using detail::fail;

constexpr uint8_t kUnsignedByteType = 0x08;
// Deflate cannot expand data more than about 1032:1 (a 258-byte match costs at least two bits),
// so a gzip file of n bytes holds at most ~1032·n bytes; the margin covers headers and rounding.
constexpr uint64_t kMaxDeflateRatio = 1032;
constexpr uint64_t kDeflateBoundMargin = 1 << 16;
// A gzip file's header may still lie within the deflate bound (an adversarial file can expand a
// lot), so the payload buffer starts at most this big and grows only as data really arrives.
constexpr uint64_t kFirstGzipChunk = uint64_t{64} << 20;

struct FileCloser {
  void operator()(std::FILE* f) const { std::fclose(f); }
};
using File = std::unique_ptr<std::FILE, FileCloser>;

std::string hex_byte(uint8_t b) {
  char text[8];
  std::snprintf(text, sizeof text, "0x%02x", b);
  return text;
}

// The element types the IDX format defines, for a helpful message about those ember skips.
const char* idx_type_name(uint8_t code) {
  switch (code) {
    case 0x08:
      return "unsigned byte";
    case 0x09:
      return "signed byte";
    case 0x0B:
      return "int16";
    case 0x0C:
      return "int32";
    case 0x0D:
      return "float32";
    case 0x0E:
      return "float64";
    default:
      return nullptr;
  }
}

/// The bytes of an IDX file after any decompression, read front to back. `path_` names the file
/// (or the bytes in memory) in messages.
class ByteSource {
 public:
  explicit ByteSource(std::string path) : path_(std::move(path)) {}
  virtual ~ByteSource() = default;
  /// Reads up to n bytes; returns fewer only at the end of the data.
  virtual size_t read(uint8_t* dst, size_t n) = 0;
  /// An upper bound on the bytes still to come.
  virtual uint64_t max_remaining() const = 0;
  /// True when max_remaining() is exact, not merely a bound.
  virtual bool knows_exact_size() const = 0;
  /// Reads and counts the bytes still to come.
  virtual uint64_t count_remaining() = 0;

 protected:
  std::string path_;
};

class PlainSource final : public ByteSource {
 public:
  PlainSource(std::string path, File file, uint64_t file_size)
      : ByteSource(std::move(path)), file_(std::move(file)), file_size_(file_size) {}

  size_t read(uint8_t* dst, size_t n) override {
    size_t got = std::fread(dst, 1, n, file_.get());
    if (got < n && std::ferror(file_.get())) fail(path_, ": read error: ", std::strerror(errno));
    consumed_ += got;
    return got;
  }
  uint64_t max_remaining() const override { return file_size_ > consumed_ ? file_size_ - consumed_ : 0; }
  bool knows_exact_size() const override { return true; }
  uint64_t count_remaining() override { return max_remaining(); }

 private:
  File file_;
  uint64_t file_size_;
  uint64_t consumed_ = 0;
};

/// Plain IDX bytes held in memory.
class MemorySource final : public ByteSource {
 public:
  MemorySource(std::string name, std::span<const uint8_t> bytes) : ByteSource(std::move(name)), bytes_(bytes) {}

  size_t read(uint8_t* dst, size_t n) override {
    const size_t got = std::min<uint64_t>(n, max_remaining());
    if (got) std::memcpy(dst, bytes_.data() + consumed_, got);
    consumed_ += got;
    return got;
  }
  uint64_t max_remaining() const override { return bytes_.size() - consumed_; }
  bool knows_exact_size() const override { return true; }
  uint64_t count_remaining() override { return max_remaining(); }

 private:
  std::span<const uint8_t> bytes_;
  size_t consumed_ = 0;
};

/// Inflates a whole gzip file held in memory. Concatenated gzip members are one stream, as for
/// gunzip; zero padding after the last member is skipped (as Python's gzip does); anything else
/// after it is an error rather than silently ignored.
class GzipSource final : public ByteSource {
 public:
  /// Inflates `compressed`, which must outlive the source.
  GzipSource(std::string path, std::span<const uint8_t> compressed) : ByteSource(std::move(path)) {
    EMBER_CHECK(compressed.size() <= UINT_MAX, path_, ": gzip files over 4 GiB are not supported");
    stream_.next_in = compressed.data();
    stream_.avail_in = static_cast<uInt>(compressed.size());
    // 16 + MAX_WBITS: expect a gzip wrapper (not raw deflate or zlib's own format).
    if (inflateInit2(&stream_, 16 + MAX_WBITS) != Z_OK) fail(path_, ": zlib could not start inflating");
  }
  ~GzipSource() override { inflateEnd(&stream_); }
  GzipSource(const GzipSource&) = delete;
  GzipSource& operator=(const GzipSource&) = delete;

  size_t read(uint8_t* dst, size_t n) override {
    size_t got = 0;
    while (got < n) {
      if (member_ended_ && !start_next_member()) break;
      const uInt chunk = static_cast<uInt>(std::min<size_t>(n - got, UINT_MAX));
      stream_.next_out = dst + got;
      stream_.avail_out = chunk;
      const int rc = inflate(&stream_, Z_NO_FLUSH);
      got += chunk - stream_.avail_out;
      if (rc == Z_STREAM_END) {
        member_ended_ = true;
      } else if (rc == Z_BUF_ERROR || (rc == Z_OK && stream_.avail_in == 0 && stream_.avail_out > 0)) {
        // No input left and the member is not finished: the file was cut short.
        fail(path_, ": truncated gzip data: the file ends inside a compressed stream (after ",
             stream_.total_out + decompressed_before_member_, " decompressed bytes)");
      } else if (rc == Z_DATA_ERROR) {
        fail(path_, ": corrupt gzip data: ", stream_.msg ? stream_.msg : "invalid deflate stream");
      } else if (rc == Z_MEM_ERROR) {
        throw OutOfMemoryError(detail::concat(path_, ": out of memory while inflating"));
      } else if (rc != Z_OK) {
        fail(path_, ": zlib error ", rc, " while inflating");
      }
    }
    return got;
  }
  uint64_t max_remaining() const override {
    return static_cast<uint64_t>(stream_.avail_in) * kMaxDeflateRatio + kDeflateBoundMargin;
  }
  bool knows_exact_size() const override { return false; }
  uint64_t count_remaining() override {
    std::vector<uint8_t> scratch(1 << 16);
    uint64_t total = 0;
    while (size_t got = read(scratch.data(), scratch.size())) total += got;
    return total;
  }

 private:
  // After a member's end: false at the end of the file, true when another member follows.
  bool start_next_member() {
    while (stream_.avail_in > 0 && *stream_.next_in == 0) {
      ++stream_.next_in;
      --stream_.avail_in;
    }
    if (stream_.avail_in == 0) return false;
    if (stream_.avail_in < 2 || stream_.next_in[0] != 0x1f || stream_.next_in[1] != 0x8b) {
      fail(path_, ": trailing garbage: ", stream_.avail_in, " byte", stream_.avail_in == 1 ? "" : "s",
           " after the end of the gzip data", stream_.avail_in == 1 ? " is" : " are", " not gzip");
    }
    decompressed_before_member_ += stream_.total_out;
    inflateReset(&stream_);
    member_ended_ = false;
    return true;
  }

  z_stream stream_{};
  bool member_ended_ = false;
  uint64_t decompressed_before_member_ = 0;
};

/// A gzip file read whole into memory, with the buffer it inflates from.
class FileGzipSource final : public ByteSource {
 public:
  FileGzipSource(std::string path, std::vector<uint8_t> compressed)
      : ByteSource(path), compressed_(std::move(compressed)), gzip_(std::move(path), compressed_) {}
  size_t read(uint8_t* dst, size_t n) override { return gzip_.read(dst, n); }
  uint64_t max_remaining() const override { return gzip_.max_remaining(); }
  bool knows_exact_size() const override { return false; }
  uint64_t count_remaining() override { return gzip_.count_remaining(); }

 private:
  std::vector<uint8_t> compressed_;  // declared before gzip_, which reads it
  GzipSource gzip_;
};

bool is_gzip(std::span<const uint8_t> first_bytes) {
  return first_bytes.size() >= 2 && first_bytes[0] == 0x1f && first_bytes[1] == 0x8b;
}

std::unique_ptr<ByteSource> open_source(const std::string& path) {
  File file(std::fopen(path.c_str(), "rb"));
  if (!file) fail(path, ": cannot open: ", std::strerror(errno));
  struct stat info {};
  if (fstat(fileno(file.get()), &info) != 0) fail(path, ": cannot stat: ", std::strerror(errno));
  if (S_ISDIR(info.st_mode)) fail(path, ": is a directory, not an IDX file");
  // The header is checked against the file's size, which only regular files know in advance.
  if (!S_ISREG(info.st_mode)) fail(path, ": not a regular file (pipes and devices cannot be read as IDX)");
  const uint64_t file_size = static_cast<uint64_t>(info.st_size);

  // gzip is recognised by its magic bytes, whatever the file is called.
  uint8_t magic[2] = {0, 0};
  const size_t got = std::fread(magic, 1, 2, file.get());
  if (is_gzip(std::span<const uint8_t>(magic, got))) {
    std::vector<uint8_t> compressed(file_size);
    std::memcpy(compressed.data(), magic, 2);
    const size_t rest = std::fread(compressed.data() + 2, 1, file_size - 2, file.get());
    if (rest != file_size - 2) {
      fail(path, ": read error: ", std::ferror(file.get()) ? std::strerror(errno) : "the file shrank while being read");
    }
    return std::make_unique<FileGzipSource>(path, std::move(compressed));
  }
  if (std::fseek(file.get(), 0, SEEK_SET) != 0) fail(path, ": cannot seek: ", std::strerror(errno));
  return std::make_unique<PlainSource>(path, std::move(file), file_size);
}

uint32_t big_endian_u32(const uint8_t* p) {
  return (uint32_t{p[0]} << 24) | (uint32_t{p[1]} << 16) | (uint32_t{p[2]} << 8) | uint32_t{p[3]};
}

// The IDX format itself, whatever the bytes come from; `path` names them in messages.
Tensor parse_idx(ByteSource* source, const std::string& path) {
  uint8_t magic[4];
  const size_t magic_bytes = source->read(magic, 4);
  if (magic_bytes < 4) {
    fail(path, ": not an IDX file: it holds ", magic_bytes, " byte", magic_bytes == 1 ? "" : "s",
         ", fewer than the 4 of an IDX magic number");
  }
  if (magic[0] != 0 || magic[1] != 0) {
    fail(path, ": not an IDX file: wrong magic number ", hex_byte(magic[0]), " ", hex_byte(magic[1]), " ",
         hex_byte(magic[2]), " ", hex_byte(magic[3]),
         " (an IDX file starts with two zero bytes, its element type and its number of dimensions)");
  }
  if (magic[2] != kUnsignedByteType) {
    const char* name = idx_type_name(magic[2]);
    if (!name) fail(path, ": not an IDX file: unknown element type ", hex_byte(magic[2]), " in its magic number");
    fail(path, ": IDX element type ", hex_byte(magic[2]), " (", name,
         ") is not supported; ember reads only 0x08 (unsigned byte)");
  }
  const int ndim = magic[3];
  EMBER_CHECK(ndim > 0, path, ": the IDX header declares 0 dimensions");

  std::vector<uint8_t> dim_bytes(4 * static_cast<size_t>(ndim));
  const size_t dims_read = source->read(dim_bytes.data(), dim_bytes.size());
  if (dims_read < dim_bytes.size()) {
    fail(path, ": truncated: the header declares ", ndim, " dimensions, which need ", 4 + dim_bytes.size(),
         " header bytes, file holds ", 4 + dims_read);
  }
  std::vector<int64_t> dims(ndim);
  std::string shape;
  for (int d = 0; d < ndim; ++d) {
    dims[d] = big_endian_u32(&dim_bytes[4 * d]);
    shape += (d ? "x" : "") + std::to_string(dims[d]);
  }
  // The product of the nonzero sizes must fit in int64_t even when a size is 0 and the tensor is
  // empty: its strides are products of the other sizes.
  constexpr auto kMaxSize = static_cast<uint64_t>(std::numeric_limits<int64_t>::max());
  const bool empty_tensor = std::find(dims.begin(), dims.end(), 0) != dims.end();
  uint64_t span = 1;
  for (const int64_t size : dims) {
    if (size != 0 && (__builtin_mul_overflow(span, static_cast<uint64_t>(size), &span) || span > kMaxSize)) {
      if (empty_tensor) {
        fail(path, ": header says ", shape,
             " elements: the tensor is empty, but its other sizes multiply to more than a 64-bit size holds");
      }
      fail(path, ": header says ", shape, " elements, which overflows a 64-bit size");
    }
  }
  const uint64_t payload_bytes = empty_tensor ? 0 : span;
  const std::string claim = ndim == 1 ? detail::concat("header says ", payload_bytes, " bytes of data")
                                      : detail::concat("header says ", shape, " = ", payload_bytes, " bytes of data");
  // Counting what the file really holds needs no memory beyond a small scratch buffer.
  if (payload_bytes > source->max_remaining()) {
    fail(path, ": truncated: ", claim, ", file holds ", source->count_remaining());
  }

  // A plain file's size has just confirmed the header; a gzip file's buffer grows as data arrives.
  uint64_t capacity = source->knows_exact_size() ? payload_bytes : std::min(payload_bytes, kFirstGzipChunk);
  Tensor buffer = empty({static_cast<int64_t>(capacity)}, kUInt8);
  uint64_t filled = 0;
  for (;;) {
    filled += source->read(buffer.data_ptr<uint8_t>() + filled, capacity - filled);
    if (filled == payload_bytes) break;
    if (filled < capacity) fail(path, ": truncated: ", claim, ", file holds ", filled);
    const uint64_t grown = std::min(payload_bytes, 2 * capacity);
    Tensor bigger = empty({static_cast<int64_t>(grown)}, kUInt8);
    std::memcpy(bigger.data_ptr<uint8_t>(), buffer.data_ptr<uint8_t>(), filled);
    buffer = std::move(bigger);
    capacity = grown;
  }
  if (const uint64_t trailing = source->count_remaining()) {
    fail(path, ": trailing data: ", claim, ", file holds ", payload_bytes + trailing);
  }
  return buffer.view(dims);
}

}  // namespace

Tensor read_idx(const std::string& path) {
  const std::unique_ptr<ByteSource> source = open_source(path);
  return parse_idx(source.get(), path);
}

Tensor read_idx_from_bytes(std::span<const uint8_t> bytes, std::string_view source) {
  const std::string name(source);
  if (is_gzip(bytes)) {
    GzipSource gzip(name, bytes);
    return parse_idx(&gzip, name);
  }
  MemorySource plain(name, bytes);
  return parse_idx(&plain, name);
}

}  // namespace ember::data
