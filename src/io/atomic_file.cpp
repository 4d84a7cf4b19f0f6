#include "ember/io/atomic_file.h"

#include <fcntl.h>
#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <cerrno>
#include <cstring>

#include "core/check.h"

namespace ember::io {

namespace {

std::string errno_text(int err) { return std::strerror(err); }

// After a rename, the new directory entry is durable only once the directory itself is synced.
void sync_directory(const std::filesystem::path& file, const std::string& context) {
  std::filesystem::path dir = file.parent_path();
  if (dir.empty()) dir = ".";
  const int fd = ::open(dir.c_str(), O_RDONLY | O_DIRECTORY | O_CLOEXEC);
  if (fd < 0) detail::fail(context, ": cannot open the folder '", dir.string(), "' to sync it: ", errno_text(errno));
  const int rc = ::fsync(fd);
  const int err = errno;
  ::close(fd);
  // Some file systems cannot sync a directory at all; there is nothing more to do on those.
  if (rc != 0 && err != EINVAL && err != ENOTSUP)
    detail::fail(context, ": cannot sync the folder '", dir.string(), "': ", errno_text(err));
}

}  // namespace

AtomicFileWriter::AtomicFileWriter(std::filesystem::path path, std::string context)
    : path_(std::move(path)), context_(std::move(context)) {
  EMBER_CHECK(!path_.empty(), context_, ": the path is empty");
  // The pid and a per-process counter keep concurrent saves (other processes, other threads) apart.
  static std::atomic<uint64_t> counter{0};
  temp_path_ = detail::concat(path_.string(), ".tmp-", ::getpid(), "-", counter.fetch_add(1));
  fd_ = ::open(temp_path_.c_str(), O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0666);
  if (fd_ < 0) detail::fail(context_, ": cannot create the temporary file '", temp_path_, "': ", errno_text(errno));
}

AtomicFileWriter::~AtomicFileWriter() {
  if (fd_ >= 0) ::close(fd_);
  if (!committed_) ::unlink(temp_path_.c_str());
}

void AtomicFileWriter::write(const void* data, size_t size) {
  EMBER_CHECK(fd_ >= 0, context_, ": write after commit");
  const char* p = static_cast<const char*>(data);
  while (size > 0) {
    // Linux transfers at most about 2 GiB per call.
    const ssize_t written = ::write(fd_, p, std::min<size_t>(size, size_t{1} << 30));
    if (written < 0) {
      if (errno == EINTR) continue;
      detail::fail(context_, ": cannot write '", temp_path_, "': ", errno_text(errno));
    }
    p += written;
    size -= static_cast<size_t>(written);
  }
}

void AtomicFileWriter::commit() {
  EMBER_CHECK(fd_ >= 0, context_, ": commit called twice");
  if (::fsync(fd_) != 0) detail::fail(context_, ": cannot flush '", temp_path_, "' to disk: ", errno_text(errno));
  const int fd = fd_;
  fd_ = -1;
  // close() can report a deferred write error (NFS, quota), which would otherwise be lost.
  if (::close(fd) != 0) detail::fail(context_, ": cannot close '", temp_path_, "': ", errno_text(errno));
  if (::rename(temp_path_.c_str(), path_.c_str()) != 0)
    detail::fail(context_, ": cannot move the temporary file '", temp_path_, "' into place: ", errno_text(errno));
  committed_ = true;
  sync_directory(path_, context_);
}

void write_file_atomically(const std::filesystem::path& path, std::string_view contents) {
  AtomicFileWriter file(path, "write('" + path.string() + "')");
  file.write(contents);
  file.commit();
}

}  // namespace ember::io
