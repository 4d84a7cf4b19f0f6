#pragma once
// Faults injected into saves, for the tests that show a crash, a full disk or a read-only folder
// during a save loses nothing. Every file ember saves goes through AtomicFileWriter, which asks
// here at each step of a save whether to fail it.
//
// The environment variable EMBER_FAULT_INJECT arms one fault for the process:
//
//   EMBER_FAULT_INJECT=<action>:<file name>[#<n>]:<point>
//
//   action     kill           the process sends itself SIGKILL (a crash, an OOM kill, a power cut
//                             as far as this process's files are concerned)
//              ENOSPC, EDQUOT, EROFS, EACCES, EIO
//                             the step fails with that errno, through the real error path
//   file name  the saved file's name without its folder ("checkpoint.safetensors")
//   n          which save of that name, counting from 1 in this process (default 1)
//   point      open           creating the temporary file
//              byte=<k>       once k bytes of the file have been written (k=0: before the first)
//              sync           flushing the temporary file to disk
//              rename         moving it over the destination (before the move)
//              renamed        after the move, before the folder is synced
//
// Unset, it costs one getenv() per save. A malformed value is an ember::Error naming the variable.
#include <cstdint>
#include <filesystem>
#include <optional>
#include <string>
#include <string_view>

namespace ember::io::faults {

enum class FaultPoint { Open, Byte, Sync, Rename, Renamed };

struct Fault {
  bool kill = false;  // otherwise fail with `error`
  int error = 0;      // an errno value
  FaultPoint point = FaultPoint::Open;
  uint64_t byte = 0;  // for FaultPoint::Byte
};

/// Parses an EMBER_FAULT_INJECT value; nullopt for an empty one. Throws ember::Error when malformed.
struct FaultSpec {
  Fault fault;
  std::string file_name;
  int64_t occurrence = 1;
};
std::optional<FaultSpec> parse_fault_spec(std::string_view spec);

/// Called once per save of `path`: the fault armed for this save, if this is the save that
/// EMBER_FAULT_INJECT names (counting saves of each file name in this process).
std::optional<Fault> fault_for_save(const std::filesystem::path& path);

/// Carries out `fault` at its point: kills the process, or returns the errno to fail with.
int trigger(const Fault& fault);

}  // namespace ember::io::faults
