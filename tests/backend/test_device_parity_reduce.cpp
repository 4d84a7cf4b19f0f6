// The Backend entry points beyond element-wise (reduce, matmul, softmax, index_select, gather,
// scatter_add, random, randperm, manual_seed) and the joins built on copy (cat, stack), on each
// accelerator against the CPU. Random numbers differ between device types by design (as in
// PyTorch), so for those the device is checked for reproducibility and for sane statistics.
#include <gtest/gtest.h>

#include <cmath>
#include <functional>
#include <limits>
#include <string>
#include <utility>
#include <vector>

#include "ember/ember.h"
#include "support/devices.h"
#include "support/error_of.h"

namespace {

using namespace ember;
using ember_test::close_to_cpu;

constexpr double kNaN = std::numeric_limits<double>::quiet_NaN();
// Reductions and products sum in a different order on a GPU (trees, not loops).
constexpr double kRtol = 1e-4, kAtol = 1e-5;
constexpr double kRtol16 = 2e-2, kAtol16 = 2e-2;

class DeviceParityReduce : public ember_test::DeviceTest {
 protected:
  void SetUp() override {
    DeviceTest::SetUp();
    if (IsSkipped()) return;
    manual_seed(4321);
  }
  // Always a copy, so that in-place ops on it never touch the reference (the CPU self-test).
  Tensor on(const Tensor& cpu) const { return cpu.to(device(), false, true); }
};

/// Each reduction over `dims` (empty = all) with and without keepdim, values and indices alike.
void check_reductions(const Tensor& x, const Tensor& dx, const std::string& label, double rtol, double atol) {
  const std::vector<std::vector<int64_t>> dim_sets = {{}, {0}, {1}, {-1}, {0, 2}, {2, 0, 1}};
  for (const auto& dims : dim_sets) {
    if (!dims.empty() && x.dim() < 3) continue;
    for (bool keepdim : {false, true}) {
      std::string what = label + " dims {";
      for (int64_t d : dims) what += std::to_string(d) + ",";
      what += keepdim ? "} keepdim" : "}";
      EXPECT_TRUE(close_to_cpu(sum(dx, dims, keepdim), sum(x, dims, keepdim), rtol, atol, "sum " + what));
      EXPECT_TRUE(close_to_cpu(mean(dx, dims, keepdim), mean(x, dims, keepdim), rtol, atol, "mean " + what));
      EXPECT_TRUE(close_to_cpu(amax(dx, dims, keepdim), amax(x, dims, keepdim), 0, 0, "amax " + what));
      EXPECT_TRUE(close_to_cpu(amin(dx, dims, keepdim), amin(x, dims, keepdim), 0, 0, "amin " + what));
      EXPECT_TRUE(close_to_cpu(var(dx, dims, 1, keepdim), var(x, dims, 1, keepdim), rtol, atol, "var " + what));
      EXPECT_TRUE(close_to_cpu(var(dx, dims, 0, keepdim), var(x, dims, 0, keepdim), rtol, atol, "var(0) " + what));
      EXPECT_TRUE(
          close_to_cpu(ember::std(dx, dims, 1, keepdim), ember::std(x, dims, 1, keepdim), rtol, atol, "std " + what));
    }
  }
  for (int64_t dim = -x.dim(); dim < x.dim(); ++dim) {
    for (bool keepdim : {false, true}) {
      const std::string what = label + " dim " + std::to_string(dim) + (keepdim ? " keepdim" : "");
      auto [dv, di] = max(dx, dim, keepdim);
      auto [cv, ci] = max(x, dim, keepdim);
      EXPECT_TRUE(close_to_cpu(dv, cv, 0, 0, "max values " + what));
      EXPECT_TRUE(close_to_cpu(di, ci, 0, 0, "max indices " + what));
      auto [dn, dni] = min(dx, dim, keepdim);
      auto [cn, cni] = min(x, dim, keepdim);
      EXPECT_TRUE(close_to_cpu(dn, cn, 0, 0, "min values " + what));
      EXPECT_TRUE(close_to_cpu(dni, cni, 0, 0, "min indices " + what));
      EXPECT_TRUE(close_to_cpu(argmax(dx, dim, keepdim), argmax(x, dim, keepdim), 0, 0, "argmax " + what));
      EXPECT_TRUE(close_to_cpu(argmin(dx, dim, keepdim), argmin(x, dim, keepdim), 0, 0, "argmin " + what));
      EXPECT_TRUE(close_to_cpu(prod(dx, dim, keepdim), prod(x, dim, keepdim), rtol, atol, "prod " + what));
    }
  }
  EXPECT_TRUE(close_to_cpu(argmax(dx), argmax(x), 0, 0, "argmax all " + label));
  EXPECT_TRUE(close_to_cpu(argmin(dx), argmin(x), 0, 0, "argmin all " + label));
  EXPECT_TRUE(close_to_cpu(dx.max(), x.max(), 0, 0, "max all " + label));
  EXPECT_TRUE(close_to_cpu(dx.min(), x.min(), 0, 0, "min all " + label));
  EXPECT_TRUE(close_to_cpu(prod(dx), prod(x), rtol, atol, "prod all " + label));
}

TEST_P(DeviceParityReduce, EveryReductionOverVariousDims) {
  // Values near 1 keep products finite.
  Tensor x = 1 + 0.1 * randn({4, 5, 6});
  check_reductions(x, on(x), "float32", kRtol, kAtol);
  check_reductions(x.to(kFloat64), on(x.to(kFloat64)), "float64", 1e-12, 1e-12);
  check_reductions(x.to(kFloat16), on(x.to(kFloat16)), "float16", kRtol16, kAtol16);
  check_reductions(x.to(kBFloat16), on(x.to(kBFloat16)), "bfloat16", kRtol16, kAtol16);
}

TEST_P(DeviceParityReduce, ReductionsOfNonContiguousInputs) {
  Tensor base = 1 + 0.1 * randn({6, 5, 8});
  Tensor x = base.permute({2, 0, 1}).slice(0, 1, 8, 2);  // [4, 6, 5], no unit stride anywhere useful
  Tensor dx = on(base).permute({2, 0, 1}).slice(0, 1, 8, 2);
  check_reductions(x, dx, "permuted slice", kRtol, kAtol);
  Tensor row = randn({1, 7, 1});
  check_reductions(row.expand({4, 7, 3}), on(row).expand({4, 7, 3}), "expanded", kRtol, kAtol);
}

TEST_P(DeviceParityReduce, ReductionsOfIntegersAndBool) {
  Tensor i = randint(-50, 50, {5, 6, 7});
  Tensor di = on(i);
  EXPECT_CLOSE_TO_CPU(sum(di), sum(i), 0, 0);
  EXPECT_CLOSE_TO_CPU(sum(di, {1}), sum(i, {1}), 0, 0);
  EXPECT_CLOSE_TO_CPU(sum(di.to(kInt32), {0, 2}), sum(i.to(kInt32), {0, 2}), 0, 0);  // int32 sums to int64
  EXPECT_CLOSE_TO_CPU(sum(di.to(kUInt8), {2}), sum(i.to(kUInt8), {2}), 0, 0);
  EXPECT_CLOSE_TO_CPU(amax(di, {0, 1}), amax(i, {0, 1}), 0, 0);
  EXPECT_CLOSE_TO_CPU(argmin(di.to(kInt16), 2), argmin(i.to(kInt16), 2), 0, 0);
  Tensor small = randint(-2, 3, {5, 6, 4});
  EXPECT_CLOSE_TO_CPU(prod(on(small), 0), prod(small, 0), 0, 0);
  EXPECT_CLOSE_TO_CPU(prod(on(small)), prod(small), 0, 0);
  Tensor b = randn({6, 9}) > 0;
  EXPECT_CLOSE_TO_CPU(sum(on(b)), sum(b), 0, 0);
  EXPECT_CLOSE_TO_CPU(sum(on(b), {0}), sum(b, {0}), 0, 0);
  EXPECT_CLOSE_TO_CPU(amax(on(b), {1}), amax(b, {1}), 0, 0);
  EXPECT_CLOSE_TO_CPU(mean(on(i).to(kFloat32), {1}), mean(i.to(kFloat32), {1}), kRtol, kAtol);
}

TEST_P(DeviceParityReduce, MaxAndArgmaxPropagateNans) {
  Tensor x = randn({5, 8});
  x[1][3].fill_(kNaN);
  x[3][0].fill_(kNaN);
  x[3][6].fill_(kNaN);
  Tensor dx = on(x);
  for (int64_t dim : {0, 1}) {
    auto [dv, di] = max(dx, dim);
    auto [cv, ci] = max(x, dim);
    EXPECT_TRUE(close_to_cpu(dv, cv, 0, 0, "max with NaN dim " + std::to_string(dim)));
    EXPECT_TRUE(close_to_cpu(di, ci, 0, 0, "max indices with NaN dim " + std::to_string(dim)));
    auto [dn, dni] = min(dx, dim);
    auto [cn, cni] = min(x, dim);
    EXPECT_TRUE(close_to_cpu(dn, cn, 0, 0, "min with NaN dim " + std::to_string(dim)));
    EXPECT_TRUE(close_to_cpu(dni, cni, 0, 0, "min indices with NaN dim " + std::to_string(dim)));
    EXPECT_TRUE(close_to_cpu(argmax(dx, dim), argmax(x, dim), 0, 0, "argmax with NaN"));
    EXPECT_TRUE(close_to_cpu(argmin(dx, dim), argmin(x, dim), 0, 0, "argmin with NaN"));
    EXPECT_TRUE(close_to_cpu(amax(dx, {dim}), amax(x, {dim}), 0, 0, "amax with NaN"));
    EXPECT_TRUE(close_to_cpu(sum(dx, {dim}), sum(x, {dim}), kRtol, kAtol, "sum with NaN"));
  }
  EXPECT_CLOSE_TO_CPU(argmax(dx), argmax(x), 0, 0);
  EXPECT_CLOSE_TO_CPU(dx.max(), x.max(), 0, 0);
}

TEST_P(DeviceParityReduce, ArgmaxTiesPickTheCpusIndex) {
  // Many equal values: the index rule (PyTorch's: the first) must not depend on the device's
  // reduction order.
  Tensor x = randint(0, 3, {9, 300}).to(kFloat32);
  Tensor dx = on(x);
  for (int64_t dim : {0, 1}) {
    EXPECT_TRUE(close_to_cpu(argmax(dx, dim), argmax(x, dim), 0, 0, "argmax ties"));
    EXPECT_TRUE(close_to_cpu(argmin(dx, dim), argmin(x, dim), 0, 0, "argmin ties"));
    EXPECT_TRUE(close_to_cpu(std::get<1>(max(dx, dim)), std::get<1>(max(x, dim)), 0, 0, "max index ties"));
  }
  EXPECT_CLOSE_TO_CPU(argmax(dx), argmax(x), 0, 0);
}

TEST_P(DeviceParityReduce, LargeReductionsStayAccurate) {
  Tensor x = rand({1 << 20});
  Tensor dx = on(x);
  EXPECT_CLOSE_TO_CPU(sum(dx), sum(x), 1e-5, 0);
  EXPECT_CLOSE_TO_CPU(mean(dx), mean(x), 1e-5, 0);
  EXPECT_CLOSE_TO_CPU(var(dx), var(x), 1e-4, 0);
  EXPECT_CLOSE_TO_CPU(argmax(dx), argmax(x), 0, 0);
  Tensor wide = randn({3, 100000});
  EXPECT_CLOSE_TO_CPU(sum(on(wide), {1}), sum(wide, {1}), 1e-4, 1e-2);  // sums of |x| are ~8e4
  EXPECT_CLOSE_TO_CPU(sum(on(wide), {0}), sum(wide, {0}), 1e-5, 1e-5);
  Tensor h = rand({100000}).to(kFloat16);
  EXPECT_CLOSE_TO_CPU(sum(on(h)), sum(h), 1e-2, 0);  // accumulates in float32 on both
  EXPECT_CLOSE_TO_CPU(sum(zeros({0, 3}).to(device()), {0}), sum(zeros({0, 3}), {0}), 0, 0);
}

TEST_P(DeviceParityReduce, MatmulShapesAndTransposedOperands) {
  const std::vector<std::pair<std::vector<int64_t>, std::vector<int64_t>>> shapes = {
      {{5, 7}, {7, 3}},       {{1, 9}, {9, 1}},          {{7}, {7, 4}},    {{3, 7}, {7}},          {{7}, {7}},
      {{4, 5, 6}, {4, 6, 3}}, {{2, 1, 4, 5}, {3, 5, 6}}, {{6}, {2, 6, 3}}, {{64, 130}, {130, 70}}, {{3, 0}, {0, 4}},
      {{0, 5}, {5, 2}}};
  for (const auto& [sa, sb] : shapes) {
    Tensor a = randn(sa), b = randn(sb);
    EXPECT_TRUE(close_to_cpu(matmul(on(a), on(b)), matmul(a, b), kRtol, kAtol, "matmul " + std::to_string(a.dim())));
  }
  Tensor a = randn({6, 9}), b = randn({4, 6});
  EXPECT_CLOSE_TO_CPU(mm(on(a).t(), on(b).t()), mm(a.t(), b.t()), kRtol, kAtol);  // both transposed
  EXPECT_CLOSE_TO_CPU(mm(on(b), on(a)), mm(b, a), kRtol, kAtol);
  EXPECT_CLOSE_TO_CPU(mm(on(a).t(), on(a)), mm(a.t(), a), kRtol, kAtol);
  // Operands with no unit stride at all.
  Tensor c = randn({5, 3}), e = randn({6, 2});
  EXPECT_CLOSE_TO_CPU(mm(on(a).slice(1, 0, 9, 2), on(c)), mm(a.slice(1, 0, 9, 2), c), kRtol, kAtol);
  EXPECT_CLOSE_TO_CPU(mm(on(a).t().slice(0, 1, 9, 2), on(e)), mm(a.t().slice(0, 1, 9, 2), e), kRtol, kAtol);
  Tensor p = randn({4, 5, 6}), q = randn({4, 3, 5});
  EXPECT_CLOSE_TO_CPU(bmm(on(q), on(p)), bmm(q, p), kRtol, kAtol);
  EXPECT_CLOSE_TO_CPU(bmm(on(p).transpose(1, 2), on(q).transpose(1, 2)), bmm(p.transpose(1, 2), q.transpose(1, 2)),
                      kRtol, kAtol);
  EXPECT_CLOSE_TO_CPU(bmm(on(p).permute({1, 0, 2}).contiguous().permute({1, 0, 2}), on(p).transpose(1, 2)),
                      bmm(p, p.transpose(1, 2)), kRtol, kAtol);
  // A broadcast (stride-0) batch operand.
  Tensor w = randn({6, 2});
  EXPECT_CLOSE_TO_CPU(matmul(on(p), on(w)), matmul(p, w), kRtol, kAtol);
  EXPECT_CLOSE_TO_CPU(bmm(on(p), on(w).unsqueeze(0).expand({4, 6, 2})), bmm(p, w.unsqueeze(0).expand({4, 6, 2})), kRtol,
                      kAtol);
}

TEST_P(DeviceParityReduce, MatmulInOtherDtypes) {
  Tensor a = randn({33, 47}), b = randn({47, 29});
  EXPECT_CLOSE_TO_CPU(mm(on(a.to(kFloat64)), on(b.to(kFloat64))), mm(a.to(kFloat64), b.to(kFloat64)), 1e-12, 1e-12);
  EXPECT_CLOSE_TO_CPU(mm(on(a.to(kFloat64)).t(), on(a.to(kFloat64))), mm(a.to(kFloat64).t(), a.to(kFloat64)), 1e-12,
                      1e-12);
  // 16-bit products accumulate in float32 on both devices; results differ by the final rounding.
  EXPECT_CLOSE_TO_CPU(mm(on(a.to(kFloat16)), on(b.to(kFloat16))), mm(a.to(kFloat16), b.to(kFloat16)), 1e-2, 5e-2);
  EXPECT_CLOSE_TO_CPU(mm(on(a.to(kBFloat16)), on(b.to(kBFloat16))), mm(a.to(kBFloat16), b.to(kBFloat16)), 2e-2, 2e-1);
  EXPECT_CLOSE_TO_CPU(matmul(on(a.to(kFloat16)).t(), on(a.to(kFloat16))), matmul(a.to(kFloat16).t(), a.to(kFloat16)),
                      1e-2, 1e-1);
}

TEST_P(DeviceParityReduce, SoftmaxAndLogSoftmax) {
  Tensor x = randn({6, 11}) * 5;
  Tensor dx = on(x);
  for (int64_t dim : {-1, 0, 1}) {
    EXPECT_TRUE(close_to_cpu(softmax(dx, dim), softmax(x, dim), 1e-5, 1e-6, "softmax dim " + std::to_string(dim)));
    EXPECT_TRUE(
        close_to_cpu(log_softmax(dx, dim), log_softmax(x, dim), 1e-5, 1e-5, "log_softmax dim " + std::to_string(dim)));
  }
  EXPECT_CLOSE_TO_CPU(softmax(dx.t(), -1), softmax(x.t(), -1), 1e-5, 1e-6);
  // Large logits (stability) and -inf entries (masked positions).
  Tensor big = x * 100;
  big[2].fill_(-std::numeric_limits<double>::infinity());
  big[4][3].fill_(-std::numeric_limits<double>::infinity());
  EXPECT_CLOSE_TO_CPU(softmax(on(big), 1), softmax(big, 1), 1e-5, 1e-6);
  EXPECT_CLOSE_TO_CPU(log_softmax(on(big), 1), log_softmax(big, 1), 1e-5, 1e-4);
  Tensor wide = randn({3, 5000});
  EXPECT_CLOSE_TO_CPU(softmax(on(wide), 1), softmax(wide, 1), 1e-4, 1e-7);
  EXPECT_CLOSE_TO_CPU(log_softmax(on(wide), 1), log_softmax(wide, 1), 1e-5, 1e-5);
  EXPECT_CLOSE_TO_CPU(softmax(on(x.to(kFloat64)), 1), softmax(x.to(kFloat64), 1), 1e-12, 1e-14);
  EXPECT_CLOSE_TO_CPU(softmax(on(x.to(kFloat16)), 1), softmax(x.to(kFloat16), 1), 1e-2, 1e-3);
  EXPECT_CLOSE_TO_CPU(log_softmax(on(x.to(kBFloat16)), 1), log_softmax(x.to(kBFloat16), 1), 2e-2, 5e-2);
}

TEST_P(DeviceParityReduce, IndexSelectGatherScatterAdd) {
  Tensor x = randn({5, 6, 4});
  Tensor dx = on(x);
  Tensor idx = tensor({3, 0, 2, 2, 1});  // valid along every dimension (all have at least 4)
  for (int64_t dim : {0, 1, 2, -1}) {
    EXPECT_TRUE(close_to_cpu(index_select(dx, dim, on(idx)), index_select(x, dim, idx), 0, 0,
                             "index_select dim " + std::to_string(dim)));
    EXPECT_TRUE(close_to_cpu(index_select(dx.transpose(0, 2), dim, on(idx)), index_select(x.transpose(0, 2), dim, idx),
                             0, 0, "index_select transposed dim " + std::to_string(dim)));
  }
  EXPECT_CLOSE_TO_CPU(index_select(on(x.to(kInt32)), 1, on(tensor({5, 0}))),
                      index_select(x.to(kInt32), 1, tensor({5, 0})), 0, 0);
  for (int64_t dim : {0, 1, 2}) {
    Tensor g = randint(0, x.size(dim), {3, 4, 2});
    EXPECT_TRUE(close_to_cpu(gather(dx, dim, on(g)), gather(x, dim, g), 0, 0, "gather dim " + std::to_string(dim)));
    // Duplicate indices accumulate; the order of float additions may differ.
    Tensor src = randn({3, 4, 2});
    EXPECT_TRUE(close_to_cpu(scatter_add(dx, dim, on(g), on(src)), scatter_add(x, dim, g, src), 1e-5, 1e-5,
                             "scatter_add dim " + std::to_string(dim)));
    EXPECT_TRUE(close_to_cpu(scatter_add(dx.to(kFloat64), dim, on(g), on(src.to(kFloat64))),
                             scatter_add(x.to(kFloat64), dim, g, src.to(kFloat64)), 1e-12, 1e-12,
                             "scatter_add float64"));
  }
  // Heavy collisions: everything into a few slots.
  Tensor into = zeros({4, 3});
  Tensor many = randint(0, 4, {5000, 3});
  Tensor vals = rand({5000, 3});
  EXPECT_CLOSE_TO_CPU(scatter_add(on(into), 0, on(many), on(vals)), scatter_add(into, 0, many, vals), 1e-4, 1e-4);
  Tensor ints = zeros({4, 3}, kInt64);
  EXPECT_CLOSE_TO_CPU(scatter_add(on(ints), 0, on(many), on(many)), scatter_add(ints, 0, many, many), 0, 0);
  // gather on a non-contiguous input and index.
  Tensor gi = randint(0, 5, {4, 6});
  EXPECT_CLOSE_TO_CPU(gather(dx.select(2, 1), 0, on(gi)), gather(x.select(2, 1), 0, gi), 0, 0);
  EXPECT_CLOSE_TO_CPU(gather(dx.select(2, 1).t(), 1, on(gi).t().narrow(1, 0, 3)),
                      gather(x.select(2, 1).t(), 1, gi.t().narrow(1, 0, 3)), 0, 0);
}

TEST_P(DeviceParityReduce, CatAndStack) {
  Tensor a = randn({2, 3, 4}), b = randn({2, 5, 4}), c = randn({2, 1, 4});
  EXPECT_CLOSE_TO_CPU(cat({on(a), on(b), on(c)}, 1), cat({a, b, c}, 1), 0, 0);
  EXPECT_CLOSE_TO_CPU(cat({on(a), on(a)}, 0), cat({a, a}, 0), 0, 0);
  EXPECT_CLOSE_TO_CPU(cat({on(a).narrow(2, 1, 3), on(a).narrow(2, 0, 1)}, -1),
                      cat({a.narrow(2, 1, 3), a.narrow(2, 0, 1)}, -1), 0, 0);
  EXPECT_CLOSE_TO_CPU(cat({on(a).transpose(0, 2), on(a).transpose(0, 2)}, 1),
                      cat({a.transpose(0, 2), a.transpose(0, 2)}, 1), 0, 0);
  EXPECT_CLOSE_TO_CPU(cat({on(a), on(a.to(kFloat64))}, 0), cat({a, a.to(kFloat64)}, 0), 0, 0);  // promotes
  EXPECT_CLOSE_TO_CPU(cat({on(zeros({0})), on(a).flatten()}, 0), cat({zeros({0}), a.flatten()}, 0), 0, 0);
  for (int64_t dim : {0, 1, 3, -1}) {
    EXPECT_TRUE(close_to_cpu(stack({on(a), on(a * 2), on(a).neg()}, dim), stack({a, a * 2, a.neg()}, dim), 0, 0,
                             "stack dim " + std::to_string(dim)));
  }
  EXPECT_CLOSE_TO_CPU(stack({on(a).select(1, 0), on(a).select(1, 2)}), stack({a.select(1, 0), a.select(1, 2)}), 0, 0);
}

TEST_P(DeviceParityReduce, RandomIsReproducibleForASeed) {
  const TensorOptions o = TensorOptions().device(device());
  auto draw = [&] {
    return std::vector<Tensor>{rand({1000}, o),
                               randn({33, 31}, o),
                               randint(-5, 17, {999}, o),
                               randperm(257, o),
                               rand({64}, o.dtype(kFloat64)),
                               randn({64}, o.dtype(kFloat16)),
                               rand_like(zeros({7, 3}, o)),
                               randn({1}, o)};
  };
  manual_seed(77);
  std::vector<Tensor> first = draw();
  manual_seed(77);
  std::vector<Tensor> second = draw();
  for (size_t i = 0; i < first.size(); ++i) {
    EXPECT_EQ(first[i].device(), Device(device().type(), device().is_cpu() ? -1 : 0)) << "draw " << i;
    EXPECT_TRUE(equal(first[i].cpu(), second[i].cpu())) << "draw " << i << " differs after the same manual_seed";
  }
  manual_seed(78);
  EXPECT_FALSE(equal(rand({1000}, o).cpu(), first[0].cpu())) << "another seed drew the same numbers";
  // Successive draws differ (the generator advances, also across kernel launches).
  manual_seed(77);
  Tensor a = randn({100}, o), b = randn({100}, o);
  EXPECT_FALSE(equal(a.cpu(), b.cpu()));
}

// cuda::get_rng_state / set_rng_state, as torch.cuda's: a saved state replays the same draws,
// on the device it names, whichever device is current.
TEST_P(DeviceParityReduce, GeneratorStateReplaysDraws) {
  if (!device().is_cuda()) GTEST_SKIP() << "cuda::get_rng_state is for CUDA devices";
  const TensorOptions o = TensorOptions().device(device());
  manual_seed(5);
  const Tensor state = cuda::get_rng_state();
  EXPECT_EQ(state.dtype(), kUInt8);
  EXPECT_TRUE(state.is_cpu());
  const Tensor first = rand({1000}, o).cpu();
  const Tensor second = randn({77}, o).cpu();
  cuda::set_rng_state(state, device().index());
  EXPECT_TRUE(equal(rand({1000}, o).cpu(), first));
  EXPECT_TRUE(equal(randn({77}, o).cpu(), second));
  // The CPU generator is another one: setting it leaves the device's alone.
  const Tensor after = cuda::get_rng_state();
  set_rng_state(get_rng_state());
  EXPECT_TRUE(equal(cuda::get_rng_state(), after));
  EXPECT_NE(ember_test::error_of([] { cuda::set_rng_state(zeros({3}, kUInt8)); }).find("not a CUDA generator state"),
            std::string::npos);
  EXPECT_NE(ember_test::error_of([] { cuda::get_rng_state(1 << 20); }).find("invalid device ordinal"),
            std::string::npos);
}

TEST_P(DeviceParityReduce, RandomStatisticsAreSane) {
  const TensorOptions o = TensorOptions().device(device());
  manual_seed(5);
  Tensor n = randn({100000}, o).cpu().to(kFloat64);
  EXPECT_NEAR(n.mean().item<double>(), 0.0, 0.02);
  EXPECT_NEAR(n.std().item<double>(), 1.0, 0.02);
  EXPECT_TRUE(allclose(n, n));  // no NaN
  Tensor u = rand({100000}, o).cpu().to(kFloat64);
  EXPECT_NEAR(u.mean().item<double>(), 0.5, 0.01);
  EXPECT_NEAR(u.var().item<double>(), 1.0 / 12, 0.005);
  EXPECT_GE(u.min().item<double>(), 0.0);
  EXPECT_LT(u.max().item<double>(), 1.0);
  Tensor h = rand({10000}, o.dtype(kFloat16)).cpu().to(kFloat64);
  EXPECT_GE(h.min().item<double>(), 0.0);
  EXPECT_LT(h.max().item<double>(), 1.0);
  Tensor r = randint(-3, 4, {70000}, o).cpu();
  EXPECT_EQ(r.dtype(), kInt64);
  EXPECT_EQ(r.min().item<int64_t>(), -3);
  EXPECT_EQ(r.max().item<int64_t>(), 3);
  for (int64_t v = -3; v <= 3; ++v) {
    EXPECT_NEAR((r == v).sum().item<double>() / 70000.0, 1.0 / 7, 0.01) << "value " << v;
  }
  Tensor big = randint(0, int64_t{1} << 40, {1000}, o).cpu();
  EXPECT_GE(big.min().item<int64_t>(), 0);
  EXPECT_LT(big.max().item<int64_t>(), int64_t{1} << 40);
  EXPECT_GT(big.max().item<int64_t>(), int64_t{1} << 38);  // the high bits are random too
  for (int64_t len : {1, 2, 10, 1000, 70000}) {
    Tensor p = randperm(len, o);
    EXPECT_EQ(p.dtype(), kInt64);
    Tensor counts = scatter_add(zeros({len}, kInt64), 0, p.cpu(), ones({len}, kInt64));
    EXPECT_TRUE(equal(counts, ones({len}, kInt64))) << "randperm(" << len << ") is no permutation";
  }
  EXPECT_EQ(randperm(0, o).numel(), 0);
}

EMBER_INSTANTIATE_DEVICE_SUITE(DeviceParityReduce);

}  // namespace
