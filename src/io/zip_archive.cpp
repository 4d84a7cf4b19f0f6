// ZIP reading and writing for torch.save's and numpy.savez's archives (see zip_archive.h).
// Hand-written rather than taken from a library: Debian's libzip and minizip either want a file
// descriptor they own or cannot stream into caller-owned memory, and torch.load needs both the
// aligned, stored records PyTorch writes and reads straight into tensor memory. The format parts
// used here (APPNOTE.TXT 6.3: local and central headers, ZIP64, stored and deflated data) are small.
#include "io/zip_archive.h"

#include <algorithm>
#include <array>
#include <bit>
#include <cerrno>
#include <cstring>
#include <limits>
#include <optional>
#include <unordered_set>

#define ZLIB_CONST
#include <zlib.h>

#ifdef EMBER_HAVE_ISAL
#include <isa-l/crc.h>
#endif

#include "base/parallel.h"
#include "core/check.h"
#include "io/byte_source.h"

namespace ember::io::internal {

static_assert(std::endian::native == std::endian::little, "ember's ZIP code assumes a little-endian host");

using ember::detail::concat;
using ember::detail::fail;

namespace {

constexpr uint32_t kLocalHeaderSig = 0x04034b50;
constexpr uint32_t kCentralHeaderSig = 0x02014b50;
constexpr uint32_t kEndSig = 0x06054b50;
constexpr uint32_t kZip64EndSig = 0x06064b50;
constexpr uint32_t kZip64LocatorSig = 0x07064b50;
constexpr size_t kLocalHeaderSize = 30;
constexpr size_t kCentralHeaderSize = 46;
constexpr size_t kEndSize = 22;
constexpr size_t kZip64EndSize = 56;
constexpr size_t kZip64LocatorSize = 20;
constexpr uint16_t kZip64ExtraId = 0x0001;
constexpr uint16_t kPaddingExtraId = 0x4246;  // "FB", PyTorch's alignment padding
constexpr uint32_t k32Max = 0xFFFFFFFF;
constexpr uint16_t k16Max = 0xFFFF;

uint16_t get16(const uint8_t* p) {
  uint16_t v;
  std::memcpy(&v, p, 2);
  return v;
}
uint32_t get32(const uint8_t* p) {
  uint32_t v;
  std::memcpy(&v, p, 4);
  return v;
}
uint64_t get64(const uint8_t* p) {
  uint64_t v;
  std::memcpy(&v, p, 8);
  return v;
}

template <typename T>
void put(std::vector<uint8_t>& out, T v) {
  uint8_t b[sizeof(T)];
  std::memcpy(b, &v, sizeof(T));
  out.insert(out.end(), b, b + sizeof(T));
}

std::string method_name(uint16_t method) {
  switch (method) {
    case 0:
      return "stored";
    case 8:
      return "deflate";
    case 9:
      return "deflate64";
    case 12:
      return "bzip2";
    case 14:
      return "lzma";
    case 93:
      return "zstandard";
    case 95:
      return "xz";
    default:
      return concat("method ", method);
  }
}

}  // namespace

ZipReader::ZipReader(std::unique_ptr<ByteSource> source) : source_(std::move(source)) { read_central_directory(); }
ZipReader::ZipReader(ZipReader&&) noexcept = default;
ZipReader& ZipReader::operator=(ZipReader&&) noexcept = default;
ZipReader::~ZipReader() = default;

ZipReader ZipReader::open(const std::filesystem::path& path, std::string context) {
  return ZipReader(std::make_unique<FileSource>(path, std::move(context)));
}

ZipReader ZipReader::from_bytes(std::span<const uint8_t> bytes, std::string context) {
  return ZipReader(std::make_unique<MemorySource>(bytes, std::move(context)));
}

const std::string& ZipReader::context() const { return source_->context(); }

bool ZipReader::looks_like_zip(std::span<const uint8_t> first_bytes) {
  if (first_bytes.size() < 4) return false;
  const uint32_t sig = get32(first_bytes.data());
  return sig == kLocalHeaderSig || sig == kEndSig;
}

const ZipEntry* ZipReader::find(std::string_view name) const {
  for (const ZipEntry& e : entries_)
    if (e.name == name) return &e;
  return nullptr;
}

void ZipReader::read_central_directory() {
  const uint64_t file_size = source_->size();
  if (file_size < kEndSize)
    fail(context(), ": not a ZIP archive (", file_size, " bytes, fewer than a ZIP end record's ", kEndSize, ")");

  // The end record is the last 22 bytes plus a comment of up to 65535 bytes; search backwards.
  const uint64_t tail_size = std::min<uint64_t>(file_size, kEndSize + k16Max);
  std::vector<uint8_t> tail(tail_size);
  source_->read(file_size - tail_size, tail.data(), tail_size);
  std::optional<uint64_t> end_at;  // position in `tail`
  for (uint64_t i = tail_size - kEndSize + 1; i-- > 0;) {
    if (get32(tail.data() + i) != kEndSig) continue;
    const uint16_t comment = get16(tail.data() + i + 20);
    if (i + kEndSize + comment <= tail_size) {
      end_at = i;
      break;
    }
  }
  if (!end_at) fail(context(), ": not a ZIP archive (no end-of-central-directory record; is the file truncated?)");
  const uint8_t* end = tail.data() + *end_at;
  const uint64_t end_offset = file_size - tail_size + *end_at;

  uint64_t disk = get16(end + 4), cd_disk = get16(end + 6);
  uint64_t disk_entries = get16(end + 8), entries = get16(end + 10);
  uint64_t cd_size = get32(end + 12), cd_offset = get32(end + 16);
  uint64_t cd_end_limit = end_offset;  // the central directory lies before this

  // A ZIP64 locator sits just before the end record when the archive needs 64-bit fields.
  const bool zip64 = disk_entries == k16Max || entries == k16Max || cd_size == k32Max || cd_offset == k32Max;
  bool has_locator = false;
  if (end_offset >= kZip64LocatorSize) {
    uint8_t loc[kZip64LocatorSize];
    source_->read(end_offset - kZip64LocatorSize, loc, kZip64LocatorSize);
    has_locator = get32(loc) == kZip64LocatorSig;
    if (has_locator) {
      const uint64_t z_end = get64(loc + 8);
      if (get32(loc + 16) > 1) fail(context(), ": multi-disk ZIP archives are not supported");
      if (z_end > end_offset - kZip64LocatorSize || end_offset - kZip64LocatorSize - z_end < kZip64EndSize)
        fail(context(), ": corrupt ZIP64 locator (its record offset ", z_end, " is outside the archive)");
      uint8_t rec[kZip64EndSize];
      source_->read(z_end, rec, kZip64EndSize);
      if (get32(rec) != kZip64EndSig) fail(context(), ": corrupt ZIP64 end record (bad signature)");
      disk = get32(rec + 16);
      cd_disk = get32(rec + 20);
      disk_entries = get64(rec + 24);
      entries = get64(rec + 32);
      cd_size = get64(rec + 40);
      cd_offset = get64(rec + 48);
      cd_end_limit = z_end;
    }
  }
  if (zip64 && !has_locator)
    fail(context(), ": the end record needs ZIP64 fields but there is no ZIP64 locator (corrupt archive)");
  if (disk != 0 || cd_disk != 0 || disk_entries != entries)
    fail(context(), ": multi-disk (split) ZIP archives are not supported");
  if (cd_offset > cd_end_limit || cd_size > cd_end_limit - cd_offset)
    fail(context(), ": corrupt ZIP archive: the central directory (", cd_size, " bytes at ", cd_offset,
         ") runs past its end record at byte ", cd_end_limit, " (is the file truncated?)");
  if (entries > cd_size / kCentralHeaderSize)
    fail(context(), ": corrupt ZIP archive: ", entries, " entries cannot fit in a ", cd_size,
         "-byte central directory");

  std::vector<uint8_t> cd(cd_size);
  source_->read(cd_offset, cd.data(), cd_size);
  std::unordered_set<std::string_view> names;
  entries_.reserve(entries);
  uint64_t pos = 0;
  for (uint64_t i = 0; i < entries; ++i) {
    if (cd_size - pos < kCentralHeaderSize || get32(cd.data() + pos) != kCentralHeaderSig)
      fail(context(), ": corrupt ZIP central directory at entry ", i);
    const uint8_t* h = cd.data() + pos;
    const uint16_t flags = get16(h + 8);
    ZipEntry e;
    e.method = get16(h + 10);
    e.crc32 = get32(h + 16);
    e.compressed_size = get32(h + 20);
    e.size = get32(h + 24);
    const uint16_t name_len = get16(h + 28), extra_len = get16(h + 30), comment_len = get16(h + 32);
    uint64_t entry_disk = get16(h + 34);
    e.local_header_offset = get32(h + 42);
    if (cd_size - pos - kCentralHeaderSize < uint64_t{name_len} + extra_len + comment_len)
      fail(context(), ": corrupt ZIP central directory at entry ", i, " (its name runs past the directory)");
    e.name.assign(reinterpret_cast<const char*>(h + kCentralHeaderSize), name_len);

    // ZIP64 extra field: 64-bit values for exactly those fields that hold their 0xFF.. marker.
    const uint8_t* extra = h + kCentralHeaderSize + name_len;
    for (uint32_t x = 0; x + 4 <= extra_len;) {
      const uint16_t id = get16(extra + x), len = get16(extra + x + 2);
      if (x + 4 + len > extra_len) break;
      if (id == kZip64ExtraId) {
        const uint8_t* f = extra + x + 4;
        uint32_t used = 0;
        auto take64 = [&](uint64_t& field) {
          if (used + 8 > len) fail(context(), ": corrupt ZIP64 field in entry '", e.name, "'");
          field = get64(f + used);
          used += 8;
        };
        if (e.size == k32Max) take64(e.size);
        if (e.compressed_size == k32Max) take64(e.compressed_size);
        if (e.local_header_offset == k32Max) take64(e.local_header_offset);
        if (entry_disk == k16Max) {
          if (used + 4 > len) fail(context(), ": corrupt ZIP64 field in entry '", e.name, "'");
          entry_disk = get32(f + used);
        }
      }
      x += 4 + len;
    }
    if (entry_disk != 0) fail(context(), ": multi-disk (split) ZIP archives are not supported");
    if (flags & 1) fail(context(), ": entry '", e.name, "' is encrypted; ember reads unencrypted archives only");
    if (e.method != 0 && e.method != 8)
      fail(context(), ": entry '", e.name, "' is compressed with ", method_name(e.method),
           "; ember reads stored and deflated entries (re-save the archive without that compression)");
    // Deflate expands at most 1032:1, so a larger claim is a lie meant to make a reader allocate.
    if (e.method == 8 && e.size / 1032 > e.compressed_size + 1)
      fail(context(), ": corrupt ZIP entry '", e.name, "': ", e.compressed_size,
           " deflated bytes cannot inflate to the declared ", e.size, " bytes");
    if (e.method == 0 && e.compressed_size != e.size)
      fail(context(), ": corrupt ZIP entry '", e.name, "': stored, but its sizes differ (", e.compressed_size, " and ",
           e.size, " bytes)");
    if (e.local_header_offset > cd_offset || e.compressed_size > cd_offset - e.local_header_offset)
      fail(context(), ": corrupt ZIP entry '", e.name, "': its data (", e.compressed_size, " bytes at ",
           e.local_header_offset, ") overlaps the central directory or runs past the file (is it truncated?)");
    pos += kCentralHeaderSize + name_len + extra_len + comment_len;
    entries_.push_back(std::move(e));
  }
  for (const ZipEntry& e : entries_)
    if (!names.insert(e.name).second) fail(context(), ": the ZIP archive holds two entries named '", e.name, "'");
}

void ZipReader::fail_entry(const ZipEntry& entry, const std::string& what) const {
  fail(context(), ": ZIP entry '", entry.name, "': ", what);
}

uint64_t ZipReader::data_offset(const ZipEntry& entry) const {
  // The local header repeats the name and has its own extra field, which decides where the data
  // starts; everything else comes from the central directory.
  uint8_t h[kLocalHeaderSize];
  if (source_->size() - entry.local_header_offset < kLocalHeaderSize) fail_entry(entry, "its local header is cut off");
  source_->read(entry.local_header_offset, h, kLocalHeaderSize);
  if (get32(h) != kLocalHeaderSig) fail_entry(entry, "bad local header signature (corrupt archive)");
  const uint16_t name_len = get16(h + 26), extra_len = get16(h + 28);
  const uint64_t data_offset = entry.local_header_offset + kLocalHeaderSize + name_len + extra_len;
  if (data_offset > source_->size() || entry.compressed_size > source_->size() - data_offset)
    fail_entry(entry, concat("its data (", entry.compressed_size, " bytes at ", data_offset,
                             ") runs past the end of the file (is it truncated?)"));
  std::string local_name(name_len, '\0');
  source_->read(entry.local_header_offset + kLocalHeaderSize, local_name.data(), name_len);
  if (local_name != entry.name) fail_entry(entry, "its local header names it differently (corrupt archive)");
  return data_offset;
}

void ZipReader::read(const ZipEntry& entry, void* dst) const {
  const uint64_t data_offset = this->data_offset(entry);

  auto* out = static_cast<uint8_t*>(dst);
  constexpr size_t kChunk = size_t{1} << 24;
  if (entry.method == 0) {
    source_->read(data_offset, out, static_cast<size_t>(entry.size));
  } else {
    z_stream z{};
    if (inflateInit2(&z, -MAX_WBITS) != Z_OK) fail_entry(entry, "zlib could not start inflating");
    struct End {
      z_stream* z;
      ~End() { inflateEnd(z); }
    } end{&z};
    std::vector<uint8_t> in(
        static_cast<size_t>(std::min<uint64_t>(kChunk, std::max<uint64_t>(entry.compressed_size, 1))));
    uint64_t consumed = 0, produced = 0;
    int rc = Z_OK;
    while (rc != Z_STREAM_END) {
      if (z.avail_in == 0) {
        if (consumed == entry.compressed_size) fail_entry(entry, "its deflated data ends early (corrupt archive)");
        const size_t n = static_cast<size_t>(std::min<uint64_t>(in.size(), entry.compressed_size - consumed));
        source_->read(data_offset + consumed, in.data(), n);
        consumed += n;
        z.next_in = in.data();
        z.avail_in = static_cast<uInt>(n);
      }
      const uint64_t room = std::min<uint64_t>(entry.size - produced, uint64_t{1} << 30);
      uint8_t spare;  // a byte to inflate into once dst is full, to catch data longer than declared
      z.next_out = room ? out + produced : &spare;
      z.avail_out = room ? static_cast<uInt>(room) : 1;
      rc = inflate(&z, Z_NO_FLUSH);
      if (rc != Z_OK && rc != Z_STREAM_END && rc != Z_BUF_ERROR)
        fail_entry(entry, concat("corrupt deflated data (zlib: ", z.msg ? z.msg : "error", ")"));
      const uint64_t wrote = (room ? room : 1) - z.avail_out;
      if (!room && wrote)
        fail_entry(entry, concat("its data inflates to more than the declared ", entry.size, " bytes"));
      produced += room ? wrote : 0;
      if (rc == Z_BUF_ERROR && z.avail_in != 0) fail_entry(entry, "corrupt deflated data (zlib made no progress)");
    }
    if (produced != entry.size)
      fail_entry(entry, concat("its data inflates to ", produced, " bytes, not the declared ", entry.size));
  }
  // One check for both kinds, over the data in memory (on every thread; see crc32_of).
  if (crc32_of(std::span<const uint8_t>(out, static_cast<size_t>(entry.size))) != entry.crc32)
    fail_entry(entry, "CRC-32 mismatch: the data is corrupt");
}

std::vector<uint8_t> ZipReader::read_bytes(const ZipEntry& entry, uint64_t max_bytes) const {
  if (entry.size > max_bytes)
    fail_entry(entry, concat("it is ", entry.size, " bytes, more than the ", max_bytes, " such a record may hold"));
  std::vector<uint8_t> out(static_cast<size_t>(entry.size));
  read(entry, out.data());
  return out;
}

// ---------------------------------------------------------------------------------------------
// Writing.

ZipWriter::ZipWriter(Sink sink, uint32_t alignment) : sink_(std::move(sink)), alignment_(alignment) {
  if (alignment_ == 0 || alignment_ > 4096 || (alignment_ & (alignment_ - 1)) != 0)
    fail("ZipWriter: the alignment must be a power of two up to 4096, not ", alignment_);
}

void ZipWriter::emit(const void* data, size_t size) {
  if (size == 0) return;
  sink_(data, size);
  offset_ += size;
}

namespace {

// CRC-32 (ZIP's, zlib's and gzip's polynomial) of `data`, continuing `crc`.
uint32_t crc32_update(uint32_t crc, const uint8_t* data, size_t n) {
#ifdef EMBER_HAVE_ISAL
  return crc32_gzip_refl(crc, data, n);
#else
  for (size_t done = 0; done < n;) {
    const size_t chunk = std::min<size_t>(n - done, size_t{1} << 30);
    crc = static_cast<uint32_t>(::crc32(crc, data + done, static_cast<uInt>(chunk)));
    done += chunk;
  }
  return crc;
#endif
}

}  // namespace

uint32_t crc32_of(std::span<const uint8_t> data) {
  // One core computes about 22 GB/s with ISA-L and 2.6 GB/s with zlib, which is slower than
  // reading a file from the page cache; chunks on every thread, joined with crc32_combine, keep
  // the check off a load's critical path either way.
  constexpr size_t kChunk = size_t{1} << 20;
  const auto chunks =
      static_cast<int64_t>(std::min<size_t>(static_cast<size_t>(base::num_threads()), data.size() / kChunk));
  if (chunks <= 1) return crc32_update(0, data.data(), data.size());
  std::vector<uint32_t> crcs(static_cast<size_t>(chunks));
  const auto bounds = [&](int64_t c) { return data.size() * static_cast<size_t>(c) / static_cast<size_t>(chunks); };
  base::parallel_for(chunks, 1, [&](int64_t begin, int64_t end) {
    for (int64_t c = begin; c < end; ++c)
      crcs[static_cast<size_t>(c)] = crc32_update(0, data.data() + bounds(c), bounds(c + 1) - bounds(c));
  });
  uLong crc = crcs[0];
  for (int64_t c = 1; c < chunks; ++c)
    crc = ::crc32_combine(crc, crcs[static_cast<size_t>(c)], static_cast<z_off_t>(bounds(c + 1) - bounds(c)));
  return static_cast<uint32_t>(crc);
}

namespace {
bool is_ascii(std::string_view s) {
  return std::all_of(s.begin(), s.end(), [](char c) { return static_cast<unsigned char>(c) < 0x80; });
}
}  // namespace

uint32_t ZipWriter::add(std::string_view name, std::span<const uint8_t> data) {
  if (finished_) fail("ZipWriter::add: the archive is already finished");
  if (name.empty() || name.size() > k16Max) fail("ZipWriter::add: an entry name must be 1 to 65535 bytes long");
  if (!names_.insert(std::string(name)).second) fail("ZipWriter::add: two entries named '", name, "'");

  ZipEntry e;
  e.name = std::string(name);
  e.size = e.compressed_size = data.size();
  e.crc32 = crc32_of(data);
  e.local_header_offset = offset_;
  const bool big = data.size() >= k32Max;

  std::vector<uint8_t> h;
  h.reserve(kLocalHeaderSize + name.size() + 24 + alignment_);
  put<uint32_t>(h, kLocalHeaderSig);
  put<uint16_t>(h, big ? 45 : 20);                // version needed: 4.5 for ZIP64
  put<uint16_t>(h, is_ascii(name) ? 0 : 0x0800);  // bit 11: the name is UTF-8
  put<uint16_t>(h, 0);                            // stored
  put<uint32_t>(h, 0);                            // DOS time and date: none, as PyTorch
  put<uint32_t>(h, e.crc32);
  put<uint32_t>(h, big ? k32Max : static_cast<uint32_t>(e.size));
  put<uint32_t>(h, big ? k32Max : static_cast<uint32_t>(e.size));
  put<uint16_t>(h, static_cast<uint16_t>(name.size()));
  const size_t extra_len_at = h.size();
  put<uint16_t>(h, 0);  // extra length, filled in below
  h.insert(h.end(), name.begin(), name.end());
  if (big) {
    put<uint16_t>(h, kZip64ExtraId);
    put<uint16_t>(h, 16);
    put<uint64_t>(h, e.size);
    put<uint64_t>(h, e.size);
  }
  // PyTorch's padding record: "FB", its length, then 'Z's up to the next aligned offset.
  if (alignment_ > 1) {
    const uint64_t start = offset_ + h.size() + 4;
    const uint64_t padding = (alignment_ - start % alignment_) % alignment_;
    put<uint16_t>(h, kPaddingExtraId);
    put<uint16_t>(h, static_cast<uint16_t>(padding));
    h.insert(h.end(), padding, 'Z');
  }
  const auto extra_len = static_cast<uint16_t>(h.size() - kLocalHeaderSize - name.size());
  std::memcpy(h.data() + extra_len_at, &extra_len, 2);
  emit(h.data(), h.size());
  emit(data.data(), data.size());
  const uint32_t crc = e.crc32;
  entries_.push_back(std::move(e));
  return crc;
}

void ZipWriter::finish() {
  if (finished_) fail("ZipWriter::finish: the archive is already finished");
  finished_ = true;
  const uint64_t cd_offset = offset_;
  for (const ZipEntry& e : entries_) {
    const bool big_size = e.size >= k32Max, big_offset = e.local_header_offset >= k32Max;
    std::vector<uint8_t> h;
    put<uint32_t>(h, kCentralHeaderSig);
    put<uint16_t>(h, (big_size || big_offset) ? 45 : 20);  // version made by (MS-DOS attributes)
    put<uint16_t>(h, (big_size || big_offset) ? 45 : 20);  // version needed
    put<uint16_t>(h, is_ascii(e.name) ? 0 : 0x0800);
    put<uint16_t>(h, 0);
    put<uint32_t>(h, 0);
    put<uint32_t>(h, e.crc32);
    put<uint32_t>(h, big_size ? k32Max : static_cast<uint32_t>(e.size));
    put<uint32_t>(h, big_size ? k32Max : static_cast<uint32_t>(e.size));
    put<uint16_t>(h, static_cast<uint16_t>(e.name.size()));
    const uint16_t zip64_len = static_cast<uint16_t>((big_size ? 16 : 0) + (big_offset ? 8 : 0));
    put<uint16_t>(h, zip64_len ? static_cast<uint16_t>(4 + zip64_len) : 0);
    put<uint16_t>(h, 0);  // comment
    put<uint16_t>(h, 0);  // disk
    put<uint16_t>(h, 0);  // internal attributes
    put<uint32_t>(h, 0);  // external attributes
    put<uint32_t>(h, big_offset ? k32Max : static_cast<uint32_t>(e.local_header_offset));
    h.insert(h.end(), e.name.begin(), e.name.end());
    if (zip64_len) {
      put<uint16_t>(h, kZip64ExtraId);
      put<uint16_t>(h, zip64_len);
      if (big_size) {
        put<uint64_t>(h, e.size);
        put<uint64_t>(h, e.size);
      }
      if (big_offset) put<uint64_t>(h, e.local_header_offset);
    }
    emit(h.data(), h.size());
  }
  const uint64_t cd_size = offset_ - cd_offset;
  const uint64_t count = entries_.size();
  const bool zip64 = count >= k16Max || cd_offset >= k32Max || cd_size >= k32Max;
  std::vector<uint8_t> t;
  if (zip64) {
    const uint64_t z_end = offset_;
    put<uint32_t>(t, kZip64EndSig);
    put<uint64_t>(t, kZip64EndSize - 12);  // the record's size after this field
    put<uint16_t>(t, 45);
    put<uint16_t>(t, 45);
    put<uint32_t>(t, 0);
    put<uint32_t>(t, 0);
    put<uint64_t>(t, count);
    put<uint64_t>(t, count);
    put<uint64_t>(t, cd_size);
    put<uint64_t>(t, cd_offset);
    put<uint32_t>(t, kZip64LocatorSig);
    put<uint32_t>(t, 0);
    put<uint64_t>(t, z_end);
    put<uint32_t>(t, 1);
  }
  put<uint32_t>(t, kEndSig);
  put<uint16_t>(t, 0);
  put<uint16_t>(t, 0);
  put<uint16_t>(t, zip64 ? k16Max : static_cast<uint16_t>(count));
  put<uint16_t>(t, zip64 ? k16Max : static_cast<uint16_t>(count));
  put<uint32_t>(t, zip64 ? k32Max : static_cast<uint32_t>(cd_size));
  put<uint32_t>(t, zip64 ? k32Max : static_cast<uint32_t>(cd_offset));
  put<uint16_t>(t, 0);  // comment
  emit(t.data(), t.size());
}

}  // namespace ember::io::internal
