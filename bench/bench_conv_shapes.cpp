// conv2d's two float32 paths on the layer shapes of the model families, which decide
// conv.cpp's onednn_is_faster: ResNet-18's convolutions at 64x64 input (3x3 stages, 1x1
// downsamples, the 7x7 stem) and MobileNetV2's depthwise and pointwise ones, batch 16, each timed
// as a training step sees it (forward, then the weight's gradient and, past the stem, the
// input's). "auto" is the path conv.cpp picks. bench/conv_shapes_pytorch.py times PyTorch's.
//
//   OMP_NUM_THREADS=1 build/bench/bench_conv_shapes --benchmark_repetitions=3
#include <benchmark/benchmark.h>

#include <algorithm>
#include <cstdint>
#include <cstdlib>
#include <string>
#include <vector>

#include "ember/ember.h"
#include "ratio_reporter.h"

namespace {

struct Layer {
  const char* name;
  int64_t channels, size, out_channels, kernel, stride, padding, groups;
  bool input_needs_grad;
};

// The names say in -> out channels, kernel, stride and input size; batch 16 throughout.
const Layer kLayers[] = {
    {"resnet_stem_3to64_k7s2_64", 3, 64, 64, 7, 2, 3, 1, false},
    {"resnet_64to64_k3_16", 64, 16, 64, 3, 1, 1, 1, true},
    {"resnet_64to128_k3s2_16", 64, 16, 128, 3, 2, 1, 1, true},
    {"resnet_128to128_k3_8", 128, 8, 128, 3, 1, 1, 1, true},
    {"resnet_256to256_k3_4", 256, 4, 256, 3, 1, 1, 1, true},
    {"resnet_512to512_k3_2", 512, 2, 512, 3, 1, 1, 1, true},
    {"resnet_64to128_k1s2_16", 64, 16, 128, 1, 2, 0, 1, true},
    {"resnet_256to512_k1s2_4", 256, 4, 512, 1, 2, 0, 1, true},
    {"mobilenet_dw32_k3_32", 32, 32, 32, 3, 1, 1, 32, true},
    {"mobilenet_dw144_k3s2_16", 144, 16, 144, 3, 2, 1, 144, true},
    {"mobilenet_dw384_k3_4", 384, 4, 384, 3, 1, 1, 384, true},
    {"mobilenet_pw24to144_k1_16", 24, 16, 144, 1, 1, 0, 1, true},
    {"mobilenet_pw384to64_k1_4", 384, 4, 64, 1, 1, 0, 1, true},
    {"mobilenet_pw960to320_k1_2", 960, 2, 320, 1, 1, 0, 1, true},
};

constexpr int64_t kBatch = 16;

void bench_conv(benchmark::State& state, Layer layer, const char* path) {
  if (std::string(path) == "auto") {
    unsetenv("EMBER_CONV2D_PATH");
  } else {
    setenv("EMBER_CONV2D_PATH", path, 1);
  }
  ember::manual_seed(0);
  ember::Tensor x = ember::randn({kBatch, layer.channels, layer.size, layer.size});
  if (layer.input_needs_grad) x.requires_grad_();
  ember::Tensor w =
      (ember::randn({layer.out_channels, layer.channels / layer.groups, layer.kernel, layer.kernel}) * 0.05)
          .requires_grad_();
  auto step = [&] {
    ember::Tensor y = ember::conv2d(x, w, ember::Tensor(), {layer.stride}, {layer.padding}, {1}, layer.groups);
    y.backward(ember::ones_like(y));
  };
  step();  // the first call creates oneDNN's primitives; a training loop pays that once
  for (auto _ : state) {
    step();
    benchmark::DoNotOptimize(w.grad().data_ptr());
  }
  unsetenv("EMBER_CONV2D_PATH");
}

}  // namespace

int main(int argc, char** argv) {
  for (const Layer& layer : kLayers) {
    for (const char* path : {"onednn", "im2col", "auto"}) {
      benchmark::RegisterBenchmark((std::string(path) + "/" + layer.name).c_str(), bench_conv, layer, path)
          ->UseRealTime()
          ->Unit(benchmark::kMillisecond)
          ->ComputeStatistics("min",
                              [](const std::vector<double>& v) { return *std::min_element(v.begin(), v.end()); });
    }
  }
  benchmark::Initialize(&argc, argv);
  if (benchmark::ReportUnrecognizedArguments(argc, argv)) return 1;
  ember_bench::RatioReporter reporter("im2col / onednn time", "im2col", "onednn", "min", 36);
  benchmark::RunSpecifiedBenchmarks(&reporter);
  benchmark::Shutdown();
  return 0;
}
