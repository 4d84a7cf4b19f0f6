// Saves that fail part-way — a full disk, a read-only file system, a refused rename, a process
// killed mid-write — leave the previous file intact and say what went wrong. The faults are
// injected through EMBER_FAULT_INJECT (src/io/fault_injection.h), which drives the writer's real
// error paths; the kills are in tests/tools/test_kill_during_save.cpp.
#include <gtest/gtest.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <cstdlib>
#include <fstream>
#include <sstream>

#include "ember/ember.h"
#include "ember/io/atomic_file.h"
#include "io/fault_injection.h"
#include "support/error_of.h"
#include "support/inject_fault.h"
#include "support/temp_dir.h"

using namespace ember;
using ember_test::error_of;
using ember_test::InjectFault;
using ember_test::TempDir;

namespace {

std::string read_all(const std::filesystem::path& path) {
  std::ifstream in(path, std::ios::binary);
  std::ostringstream s;
  s << in.rdbuf();
  return s.str();
}

int count_files(const std::filesystem::path& dir) {
  int n = 0;
  for ([[maybe_unused]] const auto& e : std::filesystem::directory_iterator(dir)) ++n;
  return n;
}

io::NamedTensors weights(float value) { return {{"w", full({64, 64}, value)}, {"b", zeros({64})}}; }

}  // namespace

TEST(FaultSpec, ParsesEveryActionAndPoint) {
  using io::faults::FaultPoint;
  auto spec = io::faults::parse_fault_spec("kill:checkpoint.safetensors#2:byte=4096");
  ASSERT_TRUE(spec);
  EXPECT_TRUE(spec->fault.kill);
  EXPECT_EQ(spec->file_name, "checkpoint.safetensors");
  EXPECT_EQ(spec->occurrence, 2);
  EXPECT_EQ(spec->fault.point, FaultPoint::Byte);
  EXPECT_EQ(spec->fault.byte, 4096u);
  spec = io::faults::parse_fault_spec("ENOSPC:metrics.csv:sync");
  ASSERT_TRUE(spec);
  EXPECT_EQ(spec->fault.error, ENOSPC);
  EXPECT_EQ(spec->occurrence, 1);
  EXPECT_EQ(spec->fault.point, FaultPoint::Sync);
  EXPECT_EQ(io::faults::parse_fault_spec("EROFS:a:open")->fault.point, FaultPoint::Open);
  EXPECT_EQ(io::faults::parse_fault_spec("EIO:a:rename")->fault.point, FaultPoint::Rename);
  EXPECT_EQ(io::faults::parse_fault_spec("EACCES:a:renamed")->fault.point, FaultPoint::Renamed);
  EXPECT_FALSE(io::faults::parse_fault_spec(""));
}

TEST(FaultSpec, MalformedValuesNameTheVariable) {
  for (const char* bad : {"kill", "kill:a", "explode:a:open", "kill:a#0:open", "kill:a#x:open", "kill:dir/a:open",
                          "kill::open", "kill:a:byte=-1", "kill:a:byte=", "kill:a:later"}) {
    const std::string message = error_of([&] { io::faults::parse_fault_spec(bad); });
    EXPECT_NE(message.find("EMBER_FAULT_INJECT='"), std::string::npos) << bad << ": " << message;
  }
}

TEST(SaveFaults, FullDiskMidWriteKeepsThePreviousFileAndSaysSo) {
  TempDir dir("save_faults");
  const auto path = dir.path() / "w.safetensors";
  io::save_safetensors(path, weights(1));
  const std::string before = read_all(path);
  for (const char* point : {"byte=0", "byte=8", "byte=100", "byte=9000", "sync"}) {
    InjectFault fault(std::string("ENOSPC:w.safetensors:") + point);
    const std::string message = error_of([&] { io::save_safetensors(path, weights(2)); });
    EXPECT_NE(message.find("No space left on device"), std::string::npos) << point << ": " << message;
    EXPECT_NE(message.find("is full: free space there, or save somewhere else"), std::string::npos) << message;
    EXPECT_NE(message.find(path.string()), std::string::npos) << message;
    EXPECT_EQ(read_all(path), before) << point;
    EXPECT_EQ(count_files(dir.path()), 1) << point << ": the temporary file was left behind";
  }
  io::save_safetensors(path, weights(3));  // with the fault gone, saving works again
  EXPECT_EQ(io::load_safetensors(path).at("w")[0][0].item<float>(), 3.f);
}

