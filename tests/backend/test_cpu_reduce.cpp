// CpuBackend::reduce and softmax called directly on views over std::vector buffers, and the
// shared combine functors of kernels/reduce_ops.h. References are computed in double (or
// wrapping int64) by plain loops.
#include <gtest/gtest.h>

#include <bit>
#include <cmath>
#include <cstdint>
#include <cstring>
#include <limits>
#include <random>
#include <string>
#include <vector>

#include "backend/cpu/cpu_backend.h"
#include "ember/error.h"
#include "kernels/reduce_ops.h"

namespace ember::cpu {
namespace {

constexpr float kNaN = std::numeric_limits<float>::quiet_NaN();
constexpr float kInf = std::numeric_limits<float>::infinity();

Dims contiguous(const Dims& sizes) {
  Dims strides(sizes.size());
  int64_t s = 1;
  for (int64_t d = static_cast<int64_t>(sizes.size()) - 1; d >= 0; --d) {
    strides[d] = s;
    s *= sizes[d];
  }
  return strides;
}

TensorView view(void* data, Dtype dtype, Dims sizes, Dims strides) {
  TensorView v;
  v.data = data;
  v.dtype = dtype;
  v.sizes = sizes;
  v.strides = strides;
  return v;
}

template <typename T>
TensorView view(std::vector<T>& data, Dims sizes, Dims strides) {
  return view(data.data(), dtype_v<T>, sizes, strides);
}

template <typename T>
TensorView view(std::vector<T>& data, Dims sizes) {
  return view(data.data(), dtype_v<T>, sizes, contiguous(sizes));
}

const TensorView kNoIndices{};

// Reduces the last `reduced` dims of x into a fresh output of dtype O; returns the output.
template <typename O>
std::vector<O> reduce(ReduceOp op, const TensorView& x, int64_t reduced, int64_t correction = 1,
                      std::vector<int64_t>* indices = nullptr) {
  Dims out_sizes;
  int64_t n = 1;
  for (int64_t d = 0; d < x.ndim() - reduced; ++d) {
    out_sizes.push_back(x.sizes[d]);
    n *= x.sizes[d];
  }
  std::vector<O> out(static_cast<size_t>(n));
  TensorView index_view;
  if (indices != nullptr) {
    indices->assign(static_cast<size_t>(n), -7);
    index_view = view(*indices, out_sizes);
  }
  cpu_backend().reduce(op, x, reduced, view(out, out_sizes), index_view, correction);
  return out;
}

std::vector<float> random_floats(size_t n, float lo, float hi, unsigned seed) {
  std::mt19937 gen(seed);
  std::uniform_real_distribution<float> dist(lo, hi);
  std::vector<float> v(n);
  for (float& f : v) f = dist(gen);
  return v;
}

// ---- the combine functors ----

TEST(ReduceOps, SumAndProdIdentities) {
  using kernels::ProdOp;
  using kernels::SumOp;
  EXPECT_EQ(SumOp<float>::combine(SumOp<float>::identity(), 2.5f), 2.5f);
  EXPECT_EQ(ProdOp<int64_t>::combine(ProdOp<int64_t>::identity(), -3), -3);
  EXPECT_EQ(SumOp<double>::combine(1.0, 2.0), 3.0);
}

TEST(ReduceOps, MaxMinPreferNanThenLowerIndex) {
  using VI = kernels::ValueIndex<float>;
  using Max = kernels::MaxOp<float>;
  using Min = kernels::MinOp<float>;
  VI a{1.0f, 4}, b{3.0f, 7}, c{3.0f, 2}, nan_late{kNaN, 9}, nan_early{kNaN, 5};
  EXPECT_EQ(Max::combine(a, b).index, 7);
  EXPECT_EQ(Max::combine(b, c).index, 2);  // tie: lower index, whichever side it comes from
  EXPECT_EQ(Max::combine(c, b).index, 2);
  EXPECT_EQ(Max::combine(b, nan_late).index, 9);
  EXPECT_EQ(Max::combine(nan_late, nan_early).index, 5);
  EXPECT_EQ(Min::combine(a, b).index, 4);
  EXPECT_EQ(Min::combine(a, nan_late).index, 9);
  EXPECT_EQ(Max::combine(Max::identity(), a).index, 4);
  EXPECT_EQ(Min::combine(b, Min::identity()).index, 7);

  // Any tree over the same candidates gives the first NaN.
  std::vector<VI> items{{2.0f, 0}, {kNaN, 1}, {5.0f, 2}, {kNaN, 3}, {5.0f, 4}};
  VI left = Max::identity();
  for (const VI& v : items) left = Max::combine(left, v);
  VI right = Max::identity();
  for (auto it = items.rbegin(); it != items.rend(); ++it) right = Max::combine(*it, right);
  VI tree = Max::combine(Max::combine(items[3], items[4]), Max::combine(Max::combine(items[0], items[2]), items[1]));
  EXPECT_EQ(left.index, 1);
  EXPECT_EQ(right.index, 1);
  EXPECT_EQ(tree.index, 1);
  items[1].value = 1.0f;
  items[3].value = 1.0f;
  VI no_nan = Max::identity();
  for (const VI& v : items) no_nan = Max::combine(v, no_nan);
  EXPECT_EQ(no_nan.index, 2);
}

TEST(ReduceOps, WelfordPushAndMergeMatchTwoPass) {
  using W = kernels::WelfordOp<double>;
  std::vector<float> data = random_floats(1000, -3.0f, 5.0f, 11);
  double mean = 0.0;
  for (float v : data) mean += v;
  mean /= 1000.0;
  double m2 = 0.0;
  for (float v : data) m2 += (v - mean) * (v - mean);

  auto pushed = [&](size_t lo, size_t hi) {
    kernels::WelfordData<double> acc = W::identity();
    for (size_t i = lo; i < hi; ++i) acc = W::push(acc, data[i]);
    return acc;
  };
  auto whole = pushed(0, 1000);
  auto merged = W::combine(W::combine(pushed(0, 123), pushed(123, 600)), W::combine(W::identity(), pushed(600, 1000)));
  for (const auto& r : {whole, merged}) {
    EXPECT_EQ(r.count, 1000);
    EXPECT_NEAR(r.mean, mean, 1e-12);
    EXPECT_NEAR(r.m2, m2, 1e-9 * m2);
  }
  EXPECT_NEAR(W::variance(merged, 1), m2 / 999.0, 1e-9);
  EXPECT_TRUE(std::isnan(W::variance(W::push(W::identity(), 3.0), 1)));
  EXPECT_TRUE(std::isinf(W::variance(pushed(0, 2), 3)));
  EXPECT_TRUE(std::isnan(W::variance(W::identity(), 0)));
}

// ---- sums ----

TEST(CpuReduce, FloatSumOfAMillionIsAccurate) {
  const size_t n = 1000000;
  std::vector<float> x = random_floats(n, 0.0f, 1.0f, 1);
  double ref = 0.0;
  float naive = 0.0f;
  for (float v : x) {
    ref += v;
    naive += v;
  }
  float got = reduce<float>(ReduceOp::Sum, view(x, {static_cast<int64_t>(n)}), 1)[0];
  EXPECT_NEAR(got, ref, 2e-7 * ref);
  // The tolerance is one a single running float cannot meet.
  EXPECT_GT(std::abs(naive - ref), 2e-7 * ref);
  float mean = reduce<float>(ReduceOp::Mean, view(x, {static_cast<int64_t>(n)}), 1)[0];
  EXPECT_NEAR(mean, ref / n, 2e-7 * ref / n);
}

TEST(CpuReduce, LargeFullSumIsDeterministicAndSplitsAcrossThreads) {
  const int64_t n = 5000003;
  std::vector<float> x = random_floats(static_cast<size_t>(n), -1.0f, 2.0f, 2);
  double ref = 0.0;
  for (float v : x) ref += v;
  float first = reduce<float>(ReduceOp::Sum, view(x, {n}), 1)[0];
  float second = reduce<float>(ReduceOp::Sum, view(x, {n}), 1)[0];
  EXPECT_NEAR(first, ref, 1e-6 * std::abs(ref));
  EXPECT_EQ(std::bit_cast<uint32_t>(first), std::bit_cast<uint32_t>(second));
  // The same data seen as [1001, 4995] (0.. rows) summed over both dims agrees closely.
  std::vector<float> x2(x.begin(), x.begin() + 1001 * 4995);
  double ref2 = 0.0;
  for (float v : x2) ref2 += v;
  EXPECT_NEAR(reduce<float>(ReduceOp::Sum, view(x2, {1001, 4995}), 2)[0], ref2, 1e-6 * std::abs(ref2));
}

TEST(CpuReduce, IntegerAndBoolSumsAccumulateInInt64) {
  std::vector<int8_t> bytes(1000, -100);
  EXPECT_EQ(reduce<int64_t>(ReduceOp::Sum, view(bytes, {1000}), 1)[0], -100000);
  std::vector<uint8_t> ubytes(300, 250);
  EXPECT_EQ(reduce<int64_t>(ReduceOp::Sum, view(ubytes, {300}), 1)[0], 75000);
  std::vector<int32_t> ints{2000000000, 2000000000, -5, 7};
  EXPECT_EQ(reduce<int64_t>(ReduceOp::Sum, view(ints, {2, 2}), 1), (std::vector<int64_t>{4000000000, 2}));
  std::vector<int64_t> wraps{std::numeric_limits<int64_t>::max(), 1};
  EXPECT_EQ(reduce<int64_t>(ReduceOp::Sum, view(wraps, {2}), 1)[0], std::numeric_limits<int64_t>::min());
  std::vector<uint8_t> flags{1, 0, 1, 1, 0, 1};  // bool storage
  auto sums = reduce<int64_t>(ReduceOp::Sum, view(flags.data(), kBool, {2, 3}, {3, 1}), 1);
  EXPECT_EQ(sums, (std::vector<int64_t>{2, 2}));
  auto prods = reduce<int64_t>(ReduceOp::Prod, view(flags.data(), kBool, {2, 3}, {3, 1}), 1);
  EXPECT_EQ(prods, (std::vector<int64_t>{0, 0}));
  std::vector<int16_t> shorts{-3, 4, 5, 100};
  EXPECT_EQ(reduce<int64_t>(ReduceOp::Prod, view(shorts, {4}), 1)[0], -6000);
}

TEST(CpuReduce, HalfAndBFloat16AccumulateInFloat) {
  // A 16-bit running sum of ones stalls at 2048 (half) or 256 (bfloat16).
  std::vector<Half> halves(4096, Half(1.0f));
  EXPECT_EQ(static_cast<float>(reduce<Half>(ReduceOp::Sum, view(halves, {4096}), 1)[0]), 4096.0f);
  std::vector<BFloat16> brains(1000, BFloat16(1.0f));
  EXPECT_EQ(static_cast<float>(reduce<BFloat16>(ReduceOp::Sum, view(brains, {1000}), 1)[0]), 1000.0f);
  std::vector<Half> tenths(3000, Half(0.1f));
  float expected = 3000.0f * static_cast<float>(Half(0.1f));
  EXPECT_NEAR(static_cast<float>(reduce<Half>(ReduceOp::Mean, view(tenths, {3000}), 1)[0]), expected / 3000.0f, 1e-4);
  // Column layout for the 16-bit types too.
  std::vector<Half> grid(64 * 40, Half(1.0f));
  auto cols = reduce<Half>(ReduceOp::Sum, view(grid, {40, 64}, {1, 40}), 1);
  for (Half h : cols) EXPECT_EQ(static_cast<float>(h), 64.0f);
}

TEST(CpuReduce, EmptyReductions) {
  std::vector<float> none(1);
  TensorView empty_rows = view(none, {3, 0});
  EXPECT_EQ(reduce<float>(ReduceOp::Sum, empty_rows, 1), (std::vector<float>{0, 0, 0}));
  EXPECT_EQ(reduce<float>(ReduceOp::Prod, empty_rows, 1), (std::vector<float>{1, 1, 1}));
  EXPECT_TRUE(std::isnan(reduce<float>(ReduceOp::Mean, empty_rows, 1)[0]));
  EXPECT_TRUE(std::isnan(reduce<float>(ReduceOp::Var, empty_rows, 1)[2]));
  std::vector<int32_t> no_ints(1);
  EXPECT_EQ(reduce<int64_t>(ReduceOp::Sum, view(no_ints, {0}), 1)[0], 0);
  EXPECT_THROW(reduce<float>(ReduceOp::Max, empty_rows, 1), Error);
  // No outputs: nothing is written.
  EXPECT_TRUE(reduce<float>(ReduceOp::Sum, view(none, {0, 4}), 1).empty());
}

TEST(CpuReduce, NoReducedDimsCopiesOrReducesOneElement) {
  std::vector<int32_t> ints{1, -2, 3, 4, 5, 6};
  // Transposed [3, 2] view, converted to int64 by the copy.
  auto copied = reduce<int64_t>(ReduceOp::Sum, view(ints, {3, 2}, {1, 3}), 0);
  EXPECT_EQ(copied, (std::vector<int64_t>{1, 4, -2, 5, 3, 6}));
  std::vector<float> scalar{2.5f};
  std::vector<int64_t> idx;
  EXPECT_EQ(reduce<float>(ReduceOp::Max, view(scalar, {}), 0, 1, &idx)[0], 2.5f);
  EXPECT_EQ(idx[0], 0);
  EXPECT_TRUE(std::isnan(reduce<float>(ReduceOp::Var, view(scalar, {}), 0, 1)[0]));
  EXPECT_EQ(reduce<float>(ReduceOp::Var, view(scalar, {}), 0, 0)[0], 0.0f);
  EXPECT_EQ(reduce<int64_t>(ReduceOp::ArgMax, view(scalar, {}), 0)[0], 0);
}

// ---- layouts ----

TEST(CpuReduce, StridedAndPermutedInputs) {
  // x is [4, 6, 5] row-major; reduce dims 0 and 2 (front end permutes them last: [6, 4, 5]).
  std::vector<double> x(120);
  for (size_t i = 0; i < x.size(); ++i) x[i] = std::sin(static_cast<double>(i));
  TensorView permuted = view(x, {6, 4, 5}, {5, 30, 1});
  auto sums = reduce<double>(ReduceOp::Sum, permuted, 2);
  auto maxes = reduce<double>(ReduceOp::Max, permuted, 2);
  auto vars = reduce<double>(ReduceOp::Var, permuted, 2);
  for (int64_t j = 0; j < 6; ++j) {
    double s = 0.0, m = -1e9;
    for (int64_t i = 0; i < 4; ++i)
      for (int64_t k = 0; k < 5; ++k) {
        s += x[i * 30 + j * 5 + k];
        m = std::max(m, x[i * 30 + j * 5 + k]);
      }
    double mean = s / 20.0, ss = 0.0;
    for (int64_t i = 0; i < 4; ++i)
      for (int64_t k = 0; k < 5; ++k) ss += std::pow(x[i * 30 + j * 5 + k] - mean, 2);
    EXPECT_NEAR(sums[j], s, 1e-12);
    EXPECT_EQ(maxes[j], m);
    EXPECT_NEAR(vars[j], ss / 19.0, 1e-12);
  }
  // Every other element of each row (inner stride 2), reduced over the row.
  auto every_other = reduce<double>(ReduceOp::Sum, view(x, {12, 5}, {10, 2}), 1);
  for (int64_t r = 0; r < 12; ++r) {
    double s = 0.0;
    for (int64_t k = 0; k < 5; ++k) s += x[r * 10 + 2 * k];
    EXPECT_NEAR(every_other[r], s, 1e-12);
  }
  // A broadcast input (stride 0) reduced over the broadcast dim.
  std::vector<float> row{1.0f, 2.0f, 3.0f};
  EXPECT_EQ(reduce<float>(ReduceOp::Sum, view(row, {3, 7}, {1, 0}), 1), (std::vector<float>{7, 14, 21}));
}

TEST(CpuReduce, ColumnReductionOfAMatrix) {
  // sum(dim=0) of a row-major [64, 512] matrix arrives as [512, 64] with strides [1, 512].
  std::vector<float> m = random_floats(64 * 512, -1.0f, 1.0f, 3);
  TensorView cols = view(m, {512, 64}, {1, 512});
  auto sums = reduce<float>(ReduceOp::Sum, cols, 1);
  auto means = reduce<float>(ReduceOp::Mean, cols, 1);
  auto vars = reduce<float>(ReduceOp::Var, cols, 1, 0);
  std::vector<int64_t> where;
  auto mins = reduce<float>(ReduceOp::Min, cols, 1, 1, &where);
  auto argmax = reduce<int64_t>(ReduceOp::ArgMax, cols, 1);
  for (int64_t j = 0; j < 512; ++j) {
    double s = 0.0;
    int64_t lo = 0, hi = 0;
    for (int64_t i = 0; i < 64; ++i) {
      float v = m[i * 512 + j];
      s += v;
      if (v < m[lo * 512 + j]) lo = i;
      if (v > m[hi * 512 + j]) hi = i;
    }
    double ss = 0.0;
    for (int64_t i = 0; i < 64; ++i) ss += std::pow(m[i * 512 + j] - s / 64.0, 2);
    ASSERT_NEAR(sums[j], s, 1e-5);
    ASSERT_NEAR(means[j], s / 64.0, 1e-6);
    ASSERT_NEAR(vars[j], ss / 64.0, 1e-6);
    ASSERT_EQ(where[j], lo);
    ASSERT_EQ(mins[j], m[lo * 512 + j]);
    ASSERT_EQ(argmax[j], hi);
  }
}

TEST(CpuReduce, TallColumnReductionSplitsRowsDeterministically) {
  // [200000, 6] summed over dim 0: six outputs, each over 200000 rows.
  const int64_t rows = 200000;
  std::vector<float> m = random_floats(static_cast<size_t>(rows * 6), 0.0f, 1.0f, 4);
  m[123457 * 6 + 2] = 5.0f;
  m[150001 * 6 + 2] = 5.0f;  // a tie later in another chunk: the first wins
  m[7 * 6 + 4] = kNaN;
  TensorView cols = view(m, {6, rows}, {1, 6});
  auto sums = reduce<float>(ReduceOp::Sum, cols, 1);
  auto argmax = reduce<int64_t>(ReduceOp::ArgMax, cols, 1);
  auto vars = reduce<float>(ReduceOp::Var, cols, 1);
  for (int64_t j = 0; j < 6; ++j) {
    double s = 0.0;
    for (int64_t i = 0; i < rows; ++i) s += m[i * 6 + j];
    if (j == 4) {
      EXPECT_TRUE(std::isnan(sums[j]));
      EXPECT_TRUE(std::isnan(vars[j]));
    } else {
      EXPECT_NEAR(sums[j], s, 1e-6 * s);
      EXPECT_NEAR(vars[j], 1.0 / 12.0, 2e-3);
    }
  }
  EXPECT_EQ(argmax[2], 123457);
  EXPECT_EQ(argmax[4], 7);
  auto again = reduce<float>(ReduceOp::Sum, cols, 1);
  EXPECT_EQ(std::memcmp(again.data(), sums.data(), sums.size() * sizeof(float)), 0);  // bitwise, NaN included
}

TEST(CpuReduce, ManyShortRowsInParallel) {
  const int64_t rows = 100000;
  std::vector<int32_t> x(static_cast<size_t>(rows * 3));
  for (size_t i = 0; i < x.size(); ++i) x[i] = static_cast<int32_t>(i % 1000) - 500;
  auto sums = reduce<int64_t>(ReduceOp::Sum, view(x, {rows, 3}), 1);
  auto maxes = reduce<int32_t>(ReduceOp::Max, view(x, {rows, 3}), 1);
  for (int64_t r = 0; r < rows; ++r) {
    int64_t s = int64_t{x[r * 3]} + x[r * 3 + 1] + x[r * 3 + 2];
    ASSERT_EQ(sums[r], s);
    ASSERT_EQ(maxes[r], std::max({x[r * 3], x[r * 3 + 1], x[r * 3 + 2]}));
  }
}

// ---- max, min, arg ----

TEST(CpuReduce, MaxMinPropagateTheFirstNan) {
  std::vector<float> x{1.0f, kNaN, 3.0f, kNaN, -2.0f, 0.0f, 5.0f, 5.0f};
  std::vector<int64_t> where;
  auto maxes = reduce<float>(ReduceOp::Max, view(x, {2, 4}), 1, 1, &where);
  EXPECT_TRUE(std::isnan(maxes[0]));
  EXPECT_EQ(where[0], 1);
  EXPECT_EQ(maxes[1], 5.0f);
  EXPECT_EQ(where[1], 2);  // first of the tied maxima
  auto mins = reduce<float>(ReduceOp::Min, view(x, {2, 4}), 1, 1, &where);
  EXPECT_TRUE(std::isnan(mins[0]));
  EXPECT_EQ(where[0], 1);
  EXPECT_EQ(mins[1], -2.0f);
  EXPECT_EQ(where[1], 0);
  EXPECT_EQ(reduce<int64_t>(ReduceOp::ArgMax, view(x, {2, 4}), 1), (std::vector<int64_t>{1, 2}));
  EXPECT_EQ(reduce<int64_t>(ReduceOp::ArgMin, view(x, {2, 4}), 1), (std::vector<int64_t>{1, 0}));
  // Without indices requested the vectorised value-only path must still see the NaN.
  std::vector<float> long_row(1000, 1.0f);
  long_row[637] = kNaN;
  EXPECT_TRUE(std::isnan(reduce<float>(ReduceOp::Max, view(long_row, {1000}), 1)[0]));
  EXPECT_TRUE(std::isnan(reduce<float>(ReduceOp::Min, view(long_row, {1000}), 1)[0]));
  EXPECT_EQ(reduce<int64_t>(ReduceOp::ArgMin, view(long_row, {1000}), 1)[0], 637);
}

TEST(CpuReduce, ExtremesOfIntegersInfinitiesAndHalf) {
  std::vector<float> infs(40, -kInf);
  std::vector<int64_t> where;
  EXPECT_EQ(reduce<float>(ReduceOp::Max, view(infs, {40}), 1, 1, &where)[0], -kInf);
  EXPECT_EQ(where[0], 0);
  std::vector<int8_t> bytes{-128, 127, -128, 127};
  EXPECT_EQ(reduce<int8_t>(ReduceOp::Min, view(bytes, {4}), 1)[0], -128);
  EXPECT_EQ(reduce<int64_t>(ReduceOp::ArgMax, view(bytes, {4}), 1)[0], 1);
  EXPECT_EQ(reduce<int64_t>(ReduceOp::ArgMin, view(bytes, {4}), 1)[0], 0);
  std::vector<uint8_t> flags{0, 0, 1, 1};
  EXPECT_EQ(reduce<int64_t>(ReduceOp::ArgMax, view(flags.data(), kBool, {4}, {1}), 1)[0], 2);
  std::vector<Half> halves{Half(1.5f), Half(-7.0f), Half(65504.0f), Half(3.0f)};
  EXPECT_EQ(static_cast<float>(reduce<Half>(ReduceOp::Max, view(halves, {4}), 1)[0]), 65504.0f);
  EXPECT_EQ(static_cast<float>(reduce<Half>(ReduceOp::Min, view(halves, {4}), 1)[0]), -7.0f);
}

TEST(CpuReduce, ArgMaxOfAHugeRowFindsTheFirstOccurrence) {
  const int64_t n = 3000000;  // split into chunks: the tie is resolved across them
  std::vector<float> x = random_floats(static_cast<size_t>(n), -1.0f, 1.0f, 5);
  x[2900000] = 9.0f;
  x[1500000] = 9.0f;
  x[2000000] = -9.0f;
  std::vector<int64_t> where;
  EXPECT_EQ(reduce<float>(ReduceOp::Max, view(x, {n}), 1, 1, &where)[0], 9.0f);
  EXPECT_EQ(where[0], 1500000);
  EXPECT_EQ(reduce<int64_t>(ReduceOp::ArgMin, view(x, {n}), 1)[0], 2000000);
  x[2999999] = kNaN;
  x[2500000] = kNaN;
  EXPECT_EQ(reduce<int64_t>(ReduceOp::ArgMax, view(x, {n}), 1)[0], 2500000);
}

// ---- variance ----

TEST(CpuReduce, VarianceCorrectionsAndDegenerateCounts) {
  std::vector<float> x{1, 2, 3, 4};
  EXPECT_NEAR(reduce<float>(ReduceOp::Var, view(x, {4}), 1, 1)[0], 5.0 / 3.0, 1e-6);
  EXPECT_NEAR(reduce<float>(ReduceOp::Var, view(x, {4}), 1, 0)[0], 1.25, 1e-6);
  EXPECT_TRUE(std::isinf(reduce<float>(ReduceOp::Var, view(x, {4}), 1, 4)[0]));
  EXPECT_TRUE(std::isinf(reduce<float>(ReduceOp::Var, view(x, {4}), 1, 6)[0]));
  EXPECT_TRUE(std::isnan(reduce<float>(ReduceOp::Var, view(x, {4, 1}), 1, 1)[0]));  // one element each
  // A large offset: a one-pass sum-of-squares formula would lose every digit here.
  std::vector<float> offset(10000);
  for (size_t i = 0; i < offset.size(); ++i) offset[i] = 10000.0f + static_cast<float>(i % 2);
  EXPECT_NEAR(reduce<float>(ReduceOp::Var, view(offset, {10000}), 1, 0)[0], 0.25, 1e-6);
  std::vector<Half> halves{Half(1.0f), Half(2.0f), Half(3.0f), Half(4.0f)};
  EXPECT_NEAR(static_cast<float>(reduce<Half>(ReduceOp::Var, view(halves, {4}), 1, 1)[0]), 5.0 / 3.0, 1e-3);
}

// ---- softmax ----

template <typename T>
std::vector<T> softmax(std::vector<T>& x, Dims sizes, bool log) {
  std::vector<T> out(x.size());
  cpu_backend().softmax(view(x, sizes), view(out, sizes), log);
  return out;
}

void expect_softmax_close(const std::vector<float>& x, int64_t rows, int64_t n, const std::vector<float>& got, bool log,
                          double tol) {
  for (int64_t r = 0; r < rows; ++r) {
    double mx = -INFINITY, sum = 0.0;
    for (int64_t i = 0; i < n; ++i) mx = std::max(mx, double{x[r * n + i]});
    for (int64_t i = 0; i < n; ++i) sum += std::exp(x[r * n + i] - mx);
    for (int64_t i = 0; i < n; ++i) {
      double ref = log ? x[r * n + i] - mx - std::log(sum) : std::exp(x[r * n + i] - mx) / sum;
      ASSERT_NEAR(got[r * n + i], ref, tol * std::max(1.0, std::abs(ref))) << "row " << r << " col " << i;
    }
  }
}

TEST(CpuSoftmax, MatchesADoubleReference) {
  for (int64_t n : {1, 7, 10, 16, 33, 1000}) {
    std::vector<float> x = random_floats(static_cast<size_t>(64 * n), -20.0f, 20.0f, static_cast<unsigned>(n));
    expect_softmax_close(x, 64, n, softmax(x, {64, n}, false), false, 2e-6);
    expect_softmax_close(x, 64, n, softmax(x, {64, n}, true), true, 2e-6);
  }
  // In place, on a 3-d tensor: rows are the last dim.
  std::vector<float> x3 = random_floats(2 * 3 * 37, -5.0f, 5.0f, 77);
  std::vector<float> copy = x3;
  cpu_backend().softmax(view(x3, {2, 3, 37}), view(x3, {2, 3, 37}), true);
  expect_softmax_close(copy, 6, 37, x3, true, 2e-6);
  std::vector<double> d{1.0, 2.0, 3.0};
  auto sd = softmax(d, {3}, false);
  double denom = std::exp(-2.0) + std::exp(-1.0) + 1.0;
  EXPECT_NEAR(sd[2], 1.0 / denom, 1e-15);
}

TEST(CpuSoftmax, ExpIsAccurateAcrossItsRange) {
  // Rows [0, v]: softmax is [1 / (1 + e^v), e^v / (1 + e^v)]; v covers tiny, subnormal and 0.
  std::vector<float> x;
  for (float v = -110.0f; v <= 0.0f; v += 0.37f) {
    x.push_back(0.0f);
    x.push_back(v);
  }
  int64_t rows = static_cast<int64_t>(x.size() / 2);
  auto got = softmax(x, {rows, 2}, false);
  for (int64_t r = 0; r < rows; ++r) {
    double e = std::exp(static_cast<double>(x[r * 2 + 1]));
    double ref = e / (1.0 + e);
    if (ref > std::numeric_limits<float>::min()) {
      ASSERT_NEAR(got[r * 2 + 1], ref, 4e-7 * ref) << x[r * 2 + 1];
    } else {
      ASSERT_NEAR(got[r * 2 + 1], ref, 2e-45) << x[r * 2 + 1];
    }
  }
}

TEST(CpuSoftmax, StabilityInfinitiesAndNan) {
  std::vector<float> x{1000.0f, 1001.0f, -kInf, -kInf, -kInf, -kInf, 0.0f, kNaN, 2.0f};
  auto s = softmax(x, {3, 3}, false);
  EXPECT_NEAR(s[0], 1.0 / (1.0 + std::exp(1.0)), 1e-6);
  EXPECT_NEAR(s[1], 1.0 / (1.0 + std::exp(-1.0)), 1e-6);
  EXPECT_EQ(s[2], 0.0f);
  for (int i = 3; i < 9; ++i) EXPECT_TRUE(std::isnan(s[i])) << i;
  auto l = softmax(x, {3, 3}, true);
  EXPECT_NEAR(l[1], -std::log1p(std::exp(-1.0)), 1e-6);
  EXPECT_EQ(l[2], -kInf);
  for (int i = 3; i < 9; ++i) EXPECT_TRUE(std::isnan(l[i])) << i;
}

TEST(CpuSoftmax, HalfAndBFloat16ComputeInFloat) {
  std::vector<Half> h{Half(1.0f), Half(2.0f), Half(3.0f), Half(4.0f)};
  auto sh = softmax(h, {4}, false);
  auto lh = softmax(h, {4}, true);
  double denom = std::exp(-3.0) + std::exp(-2.0) + std::exp(-1.0) + 1.0;
  for (int i = 0; i < 4; ++i) {
    EXPECT_NEAR(static_cast<float>(sh[i]), std::exp(i - 3.0) / denom, 1e-3);
    EXPECT_NEAR(static_cast<float>(lh[i]), i - 3.0 - std::log(denom), 4e-3);
  }
  std::vector<BFloat16> b(300, BFloat16(0.5f));
  auto sb = softmax(b, {300}, false);
  EXPECT_NEAR(static_cast<float>(sb[299]), 1.0 / 300.0, 2e-5);
  std::vector<int32_t> ints{1, 2};
  EXPECT_THROW(softmax(ints, {2}, false), Error);
}

}  // namespace
}  // namespace ember::cpu
