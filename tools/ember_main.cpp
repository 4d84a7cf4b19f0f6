// The `ember` command-line tool. Each subcommand registers its options with CLI11 and hands back
// the action to run; actions run only after the whole command line parsed, outside CLI11, so that
// one place turns ember::Error into "error: ..." and exit code 1, and usage errors into exit code 2.
#include <CLI/CLI.hpp>
#include <cstdlib>
#include <exception>
#include <functional>
#include <iostream>
#include <string>
#include <vector>

#include "ember/ember.h"

namespace {

constexpr int kExitUsage = 2;

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

int run(int argc, char** argv) {
  CLI::App app{"ember: a C++20 deep-learning library and trainer", "ember"};
  app.set_version_flag("--version", std::string("ember ") + ember::kVersion, "Print the version and exit");
  app.require_subcommand(0, 1);

  const std::vector<Subcommand> subcommands = {add_devices(app)};

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

}  // namespace

int main(int argc, char** argv) {
  try {
    return run(argc, argv);
  } catch (const ember::Error& e) {
    std::cout.flush();
    std::cerr << "error: " << e.what() << "\n";
    return 1;
  } catch (const std::exception& e) {
    std::cout.flush();
    std::cerr << "error: unexpected failure: " << e.what() << "\n";
    return 1;
  }
}
