// CpuBackend::matmul called directly on views over std::vector buffers, against a naive
// double-precision (or wrapping int64) reference: every dtype family, transposed and strided
// operands, broadcast batches, size-0 and size-1 edges, and both sides of the small-product cutoff.
#include <gtest/gtest.h>
#include <omp.h>

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <limits>
#include <random>
#include <string>
#include <type_traits>
#include <vector>

#include "backend/cpu/cpu_backend.h"
#include "ember/error.h"

namespace ember::cpu {
namespace {

/// How a logical [batch, rows, cols] operand is laid out in its buffer.
enum class Layout {
  RowMajor,          // strides {rows*cols, cols, 1}
  Transposed,        // stored [batch, cols, rows]: strides {rows*cols, 1, rows}
  EveryOtherColumn,  // neither inner stride is 1: strides {2*rows*cols, 2*cols, 2}
  BroadcastRow,      // one row repeated: strides {cols, 0, 1}
};

template <typename T>
struct TestMatrix {
  std::vector<T> storage;
  TensorView view;
  T at(int64_t b, int64_t r, int64_t c) const {
    return storage[static_cast<size_t>(b * view.strides[0] + r * view.strides[1] + c * view.strides[2])];
  }
};

template <typename T>
T random_value(std::mt19937& gen) {
  if constexpr (std::is_integral_v<T>) {
    return static_cast<T>(std::uniform_int_distribution<int>(-9, 9)(gen));
  } else {
    return T(std::uniform_real_distribution<float>(-1.0f, 1.0f)(gen));
  }
}

/// A [batch, rows, cols] operand with the given layout; with shared_batch every batch entry reads
/// the same matrix (batch stride 0), as a broadcast batch dimension does.
template <typename T>
TestMatrix<T> make_matrix(int64_t batch, int64_t rows, int64_t cols, Layout layout, std::mt19937& gen,
                          bool shared_batch = false) {
  TestMatrix<T> m;
  int64_t per_batch = 0;
  Dims strides;
  switch (layout) {
    case Layout::RowMajor:
      per_batch = rows * cols;
      strides = {per_batch, cols, 1};
      break;
    case Layout::Transposed:
      per_batch = rows * cols;
      strides = {per_batch, 1, rows};
      break;
    case Layout::EveryOtherColumn:
      per_batch = 2 * rows * cols;
      strides = {per_batch, 2 * cols, 2};
      break;
    case Layout::BroadcastRow:
      per_batch = cols;
      strides = {per_batch, 0, 1};
      break;
  }
  if (shared_batch) strides[0] = 0;
  m.storage.resize(static_cast<size_t>(std::max<int64_t>(per_batch * (shared_batch ? 1 : batch), 1)));
  for (T& v : m.storage) v = random_value<T>(gen);
  m.view = TensorView{m.storage.data(), Dims{batch, rows, cols}, strides, dtype_v<T>};
  return m;
}

template <typename T>
TensorView output_view(std::vector<T>& out, int64_t batch, int64_t m, int64_t n) {
  return TensorView{out.data(), Dims{batch, m, n}, Dims{m * n, n, 1}, dtype_v<T>};
}

/// Relative precision of the result's type: the floor of any comparison.
template <typename T>
double unit_roundoff() {
  if constexpr (std::is_same_v<T, Half>) return 1.0 / 2048;
  if constexpr (std::is_same_v<T, BFloat16>) return 1.0 / 256;
  if constexpr (std::is_same_v<T, float>) return 6e-8;
  return 1.2e-16;
}

template <typename T>
double to_double(T v) {
  if constexpr (std::is_same_v<T, Half> || std::is_same_v<T, BFloat16>) {
    return static_cast<double>(static_cast<float>(v));
  } else {
    return static_cast<double>(v);
  }
}

/// Runs matmul on the two operands and compares every output element with the reference.
template <typename T>
void check_product(const TestMatrix<T>& a, const TestMatrix<T>& b, const std::string& what) {
  const int64_t batch = a.view.sizes[0], m = a.view.sizes[1], k = a.view.sizes[2], n = b.view.sizes[2];
  std::vector<T> out(static_cast<size_t>(batch * m * n), T(77));
  cpu_backend().matmul(a.view, b.view, output_view(out, batch, m, n));
  int failures = 0;
  for (int64_t bi = 0; bi < batch; ++bi) {
    for (int64_t i = 0; i < m; ++i) {
      for (int64_t j = 0; j < n; ++j) {
        const T got = out[static_cast<size_t>((bi * m + i) * n + j)];
        if constexpr (std::is_integral_v<T>) {
          uint64_t sum = 0;  // wraps like int64 arithmetic
          for (int64_t p = 0; p < k; ++p) {
            sum += static_cast<uint64_t>(static_cast<int64_t>(a.at(bi, i, p))) *
                   static_cast<uint64_t>(static_cast<int64_t>(b.at(bi, p, j)));
          }
          const T expected = static_cast<T>(sum);
          if (got != expected && failures++ < 5) {
            ADD_FAILURE() << what << ": out[" << bi << "," << i << "," << j << "] = " << +got << ", expected "
                          << +expected;
          }
        } else {
          double sum = 0, magnitude = 0;
          for (int64_t p = 0; p < k; ++p) {
            const double x = to_double(a.at(bi, i, p));
            const double y = to_double(b.at(bi, p, j));
            sum += x * y;
            magnitude += std::abs(x * y);
          }
          // Rounding the result once, plus the float32 (or float64) accumulation error.
          const double accumulation_eps = std::is_same_v<T, double> ? 1.2e-16 : 6e-8;
          const double tolerance =
              unit_roundoff<T>() * std::abs(sum) + 4.0 * static_cast<double>(k) * accumulation_eps * magnitude + 1e-30;
          const double value = to_double(got);
          if (!(std::abs(value - sum) <= tolerance) && failures++ < 5) {
            ADD_FAILURE() << what << ": out[" << bi << "," << i << "," << j << "] = " << value << ", expected " << sum
                          << " (tolerance " << tolerance << ")";
          }
        }
      }
    }
  }
  EXPECT_EQ(failures, 0) << what;
}

template <typename T>
void check_shape(int64_t batch, int64_t m, int64_t k, int64_t n, Layout la, Layout lb, uint32_t seed = 1) {
  std::mt19937 gen(seed);
  auto a = make_matrix<T>(batch, m, k, la, gen);
  auto b = make_matrix<T>(batch, k, n, lb, gen);
  check_product(a, b,
                std::string(dtype_name(dtype_v<T>)) + " " + std::to_string(batch) + "x" + std::to_string(m) + "x" +
                    std::to_string(k) + "x" + std::to_string(n) + " layouts " + std::to_string(static_cast<int>(la)) +
                    "/" + std::to_string(static_cast<int>(lb)));
}

// Shapes on both sides of the small-product cutoff (direct loop vs BLAS), odd sizes included.
struct Shape {
  int64_t m, k, n;
};
const Shape kShapes[] = {
    {1, 1, 1}, {1, 5, 1}, {1, 300, 1}, {7, 13, 5}, {3, 4, 2}, {33, 47, 29}, {64, 784, 10}, {1, 512, 64}, {100, 1, 70},
};

template <typename T>
void check_all_shapes_and_layouts() {
  const Layout layouts[] = {Layout::RowMajor, Layout::Transposed, Layout::EveryOtherColumn};
  for (const Shape& s : kShapes) {
    for (Layout la : layouts) {
      for (Layout lb : layouts) check_shape<T>(1, s.m, s.k, s.n, la, lb);
    }
  }
}

TEST(CpuMatmul, Float32AllLayouts) { check_all_shapes_and_layouts<float>(); }
TEST(CpuMatmul, Float64AllLayouts) { check_all_shapes_and_layouts<double>(); }
TEST(CpuMatmul, Float16AllLayouts) { check_all_shapes_and_layouts<Half>(); }
TEST(CpuMatmul, BFloat16AllLayouts) { check_all_shapes_and_layouts<BFloat16>(); }
TEST(CpuMatmul, Int64AllLayouts) { check_all_shapes_and_layouts<int64_t>(); }
TEST(CpuMatmul, Int32AllLayouts) { check_all_shapes_and_layouts<int32_t>(); }

TEST(CpuMatmul, MlpShapesFloat32) {
  // The quickstart MLP's products as Linear issues them: x @ w.t(), dY.t() @ x, dY @ w.
  check_shape<float>(1, 64, 784, 512, Layout::RowMajor, Layout::Transposed);
  check_shape<float>(1, 512, 64, 784, Layout::Transposed, Layout::RowMajor);
  check_shape<float>(1, 64, 512, 512, Layout::RowMajor, Layout::RowMajor);
}

// On several threads, float32 x @ w.t() products of at least 64^3 multiply-adds go to oneDNN's
// matmul primitive (cached per geometry) instead of sgemm: the same answers, on first use and
// from the cache, batched or not.
TEST(CpuMatmul, TransposedRightOperandOnTwoThreads) {
  const int before = omp_get_max_threads();
  omp_set_num_threads(2);
  for (int round = 0; round < 2; ++round) {
    check_shape<float>(1, 64, 784, 512, Layout::RowMajor, Layout::Transposed, 3 + round);
    check_shape<float>(1, 65, 70, 66, Layout::RowMajor, Layout::Transposed, 5 + round);
    check_shape<float>(3, 64, 64, 64, Layout::RowMajor, Layout::Transposed, 7 + round);
  }
  omp_set_num_threads(before);
}

TEST(CpuMatmul, Batched) {
  check_shape<float>(4, 33, 47, 29, Layout::RowMajor, Layout::Transposed);
  check_shape<float>(50, 3, 4, 5, Layout::Transposed, Layout::RowMajor);  // small: threaded over the batch
  check_shape<float>(300, 9, 10, 11, Layout::EveryOtherColumn, Layout::Transposed);
  check_shape<double>(5, 20, 30, 40, Layout::RowMajor, Layout::EveryOtherColumn);
  check_shape<Half>(6, 17, 19, 23, Layout::Transposed, Layout::Transposed);
  check_shape<int64_t>(7, 13, 11, 5, Layout::RowMajor, Layout::Transposed);
  check_shape<int16_t>(40, 8, 9, 10, Layout::Transposed, Layout::EveryOtherColumn);
}

TEST(CpuMatmul, BroadcastOperands) {
  std::mt19937 gen(3);
  // One weight matrix shared by every batch entry (batch stride 0), both sides of the cutoff.
  for (int64_t m : {2, 40}) {
    auto a = make_matrix<float>(5, m, 37, Layout::RowMajor, gen);
    auto b = make_matrix<float>(5, 37, 21, Layout::Transposed, gen, /*shared_batch=*/true);
    check_product(a, b, "shared b, m=" + std::to_string(m));
  }
  // A row repeated by a stride of 0: no BLAS layout fits, so it is packed first.
  auto a = make_matrix<float>(2, 50, 60, Layout::BroadcastRow, gen);
  auto b = make_matrix<float>(2, 60, 70, Layout::RowMajor, gen);
  check_product(a, b, "broadcast rows of a");
  auto bi = make_matrix<int64_t>(2, 60, 7, Layout::BroadcastRow, gen);
  auto ai = make_matrix<int64_t>(2, 3, 60, Layout::RowMajor, gen);
  check_product(ai, bi, "int64, broadcast rows of b");
}

TEST(CpuMatmul, SizeOneDimensionsWithArbitraryStrides) {
  // The stride of a size-1 dimension is meaningless; the BLAS must not be handed it as a leading dimension.
  const int64_t k = 500;
  std::vector<float> a_data(static_cast<size_t>(k)), b_data(static_cast<size_t>(k * 10));
  for (size_t i = 0; i < a_data.size(); ++i) a_data[i] = static_cast<float>(i % 7) - 3.0f;
  for (size_t i = 0; i < b_data.size(); ++i) b_data[i] = static_cast<float>(i % 5) - 2.0f;
  auto wrap = [](std::vector<float>& data, Dims sizes, Dims strides) {
    TestMatrix<float> m{data, {}};
    m.view = TensorView{m.storage.data(), sizes, strides, kFloat32};
    return m;
  };
  // A single row with row stride 0, against a column with a huge unused column stride (direct
  // loop) and against ten columns (BLAS).
  check_product(wrap(a_data, {1, 1, k}, {3, 0, 1}), wrap(b_data, {1, k, 1}, {0, 1, 12345}), "1xKx1, stray strides");
  check_product(wrap(a_data, {1, 1, k}, {3, 0, 1}), wrap(b_data, {1, k, 10}, {0, 10, 1}), "1xKx10, stray strides");
  // An outer product: K = 1 with stray strides on both size-1 dimensions.
  check_product(wrap(a_data, {1, 100, 1}, {0, 1, 0}), wrap(b_data, {1, 1, 80}, {0, 99, 1}), "100x1x80, stray strides");
}

TEST(CpuMatmul, ZeroSizes) {
  std::mt19937 gen(5);
  for (auto [m, k, n] : {Shape{0, 3, 4}, Shape{3, 4, 0}, Shape{0, 0, 0}}) {
    auto a = make_matrix<float>(2, m, k, Layout::RowMajor, gen);
    auto b = make_matrix<float>(2, k, n, Layout::RowMajor, gen);
    std::vector<float> out(1, 5.0f);
    EXPECT_NO_THROW(cpu_backend().matmul(a.view, b.view, output_view(out, 2, m, n)));
    EXPECT_EQ(out[0], 5.0f) << "nothing to write, yet the buffer changed";
  }
  // K = 0: a sum of nothing, so every output element is zero, whatever the buffer held.
  for (int64_t batch : {1, 3}) {
    auto a = make_matrix<float>(batch, 4, 0, Layout::RowMajor, gen);
    auto b = make_matrix<float>(batch, 0, 6, Layout::RowMajor, gen);
    std::vector<float> out(static_cast<size_t>(batch * 24), std::numeric_limits<float>::quiet_NaN());
    cpu_backend().matmul(a.view, b.view, output_view(out, batch, 4, 6));
    for (float v : out) EXPECT_EQ(v, 0.0f);
  }
  auto ai = make_matrix<int64_t>(1, 2, 0, Layout::RowMajor, gen);
  auto bi = make_matrix<int64_t>(1, 0, 3, Layout::RowMajor, gen);
  std::vector<int64_t> outi(6, 9);
  cpu_backend().matmul(ai.view, bi.view, output_view(outi, 1, 2, 3));
  for (int64_t v : outi) EXPECT_EQ(v, 0);
  std::vector<float> none;
  auto a0 = make_matrix<float>(0, 3, 4, Layout::RowMajor, gen);
  auto b0 = make_matrix<float>(0, 4, 5, Layout::RowMajor, gen);
  EXPECT_NO_THROW(cpu_backend().matmul(a0.view, b0.view, output_view(none, 0, 3, 5)));
}

TEST(CpuMatmul, IntegersWrapLikePyTorch) {
  // int8: 300 products of 1 sum to 300, which wraps to 44, as torch.ones(1, 300, dtype=torch.int8) @
  // torch.ones(300, 1, dtype=torch.int8) gives.
  std::vector<int8_t> ones(300, 1);
  std::vector<int8_t> out8(1);
  cpu_backend().matmul(TensorView{ones.data(), Dims{1, 1, 300}, Dims{300, 300, 1}, kInt8},
                       TensorView{ones.data(), Dims{1, 300, 1}, Dims{300, 1, 1}, kInt8}, output_view(out8, 1, 1, 1));
  EXPECT_EQ(out8[0], 44);
  // int64 overflow wraps modulo 2^64 instead of saturating or trapping:
  // (2^62 + 1) * 4 + 2^62 * 2 = 2^64 + 2^63 + 4, which is -2^63 + 4 modulo 2^64.
  const int64_t big = int64_t{1} << 62;
  std::vector<int64_t> a = {big + 1, big}, b = {4, 2};
  std::vector<int64_t> out(1);
  cpu_backend().matmul(TensorView{a.data(), Dims{1, 1, 2}, Dims{2, 2, 1}, kInt64},
                       TensorView{b.data(), Dims{1, 2, 1}, Dims{2, 1, 1}, kInt64}, output_view(out, 1, 1, 1));
  EXPECT_EQ(out[0], std::numeric_limits<int64_t>::min() + 4);
  check_shape<uint8_t>(2, 9, 31, 7, Layout::RowMajor, Layout::Transposed);
  check_shape<int8_t>(1, 64, 200, 3, Layout::Transposed, Layout::RowMajor);
}

TEST(CpuMatmul, BoolIsRejectedLikePyTorch) {
  bool a[4] = {true, false, true, true};
  bool out[4] = {};
  TensorView v{a, Dims{1, 2, 2}, Dims{4, 2, 1}, kBool};
  TensorView o{out, Dims{1, 2, 2}, Dims{4, 2, 1}, kBool};
  try {
    cpu_backend().matmul(v, v, o);
    FAIL() << "bool matmul did not throw";
  } catch (const Error& e) {
    EXPECT_STREQ(e.what(), "\"addmm_impl_cpu_\" not implemented for 'Bool'");
  }
}

template <typename T>
void check_inside_parallel_region() {
  // Nested parallelism is allowed here on purpose, so that a BLAS that started a team of its own
  // under each of our threads could; matmul keeps it on the calling thread, and must still be right.
  const int saved_levels = omp_get_max_active_levels();
  omp_set_max_active_levels(2);
#pragma omp parallel num_threads(2)
  {
    std::mt19937 gen(static_cast<uint32_t>(11 + omp_get_thread_num()));
    auto a = make_matrix<T>(3, 200, 150, Layout::RowMajor, gen);
    auto b = make_matrix<T>(3, 150, 170, Layout::Transposed, gen);
    check_product(a, b, "inside a parallel region, thread " + std::to_string(omp_get_thread_num()));
  }
  omp_set_max_active_levels(saved_levels);
}

TEST(CpuMatmul, InsideAnOpenMpRegion) {
  check_inside_parallel_region<float>();   // oneDNN
  check_inside_parallel_region<double>();  // OpenBLAS
}

}  // namespace
}  // namespace ember::cpu
