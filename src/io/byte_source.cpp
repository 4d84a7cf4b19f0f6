#include "io/byte_source.h"

#include <fcntl.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstring>
#include <limits>

#include "core/check.h"

namespace ember::io::internal {

using ember::detail::concat;
using ember::detail::fail;

std::string quote_bounded(std::string_view s) {
  constexpr size_t kMaxShown = 80;
  std::string out = "'";
  for (size_t i = 0; i < s.size() && i < kMaxShown; ++i) {
    const auto c = static_cast<unsigned char>(s[i]);
    if (c < 0x20 || c == 0x7f) {
      static constexpr char kHex[] = "0123456789abcdef";
      out += "\\x";
      out += kHex[c >> 4];
      out += kHex[c & 15];
    } else {
      out += static_cast<char>(c);
    }
  }
  if (s.size() > kMaxShown)
    out += concat("'... (", s.size(), " bytes)");
  else
    out += "'";
  return out;
}

std::optional<uint64_t> bytes_needed(Dtype dtype, const std::vector<int64_t>& shape) {
  const auto item = static_cast<uint64_t>(element_size(dtype));
  uint64_t n = 1;
  uint64_t span = item;  // product of the nonzero dimensions, in bytes
  for (const int64_t d : shape) {
    if (__builtin_mul_overflow(n, static_cast<uint64_t>(d), &n)) return std::nullopt;
    if (d != 0 && __builtin_mul_overflow(span, static_cast<uint64_t>(d), &span)) return std::nullopt;
  }
  constexpr auto kMax = static_cast<uint64_t>(std::numeric_limits<int64_t>::max());
  if (__builtin_mul_overflow(n, item, &n) || n > kMax || span > kMax) return std::nullopt;
  return n;
}

std::string errno_text(int err) { return std::strerror(err); }

FileSource::FileSource(const std::filesystem::path& path, std::string context) : ByteSource(std::move(context)) {
  // O_NONBLOCK: opening a FIFO must not hang; it is rejected just below.
  fd_ = ::open(path.c_str(), O_RDONLY | O_CLOEXEC | O_NONBLOCK);
  if (fd_ < 0) fail(this->context(), ": cannot open the file: ", errno_text(errno));
  struct stat st {};
  if (::fstat(fd_, &st) != 0) {
    const int err = errno;
    ::close(fd_);
    fail(this->context(), ": cannot stat the file: ", errno_text(err));
  }
  if (!S_ISREG(st.st_mode)) {
    ::close(fd_);
    fail(this->context(), ": not a regular file");
  }
  size_ = static_cast<uint64_t>(st.st_size);
}

FileSource::~FileSource() { ::close(fd_); }

void FileSource::read(uint64_t offset, void* dst, size_t n) const {
  char* p = static_cast<char*>(dst);
  while (n > 0) {
    const ssize_t r = ::pread(fd_, p, std::min<size_t>(n, size_t{1} << 30), static_cast<off_t>(offset));
    if (r < 0) {
      if (errno == EINTR) continue;
      fail(context(), ": read error at byte ", offset, ": ", errno_text(errno));
    }
    if (r == 0) fail(context(), ": the file ended at byte ", offset, " while reading (was it truncated?)");
    p += r;
    offset += static_cast<uint64_t>(r);
    n -= static_cast<size_t>(r);
  }
}

std::vector<uint8_t> read_head(const std::filesystem::path& path, size_t n, const std::string& context) {
  const FileSource file(path, context);
  std::vector<uint8_t> head(static_cast<size_t>(std::min<uint64_t>(file.size(), n)));
  file.read(0, head.data(), head.size());
  return head;
}

std::shared_ptr<MappedFile> MappedFile::open(const std::filesystem::path& path, const std::string& context) {
  const FileSource file(path, context);  // the same checks and messages as a read
  if (file.size() == 0) fail(context, ": the file is empty");
  const int fd = ::open(path.c_str(), O_RDONLY | O_CLOEXEC | O_NONBLOCK);
  if (fd < 0) fail(context, ": cannot open the file: ", errno_text(errno));
  void* p = ::mmap(nullptr, file.size(), PROT_READ | PROT_WRITE, MAP_PRIVATE, fd, 0);
  const int err = errno;
  ::close(fd);  // the mapping stays valid without the descriptor
  if (p == MAP_FAILED) fail(context, ": cannot map the file into memory: ", errno_text(err));
  return std::shared_ptr<MappedFile>(new MappedFile(static_cast<uint8_t*>(p), file.size()));
}

MappedFile::~MappedFile() { ::munmap(data_, size_); }

void MemorySource::read(uint64_t offset, void* dst, size_t n) const {
  if (n) std::memcpy(dst, bytes_.data() + offset, n);
}

}  // namespace ember::io::internal
