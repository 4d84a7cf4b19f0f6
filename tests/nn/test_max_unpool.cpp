// MaxUnpool1d/2d/3d and functional::max_unpool1d/2d/3d (ember/nn/unpool.h): values and input
// gradients against PyTorch's (tools/gen_indexing_golden.py), the layers' options, PyTorch's
// messages, finite differences and the stand-in device against the CPU.
#include <gtest/gtest.h>

#include <string>
#include <vector>

#include "ember/ember.h"
#include "ember/io/safetensors.h"
#include "ember/nn/unpool.h"
#include "support/devices.h"
#include "support/error_of.h"
#include "support/golden_cases.h"
#include "support/gradcheck.h"

namespace {

using namespace ember;
using ember_test::error_of;

std::vector<int64_t> ints(const std::string& text) {
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

Tensor unpool(int64_t d, const Tensor& x, const Tensor& index, IntList kernel, IntList stride, IntList padding,
              IntList output_size) {
  namespace F = nn::functional;
  if (d == 1) return F::max_unpool1d(x, index, kernel, stride, padding, output_size);
  if (d == 2) return F::max_unpool2d(x, index, kernel, stride, padding, output_size);
  return F::max_unpool3d(x, index, kernel, stride, padding, output_size);
}

TEST(MaxUnpool, MatchesPyTorchValuesAndGradients) {
  const io::SafetensorsData g = io::load_safetensors(EMBER_SOURCE_DIR "/tests/nn/golden/max_unpool_golden.safetensors");
  int ran = 0;
  for (const ember_test::GoldenCase& c : ember_test::golden_cases(g.metadata)) {
    SCOPED_TRACE(c.description);
    Tensor x = g.at(c.prefix + "x").clone().requires_grad_();
    const Tensor index = g.at(c.prefix + "index");
    const std::vector<int64_t> kernel = ints(c.options.at("kernel")), stride = ints(c.options.at("stride")),
                               padding = ints(c.options.at("padding")), output_size = ints(c.options.at("output_size"));
    const Tensor y = unpool(c.num("d"), x, index, kernel, stride, padding, output_size);
    ember_test::expect_close(y, g.at(c.prefix + "y"), 0, 0, "y");
    y.backward(g.at(c.prefix + "gy"));
    ember_test::expect_close(x.grad(), g.at(c.prefix + "gx"), 0, 0, "gx");
    ++ran;
  }
  EXPECT_EQ(ran, 7);
}

TEST(MaxUnpool, LayersTakePyTorchsArguments) {
  nn::MaxUnpool2d unpool2(2);
  EXPECT_EQ(unpool2.name(), "MaxUnpool2d");
  EXPECT_EQ(unpool2.stride.vec(), (std::vector<int64_t>{2, 2}));  // stride=None: the kernel size
  nn::MaxUnpool3d unpool3(3, {.stride = 2, .padding = 1});
  EXPECT_EQ(unpool3.stride.vec(), (std::vector<int64_t>{2, 2, 2}));
  EXPECT_EQ(unpool3.padding.vec(), (std::vector<int64_t>{1, 1, 1}));
  nn::MaxUnpool1d unpool1(2, 1);
  EXPECT_EQ(unpool1.name(), "MaxUnpool1d");
  EXPECT_TRUE(unpool2.named_parameters().empty());

  manual_seed(3);
  const Tensor x = randn({1, 2, 4, 4});
  const auto pooled_pair = max_pool2d_with_indices(x, {2, 2});
  const Tensor pooled = std::get<0>(pooled_pair), indices = std::get<1>(pooled_pair);
  const Tensor restored = unpool2.forward(pooled, indices);
  EXPECT_EQ(restored.sizes().vec(), (std::vector<int64_t>{1, 2, 4, 4}));
  // Every maximum is back in its place, everything else is zero.
  EXPECT_TRUE(equal(restored, where(restored != 0, x, zeros_like(x))));
  EXPECT_EQ(unpool2.forward(pooled, indices, {5, 5}).sizes().vec(), (std::vector<int64_t>{1, 2, 5, 5}));
  EXPECT_EQ(unpool2.forward(pooled, indices, {1, 2, 5, 5}).sizes().vec(), (std::vector<int64_t>{1, 2, 5, 5}));
}

TEST(MaxUnpool, ErrorsMatchPyTorch) {
  namespace F = nn::functional;
  manual_seed(4);
  const auto pooled_pair = max_pool2d_with_indices(randn({1, 2, 4, 4}), {2, 2});
  const Tensor y = std::get<0>(pooled_pair), i = std::get<1>(pooled_pair);
  EXPECT_EQ(error_of([&] {
              F::max_unpool2d(y, i, {2}, {}, {0}, {6, 5});
            }),
            "invalid output_size \"(6, 5)\" (dim 0 must be between 2 and 6)");
  EXPECT_EQ(error_of([&] { F::max_unpool2d(y, i, {2}, {}, {0}, {5}); }),
            "output_size should be a sequence containing 2 or 4 elements, but it has a length of '1'");
  EXPECT_EQ(error_of([&] { F::max_unpool2d(y, i.to(kFloat32), {2}); }),
            "elements in indices should be type int64 but got: Float");
  EXPECT_EQ(error_of([&] { F::max_unpool2d(y, i.narrow(3, 0, 1), {2}); }),
            "Expected shape of indices to be same as that of the input tensor ([1, 2, 2, 2]) but got indices tensor "
            "with shape: [1, 2, 2, 1]");
  // The first bad index in row-major order is named.
  const int64_t first = i.flatten()[0].item<int64_t>() + 20;
  EXPECT_EQ(error_of([&] { F::max_unpool2d(y, i + 20, {2}); }),
            "Found an invalid max index: " + std::to_string(first) + " (output volumes are of size 4x4)");
  EXPECT_EQ(error_of([&] { F::max_unpool2d(y[0][0], i[0][0], {2}); }),
            "Input to max_unpooling2d should be a 3d or 4d Tensor, but got a tensor with 2 dimensions.");
  EXPECT_EQ(error_of([&] { F::max_unpool1d(y[0][0][0], i[0][0][0], {2}); }),
            "Input to max_unpooling2d should be a 3d or 4d Tensor, but got a tensor with 2 dimensions.");
  EXPECT_EQ(error_of([&] { F::max_unpool3d(y[0], i[0], {2}); }),
            "Input to max_unpooling3d should be a 4d or 5d Tensor, but got a tensor with 3 dimensions.");
  const Tensor flat = i.reshape({1, 2, 4});
  EXPECT_EQ(error_of([&] {
              F::max_unpool1d(y.reshape({1, 2, 4}), flat + 20, {2});
            }),
            "Found an invalid max index: " + std::to_string(first) + " (output volumes are of size 8x1)");
  nn::MaxUnpool2d layer(2);
  EXPECT_NE(error_of([&] { layer.forward(y); }).find("indices"), std::string::npos);
}

TEST(MaxUnpool, GradientMatchesFiniteDifferences) {
  // Windows that do not overlap: a position two windows share takes one value, so it has no
  // derivative for the other (PyTorch gives both the gradient there, and so does ember).
  manual_seed(5);
  const auto pooled_pair = max_pool2d_with_indices(randn({2, 6, 4}, kFloat64), {3, 2}, {3, 2}, {1, 0});
  const Tensor y = std::get<0>(pooled_pair), i = std::get<1>(pooled_pair);
  test::gradcheck("max_unpool2d",
                  [idx = i](const std::vector<Tensor>& in) {
                    return nn::functional::max_unpool2d(in[0], idx, {3, 2}, {3, 2}, {1, 0}, {6, 4});
                  },
                  {y});
}

class MaxUnpoolDevice : public ember_test::DeviceTest {};

TEST_P(MaxUnpoolDevice, MatchesTheCpu) {
  manual_seed(6);
  const auto pooled_pair = max_pool2d_with_indices(randn({2, 3, 6, 6}), {2, 2});
  const Tensor y = std::get<0>(pooled_pair), i = std::get<1>(pooled_pair);
  nn::MaxUnpool2d layer(2);
  Tensor on_device = y.to(device(), false, /*copy=*/true).requires_grad_();
  Tensor on_cpu = y.detach().clone().requires_grad_();
  const Tensor out = layer.forward(on_device, i.to(device()));
  const Tensor reference = layer.forward(on_cpu, i);
  EXPECT_CLOSE_TO_CPU(out, reference, 0, 0);
  const Tensor w = randn(reference.sizes());
  (out * w.to(device())).sum().backward();
  (reference * w).sum().backward();
  EXPECT_CLOSE_TO_CPU(on_device.grad(), on_cpu.grad(), 0, 0);
}

EMBER_INSTANTIATE_DEVICE_SUITE(MaxUnpoolDevice);

}  // namespace
