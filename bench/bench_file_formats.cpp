// Saving and loading a state_dict: PyTorch's format (torch_save / torch_load), safetensors and
// NumPy's npz, in memory and through a file. The state_dict is 28.3M float32 parameters (113 MB)
// in 48 tensors, the size of a small vision model. bench/file_formats_pytorch.py times PyTorch's
// torch.save / torch.load on the same shapes.
//
// A file save is atomic here (write, fsync, rename, fsync of the folder) and PyTorch's is not, so
// compare the file rows for what they are: the price of a save that a crash cannot corrupt.
#include <benchmark/benchmark.h>

#include <filesystem>

#include "ember/ember.h"
#include "ember/io/numpy.h"

namespace {

using namespace ember;

// 12 blocks of (conv-like weight, bias, norm weight, norm bias): 48 tensors.
const nn::StateDict& state() {
  static const nn::StateDict s = [] {
    manual_seed(0);
    nn::StateDict d;
    for (int b = 0; b < 12; ++b) {
      const std::string p = "blocks." + std::to_string(b) + ".";
      d.insert(p + "weight", randn({512, 512, 3, 3}));
      d.insert(p + "bias", randn({512}));
      d.insert(p + "norm.weight", randn({512}));
      d.insert(p + "norm.bias", randn({512}));
    }
    return d;
  }();
  return s;
}

io::NamedTensors named() {
  io::NamedTensors out;
  for (const auto& [k, t] : state()) out.emplace_back(k, t);
  return out;
}

std::filesystem::path scratch(const char* name) { return std::filesystem::temp_directory_path() / name; }

void set_bytes(benchmark::State& st) {
  int64_t bytes = 0;
  for (const auto& [k, t] : state()) bytes += t.numel() * 4;
  st.SetBytesProcessed(st.iterations() * bytes);
}

void BM_TorchSaveToBytes(benchmark::State& st) {
  const io::Value v = io::to_value(state());
  for (auto _ : st) benchmark::DoNotOptimize(io::torch_save_to_bytes(v));
  set_bytes(st);
}
void BM_TorchLoadFromBytes(benchmark::State& st) {
  const std::vector<uint8_t> bytes = io::torch_save_to_bytes(io::to_value(state()));
  for (auto _ : st) benchmark::DoNotOptimize(io::torch_load_from_bytes(bytes));
  set_bytes(st);
}
void BM_TorchSaveFile(benchmark::State& st) {
  const io::Value v = io::to_value(state());
  for (auto _ : st) io::torch_save(scratch("ember_bench.pt"), v);
  set_bytes(st);
}
void BM_TorchLoadFile(benchmark::State& st) {
  io::torch_save(scratch("ember_bench.pt"), io::to_value(state()));
  for (auto _ : st) benchmark::DoNotOptimize(io::torch_load(scratch("ember_bench.pt")));
  set_bytes(st);
}
// Mapped, as torch.load(mmap=True): no tensor data is read until it is used.
void BM_TorchLoadFileMmap(benchmark::State& st) {
  io::torch_save(scratch("ember_bench.pt"), io::to_value(state()));
  io::TorchLoadOptions options;
  options.mmap = true;
  for (auto _ : st) benchmark::DoNotOptimize(io::torch_load(scratch("ember_bench.pt"), options));
  set_bytes(st);
}
void BM_SafetensorsSaveToBytes(benchmark::State& st) {
  const io::NamedTensors n = named();
  for (auto _ : st) benchmark::DoNotOptimize(io::save_safetensors_to_bytes(n));
  set_bytes(st);
}
void BM_SafetensorsLoadFromBytes(benchmark::State& st) {
  const std::vector<uint8_t> bytes = io::save_safetensors_to_bytes(named());
  for (auto _ : st) benchmark::DoNotOptimize(io::load_safetensors_from_bytes(bytes));
  set_bytes(st);
}
void BM_NpzSaveToBytes(benchmark::State& st) {
  const io::NamedTensors n = named();
  for (auto _ : st) benchmark::DoNotOptimize(io::save_npz_to_bytes(n));
  set_bytes(st);
}
void BM_NpzLoadFromBytes(benchmark::State& st) {
  const std::vector<uint8_t> bytes = io::save_npz_to_bytes(named());
  for (auto _ : st) benchmark::DoNotOptimize(io::load_npz_from_bytes(bytes));
  set_bytes(st);
}

BENCHMARK(BM_TorchSaveToBytes)->Unit(benchmark::kMillisecond)->UseRealTime();
BENCHMARK(BM_TorchLoadFromBytes)->Unit(benchmark::kMillisecond)->UseRealTime();
BENCHMARK(BM_TorchSaveFile)->Unit(benchmark::kMillisecond)->UseRealTime();
BENCHMARK(BM_TorchLoadFile)->Unit(benchmark::kMillisecond)->UseRealTime();
BENCHMARK(BM_TorchLoadFileMmap)->Unit(benchmark::kMillisecond)->UseRealTime();
BENCHMARK(BM_SafetensorsSaveToBytes)->Unit(benchmark::kMillisecond)->UseRealTime();
BENCHMARK(BM_SafetensorsLoadFromBytes)->Unit(benchmark::kMillisecond)->UseRealTime();
BENCHMARK(BM_NpzSaveToBytes)->Unit(benchmark::kMillisecond)->UseRealTime();
BENCHMARK(BM_NpzLoadFromBytes)->Unit(benchmark::kMillisecond)->UseRealTime();

}  // namespace

BENCHMARK_MAIN();
