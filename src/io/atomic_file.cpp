#include "ember/io/atomic_file.h"

#include <fcntl.h>
#include <signal.h>
#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <cerrno>
#include <charconv>
#include <cstring>
#include <optional>

#include "core/check.h"
#include "io/fault_injection.h"

namespace ember::io {

namespace {

std::filesystem::path folder_of(const std::filesystem::path& file) {
  std::filesystem::path dir = file.parent_path();
  return dir.empty() ? std::filesystem::path(".") : dir;
}

// The reason for a failed step, and for the failures a user can fix, what to do about them.
std::string reason(int err, const std::filesystem::path& file) {
  std::string text = std::strerror(err);
  const std::string dir = folder_of(file).string();
  switch (err) {
    case ENOSPC:
    case EDQUOT:
      text += " (the disk or quota holding '" + dir + "' is full: free space there, or save somewhere else)";
      break;
    case EROFS:
      text += " ('" + dir + "' is on a read-only file system: save somewhere else)";
      break;
    case EACCES:
    case EPERM:
      text += " (no permission to write in '" + dir + "': change its permissions, or save somewhere else)";
      break;
    default:
      break;
  }
  return text;
}

// After a rename, the new directory entry is durable only once the directory itself is synced.
void sync_directory(const std::filesystem::path& file, const std::string& context) {
  const std::filesystem::path dir = folder_of(file);
  const int fd = ::open(dir.c_str(), O_RDONLY | O_DIRECTORY | O_CLOEXEC);
  if (fd < 0) detail::fail(context, ": cannot open the folder '", dir.string(), "' to sync it: ", reason(errno, file));
  const int rc = ::fsync(fd);
  const int err = errno;
  ::close(fd);
  // Some file systems cannot sync a directory at all; there is nothing more to do on those.
  if (rc != 0 && err != EINVAL && err != ENOTSUP)
    detail::fail(context, ": cannot sync the folder '", dir.string(), "': ", reason(err, file));
}

bool process_is_gone(int64_t pid) { return pid > 0 && ::kill(static_cast<pid_t>(pid), 0) != 0 && errno == ESRCH; }

// A process killed during a save leaves "<name>.tmp-<pid>-<n>" behind. Those of processes that
// no longer run can never be committed; removing them keeps a crash-looping job from filling the
// disk. A temporary file of a live process (another save in progress) is left alone.
void remove_stale_temporaries(const std::filesystem::path& path) {
  const std::string prefix = path.filename().string() + ".tmp-";
  std::error_code ec;
  for (const auto& entry : std::filesystem::directory_iterator(folder_of(path), ec)) {
    const std::string name = entry.path().filename().string();
    if (!name.starts_with(prefix)) continue;
    const std::string_view rest = std::string_view(name).substr(prefix.size());
    int64_t pid = 0;
    const auto [end, parse_error] = std::from_chars(rest.data(), rest.data() + rest.size(), pid);
    if (parse_error != std::errc() || end == rest.data() + rest.size() || *end != '-') continue;
    if (process_is_gone(pid)) std::filesystem::remove(entry.path(), ec);
  }
}

}  // namespace

struct AtomicFileWriter::ArmedFault {
  faults::Fault fault;
};

AtomicFileWriter::AtomicFileWriter(std::filesystem::path path, std::string context)
    : path_(std::move(path)), context_(std::move(context)) {
  EMBER_CHECK(!path_.empty(), context_, ": the path is empty");
  if (std::optional<faults::Fault> fault = faults::fault_for_save(path_))
    fault_ = std::make_unique<ArmedFault>(ArmedFault{*fault});
  remove_stale_temporaries(path_);
  // The pid and a per-process counter keep concurrent saves (other processes, other threads) apart.
  static std::atomic<uint64_t> counter{0};
  temp_path_ = detail::concat(path_.string(), ".tmp-", ::getpid(), "-", counter.fetch_add(1));
  if (fault_ && fault_->fault.point == faults::FaultPoint::Open)
    fail("cannot create the temporary file '" + temp_path_ + "'", faults::trigger(fault_->fault));
  fd_ = ::open(temp_path_.c_str(), O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0666);
  if (fd_ < 0) fail("cannot create the temporary file '" + temp_path_ + "'", errno);
}

AtomicFileWriter::~AtomicFileWriter() {
  if (fd_ >= 0) ::close(fd_);
  if (!committed_) ::unlink(temp_path_.c_str());
}

void AtomicFileWriter::fail(const std::string& what, int err) const {
  detail::fail(context_, ": ", what, ": ", reason(err, path_));
}

void AtomicFileWriter::write(const void* data, size_t size) {
  EMBER_CHECK(fd_ >= 0, context_, ": write after commit");
  const char* p = static_cast<const char*>(data);
  // An injected fault at byte k lets exactly k bytes reach the file first.
  const bool fault_here = fault_ && fault_->fault.point == faults::FaultPoint::Byte && fault_->fault.byte >= written_ &&
                          fault_->fault.byte - written_ <= size;
  size_t remaining = fault_here ? static_cast<size_t>(fault_->fault.byte - written_) : size;
  while (remaining > 0) {
    // Linux transfers at most about 2 GiB per call.
    const ssize_t written = ::write(fd_, p, std::min<size_t>(remaining, size_t{1} << 30));
    if (written < 0) {
      if (errno == EINTR) continue;
      fail("cannot write '" + temp_path_ + "'", errno);
    }
    p += written;
    remaining -= static_cast<size_t>(written);
    written_ += static_cast<uint64_t>(written);
  }
  if (fault_here) {
    const faults::Fault fault = fault_->fault;
    fault_.reset();  // fires once
    fail("cannot write '" + temp_path_ + "'", faults::trigger(fault));
  }
}

void AtomicFileWriter::commit() {
  EMBER_CHECK(fd_ >= 0, context_, ": commit called twice");
  auto injected = [&](faults::FaultPoint point) { return fault_ && fault_->fault.point == point; };
  if (injected(faults::FaultPoint::Sync))
    fail("cannot flush '" + temp_path_ + "' to disk", faults::trigger(fault_->fault));
  if (::fsync(fd_) != 0) fail("cannot flush '" + temp_path_ + "' to disk", errno);
  const int fd = fd_;
  fd_ = -1;
  // close() can report a deferred write error (NFS, quota), which would otherwise be lost.
  if (::close(fd) != 0) fail("cannot close '" + temp_path_ + "'", errno);
  if (injected(faults::FaultPoint::Rename))
    fail("cannot move the temporary file '" + temp_path_ + "' into place", faults::trigger(fault_->fault));
  if (::rename(temp_path_.c_str(), path_.c_str()) != 0)
    fail("cannot move the temporary file '" + temp_path_ + "' into place", errno);
  committed_ = true;
  if (injected(faults::FaultPoint::Renamed))
    fail("cannot sync the folder of '" + path_.string() + "'", faults::trigger(fault_->fault));
  sync_directory(path_, context_);
}

void write_file_atomically(const std::filesystem::path& path, std::string_view contents) {
  AtomicFileWriter file(path, "write('" + path.string() + "')");
  file.write(contents);
  file.commit();
}

}  // namespace ember::io
