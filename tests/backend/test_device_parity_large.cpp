// Shapes large enough to reach the limits a GPU kernel's indexing and launch geometry must
// respect, on each accelerator against the CPU:
//  * more than 65,535 rows (the limit of a grid's y and z dimensions, and of many a hand-written
//    "one block per row" launch): row-wise softmax and cross-entropy, reductions of rows and of
//    columns, pooling and convolution over that many planes, indexing and products;
//  * reductions long enough that the CUDA plan splits each slice across blocks and merges the
//    partial results (backend/cuda/reduce_plan.h, checked here to really split these shapes);
//  * a tensor of more than 2^31 bytes and elements (uint8), where 32-bit index or offset
//    arithmetic would wrap: fills, reductions with their indices, an in-place element-wise op,
//    indexing and copies at its far end. It takes 2 GiB on the device, so it is skipped when
//    EMBER_TEST_SKIP_LARGE is set and in sanitizer builds (ASan would add its shadow memory), and
//    says so.
// float32 convolutions are compared with TF32 off (backends::cudnn::allow_tf32, on by default):
// the comparison is to float32 rounding.
#include <gtest/gtest.h>

#include <cstdint>
#include <cstdlib>
#include <limits>
#include <optional>
#include <string>
#include <vector>

#include "backend/cuda/launch.h"
#include "backend/cuda/reduce_plan.h"
#include "ember/backends.h"
#include "ember/ember.h"
#include "ember/nn/nn.h"
#include "support/devices.h"

namespace {

using namespace ember;
namespace F = ember::nn::functional;
using ember_test::close_to_cpu;

constexpr int64_t kManyRows = 70'000;  // > 65,535
constexpr double kRtol = 1e-4, kAtol = 1e-5;

#if defined(__SANITIZE_ADDRESS__)
constexpr bool kAddressSanitizer = true;
#elif defined(__has_feature)
#if __has_feature(address_sanitizer)
constexpr bool kAddressSanitizer = true;
#else
constexpr bool kAddressSanitizer = false;
#endif
#else
constexpr bool kAddressSanitizer = false;
#endif

class DeviceParityLarge : public ember_test::DeviceTest {
 protected:
  void SetUp() override {
    DeviceTest::SetUp();
    if (IsSkipped()) return;
    manual_seed(65536);
    exact_.emplace(backends::cudnn::Flags{.allow_tf32 = false});
  }
  void TearDown() override { exact_.reset(); }
  Tensor on(const Tensor& cpu) const { return cpu.to(device(), false, true); }

