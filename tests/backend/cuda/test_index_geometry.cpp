// The CUDA index_select / gather / scatter_add kernels' geometry and per-element bodies
// (backend/cuda/index_geometry.h), run on the host over every element and compared with the CPU
// backend on strided, transposed, sliced and 0-d operands, for every dim. Out-of-range indices,
// which the CPU rejects, must read 0 or add nothing and never touch memory outside the operand.
#include <gtest/gtest.h>

#include <algorithm>
#include <cstdint>
#include <cstring>
#include <numeric>
#include <random>
#include <vector>

#include "backend/cpu/cpu_backend.h"
#include "backend/cuda/index_geometry.h"
#include "kernels/dtype_dispatch.h"

namespace ember::cuda_impl {
namespace {

// A strided operand over its own buffer: sizes, and strides made from a permutation of the
// dimensions (memory order) and a step (slicing), so no layout is contiguous by accident.
template <typename T>
struct Operand {
  std::vector<T> buffer;
  TensorView view;
};

template <typename T>
Operand<T> make_operand(const Dims& sizes, const std::vector<int>& memory_order, int64_t step, std::mt19937& rng,
                        int lo, int hi) {
  Operand<T> op;
  Dims strides(sizes.size(), 0);
  int64_t s = step;
  for (int k = static_cast<int>(memory_order.size()) - 1; k >= 0; --k) {
    const int d = memory_order[static_cast<size_t>(k)];
    strides[d] = s;
    s *= sizes[d];
  }
  op.buffer.resize(static_cast<size_t>(std::max<int64_t>(s, 1)));
  std::uniform_int_distribution<int> dist(lo, hi);
  for (T& e : op.buffer) e = static_cast<T>(dist(rng));
  op.view.data = op.buffer.data();
  op.view.sizes = sizes;
  op.view.strides = strides;
  op.view.dtype = dtype_v<T>;
  return op;
}

std::vector<int> identity_order(size_t n) {
  std::vector<int> o(n);
  std::iota(o.begin(), o.end(), 0);
  return o;
}
std::vector<int> reversed_order(size_t n) {
  std::vector<int> o = identity_order(n);
  std::reverse(o.begin(), o.end());
  return o;
}

template <typename T>
std::vector<T> contiguous_buffer(int64_t n) {
  return std::vector<T>(static_cast<size_t>(n), T(0));
}

template <typename T>
TensorView contiguous_view(std::vector<T>& b, const Dims& sizes) {
  TensorView v;
  v.data = b.data();
  v.sizes = sizes;
  v.strides = index_detail::contiguous_strides(sizes);
  v.dtype = dtype_v<T>;
  return v;
}

template <typename T>
bool same_bits(const std::vector<T>& a, const std::vector<T>& b) {
  return a.size() == b.size() && std::memcmp(a.data(), b.data(), a.size() * sizeof(T)) == 0;
}

int64_t numel(const Dims& sizes) {
  int64_t n = 1;
  for (int64_t s : sizes) n *= s;
  return n;
}

// -------------------------------------------------------------------------------------- gather

template <typename T>
void run_gather_like(bool select, const Dims& x_sizes, const Dims& index_sizes, int64_t dim, bool transposed,
                     std::mt19937& rng) {
  cpu::CpuBackend cpu;
  const size_t nd = x_sizes.size();
  Operand<T> x =
      make_operand<T>(x_sizes, transposed ? reversed_order(nd) : identity_order(nd), transposed ? 1 : 2, rng, -50, 50);
  const int64_t bound = nd == 0 ? 1 : x_sizes[dim];
  Operand<int64_t> index =
      make_operand<int64_t>(index_sizes, reversed_order(index_sizes.size()), 3, rng, 0, static_cast<int>(bound - 1));
  Dims out_sizes = index_sizes;
  if (select) {
    out_sizes = x_sizes;
    if (!out_sizes.empty()) out_sizes[dim] = index.view.numel();
  }
  std::vector<T> expected = contiguous_buffer<T>(numel(out_sizes)), got = expected;
  const IndexGeometry g =
      select ? index_select_geometry(x.view, dim, index.view) : gather_geometry(x.view, dim, index.view);
  if (select) {
    cpu.index_select(x.view, dim, index.view, contiguous_view(expected, out_sizes));
  } else {
    cpu.gather(x.view, dim, index.view, contiguous_view(expected, out_sizes));
  }
  for (int64_t i = 0; i < numel(out_sizes); ++i) gather_at(x.buffer.data(), index.buffer.data(), got.data(), g, i);
  EXPECT_TRUE(same_bits(expected, got)) << (select ? "index_select" : "gather") << " dim " << dim << " transposed "
                                        << transposed;
}

TEST(CudaIndexGeometry, GatherMatchesTheCpu) {
  std::mt19937 rng(7);
  const Dims x_sizes{4, 5, 6};
  for (int64_t dim = 0; dim < 3; ++dim) {
    for (bool transposed : {false, true}) {
      Dims index_sizes{3, 4, 5};
      index_sizes[dim] = 7;  // longer than x along dim: allowed there
      run_gather_like<float>(false, x_sizes, index_sizes, dim, transposed, rng);
      run_gather_like<double>(false, x_sizes, Dims{2, 2, 2}, dim, transposed, rng);
      run_gather_like<int8_t>(false, x_sizes, Dims{4, 5, 6}, dim, transposed, rng);
      run_gather_like<Half>(false, x_sizes, Dims{1, 3, 1}, dim, transposed, rng);
    }
  }
  run_gather_like<float>(false, Dims{}, Dims{}, 0, false, rng);  // 0-d
  run_gather_like<float>(false, Dims{9}, Dims{12}, 0, true, rng);
}

TEST(CudaIndexGeometry, IndexSelectMatchesTheCpu) {
  std::mt19937 rng(11);
  for (int64_t dim = 0; dim < 3; ++dim) {
    for (bool transposed : {false, true}) {
      run_gather_like<float>(true, Dims{4, 5, 6}, Dims{7}, dim, transposed, rng);
      run_gather_like<int64_t>(true, Dims{4, 5, 6}, Dims{1}, dim, transposed, rng);
      run_gather_like<BFloat16>(true, Dims{3, 1, 2}, Dims{4}, dim, transposed, rng);
    }
  }
  run_gather_like<float>(true, Dims{6}, Dims{}, 0, false, rng);  // 0-d index
  run_gather_like<float>(true, Dims{}, Dims{}, 0, false, rng);   // 0-d x and index
}

// ---------------------------------------------------------------------------------- scatter_add

template <typename T>
void run_scatter_add(const Dims& out_sizes, const Dims& index_sizes, const Dims& src_sizes, int64_t dim,
                     std::mt19937& rng) {
  cpu::CpuBackend cpu;
  const size_t nd = out_sizes.size();
  // Small integers: every order of additions gives the same sum, so the host's order (the
  // index's row-major order) may differ from the CPU's and the results still agree exactly.
  Operand<T> out = make_operand<T>(out_sizes, reversed_order(nd), 2, rng, 0, 1);
  Operand<T> src = make_operand<T>(src_sizes, identity_order(nd), 3, rng, 0, 1);
  const int64_t bound = nd == 0 ? 1 : out_sizes[dim];
  Operand<int64_t> index =
      make_operand<int64_t>(index_sizes, identity_order(nd), 1, rng, 0, static_cast<int>(bound - 1));
  std::vector<T> got = out.buffer;
  cpu.scatter_add(out.view, dim, index.view, src.view);
  const IndexGeometry g = scatter_add_geometry(out.view, dim, index.view, src.view);
  using C = kernels::compute_t<T>;
  auto add = [](T* target, T v) { *target = static_cast<T>(static_cast<C>(*target) + static_cast<C>(v)); };
  for (int64_t i = 0; i < index.view.numel(); ++i) {
    scatter_add_at(got.data(), index.buffer.data(), src.buffer.data(), g, i, add);
  }
  EXPECT_TRUE(same_bits(out.buffer, got)) << "scatter_add dim " << dim;
}

TEST(CudaIndexGeometry, ScatterAddMatchesTheCpu) {
  std::mt19937 rng(13);
  for (int64_t dim = 0; dim < 3; ++dim) {
    Dims index_sizes{2, 3, 4};
    index_sizes[dim] = 9;  // many additions into each target along dim
    Dims src_sizes{3, 4, 5};
    src_sizes[dim] = 10;
    run_scatter_add<float>(Dims{3, 4, 5}, index_sizes, src_sizes, dim, rng);
    run_scatter_add<int64_t>(Dims{3, 4, 5}, index_sizes, src_sizes, dim, rng);
    run_scatter_add<int8_t>(Dims{3, 4, 5}, index_sizes, src_sizes, dim, rng);
    run_scatter_add<uint8_t>(Dims{3, 4, 5}, index_sizes, src_sizes, dim, rng);
    run_scatter_add<Half>(Dims{3, 4, 5}, index_sizes, src_sizes, dim, rng);
  }
  run_scatter_add<double>(Dims{}, Dims{}, Dims{}, 0, rng);
}

// ------------------------------------------------------------------------------ out of range

TEST(CudaIndexGeometry, OutOfRangeIndicesReadZeroAndAddNothing) {
  // x = [[1, 2, 3], [4, 5, 6]] inside a guarded buffer; gather along dim 1.
  std::vector<float> xb{99, 1, 2, 3, 4, 5, 6, 99};
  TensorView x;
  x.data = xb.data() + 1;
  x.sizes = Dims{2, 3};
  x.strides = Dims{3, 1};
  std::vector<int64_t> ib{0, -1, 3, 2, 100, -7};
  TensorView index;
  index.data = ib.data();
  index.sizes = Dims{2, 3};
  index.strides = Dims{3, 1};
  index.dtype = kInt64;
  const IndexGeometry g = gather_geometry(x, 1, index);
  std::vector<float> out(6, -1.0f);
  for (int64_t i = 0; i < 6; ++i) gather_at(xb.data() + 1, ib.data(), out.data(), g, i);
  EXPECT_EQ(out, (std::vector<float>{1, 0, 0, 6, 0, 0}));

  std::vector<float> ob = xb;
  TensorView o = x;
  o.data = ob.data() + 1;
  std::vector<float> src(6, 10.0f);
  TensorView s = x;
  s.data = src.data();
  const IndexGeometry gs = scatter_add_geometry(o, 1, index, s);
  for (int64_t i = 0; i < 6; ++i) {
    scatter_add_at(ob.data() + 1, ib.data(), src.data(), gs, i, [](float* t, float v) { *t += v; });
  }
  EXPECT_EQ(ob, (std::vector<float>{99, 11, 2, 3, 4, 5, 16, 99}));

  // index_select along dim 0: indices 2 and 3 of a 2-row x read zeros.
  std::vector<int64_t> sel{2, 3};
  TensorView si;
  si.data = sel.data();
  si.sizes = Dims{2};
  si.strides = Dims{1};
  si.dtype = kInt64;
  const IndexGeometry gsel = index_select_geometry(x, 0, si);
  EXPECT_EQ(gsel.bound, 2);
  std::vector<float> sel_out(6, -1.0f);
  for (int64_t i = 0; i < 6; ++i) gather_at(xb.data() + 1, sel.data(), sel_out.data(), gsel, i);
  EXPECT_EQ(sel_out, (std::vector<float>(6, 0.0f)));
}

TEST(CudaIndexGeometry, TooManyDimensionsIsAnError) {
  Dims sizes(kMaxIndexDims + 1, 1);
  std::vector<float> xb(1);
  std::vector<int64_t> ib(1);
  TensorView x;
  x.data = xb.data();
  x.sizes = sizes;
  x.strides = sizes;
  TensorView index = x;
  index.data = ib.data();
  index.dtype = kInt64;
  EXPECT_THROW(gather_geometry(x, 0, index), Error);
}

}  // namespace
}  // namespace ember::cuda_impl
