// `ember train` under faults: non-finite losses and gradients (--nan-policy), and saves that fail
// (a full disk, injected through EMBER_FAULT_INJECT) without the run losing its state.
#include <gtest/gtest.h>

#include <cmath>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <optional>
#include <regex>
#include <sstream>
#include <string>
#include <vector>

#include "ember/ember.h"
#include "support/devices.h"
#include "support/error_of.h"
#include "support/fashion_mnist.h"
#include "support/inject_fault.h"
#include "support/small_fashion_mnist.h"
#include "support/temp_dir.h"
#include "train/trainer.h"

namespace {

using namespace ember;
using ember_test::error_of;
using ember_test::InjectFault;
using ember_test::TempDir;
namespace fs = std::filesystem;

std::string read_text(const fs::path& path) {
  std::ifstream in(path);
  std::stringstream s;
  s << in.rdbuf();
  return s.str();
}

// Every run below is compared bit for bit with another (or must meet the same step again), so all
// are --deterministic: on a GPU, cuDNN may otherwise pick algorithms whose sums come out in another
// order from run to run. CPU runs are deterministic either way.

// Adam with a learning rate of 1e30 makes the weights overflow within a few steps.
train::TrainOptions diverging(const fs::path& out) {
  train::TrainOptions o;
  o.deterministic = true;
  o.optimizer = "adam";
  o.lr = 1e30;
  o.limit = 256;
  o.epochs = 1;
  o.progress = train::ProgressStyle::Quiet;
  o.data = ember_test::small_fashion_mnist().string();
  o.out = out;
  return o;
}

bool all_finite(const io::Checkpoint& c) {
  for (const auto& [name, t] : c.model) {
    if (logical_not(isfinite(t)).sum().item<int64_t>() > 0) return false;
  }
  return true;
}

int64_t column_sum(const std::string& csv, const std::string& column) {
  std::istringstream in(csv);
  std::string header, line;
  std::getline(in, header);
  int index = 0;
  for (size_t pos = 0, next;
       (next = header.find(',', pos)) != std::string::npos && header.substr(pos, next - pos) != column; pos = next + 1)
    ++index;
  int64_t sum = 0;
  while (std::getline(in, line)) {
    std::istringstream row(line);
    std::string cell;
    for (int i = 0; i <= index; ++i) std::getline(row, cell, ',');
    sum += std::stoll(cell);
  }
  return sum;
}

}  // namespace

TEST(NanPolicy, ErrorStopsNamingTheStepAndSavesTheLastGoodState) {
  SKIP_WITHOUT_DATA();
  const TempDir dir("nan_error");
  std::ostringstream log;
  const std::string message = error_of([&] { train::train(diverging(dir.path()), log); });
  const std::regex shape(
      R"re(step (\d+) of epoch 1 \(step (\d+) of the run\): (the loss is (NaN|infinite)|the gradient of ))re");
  std::smatch m;
  ASSERT_TRUE(std::regex_search(message, m, shape)) << message;
  const int64_t bad_step = std::stoll(m[2]);
  EXPECT_GT(bad_step, 1);  // the first step starts from finite weights
  EXPECT_NE(message.find("Anomaly detection, re-running the step: Function '"), std::string::npos) << message;
  EXPECT_NE(message.find("--nan-policy skip"), std::string::npos) << message;

  // The checkpoint is the state after the last good step: finite, and one step short.
  const io::Checkpoint saved = io::load_checkpoint(dir.path() / "checkpoint.safetensors");
  EXPECT_EQ(saved.step, bad_step - 1);
  EXPECT_EQ(saved.loader.position, bad_step - 1);
  EXPECT_TRUE(all_finite(saved));

  // Resuming with the default policy meets the same step again, deterministically.
  train::TrainOptions again;
  again.progress = train::ProgressStyle::Quiet;
  const std::string second = error_of([&] { train::resume(dir.path(), again, log); });
  EXPECT_NE(second.find("step " + std::to_string(bad_step) + " of the run"), std::string::npos) << second;

  // With skip, the run finishes; the skipped steps are counted in metrics.csv.
  again.nan_policy = train::NanPolicy::Skip;
  std::ostringstream skip_log;
  const train::TrainResult done = train::resume(dir.path(), again, skip_log);
  EXPECT_EQ(done.epochs_completed, 1);
  EXPECT_NE(skip_log.str().find("step skipped (--nan-policy skip)"), std::string::npos) << skip_log.str();
  const int64_t skipped = column_sum(read_text(dir.path() / "metrics.csv"), "skipped_steps");
  EXPECT_GE(skipped, 1);
  EXPECT_LE(skipped, 4 - (bad_step - 1));
  EXPECT_TRUE(all_finite(io::load_checkpoint(dir.path() / "checkpoint.safetensors")));
}

