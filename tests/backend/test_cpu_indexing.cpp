// CpuBackend::index_select, gather and scatter_add called directly on views over std::vector
// buffers: results against hand-computed values, every dtype family, strided operands, and
// PyTorch's messages for out-of-range indices.
#include <gtest/gtest.h>

#include <cstdint>
#include <string>
#include <vector>

#include "backend/cpu/cpu_backend.h"
#include "ember/error.h"

namespace ember::cpu {
namespace {

Dims contiguous(const Dims& sizes) {
  Dims strides(sizes.size());
  int64_t s = 1;
  for (int64_t d = static_cast<int64_t>(sizes.size()) - 1; d >= 0; --d) {
    strides[d] = s;
    s *= sizes[d];
  }
  return strides;
}

template <typename T>
TensorView view(std::vector<T>& data, Dims sizes, Dims strides) {
  TensorView v;
  v.data = data.data();
  v.dtype = dtype_v<T>;
  v.sizes = sizes;
  v.strides = strides;
  return v;
}

template <typename T>
TensorView view(std::vector<T>& data, Dims sizes) {
  return view(data, sizes, contiguous(sizes));
}

template <typename F>
std::string error_message(F&& f) {
  try {
    f();
  } catch (const Error& e) {
    return e.what();
  }
  return "<no ember::Error>";
}

// x = [[0, 1, 2], [10, 11, 12]] as T.
template <typename T>
std::vector<T> small_matrix() {
  std::vector<T> x;
  for (int r = 0; r < 2; ++r)
    for (int c = 0; c < 3; ++c) x.push_back(static_cast<T>(r * 10 + c));
  return x;
}

template <typename T>
std::vector<int> as_ints(const std::vector<T>& v) {
  std::vector<int> out;
  for (const T& e : v) out.push_back(static_cast<int>(static_cast<float>(e)));
  return out;
}

// ---- index_select ----

template <typename T>
void check_index_select() {
  std::vector<T> x = small_matrix<T>();
  std::vector<int64_t> idx{2, 0, 2, 1};
  std::vector<T> out(8);
  cpu_backend().index_select(view(x, {2, 3}), 1, view(idx, {4}), view(out, {2, 4}));
  EXPECT_EQ(as_ints(out), (std::vector<int>{2, 0, 2, 1, 12, 10, 12, 11})) << dtype_name(dtype_v<T>);
  std::vector<int64_t> rows{1, 1, 0};
  std::vector<T> picked(9);
  cpu_backend().index_select(view(x, {2, 3}), 0, view(rows, {3}), view(picked, {3, 3}));
  EXPECT_EQ(as_ints(picked), (std::vector<int>{10, 11, 12, 10, 11, 12, 0, 1, 2})) << dtype_name(dtype_v<T>);
}

TEST(CpuIndexing, IndexSelectEveryDtypeFamily) {
  check_index_select<float>();
  check_index_select<double>();
  check_index_select<Half>();
  check_index_select<BFloat16>();
  check_index_select<int8_t>();
  check_index_select<uint8_t>();
  check_index_select<int16_t>();
  check_index_select<int32_t>();
  check_index_select<int64_t>();
  std::vector<uint8_t> flags{1, 0, 0};  // bool storage
  std::vector<int64_t> idx{1, 0};
  std::vector<uint8_t> out(2, 7);
  TensorView fv = view(flags, {3}), ov = view(out, {2});
  fv.dtype = ov.dtype = kBool;
  cpu_backend().index_select(fv, 0, view(idx, {2}), ov);
  EXPECT_EQ(out, (std::vector<uint8_t>{0, 1}));
}

TEST(CpuIndexing, IndexSelectStridedInputsAndLargeTables) {
  // The transpose of small_matrix ([3, 2], strides [1, 3]); rows picked through a strided index.
  std::vector<float> x = small_matrix<float>();
  std::vector<int64_t> idx_storage{2, -1, 0, -1};
  std::vector<float> out(4);
  cpu_backend().index_select(view(x, {3, 2}, {1, 3}), 0, view(idx_storage, {2}, {2}), view(out, {2, 2}));
  EXPECT_EQ(out, (std::vector<float>{2, 12, 0, 10}));
  // An embedding-style lookup large enough to use threads.
  const int64_t vocab = 1000, dim = 64, count = 5000;
  std::vector<float> table(vocab * dim);
  for (size_t i = 0; i < table.size(); ++i) table[i] = static_cast<float>(i);
  std::vector<int64_t> ids(count);
  for (int64_t i = 0; i < count; ++i) ids[i] = (i * 7919) % vocab;
  std::vector<float> emb(count * dim);
  cpu_backend().index_select(view(table, {vocab, dim}), 0, view(ids, {count}), view(emb, {count, dim}));
  for (int64_t i = 0; i < count; ++i) {
    ASSERT_EQ(emb[i * dim], static_cast<float>(ids[i] * dim));
    ASSERT_EQ(emb[i * dim + dim - 1], static_cast<float>(ids[i] * dim + dim - 1));
  }
  // A 0-d input with dim 0 and a 0-d index.
  std::vector<double> scalar{4.5};
  std::vector<int64_t> zero{0};
  std::vector<double> picked(1);
  cpu_backend().index_select(view(scalar, {}), 0, view(zero, {}), view(picked, {}));
  EXPECT_EQ(picked[0], 4.5);
}

TEST(CpuIndexing, IndexSelectRejectsOutOfRange) {
  std::vector<float> x = small_matrix<float>();
  std::vector<float> out(4, -1.0f);
  for (int64_t bad : {3, -1, 100}) {
    std::vector<int64_t> idx{0, bad};
    EXPECT_EQ(error_message([&] {
                cpu_backend().index_select(view(x, {2, 3}), 1, view(idx, {2}), view(out, {2, 2}));
              }),
              "index out of range in self");
  }
  EXPECT_EQ(out, std::vector<float>(4, -1.0f));  // checked before anything is written
  std::vector<int64_t> ok{0};
  EXPECT_THROW(cpu_backend().index_select(view(x, {2, 3}), 2, view(ok, {1}), view(out, {2, 1})), Error);
}

// ---- gather ----

TEST(CpuIndexing, GatherAlongEachDim) {
  std::vector<int32_t> x = small_matrix<int32_t>();
  // dim 1: out[i][j] = x[i][index[i][j]]
  std::vector<int64_t> idx1{2, 2, 0, 1, 0, 0};
  std::vector<int32_t> out1(6);
  cpu_backend().gather(view(x, {2, 3}), 1, view(idx1, {2, 3}), view(out1, {2, 3}));
  EXPECT_EQ(out1, (std::vector<int32_t>{2, 2, 0, 11, 10, 10}));
  // dim 0 with a smaller index: out[i][j] = x[index[i][j]][j]
  std::vector<int64_t> idx0{1, 0};
  std::vector<int32_t> out0(2);
  cpu_backend().gather(view(x, {2, 3}), 0, view(idx0, {1, 2}), view(out0, {1, 2}));
  EXPECT_EQ(out0, (std::vector<int32_t>{10, 1}));
  // A transposed x and a transposed index (dim 0 of the [3, 2] view).
  std::vector<int64_t> idx_t{2, 1, 0, 0};  // stored [2, 2]; seen transposed
  std::vector<int32_t> out_t(4);
  cpu_backend().gather(view(x, {3, 2}, {1, 3}), 0, view(idx_t, {2, 2}, {1, 2}), view(out_t, {2, 2}));
  // out[i][j] = xT[idx_t^T[i][j]][j]; idx_t^T = [[2, 0], [1, 0]]; xT = [[0, 10], [1, 11], [2, 12]]
  EXPECT_EQ(out_t, (std::vector<int32_t>{2, 10, 1, 10}));
}

TEST(CpuIndexing, GatherHalfBoolAndALargeThreadedCase) {
  std::vector<Half> h{Half(0.5f), Half(1.5f), Half(-2.0f)};
  std::vector<int64_t> idx{2, 0};
  std::vector<Half> out(2);
  cpu_backend().gather(view(h, {3}), 0, view(idx, {2}), view(out, {2}));
  EXPECT_EQ(static_cast<float>(out[0]), -2.0f);
  EXPECT_EQ(static_cast<float>(out[1]), 0.5f);

  // Picking one class score per row, as cross-entropy does: [rows, classes] gathered along dim 1.
  const int64_t rows = 60000, classes = 10;
  std::vector<double> scores(rows * classes);
  for (size_t i = 0; i < scores.size(); ++i) scores[i] = static_cast<double>(i);
  std::vector<int64_t> target(rows);
  for (int64_t r = 0; r < rows; ++r) target[r] = (r * 3) % classes;
  std::vector<double> picked(rows);
  cpu_backend().gather(view(scores, {rows, classes}), 1, view(target, {rows, 1}), view(picked, {rows, 1}));
  for (int64_t r = 0; r < rows; ++r) ASSERT_EQ(picked[r], static_cast<double>(r * classes + target[r]));
}

TEST(CpuIndexing, GatherRejectsBadIndicesWithPyTorchsMessage) {
  std::vector<float> x(6, 1.0f);
  std::vector<float> out(4, -1.0f);
  std::vector<int64_t> idx{0, 1, 5, 2};
  EXPECT_EQ(error_message([&] {
              cpu_backend().gather(view(x, {2, 3}), 1, view(idx, {2, 2}), view(out, {2, 2}));
            }),
            "index 5 is out of bounds for dimension 1 with size 3");
  idx[2] = -1;
  EXPECT_EQ(error_message([&] {
              cpu_backend().gather(view(x, {2, 3}), 1, view(idx, {2, 2}), view(out, {2, 2}));
            }),
            "index -1 is out of bounds for dimension 1 with size 3");
  EXPECT_EQ(out, std::vector<float>(4, -1.0f));
  std::vector<int64_t> tall(3, 0);
  std::vector<float> tall_out(3);
  EXPECT_EQ(error_message([&] {
              cpu_backend().gather(view(x, {2, 3}), 1, view(tall, {3, 1}), view(tall_out, {3, 1}));
            }),
            "Size does not match at dimension 0 expected index [3, 1] to be smaller than self [2, 3] apart from "
            "dimension 1");
  EXPECT_THROW(cpu_backend().gather(view(x, {2, 3}), 1, view(tall, {3}), view(tall_out, {3})), Error);
}

TEST(CpuIndexing, GatherAndScatterAdd3dAgainstALoopReference) {
  // x [4, 5, 6]; index [3, 4, 5] (a transposed view of a [5, 4, 3] buffer) along each dim.
  std::vector<double> x(4 * 5 * 6);
  for (size_t i = 0; i < x.size(); ++i) x[i] = static_cast<double>(i) * 0.5;
  const Dims xs{4, 5, 6};
  for (int64_t dim = 0; dim < 3; ++dim) {
    std::vector<int64_t> storage(60);
    for (size_t i = 0; i < storage.size(); ++i) storage[i] = static_cast<int64_t>((i * 7 + 3) % xs[dim]);
    TensorView index = view(storage, {3, 4, 5}, {1, 3, 12});
    auto at = [&](int64_t i, int64_t j, int64_t k) { return storage[i + 3 * j + 12 * k]; };
    std::vector<double> out(60);
    cpu_backend().gather(view(x, {4, 5, 6}), dim, index, view(out, {3, 4, 5}));
    std::vector<double> acc(x.size(), 0.0), src(60);
    for (size_t i = 0; i < src.size(); ++i) src[i] = static_cast<double>(i + 1);
    cpu_backend().scatter_add(view(acc, {4, 5, 6}), dim, index, view(src, {3, 4, 5}));
    std::vector<double> expected_acc(x.size(), 0.0);
    for (int64_t i = 0; i < 3; ++i)
      for (int64_t j = 0; j < 4; ++j)
        for (int64_t k = 0; k < 5; ++k) {
          int64_t c[3] = {i, j, k};
          c[dim] = at(i, j, k);
          int64_t flat = c[0] * 30 + c[1] * 6 + c[2];
          ASSERT_EQ(out[i * 20 + j * 5 + k], x[flat]) << "dim " << dim;
          expected_acc[flat] += src[i * 20 + j * 5 + k];
        }
    EXPECT_EQ(acc, expected_acc) << "dim " << dim;
  }
}

// ---- scatter_add ----

TEST(CpuIndexing, ScatterAddAccumulatesDuplicates) {
  // out starts as a copy of the input; dim 0: out[index[i][j]][j] += src[i][j].
  std::vector<float> out{1, 1, 1, 1, 1, 1};
  std::vector<int64_t> idx{0, 1, 2, 0, 0, 0};
  std::vector<float> src{1, 2, 3, 4, 5, 6};
  cpu_backend().scatter_add(view(out, {3, 2}), 0, view(idx, {3, 2}), view(src, {3, 2}));
  EXPECT_EQ(out, (std::vector<float>{1 + 1 + 5, 1 + 4 + 6, 1, 1 + 2, 1 + 3, 1}));
  // dim 1 with a src larger than index (only index's extent is used).
  std::vector<int64_t> acc(4, 0);
  std::vector<int64_t> idx1{3, 3, 0};
  std::vector<int64_t> src1{10, 20, 30, 99, 99};
  cpu_backend().scatter_add(view(acc, {1, 4}), 1, view(idx1, {1, 3}), view(src1, {1, 5}));
  EXPECT_EQ(acc, (std::vector<int64_t>{30, 0, 0, 30}));
}

TEST(CpuIndexing, ScatterAddDtypesAndAThreadedHistogram) {
  std::vector<Half> h(2, Half(0.0f));
  std::vector<int64_t> idx{1, 1, 1};
  std::vector<Half> ones(3, Half(0.25f));
  cpu_backend().scatter_add(view(h, {2}), 0, view(idx, {3}), view(ones, {3}));
  EXPECT_EQ(static_cast<float>(h[1]), 0.75f);
  std::vector<int8_t> bytes{120, 0};
  std::vector<int8_t> add{10, 0, 0};
  cpu_backend().scatter_add(view(bytes, {2}), 0, view(idx, {3}), view(add, {3}));
  EXPECT_EQ(bytes[1], 10);
  std::vector<int64_t> to_first{0};
  cpu_backend().scatter_add(view(bytes, {2}), 0, view(to_first, {1}), view(add, {1}));
  EXPECT_EQ(bytes[0], static_cast<int8_t>(130 - 256));  // wraps like int8 arithmetic in PyTorch

  // [n, 8] values scattered along dim 0 into 5 bins: each column is a histogram, threads split
  // the columns and never the bins.
  const int64_t n = 40000, cols = 8, bins = 5;
  std::vector<int64_t> bin(n * cols);
  std::vector<int32_t> values(n * cols, 1);
  for (int64_t i = 0; i < n * cols; ++i) bin[i] = (i / cols) % bins;
  std::vector<int32_t> hist(bins * cols, 0);
  cpu_backend().scatter_add(view(hist, {bins, cols}), 0, view(bin, {n, cols}), view(values, {n, cols}));
  for (int32_t v : hist) ASSERT_EQ(v, n / bins);
}

TEST(CpuIndexing, ScatterAddRejectsBadIndicesWithPyTorchsMessage) {
  std::vector<float> out(6, 0.0f);
  std::vector<float> src(6, 1.0f);
  std::vector<int64_t> idx{0, 3, 1, 0, 0, 0};
  EXPECT_EQ(error_message([&] {
              cpu_backend().scatter_add(view(out, {2, 3}), 0, view(idx, {3, 2}), view(src, {3, 2}));
            }),
            "index 3 is out of bounds for dimension 0 with size 2");
  idx[1] = -2;
  EXPECT_EQ(error_message([&] {
              cpu_backend().scatter_add(view(out, {2, 3}), 0, view(idx, {3, 2}), view(src, {3, 2}));
            }),
            "index -2 is out of bounds for dimension 0 with size 2");
  EXPECT_EQ(out, std::vector<float>(6, 0.0f));
}

}  // namespace
}  // namespace ember::cpu
