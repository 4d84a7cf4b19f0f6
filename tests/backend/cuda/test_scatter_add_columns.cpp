// The deterministic CUDA scatter_add (backend/cuda/index_geometry.h's column_geometry and
// scatter_add_column, run by indexing.cu under use_deterministic_algorithms): every column run on
// the host, in any order of columns, must give the CPU backend's result bit for bit on random
// floats, where any other order of additions into a target would round differently. Out-of-range
// indices add nothing and are reported by their position along the dimension.
#include <gtest/gtest.h>

#include <algorithm>
#include <cstdint>
#include <cstring>
#include <random>
#include <vector>

#include "backend/cpu/cpu_backend.h"
#include "backend/cuda/index_geometry.h"

namespace ember::cuda_impl {
namespace {

template <typename T>
struct Buffer {
  std::vector<T> data;
  TensorView view;
};

// A strided view: dims stored in reverse order (so no operand is contiguous) with a step of 2.
template <typename T>
Buffer<T> strided(const Dims& sizes, std::mt19937& rng, bool reversed) {
  Buffer<T> b;
  Dims strides(sizes.size(), 0);
  int64_t s = 2;
  for (size_t k = 0; k < sizes.size(); ++k) {
    const size_t d = reversed ? k : sizes.size() - 1 - k;
    strides[d] = s;
    s *= sizes[d];
  }
  b.data.resize(static_cast<size_t>(s));
  std::normal_distribution<float> dist(0.0f, 1.0f);
  for (T& e : b.data) e = static_cast<T>(dist(rng));
  b.view.data = b.data.data();
  b.view.sizes = sizes;
  b.view.strides = strides;
  b.view.dtype = dtype_v<T>;
  return b;
}

Buffer<int64_t> random_index(const Dims& sizes, int64_t bound, std::mt19937& rng) {
  Buffer<int64_t> b = strided<int64_t>(sizes, rng, false);
  std::uniform_int_distribution<int64_t> dist(0, bound - 1);
  for (int64_t& e : b.data) e = dist(rng);  // few targets, many additions into each
  return b;
}

template <typename T>
void expect_columns_match_the_cpu(const Dims& out_sizes, const Dims& index_sizes, int64_t dim, uint32_t seed) {
  std::mt19937 rng(seed);
  Buffer<T> out = strided<T>(out_sizes, rng, true);
  Buffer<T> src = strided<T>(index_sizes, rng, false);
  Buffer<int64_t> index = random_index(index_sizes, out_sizes[static_cast<size_t>(dim)], rng);
  std::vector<T> got = out.data;

  cpu::CpuBackend().scatter_add(out.view, dim, index.view, src.view);

  const IndexGeometry g = scatter_add_geometry(out.view, dim, index.view, src.view);
  const IndexGeometry columns = column_geometry(g);
  const int64_t length = g.sizes[g.dim];
  const int64_t count = index.view.numel() / length;
  // Columns in reverse: threads run them in any order, which must not matter.
  for (int64_t c = count; c-- > 0;) {
    EXPECT_EQ(scatter_add_column(got.data(), index.data.data(), src.data.data(), columns, length, c, SequentialAdd{}),
              -1);
  }
  EXPECT_EQ(std::memcmp(got.data(), out.data.data(), got.size() * sizeof(T)), 0)
      << "dim " << dim << ": the columns did not add in the CPU's order";
}

TEST(CudaScatterAddColumns, MatchTheCpuBitForBitOnRandomFloats) {
  for (int64_t dim = 0; dim < 3; ++dim) {
    Dims index_sizes{3, 4, 5};
    index_sizes[static_cast<size_t>(dim)] = 40;  // 40 additions per column into 2 targets
    Dims out_sizes{4, 5, 6};
    out_sizes[static_cast<size_t>(dim)] = 2;
    expect_columns_match_the_cpu<float>(out_sizes, index_sizes, dim, 1 + static_cast<uint32_t>(dim));
    expect_columns_match_the_cpu<double>(out_sizes, index_sizes, dim, 11 + static_cast<uint32_t>(dim));
    expect_columns_match_the_cpu<Half>(out_sizes, index_sizes, dim, 21 + static_cast<uint32_t>(dim));
    expect_columns_match_the_cpu<BFloat16>(out_sizes, index_sizes, dim, 31 + static_cast<uint32_t>(dim));
  }
  // One dimension: a single column walks the whole index (as_strided's backward, say).
  expect_columns_match_the_cpu<float>(Dims{3}, Dims{500}, 0, 41);
}

TEST(CudaScatterAddColumns, TheOrderOfAdditionsMatters) {
  // The check above can fail: adding a column's elements in reverse gives other bits here.
  std::vector<float> values{1e8f, 1.0f, -1e8f, 1.0f};
  float forward = 0, backward = 0;
  for (float v : values) forward += v;
  for (auto it = values.rbegin(); it != values.rend(); ++it) backward += *it;
  ASSERT_NE(forward, backward);
  std::vector<float> out{0.0f};
  std::vector<int64_t> index(values.size(), 0);
  TensorView o;
  o.data = out.data();
  o.sizes = Dims{1};
  o.strides = Dims{1};
  o.dtype = kFloat32;
  TensorView i = o;
  i.data = index.data();
  i.sizes = Dims{static_cast<int64_t>(index.size())};
  i.dtype = kInt64;
  TensorView s = i;
  s.data = values.data();
  s.dtype = kFloat32;
  const IndexGeometry g = scatter_add_geometry(o, 0, i, s);
  EXPECT_EQ(scatter_add_column(out.data(), index.data(), values.data(), column_geometry(g), 4, 0, SequentialAdd{}), -1);
  EXPECT_EQ(out[0], forward);
}

TEST(CudaScatterAddColumns, OutOfRangeIndicesAddNothingAndTheFirstIsReported) {
  // out [2, 3] inside a guarded buffer; columns along dim 0 (one per column of out).
  std::vector<float> ob{99, 0, 0, 0, 0, 0, 0, 99};
  TensorView o;
  o.data = ob.data() + 1;
  o.sizes = Dims{2, 3};
  o.strides = Dims{3, 1};
  o.dtype = kFloat32;
  std::vector<int64_t> ib{1, -1, 0, 2, 1, 5, 0, 0, 7};  // [3, 3]
  TensorView index;
  index.data = ib.data();
  index.sizes = Dims{3, 3};
  index.strides = Dims{3, 1};
  index.dtype = kInt64;
  std::vector<float> sb{1, 2, 3, 4, 5, 6, 7, 8, 9};
  TensorView s = index;
  s.data = sb.data();
  s.dtype = kFloat32;
  const IndexGeometry g = scatter_add_geometry(o, 0, index, s);
  const IndexGeometry columns = column_geometry(g);
  EXPECT_EQ(scatter_add_column(ob.data() + 1, ib.data(), sb.data(), columns, 3, 0, SequentialAdd{}), 1);  // 2 at k=1
  EXPECT_EQ(scatter_add_column(ob.data() + 1, ib.data(), sb.data(), columns, 3, 1, SequentialAdd{}), 0);  // -1 at k=0
  EXPECT_EQ(scatter_add_column(ob.data() + 1, ib.data(), sb.data(), columns, 3, 2, SequentialAdd{}), 1);  // 5 at k=1
  // Column 0 adds 1 into row 1 and 7 into row 0; column 1 adds 5 and 8 into row 1 and row 0;
  // column 2 adds 3 into row 0 and skips 6 and 9 (index 5 and 7).
  EXPECT_EQ(ob, (std::vector<float>{99, 7, 8, 3, 1, 5, 0, 99}));
}

}  // namespace
}  // namespace ember::cuda_impl