TEST(NanPolicy, BothPoliciesGiveTheSameModelWhenAllIsFinite) {
  // The error policy also snapshots the random state and buffers before each step; neither
  // policy may change what a finite run computes.
  SKIP_WITHOUT_DATA();
  const TempDir a("nan_a"), b("nan_b");
  train::TrainOptions o;
  o.deterministic = true;
  o.limit = 256;
  o.epochs = 1;
  o.progress = train::ProgressStyle::Quiet;
  o.data = ember_test::small_fashion_mnist().string();
  std::ostringstream log;
  o.out = a.path();
  train::train(o, log);
  o.out = b.path();
  o.nan_policy = train::NanPolicy::Skip;
  train::train(o, log);
  const io::Checkpoint x = io::load_checkpoint(a.path() / "checkpoint.safetensors");
  const io::Checkpoint y = io::load_checkpoint(b.path() / "checkpoint.safetensors");
  for (const auto& [name, t] : x.model) EXPECT_TRUE(equal(t, y.model.at(name))) << name;
  EXPECT_EQ(column_sum(read_text(a.path() / "metrics.csv"), "skipped_steps"), 0);
}

TEST(SaveFailures, AFullDiskMidRunIsReportedAndTheNextSaveCatchesUp) {
  SKIP_WITHOUT_DATA();
  const TempDir dir("save_fail_mid");
  train::TrainOptions o;
  o.limit = 256;
  o.epochs = 2;
  o.progress = train::ProgressStyle::Quiet;
  o.data = ember_test::small_fashion_mnist().string();
  o.out = dir.path();
  std::ostringstream log;
  {
    InjectFault fault("ENOSPC:checkpoint.safetensors#1:byte=100");
    const train::TrainResult result = train::train(o, log);
    EXPECT_EQ(result.epochs_completed, 2);
  }
  const std::string text = log.str();
  EXPECT_NE(text.find("warning: could not save the checkpoint: "), std::string::npos) << text;
  EXPECT_NE(text.find("No space left on device"), std::string::npos) << text;
  EXPECT_NE(text.find("training goes on with its state in memory"), std::string::npos) << text;
  EXPECT_EQ(io::load_checkpoint(dir.path() / "checkpoint.safetensors").step, 8);
}

TEST(SaveFailures, BestWeightsWhoseSaveFailedAreKeptUntilSaved) {
  SKIP_WITHOUT_DATA();
  const TempDir dir("save_fail_best");
  train::TrainOptions o;
  o.limit = 256;
  o.epochs = 2;
  o.progress = train::ProgressStyle::Quiet;
  o.data = ember_test::small_fashion_mnist().string();
  o.out = dir.path();
  std::ostringstream log;
  InjectFault fault("EROFS:model.safetensors#1:open");
  train::train(o, log);
  EXPECT_NE(log.str().find("warning: could not save the best weights: "), std::string::npos) << log.str();
  EXPECT_TRUE(fs::exists(dir.path() / "model.safetensors"));
}

