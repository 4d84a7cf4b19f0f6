// The `ember` command-line tool. Each subcommand registers its options with CLI11 and hands back
// the action to run; actions run only after the whole command line parsed, outside CLI11, so that
// one place turns ember::Error into "error: ..." and exit code 1, and usage errors into exit code 2.
#include <CLI/CLI.hpp>
#include <cstdio>
#include <cstdlib>
#include <exception>
#include <functional>
#include <iostream>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "ember/ember.h"
#include "train/convert.h"
#include "train/models.h"
#include "train/trainer.h"

namespace {

constexpr int kExitUsage = 2;
// What shells report for a process ended by Ctrl-C; `ember train` returns it after saving.
constexpr int kExitInterrupted = 130;

struct Subcommand {
  CLI::App* parser;
  std::function<int()> run;
};

// Python's spelling, because the walkthrough this command mirrors prints torch.cuda.is_available().
const char* python_bool(bool value) { return value ? "True" : "False"; }

std::string availability(bool available, const std::string& reason) {
  std::string text = python_bool(available);
  if (!available && !reason.empty()) text += " (" + reason + ")";
  return text;
}

std::string indented(const std::string& text) {
  std::string out;
  bool line_start = true;
  for (char c : text) {
    if (line_start) out += "  ";
    out += c;
    line_start = c == '\n';
  }
  if (!out.empty() && out.back() != '\n') out += '\n';
  return out;
}

int run_devices() {
  // Ask everything before printing anything: a bad EMBER_DEVICE then ends the command with a
  // single error line instead of half a report.
  const bool cuda = ember::cuda::is_available();
  const std::string cuda_reason = cuda ? std::string() : ember::cuda::unavailable_reason();
  const int cuda_count = ember::cuda::device_count();
  const bool mps = ember::mps::is_available();
  const std::string mps_reason = mps ? std::string() : ember::mps::unavailable_reason();
  const ember::Device chosen = ember::best_device();
  const std::string report = ember::device_report();

  const bool overridden = std::getenv("EMBER_DEVICE") != nullptr;

  std::cout << "CUDA available: " << availability(cuda, cuda_reason) << "\n"
            << "CUDA devices:   " << cuda_count << "\n"
            << "MPS available:  " << availability(mps, mps_reason) << "\n"
            << "Chosen device:  " << chosen << (overridden ? " (set by EMBER_DEVICE)" : "") << "\n"
            << "\nDetails:\n"
            << indented(report);
  return 0;
}

Subcommand add_devices(CLI::App& app) {
  CLI::App* parser = app.add_subcommand(
      "devices", "Show which devices (CUDA, MPS, CPU) this build can use, why not, and which one it picks");
  return {parser, run_devices};
}

// Options of `ember train` that --resume takes from the run's config.json instead.
const std::vector<std::string> kFixedByRun = {"--model",     "--optimizer",  "--lr",   "--momentum",
                                              "--scheduler", "--batch-size", "--seed", "--data",
                                              "--limit",     "--out",        "--amp",  "--deterministic"};

Subcommand add_train(CLI::App& app) {
  CLI::App* cmd = app.add_subcommand("train", "Train a network on Fashion-MNIST (or another MNIST-format data set)");
  auto options = std::make_shared<ember::train::TrainOptions>();
  auto resume = std::make_shared<std::string>();
  auto progress = std::make_shared<std::string>("auto");
  cmd->add_option("--model", options->model, "Network: mlp (PyTorch quickstart) or cnn (pytorch/examples MNIST)")
      ->capture_default_str();
  cmd->add_option("--optimizer", options->optimizer,
                  "sgd, adam, adamw, adadelta or rmsprop [mlp: adam, cnn: adadelta]");
  cmd->add_option("--lr", options->lr, "Learning rate [adam/adamw: 1e-3, sgd/rmsprop: 1e-2, adadelta: 1.0]");
  cmd->add_option("--momentum", options->momentum, "SGD or RMSprop momentum")->capture_default_str();
  cmd->add_option("--scheduler", options->scheduler,
                  "Learning-rate schedule per epoch: none, step (x0.7), cosine [adam/adamw/rmsprop: "
                  "cosine, adadelta: step, sgd: none]");
  cmd->add_option("--batch-size", options->batch_size, "Training batch size [64]");
  cmd->add_option("--epochs", options->epochs, "Epochs [mlp: 10, cnn: 5]; with --resume, may raise the run's");
  cmd->add_option("--seed", options->seed, "Seed for initialisation, shuffling and dropout")->capture_default_str();
  cmd->add_option("--data", options->data, "Folder with the four IDX files [/usr/share/datasets/fashion-mnist]");
  cmd->add_option("--limit", options->limit, "Train on the first N training images only");
  cmd->add_option("--out", options->out, "Run directory [runs/<date>-<time>]");
  cmd->add_option("--resume", *resume, "Continue the run in this directory from its last checkpoint");
  cmd->add_option("--device", options->device, "cpu, cuda, cuda:N, mps [the best available]");
  cmd->add_option("--threads", options->threads, "CPU threads [all cores, or OMP_NUM_THREADS]");
  cmd->add_option("--progress", *progress, "auto, bar, lines or quiet")
      ->check(CLI::IsMember({"auto", "bar", "lines", "quiet"}))
      ->capture_default_str();
  auto nan_policy = std::make_shared<std::string>("error");
  cmd->add_option("--nan-policy", *nan_policy,
                  "A NaN or infinite loss or gradient: error (save the last good state and stop, naming the step, "
                  "tensor and op) or skip (skip that step and go on)")
      ->check(CLI::IsMember({"error", "skip"}))
      ->capture_default_str();
  cmd->add_flag("--amp", options->amp,
                "Mixed precision: forward passes and losses in bfloat16 (torch.autocast), parameters in float32");
  cmd->add_flag("--deterministic", options->deterministic,
                "Deterministic algorithms (torch.use_deterministic_algorithms, cuDNN deterministic, no "
                "benchmarking): a GPU run repeats bit for bit, and resumes as if never stopped");
  cmd->add_flag("--detect-anomaly", options->detect_anomaly,
                "Check every backward function for NaN (slow): names the op that produced the first one");
  // For tests of interruption and resume (tests/distributed/mpi/check_train.sh): not in --help.
  cmd->add_option("--stop-after-steps", options->stop_after_steps,
                  "Stop as Ctrl-C does after this many optimizer steps")
      ->group("");
  auto run = [cmd, options, resume, progress, nan_policy]() {
    using ember::train::ProgressStyle;
    options->progress = *progress == "bar"     ? ProgressStyle::Bar
                        : *progress == "lines" ? ProgressStyle::Lines
                        : *progress == "quiet" ? ProgressStyle::Quiet
                                               : ProgressStyle::Auto;
    options->nan_policy = *nan_policy == "skip" ? ember::train::NanPolicy::Skip : ember::train::NanPolicy::Error;
    ember::train::TrainResult result;
    if (!resume->empty()) {
      for (const std::string& flag : kFixedByRun) {
        if (cmd->count(flag) > 0)
          throw ember::Error(flag + " cannot be combined with --resume: the run keeps the settings in its config.json");
      }
      result = ember::train::resume(*resume, *options, std::cout);
    } else {
      result = ember::train::train(*options, std::cout);
    }
    return result.interrupted ? kExitInterrupted : 0;
  };
  return {cmd, run};
}

Subcommand add_eval(CLI::App& app) {
  CLI::App* cmd = app.add_subcommand("eval", "Print the test accuracy of a run's best weights");
  auto run_dir = std::make_shared<std::string>();
  auto data = std::make_shared<std::optional<std::string>>();
  auto device = std::make_shared<std::optional<std::string>>();
  cmd->add_option("RUN_DIR", *run_dir, "A directory written by `ember train`")->required();
  cmd->add_option("--data", *data, "Folder with the IDX files [the one the run was trained on]");
  cmd->add_option("--device", *device, "cpu, cuda, cuda:N, mps [the best available]");
  auto run = [run_dir, data, device]() {
    const ember::train::EvalResult r = ember::train::evaluate_run(*run_dir, *data, *device);
    std::printf("test accuracy %.2f%% (%lld/%lld), test loss %.4f\n", 100 * r.accuracy(),
                static_cast<long long>(r.correct), static_cast<long long>(r.total), r.loss);
    return 0;
  };
  return {cmd, run};
}

Subcommand add_convert(CLI::App& app) {
  CLI::App* cmd = app.add_subcommand(
      "convert", "Convert weights between safetensors, PyTorch (torch.save: .pt/.pth/.bin) and NumPy (.npz) files");
  auto input = std::make_shared<std::string>();
  auto output = std::make_shared<std::string>();
  auto key = std::make_shared<std::optional<std::string>>();
  cmd->add_option("INPUT", *input, "The file to read; its extension names its format")->required();
  cmd->add_option("OUTPUT", *output, "The file to write (replaced atomically); its extension names its format")
      ->required();
  cmd->add_option("--key", *key,
                  "Where the state_dict sits in a checkpoint: a torch.save'd dict's entry (model, state_dict), "
                  "or the name prefix in safetensors and npz files (an ember checkpoint's is model)");
  auto run = [input, output, key]() {
    const ember::train::ConvertResult r = ember::train::convert_weights(*input, *output, *key);
    std::printf("wrote %zu tensors from %s (%s) to %s (%s)\n", r.tensors, input->c_str(), r.source_format.c_str(),
                output->c_str(), r.target_format.c_str());
    return 0;
  };
  return {cmd, run};
}

int run(int argc, char** argv) {
  CLI::App app{"ember: a C++20 deep-learning library and trainer", "ember"};
  app.set_version_flag("--version", std::string("ember ") + ember::kVersion, "Print the version and exit");
  app.require_subcommand(0, 1);

  const std::vector<Subcommand> subcommands = {add_devices(app), add_train(app), add_eval(app), add_convert(app)};

  try {
    app.parse(argc, argv);
  } catch (const CLI::ExtrasError& e) {
    // CLI11 would say "argument was not expected"; a mistyped command deserves its own message.
    const std::vector<std::string> extras = app.remaining();
    if (app.get_subcommands().empty() && !extras.empty() && !extras.front().starts_with('-')) {
      std::cerr << "error: unknown command '" << extras.front() << "'\nRun with --help for the list of commands.\n";
      return kExitUsage;
    }
    app.exit(e);
    return kExitUsage;
  } catch (const CLI::ParseError& e) {
    // --help and --version arrive here as well, with exit code 0.
    const int code = app.exit(e);
    return code == 0 ? 0 : kExitUsage;
  }

  for (const Subcommand& subcommand : subcommands) {
    if (subcommand.parser->parsed()) return subcommand.run();
  }
  std::cout << app.help();
  return 0;
}

// Under mpirun every rank may fail: each says which it is.
std::string error_prefix() {
  if (!ember::distributed::is_initialized() || ember::distributed::world_size() == 1) return "error: ";
  return "error (rank " + std::to_string(ember::distributed::rank()) + " of " +
         std::to_string(ember::distributed::world_size()) + "): ";
}

}  // namespace

int main(int argc, char** argv) {
  try {
    return run(argc, argv);
  } catch (const ember::Error& e) {
    std::cout.flush();
    std::cerr << error_prefix() << e.what() << "\n";
    return 1;
  } catch (const std::exception& e) {
    std::cout.flush();
    std::cerr << error_prefix() << "unexpected failure: " << e.what() << "\n";
    return 1;
  }
}
