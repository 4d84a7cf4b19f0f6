// embedding_bag's kernels (src/backend/cpu/embedding_bag.cpp, cuda/embedding_bag.cu) through its
// front end (src/ops/embedding_bag.cpp) and nn::functional::embedding_bag: values and gradients
// against PyTorch's (tools/gen_embedding_bag_golden.py) for sum, mean and max with
// per_sample_weights, padding_idx, include_last_offset, empty bags and scale_grad_by_freq in
// float64 and float32; finite differences, first and second order; the backward written as ops
// under create_graph against the kernels; PyTorch's errors; and every case on every usable
// accelerator (and the stand-in device) against the CPU. The older cases of test_misc_layers.cpp
// and test_module_options.cpp cover the module and the argument checks.
#include <gtest/gtest.h>

#include <cmath>
#include <limits>
#include <map>
#include <optional>
#include <string>
#include <utility>
#include <vector>

#include "ember/ember.h"
#include "ember/io/safetensors.h"
#include "ember/nn/embedding_bag.h"
#include "ember/threads.h"
#include "support/devices.h"
#include "support/error_of.h"
#include "support/golden_cases.h"
#include "support/gradcheck.h"

namespace {

using namespace ember;
namespace F = ember::nn::functional;
using ember_test::error_of;
using ember_test::expect_close;
using ember_test::GoldenCase;

const io::SafetensorsData& golden() {
  static const io::SafetensorsData data =
      io::load_safetensors(EMBER_SOURCE_DIR "/tests/nn/golden/embedding_bag_golden.safetensors");
  return data;
}

std::vector<GoldenCase> all_cases() { return ember_test::golden_cases(golden().metadata); }

const Tensor& at(const GoldenCase& c, const std::string& name) { return golden().at(c.prefix + name); }

using Named = std::vector<std::pair<std::string, Tensor>>;

/// Runs a golden case on `device`: the output and the gradients of sum(y * gy), on the CPU.
Named run_case(const GoldenCase& c, const Device& device, bool create_graph = false) {
  Tensor w = golden().at("table." + c.options.at("table")).to(device).clone().requires_grad_();
  const Tensor input = at(c, "input").to(device);
  const Tensor offsets = c.flag("offsets") ? at(c, "offsets").to(device) : Tensor();
  Tensor psw = c.flag("psw") ? at(c, "psw").to(device).clone().requires_grad_() : Tensor();
  std::optional<int64_t> padding;
  if (c.options.at("padding") != "-") padding = c.num("padding");
  const Tensor y = F::embedding_bag(input, w, offsets, std::nullopt, 2.0, c.flag("freq"), c.options.at("mode"), false,
                                    psw, c.flag("last"), padding);
  Named out{{"y", y.detach().cpu()}};
  std::vector<Tensor> inputs{w};
  if (psw.defined()) inputs.push_back(psw);
  const std::vector<Tensor> gs =
      autograd::grad({y}, inputs, {at(c, "gy").to(device)}, std::nullopt, create_graph, /*allow_unused=*/true);
  out.emplace_back("gw", gs[0].detach().cpu());
  if (psw.defined()) out.emplace_back("gpsw", gs[1].detach().cpu());
  return out;
}

double tolerance(const GoldenCase& c) { return c.options.at("dtype") == "float32" ? 2e-6 : 1e-12; }

TEST(EmbeddingBagGolden, ValuesAndGradientsMatchPyTorch) {
  const std::vector<GoldenCase> cases = all_cases();
  ASSERT_GE(cases.size(), 40u);
  std::map<std::string, int> per_mode;
  for (const GoldenCase& c : cases) {
    SCOPED_TRACE(c.description);
    ++per_mode[c.options.at("mode") + "/" + c.options.at("dtype")];
    for (const auto& [name, got] : run_case(c, Device(DeviceType::CPU))) {
      const Tensor& want = at(c, name);
      EXPECT_EQ(got.dtype(), want.dtype()) << name;
      expect_close(got, want, tolerance(c), tolerance(c), name);
    }
  }
  for (const char* mode :
       {"sum/float64", "mean/float64", "max/float64", "sum/float32", "mean/float32", "max/float32"}) {
    EXPECT_GE(per_mode[mode], 1) << mode;
  }
}

TEST(EmbeddingBagGolden, TheBackwardWrittenAsOpsMatchesTheKernels) {
  // Under create_graph the backward pass is recorded ops instead of the kernel: the same values.
  for (const GoldenCase& c : all_cases()) {
    SCOPED_TRACE(c.description);
    for (const auto& [name, got] : run_case(c, Device(DeviceType::CPU), /*create_graph=*/true)) {
      expect_close(got, at(c, name), tolerance(c), tolerance(c), name);
    }
  }
}

TEST(EmbeddingBagGolden, ResultsDoNotDependOnTheThreadCount) {
  const int threads = get_num_threads();
  manual_seed(3);
  const Tensor w = randn({300, 70}, kFloat64).requires_grad_();
  const Tensor input = randint(0, 300, {4000});
  const Tensor offsets = arange(0, 4000, 8);
  const Tensor gy = randn({500, 70}, kFloat64);
  auto run = [&](const std::string& mode) {
    const Tensor y =
        F::embedding_bag(input, w, offsets, std::nullopt, 2.0, mode != "max", mode, false, Tensor(), false, 5);
    return std::make_pair(y.detach(), autograd::grad({y}, {w}, {gy})[0]);
  };
  for (const std::string mode : {"sum", "mean", "max"}) {
    set_num_threads(1);
    const auto [y1, g1] = run(mode);
    set_num_threads(4);
    const auto [y4, g4] = run(mode);
    EXPECT_TRUE(equal(y1, y4)) << mode;
    EXPECT_TRUE(equal(g1, g4)) << mode;
    // And both against the sum written as ops.
    if (mode == "sum") {
      const Tensor kept = ne(input, full({1}, 5, kInt64)).to(kFloat64).unsqueeze(1);
      const Tensor by_ops = (index_select(w.detach(), 0, input) * kept).view({500, 8, 70}).sum({1});
      EXPECT_TRUE(allclose(y1, by_ops, 1e-12, 1e-12));
    }
  }
  set_num_threads(threads);
}

// ---------------------------------------------------------------- finite differences

TEST(EmbeddingBag, GradientsMatchFiniteDifferences) {
  manual_seed(11);
  using ember::test::gradcheck;
  using ember::test::gradgradcheck;
  using V = std::vector<Tensor>;
  const Tensor input = tensor({1, 3, 3, 0, 4, 2, 5, 3}, kInt64), offsets = tensor({0, 2, 2, 5}, kInt64);
  // (scale_grad_by_freq's gradient is not the derivative, by design: the goldens check it.)
  for (const char* mode : {"sum", "mean", "max"}) {
    gradcheck(std::string("embedding_bag padding ") + mode,
              [&](const V& in) {
                return F::embedding_bag(input, in[0], offsets, std::nullopt, 2.0, false, mode, false, Tensor(), false,
                                        3);
              },
              {randn({6, 4}, kFloat64)});
    gradgradcheck(std::string("embedding_bag ") + mode,
                  [&](const V& in) {
                    const Tensor y = F::embedding_bag(input, in[0], offsets, std::nullopt, 2.0, false, mode);
                    return y * y;  // a second derivative that is not zero
                  },
                  {randn({6, 4}, kFloat64)});
  }
  gradcheck("embedding_bag per_sample_weights, include_last_offset",
            [&](const V& in) {
              return F::embedding_bag(input, in[0], tensor({0, 3, 8}, kInt64), std::nullopt, 2.0, false, "sum", false,
                                      in[1], true, 0);
            },
            {randn({6, 4}, kFloat64), rand({8}, kFloat64)});
  gradgradcheck("embedding_bag per_sample_weights squared",
                [&](const V& in) {
                  const Tensor y = F::embedding_bag(input.view({2, 4}), in[0], Tensor(), std::nullopt, 2.0, false,
                                                    "sum", false, in[1].view({2, 4}), false, 3);
                  return y * y;
                },
                {randn({6, 4}, kFloat64), rand({8}, kFloat64)});
}

// ---------------------------------------------------------------- edge cases

TEST(EmbeddingBag, EdgeCases) {
  Tensor w = arange(12, kFloat64).view({4, 3}).requires_grad_();
  // No bags at all: a [0, D] output, and a zero gradient.
  const Tensor none = F::embedding_bag(tensor({1, 2}, kInt64), w, tensor(std::vector<int64_t>{}, kInt64));
  EXPECT_EQ(none.sizes().vec(), (std::vector<int64_t>{0, 3}));
  none.sum().backward();
  EXPECT_TRUE(equal(w.grad(), zeros({4, 3}, kFloat64)));
  // Max over a bag of padding only, or of nothing, is 0 and sends no gradient anywhere.
  w.set_grad(Tensor());
  const Tensor y = F::embedding_bag(tensor({2, 1, 2}, kInt64), w, tensor({0, 1, 1}, kInt64), std::nullopt, 2.0, false,
                                    "max", false, Tensor(), false, 2);
  EXPECT_TRUE(equal(y, tensor({{0.0, 0.0, 0.0}, {0.0, 0.0, 0.0}, {3.0, 4.0, 5.0}}, kFloat64)));
  y.sum().backward();
  EXPECT_TRUE(equal(w.grad(), tensor({{0.0, 0.0, 0.0}, {1.0, 1.0, 1.0}, {0.0, 0.0, 0.0}, {0.0, 0.0, 0.0}}, kFloat64)));
  // NaN: a NaN met first stays, a later one never replaces a number (PyTorch's strict comparison).
  const double nan = std::numeric_limits<double>::quiet_NaN();
  const Tensor nan_table = tensor({nan, 1.0, 2.0, nan}, kFloat64).view({2, 2});
  const Tensor maxima =
      F::embedding_bag(tensor({0, 1}, kInt64), nan_table, tensor({0}, kInt64), std::nullopt, 2.0, false, "max");
  EXPECT_TRUE(std::isnan(maxima[0][0].item<double>()));
  EXPECT_EQ(maxima[0][1].item<double>(), 1.0);
  // bfloat16 and float16 tables: reduced in float32, rounded once, with gradients.
  for (const Dtype dtype : {kBFloat16, kFloat16}) {
    const Tensor half = arange(12, kFloat32).view({4, 3}).to(dtype).requires_grad_();
    const Tensor out =
        F::embedding_bag(tensor({0, 3, 1}, kInt64), half, tensor({0, 1}, kInt64), std::nullopt, 2.0, false, "mean");
    EXPECT_EQ(out.dtype(), dtype);
    EXPECT_TRUE(equal(out.to(kFloat32), tensor({{0.0f, 1.0f, 2.0f}, {6.0f, 7.0f, 8.0f}})));
    out.sum().backward();
    EXPECT_EQ(half.grad().dtype(), dtype);
    EXPECT_TRUE(equal(half.grad().to(kFloat32),
                      tensor({{1.0f, 1.0f, 1.0f}, {0.5f, 0.5f, 0.5f}, {0.0f, 0.0f, 0.0f}, {0.5f, 0.5f, 0.5f}})));
  }
}

// ---------------------------------------------------------------- errors

TEST(EmbeddingBag, OutOfRangeIndicesArePyTorchsError) {
  const Tensor w = randn({6, 3}, kFloat64).requires_grad_();
  for (const char* mode : {"sum", "mean", "max"}) {
    SCOPED_TRACE(mode);
    EXPECT_EQ(error_of([&] {
                F::embedding_bag(tensor({0, 9, 2}, kInt64), w, tensor({0, 1}, kInt64), std::nullopt, 2.0, false, mode);
              }),
              "embedding_bag: Expected idx >= 0 && idx < num_embeddings but found idx to be 9");
    // The first bad index in position order, padding or not, whichever bag it is in.
    EXPECT_EQ(error_of([&] {
                F::embedding_bag(tensor({0, 1, -3, 7}, kInt64).view({2, 2}), w, Tensor(), std::nullopt, 2.0, false,
                                 mode, false, Tensor(), false, 0);
              }),
              "embedding_bag: Expected idx >= 0 && idx < num_embeddings but found idx to be -3");
  }
  // int32 indices and offsets take the same path.
  EXPECT_EQ(error_of([&] {
              F::embedding_bag(tensor({0, 6}, kInt64).to(kInt32), w, tensor({0}, kInt64).to(kInt32));
            }),
            "embedding_bag: Expected idx >= 0 && idx < num_embeddings but found idx to be 6");
}

// ---------------------------------------------------------------- devices

class EmbeddingBagDevice : public ember_test::DeviceTest {};

TEST_P(EmbeddingBagDevice, EveryCaseMatchesTheCpu) {
  for (const GoldenCase& c : all_cases()) {
    SCOPED_TRACE(c.description);
    for (const bool create_graph : {false, true}) {
      const Named cpu = run_case(c, Device(DeviceType::CPU), create_graph);
      const Named dev = run_case(c, device(), create_graph);
      ASSERT_EQ(cpu.size(), dev.size());
      for (size_t k = 0; k < cpu.size(); ++k) {
        EXPECT_TRUE(ember_test::close_to_cpu(dev[k].second, cpu[k].second, tolerance(c), tolerance(c), cpu[k].first));
      }
    }
  }
  // A larger float32 batch with every option, as a training step would run it.
  manual_seed(4);
  const Tensor w = randn({500, 33});
  const Tensor input = randint(0, 500, {3000});
  const Tensor offsets = std::get<0>(ember::sort(randint(0, 3000, {200})));
  const Tensor psw = rand({3000});
  for (const std::string mode : {"sum", "mean", "max"}) {
    SCOPED_TRACE(mode);
    Tensor wc = w.clone().requires_grad_(), wd = w.to(device()).clone().requires_grad_();
    const Tensor sample = mode == "sum" ? psw : Tensor();
    const Tensor first = full({1}, 0, kInt64);
    const Tensor starts = cat({first, offsets.narrow(0, 1, 199)});
    const Tensor yc =
        F::embedding_bag(input, wc, starts, std::nullopt, 2.0, mode != "max", mode, false, sample, false, 11);
    const Tensor yd = F::embedding_bag(input.to(device()), wd, starts.to(device()), std::nullopt, 2.0, mode != "max",
                                       mode, false, sample.defined() ? sample.to(device()) : Tensor(), false, 11);
    EXPECT_CLOSE_TO_CPU(yd, yc, 1e-5, 1e-5);
    const Tensor gy = randn(yc.sizes());
    yc.backward(gy);
    yd.backward(gy.to(device()));
    EXPECT_CLOSE_TO_CPU(wd.grad(), wc.grad(), 1e-5, 1e-5);
  }
}

EMBER_INSTANTIATE_DEVICE_SUITE(EmbeddingBagDevice);

}  // namespace