TEST(SaveFailures, TheLastSaveIsRetriedThenReportedAsAnError) {
  SKIP_WITHOUT_DATA();
  const TempDir ok_dir("save_fail_retry"), bad_dir("save_fail_final");
  train::TrainOptions o;
  o.limit = 128;
  o.epochs = 1;
  o.progress = train::ProgressStyle::Quiet;
  o.data = ember_test::small_fashion_mnist().string();
  o.save_retry_seconds = 1;
  {
    // The retry succeeds: only the first save of the checkpoint fails.
    InjectFault fault("ENOSPC:checkpoint.safetensors#1:sync");
    o.out = ok_dir.path();
    std::ostringstream log;
    train::train(o, log);
    EXPECT_NE(log.str().find("saved everything on retrying"), std::string::npos) << log.str();
    EXPECT_EQ(io::load_checkpoint(ok_dir.path() / "checkpoint.safetensors").step, 2);
  }
  {
    // Every retry fails too (a fault on each of the first 3 saves would need 3 settings; with no
    // retry time, the first failure is final).
    InjectFault fault("ENOSPC:checkpoint.safetensors#1:byte=0");
    o.out = bad_dir.path();
    o.save_retry_seconds = 0;
    std::ostringstream log;
    const std::string message = error_of([&] { train::train(o, log); });
    EXPECT_NE(message.find("could not save the checkpoint in '" + bad_dir.path().string() + "'"), std::string::npos)
        << message;
    EXPECT_FALSE(fs::exists(bad_dir.path() / "checkpoint.safetensors"));
    EXPECT_TRUE(fs::exists(bad_dir.path() / "model.safetensors"));  // what could be saved was
  }
}

// The trainer reads each step's verdict a step late (train/step_verdicts.h) and rebuilds the
// state that checking each step at once would leave. Under plain SGD a skipped step leaves what a
// step with zero gradients leaves, so a run skipping steps must end bit for bit where a run with
// those losses scaled by 0 ends: the weights, the dropout masks drawn (the generators' states),
// the momentum buffer, the step count. On a GPU the same holds, the flag then being read back
// from the device.
namespace {

train::TrainOptions plain_sgd(const fs::path& out, const std::string& model, double momentum, int64_t epochs,
                              const std::optional<std::string>& device) {
  train::TrainOptions o;
  o.model = model;
  o.optimizer = "sgd";
  o.lr = 0.05;
  o.momentum = momentum;
  o.limit = 256;  // 4 steps per epoch
  o.epochs = epochs;
  o.progress = train::ProgressStyle::Quiet;
  o.data = ember_test::small_fashion_mnist().string();
  o.out = out;
  o.device = device;
  o.deterministic = true;
  return o;
}

void expect_same_state(const fs::path& a, const fs::path& b) {
  const io::Checkpoint x = io::load_checkpoint(a / "checkpoint.safetensors");
  const io::Checkpoint y = io::load_checkpoint(b / "checkpoint.safetensors");
  for (const auto& [name, t] : x.model) EXPECT_TRUE(equal(t, y.model.at(name))) << name;
  ASSERT_EQ(x.optimizer.tensors.size(), y.optimizer.tensors.size());
  for (const auto& [name, t] : x.optimizer.tensors) EXPECT_TRUE(equal(t, y.optimizer.tensors.at(name))) << name;
  EXPECT_TRUE(equal(x.rng, y.rng));
  ASSERT_EQ(x.rng_cuda.defined(), y.rng_cuda.defined());
  if (x.rng_cuda.defined()) {
    EXPECT_TRUE(equal(x.rng_cuda, y.rng_cuda));
  }
  EXPECT_EQ(x.step, y.step);
  EXPECT_EQ(x.loader.epoch, y.loader.epoch);
  EXPECT_EQ(x.loader.position, y.loader.position);
}

struct SkipCase {
  std::string model;
  double momentum;
  std::vector<int64_t> bad_steps;  // of the run, from 1; 4 steps per epoch
  int64_t epochs = 1;
};

void expect_skips_leave_what_zero_steps_leave(const SkipCase& c, const std::optional<std::string>& device) {
  SCOPED_TRACE(c.model + ", bad steps from " + std::to_string(c.bad_steps.front()) + " on " +
               device.value_or("the best device"));
  const TempDir skipped("nan_skip_exact"), zeroed("nan_zero_exact");
  std::ostringstream log;
  train::TrainOptions o = plain_sgd(skipped.path(), c.model, c.momentum, c.epochs, device);
  o.nan_policy = train::NanPolicy::Skip;
  for (int64_t s : c.bad_steps) o.scale_loss_at_steps[s] = std::nan("");
  train::train(o, log);
  EXPECT_EQ(column_sum(read_text(skipped.path() / "metrics.csv"), "skipped_steps"),
            static_cast<int64_t>(c.bad_steps.size()))
      << log.str();

  o = plain_sgd(zeroed.path(), c.model, c.momentum, c.epochs, device);
  for (int64_t s : c.bad_steps) o.scale_loss_at_steps[s] = 0.0;
  train::train(o, log);
  expect_same_state(skipped.path(), zeroed.path());
}

// Adam keeps step counts on the host and the cnn draws dropout masks: the checkpoint saved at the
// non-finite step 3 must equal the one a run stopped after step 2 saves.
void expect_error_saves_the_state_before_the_step(const std::optional<std::string>& device) {
  const TempDir failed("nan_error_exact"), stopped("nan_stop_exact");
  std::ostringstream log;
  train::TrainOptions o = plain_sgd(failed.path(), "cnn", 0.0, 1, device);
  o.optimizer = "adam";
  o.lr = 1e-3;
  o.scale_loss_at_steps[3] = std::nan("");
  const std::string message = error_of([&] { train::train(o, log); });
  EXPECT_NE(message.find("step 3 of epoch 1 (step 3 of the run): the loss is NaN."), std::string::npos) << message;
  EXPECT_NE(message.find("Anomaly detection, re-running the step: Function 'MulBackward0'"), std::string::npos)
      << message;

  train::TrainOptions s = plain_sgd(stopped.path(), "cnn", 0.0, 1, device);
  s.optimizer = "adam";
  s.lr = 1e-3;
  s.stop_after_steps = 2;
  EXPECT_TRUE(train::train(s, log).interrupted);
  expect_same_state(failed.path(), stopped.path());

  // Resumed with skip, the run steps over it and finishes.
  train::TrainOptions again;
  again.progress = train::ProgressStyle::Quiet;
  again.device = device;
  again.nan_policy = train::NanPolicy::Skip;
  again.scale_loss_at_steps[3] = std::nan("");
  std::ostringstream skip_log;
  EXPECT_EQ(train::resume(failed.path(), again, skip_log).epochs_completed, 1);
  EXPECT_NE(skip_log.str().find("step 3 of epoch 1: the loss is NaN; step skipped"), std::string::npos)
      << skip_log.str();
  EXPECT_EQ(column_sum(read_text(failed.path() / "metrics.csv"), "skipped_steps"), 1);
}

}  // namespace