 private:
  std::optional<backends::cudnn::FlagsGuard> exact_;
};

/// Runs f on CPU leaves and on device leaves, back-propagates sum(out * weights) with the same
/// weights, and compares the outputs and every leaf's gradient.
template <typename Fn>
void check_forward_backward(const std::string& what, const std::vector<Tensor>& cpu_inputs, const Fn& f,
                            const Device& device, double rtol = kRtol, double atol = kAtol) {
  std::vector<Tensor> cpu_leaves, dev_leaves;
  for (const Tensor& x : cpu_inputs) {
    cpu_leaves.push_back(x.detach().clone().requires_grad_());
    dev_leaves.push_back(x.detach().to(device, false, true).requires_grad_());
  }
  const Tensor cpu_out = f(cpu_leaves), dev_out = f(dev_leaves);
  EXPECT_TRUE(close_to_cpu(dev_out, cpu_out.detach(), rtol, atol, what + " forward"));
  const Tensor weights = randn(cpu_out.sizes().vec(), cpu_out.dtype());
  (cpu_out * weights).sum().backward();
  (dev_out * weights.to(device)).sum().backward();
  for (size_t i = 0; i < cpu_leaves.size(); ++i) {
    ASSERT_TRUE(dev_leaves[i].grad().defined()) << what << " input " << i << " has no gradient on the device";
    EXPECT_TRUE(close_to_cpu(dev_leaves[i].grad(), cpu_leaves[i].grad(), rtol, atol,
                             what + " gradient of input " + std::to_string(i)));
  }
}

// ---- more rows than a grid's y or z dimension holds ----

TEST_P(DeviceParityLarge, RowWiseOpsOverMoreThan65535Rows) {
  ASSERT_GT(kManyRows, 65535);
  // The row-wise kernels launch a block per row along x, which holds them all.
  EXPECT_EQ(cuda_impl::launch_rows(kManyRows, 256).blocks, static_cast<unsigned>(kManyRows));
  const Tensor logits = randn({kManyRows, 10});
  check_forward_backward(
      "softmax", {logits}, [](const std::vector<Tensor>& in) { return softmax(in[0], -1); }, device());
  check_forward_backward(
      "log_softmax", {logits}, [](const std::vector<Tensor>& in) { return log_softmax(in[0], 1); }, device());
  const Tensor targets = randint(0, 10, {kManyRows});
  check_forward_backward(
      "cross_entropy", {logits},
      [&](const std::vector<Tensor>& in) { return F::cross_entropy(in[0], targets.to(in[0].device())); }, device());
  check_forward_backward(
      "cross_entropy, no reduction", {logits},
      [&](const std::vector<Tensor>& in) {
        return F::cross_entropy(in[0], targets.to(in[0].device()), nn::Reduction::None);
      },
      device());
  // A row per output with 65 elements (a block each: more than the 64 a thread takes), and 8
  // (a thread each).
  const Tensor wide = randn({kManyRows, 65});
  EXPECT_CLOSE_TO_CPU(sum(on(wide), {1}), sum(wide, {1}), kRtol, kAtol);
  EXPECT_CLOSE_TO_CPU(amax(on(wide), {1}), amax(wide, {1}), 0, 0);
  EXPECT_CLOSE_TO_CPU(argmax(on(wide), 1), argmax(wide, 1), 0, 0);
  EXPECT_CLOSE_TO_CPU(var(on(wide), {1}), var(wide, {1}), kRtol, kAtol);
  const Tensor narrow = randn({kManyRows, 8});
  EXPECT_CLOSE_TO_CPU(mean(on(narrow), {1}), mean(narrow, {1}), kRtol, kAtol);
  // Broadcasting element-wise ops over all those rows.
  const Tensor column = randn({kManyRows, 1}), row = randn({1, 8});
  EXPECT_CLOSE_TO_CPU(on(column) * on(row) + on(narrow), column * row + narrow, 0, 0);
}

TEST_P(DeviceParityLarge, ColumnReductionsOverMoreThan65535Rows) {
  const Tensor x = rand({kManyRows, 8});
  // Eight columns of 70,000: few outputs with long, strided slices, which the CUDA plan cuts
  // into chunks (along the grid's y dimension, kept within its 65,535).
  cuda_impl::ReducePlan plan;
  const int64_t sizes[] = {8, kManyRows}, strides[] = {1, 8};  // x.t(): the reduced dim is strided
  ASSERT_TRUE(cuda_impl::make_reduce_plan(sizes, strides, 2, 1, plan));
  EXPECT_GT(plan.chunks, 1);
  EXPECT_CLOSE_TO_CPU(sum(on(x), {0}), sum(x, {0}), kRtol, kAtol);
  EXPECT_CLOSE_TO_CPU(mean(on(x), {0}), mean(x, {0}), kRtol, kAtol);
  EXPECT_CLOSE_TO_CPU(var(on(x), {0}), var(x, {0}), kRtol, kAtol);
  EXPECT_CLOSE_TO_CPU(argmin(on(x), 0), argmin(x, 0), 0, 0);
  // Many short columns: a block takes several neighbouring ones.
  const Tensor many = randn({300, 5000});
  EXPECT_CLOSE_TO_CPU(sum(on(many), {0}), sum(many, {0}), kRtol, kAtol);
}

TEST_P(DeviceParityLarge, PoolingConvolutionIndexingAndProductsOverMoreThan65535Planes) {
  const Tensor planes = randn({kManyRows, 1, 4, 4});
  check_forward_backward(
      "max_pool2d", {planes}, [](const std::vector<Tensor>& in) { return F::max_pool2d(in[0], {2}); }, device());
  check_forward_backward(
      "avg_pool2d", {planes}, [](const std::vector<Tensor>& in) { return F::avg_pool2d(in[0], {2}); }, device());
  // A convolution over a batch of 70,000 images: cuDNN's kernels may put the batch on a grid
  // dimension of their own.
  check_forward_backward(
      "conv2d", {randn({kManyRows, 1, 4, 4}), randn({2, 1, 3, 3}), randn({2})},
      [](const std::vector<Tensor>& in) { return F::conv2d(in[0], in[1], in[2], {1}, {1}); }, device(), kRtol, 1e-3);
  const Tensor table = randn({kManyRows, 4});
  const Tensor rows = randint(0, kManyRows, {kManyRows});
  check_forward_backward(
      "index_select", {table},
      [&](const std::vector<Tensor>& in) { return index_select(in[0], 0, rows.to(in[0].device())); }, device());
  const Tensor picks = randint(0, 4, {kManyRows, 2});
  check_forward_backward(
      "gather", {table}, [&](const std::vector<Tensor>& in) { return gather(in[0], 1, picks.to(in[0].device())); },
      device());
  const Tensor a = randn({kManyRows, 16}), b = randn({16, 8});
  EXPECT_CLOSE_TO_CPU(matmul(on(a), on(b)), matmul(a, b), kRtol, 1e-4);
}

// ---- reductions split across blocks ----

TEST_P(DeviceParityLarge, ReductionsSplitAcrossBlocks) {
  // Three slices of 400,000 (each cut into chunks merged in order) and one of 5,000,000.
  cuda_impl::ReducePlan rows_plan, all_plan;
  const int64_t rows_sizes[] = {3, 400'000}, rows_strides[] = {400'000, 1};
  const int64_t all_sizes[] = {5'000'000}, all_strides[] = {1};
  ASSERT_TRUE(cuda_impl::make_reduce_plan(rows_sizes, rows_strides, 2, 1, rows_plan));
  ASSERT_TRUE(cuda_impl::make_reduce_plan(all_sizes, all_strides, 1, 0, all_plan));
  EXPECT_GT(rows_plan.chunks, 1);
  EXPECT_GT(all_plan.chunks, 100);

  const Tensor x = rand({3, 400'000});
  const Tensor dx = on(x);
  EXPECT_CLOSE_TO_CPU(sum(dx, {1}), sum(x, {1}), kRtol, kAtol);
  EXPECT_CLOSE_TO_CPU(mean(dx, {1}), mean(x, {1}), kRtol, kAtol);
  EXPECT_CLOSE_TO_CPU(var(dx, {1}), var(x, {1}), kRtol, kAtol);
  EXPECT_CLOSE_TO_CPU(ember::std(dx, {1}, 0), ember::std(x, {1}, 0), kRtol, kAtol);
  EXPECT_CLOSE_TO_CPU(amin(dx, {1}), amin(x, {1}), 0, 0);
  EXPECT_CLOSE_TO_CPU(argmax(dx, 1), argmax(x, 1), 0, 0);
  const Tensor near_one = 1 + 1e-6 * randn({3, 400'000});
  EXPECT_CLOSE_TO_CPU(prod(on(near_one), 1), prod(near_one, 1), 1e-4, 0);

  // One slice of 5,000,000: the maximum twice, in different chunks, and the first must win.
  Tensor y = rand({5'000'000});
  y[4'999'000].fill_(2.0);
  y[3'000'000].fill_(2.0);
  y[123].fill_(-1.0);
  const Tensor dy = on(y);
  EXPECT_CLOSE_TO_CPU(sum(dy), sum(y), kRtol, 0);
  EXPECT_CLOSE_TO_CPU(var(dy), var(y), kRtol, 0);
  EXPECT_EQ(argmax(dy).item<int64_t>(), 3'000'000);
  EXPECT_EQ(argmin(dy).item<int64_t>(), 123);
  EXPECT_CLOSE_TO_CPU(amax(dy), amax(y), 0, 0);
  // A NaN in a late chunk is the maximum, as on the CPU.
  Tensor with_nan = y.clone();
  with_nan[4'500'000].fill_(std::numeric_limits<double>::quiet_NaN());
  EXPECT_CLOSE_TO_CPU(on(with_nan).max(), with_nan.max(), 0, 0);
  EXPECT_CLOSE_TO_CPU(argmax(on(with_nan)), argmax(with_nan), 0, 0);
  // 16-bit data accumulates in float and rounds once; integers sum exactly.
  // (A float16 sum of all of y would overflow to inf on both: 100,000 of them, still split.)
  const Tensor h = y.narrow(0, 0, 100'000).to(kFloat16), bf = y.to(kBFloat16);
  EXPECT_CLOSE_TO_CPU(sum(on(h)), sum(h), 2e-3, 0);
  EXPECT_CLOSE_TO_CPU(mean(on(bf)), mean(bf), 1e-2, 0);
  const Tensor ints = randint(-1000, 1000, {5'000'000});
  EXPECT_CLOSE_TO_CPU(sum(on(ints)), sum(ints), 0, 0);
}

// ---- a tensor of more than 2^31 bytes ----

TEST_P(DeviceParityLarge, ATensorOfMoreThan2To31Bytes) {
  if (std::getenv("EMBER_TEST_SKIP_LARGE") != nullptr) {
    GTEST_SKIP() << "EMBER_TEST_SKIP_LARGE is set: skips the 2 GiB tensor";
  }
  if (kAddressSanitizer) GTEST_SKIP() << "AddressSanitizer build: skips the 2 GiB tensor (and its shadow memory)";
  // Three passes over every element (a fill, a sum, an argmax: each past 2^31 elements and
  // bytes), then reads, products and copies at offsets past 2^31; kept to these because the
  // stand-in device runs them on the CPU.
  const int64_t n = (int64_t{1} << 31) + 4096;
  const int64_t past = (int64_t{1} << 31) + 1;  // the first element no 32-bit offset reaches
  Tensor x;
  try {
    x = full({n}, 2, TensorOptions(kUInt8).device(device()));
  } catch (const OutOfMemoryError& e) {
    GTEST_SKIP() << "no room for a 2 GiB tensor on " << device() << ": " << e.what();
  }
  x[past].fill_(0);
  x[n - 2].fill_(0);
  x.narrow(0, n - 5, 3).fill_(9);
  EXPECT_EQ(sum(x).item<int64_t>(), 2 * n - 4 + 21);
  EXPECT_EQ(argmax(x).item<int64_t>(), n - 5);  // the first of the maxima
  // Views whose storage offset lies past 2^31: a reduction, an element-wise op, a copy.
  const Tensor around = x.narrow(0, past - 9, 16);
  EXPECT_EQ(argmin(around).item<int64_t>(), 9);
  EXPECT_CLOSE_TO_CPU(around + 1,
                      tensor(std::vector<int64_t>{3, 3, 3, 3, 3, 3, 3, 3, 3, 1, 3, 3, 3, 3, 3, 3}).to(kUInt8), 0, 0);
  EXPECT_CLOSE_TO_CPU(x.narrow(0, n - 8, 8), tensor(std::vector<int64_t>{2, 2, 2, 9, 9, 9, 0, 2}).to(kUInt8), 0, 0);
  const Tensor picked = index_select(x, 0, tensor(std::vector<int64_t>{0, past, n - 5, n - 1}).to(device()));
  EXPECT_CLOSE_TO_CPU(picked, tensor(std::vector<int64_t>{2, 0, 9, 2}).to(kUInt8), 0, 0);
}

EMBER_INSTANTIATE_DEVICE_SUITE(DeviceParityLarge);

}  // namespace
