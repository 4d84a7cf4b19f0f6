// backend/cuda/elementwise_plan.h on the host: which path, vector width and grid a launch gets
// (contiguous or strided; > 2^31 elements or offsets cut into 32-bit pieces; misaligned views;
// one element), and the kernels' bodies executed for every (block, thread) of the grid, as
// elementwise.cuh's kernels run them, with the real functors of kernels/elementwise_ops.h. Each
// run is checked element by element against a naive loop over the unsimplified shape, with
// guard bytes around the output (no write outside it) and in place (an element processed twice
// would show). What this cannot check is the CUDA code itself: tests/backend/test_device_parity*.
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <cstring>
#include <string>
#include <tuple>
#include <vector>

#include "backend/cuda/elementwise_plan.h"
#include "kernels/elementwise_ops.h"
#include "kernels/indexer.h"
#include "kernels/indexer32.h"

namespace ember::cuda_impl {
namespace {

using Shape = std::vector<int64_t>;

template <int N>
kernels::StridedIndexer<N> indexer(const Shape& sizes, const std::vector<Shape>& strides) {
  kernels::StridedIndexer<N> ix;
  const int64_t* s[N];
  for (int k = 0; k < N; ++k) s[k] = strides[static_cast<size_t>(k)].data();
  EXPECT_TRUE(ix.build(static_cast<int64_t>(sizes.size()), sizes.data(), s, /*memory_order=*/true));
  return ix;
}

// ---- plans ------------------------------------------------------------------------------------

template <int N>
ElementwisePlan<N> plan_of(const Shape& sizes, const std::vector<Shape>& strides, const std::vector<int>& elem,
                           const std::vector<uintptr_t>& addr, int max_vec) {
  int e[N];
  uintptr_t a[N];
  for (int k = 0; k < N; ++k) {
    e[k] = elem[static_cast<size_t>(k)];
    a[k] = addr[static_cast<size_t>(k)];
  }
  return plan_elementwise(indexer<N>(sizes, strides), e, a, max_vec);
}

TEST(CudaElementwisePlan, PathsFollowTheLayout) {
  const Shape sizes{64, 100};
  const Shape c{100, 1};
  // Everything contiguous and 16-byte aligned: 4 floats a vector.
  ElementwisePlan<3> p = plan_of<3>(sizes, {c, c, c}, {4, 4, 4}, {4096, 8192, 12288}, 4);
  EXPECT_EQ(p.path, ElementwisePath::Contiguous);
  EXPECT_EQ(p.vec, 4);
  EXPECT_EQ(p.flat[1], 1);
  // A broadcast scalar input: still one run, read as a scalar.
  p = plan_of<3>(sizes, {c, c, {0, 0}}, {4, 4, 4}, {4096, 8192, 4}, 4);
  EXPECT_EQ(p.path, ElementwisePath::Contiguous);
  EXPECT_EQ(p.flat[2], 0);
  EXPECT_EQ(p.vec, 4);  // the scalar's own alignment does not matter
  // A view starting one float into a vector: the strided path, whose indexer does no division
  // on the one dimension (only the widest vector kernel exists).
  p = plan_of<3>(sizes, {c, c, c}, {4, 4, 4}, {4096, 8196, 12288}, 4);
  EXPECT_EQ(p.path, ElementwisePath::Strided);
  EXPECT_EQ(indexer<3>(sizes, {c, c, c}).ndim, 1);
  // Bodies that do their own loads (copy, fill: max_vec 1) never take the vector path.
  EXPECT_EQ((plan_of<3>(sizes, {c, c, c}, {4, 4, 4}, {4096, 8192, 12288}, 1).path), ElementwisePath::Strided);
  // A row broadcast [64, 100] + [100], a transposed input, a strided output, a flipped input.
  EXPECT_EQ((plan_of<3>(sizes, {c, c, {0, 1}}, {4, 4, 4}, {0, 0, 0}, 4).path), ElementwisePath::Strided);
  EXPECT_EQ((plan_of<2>(sizes, {c, {1, 64}}, {4, 4}, {0, 0}, 4).path), ElementwisePath::Strided);
  EXPECT_EQ((plan_of<2>(sizes, {{200, 2}, c}, {4, 4}, {0, 0}, 4).path), ElementwisePath::Strided);
  EXPECT_EQ((plan_of<2>({100}, {{1}, {-1}}, {4, 4}, {0, 0}, 4).path), ElementwisePath::Strided);
  // One element: contiguous whatever its strides (the scalar tail writes it).
  const ElementwisePlan<2> one = plan_of<2>({1, 1}, {{7, 3}, {0, 5}}, {4, 4}, {4096, 8192}, 4);
  EXPECT_EQ(one.path, ElementwisePath::Contiguous);
  EXPECT_EQ(one.n, 1);
  // Over 2^31 contiguous aligned elements: the vector kernel's 64-bit counters cover them.
  const int64_t big = (int64_t{1} << 31) + 5;
  p = plan_of<3>({big}, {{1}, {1}, {1}}, {4, 4, 4}, {0, 0, 0}, 4);
  EXPECT_EQ(p.path, ElementwisePath::Contiguous);
  EXPECT_EQ(p.n, big);
}

// Every piece split_for_32bit gives, as (sub-indexer, base).
template <int N>
std::vector<std::pair<kernels::StridedIndexer<N>, Offsets64<N>>> pieces_of(const kernels::StridedIndexer<N>& ix,
                                                                           int64_t limit = kernels::kMaxIndex32) {
  std::vector<std::pair<kernels::StridedIndexer<N>, Offsets64<N>>> out;
  split_for_32bit(
      ix, Offsets64<N>{}, [&](const kernels::StridedIndexer<N>& p, const Offsets64<N>& b) { out.emplace_back(p, b); },
      limit);
  return out;
}

TEST(CudaElementwisePlan, ShapesBeyondInt32AreCutInto32BitPieces) {
  // What fits is one piece with base 0 (PyTorch's can_use_32bit_indexing).
  EXPECT_EQ(pieces_of(indexer<2>({2049, 2}, {{2, 1}, {(int64_t{1} << 20) - 1, 1}})).size(), 1u);
  // Few elements, but an input reaching past 2^31 - 1 (rows 2^20 elements apart, the last
  // offset 2048 * 2^20 + 1): two pieces, the second starting 1024 rows on.
  auto p = pieces_of(indexer<2>({2049, 2}, {{2, 1}, {int64_t{1} << 20, 1}}));
  ASSERT_EQ(p.size(), 2u);
  EXPECT_EQ(p[1].second[0], 1024 * 2);
  EXPECT_EQ(p[1].second[1], int64_t{1024} << 20);
  // Over 2^31 strided elements (a transposed copy of 2^31 + 2 floats): pieces that each fit,
  // together as many elements.
  const int64_t rows = (int64_t{1} << 30) + 1;
  const kernels::StridedIndexer<2> big = indexer<2>({rows, 2}, {{2, 1}, {1, rows}});
  const auto pieces = pieces_of(big);
  EXPECT_GE(pieces.size(), 2u);
  EXPECT_LE(pieces.size(), 4u);
  int64_t total = 0;
  for (const auto& [part, base] : pieces) {
    EXPECT_TRUE(kernels::StridedIndexer32<2>::fits(part));
    total += part.numel();
  }
  EXPECT_EQ(total, big.numel());
  // A stride beyond int32 on a size-2 dim: split down to single rows of that dim.
  const auto wide = pieces_of(indexer<2>({2, 3}, {{3, 1}, {int64_t{1} << 40, 1}}));
  ASSERT_EQ(wide.size(), 2u);
  EXPECT_EQ(wide[1].second[1], int64_t{1} << 40);
}

// With a small limit, every split is small enough to enumerate: each element of the original
// shape is visited exactly once, at the same offsets.
TEST(CudaElementwisePlan, PiecesCoverEveryElementOnce) {
  const std::vector<std::pair<Shape, std::vector<Shape>>> cases = {
      {{37, 29}, {{29, 1}, {1, 37}}},             // transposed input
      {{16, 9, 5}, {{45, 5, 1}, {-90, 10, -2}}},  // flipped and sliced
      {{1000}, {{1}, {3}}},                       // one long dim
      {{7, 1, 13}, {{13, 13, 1}, {0, 5, 7}}},     // broadcast, size-1 dim
      {{3, 5}, {{5, 1}, {4000, 1}}},              // an input reaching past the limit alone
  };
  for (const auto& [sizes, strides] : cases) {
    const kernels::StridedIndexer<2> ix = indexer<2>(sizes, strides);
    for (int64_t limit : {int64_t{1}, int64_t{7}, int64_t{64}, int64_t{1000}}) {
      std::vector<std::pair<int64_t, int64_t>> want, got;
      for (int64_t i = 0; i < ix.numel(); ++i) want.emplace_back(ix.offsets(i)[0], ix.offsets(i)[1]);
      for (const auto& [part, base] : pieces_of(ix, limit)) {
        ASSERT_TRUE(kernels::StridedIndexer32<2>::fits(part, limit));
        const kernels::StridedIndexer32<2> ix32(part);
        for (uint32_t i = 0; i < static_cast<uint32_t>(part.numel()); ++i) {
          const Offsets64<2> o = piece_offsets(ix32, base, i);
          got.emplace_back(o[0], o[1]);
        }
      }
      std::sort(want.begin(), want.end());
      std::sort(got.begin(), got.end());
      ASSERT_EQ(got, want) << "limit " << limit << ", shape of " << sizes.size() << " dims";
    }
  }
}

TEST(CudaElementwisePlan, VectorWidthIsTheWidestEveryContiguousOperandAllows) {
  const int64_t flat3[3] = {1, 1, 1};
  const int size4[3] = {4, 4, 4};
  const uintptr_t aligned[3] = {64, 128, 256};
  EXPECT_EQ(widest_vector(flat3, size4, aligned, 4), 4);
  const uintptr_t off8[3] = {64, 136, 256};  // 8 bytes in: 2 floats
  EXPECT_EQ(widest_vector(flat3, size4, off8, 4), 2);
  const uintptr_t off4[3] = {68, 128, 256};
  EXPECT_EQ(widest_vector(flat3, size4, off4, 4), 1);
  // A bool output from double inputs: 2 elements (16 bytes of double, 2 of bool).
  const int mixed[3] = {1, 8, 8};
  const uintptr_t odd_bool[3] = {3, 16, 32};
  EXPECT_EQ(widest_vector(flat3, mixed, odd_bool, 2), 1);
  const uintptr_t even_bool[3] = {2, 16, 32};
  EXPECT_EQ(widest_vector(flat3, mixed, even_bool, 2), 2);
  // A broadcast operand's address is ignored.
  const int64_t bcast[3] = {1, 1, 0};
  const uintptr_t scalar_odd[3] = {64, 128, 4};
  EXPECT_EQ(widest_vector(bcast, size4, scalar_odd, 4), 4);
  // The type's limit: MapArgs' kMaxVec is 16 bytes of the widest operand.
  EXPECT_EQ((MapArgs<kernels::Add, float, float, float>::kMaxVec), 4);
  EXPECT_EQ((MapArgs<kernels::Add, Half, Half, Half>::kMaxVec), 8);
  EXPECT_EQ((MapArgs<kernels::Eq, bool, double, double>::kMaxVec), 2);
  EXPECT_EQ((MapArgs<kernels::Where, uint8_t, uint8_t, uint8_t, uint8_t>::kMaxVec), 16);
  EXPECT_EQ((MapArgs<kernels::Where, uint64_t, uint8_t, uint64_t, uint64_t>::kMaxVec), 2);
}

TEST(CudaElementwisePlan, GridsStayWithinLimitsAndCoverTheTail) {
  for (int64_t n : {int64_t{1}, int64_t{3}, int64_t{1023}, int64_t{1024}, int64_t{1025}, int64_t{1} << 20,
                    (int64_t{1} << 31) - 1, int64_t{1} << 31, int64_t{1} << 40}) {
    for (int vec : {2, 4, 8, 16}) {
      const Launch1d l = grid_for(n / vec, vectors_per_thread(vec));
      EXPECT_GE(l.blocks, 1u);
      EXPECT_LE(int64_t{l.blocks}, kMaxStrideBlocks);
      EXPECT_EQ(l.threads, static_cast<unsigned>(kBlockThreads));
      // The contiguous kernel's tail (< vec elements) is taken by the first threads.
      EXPECT_GE(int64_t{l.blocks} * l.threads, n % vec);
      EXPECT_GE(vectors_per_thread(vec) * vec, kStridedItems);
      // Few elements: no idle blocks beyond the one the work needs.
      const int64_t per_block = int64_t{kBlockThreads} * vectors_per_thread(vec) * vec;
      if (n <= per_block) {
        EXPECT_EQ(l.blocks, 1u);
      }
    }
    const Launch1d s = grid_for(std::min(n, kernels::kMaxIndex32), kStridedItems);
    // The 32-bit strided loop's index stays below 2^32: start < n <= 2^31 - 1 plus one grid step.
    EXPECT_LT(int64_t{s.blocks} * s.threads * kStridedItems, int64_t{1} << 31);
  }
}

// ---- the bodies, executed ---------------------------------------------------------------------

// A buffer with `guard` sentinel bytes on each side of `n` elements, its data at a chosen
// offset from a 64-byte boundary (so a test picks the alignment the plan sees).
template <typename T>
struct Guarded {
  static constexpr size_t kGuard = 64;
  std::vector<unsigned char> bytes;
  T* data;
  size_t n;
  Guarded(size_t count, size_t misalign_bytes) : bytes(count * sizeof(T) + 3 * kGuard, 0xCD), n(count) {
    const auto base = reinterpret_cast<uintptr_t>(bytes.data());
    const uintptr_t aligned = (base + kGuard + 63) / 64 * 64;
    data = reinterpret_cast<T*>(aligned + misalign_bytes);
  }
  bool guards_intact() const {
    const auto* begin = reinterpret_cast<const unsigned char*>(data);
    const auto* end = begin + n * sizeof(T);
    for (const unsigned char* p = bytes.data(); p < begin; ++p) {
      if (*p != 0xCD) return false;
    }
    for (const unsigned char* p = end; p < bytes.data() + bytes.size(); ++p) {
      if (*p != 0xCD) return false;
    }
    return true;
  }
};

// How a test runs a planned launch.
struct RunHow {
  bool strided = false;    // the strided path even where the contiguous one was planned
  int64_t split = 0;       // > 0: cut the strided path into pieces of at most this many
  int64_t max_blocks = 0;  // > 0: a smaller grid, so threads loop
  bool reverse = false;    // blocks and threads from the last to the first
};

// elementwise.cuh's launch_map with the kernels replaced by loops over (block, thread).
template <typename M, int N = M::N>
ElementwisePath run_map(const M& m_in, const Shape& sizes, const std::vector<Shape>& strides, const RunHow& how) {
  const kernels::StridedIndexer<N> ix = indexer<N>(sizes, strides);
  int elem[N];
  uintptr_t addr[N];
  elem[0] = static_cast<int>(sizeof(*m_in.out));
  addr[0] = reinterpret_cast<uintptr_t>(m_in.out);
  for (int k = 1; k < N; ++k) addr[k] = reinterpret_cast<uintptr_t>(m_in.in[k - 1]);
  [&]<size_t... I>(std::index_sequence<I...>) {
    ((elem[I + 1] = static_cast<int>(sizeof(typename M::template In_t<I>))), ...);
  }
  (std::make_index_sequence<M::kInputs>{});
  const ElementwisePlan<N> plan = plan_elementwise(ix, elem, addr, M::kMaxVec);
  const ElementwisePath path = how.strided ? ElementwisePath::Strided : plan.path;
  M m = m_in;
  m.broadcast = 0;
  for (int k = 1; k < N && path == ElementwisePath::Contiguous; ++k) {
    if (plan.flat[k] == 0) m.broadcast |= 1u << (k - 1);
  }
  // Runs thread(b, t, blocks, threads) for every thread of a grid of `l` (capped by max_blocks).
  const auto grid = [&](Launch1d l, auto&& thread) {
    int64_t blocks = l.blocks;
    if (how.max_blocks > 0 && blocks > how.max_blocks) blocks = how.max_blocks;
    const int threads = static_cast<int>(l.threads);
    for (int64_t bi = 0; bi < blocks; ++bi) {
      for (int ti = 0; ti < threads; ++ti) {
        thread(how.reverse ? blocks - 1 - bi : bi, how.reverse ? threads - 1 - ti : ti, blocks, threads);
      }
    }
  };
  if (path == ElementwisePath::Contiguous) {
    grid(plan.launch, [&](int64_t b, int t, int64_t blocks, int threads) {
      contiguous_thread<M::kMaxVec>(m, plan.n, b, t, blocks, threads);
    });
    return path;
  }
  split_for_32bit(
      ix, Offsets64<N>{},
      [&](const kernels::StridedIndexer<N>& part, const Offsets64<N>& base) {
        const kernels::StridedIndexer32<N> ix32(part);
        const auto n = static_cast<uint32_t>(part.numel());
        grid(grid_for(n, kStridedItems), [&](int64_t b, int t, int64_t blocks, int threads) {
          strided_thread<N>(ix32, base, m, n, static_cast<uint32_t>(b), t, static_cast<uint32_t>(blocks), threads);
        });
      },
      how.split > 0 ? how.split : kernels::kMaxIndex32);
  return path;
}

// Every element of the output, by a naive walk over the unsimplified shape.
template <typename F>
void for_each_index(const Shape& sizes, F&& f) {
  int64_t n = 1;
  for (int64_t s : sizes) n *= s;
  std::vector<int64_t> idx(sizes.size(), 0);
  for (int64_t i = 0; i < n; ++i) {
    f(idx);
    for (size_t d = sizes.size(); d-- > 0;) {
      if (++idx[d] < sizes[d]) break;
      idx[d] = 0;
    }
  }
}

int64_t offset_of(const std::vector<int64_t>& idx, const Shape& strides) {
  int64_t o = 0;
  for (size_t d = 0; d < idx.size(); ++d) o += idx[d] * strides[d];
  return o;
}

template <typename T>
bool same_bits(const T& a, const T& b) {
  return std::memcmp(&a, &b, sizeof(T)) == 0;
}

const std::vector<RunHow>& every_run() {
  static const std::vector<RunHow> runs = {
      {},
      {false, 0, 0, true},
      {false, 0, 2, false},  // two blocks: grid-stride loops
      {true, 0, 0, false},   // the strided kernel on every shape
      {true, 100, 3, true},  // cut into pieces of at most 100 elements and offsets
  };
  return runs;
}

// out = a + alpha * b (float, AddScaled's fma) over `sizes`, with the given strides (elements)
// and misalignments (bytes) for out, a, b; every run against a naive loop.
void check_add_scaled(const Shape& sizes, const std::vector<Shape>& strides, const std::vector<size_t>& misalign,
                      const std::string& label) {
  int64_t storage[3] = {1, 1, 1};
  for (size_t k = 0; k < 3; ++k) {
    for (size_t d = 0; d < sizes.size(); ++d) storage[k] += (sizes[d] - 1) * std::abs(strides[k][d]);
  }
  Guarded<float> a(static_cast<size_t>(storage[1]), misalign[1]), b(static_cast<size_t>(storage[2]), misalign[2]);
  for (int64_t i = 0; i < storage[1]; ++i) a.data[i] = static_cast<float>(i % 97) * 0.25f - 3.0f;
  for (int64_t i = 0; i < storage[2]; ++i) b.data[i] = static_cast<float>(i % 89) * 0.5f + 1.0f;
  // Negative strides start their views at the far end of the storage.
  const auto start = [&](size_t k) {
    int64_t s = 0;
    for (size_t d = 0; d < sizes.size(); ++d) s += strides[k][d] < 0 ? (sizes[d] - 1) * -strides[k][d] : 0;
    return s;
  };
  const kernels::AddScaled<float> f{0.75f};
  for (const RunHow& how : every_run()) {
    Guarded<float> out(static_cast<size_t>(storage[0]), misalign[0]);
    using M = MapArgs<ConvertedBinary<float, float, float, kernels::AddScaled<float>>, float, float, float>;
    const M m{{f}, out.data + start(0), {a.data + start(1), b.data + start(2)}, 0};
    const ElementwisePath path = run_map(m, sizes, strides, how);
    const std::string what = label + " path " + std::to_string(static_cast<int>(path)) + " split " +
                             std::to_string(how.split) + " blocks " + std::to_string(how.max_blocks);
    ASSERT_TRUE(out.guards_intact()) << what << ": a write outside the output";
    bool ok = true;
    for_each_index(sizes, [&](const std::vector<int64_t>& idx) {
      if (!ok) return;
      const float want =
          f(a.data[start(1) + offset_of(idx, strides[1])], b.data[start(2) + offset_of(idx, strides[2])]);
      const float got = out.data[start(0) + offset_of(idx, strides[0])];
      if (!same_bits(got, want)) {
        ok = false;
        ADD_FAILURE() << what << ": element at output offset " << offset_of(idx, strides[0]) << " is " << got
                      << ", want " << want;
      }
    });
    if (!ok) return;
  }
}

TEST(CudaElementwiseEmulated, AddScaledOnEveryPath) {
  for (int64_t n : {1, 3, 4, 5, 8, 31, 1023, 1024, 2049, 8 * 1024 + 3, 70001}) {
    const Shape s{n};
    check_add_scaled(s, {{1}, {1}, {1}}, {0, 0, 0}, "contiguous n " + std::to_string(n));
    check_add_scaled(s, {{1}, {1}, {1}}, {4, 0, 0}, "misaligned out n " + std::to_string(n));
    check_add_scaled(s, {{1}, {1}, {0}}, {0, 0, 4}, "scalar b n " + std::to_string(n));
    check_add_scaled(s, {{1}, {0}, {1}}, {0, 0, 8}, "scalar a, 8-byte-offset b n " + std::to_string(n));
  }
  check_add_scaled({37, 29}, {{29, 1}, {29, 1}, {0, 1}}, {0, 0, 0}, "row broadcast");
  check_add_scaled({37, 29}, {{29, 1}, {1, 37}, {29, 1}}, {0, 0, 0}, "transposed a");
  check_add_scaled({37, 29}, {{1, 37}, {29, 1}, {29, 1}}, {0, 0, 0}, "transposed out");
  check_add_scaled({16, 9, 5}, {{45, 5, 1}, {-90, 10, -2}, {0, 5, 1}}, {0, 0, 0}, "flipped, sliced, broadcast");
  check_add_scaled({3, 1, 700}, {{700, 700, 1}, {1, 1, 3}, {700, 1, 1}}, {0, 0, 0}, "size-1 dim");
}

TEST(CudaElementwiseEmulated, InPlaceOpsTouchEachElementOnce) {
  // x += 1 in place, contiguous and strided: an element processed twice would gain 2.
  for (const auto& [sizes, strides] :
       std::vector<std::pair<Shape, Shape>>{{{10001}, {1}}, {{100, 77}, {1, 100}}, {{64, 33}, {66, 2}}}) {
    for (const RunHow& how : every_run()) {
      int64_t storage = 1;
      for (size_t d = 0; d < sizes.size(); ++d) storage += (sizes[d] - 1) * strides[d];
      Guarded<float> x(static_cast<size_t>(storage), 0);
      for (int64_t i = 0; i < storage; ++i) x.data[i] = static_cast<float>(i);
      float one = 1.0f;
      using M = MapArgs<ConvertedBinary<float, float, float, kernels::Add>, float, float, float>;
      const M m{{kernels::Add{}}, x.data, {x.data, &one}, 0};
      const Shape zeros(sizes.size(), 0);
      run_map(m, sizes, {strides, strides, zeros}, how);
      ASSERT_TRUE(x.guards_intact());
      std::vector<char> touched(static_cast<size_t>(storage), 0);
      for_each_index(sizes, [&](const std::vector<int64_t>& idx) { touched[offset_of(idx, strides)] = 1; });
      for (int64_t i = 0; i < storage; ++i) {
        ASSERT_EQ(x.data[i], static_cast<float>(i) + (touched[i] ? 1.0f : 0.0f)) << "element " << i;
      }
    }
  }
}

// out = Op(x) for Half (vectors of 8) and out = (a < b) for double into bool (vectors of 2).
TEST(CudaElementwiseEmulated, ConvertingFunctorsAndMixedWidths) {
  for (int64_t n : {1, 7, 8, 9, 2048 + 5}) {
    for (size_t mis : {size_t{0}, size_t{2}}) {
      Guarded<Half> x(static_cast<size_t>(n), mis), out(static_cast<size_t>(n), 0);
      for (int64_t i = 0; i < n; ++i) x.data[i] = Half(static_cast<float>(i % 13) * 0.3f - 2.0f);
      using F = ConvertedUnary<Half, float, Half, kernels::Exp>;
      const MapArgs<F, Half, Half> m{{kernels::Exp{}}, out.data, {x.data}, 0};
      for (const RunHow& how : every_run()) {
        std::memset(static_cast<void*>(out.data), 0, static_cast<size_t>(n) * sizeof(Half));
        run_map(m, {n}, {{1}, {1}}, how);
        ASSERT_TRUE(out.guards_intact());
        for (int64_t i = 0; i < n; ++i) {
          const Half want = F{kernels::Exp{}}(x.data[i]);
          ASSERT_EQ(out.data[i].bits, want.bits) << "n " << n << " element " << i;
        }
      }
    }
    Guarded<double> a(static_cast<size_t>(n), 0), b(static_cast<size_t>(n), 0);
    Guarded<bool> lt(static_cast<size_t>(n), 1);  // an odd address: scalar stores
    for (int64_t i = 0; i < n; ++i) {
      a.data[i] = static_cast<double>(i % 5);
      b.data[i] = static_cast<double>(i % 3);
    }
    using G = ConvertedBinary<double, double, bool, kernels::Lt>;
    const MapArgs<G, bool, double, double> m{{kernels::Lt{}}, lt.data, {a.data, b.data}, 0};
    for (const RunHow& how : every_run()) {
      run_map(m, {n}, {{1}, {1}, {1}}, how);
      ASSERT_TRUE(lt.guards_intact());
      for (int64_t i = 0; i < n; ++i) ASSERT_EQ(lt.data[i], a.data[i] < b.data[i]) << i;
    }
  }
}

// where(cond, a, b) with kernels::Where on raw bits, 1- and 8-byte elements, a broadcast b.
template <typename U>
void check_where(int64_t n, bool broadcast_b) {
  Guarded<uint8_t> cond(static_cast<size_t>(n), 0);
  Guarded<U> a(static_cast<size_t>(n), 0), b(static_cast<size_t>(broadcast_b ? 1 : n), 0);
  for (int64_t i = 0; i < n; ++i) {
    cond.data[i] = static_cast<uint8_t>((i * 7) % 3 == 0);
    a.data[i] = static_cast<U>(i * 2654435761u);
  }
  for (size_t i = 0; i < b.n; ++i) b.data[i] = static_cast<U>(~static_cast<U>(i));
  for (const RunHow& how : every_run()) {
    Guarded<U> out(static_cast<size_t>(n), 0);
    const MapArgs<kernels::Where, U, uint8_t, U, U> m{{}, out.data, {cond.data, a.data, b.data}, 0};
    run_map(m, {n}, {{1}, {1}, {1}, {broadcast_b ? 0 : 1}}, how);
    ASSERT_TRUE(out.guards_intact());
    for (int64_t i = 0; i < n; ++i) {
      const U want = cond.data[i] ? a.data[i] : b.data[broadcast_b ? 0 : i];
      ASSERT_EQ(out.data[i], want) << sizeof(U) << "-byte where, n " << n << ", element " << i;
    }
  }
}

TEST(CudaElementwiseEmulated, WhereMovesBits) {
  for (int64_t n : {1, 15, 16, 17, 4096 + 31}) {
    check_where<uint8_t>(n, false);
    check_where<uint8_t>(n, true);
    check_where<uint64_t>(n, false);
    check_where<uint16_t>(n, true);
  }
}

// The Offsets-body walk of copy and fill (launch_elementwise): every layout, whole and in pieces.
TEST(CudaElementwiseEmulated, BodyKernelsVisitEveryElementOnce) {
  struct CountBody {
    int* hits;
    void operator()(const Offsets64<2>& o) const { hits[o[0]] += 1 + static_cast<int>(o[1]); }
  };
  for (const auto& [sizes, out_strides, in_strides] : std::vector<std::tuple<Shape, Shape, Shape>>{
           {{5000}, {1}, {1}}, {{1}, {1}, {0}}, {{40, 33}, {33, 1}, {1, 40}}, {{7, 9, 11}, {1, 7, 63}, {99, 11, 1}}}) {
    const kernels::StridedIndexer<2> ix = indexer<2>(sizes, {out_strides, in_strides});
    const int64_t n = ix.numel();
    for (int64_t limit : {kernels::kMaxIndex32, int64_t{50}}) {
      for (bool capped : {false, true}) {
        std::vector<int> hits(static_cast<size_t>(n), 0);
        const CountBody body{hits.data()};
        split_for_32bit(
            ix, Offsets64<2>{},
            [&](const kernels::StridedIndexer<2>& part, const Offsets64<2>& base) {
              const kernels::StridedIndexer32<2> ix32(part);
              const auto pn = static_cast<uint32_t>(part.numel());
              const uint32_t blocks = capped ? 1u : grid_for(pn, kStridedItems).blocks;
              for (uint32_t b = 0; b < blocks; ++b) {
                for (int t = 0; t < kBlockThreads; ++t)
                  body_thread<2>(ix32, base, body, pn, b, t, blocks, kBlockThreads);
              }
            },
            limit);
        // Each output offset once, with its input's offset (+1) added: compare with the walk.
        std::vector<int> want(static_cast<size_t>(n), 0);
        for_each_index(sizes, [&](const std::vector<int64_t>& idx) {
          want[offset_of(idx, out_strides)] += 1 + static_cast<int>(offset_of(idx, in_strides));
        });
        ASSERT_EQ(hits, want) << "limit " << limit << (capped ? " one block" : "");
      }
    }
  }
}

}  // namespace
}  // namespace ember::cuda_impl
