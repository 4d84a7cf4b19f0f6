#pragma once
// The host-side plan of a CUDA reduction: x's kept and reduced dimensions, coalesced, and which
// kernel runs it. Plain C++ (no CUDA headers) so that the tests check it without a GPU; the
// offset arithmetic is EMBER_HD because the kernels use it.
//
// Coalescing drops size-1 dimensions and merges neighbours that form one flat run, exactly like
// the CPU backend: row-major linear indices over the reduced dimensions are unchanged by it, so
// the indices argmax reports are the same.
#include <cstdint>

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
};

/// Threads of the block-per-output kernel (its cub::BlockReduce is sized at compile time).
inline constexpr int kReduceBlockThreads = 256;
/// Slices this short are not worth a block: most of its threads would idle.
inline constexpr int64_t kSmallSlice = 64;
/// With at least this many outputs, a column layout (neighbouring outputs adjacent in memory,
/// the reduced dims strided) runs one thread per output, so a warp's loads are coalesced.
inline constexpr int64_t kColumnMinOutputs = 4096;

/// Few outputs with long slices would leave most of the GPU idle with a block per output, so
/// each slice is then cut into chunks, a block each, whose partial results a second kernel merges
/// in chunk order. Chunks of at least kSplitElements (64 per thread of a block); at most
/// kSplitMaxTasks blocks in all, about one wave on the largest GPUs.
inline constexpr int64_t kSplitElements = int64_t{64} * kReduceBlockThreads;
inline constexpr int64_t kSplitMaxTasks = 1024;

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

struct ReducePlan {
  DimList kept;     // x's leading dims: output i's slice starts at kept.offset(i)
  DimList reduced;  // the reduced dims: element j of a slice is at reduced.offset(j)
  int64_t outputs = 1;
  int64_t count = 1;  // elements per slice
  ReduceStrategy strategy = ReduceStrategy::BlockPerOutput;
  int64_t chunks = 1;  // per slice; > 1 only for BlockPerOutput
};

/// Which kernel suits the shape. Depends on nothing but the shapes and strides, so a given
/// input is always reduced in the same order (results are reproducible).
inline ReduceStrategy choose_strategy(int64_t outputs, int64_t count, const DimList& kept, const DimList& reduced) {
  if (count <= kSmallSlice) return ReduceStrategy::ThreadPerOutput;
  const bool kept_inner_unit = kept.ndim > 0 && kept.strides[kept.ndim - 1] == 1;
  bool reduced_unit = false;
  for (int d = 0; d < reduced.ndim; ++d) reduced_unit |= (reduced.strides[d] == 1 || reduced.strides[d] == -1);
  if (kept_inner_unit && !reduced_unit && outputs >= kColumnMinOutputs) return ReduceStrategy::ThreadPerOutput;
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
  plan.strategy = choose_strategy(plan.outputs, plan.count, plan.kept, plan.reduced);
  plan.chunks = split_chunks(plan.strategy, plan.outputs, plan.count);
  return true;
}

}  // namespace ember::cuda_impl
