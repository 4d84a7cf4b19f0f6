// CpuBackend::embedding_bag and embedding_bag_backward over a contiguous float32 or float64
// [V, D] table (the front end, src/ops/embedding_bag.cpp, widens the 16-bit types), int64
// indices [L] and offsets [B + 1], with the shared decisions of kernels/embedding_bag_ops.h.
//
// Every index is checked before anything is written, on the calling thread, with PyTorch's
// message (an exception must not leave an OpenMP region). The forward pass runs one task per
// block of bags, each bag's rows added (or compared) into its output row in position order, so
// the result does not depend on the thread count. The backward pass writes the dense gradient
// with no two tasks touching one element: Sum and Mean split the table's rows into blocks, each
// task walking all the positions and taking those whose row is in its block (the walk costs L
// reads per task, the additions D-wide each, so it pays for itself once D is past a few
// elements); Max splits the columns. Each row's gradient is added in position order, the order
// of PyTorch's stable sort of the indices.
#include <algorithm>
#include <cstdint>
#include <vector>

#include "backend/cpu/cpu_backend.h"
#include "backend/embedding_bag_views.h"
#include "base/parallel.h"
#include "core/check.h"
#include "kernels/embedding_bag_ops.h"

namespace ember::cpu {
namespace {

using kernels::bag_range;
using kernels::counts_in_bag;

struct Geometry {
  int64_t rows;     // V
  int64_t dim;      // D
  int64_t bags;     // B
  int64_t length;   // L
  int64_t padding;  // padding_idx or -1
};

/// PyTorch's error for the first index outside [0, V), in position order.
void check_indices(const int64_t* idx, int64_t length, int64_t rows) {
  for (int64_t p = 0; p < length; ++p) {
    EMBER_CHECK(idx[p] >= 0 && idx[p] < rows,
                "embedding_bag: Expected idx >= 0 && idx < num_embeddings but found idx to be ", idx[p]);
  }
}

/// Bags per task: about kGrainSize elements of work (a bag's rows times D) each.
int64_t bag_grain(const Geometry& g) {
  const int64_t per_bag = std::max<int64_t>(1, (g.length / std::max<int64_t>(1, g.bags) + 1) * g.dim);
  return std::max<int64_t>(1, base::kGrainSize / per_bag);
}

template <typename T>
void sum_bags(const T* table, const int64_t* idx, const int64_t* offsets, const T* sample_weights, bool mean, T* out,
              const Geometry& g) {
  const int64_t dim = g.dim;
  base::parallel_for(g.bags, bag_grain(g), [&](int64_t first, int64_t last) {
    for (int64_t b = first; b < last; ++b) {
      T* __restrict row = out + b * dim;
      std::fill(row, row + dim, T(0));
      const kernels::BagRange r = bag_range(offsets, b, g.length);
      int64_t counted = 0;
      for (int64_t p = r.begin; p < r.end; ++p) {
        if (!counts_in_bag(idx[p], g.padding)) continue;
        ++counted;
        const T* __restrict src = table + idx[p] * dim;
        if (sample_weights != nullptr) {
          const T s = sample_weights[p];
          for (int64_t d = 0; d < dim; ++d) row[d] += s * src[d];
        } else {
          for (int64_t d = 0; d < dim; ++d) row[d] += src[d];
        }
      }
      if (mean && counted > 1) {
        // A division per element, as PyTorch divides the sums by the bag sizes (a reciprocal
        // times each would differ in the last bit).
        const T size = static_cast<T>(counted);
        for (int64_t d = 0; d < dim; ++d) row[d] /= size;
      }
    }
  });
}

template <typename T>
void max_bags(const T* table, const int64_t* idx, const int64_t* offsets, T* out, int64_t* winners, const Geometry& g) {
  const int64_t dim = g.dim;
  base::parallel_for(g.bags, bag_grain(g), [&](int64_t first, int64_t last) {
    for (int64_t b = first; b < last; ++b) {
      T* __restrict row = out + b * dim;
      int64_t* __restrict won = winners + b * dim;
      // An empty bag (or one of padding only) gives zeros, and no row gets its gradient.
      std::fill(row, row + dim, T(0));
      std::fill(won, won + dim, int64_t{-1});
      const kernels::BagRange r = bag_range(offsets, b, g.length);
      bool first_row = true;
      for (int64_t p = r.begin; p < r.end; ++p) {
        const int64_t i = idx[p];
        if (!counts_in_bag(i, g.padding)) continue;
        const T* __restrict src = table + i * dim;
        for (int64_t d = 0; d < dim; ++d) {
          const bool take = kernels::replaces_max(first_row, src[d], row[d]);
          row[d] = take ? src[d] : row[d];
          won[d] = take ? i : won[d];
        }
        first_row = false;
      }
    }
  });
}

/// Counted rows per bag (Mean's divisors).
std::vector<int64_t> bag_sizes(const int64_t* idx, const int64_t* offsets, const Geometry& g) {
  std::vector<int64_t> sizes(static_cast<size_t>(g.bags), 0);
  for (int64_t b = 0; b < g.bags; ++b) {
    const kernels::BagRange r = bag_range(offsets, b, g.length);
    for (int64_t p = r.begin; p < r.end; ++p) sizes[static_cast<size_t>(b)] += counts_in_bag(idx[p], g.padding);
  }
  return sizes;
}

/// Each row's count over all the indices (scale_grad_by_freq), as PyTorch counts them: padding
/// and positions outside every bag included.
std::vector<int64_t> frequencies(const int64_t* idx, const Geometry& g) {
  std::vector<int64_t> counts(static_cast<size_t>(g.rows), 0);
  for (int64_t p = 0; p < g.length; ++p) ++counts[static_cast<size_t>(idx[p])];
  return counts;
}

template <typename T>
void sum_backward(const T* grad, const int64_t* idx, const int64_t* offsets, const T* sample_weights, bool mean,
                  bool by_frequency, T* grad_table, const Geometry& g) {
  const std::vector<int64_t> sizes = mean ? bag_sizes(idx, offsets, g) : std::vector<int64_t>();
  const std::vector<int64_t> counts = by_frequency ? frequencies(idx, g) : std::vector<int64_t>();
  const int64_t dim = g.dim;
  // Row blocks: each task owns the gradient rows [row_begin, row_end) and walks every position.
  const int64_t tasks = std::min<int64_t>(
      base::num_threads(), std::max<int64_t>(1, (g.length * dim + base::kGrainSize - 1) / base::kGrainSize));
  base::parallel_for(tasks, 1, [&](int64_t first, int64_t last) {
    const int64_t row_begin = g.rows * first / tasks, row_end = g.rows * last / tasks;
    for (int64_t b = 0; b < g.bags; ++b) {
      const kernels::BagRange r = bag_range(offsets, b, g.length);
      const T* __restrict from = grad + b * dim;
      const int64_t size = mean ? sizes[static_cast<size_t>(b)] : 0;
      for (int64_t p = r.begin; p < r.end; ++p) {
        const int64_t i = idx[p];
        if (i < row_begin || i >= row_end || !counts_in_bag(i, g.padding)) continue;
        const T s = kernels::gradient_scale(sample_weights != nullptr ? sample_weights[p] : T(1),
                                            by_frequency ? counts[static_cast<size_t>(i)] : 0, size);
        T* __restrict to = grad_table + i * dim;
        for (int64_t d = 0; d < dim; ++d) to[d] += s * from[d];
      }
    }
  });
}

template <typename T>
void max_backward(const T* grad, const int64_t* winners, T* grad_table, const Geometry& g) {
  const int64_t dim = g.dim;
  // Column blocks: a column's elements are only ever added to by its own task.
  base::parallel_for(dim, std::max<int64_t>(1, base::kGrainSize / std::max<int64_t>(1, g.bags)),
                     [&](int64_t first, int64_t last) {
                       for (int64_t b = 0; b < g.bags; ++b) {
                         for (int64_t d = first; d < last; ++d) {
                           const int64_t i = winners[b * dim + d];
                           if (i >= 0) grad_table[i * dim + d] += grad[b * dim + d];
                         }
                       }
                     });
}

}  // namespace

void CpuBackend::embedding_bag(const TensorView& weight, const TensorView& indices, const TensorView& offsets,
                               const TensorView& per_sample_weights, const EmbeddingBagArgs& args,
                               const TensorView& out, const TensorView& max_indices) {
  embedding_bag_views::check(weight, indices, offsets, per_sample_weights, out, max_indices, args, "embedding_bag");
  const bool max = args.mode == EmbeddingBagMode::Max;
  const Geometry g{weight.sizes[0], weight.sizes[1], out.sizes[0], indices.sizes[0], args.padding_idx};
  const int64_t* idx = indices.ptr<const int64_t>();
  check_indices(idx, g.length, g.rows);
  if (out.numel() == 0) return;
  embedding_bag_views::dispatch_table(weight.dtype, [&]<typename T>() {
    if (max) {
      max_bags(weight.ptr<const T>(), idx, offsets.ptr<const int64_t>(), out.ptr<T>(), max_indices.ptr<int64_t>(), g);
    } else {
      const T* sample_weights = per_sample_weights.data == nullptr ? nullptr : per_sample_weights.ptr<const T>();
      sum_bags(weight.ptr<const T>(), idx, offsets.ptr<const int64_t>(), sample_weights,
               args.mode == EmbeddingBagMode::Mean, out.ptr<T>(), g);
    }
  });
}

void CpuBackend::embedding_bag_backward(const TensorView& grad_out, const TensorView& indices,
                                        const TensorView& offsets, const TensorView& per_sample_weights,
                                        const TensorView& max_indices, const EmbeddingBagArgs& args,
                                        const TensorView& grad_weight) {
  embedding_bag_views::check(grad_weight, indices, offsets, per_sample_weights, grad_out, max_indices, args,
                             "embedding_bag_backward");
  const bool max = args.mode == EmbeddingBagMode::Max;
  const Geometry g{grad_weight.sizes[0], grad_weight.sizes[1], grad_out.sizes[0], indices.sizes[0], args.padding_idx};
  const int64_t* idx = indices.ptr<const int64_t>();
  check_indices(idx, g.length, g.rows);
  embedding_bag_views::dispatch_table(grad_weight.dtype, [&]<typename T>() {
    T* table = grad_weight.ptr<T>();
    base::parallel_for(grad_weight.numel(), base::kGrainSize,
                       [&](int64_t begin, int64_t end) { std::fill(table + begin, table + end, T(0)); });
    if (grad_out.numel() == 0) return;
    if (max) {
      max_backward(grad_out.ptr<const T>(), max_indices.ptr<const int64_t>(), table, g);
    } else {
      const T* sample_weights = per_sample_weights.data == nullptr ? nullptr : per_sample_weights.ptr<const T>();
      sum_backward(grad_out.ptr<const T>(), idx, offsets.ptr<const int64_t>(), sample_weights,
                   args.mode == EmbeddingBagMode::Mean, args.scale_grad_by_freq, table, g);
    }
  });
}

}  // namespace ember::cpu
