// The switches of ember/backends.h on each accelerator: under use_deterministic_algorithms,
// scatter_add (and the backward of gather and index_select, which scatter-add) gives the CPU's
// result bit for bit; convolutions under cudnn.deterministic repeat bit for bit; benchmarked
// convolutions (cudnn.benchmark) and those with TF32 allowed or not match the CPU to their
// precision. On CUDA these choose other kernels and cuDNN algorithms than the defaults do.
#include <gtest/gtest.h>

#include <cstring>
#include <string>
#include <vector>

#include "ember/backends.h"
#include "ember/ember.h"
#include "ember/nn/nn.h"
#include "support/devices.h"

namespace {

using namespace ember;
namespace F = ember::nn::functional;
using ember_test::close_to_cpu;

class DeviceDeterminism : public ember_test::DeviceTest {
 protected:
  void SetUp() override {
    DeviceTest::SetUp();
    if (IsSkipped()) return;
    manual_seed(2718);
  }
  Tensor on(const Tensor& cpu) const { return cpu.to(device(), false, true); }
};

bool same_bits(const Tensor& a, const Tensor& b) {
  const Tensor x = a.to(Device(kCPU)).contiguous(), y = b.to(Device(kCPU)).contiguous();
  return x.dtype() == y.dtype() && x.sizes().vec() == y.sizes().vec() &&
         std::memcmp(x.data_ptr(), y.data_ptr(), x.nbytes()) == 0;
}

TEST_P(DeviceDeterminism, ScatterAddAddsInTheCpusOrderUnderDeterministicAlgorithms) {
  DeterministicAlgorithmsGuard deterministic(true);
  // Few targets and many additions into each, where the order decides the float rounding.
  const Tensor out = randn({4, 50}), src = randn({3000, 50}), index = randint(0, 4, {3000, 50});
  for (const Dtype dtype : {kFloat32, kFloat64, kFloat16, kBFloat16}) {
    const std::string what = "scatter_add dim 0 " + std::string(dtype_name(dtype));
    const Tensor o = out.to(dtype), s = src.to(dtype);
    EXPECT_TRUE(close_to_cpu(scatter_add(on(o), 0, on(index), on(s)), scatter_add(o, 0, index, s), 0, 0, what));
  }
  // Along the last dim, and a 1-d index (one column).
  const Tensor index1 = randint(0, 3, {50, 2000}), src1 = randn({50, 2000});
  EXPECT_TRUE(close_to_cpu(scatter_add(on(zeros({50, 3})), 1, on(index1), on(src1)),
                           scatter_add(zeros({50, 3}), 1, index1, src1), 0, 0, "scatter_add dim 1"));
  const Tensor flat = randint(0, 5, {20000}), values = randn({20000});
  EXPECT_TRUE(close_to_cpu(scatter_add(on(zeros({5})), 0, on(flat), on(values)),
                           scatter_add(zeros({5}), 0, flat, values), 0, 0, "scatter_add 1-d"));
  // Their backward passes scatter-add too.
  const Tensor x = randn({6, 40});
  const Tensor picks = randint(0, 40, {6, 3000});
  const Tensor rows = randint(0, 6, {5000});
  for (const bool select : {false, true}) {
    const Tensor xc = x.clone().requires_grad_(), xd = on(x).requires_grad_();
    const Tensor yc = select ? index_select(xc, 0, rows) : gather(xc, 1, picks);
    const Tensor yd = select ? index_select(xd, 0, on(rows)) : gather(xd, 1, on(picks));
    const Tensor w = randn(yc.sizes().vec());
    (yc * w).sum().backward();
    (yd * on(w)).sum().backward();
    EXPECT_TRUE(close_to_cpu(xd.grad(), xc.grad(), 0, 0, select ? "index_select backward" : "gather backward"));
  }
}

TEST_P(DeviceDeterminism, ScatterAddWithoutTheModeMatchesTheCpuToRounding) {
  ASSERT_FALSE(are_deterministic_algorithms_enabled());
  const Tensor src = randn({3000, 50}), index = randint(0, 4, {3000, 50});
  EXPECT_CLOSE_TO_CPU(scatter_add(on(zeros({4, 50})), 0, on(index), on(src)),
                      scatter_add(zeros({4, 50}), 0, index, src), 1e-4, 1e-4);
}

// A convolution's forward and both backward passes on the device.
struct ConvResults {
  Tensor y, gx, gw, gb;
};

ConvResults conv_on(const Device& device, const Tensor& x, const Tensor& w, const Tensor& b, const Tensor& gy) {
  const Tensor xl = x.to(device, false, true).requires_grad_(), wl = w.to(device, false, true).requires_grad_();
  const Tensor bl = b.to(device, false, true).requires_grad_();
  const Tensor y = F::conv2d(xl, wl, bl, {1}, {1});
  (y * gy.to(device)).sum().backward();
  return {y.detach(), xl.grad(), wl.grad(), bl.grad()};
}

void expect_conv_close(const ConvResults& got, const ConvResults& want, double rtol, double atol,
                       const std::string& what) {
  EXPECT_TRUE(close_to_cpu(got.y, want.y, rtol, atol, what + " forward"));
  EXPECT_TRUE(close_to_cpu(got.gx, want.gx, rtol, atol, what + " input gradient"));
  EXPECT_TRUE(close_to_cpu(got.gw, want.gw, rtol, 10 * atol, what + " weight gradient"));
  EXPECT_TRUE(close_to_cpu(got.gb, want.gb, rtol, 10 * atol, what + " bias gradient"));
}

TEST_P(DeviceDeterminism, ConvolutionsUnderEachSwitchMatchTheCpu) {
  const Tensor x = randn({8, 16, 20, 20}), w = randn({32, 16, 3, 3}) * 0.1, b = randn({32});
  const Tensor gy = randn({8, 32, 20, 20});
  const ConvResults cpu = conv_on(Device(kCPU), x, w, b, gy);
  {
    // Deterministic algorithms: the same bits every time, and the CPU's values to float32 rounding.
    backends::cudnn::FlagsGuard flags({.deterministic = true, .allow_tf32 = false});
    const ConvResults first = conv_on(device(), x, w, b, gy), second = conv_on(device(), x, w, b, gy);
    EXPECT_TRUE(same_bits(first.y, second.y));
    EXPECT_TRUE(same_bits(first.gx, second.gx));
    EXPECT_TRUE(same_bits(first.gw, second.gw));
    EXPECT_TRUE(same_bits(first.gb, second.gb));
    expect_conv_close(first, cpu, 1e-4, 1e-4, "deterministic");
  }
  {
    // use_deterministic_algorithms alone makes convolutions deterministic too.
    DeterministicAlgorithmsGuard deterministic(true);
    backends::cudnn::FlagsGuard exact({.allow_tf32 = false});
    const ConvResults first = conv_on(device(), x, w, b, gy), second = conv_on(device(), x, w, b, gy);
    EXPECT_TRUE(same_bits(first.gw, second.gw));
    expect_conv_close(first, cpu, 1e-4, 1e-4, "use_deterministic_algorithms");
  }
  {
    // Benchmarked: whatever algorithm was fastest, the values are the CPU's to float32 rounding.
    backends::cudnn::FlagsGuard flags({.benchmark = true, .allow_tf32 = false});
    expect_conv_close(conv_on(device(), x, w, b, gy), cpu, 1e-4, 1e-4, "benchmark");
    expect_conv_close(conv_on(device(), x, w, b, gy), cpu, 1e-4, 1e-4, "benchmark, cached choice");
  }
  {
    // TF32 (the default outside the device tests, whose fixture turns it off): products with
    // about 10 bits of mantissa, sums of 144 of them.
    backends::cudnn::FlagsGuard tf32({.allow_tf32 = true});
    expect_conv_close(conv_on(device(), x, w, b, gy), cpu, 1e-2, 2e-2, "tf32");
  }
}

EMBER_INSTANTIATE_DEVICE_SUITE(DeviceDeterminism);

}  // namespace
