// TensorBoard event files: TFRecord framing around hand-encoded `Event` protobufs.
//
// Why no libprotobuf: ember needs three tiny messages (Event, Summary, Summary.Value) and only
// writes them. Linking libprotobuf and compiling tensorboard's .proto files would add a build
// dependency and a code generator for what takes a few lines of varint encoding here; Debian has no
// C++ TensorBoard writer either. Why CRC32C here: no Debian package ships a C++ CRC32C library
// (`apt-cache search crc32c` finds only a Python module), and a table-driven one is a dozen lines.
// Event files are small, so a byte-at-a-time table is fast enough.
#include "ember/io/tensorboard.h"

#include <fcntl.h>
#include <unistd.h>

#include <array>
#include <atomic>
#include <bit>
#include <cerrno>
#include <chrono>
#include <cmath>
#include <cstdio>
#include <cstring>
#include <limits>
#include <mutex>
#include <string>
#include <system_error>

#include "core/check.h"

namespace ember::io {

// TFRecord and protobuf fixed-width fields are little-endian; the encoders below copy bytes.
static_assert(std::endian::native == std::endian::little, "ember's TensorBoard writer assumes a little-endian host");

namespace {

using detail::concat;

// ---------------------------------------------------------------------------------------------
// CRC32C.

constexpr std::array<uint32_t, 256> make_crc32c_table() {
  std::array<uint32_t, 256> table{};
  for (uint32_t i = 0; i < 256; ++i) {
    uint32_t c = i;
    for (int k = 0; k < 8; ++k) c = (c & 1) ? (c >> 1) ^ 0x82F63B78u : c >> 1;
    table[i] = c;
  }
  return table;
}
constexpr std::array<uint32_t, 256> kCrc32cTable = make_crc32c_table();

// ---------------------------------------------------------------------------------------------
// Protobuf wire format, just what Event needs.

enum WireType : uint32_t { kVarint = 0, kFixed64 = 1, kLengthDelimited = 2, kFixed32 = 5 };

void put_varint(std::string& out, uint64_t v) {
  while (v >= 0x80) {
    out += static_cast<char>((v & 0x7f) | 0x80);
    v >>= 7;
  }
  out += static_cast<char>(v);
}

void put_key(std::string& out, uint32_t field, WireType type) { put_varint(out, (uint64_t{field} << 3) | type); }

template <typename T>
void put_le(std::string& out, T v) {
  char bytes[sizeof(T)];
  std::memcpy(bytes, &v, sizeof(T));
  out.append(bytes, sizeof(T));
}

void put_length_delimited(std::string& out, uint32_t field, std::string_view bytes) {
  put_key(out, field, kLengthDelimited);
  put_varint(out, bytes.size());
  out += bytes;
}

// proto3 leaves fields at their default (all-zero bits) out of the encoding; doing the same makes
// ember's events byte-identical to those PyTorch writes.
std::string encode_event(double wall_time, int64_t step, std::string_view file_version, std::string_view summary) {
  std::string event;
  if (std::bit_cast<uint64_t>(wall_time) != 0) {
    put_key(event, 1, kFixed64);
    put_le(event, wall_time);
  }
  if (step != 0) {
    put_key(event, 2, kVarint);
    put_varint(event, static_cast<uint64_t>(step));  // negative steps take ten bytes, as in protobuf
  }
  if (!file_version.empty()) put_length_delimited(event, 3, file_version);
  if (!summary.empty()) put_length_delimited(event, 5, summary);
  return event;
}

// Summary{ value: [Value{ tag, simple_value }] }. simple_value sits in a oneof, so it is written
// even when it is 0.
std::string encode_scalar_summary(std::string_view tag, float value) {
  std::string v;
  put_length_delimited(v, 1, tag);
  put_key(v, 2, kFixed32);
  put_le(v, value);
  std::string summary;
  put_length_delimited(summary, 1, v);
  return summary;
}

std::string tfrecord(std::string_view data) {
  std::string record;
  record.reserve(data.size() + 16);
  put_le(record, static_cast<uint64_t>(data.size()));
  put_le(record, masked_crc32c(crc32c(std::string_view(record.data(), 8))));
  record += data;
  put_le(record, masked_crc32c(crc32c(data)));
  return record;
}

// ---------------------------------------------------------------------------------------------
// Helpers.

double now_seconds() {
  using namespace std::chrono;
  return duration<double>(system_clock::now().time_since_epoch()).count();
}

std::string hostname() {
  char buf[256] = {};
  if (::gethostname(buf, sizeof buf - 1) != 0 || buf[0] == '\0') return "localhost";
  return buf;
}

// proto3 strings must be UTF-8; TensorBoard's Python reader fails on the whole file otherwise.
bool valid_utf8(std::string_view s) {
  size_t i = 0;
  while (i < s.size()) {
    const auto lead = static_cast<unsigned char>(s[i]);
    size_t extra = 0;
    uint32_t cp = 0;
    uint32_t smallest = 0;
    if (lead < 0x80) {
      ++i;
      continue;
    } else if (lead >= 0xc2 && lead <= 0xdf) {
      extra = 1, cp = lead & 0x1fu, smallest = 0x80;
    } else if (lead >= 0xe0 && lead <= 0xef) {
      extra = 2, cp = lead & 0x0fu, smallest = 0x800;
    } else if (lead >= 0xf0 && lead <= 0xf4) {
      extra = 3, cp = lead & 0x07u, smallest = 0x10000;
    } else {
      return false;
    }
    if (s.size() - i <= extra) return false;
    for (size_t k = 1; k <= extra; ++k) {
      const auto c = static_cast<unsigned char>(s[i + k]);
      if ((c & 0xc0) != 0x80) return false;
      cp = (cp << 6) | (c & 0x3fu);
    }
    if (cp < smallest || cp > 0x10ffff || (cp >= 0xd800 && cp <= 0xdfff)) return false;
    i += extra + 1;
  }
  return true;
}

// A double outside float's range converts to float with undefined behaviour in C++; PyTorch
// (through numpy) gives infinity there, and so does this.
float to_float(double v) {
  constexpr double kMax = std::numeric_limits<float>::max();
  if (v > kMax) return std::numeric_limits<float>::infinity();
  if (v < -kMax) return -std::numeric_limits<float>::infinity();
  return static_cast<float>(v);
}

}  // namespace

uint32_t crc32c(std::string_view data, uint32_t crc) {
  crc = ~crc;
  for (const char ch : data) crc = kCrc32cTable[(crc ^ static_cast<unsigned char>(ch)) & 0xff] ^ (crc >> 8);
  return ~crc;
}

uint32_t masked_crc32c(uint32_t crc) { return ((crc >> 15) | (crc << 17)) + 0xa282ead8u; }

// ---------------------------------------------------------------------------------------------
// SummaryWriter.

struct SummaryWriter::State {
  std::filesystem::path path;
  std::string context;  // "SummaryWriter('<file>')", the start of every message
  int fd = -1;
  std::mutex mutex;
  // Set after a failed write: the file may end in a partial record, and appending after it would
  // hide the events behind it from readers.
  bool failed = false;
  // A new file's directory entry is durable only once its folder is synced, which flush() does once.
  bool folder_synced = false;

