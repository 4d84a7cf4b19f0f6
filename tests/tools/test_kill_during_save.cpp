// `ember train` killed (SIGKILL) at many points while it writes a checkpoint: the checkpoint on
// disk always loads, and `--resume` from it ends with exactly the model of a run never killed.
// The kill comes from EMBER_FAULT_INJECT (src/io/fault_injection.h), which makes the process
// kill itself at a chosen byte or step of a chosen save, so every point is hit deterministically.
#include <fcntl.h>
#include <gtest/gtest.h>
#include <spawn.h>
#include <sys/wait.h>
#include <unistd.h>

#include <csignal>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <sstream>
#include <string>
#include <vector>

#include "ember/ember.h"
#include "support/fashion_mnist.h"
#include "support/small_fashion_mnist.h"
#include "support/temp_dir.h"
#include "train/curves.h"

extern char** environ;

namespace {

using namespace ember;
using ember_test::TempDir;
namespace fs = std::filesystem;

struct Exit {
  bool killed = false;  // by SIGKILL
  int code = -1;        // when it exited normally
  std::string output;   // stdout and stderr
};

// Runs the `ember` tool with `args`, adding EMBER_FAULT_INJECT=`fault` to the environment.
Exit run_ember(const std::vector<std::string>& args, const std::string& fault, const fs::path& log) {
  std::vector<std::string> env_strings;
  for (char** e = environ; *e != nullptr; ++e) {
    if (std::strncmp(*e, "EMBER_FAULT_INJECT=", 19) != 0) env_strings.emplace_back(*e);
  }
  if (!fault.empty()) env_strings.push_back("EMBER_FAULT_INJECT=" + fault);
  std::vector<char*> envp, argv;
  for (std::string& s : env_strings) envp.push_back(s.data());
  envp.push_back(nullptr);
  std::vector<std::string> arg_strings = {EMBER_CLI_PATH};
  arg_strings.insert(arg_strings.end(), args.begin(), args.end());
  for (std::string& s : arg_strings) argv.push_back(s.data());
  argv.push_back(nullptr);

  posix_spawn_file_actions_t actions;
  posix_spawn_file_actions_init(&actions);
  posix_spawn_file_actions_addopen(&actions, STDOUT_FILENO, log.c_str(), O_WRONLY | O_CREAT | O_TRUNC, 0644);
  posix_spawn_file_actions_adddup2(&actions, STDOUT_FILENO, STDERR_FILENO);
  pid_t pid = 0;
  const int rc = posix_spawn(&pid, EMBER_CLI_PATH, &actions, nullptr, argv.data(), envp.data());
  posix_spawn_file_actions_destroy(&actions);
  Exit result;
  if (rc != 0) {
    result.output = std::string("posix_spawn failed: ") + std::strerror(rc);
    return result;
  }
  int status = 0;
  while (::waitpid(pid, &status, 0) < 0 && errno == EINTR) {
  }
  result.killed = WIFSIGNALED(status) && WTERMSIG(status) == SIGKILL;
  if (WIFEXITED(status)) result.code = WEXITSTATUS(status);
  std::ifstream in(log);
  std::stringstream text;
  text << in.rdbuf();
  result.output = text.str();
  return result;
}

std::vector<std::string> train_args(const fs::path& out) {
  // 4 steps per epoch, one thread: quick, and the same arithmetic in every run.
  return {"train",   "--model",    "mlp",      "--data", ember_test::small_fashion_mnist().string(),
          "--limit", "256",        "--epochs", "2",      "--threads",
          "1",       "--progress", "quiet",    "--out",  out.string()};
}

std::vector<std::string> resume_args(const fs::path& out) {
  return {"train", "--resume", out.string(), "--threads", "1", "--progress", "quiet"};
}

// The model's tensors of two checkpoints, bit for bit.
void expect_same_model(const io::Checkpoint& a, const io::Checkpoint& b, const std::string& context) {
  ASSERT_EQ(a.model.size(), b.model.size()) << context;
  for (const auto& [name, tensor] : a.model) {
    const Tensor& other = b.model.at(name);
    ASSERT_EQ(tensor.nbytes(), other.nbytes()) << context << ": " << name;
    EXPECT_EQ(std::memcmp(tensor.data_ptr(), other.data_ptr(), tensor.nbytes()), 0)
        << context << ": " << name << " differs from the run that was never killed";
  }
}

}  // namespace