TEST(NanPolicy, SkippedStepsLeaveWhatZeroGradientsLeaveUnderPlainSgd) {
  SKIP_WITHOUT_DATA();
  const std::vector<SkipCase> cases = {
      {"cnn", 0.0, {2}},        // dropout: the skipped step's masks are drawn all the same
      {"mlp", 0.9, {1, 2}},     // the momentum buffer is created by the first step that is taken
      {"cnn", 0.0, {3, 4}},     // two in a row, the second the epoch's last
      {"mlp", 0.0, {4, 5}, 2},  // the last step of an epoch and the first of the next
  };
  for (const SkipCase& c : cases) expect_skips_leave_what_zero_steps_leave(c, std::nullopt);
}

TEST(NanPolicy, ErrorSavesExactlyTheStateBeforeTheStep) {
  SKIP_WITHOUT_DATA();
  expect_error_saves_the_state_before_the_step(std::nullopt);
}

class NanPolicyOnDevice : public ember_test::DeviceTest {};

TEST_P(NanPolicyOnDevice, SkippedAndStoppedStepsGiveWhatAnImmediateCheckGives) {
  SKIP_WITHOUT_DATA();
  expect_skips_leave_what_zero_steps_leave({"cnn", 0.0, {2, 3}}, device().str());
  expect_skips_leave_what_zero_steps_leave({"mlp", 0.9, {1}}, device().str());
  expect_error_saves_the_state_before_the_step(device().str());
}

EMBER_INSTANTIATE_DEVICE_SUITE(NanPolicyOnDevice);
