// Replays every committed fuzz input — the seed corpora in fuzz/corpus/<target>/ and every input
// that once failed, in fuzz/regressions/<target>/ — through the same function libFuzzer calls
// (fuzz/fuzz_<target>.cpp). An ember::Error is the expected answer to bad input and the function
// swallows it; anything else escaping fails the test with the file's name.
#include <gtest/gtest.h>

#include <algorithm>
#include <filesystem>
#include <fstream>
#include <iterator>
#include <string>
#include <vector>

#include "fuzz_common.h"

namespace {

namespace fs = std::filesystem;

struct Target {
  const char* name;
  void (*one_input)(std::span<const uint8_t>);
};

std::vector<fs::path> files_in(const fs::path& dir) {
  std::vector<fs::path> out;
  if (!fs::is_directory(dir)) return out;
  for (const auto& entry : fs::directory_iterator(dir))
    if (entry.is_regular_file() && entry.path().filename().string()[0] != '.') out.push_back(entry.path());
  std::sort(out.begin(), out.end());
  return out;
}

std::vector<uint8_t> read_bytes(const fs::path& path) {
  std::ifstream in(path, std::ios::binary);
  return std::vector<uint8_t>(std::istreambuf_iterator<char>(in), std::istreambuf_iterator<char>());
}

void replay(const Target& target) {
  const fs::path fuzz_dir = fs::path(EMBER_SOURCE_DIR) / "fuzz";
  const std::vector<fs::path> seeds = files_in(fuzz_dir / "corpus" / target.name);
  EXPECT_FALSE(seeds.empty()) << "no seeds in " << (fuzz_dir / "corpus" / target.name);
  std::vector<fs::path> inputs = seeds;
  for (const fs::path& p : files_in(fuzz_dir / "regressions" / target.name)) inputs.push_back(p);
  for (const fs::path& path : inputs) {
    const std::vector<uint8_t> bytes = read_bytes(path);
    try {
      target.one_input(bytes);
    } catch (const std::exception& e) {
      ADD_FAILURE() << path.string() << ": " << e.what();
    } catch (...) {
      ADD_FAILURE() << path.string() << ": an exception that is not a std::exception escaped";
    }
  }
}

TEST(FuzzReplay, Safetensors) { replay({"safetensors", ember::fuzz::safetensors_one_input}); }
TEST(FuzzReplay, Npy) { replay({"npy", ember::fuzz::npy_one_input}); }
TEST(FuzzReplay, TorchLoad) { replay({"torch_load", ember::fuzz::torch_load_one_input}); }
TEST(FuzzReplay, Checkpoint) { replay({"checkpoint", ember::fuzz::checkpoint_one_input}); }
TEST(FuzzReplay, Idx) { replay({"idx", ember::fuzz::idx_one_input}); }
TEST(FuzzReplay, Device) { replay({"device", ember::fuzz::device_one_input}); }

}  // namespace
