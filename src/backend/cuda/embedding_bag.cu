// CudaBackend::embedding_bag and embedding_bag_backward, with the CPU kernels' semantics
// (cpu/embedding_bag.cpp) and the shared decisions of kernels/embedding_bag_ops.h: a contiguous
// float32 or float64 [V, D] table, int64 indices [L] and offsets [B + 1] (never read by the host).
//
// Forward: one block per bag (a grid-stride loop over bags past the grid's limit), its threads
// over the D columns, each walking the bag's positions in order; so a bag's sum is added in the
// CPU's order and the result is the CPU's bit for bit but for contraction into FMAs.
//
// Backward: grad_weight is zeroed, then Sum and Mean take one block per bag, each thread adding
// its column of the bag's scaled gradient into the rows with atomicAdd, and Max one thread per
// output element adding into its winning row with atomicAdd. So several bags naming one row add
// into it in no fixed order and a float sum's rounding may differ from run to run. Under
// use_deterministic_algorithms both take one thread per column instead, walking every bag in
// order (the CPU's order, its result bit for bit), which is slower when D is small.
// scale_grad_by_freq counts each row's uses over all the indices first (integer atomics, exact).
//
// Out-of-range indices are never read: the first one met is written into the device's error
// record (index_error.h) and reported with the CPU's message at the host's next wait for the
// device, as index_select's are, and the bag goes on without that position. With
// EMBER_CUDA_CHECK_INDICES=1 the indices are checked before the launch, waiting for the device.
#include <cuda_runtime.h>

#include <algorithm>
#include <cstdint>
#include <memory>

#include "backend/cuda/cuda_backend.h"
#include "backend/cuda/index_error.cuh"
#include "backend/cuda/launch.h"
#include "backend/cuda/runtime.h"
#include "backend/embedding_bag_views.h"
#include "core/check.h"
#include "ember/backends.h"
#include "kernels/embedding_bag_ops.h"