  State() = default;
  State(const State&) = delete;
  State& operator=(const State&) = delete;
  // Here rather than in ~SummaryWriter so that a constructor that fails half-way also closes the
  // file. It must not throw; whoever needs to know that the data reached the disk calls flush().
  ~State() {
    if (fd < 0) return;
    ::fsync(fd);
    ::close(fd);
  }

  // Callers read errno into `err` before anything else can change it.
  [[noreturn]] void fail(std::string_view what, int err) {
    failed = true;
    detail::fail(context, ": ", what, ": ", std::strerror(err));
  }

  void check_usable() const {
    EMBER_CHECK(!failed, context, ": an earlier write to the event file failed; open a new SummaryWriter");
  }

  // Each record goes to the kernel at once, with no user-space buffer: a running TensorBoard sees
  // it, a write error surfaces at the call that caused it, and nothing is left half-buffered.
  void append(std::string_view record) {
    check_usable();
    while (!record.empty()) {
      const ssize_t n = ::write(fd, record.data(), record.size());
      if (n < 0) {
        const int err = errno;
        if (err == EINTR) continue;
        fail("cannot write the event file", err);
      }
      record.remove_prefix(static_cast<size_t>(n));
    }
  }

  void sync() {
    check_usable();
    if (::fsync(fd) != 0) {
      const int err = errno;
      if (err != EINVAL) fail("cannot flush the event file to disk", err);  // EINVAL: cannot be synced at all
    }
    if (!folder_synced) {
      const std::filesystem::path folder = path.parent_path();
      const int dir = ::open(folder.c_str(), O_RDONLY | O_DIRECTORY | O_CLOEXEC);
      if (dir < 0) {
        const int err = errno;
        fail(concat("cannot open the folder '", folder.string(), "' to sync it"), err);
      }
      const int rc = ::fsync(dir);
      const int err = errno;
      ::close(dir);
      // Some file systems cannot sync a folder at all; there is nothing more to do on those.
      if (rc != 0 && err != EINVAL && err != ENOTSUP)
        fail(concat("cannot sync the folder '", folder.string(), "'"), err);
      folder_synced = true;
    }
  }
};

SummaryWriter::SummaryWriter(std::filesystem::path log_dir) : state_(std::make_unique<State>()) {
  EMBER_CHECK(!log_dir.empty(), "SummaryWriter: the log folder is empty");
  std::error_code ec;
  std::filesystem::create_directories(log_dir, ec);
  EMBER_CHECK(!ec, "SummaryWriter('", log_dir.string(), "'): cannot create the log folder: ", ec.message());

  // The name PyTorch gives its event files; the counter keeps writers of one process apart, and
  // O_EXCL makes sure no other writer's file is ever truncated.
  static std::atomic<uint64_t> counter{0};
  const double created = now_seconds();
  char seconds[32];
  std::snprintf(seconds, sizeof seconds, "%010lld", static_cast<long long>(created));
  state_->path =
      log_dir / concat("events.out.tfevents.", seconds, ".", hostname(), ".", ::getpid(), ".", counter.fetch_add(1));
  state_->context = concat("SummaryWriter('", state_->path.string(), "')");

  state_->fd = ::open(state_->path.c_str(), O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC | O_APPEND, 0666);
  if (state_->fd < 0) {
    const int err = errno;
    state_->fail("cannot create the event file", err);
  }
  state_->append(tfrecord(encode_event(created, 0, "brain.Event:2", {})));
}

SummaryWriter::SummaryWriter(SummaryWriter&&) noexcept = default;
SummaryWriter& SummaryWriter::operator=(SummaryWriter&&) noexcept = default;
SummaryWriter::~SummaryWriter() = default;

void SummaryWriter::add_scalar(std::string_view tag, double value, int64_t step, std::optional<double> wall_time) {
  EMBER_CHECK(state_, "SummaryWriter::add_scalar: the writer was moved from");
  EMBER_CHECK(!tag.empty(), state_->context, ": add_scalar needs a non-empty tag");
  EMBER_CHECK(valid_utf8(tag), state_->context, ": the tag of add_scalar must be valid UTF-8");
  const double when = wall_time.value_or(now_seconds());
  EMBER_CHECK(std::isfinite(when), state_->context, ": add_scalar('", tag, "'): wall_time must be finite, got ", when);
  const std::string record = tfrecord(encode_event(when, step, {}, encode_scalar_summary(tag, to_float(value))));
  std::lock_guard lock(state_->mutex);
  state_->append(record);
}

void SummaryWriter::flush() {
  EMBER_CHECK(state_, "SummaryWriter::flush: the writer was moved from");
  std::lock_guard lock(state_->mutex);
  state_->sync();
}

const std::filesystem::path& SummaryWriter::file() const {
  EMBER_CHECK(state_, "SummaryWriter::file: the writer was moved from");
  return state_->path;
}

}  // namespace ember::io
