// CudaBackend::sort, topk and searchsorted, with the CPU backend's semantics (cpu/sort.cpp;
// the order is kernels/sort_ops.h).
//
// sort and topk run CUB's stable segmented radix sort (one segment per row) on keys made from
// the input: the 16-bit floats become float (exact) and bool becomes uint8; NaNs become the one
// positive quiet NaN and -0.0 becomes 0.0, because the radix order puts negative NaNs first and
// -0.0 before 0.0 where PyTorch's order has every NaN last and the zeros equal. The positions
// come out of the sort, and the values are read back from the input through them, so they are
// the input's own elements. topk sorts whole rows and keeps the first k: simple and exact, but
// it does the work of a full sort; a radix select would be faster for small k.
// searchsorted is one thread per value, doing kernels::searchsorted_position's binary search.
#include <cuda_runtime.h>

#include <cstdint>
#include <cub/device/device_segmented_sort.cuh>
#include <limits>
#include <type_traits>

#include "backend/cuda/cuda_backend.h"
#include "backend/cuda/launch.h"
#include "backend/cuda/runtime.h"
#include "core/check.h"
#include "kernels/dtype_dispatch.h"
#include "kernels/sort_ops.h"

namespace ember::cuda_impl {
namespace {

__device__ inline int64_t grid_start() { return static_cast<int64_t>(blockIdx.x) * blockDim.x + threadIdx.x; }
__device__ inline int64_t grid_stride() { return static_cast<int64_t>(gridDim.x) * blockDim.x; }

constexpr size_t align_up(size_t n) { return (n + 255) / 256 * 256; }

// The radix-sortable key of an element type.
template <typename T>
using sort_key_t = std::conditional_t<std::is_same_v<T, bool>, uint8_t, kernels::compute_t<T>>;

template <typename T>
__global__ void __launch_bounds__(kBlockThreads)
    make_keys_kernel(const T* x, sort_key_t<T>* keys, int64_t* positions, int64_t* offsets, int64_t total, int64_t n,
                     int64_t rows) {
  using K = sort_key_t<T>;
  // total + 1 iterations: the offsets need rows + 1 <= total + 1 entries.
  for (int64_t i = grid_start(); i <= total; i += grid_stride()) {
    if (i <= rows) offsets[i] = i * n;
    if (i == total) continue;
    K key = static_cast<K>(x[i]);
    if constexpr (std::is_floating_point_v<K>) {
      if (kmath::isnan(key)) key = std::numeric_limits<K>::quiet_NaN();
      if (key == K(0)) key = K(0);  // -0.0 sorts with 0.0
    }
    keys[i] = key;
    positions[i] = i % n;
  }
}

// Row r's first `k` sorted positions (of `n`) into [rows, k] outputs (indices may be null: sort
// sorts its positions in place), and the input's elements at them.
template <typename T>
__global__ void __launch_bounds__(kBlockThreads)
    take_sorted_kernel(const T* x, const int64_t* sorted_positions, T* values, int64_t* indices, int64_t total,
                       int64_t n, int64_t k) {
  for (int64_t i = grid_start(); i < total; i += grid_stride()) {
    const int64_t r = i / k, j = i % k;
    const int64_t p = sorted_positions[r * n + j];
    values[i] = x[r * n + p];
    if (indices != nullptr) indices[i] = p;
  }
}

template <typename T, typename Out>
__global__ void __launch_bounds__(kBlockThreads)
    searchsorted_kernel(const T* sorted, const T* values, const int64_t* sorter, Out* out, int64_t total, int64_t n,
                        int64_t m, bool shared, bool right) {
  for (int64_t i = grid_start(); i < total; i += grid_stride()) {
    const int64_t row = shared ? 0 : i / n;
    const int64_t* row_sorter = sorter != nullptr ? sorter + row * m : nullptr;
    out[i] = static_cast<Out>(kernels::searchsorted_position(sorted + row * m, row_sorter, m, values[i], right));
  }
}

int64_t last_size(const TensorView& v) { return v.ndim() == 0 ? 1 : v.sizes[v.ndim() - 1]; }

// Sorts every row of contiguous x ([rows, n]) into `positions` (int64, x's numel; the order's
// positions within each row). Returns nothing else: the keys live in a workspace of this call.
template <typename T>
void sort_positions(const TensorView& x, bool descending, int64_t* positions, const char* op) {
  using K = sort_key_t<T>;
  const int64_t total = x.numel(), n = last_size(x), rows = total / n;
  const int device = x.device_index;
  const cudaStream_t stream = current_stream(device);
  size_t sort_bytes = 0;
  const auto sort = [&](void* temp, const K* keys_in, K* keys_out, const int64_t* values_in, int64_t* values_out,
                        const int64_t* offsets) {
    return descending
               ? cub::DeviceSegmentedSort::StableSortPairsDescending(temp, sort_bytes, keys_in, keys_out, values_in,
                                                                     values_out, total, rows, offsets, offsets + 1,
                                                                     stream)
               : cub::DeviceSegmentedSort::StableSortPairs(temp, sort_bytes, keys_in, keys_out, values_in, values_out,
                                                           total, rows, offsets, offsets + 1, stream);
  };
  EMBER_CUDA_CHECK(sort(nullptr, nullptr, nullptr, nullptr, nullptr, nullptr), op);
  const size_t key_bytes = align_up(static_cast<size_t>(total) * sizeof(K));
  const size_t position_bytes = align_up(static_cast<size_t>(total) * sizeof(int64_t));
  const size_t offset_bytes = align_up(static_cast<size_t>(rows + 1) * sizeof(int64_t));
  Workspace ws(2 * key_bytes + position_bytes + offset_bytes + align_up(sort_bytes), device);
  auto* base = static_cast<uint8_t*>(ws.data());
  auto* keys_in = reinterpret_cast<K*>(base);
  auto* keys_out = reinterpret_cast<K*>(base + key_bytes);
  auto* positions_in = reinterpret_cast<int64_t*>(base + 2 * key_bytes);
  auto* offsets = reinterpret_cast<int64_t*>(base + 2 * key_bytes + position_bytes);
  void* temp = base + 2 * key_bytes + position_bytes + offset_bytes;
  const Launch1d l = launch_1d(total + 1);
  make_keys_kernel<T>
      <<<l.blocks, l.threads, 0, stream>>>(x.ptr<const T>(), keys_in, positions_in, offsets, total, n, rows);
  check_launch(op);
  EMBER_CUDA_CHECK(sort(temp, keys_in, keys_out, positions_in, positions, offsets), op);
}

}  // namespace

void CudaBackend::sort(const TensorView& x, bool descending, const TensorView& values, const TensorView& indices) {
  EMBER_CHECK(x.is_contiguous() && values.is_contiguous() && indices.is_contiguous() && indices.dtype == kInt64 &&
                  values.dtype == x.dtype && values.numel() == x.numel() && indices.numel() == x.numel(),
              "sort: the kernel takes contiguous views of equal sizes and int64 indices");
  if (x.numel() == 0) return;
  DeviceGuard guard(x.device_index);
  const cudaStream_t stream = current_stream(x.device_index);
  const int64_t total = x.numel(), n = last_size(x);
  kernels::dispatch_all(x.dtype, "sort", [&]<typename T>() {
    sort_positions<T>(x, descending, indices.ptr<int64_t>(), "sort");
    // The positions are in `indices` already; the values follow them.
    const Launch1d l = launch_1d(total);
    take_sorted_kernel<T><<<l.blocks, l.threads, 0, stream>>>(x.ptr<const T>(), indices.ptr<const int64_t>(),
                                                              values.ptr<T>(), nullptr, total, n, n);
    check_launch("sort");
  });
}

void CudaBackend::topk(const TensorView& x, int64_t k, bool largest, const TensorView& values,
                       const TensorView& indices) {
  const int64_t n = last_size(x);
  EMBER_CHECK(x.is_contiguous() && values.is_contiguous() && indices.is_contiguous() && indices.dtype == kInt64 &&
                  values.dtype == x.dtype && k >= 0 && k <= n,
              "topk: the kernel takes contiguous views, int64 indices and 0 <= k <= the row length");
  if (values.numel() == 0) return;
  DeviceGuard guard(x.device_index);
  const int device = x.device_index;
  const cudaStream_t stream = current_stream(device);
  Workspace sorted(static_cast<size_t>(x.numel()) * sizeof(int64_t), device);
  auto* positions = static_cast<int64_t*>(sorted.data());
  kernels::dispatch_all(x.dtype, "topk", [&]<typename T>() {
    sort_positions<T>(x, largest, positions, "topk");
    const Launch1d l = launch_1d(values.numel());
    take_sorted_kernel<T><<<l.blocks, l.threads, 0, stream>>>(x.ptr<const T>(), positions, values.ptr<T>(),
                                                              indices.ptr<int64_t>(), values.numel(), n, k);
    check_launch("topk");
  });
}

void CudaBackend::searchsorted(const TensorView& sorted, const TensorView& values, bool right, const TensorView& sorter,
                               const TensorView& out) {
  EMBER_CHECK(sorted.is_contiguous() && values.is_contiguous() && out.is_contiguous() && sorted.dtype == values.dtype &&
                  (out.dtype == kInt64 || out.dtype == kInt32),
              "searchsorted: the kernel takes contiguous views of one dtype and an int64 or int32 output");
  if (values.numel() == 0) return;
  DeviceGuard guard(values.device_index);
  const cudaStream_t stream = current_stream(values.device_index);
  const int64_t total = values.numel(), n = last_size(values), m = last_size(sorted);
  const bool shared = sorted.numel() == m;
  const int64_t* perm = sorter.data != nullptr ? sorter.ptr<const int64_t>() : nullptr;
  const Launch1d l = launch_1d(total);
  kernels::dispatch_all(values.dtype, "searchsorted", [&]<typename T>() {
    if (out.dtype == kInt64) {
      searchsorted_kernel<T, int64_t><<<l.blocks, l.threads, 0, stream>>>(
          sorted.ptr<const T>(), values.ptr<const T>(), perm, out.ptr<int64_t>(), total, n, m, shared, right);
    } else {
      searchsorted_kernel<T, int32_t><<<l.blocks, l.threads, 0, stream>>>(
          sorted.ptr<const T>(), values.ptr<const T>(), perm, out.ptr<int32_t>(), total, n, m, shared, right);
    }
  });
  check_launch("searchsorted");
}

}  // namespace ember::cuda_impl