namespace ember::cuda_impl {
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

__device__ inline bool in_table(int64_t i, const Geometry& g) { return i >= 0 && i < g.rows; }

// An out-of-range index, recorded by the thread of column 0 only (the others skip it too).
__device__ inline void report_bad_index(IndexErrorRecord* record, int64_t i, int64_t d, const Geometry& g) {
  if (d == 0) record_bad_index(record, IndexOp::EmbeddingBag, i, 0, g.rows);
}

template <typename T>
__global__ void sum_bags_kernel(const T* table, const int64_t* idx, const int64_t* offsets, const T* sample_weights,
                                bool mean, T* out, Geometry g, IndexErrorRecord* record) {
  for (int64_t b = blockIdx.x; b < g.bags; b += gridDim.x) {
    const kernels::BagRange r = bag_range(offsets, b, g.length);
    for (int64_t d = threadIdx.x; d < g.dim; d += blockDim.x) {
      T acc = T(0);
      int64_t counted = 0;
      for (int64_t p = r.begin; p < r.end; ++p) {
        const int64_t i = idx[p];
        if (!counts_in_bag(i, g.padding)) continue;
        if (!in_table(i, g)) {
          report_bad_index(record, i, d, g);
          continue;
        }
        ++counted;
        const T v = table[i * g.dim + d];
        acc += sample_weights != nullptr ? sample_weights[p] * v : v;
      }
      if (mean && counted > 1) acc /= static_cast<T>(counted);
      out[b * g.dim + d] = acc;
    }
  }
}

template <typename T>
__global__ void max_bags_kernel(const T* table, const int64_t* idx, const int64_t* offsets, T* out, int64_t* winners,
                                Geometry g, IndexErrorRecord* record) {
  for (int64_t b = blockIdx.x; b < g.bags; b += gridDim.x) {
    const kernels::BagRange r = bag_range(offsets, b, g.length);
    for (int64_t d = threadIdx.x; d < g.dim; d += blockDim.x) {
      T best = T(0);  // an empty bag gives 0 and no winner
      int64_t won = -1;
      for (int64_t p = r.begin; p < r.end; ++p) {
        const int64_t i = idx[p];
        if (!counts_in_bag(i, g.padding)) continue;
        if (!in_table(i, g)) {
          report_bad_index(record, i, d, g);
          continue;
        }
        const T v = table[i * g.dim + d];
        if (kernels::replaces_max(won < 0, v, best)) {
          best = v;
          won = i;
        }
      }
      out[b * g.dim + d] = best;
      winners[b * g.dim + d] = won;
    }
  }
}

// Each row's uses over all the indices (scale_grad_by_freq).
__global__ void __launch_bounds__(kBlockThreads)
    count_rows_kernel(const int64_t* idx, unsigned long long* counts, Geometry g) {
  for (int64_t p = static_cast<int64_t>(blockIdx.x) * blockDim.x + threadIdx.x; p < g.length;
       p += static_cast<int64_t>(gridDim.x) * blockDim.x) {
    if (in_table(idx[p], g)) atomicAdd(&counts[idx[p]], 1ull);
  }
}

// The factor of position p of a bag of `size` counted rows (0 unless Mean).
template <typename T>
__device__ inline T scale_at(const T* sample_weights, const unsigned long long* counts, int64_t p, int64_t i,
                             int64_t size) {
  return kernels::gradient_scale(sample_weights != nullptr ? sample_weights[p] : T(1),
                                 counts != nullptr ? static_cast<int64_t>(counts[i]) : 0, size);
}

__device__ inline int64_t counted_size(const int64_t* idx, kernels::BagRange r, const Geometry& g) {
  int64_t size = 0;
  for (int64_t p = r.begin; p < r.end; ++p) size += counts_in_bag(idx[p], g.padding) && in_table(idx[p], g);
  return size;
}

template <typename T>
__global__ void sum_backward_kernel(const T* grad, const int64_t* idx, const int64_t* offsets, const T* sample_weights,
                                    bool mean, const unsigned long long* counts, T* grad_table, Geometry g) {
  for (int64_t b = blockIdx.x; b < g.bags; b += gridDim.x) {
    const kernels::BagRange r = bag_range(offsets, b, g.length);
    const int64_t size = mean ? counted_size(idx, r, g) : 0;
    for (int64_t d = threadIdx.x; d < g.dim; d += blockDim.x) {
      const T from = grad[b * g.dim + d];
      for (int64_t p = r.begin; p < r.end; ++p) {
        const int64_t i = idx[p];
        if (!counts_in_bag(i, g.padding) || !in_table(i, g)) continue;
        atomicAdd(&grad_table[i * g.dim + d], scale_at(sample_weights, counts, p, i, size) * from);
      }
    }
  }
}

// use_deterministic_algorithms: one thread per column, every bag in order.
template <typename T>
__global__ void __launch_bounds__(kBlockThreads)
    sum_backward_columns_kernel(const T* grad, const int64_t* idx, const int64_t* offsets, const T* sample_weights,
                                bool mean, const unsigned long long* counts, T* grad_table, Geometry g) {
  for (int64_t d = static_cast<int64_t>(blockIdx.x) * blockDim.x + threadIdx.x; d < g.dim;
       d += static_cast<int64_t>(gridDim.x) * blockDim.x) {
    for (int64_t b = 0; b < g.bags; ++b) {
      const kernels::BagRange r = bag_range(offsets, b, g.length);
      const int64_t size = mean ? counted_size(idx, r, g) : 0;
      const T from = grad[b * g.dim + d];
      for (int64_t p = r.begin; p < r.end; ++p) {
        const int64_t i = idx[p];
        if (!counts_in_bag(i, g.padding) || !in_table(i, g)) continue;
        grad_table[i * g.dim + d] += scale_at(sample_weights, counts, p, i, size) * from;
      }
    }
  }
}

template <typename T>
__global__ void __launch_bounds__(kBlockThreads)
    max_backward_kernel(const T* grad, const int64_t* winners, T* grad_table, Geometry g) {
  const int64_t total = g.bags * g.dim;
  for (int64_t e = static_cast<int64_t>(blockIdx.x) * blockDim.x + threadIdx.x; e < total;
       e += static_cast<int64_t>(gridDim.x) * blockDim.x) {
    const int64_t i = winners[e];
    if (in_table(i, g)) atomicAdd(&grad_table[i * g.dim + e % g.dim], grad[e]);
  }
}

template <typename T>
__global__ void __launch_bounds__(kBlockThreads)
    max_backward_columns_kernel(const T* grad, const int64_t* winners, T* grad_table, Geometry g) {
  for (int64_t d = static_cast<int64_t>(blockIdx.x) * blockDim.x + threadIdx.x; d < g.dim;
       d += static_cast<int64_t>(gridDim.x) * blockDim.x) {
    for (int64_t b = 0; b < g.bags; ++b) {
      const int64_t i = winners[b * g.dim + d];
      if (in_table(i, g)) grad_table[i * g.dim + d] += grad[b * g.dim + d];
    }
  }
}

// EMBER_CUDA_CHECK_INDICES=1: the position of the first index outside [0, V).
__global__ void __launch_bounds__(kBlockThreads)
    first_bad_index_kernel(const int64_t* idx, Geometry g, unsigned long long* first_bad) {
  for (int64_t p = static_cast<int64_t>(blockIdx.x) * blockDim.x + threadIdx.x; p < g.length;
       p += static_cast<int64_t>(gridDim.x) * blockDim.x) {
    if (!in_table(idx[p], g)) atomicMin(first_bad, static_cast<unsigned long long>(p));
  }
}

// ------------------------------------------------------------------------------- host side

/// EMBER_CUDA_CHECK_INDICES=1 only: the CPU's error for the first bad index, before anything is
/// written. Waits for the device.
void validate_indices(const TensorView& indices, const Geometry& g, cudaStream_t stream, int device) {
  if (!check_indices_enabled() || g.length == 0) return;
  Workspace flag(sizeof(unsigned long long), device);
  auto* first_bad = static_cast<unsigned long long*>(flag.data());
  EMBER_CUDA_CHECK(cudaMemsetAsync(first_bad, 0xff, sizeof(unsigned long long), stream), "embedding_bag");
  const Launch1d l = launch_1d(g.length);
  first_bad_index_kernel<<<l.blocks, l.threads, 0, stream>>>(indices.ptr<const int64_t>(), g, first_bad);
  check_launch("embedding_bag");
  unsigned long long host_first = 0;
  EMBER_CUDA_CHECK(cudaMemcpyAsync(&host_first, first_bad, sizeof host_first, cudaMemcpyDeviceToHost, stream),
                   "embedding_bag");
  EMBER_CUDA_CHECK(cudaStreamSynchronize(stream), "embedding_bag");
  if (host_first == ~0ull) return;
  int64_t value = 0;
  EMBER_CUDA_CHECK(
      cudaMemcpyAsync(&value, indices.ptr<const int64_t>() + host_first, sizeof value, cudaMemcpyDeviceToHost, stream),
      "embedding_bag");
  EMBER_CUDA_CHECK(cudaStreamSynchronize(stream), "embedding_bag");
  detail::fail("embedding_bag: Expected idx >= 0 && idx < num_embeddings but found idx to be ", value);
}

/// A block per bag: a warp's multiple of threads up to D, at most kBlockThreads.
Launch1d bag_launch(const Geometry& g) {
  const int64_t threads = std::min<int64_t>(kBlockThreads, std::max<int64_t>(32, (g.dim + 31) / 32 * 32));
  return {static_cast<unsigned>(std::min<int64_t>(g.bags, kMaxGridX)), static_cast<unsigned>(threads)};
}

}  // namespace

