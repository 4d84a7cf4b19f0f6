// `ember train` as a library: option resolution, the run directory, an end-to-end run on the real
// Fashion-MNIST files, and interrupt-then-resume giving the very same model as an unbroken run.
#include <gtest/gtest.h>

#include <cmath>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <optional>
#include <sstream>

#include "ember/backends.h"
#include "ember/ember.h"
#include "support/devices.h"
#include "support/error_of.h"
#include "support/fashion_mnist.h"
#include "support/small_fashion_mnist.h"
#include "support/temp_dir.h"
#include "train/curves.h"
#include "train/progress.h"
#include "train/trainer.h"

namespace {

using namespace ember;
using ember_test::error_of;
using ember_test::TempDir;
namespace fs = std::filesystem;

std::string read_text(const fs::path& path) {
  std::ifstream in(path);
  std::stringstream s;
  s << in.rdbuf();
  return s.str();
}

TEST(Progress, FormatsCountsAndDurations) {
  EXPECT_EQ(train::Progress::format_count(0), "0");
  EXPECT_EQ(train::Progress::format_count(999), "999");
  EXPECT_EQ(train::Progress::format_count(12345.4), "12,345");
  EXPECT_EQ(train::Progress::format_count(1234567), "1,234,567");
  EXPECT_EQ(train::Progress::format_duration(5), "0:05");
  EXPECT_EQ(train::Progress::format_duration(65), "1:05");
  EXPECT_EQ(train::Progress::format_duration(43389), "12:03:09");
  EXPECT_EQ(train::Progress::format_duration(NAN), "?");
}

TEST(Progress, PlainLinesCarryStepLossAndRate) {
  std::ostringstream out;
  train::Progress progress(out, train::ProgressStyle::Lines);
  progress.start_epoch(2, 5, 100, 0);
  progress.update(100, 0.25, 6400);
  progress.finish_epoch();
  std::ostringstream bar_out;
  train::Progress bar(bar_out, train::ProgressStyle::Bar);
  bar.start_epoch(2, 5, 100, 0);
  bar.update(100, 0.25, 6400);
  bar.finish_epoch();
  EXPECT_NE(bar_out.str().find("epoch 2/5 [########################] step 100/100  loss 0.2500"), std::string::npos)
      << bar_out.str();
  EXPECT_EQ(out.str(), "");  // plain lines come every few seconds, not per step
}

TEST(TrainOptions, RecipesFillWhatIsUnset) {
  train::TrainOptions o;
  train::RunConfig c = train::resolve(o);
  EXPECT_EQ(c.model, "mlp");
  EXPECT_EQ(c.optimizer, "adam");
  EXPECT_EQ(c.lr, 1e-3);
  EXPECT_EQ(c.scheduler, "cosine");
  EXPECT_EQ(c.batch_size, 64);
  EXPECT_EQ(c.data, data::kFashionMnistDir);

  o.model = "cnn";
  c = train::resolve(o);
  EXPECT_EQ(c.optimizer, "adadelta");
  EXPECT_EQ(c.lr, 1.0);
  EXPECT_EQ(c.scheduler, "step");

  // The quickstart recipe runs without a schedule, as the PyTorch script does.
  o = {};
  o.optimizer = "sgd";
  o.lr = 1e-3;
  c = train::resolve(o);
  EXPECT_EQ(c.scheduler, "none");
  EXPECT_EQ(c.lr, 1e-3);

  // RMSprop: PyTorch's default rate, with momentum if asked.
  o = {};
  o.optimizer = "rmsprop";
  o.momentum = 0.9;
  c = train::resolve(o);
  EXPECT_EQ(c.lr, 1e-2);
  EXPECT_EQ(c.momentum, 0.9);
  EXPECT_EQ(c.scheduler, "cosine");
}

TEST(TrainOptions, BadValuesNameTheFlag) {
  auto message = [](auto change) {
    train::TrainOptions o;
    change(o);
    return error_of([&] { train::resolve(o); });
  };
  EXPECT_EQ(message([](auto& o) { o.model = "resnet"; }), "--model 'resnet' is not one of: mlp, cnn");
  EXPECT_EQ(message([](auto& o) { o.optimizer = "lbfgs"; }),
            "--optimizer 'lbfgs' is not one of: sgd, adam, adamw, adadelta, rmsprop");
  EXPECT_NE(message([](auto& o) { o.lr = -1.0; }).find("--lr must be a positive number"), std::string::npos);
  EXPECT_NE(message([](auto& o) { o.batch_size = 0; }).find("--batch-size must be at least 1"), std::string::npos);
  EXPECT_NE(message([](auto& o) { o.epochs = 0; }).find("--epochs must be at least 1"), std::string::npos);
  EXPECT_EQ(message([](auto& o) { o.momentum = 0.9; }), "--momentum applies to --optimizer sgd and rmsprop only");
  EXPECT_NE(message([](auto& o) { o.limit = 0; }).find("--limit must be at least 1"), std::string::npos);
}

TEST(TrainRun, MissingDataIsAClearErrorAndLeavesNoRunBehind) {
  const TempDir dir("trainer_nodata");
  const fs::path out = dir.path();
  train::TrainOptions o;
  o.data = "/nonexistent/fashion";
  o.out = out;
  std::ostringstream log;
  const std::string msg = error_of([&] { train::train(o, log); });
  EXPECT_NE(msg.find("/nonexistent/fashion"), std::string::npos) << msg;
  EXPECT_FALSE(fs::exists(out / "config.json"));
}

TEST(TrainRun, EndToEndOnFashionMnist) {
  SKIP_WITHOUT_DATA();
  const TempDir dir("trainer_e2e");
  const fs::path out = dir.path();
  train::TrainOptions o;
  o.limit = 9600;  // 150 steps per epoch, 300 in all
  o.epochs = 2;
  o.out = out;
  o.progress = train::ProgressStyle::Lines;
  std::ostringstream log;
  const train::TrainResult result = train::train(o, log);
  EXPECT_FALSE(result.interrupted);
  EXPECT_EQ(result.epochs_completed, 2);
  EXPECT_GT(result.last_accuracy, 0.78) << log.str();

  for (const char* file : {"config.json", "metrics.csv", "model.safetensors", "checkpoint.safetensors"})
    EXPECT_TRUE(fs::exists(out / file)) << file;
  // A build without cairo says so in the banner and draws nothing.
  EXPECT_EQ(fs::exists(out / "curves.png"), train::curves_available());
  EXPECT_EQ(log.str().find("curves.png is not drawn") == std::string::npos, train::curves_available()) << log.str();
  bool events = false;
  for (const auto& entry : fs::directory_iterator(out))
    events |= entry.path().filename().string().starts_with("events.out.tfevents.");
  EXPECT_TRUE(events);

  // metrics.csv: the header, then two epochs whose training loss falls.
  std::istringstream csv(read_text(out / "metrics.csv"));
  std::string header, row1, row2;
  std::getline(csv, header);
  std::getline(csv, row1);
  std::getline(csv, row2);
  EXPECT_EQ(header,
            "epoch,train_loss,test_loss,test_accuracy,train_seconds,samples_per_second,peak_gpu_mib,skipped_steps");
  const double loss1 = std::stod(row1.substr(row1.find(',') + 1));
  const double loss2 = std::stod(row2.substr(row2.find(',') + 1));
  EXPECT_LT(loss2, loss1);
  EXPECT_LT(loss1, 1.0);

  // The weights carry the PyTorch quickstart's state_dict keys.
  const io::SafetensorsData weights = io::load_safetensors(out / "model.safetensors");
  EXPECT_EQ(weights.names().size(), 6u);
  EXPECT_TRUE(weights.contains("linear_relu_stack.0.weight"));
  EXPECT_TRUE(weights.contains("linear_relu_stack.4.bias"));

  // `ember eval` reads back the best epoch's accuracy.
  const train::EvalResult eval = train::evaluate_run(out, std::nullopt, std::string("cpu"));
  EXPECT_EQ(eval.total, 10000);
  EXPECT_DOUBLE_EQ(eval.accuracy(), result.best_accuracy);
  EXPECT_NE(read_text(out / "config.json").find("\"model\": \"mlp\""), std::string::npos);

  // A second run into the same folder is refused rather than overwriting it.
  const std::string again = error_of([&] { train::train(o, log); });
  EXPECT_NE(again.find("already holds a run"), std::string::npos) << again;
}

void expect_same_tensors(const fs::path& a, const fs::path& b) {
  const io::SafetensorsData x = io::load_safetensors(a), y = io::load_safetensors(b);
  ASSERT_EQ(x.names(), y.names());
  for (const auto& [name, tensor] : x.tensors) {
    if (name == "rng.cpu") continue;
    const Tensor& other = y.at(name);
    ASSERT_EQ(tensor.sizes().vec(), other.sizes().vec()) << name;
    EXPECT_EQ(std::memcmp(tensor.data_ptr(), other.data_ptr(), tensor.nbytes()), 0) << name << " differs";
  }
}

// Resumed from its checkpoint, a run goes on exactly where it stopped: with the default recipe,
// with RMSprop and momentum (whose state holds three tensors per parameter), and on a GPU with
// the cnn, whose dropout draws from the GPU's generator. The runs are --deterministic: on a GPU,
// cuDNN may otherwise pick algorithms whose sums come out in another order from run to run (the
// CPU is deterministic either way), and the resumed run must keep the flag from config.json.
void expect_resume_equals_unbroken(const std::string& optimizer, double momentum, const std::string& model = "mlp",
                                   const std::optional<std::string>& device = std::nullopt, bool amp = false) {
  SCOPED_TRACE(optimizer + " " + model + " " + device.value_or("best device") + (amp ? " amp" : ""));
  const TempDir unbroken_dir("trainer_unbroken"), broken_dir("trainer_broken");
  const fs::path unbroken = unbroken_dir.path(), broken = broken_dir.path();
  train::TrainOptions o;
  o.model = model;
  o.device = device;
  if (!optimizer.empty()) o.optimizer = optimizer;
  o.momentum = momentum;
  o.amp = amp;
  o.deterministic = true;
  o.limit = 640;  // 10 steps per epoch
  o.data = ember_test::small_fashion_mnist().string();
  o.epochs = 2;
  o.progress = train::ProgressStyle::Quiet;
  std::ostringstream log;
  o.out = unbroken;
  train::train(o, log);
  EXPECT_FALSE(are_deterministic_algorithms_enabled());  // the run's switches end with it
  EXPECT_FALSE(backends::cudnn::deterministic());
  EXPECT_NE(read_text(unbroken / "config.json").find("\"deterministic\": true"), std::string::npos);

  o.out = broken;
  o.stop_after_steps = 13;  // mid-way through the second epoch
  const train::TrainResult stopped = train::train(o, log);
  EXPECT_TRUE(stopped.interrupted);
  EXPECT_EQ(stopped.epochs_completed, 1);

  train::TrainOptions again;
  again.progress = train::ProgressStyle::Quiet;
  again.device = device;
  std::ostringstream resume_log;
  const train::TrainResult resumed = train::resume(broken, again, resume_log);
  EXPECT_NE(resume_log.str().find(", deterministic algorithms"), std::string::npos) << resume_log.str();
  EXPECT_NE(read_text(broken / "config.json").find("\"deterministic\": true"), std::string::npos);
  EXPECT_FALSE(resumed.interrupted);
  EXPECT_EQ(resumed.epochs_completed, 2);

  expect_same_tensors(unbroken / "checkpoint.safetensors", broken / "checkpoint.safetensors");
  expect_same_tensors(unbroken / "model.safetensors", broken / "model.safetensors");
  // Loss and accuracy columns agree too (the timing columns do not).
  auto without_timing = [](const std::string& csv) {
    std::istringstream in(csv);
    std::string line, out;
    while (std::getline(in, line)) {
      size_t cut = 0;
      for (int i = 0; i < 4; ++i) cut = line.find(',', cut + 1);
      out += line.substr(0, cut) + "\n";
    }
    return out;
  };
  EXPECT_EQ(without_timing(read_text(unbroken / "metrics.csv")), without_timing(read_text(broken / "metrics.csv")));
  // Every epoch's training loss is counted in that epoch (on a GPU it is summed on the device and
  // must be read back before the epoch's line is written).
  std::istringstream rows(read_text(unbroken / "metrics.csv"));
  std::string row;
  std::getline(rows, row);  // the header
  while (std::getline(rows, row)) {
    const size_t loss_at = row.find(',') + 1;
    EXPECT_GT(std::stod(row.substr(loss_at, row.find(',', loss_at) - loss_at)), 0.1) << row;
  }

  // Resuming a finished run trains nothing and says so.
  std::ostringstream done_log;
  EXPECT_EQ(train::resume(broken, again, done_log).epochs_completed, 2);
  EXPECT_NE(done_log.str().find("already completed"), std::string::npos);
}

TEST(TrainRun, InterruptedThenResumedEqualsUnbroken) {
  SKIP_WITHOUT_DATA();
  expect_resume_equals_unbroken("", 0.0);
  expect_resume_equals_unbroken("rmsprop", 0.9);
  expect_resume_equals_unbroken("", 0.0, "mlp", std::string("cpu"), /*amp=*/true);  // --amp is kept
}

// --amp: bfloat16 forward passes train about as well as float32 ones, and the run records it.
TEST(TrainRun, MixedPrecisionTrainsAndIsRecorded) {
  SKIP_WITHOUT_DATA();
  const TempDir dir("trainer_amp");
  train::TrainOptions o;
  o.limit = 9600;
  o.epochs = 1;
  o.amp = true;
  o.device = "cpu";
  o.out = dir.path();
  o.progress = train::ProgressStyle::Quiet;
  std::ostringstream log;
  const train::TrainResult result = train::train(o, log);
  EXPECT_GT(result.last_accuracy, 0.74) << log.str();
  EXPECT_NE(log.str().find("mixed precision (bfloat16)"), std::string::npos) << log.str();
  EXPECT_NE(read_text(dir.path() / "config.json").find("\"amp\": true"), std::string::npos);
  // The weights stay float32 (PyTorch loads them as they are), and `ember eval` evaluates as the
  // run did, in a bfloat16 region: the best epoch's accuracy again.
  const io::SafetensorsData weights = io::load_safetensors(dir.path() / "model.safetensors");
  for (const auto& [name, t] : weights.tensors) EXPECT_EQ(t.dtype(), kFloat32) << name;
  const train::EvalResult eval = train::evaluate_run(dir.path(), std::nullopt, std::string("cpu"));
  EXPECT_DOUBLE_EQ(eval.accuracy(), result.best_accuracy);
}

class TrainRunOnDevice : public ember_test::DeviceTest {};

TEST_P(TrainRunOnDevice, CnnInterruptedThenResumedEqualsUnbroken) {
  SKIP_WITHOUT_DATA();
  expect_resume_equals_unbroken("", 0.0, "cnn", device().str());
}

EMBER_INSTANTIATE_DEVICE_SUITE(TrainRunOnDevice);

TEST(TrainRun, ResumeNeedsARunDirectory) {
  std::ostringstream log;
  const std::string msg = error_of([&] { train::resume("/nonexistent/run", {}, log); });
  EXPECT_NE(msg.find("/nonexistent/run/config.json"), std::string::npos) << msg;
}

}  // namespace
