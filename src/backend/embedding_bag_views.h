#pragma once
// What the CPU and CUDA embedding_bag kernels (cpu/embedding_bag.cpp, cuda/embedding_bag.cu)
// check of the views they are handed, and how they pick the table's type: host code both share.
#include "backend/backend.h"
#include "core/check.h"

namespace ember::embedding_bag_views {

/// A contiguous float32/float64 [V, D] table, int64 indices [L] and offsets [B + 1], a contiguous
/// [B, D] `bags` view (the output, or its gradient) in the table's dtype, optional
/// per_sample_weights [L]; with Max, the forward pass's int64 [B, D] max_indices.
inline void check(const TensorView& table, const TensorView& indices, const TensorView& offsets,
                  const TensorView& per_sample_weights, const TensorView& bags, const TensorView& max_indices,
                  const EmbeddingBagArgs& args, const char* op) {
  EMBER_CHECK(table.ndim() == 2 && table.is_contiguous() && (table.dtype == kFloat32 || table.dtype == kFloat64), op,
              ": the kernels take a contiguous float32 or float64 [V, D] table");
  EMBER_CHECK(indices.ndim() == 1 && indices.is_contiguous() && indices.dtype == kInt64 && offsets.ndim() == 1 &&
                  offsets.is_contiguous() && offsets.dtype == kInt64 && offsets.sizes[0] >= 1,
              op, ": the kernels take contiguous int64 indices [L] and offsets [B + 1]");
  EMBER_CHECK(bags.ndim() == 2 && bags.is_contiguous() && bags.dtype == table.dtype &&
                  bags.sizes[1] == table.sizes[1] && bags.sizes[0] == offsets.sizes[0] - 1,
              op, ": expected a contiguous [B, D] view in the table's dtype");
  EMBER_CHECK(per_sample_weights.data == nullptr ||
                  (per_sample_weights.is_contiguous() && per_sample_weights.numel() == indices.sizes[0] &&
                   per_sample_weights.dtype == table.dtype),
              op, ": per_sample_weights must be a contiguous [L] view in the table's dtype");
  EMBER_CHECK(args.mode != EmbeddingBagMode::Max ||
                  (max_indices.is_contiguous() && max_indices.dtype == kInt64 && max_indices.sizes == bags.sizes),
              op, ": Max needs the forward pass's contiguous int64 [B, D] max_indices");
}

/// Runs f.template operator()<T>() for the table's dtype (float32 or float64; check() has
/// refused the others).
template <typename F>
void dispatch_table(Dtype dtype, const F& f) {
  if (dtype == kFloat32) {
    f.template operator()<float>();
  } else {
    f.template operator()<double>();
  }
}

}  // namespace ember::embedding_bag_views