TEST(KillDuringSave, PreviousCheckpointAlwaysLoadsAndResumeContinuesExactly) {
  SKIP_WITHOUT_DATA();
  const TempDir scratch("kill_during_save");
  const fs::path reference = scratch.path() / "reference";
  const Exit ref = run_ember(train_args(reference), "", scratch.path() / "reference.log");
  ASSERT_EQ(ref.code, 0) << ref.output;
  const io::Checkpoint finished = io::load_checkpoint(reference / "checkpoint.safetensors");
  ASSERT_EQ(finished.step, 8);
  // Within a few bytes of the killed run's: the metadata holds timings, whose text varies.
  const uint64_t size = fs::file_size(reference / "checkpoint.safetensors");

  // Points in the second checkpoint's save (the end of epoch 2): creating the temporary file,
  // bytes into the header and the data, the end, the flush, the rename and just after it; then
  // points in other files of the same epoch's saves.
  struct Point {
    std::string fault;
    int64_t step_on_disk;  // the checkpoint the killed run leaves: epoch 1's, or epoch 2's once renamed
  };
  std::vector<Point> points;
  const std::string second = "kill:checkpoint.safetensors#2:";
  for (const std::string& p :
       {std::string("open"), std::string("byte=0"), std::string("byte=1"), std::string("byte=8"),
        std::string("byte=200"), "byte=" + std::to_string(size / 3), "byte=" + std::to_string(size / 2),
        "byte=" + std::to_string(size - 64), std::string("sync"), std::string("rename")})
    points.push_back({second + p, 4});
  points.push_back({second + "renamed", 8});
  points.push_back({"kill:metrics.csv#2:byte=20", 4});  // files saved before the checkpoint
  points.push_back({"kill:model.safetensors#2:byte=5000", 4});
  if (train::curves_available()) points.push_back({"kill:curves.png#2:byte=100", 4});

  int killed_runs = 0;
  for (size_t i = 0; i < points.size(); ++i) {
    const Point& point = points[i];
    SCOPED_TRACE(point.fault);
    const fs::path run = scratch.path() / ("run" + std::to_string(i));
    const Exit killed = run_ember(train_args(run), point.fault, scratch.path() / "killed.log");
    ASSERT_TRUE(killed.killed) << "the fault did not kill the run; exit code " << killed.code << "\n" << killed.output;
    ++killed_runs;

    // What the killed run left loads, and is the checkpoint expected at that point.
    const io::Checkpoint on_disk = io::load_checkpoint(run / "checkpoint.safetensors");
    EXPECT_EQ(on_disk.step, point.step_on_disk);

    const Exit resumed = run_ember(resume_args(run), "", scratch.path() / "resumed.log");
    ASSERT_EQ(resumed.code, 0) << resumed.output;
    const io::Checkpoint end = io::load_checkpoint(run / "checkpoint.safetensors");
    EXPECT_EQ(end.step, 8);
    expect_same_model(finished, end, point.fault);

    // The killed process's temporary file was removed by the next save of the same name.
    for (const auto& entry : fs::directory_iterator(run))
      EXPECT_EQ(entry.path().filename().string().find(".tmp-"), std::string::npos) << entry.path();
    fs::remove_all(run);
  }
  EXPECT_EQ(killed_runs, static_cast<int>(points.size()));
}

TEST(KillDuringSave, KilledBeforeTheFirstCheckpointLeavesNothingToResumeAndSaysSo) {
  SKIP_WITHOUT_DATA();
  const TempDir scratch("kill_before_first");
  const fs::path run = scratch.path() / "run";
  const Exit killed = run_ember(train_args(run), "kill:checkpoint.safetensors#1:byte=100", scratch.path() / "k.log");
  ASSERT_TRUE(killed.killed) << killed.output;
  const Exit resumed = run_ember(resume_args(run), "", scratch.path() / "r.log");
  EXPECT_EQ(resumed.code, 1);
  EXPECT_NE(resumed.output.find("has no checkpoint.safetensors"), std::string::npos) << resumed.output;
}