TEST(SaveFaults, ReadOnlyFileSystemAndRefusedRenameKeepThePreviousFile) {
  TempDir dir("save_faults");
  const auto path = dir.path() / "metrics.csv";
  io::write_file_atomically(path, "old");
  {
    InjectFault fault("EROFS:metrics.csv:open");
    const std::string message = error_of([&] { io::write_file_atomically(path, "new"); });
    EXPECT_NE(message.find("Read-only file system"), std::string::npos) << message;
    EXPECT_NE(message.find("is on a read-only file system: save somewhere else"), std::string::npos) << message;
  }
  {
    InjectFault fault("EACCES:metrics.csv:rename");
    const std::string message = error_of([&] { io::write_file_atomically(path, "new"); });
    EXPECT_NE(message.find("cannot move the temporary file"), std::string::npos) << message;
    EXPECT_NE(message.find("no permission to write in"), std::string::npos) << message;
  }
  EXPECT_EQ(read_all(path), "old");
  EXPECT_EQ(count_files(dir.path()), 1);
}

TEST(SaveFaults, OnlyTheNamedSaveFails) {
  TempDir dir("save_faults");
  const auto path = dir.path() / "c.txt";
  InjectFault fault("EIO:c.txt#3:byte=1");
  io::write_file_atomically(path, "one");
  io::write_file_atomically(dir.path() / "other.txt", "x");  // another name is not counted
  io::write_file_atomically(path, "two");
  EXPECT_NE(error_of([&] { io::write_file_atomically(path, "three"); }).find("Input/output error"), std::string::npos);
  io::write_file_atomically(path, "four");
  EXPECT_EQ(read_all(path), "four");
}

TEST(SaveFaults, AFailureAfterTheRenameReportsIt) {
  // The new file is in place, but its folder entry may not be durable: that is still an error.
  TempDir dir("save_faults");
  const auto path = dir.path() / "c.txt";
  InjectFault fault("EIO:c.txt:renamed");
  EXPECT_NE(error_of([&] { io::write_file_atomically(path, "new"); }).find("cannot sync the folder"),
            std::string::npos);
  EXPECT_EQ(read_all(path), "new");
}

TEST(SaveFaults, TemporaryFilesOfDeadProcessesAreRemoved) {
  TempDir dir("save_faults");
  const auto path = dir.path() / "checkpoint.safetensors";
  // pid_max is at most 2^22 on Linux, so this process cannot exist; the live one is ours.
  const auto dead = dir.path() / "checkpoint.safetensors.tmp-999999999-0";
  const auto live = dir.path() / ("checkpoint.safetensors.tmp-" + std::to_string(::getpid()) + "-77");
  const auto unrelated = dir.path() / "model.safetensors.tmp-999999999-0";
  for (const auto& p : {dead, live, unrelated}) std::ofstream(p) << "partial";
  io::save_safetensors(path, weights(1));
  EXPECT_FALSE(std::filesystem::exists(dead));
  EXPECT_TRUE(std::filesystem::exists(live));
  EXPECT_TRUE(std::filesystem::exists(unrelated));
}

TEST(SaveFaults, RealReadOnlyFolder) {
  if (::geteuid() == 0) GTEST_SKIP() << "running as root, which may write into a read-only folder";
  TempDir dir("save_faults");
  const auto path = dir.path() / "w.safetensors";
  io::save_safetensors(path, weights(1));
  ASSERT_EQ(::chmod(dir.path().c_str(), 0555), 0);
  const std::string message = error_of([&] { io::save_safetensors(path, weights(2)); });
  ::chmod(dir.path().c_str(), 0755);
  EXPECT_NE(message.find("Permission denied"), std::string::npos) << message;
  EXPECT_NE(message.find("no permission to write in"), std::string::npos) << message;
  EXPECT_EQ(io::load_safetensors(path).at("w")[0][0].item<float>(), 1.f);
}