void CudaBackend::embedding_bag(const TensorView& weight, const TensorView& indices, const TensorView& offsets,
                                const TensorView& per_sample_weights, const EmbeddingBagArgs& args,
                                const TensorView& out, const TensorView& max_indices) {
  embedding_bag_views::check(weight, indices, offsets, per_sample_weights, out, max_indices, args, "embedding_bag");
  const bool max = args.mode == EmbeddingBagMode::Max;
  const Geometry g{weight.sizes[0], weight.sizes[1], out.sizes[0], indices.sizes[0], args.padding_idx};
  DeviceGuard guard(weight.device_index);
  const cudaStream_t stream = current_stream(weight.device_index);
  validate_indices(indices, g, stream, weight.device_index);
  if (out.numel() == 0) return;
  IndexErrorRecord* record = index_error_record(weight.device_index);
  const Launch1d l = bag_launch(g);
  embedding_bag_views::dispatch_table(weight.dtype, [&]<typename T>() {
    if (max) {
      max_bags_kernel<T><<<l.blocks, l.threads, 0, stream>>>(weight.ptr<const T>(), indices.ptr<const int64_t>(),
                                                             offsets.ptr<const int64_t>(), out.ptr<T>(),
                                                             max_indices.ptr<int64_t>(), g, record);
    } else {
      const T* sample_weights = per_sample_weights.data == nullptr ? nullptr : per_sample_weights.ptr<const T>();
      sum_bags_kernel<T><<<l.blocks, l.threads, 0, stream>>>(
          weight.ptr<const T>(), indices.ptr<const int64_t>(), offsets.ptr<const int64_t>(), sample_weights,
          args.mode == EmbeddingBagMode::Mean, out.ptr<T>(), g, record);
    }
  });
  check_launch("embedding_bag");
}

