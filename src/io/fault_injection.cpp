#include "io/fault_injection.h"

#include <signal.h>
#include <unistd.h>

#include <cerrno>
#include <charconv>
#include <cstdlib>
#include <mutex>

#include "core/check.h"

namespace ember::io::faults {

namespace {

constexpr const char* kVariable = "EMBER_FAULT_INJECT";

[[noreturn]] void malformed(std::string_view spec, std::string_view why) {
  ember::detail::fail(kVariable, "='", spec, "' is malformed: ", why,
                      "; expected <kill|ENOSPC|EDQUOT|EROFS|EACCES|EIO>:<file name>[#<n>]:"
                      "<open|byte=<k>|sync|rename|renamed>");
}

bool parse_integer(std::string_view text, int64_t& value) {
  const auto [end, ec] = std::from_chars(text.data(), text.data() + text.size(), value);
  return ec == std::errc() && end == text.data() + text.size();
}

}  // namespace

std::optional<FaultSpec> parse_fault_spec(std::string_view spec) {
  if (spec.empty()) return std::nullopt;
  const size_t first = spec.find(':');
  const size_t last = spec.rfind(':');
  if (first == std::string_view::npos || first == last) malformed(spec, "it needs three fields separated by ':'");
  const std::string_view action = spec.substr(0, first);
  std::string_view file = spec.substr(first + 1, last - first - 1);
  const std::string_view point = spec.substr(last + 1);

  FaultSpec out;
  if (action == "kill") {
    out.fault.kill = true;
  } else if (action == "ENOSPC") {
    out.fault.error = ENOSPC;
  } else if (action == "EDQUOT") {
    out.fault.error = EDQUOT;
  } else if (action == "EROFS") {
    out.fault.error = EROFS;
  } else if (action == "EACCES") {
    out.fault.error = EACCES;
  } else if (action == "EIO") {
    out.fault.error = EIO;
  } else {
    malformed(spec, "unknown action '" + std::string(action) + "'");
  }

  if (const size_t hash = file.find('#'); hash != std::string_view::npos) {
    if (!parse_integer(file.substr(hash + 1), out.occurrence) || out.occurrence < 1)
      malformed(spec, "the save number after '#' must be a positive integer");
    file = file.substr(0, hash);
  }
  if (file.empty() || file.find('/') != std::string_view::npos)
    malformed(spec, "the file name must be a bare name such as checkpoint.safetensors");
  out.file_name = std::string(file);

  if (point == "open") {
    out.fault.point = FaultPoint::Open;
  } else if (point == "sync") {
    out.fault.point = FaultPoint::Sync;
  } else if (point == "rename") {
    out.fault.point = FaultPoint::Rename;
  } else if (point == "renamed") {
    out.fault.point = FaultPoint::Renamed;
  } else if (point.starts_with("byte=")) {
    int64_t byte = 0;
    if (!parse_integer(point.substr(5), byte) || byte < 0) malformed(spec, "byte=<k> needs a non-negative integer");
    out.fault.point = FaultPoint::Byte;
    out.fault.byte = static_cast<uint64_t>(byte);
  } else {
    malformed(spec, "unknown point '" + std::string(point) + "'");
  }
  return out;
}

std::optional<Fault> fault_for_save(const std::filesystem::path& path) {
  const char* value = std::getenv(kVariable);
  if (value == nullptr || *value == '\0') return std::nullopt;
  const std::optional<FaultSpec> spec = parse_fault_spec(value);
  if (!spec || path.filename() != spec->file_name) return std::nullopt;
  // Saves are counted per setting, so a test that changes the variable starts counting afresh.
  static std::mutex mutex;
  static std::string counted_for;
  static int64_t count = 0;
  const std::lock_guard lock(mutex);
  if (counted_for != value) {
    counted_for = value;
    count = 0;
  }
  return ++count == spec->occurrence ? std::optional<Fault>(spec->fault) : std::nullopt;
}

int trigger(const Fault& fault) {
  if (fault.kill) {
    ::kill(::getpid(), SIGKILL);
    ::pause();  // SIGKILL cannot be caught; this is never reached
  }
  return fault.error;
}

}  // namespace ember::io::faults
