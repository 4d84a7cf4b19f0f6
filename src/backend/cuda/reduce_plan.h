#pragma once
// The host-side plan of a CUDA reduction: x's kept and reduced dimensions, coalesced, and which
// kernel runs it. Plain C++ (no CUDA headers) so that the tests check it without a GPU; the
// offset arithmetic is EMBER_HD because the kernels use it.
//
// Coalescing drops size-1 dimensions and merges neighbours that form one flat run, exactly like
// the CPU backend: row-major linear indices over the reduced dimensions are unchanged by it, so
// the indices argmax reports are the same.
#include <cstdint>

#include "backend/cuda/launch.h"
#include "ember/half.h"  // EMBER_HD
#include "kernels/indexer.h"

namespace ember::cuda_impl {

/// Coalesced dimensions (outermost first) and their strides in x, in elements.
struct DimList {
  int ndim = 0;
  int64_t sizes[kernels::kMaxDims] = {};
  int64_t strides[kernels::kMaxDims] = {};

  /// The element offset of the row-major position `linear`. One dimension (the usual case after
  /// coalescing) costs no division.
  EMBER_HD int64_t offset(int64_t linear) const {
    int64_t off = 0;
    for (int d = ndim - 1; d > 0; --d) {
      const int64_t q = linear / sizes[d];
      off += (linear - q * sizes[d]) * strides[d];
      linear = q;
    }
    return ndim > 0 ? off + linear * strides[0] : 0;
  }
};

/// Coalesces dims [0, n) of (sizes, strides) into `out`; false when more than kMaxDims remain
/// (which needs at least 2^kMaxDims elements).
inline bool coalesce_dims(const int64_t* sizes, const int64_t* strides, int64_t n, DimList& out) {
  out.ndim = 0;
  for (int64_t d = 0; d < n; ++d) {
    if (sizes[d] == 1) continue;
    if (out.ndim > 0 && out.strides[out.ndim - 1] == sizes[d] * strides[d]) {
      out.sizes[out.ndim - 1] *= sizes[d];
      out.strides[out.ndim - 1] = strides[d];
      continue;
    }
    if (out.ndim == kernels::kMaxDims) return false;
    out.sizes[out.ndim] = sizes[d];
    out.strides[out.ndim] = strides[d];
    ++out.ndim;
  }
  return true;
}

enum class ReduceStrategy : uint8_t {
  ThreadPerOutput,  // each thread reduces whole slices (grid-stride over outputs)
  BlockPerOutput,   // a block of kReduceBlockThreads reduces each slice (block-stride over outputs)
  Column,           // 2-D blocks: x over neighbouring outputs, y (and grid.y) splitting each column
};

/// Threads of the block-per-output and column kernels (cub::BlockReduce and the column kernel's
/// shared memory are sized at compile time; both kernels declare it in __launch_bounds__).
inline constexpr int kReduceBlockThreads = 256;
/// Slices this short are not worth a block: most of its threads would idle.
inline constexpr int64_t kSmallSlice = 64;

/// Few outputs with long slices would leave most of the GPU idle with a block per output, so
/// each slice is then cut into chunks, a block each, whose partial results a second kernel merges
/// in chunk order. Chunks of at least kSplitElements (64 per thread of a block); at most
/// kSplitMaxTasks blocks in all, about one wave on the largest GPUs.
inline constexpr int64_t kSplitPerThread = 64;
inline constexpr int64_t kSplitElements = kSplitPerThread * kReduceBlockThreads;
inline constexpr int64_t kSplitMaxTasks = 1024;

/// The column kernel's block is block_x threads across outputs times block_y down each column
/// (block_x * block_y == kReduceBlockThreads). block_x is at most a warp, so a warp reads
/// whole runs of neighbouring outputs, and block_y at least kColumnMinY.
inline constexpr int kColumnMaxX = 32;
inline constexpr int kColumnMinY = kReduceBlockThreads / kColumnMaxX;
/// block_y is narrowed (and block_x widened) while its threads would get fewer elements of a
/// column than this: a step of the tree over y costs about as much as this many loads.
inline constexpr int64_t kColumnMinPerThread = 8;
/// The hardware's limit on gridDim.y (and z), which counts a column's chunks.
inline constexpr int64_t kMaxGridY = 65535;

/// How many chunks each slice is cut into (1: not split). Like the strategy, a function of the
/// shape alone, so the order of the additions never changes between runs or GPUs.
inline int64_t split_chunks(ReduceStrategy strategy, int64_t outputs, int64_t count) {
  if (strategy != ReduceStrategy::BlockPerOutput || outputs <= 0 || count < 2 * kSplitElements) return 1;
  const int64_t by_size = count / kSplitElements;
  const int64_t by_tasks = kSplitMaxTasks / outputs;
  const int64_t chunks = by_size < by_tasks ? by_size : by_tasks;
  return chunks > 1 ? chunks : 1;
}

/// The first element of chunk c when `count` elements are cut into `chunks` nearly equal runs
/// (the first count % chunks runs one longer); chunk_begin(count, chunks, chunks) == count.
EMBER_HD inline int64_t chunk_begin(int64_t count, int64_t chunks, int64_t c) {
  const int64_t q = count / chunks, r = count % chunks;
  return c * q + (c < r ? c : r);
}

/// The smallest power of two >= v (v >= 1), at most 2^62.
inline int64_t pow2_ceil(int64_t v) {
  int64_t p = 1;
  while (p < v && p < (int64_t{1} << 62)) p *= 2;
  return p;
}

/// Geometry of the column kernel (ReduceStrategy::Column). Block (block_x, block_y); grid
/// (grid_x, chunks): block (gx, c) takes groups gx, gx + grid_x, ... of block_x neighbouring
/// outputs, and chunk c of each of their columns, its block_y threads interleaved down the chunk
/// (thread y reads rows y, y + block_y, ...: with block_x < 32 a warp covers 32 / block_x
/// neighbouring rows, contiguous when the rows are). The block then combines its block_y
/// partials per output in a fixed halving tree; with chunks > 1 a second kernel merges the
/// chunks' results in chunk order.
struct ColumnShape {
  int block_x = kColumnMaxX;
  int block_y = kColumnMinY;
  int64_t groups = 0;  // ceil(outputs / block_x)
  int64_t chunks = 1;  // blocks per column (gridDim.y), at most kMaxGridY
  int64_t grid_x = 0;  // min(groups, kMaxGridX)
};

/// The column kernel's shape for `outputs` slices of `count` elements each, the innermost kept
/// dim holding `inner` neighbouring outputs. Depends on the shape alone (reproducible sums).
inline ColumnShape column_shape(int64_t outputs, int64_t count, int64_t inner) {
  ColumnShape s;
  if (outputs <= 0) return s;
  s.block_x = static_cast<int>(pow2_ceil(inner < kColumnMaxX ? (inner > 1 ? inner : 1) : kColumnMaxX));
  s.block_y = kReduceBlockThreads / s.block_x;
  // Short columns and many outputs: fewer threads per column, more columns per block.
  const int64_t outputs_pow2 = pow2_ceil(outputs);
  while (s.block_y > kColumnMinY && count < s.block_y * kColumnMinPerThread && 2 * s.block_x <= outputs_pow2) {
    s.block_x *= 2;
    s.block_y /= 2;
  }
  s.groups = (outputs - 1) / s.block_x + 1;
  // Long columns: each cut into chunks of at least kSplitPerThread elements a thread, with at
  // most kSplitMaxTasks blocks in all (or groups blocks, when there are more groups than that).
  const int64_t by_size = count / (s.block_y * kSplitPerThread);
  const int64_t by_tasks = kSplitMaxTasks / s.groups;
  int64_t chunks = by_size < by_tasks ? by_size : by_tasks;
  if (chunks > kMaxGridY) chunks = kMaxGridY;
  s.chunks = chunks >= 2 ? chunks : 1;
  s.grid_x = s.groups < kMaxGridX ? s.groups : kMaxGridX;
  return s;
}

struct ReducePlan {
  DimList kept;     // x's leading dims: output i's slice starts at kept.offset(i)
  DimList reduced;  // the reduced dims: element j of a slice is at reduced.offset(j)
  int64_t outputs = 1;
  int64_t count = 1;  // elements per slice
  ReduceStrategy strategy = ReduceStrategy::BlockPerOutput;
  int64_t chunks = 1;  // per slice; > 1 only for BlockPerOutput and Column
  ColumnShape column;  // Column only
};

/// Whether output i + 1's slice lies closer in memory to output i's than a slice's own
/// elements lie to each other (PyTorch reduces such inputs "not on the fastest-striding
/// dimension"): then neighbouring threads must take neighbouring outputs to read coalesced.
/// Broadcast outputs (inner stride 0) share their slices: reading each slice contiguously, a
/// block per output, is then the better layout.
inline bool is_column_layout(const DimList& kept, const DimList& reduced) {
  if (kept.ndim == 0 || reduced.ndim == 0) return false;
  const auto abs64 = [](int64_t v) { return v < 0 ? -v : v; };
  const int64_t inner = abs64(kept.strides[kept.ndim - 1]);
  if (inner == 0) return false;
  for (int d = 0; d < reduced.ndim; ++d) {
    if (abs64(reduced.strides[d]) <= inner) return false;
  }
  return true;
}

/// Which kernel suits the shape. Depends on nothing but the shapes and strides, so a given
/// input is always reduced in the same order (results are reproducible).
inline ReduceStrategy choose_strategy(int64_t count, const DimList& kept, const DimList& reduced) {
  if (count <= kSmallSlice) return ReduceStrategy::ThreadPerOutput;
  if (is_column_layout(kept, reduced)) return ReduceStrategy::Column;
  return ReduceStrategy::BlockPerOutput;
}

/// The plan for reducing the last `ndim - lead` dims of x (sizes and strides of ndim dims).
/// Returns false when a group has too many dimensions for the kernels.
inline bool make_reduce_plan(const int64_t* sizes, const int64_t* strides, int64_t ndim, int64_t lead,
                             ReducePlan& plan) {
  plan.outputs = 1;
  plan.count = 1;
  for (int64_t d = 0; d < ndim; ++d) (d < lead ? plan.outputs : plan.count) *= sizes[d];
  if (!coalesce_dims(sizes, strides, lead, plan.kept)) return false;
  if (plan.count == 0) {
    plan.reduced.ndim = 0;  // never walked: every slice is empty
  } else if (!coalesce_dims(sizes + lead, strides + lead, ndim - lead, plan.reduced)) {
    return false;
  }
  plan.strategy = choose_strategy(plan.count, plan.kept, plan.reduced);
  if (plan.strategy == ReduceStrategy::Column) {
    plan.column = column_shape(plan.outputs, plan.count, plan.kept.sizes[plan.kept.ndim - 1]);
    plan.chunks = plan.column.chunks;
  } else {
    plan.column = ColumnShape{};
    plan.chunks = split_chunks(plan.strategy, plan.outputs, plan.count);
  }
  return true;
}

}  // namespace ember::cuda_impl