void CudaBackend::embedding_bag_backward(const TensorView& grad_out, const TensorView& indices,
                                         const TensorView& offsets, const TensorView& per_sample_weights,
                                         const TensorView& max_indices, const EmbeddingBagArgs& args,
                                         const TensorView& grad_weight) {
  embedding_bag_views::check(grad_weight, indices, offsets, per_sample_weights, grad_out, max_indices, args,
                             "embedding_bag_backward");
  const bool max = args.mode == EmbeddingBagMode::Max;
  const Geometry g{grad_weight.sizes[0], grad_weight.sizes[1], grad_out.sizes[0], indices.sizes[0], args.padding_idx};
  DeviceGuard guard(grad_weight.device_index);
  const cudaStream_t stream = current_stream(grad_weight.device_index);
  const size_t table_bytes = static_cast<size_t>(grad_weight.numel()) * (grad_weight.dtype == kFloat32 ? 4 : 8);
  if (table_bytes > 0) {
    EMBER_CUDA_CHECK(cudaMemsetAsync(grad_weight.data, 0, table_bytes, stream), "embedding_bag_backward");
  }
  if (grad_out.numel() == 0) return;
  const bool ordered = are_deterministic_algorithms_enabled();
  const Launch1d columns = launch_1d(g.dim);
  if (max) {
    const Launch1d l = launch_1d(grad_out.numel());
    embedding_bag_views::dispatch_table(grad_weight.dtype, [&]<typename T>() {
      if (ordered) {
        max_backward_columns_kernel<T><<<columns.blocks, columns.threads, 0, stream>>>(
            grad_out.ptr<const T>(), max_indices.ptr<const int64_t>(), grad_weight.ptr<T>(), g);
      } else {
        max_backward_kernel<T><<<l.blocks, l.threads, 0, stream>>>(
            grad_out.ptr<const T>(), max_indices.ptr<const int64_t>(), grad_weight.ptr<T>(), g);
      }
    });
    check_launch("embedding_bag_backward");
    return;
  }
  // The rows' counts live until the kernels queued after them on this stream have run.
  std::unique_ptr<Workspace> counts_space;
  unsigned long long* counts = nullptr;
  if (args.scale_grad_by_freq && g.length > 0) {
    const size_t count_bytes = static_cast<size_t>(g.rows) * sizeof(unsigned long long);
    counts_space = std::make_unique<Workspace>(count_bytes, grad_weight.device_index);
    counts = static_cast<unsigned long long*>(counts_space->data());
    EMBER_CUDA_CHECK(cudaMemsetAsync(counts, 0, count_bytes, stream), "embedding_bag_backward");
    const Launch1d lc = launch_1d(g.length);
    count_rows_kernel<<<lc.blocks, lc.threads, 0, stream>>>(indices.ptr<const int64_t>(), counts, g);
    check_launch("embedding_bag_backward");
  }
  const bool mean = args.mode == EmbeddingBagMode::Mean;
  const Launch1d l = bag_launch(g);
  embedding_bag_views::dispatch_table(grad_weight.dtype, [&]<typename T>() {
    const T* sample_weights = per_sample_weights.data == nullptr ? nullptr : per_sample_weights.ptr<const T>();
    if (ordered) {
      sum_backward_columns_kernel<T><<<columns.blocks, columns.threads, 0, stream>>>(
          grad_out.ptr<const T>(), indices.ptr<const int64_t>(), offsets.ptr<const int64_t>(), sample_weights, mean,
          counts, grad_weight.ptr<T>(), g);
    } else {
      sum_backward_kernel<T><<<l.blocks, l.threads, 0, stream>>>(grad_out.ptr<const T>(), indices.ptr<const int64_t>(),
                                                                 offsets.ptr<const int64_t>(), sample_weights, mean,
                                                                 counts, grad_weight.ptr<T>(), g);
    }
  });
  check_launch("embedding_bag_backward");
}

}  // namespace ember::cuda_impl
