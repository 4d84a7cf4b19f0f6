// affine_grid and grid_sample against PyTorch 2.15 (tools/gen_grid_sample_golden.py): values and
// the gradients of input, grid and theta for every mode, padding and align_corners (random grids
// and grids of exact pixel centres, edges and ties, 2-D and 3-D, float64 to float16), second
// derivatives, finite differences, strided and empty inputs, PyTorch's messages and warnings, and
// the stand-in device.
#include <gtest/gtest.h>

#include <functional>
#include <string>
#include <vector>

#include "ember/ember.h"
#include "ember/io/safetensors.h"
#include "ember/nn/vision.h"
#include "support/collect_warnings.h"
#include "support/devices.h"
#include "support/error_of.h"
#include "support/golden_cases.h"
#include "support/gradcheck.h"

namespace {

using namespace ember;
namespace F = ember::nn::functional;
using ember_test::error_of;

std::vector<std::string> warnings_of(const std::function<void()>& f) {
  ember_test::CollectWarnings collect;
  f();
  return collect.messages();
}

const io::SafetensorsData& golden() {
  static const io::SafetensorsData data =
      io::load_safetensors(EMBER_SOURCE_DIR "/tests/nn/golden/grid_sample_golden.safetensors");
  return data;
}

std::vector<int64_t> sizes_of(const std::string& text) {
  std::vector<int64_t> out;
  size_t start = 0;
  while (start < text.size()) {
    size_t end = text.find(';', start);
    if (end == std::string::npos) end = text.size();
    out.push_back(std::stoll(text.substr(start, end - start)));
    start = end + 1;
  }
  return out;
}

TEST(GridSample, MatchesPyTorch) {
  const io::SafetensorsData& g = golden();
  int ran = 0;
  for (const ember_test::GoldenCase& c : ember_test::golden_cases(g.metadata)) {
    if (c.kind != "grid_sample") continue;
    SCOPED_TRACE(c.description);
    const std::string dtype_name = c.options.count("dtype") != 0 ? c.options.at("dtype") : "float64";
    const Dtype dtype = dtype_name == "float32"    ? kFloat32
                        : dtype_name == "float16"  ? kFloat16
                        : dtype_name == "bfloat16" ? kBFloat16
                                                   : kFloat64;
    const Tensor input = g.at("shared." + c.options.at("input")).to(dtype, false, true).requires_grad_();
    const Tensor grid = g.at("shared." + c.options.at("grid")).to(dtype, false, true).requires_grad_();
    const Tensor y = F::grid_sample(input, grid, c.options.at("mode"), c.options.at("padding"), c.flag("align"));
    EXPECT_EQ(y.dtype(), dtype);
    // float32 to its rounding. float16 and bfloat16 are computed in float32 and rounded once,
    // where PyTorch's 2-D bilinear kernel rounds its weights and partial sums to the 16-bit type:
    // a few of their ulps apart, the grid's gradient (summed over channels and taps) more.
    const double rtol = dtype == kFloat64 ? 1e-12 : dtype == kFloat32 ? 2e-5 : dtype == kFloat16 ? 1e-2 : 3e-2;
    const double tol = dtype == kFloat64 ? 1e-12 : dtype == kFloat32 ? 2e-5 : dtype == kFloat16 ? 1e-2 : 6e-2;
    const double grid_tol = dtype == kFloat64 ? 1e-12 : dtype == kFloat32 ? 1e-4 : dtype == kFloat16 ? 5e-2 : 0.25;
    ember_test::expect_close(y, g.at(c.prefix + "y"), rtol, tol, "y");
    const std::vector<Tensor> grads = autograd::grad({y}, {input, grid}, {g.at(c.prefix + "gy")});
    EXPECT_EQ(grads[0].dtype(), dtype);
    EXPECT_EQ(grads[1].dtype(), dtype);
    ember_test::expect_close(grads[0], g.at(c.prefix + "ginput"), rtol, tol, "ginput");
    ember_test::expect_close(grads[1], g.at(c.prefix + "ggrid"), rtol, grid_tol, "ggrid");
    ++ran;
  }
  EXPECT_EQ(ran, 81);
}

// PyTorch's GridSampler2DBackwardBackward0 (and 3D): the gradients made with create_graph are
// differentiable again, in input, grid and the incoming gradient.
TEST(GridSample, SecondDerivativesMatchPyTorch) {
  const io::SafetensorsData& g = golden();
  int ran = 0;
  for (const ember_test::GoldenCase& c : ember_test::golden_cases(g.metadata)) {
    if (c.kind != "grid_sample_double") continue;
    SCOPED_TRACE(c.description);
    const Tensor input = g.at("shared." + c.options.at("input")).clone().requires_grad_();
    const Tensor grid = g.at("shared." + c.options.at("grid")).clone().requires_grad_();
    const Tensor gy = g.at(c.prefix + "gy").clone().requires_grad_();
    const Tensor y = F::grid_sample(input, grid, c.options.at("mode"), c.options.at("padding"), c.flag("align"));
    const std::vector<Tensor> first = autograd::grad({y}, {input, grid}, {gy}, std::nullopt, /*create_graph=*/true);
    const Tensor s = (first[0] * g.at(c.prefix + "vx")).sum() + (first[1] * g.at(c.prefix + "vg")).sum();
    const std::vector<Tensor> second =
        autograd::grad({s}, {input, grid, gy}, autograd::GradOptions{.materialize_grads = true});
    ember_test::expect_close(second[0], g.at(c.prefix + "ddx"), 1e-12, 1e-12, "ddx");
    ember_test::expect_close(second[1], g.at(c.prefix + "ddgrid"), 1e-12, 1e-12, "ddgrid");
    ember_test::expect_close(second[2], g.at(c.prefix + "ddgy"), 1e-12, 1e-12, "ddgy");
    ++ran;
  }
  EXPECT_EQ(ran, 5);
}

// The create_graph path (the composed form) gives the kernels' first derivatives.
TEST(GridSample, RecordedBackwardMatchesTheKernels) {
  manual_seed(5);
  const Tensor input = randn({2, 3, 4, 5}, kFloat64), grid = rand({2, 3, 4, 2}, kFloat64) * 2.6 - 1.3;
  for (const char* mode : {"bilinear", "nearest", "bicubic"}) {
    SCOPED_TRACE(mode);
    const Tensor x = input.clone().requires_grad_(), g = grid.clone().requires_grad_();
    const Tensor y = F::grid_sample(x, g, mode, "reflection", false);
    const Tensor gy = randn_like(y);
    const std::vector<Tensor> plain = autograd::grad({y}, {x, g}, {gy}, /*retain_graph=*/true);
    const std::vector<Tensor> recorded = autograd::grad({y}, {x, g}, {gy}, std::nullopt, /*create_graph=*/true);
    EXPECT_TRUE(recorded[0].requires_grad());
    ember_test::expect_close(recorded[0], plain[0], 1e-13, 1e-13, "ginput");
    ember_test::expect_close(recorded[1], plain[1], 1e-12, 1e-12, "ggrid");
  }
}

// Views with any strides (a transposed input, a grid sliced from a wider one, a gradient that is
// a broadcast) give what their contiguous copies give.
TEST(GridSample, StridedViews) {
  manual_seed(6);
  const Tensor input_base = randn({2, 5, 4, 3}, kFloat64).requires_grad_();
  const Tensor grid_base = (rand({2, 3, 6, 3}, kFloat64) * 2.4 - 1.2).requires_grad_();
  for (const char* mode : {"bilinear", "nearest", "bicubic"}) {
    SCOPED_TRACE(mode);
    const Tensor input = input_base.transpose(2, 3);                // [2, 5, 3, 4], not contiguous
    const Tensor grid = grid_base.narrow(2, 1, 4).narrow(3, 0, 2);  // [2, 3, 4, 2], strided
    const Tensor x = input.detach().contiguous().requires_grad_(), g = grid.detach().contiguous().requires_grad_();
    const Tensor y = F::grid_sample(x, g, mode, "border", true);
    const Tensor y_strided = F::grid_sample(input, grid, mode, "border", true);
    EXPECT_TRUE(equal(y_strided, y));
    const Tensor gy = ones({1}, kFloat64).expand(y.sizes());  // a broadcast gradient: strides 0
    const std::vector<Tensor> want = autograd::grad({y}, {x, g}, {gy.contiguous()});
    const std::vector<Tensor> got = autograd::grad({y_strided}, {input_base, grid_base}, {gy});
    EXPECT_TRUE(equal(got[0].transpose(2, 3), want[0]));
    EXPECT_TRUE(equal(got[1].narrow(2, 1, 4).narrow(3, 0, 2), want[1]));
  }
}

// No samples, no channels or no points: empty results and zero gradients, as PyTorch's.
TEST(GridSample, EmptySizes) {
  struct Shapes {
    std::vector<int64_t> input, grid;
  };
  for (const Shapes& s : {Shapes{{0, 2, 3, 4}, {0, 2, 2, 2}}, Shapes{{2, 0, 3, 4}, {2, 2, 2, 2}},
                          Shapes{{2, 3, 3, 4}, {2, 0, 5, 2}}, Shapes{{1, 2, 2, 3, 4}, {1, 2, 0, 1, 3}}}) {
    const Tensor x = randn(s.input, kFloat64).requires_grad_();
    const Tensor g = rand(s.grid, kFloat64).requires_grad_();
    const Tensor y = F::grid_sample(x, g, "bilinear", "zeros", false);
    std::vector<int64_t> want = {s.input[0], s.input[1]};
    want.insert(want.end(), s.grid.begin() + 1, s.grid.end() - 1);
    EXPECT_EQ(y.sizes().vec(), want);
    const std::vector<Tensor> grads = autograd::grad({y.sum()}, {x, g});
    EXPECT_TRUE(equal(grads[0], zeros_like(x)));
    EXPECT_TRUE(equal(grads[1], zeros_like(g)));
  }
}

// A gradient for one input only: the other gets none, and the one asked for is the same.
TEST(GridSample, OneGradientAtATime) {
  manual_seed(7);
  const Tensor input = randn({2, 2, 3, 4}, kFloat64), grid = rand({2, 3, 2, 2}, kFloat64) * 2 - 1;
  const Tensor x = input.clone().requires_grad_(), g = grid.clone().requires_grad_();
  const std::vector<Tensor> both = autograd::grad({F::grid_sample(x, g, "bicubic", "zeros", false).sum()}, {x, g});
  const Tensor only_x = input.clone().requires_grad_();
  F::grid_sample(only_x, grid, "bicubic", "zeros", false).sum().backward();
  EXPECT_TRUE(equal(only_x.grad(), both[0]));
  const Tensor only_grid = grid.clone().requires_grad_();
  F::grid_sample(input, only_grid, "bicubic", "zeros", false).sum().backward();
  EXPECT_TRUE(equal(only_grid.grad(), both[1]));
}

TEST(AffineGrid, MatchesPyTorch) {
  const io::SafetensorsData& g = golden();
  int ran = 0;
  for (const ember_test::GoldenCase& c : ember_test::golden_cases(g.metadata)) {
    if (c.kind != "affine_grid") continue;
    SCOPED_TRACE(c.description);
    const Tensor theta = g.at(c.prefix + "theta").clone().requires_grad_();
    const Tensor y = F::affine_grid(theta, sizes_of(c.options.at("size")), c.flag("align"));
    ember_test::expect_close(y, g.at(c.prefix + "y"), 1e-12, 1e-13, "y");
    const std::vector<Tensor> grads = autograd::grad({y}, {theta}, {g.at(c.prefix + "gy")});
    ember_test::expect_close(grads[0], g.at(c.prefix + "gtheta"), 1e-12, 1e-12, "gtheta");
    ++ran;
  }
  EXPECT_EQ(ran, 5);
}

TEST(GridSample, SpatialTransformerGradients) {
  const io::SafetensorsData& g = golden();
  const Tensor theta = g.at("spatial0.theta").clone().requires_grad_();
  const Tensor input = g.at("spatial0.input").clone().requires_grad_();
  const Tensor y = F::grid_sample(input, F::affine_grid(theta, {2, 3, 4, 4}, false), "bilinear", "zeros", false);
  ember_test::expect_close(y, g.at("spatial0.y"), 1e-12, 1e-12, "y");
  const std::vector<Tensor> grads = autograd::grad({y}, {theta, input}, {g.at("spatial0.gy")});
  ember_test::expect_close(grads[0], g.at("spatial0.gtheta"), 1e-12, 1e-12, "gtheta");
  ember_test::expect_close(grads[1], g.at("spatial0.ginput"), 1e-12, 1e-12, "ginput");
}

TEST(GridSample, NearestRoundsHalfToEvenAndGivesTheGridZeros) {
  // Pixel coordinates 0.5 and 1.5 (align_corners, 4 pixels: x = -1 + 2p/3) round to 0 and 2.
  const Tensor input = arange(4, TensorOptions().dtype(kFloat64)).reshape({1, 1, 1, 4});
  const Tensor grid = tensor(std::vector<double>{-2.0 / 3, 0.0, 0.0, 0.0}, kFloat64).reshape({1, 1, 2, 2});
  const Tensor x = grid.clone().requires_grad_();
  const Tensor y = F::grid_sample(input, x, "nearest", "zeros", true);
  EXPECT_TRUE(equal(y.reshape({2}), tensor(std::vector<double>{0, 2}, kFloat64)));
  y.sum().backward();
  ASSERT_TRUE(x.grad().defined());
  EXPECT_TRUE(equal(x.grad(), zeros_like(grid)));
}

TEST(GridSample, FiniteDifferences) {
  manual_seed(3);
  const Tensor input = randn({1, 2, 3, 4});
  // Grid values away from pixel centres and borders, where the sampling is differentiable.
  const Tensor grid = rand({1, 2, 2, 2}) * 1.6 - 0.8;
  for (const char* mode : {"bilinear", "bicubic"}) {
    for (const char* padding : {"zeros", "border", "reflection"}) {
      SCOPED_TRACE(std::string(mode) + " " + padding);
      ember::test::gradcheck(
          std::string(mode) + padding,
          [mode, padding](const std::vector<Tensor>& xs) { return F::grid_sample(xs[0], xs[1], mode, padding, false); },
          {input, grid});
    }
  }
  const Tensor volume = randn({1, 2, 2, 3, 3}), grid3 = rand({1, 1, 2, 2, 3}) * 1.6 - 0.8;
  for (const char* mode : {"bilinear", "bicubic"}) {
    for (const char* padding : {"zeros", "border", "reflection"}) {
      SCOPED_TRACE(std::string("3-D ") + mode + " " + padding);
      ember::test::gradcheck(
          std::string("3-D ") + mode + padding,
          [mode, padding](const std::vector<Tensor>& xs) { return F::grid_sample(xs[0], xs[1], mode, padding, true); },
          {volume, grid3});
    }
  }
  // nearest: the input's gradient (the grid's is zero, and so are its finite differences away
  // from the rounding ties).
  for (const Tensor& x : {input, volume}) {
    const Tensor grid_of_x = (x.dim() == 4 ? grid : grid3).to(kFloat64);
    ember::test::gradcheck("nearest",
                           [grid_of_x](const std::vector<Tensor>& xs) {
                             return F::grid_sample(xs[0], grid_of_x, "nearest", "reflection", false);
                           },
                           {x});
  }
  ember::test::gradgradcheck(
      "bilinear second derivatives",
      [](const std::vector<Tensor>& xs) { return F::grid_sample(xs[0], xs[1], "bilinear", "border", false); },
      {input, grid});
  ember::test::gradcheck("affine_grid",
                         [](const std::vector<Tensor>& xs) {
                           return F::affine_grid(xs[0], {1, 1, 2, 3}, false);
                         },
                         {randn({1, 2, 3})});
}

TEST(GridSample, PyTorchsMessages) {
  const Tensor x = randn({2, 3, 4, 5}, kFloat64), g = rand({2, 6, 7, 2}, kFloat64);
  EXPECT_EQ(error_of([&] { F::grid_sample(x, g, "linear", "zeros", false); }),
            "nn.functional.grid_sample(): expected mode to be 'bilinear', 'nearest' or 'bicubic', but got: 'linear'");
  EXPECT_EQ(error_of([&] { F::grid_sample(x, g, "bilinear", "wrap", false); }),
            "nn.functional.grid_sample(): expected padding_mode to be 'zeros', 'border', or 'reflection', but got: "
            "'wrap'");
  EXPECT_EQ(
      error_of([&] { F::grid_sample(x, g.narrow(0, 0, 1), "bilinear", "zeros", false); }),
      "grid_sampler(): expected grid and input to have same batch size, but got input with sizes [2, 3, 4, 5] and "
      "grid with sizes [1, 6, 7, 2]");
  EXPECT_EQ(error_of([&] {
              F::grid_sample(x, rand({2, 6, 7, 3}, kFloat64), "bilinear", "zeros", false);
            }),
            "grid_sampler(): expected grid to have size 2 in last dimension, but got grid with sizes [2, 6, 7, 3]");
  EXPECT_EQ(error_of([&] {
              F::grid_sample(x, rand({2, 6, 2}, kFloat64), "bilinear", "zeros", false);
            }),
            "grid_sampler(): expected 4D input and grid with same number of dimensions, but got input with sizes "
            "[2, 3, 4, 5] and grid with sizes [2, 6, 2]");
  EXPECT_EQ(error_of([&] {
              F::grid_sample(x[0], rand({3, 6, 2}, kFloat64), "bilinear", "zeros", false);
            }),
            "grid_sampler(): expected grid to have size 1 in last dimension, but got grid with sizes [3, 6, 2]");
  EXPECT_EQ(error_of([&] { F::grid_sample(x, g.to(kFloat32), "bilinear", "zeros", false); }),
            "expected scalar type Double but found Float");
  EXPECT_EQ(
      error_of([&] {
        F::grid_sample(randn({2, 3, 0, 5}, kFloat64), g, "bilinear", "zeros", false);
      }),
      "grid_sampler(): expected input to have non-empty spatial dimensions, but input has sizes [2, 3, 0, 5] with "
      "dimension 2 being empty");
  EXPECT_EQ(error_of([&] { F::grid_sample(x.to(kInt64), g.to(kInt64), "bilinear", "zeros", false); }),
            "\"grid_sampler_2d_cpu_kernel_impl\" not implemented for 'Long'");
  EXPECT_EQ(error_of([&] {
              F::grid_sample(randn({2, 3, 4}, kFloat64), rand({2, 6, 1}), "bilinear", "zeros", false);
            }),
            "grid_sampler(): expected 5D input and grid with same number of dimensions, but got input with sizes "
            "[2, 3, 4] and grid with sizes [2, 6, 1]");
}

TEST(AffineGrid, PyTorchsMessages) {
  const Tensor theta = randn({2, 2, 3}, kFloat64);
  EXPECT_EQ(error_of([&] {
              F::affine_grid(theta.to(kInt64), {2, 3, 4, 5}, false);
            }),
            "Expected theta to have floating point type, but got torch.int64");
  EXPECT_EQ(
      error_of([&] {
        F::affine_grid(theta, {2, 3, 4, 5, 6}, false);
      }),
      "Expected a batch of 3D affine matrices of shape Nx3x4 for size [2, 3, 4, 5, 6]. Got torch.Size([2, 2, 3]).");
  EXPECT_EQ(error_of([] {
              F::affine_grid(randn({2, 3, 4}), {2, 3, 4, 5}, false);
            }),
            "Expected a batch of 2D affine matrices of shape Nx2x3 for size [2, 3, 4, 5]. Got torch.Size([2, 3, 4]).");
  EXPECT_EQ(error_of([&] {
              F::affine_grid(theta, {2, 3, 4}, false);
            }),
            "affine_grid only supports 4D and 5D sizes, for 2D and 3D affine transforms, respectively. Got size "
            "[2, 3, 4].");
  EXPECT_EQ(error_of([&] {
              F::affine_grid(theta, {2, 3, 0, 5}, false);
            }),
            "Expected non-zero, positive output size. Got [2, 3, 0, 5]");
  EXPECT_EQ(error_of([&] {
              F::affine_grid(theta, {3, 3, 4, 5}, false);
            }),
            "Expected size for first two dimensions of batch2 tensor to be: [3, 3] but got: [2, 3].");
}

TEST(AffineGrid, WarnsAsPyTorch) {
  const Tensor theta = randn({2, 2, 3}, kFloat64);
  const std::vector<std::string> unset = warnings_of([&] { F::affine_grid(theta, {2, 3, 4, 5}); });
  ASSERT_EQ(unset.size(), 1u);
  EXPECT_EQ(unset[0],
            "Default grid_sample and affine_grid behavior has changed to align_corners=False since 1.3.0. Please "
            "specify align_corners=True if the old behavior is desired. See the documentation of grid_sample for "
            "details.");
  const std::vector<std::string> unit = warnings_of([&] { F::affine_grid(theta, {2, 3, 1, 5}, true); });
  ASSERT_EQ(unit.size(), 1u);
  EXPECT_EQ(
      unit[0],
      "Since version 1.3.0, affine_grid behavior has changed for unit-size grids when align_corners=True. This is "
      "not an intended use case of affine_grid. See the documentation of affine_grid for details.");
  EXPECT_TRUE(warnings_of([&] { F::affine_grid(theta, {2, 3, 4, 5}, false); }).empty());
}

class GridSampleDevice : public ember_test::DeviceTest {};

TEST_P(GridSampleDevice, MatchesTheCpu) {
  const Tensor input = randn({2, 2, 3, 4}, kFloat64), grid = rand({2, 3, 2, 2}, kFloat64) * 3 - 1.5;
  const Device d = device();
  for (const char* mode : {"bilinear", "nearest", "bicubic"}) {
    EXPECT_CLOSE_TO_CPU(F::grid_sample(input.to(d), grid.to(d), mode, "reflection", false),
                        F::grid_sample(input, grid, mode, "reflection", false), 0, 0);
  }
  const Tensor theta = randn({2, 2, 3}, kFloat64);
  EXPECT_CLOSE_TO_CPU(F::affine_grid(theta.to(d), {2, 1, 3, 4}, true), F::affine_grid(theta, {2, 1, 3, 4}, true), 0, 0);
  const Tensor x = input.to(d).requires_grad_(), gd = grid.to(d).requires_grad_();
  F::grid_sample(x, gd, "bilinear", "zeros", true).sum().backward();
  EXPECT_EQ(x.grad().device(), d);
  EXPECT_EQ(gd.grad().device(), d);
}

// Every mode, padding, rank and float type, forward and both gradients, against the CPU.
TEST_P(GridSampleDevice, GradientsMatchTheCpu) {
  const Device d = device();
  manual_seed(8);
  const Tensor image = randn({2, 3, 4, 5}, kFloat64), image_grid = rand({2, 3, 4, 2}, kFloat64) * 3 - 1.5;
  const Tensor volume = randn({2, 2, 3, 4, 3}, kFloat64), volume_grid = rand({2, 2, 3, 2, 3}, kFloat64) * 3 - 1.5;
  for (const Dtype dtype : {kFloat64, kFloat32}) {
    for (const bool three_d : {false, true}) {
      const Tensor input = (three_d ? volume : image).to(dtype), grid = (three_d ? volume_grid : image_grid).to(dtype);
      for (const char* mode : {"bilinear", "nearest", "bicubic"}) {
        for (const char* padding : {"zeros", "border", "reflection"}) {
          SCOPED_TRACE(std::string(dtype_name(dtype)) + (three_d ? " 3-D " : " 2-D ") + mode + " " + padding);
          const Tensor x_cpu = input.clone().requires_grad_(), g_cpu = grid.clone().requires_grad_();
          const Tensor x_dev = input.to(d).requires_grad_(), g_dev = grid.to(d).requires_grad_();
          const Tensor y_cpu = F::grid_sample(x_cpu, g_cpu, mode, padding, false);
          const Tensor y_dev = F::grid_sample(x_dev, g_dev, mode, padding, false);
          const double tol = dtype == kFloat64 ? 1e-12 : 1e-5;
          EXPECT_CLOSE_TO_CPU(y_dev, y_cpu, tol, tol);
          const Tensor gy = randn_like(y_cpu);
          const std::vector<Tensor> want = autograd::grad({y_cpu}, {x_cpu, g_cpu}, {gy});
          const std::vector<Tensor> got = autograd::grad({y_dev}, {x_dev, g_dev}, {gy.to(d)});
          EXPECT_CLOSE_TO_CPU(got[0], want[0], tol, tol);
          EXPECT_CLOSE_TO_CPU(got[1], want[1], tol, 10 * tol);
        }
      }
    }
  }
}

EMBER_INSTANTIATE_DEVICE_SUITE(GridSampleDevice);

}  // namespace
