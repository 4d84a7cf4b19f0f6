// CudaBackend::index_select, gather, scatter_add and scatter_reduce, with the CPU backend's semantics
// (src/backend/cpu/indexing.cpp): any strides on the inputs, index_select's and gather's outputs
// contiguous, scatter_add in place on a strided `out`; a 0-d tensor is seen as one element.
//
// The iteration geometry and the per-element bodies are in index_geometry.h, where the host
// tests run them against the CPU backend.
//
// Out-of-range indices. The CPU checks every index before writing anything and raises
// ember::Error. Here the indices live on the GPU, and reading them back would stall the host on
// every call (index_select is on the embedding path of every step), so:
//  * by default the error is deferred, as PyTorch's device-side assert is: the kernels never
//    touch memory out of bounds (an out-of-range index reads 0 in index_select and gather, adds
//    nothing in scatter_add), and the first thread to meet one claims the device's error record
//    (index_error.h: mapped page-locked host memory, op, index, dimension and size) unless it is
//    already claimed. The host reads the record after its next wait for that device (a blocking
//    copy to or from the host, as item(), printing and .to(cpu) make; cuda::synchronize;
//    Event::synchronize), empties it and raises ember::Error with the CPU's message, saying that
//    it was found there. No call waits to report; a clean record costs one load per wait. Only
//    the first bad index since the last report is kept (not necessarily the first in row-major
//    order), and the ops queued meanwhile have run on the zeros. Where mapped memory cannot be
//    allocated, bad indices are ignored silently, as said once on stderr;
//  * with the environment variable EMBER_CUDA_CHECK_INDICES=1, every call first scans its
//    indices on the device, waits for the result and raises the CPU's exact error (naming the
//    first bad index in row-major order) before anything is written.
//
// scatter_add adds with atomics, so the order of additions into one element (and thus a float
// sum's rounding) may differ from run to run, unlike the CPU's fixed order. float, double,
// int32 and int64 use the hardware's atomicAdd; the 8- and 16-bit types (including float16 and
// bfloat16, which add in float and round once, as on the CPU) use a compare-and-swap loop on the
// aligned 32-bit word that holds them; bool adds as logical or, which is a plain store of true.
// Under use_deterministic_algorithms (as PyTorch's scatter_add_ then is), floating-point
// scatter_add runs one thread per column of the index along `dim` instead (index_geometry.h's
// scatter_add_column), which adds in the CPU's order and gives its result bit for bit; slower
// when the index has few columns (a 1-d index is one thread). Integer and bool sums are exact in
// any order, so they keep the atomics. This also makes the backward of gather and index_select,
// which scatter_add, deterministic.
#include <cuda_runtime.h>

#include <cstdint>
#include <cstdlib>
#include <cstring>
#include <string_view>
#include <type_traits>

#include "backend/cuda/cuda_backend.h"
#include "backend/cuda/index_error.cuh"
#include "backend/cuda/index_geometry.h"
#include "backend/cuda/launch.h"
#include "backend/cuda/runtime.h"
#include "core/check.h"
#include "ember/backends.h"
#include "kernels/dtype_dispatch.h"
#include "kernels/scatter_ops.h"

namespace ember::cuda_impl {
namespace {

__device__ inline int64_t grid_start() { return static_cast<int64_t>(blockIdx.x) * blockDim.x + threadIdx.x; }
__device__ inline int64_t grid_stride() { return static_cast<int64_t>(gridDim.x) * blockDim.x; }

// Element i's index, read again for the record (on the rare path only).
__device__ inline int64_t index_at(const int64_t* index, const IndexGeometry& g, int64_t i) {
  return index[index_offsets(g, i).index];
}

template <typename T>
__global__ void __launch_bounds__(kBlockThreads)
    gather_kernel(const T* x, const int64_t* index, T* out, IndexGeometry g, int64_t total, IndexErrorRecord* record,
                  IndexOp op) {
  for (int64_t i = grid_start(); i < total; i += grid_stride()) {
    if (!gather_at(x, index, out, g, i)) record_bad_index(record, op, index_at(index, g, i), g.dim, g.bound);
  }
}

// Adds v to *addr for 8- and 16-bit types: a compare-and-swap on the aligned word holding it.
// The word lies inside the allocation: the caching allocator aligns blocks to 256 bytes and
// rounds their sizes to 512.
template <typename T>
__device__ void atomic_add_narrow(T* addr, T v) {
  static_assert(sizeof(T) == 1 || sizeof(T) == 2);
  using C = kernels::compute_t<T>;
  const uintptr_t a = reinterpret_cast<uintptr_t>(addr);
  unsigned int* word = reinterpret_cast<unsigned int*>(a & ~uintptr_t{3});
  const unsigned int shift = static_cast<unsigned int>(a & 3u) * 8u;
  const unsigned int mask = ((1u << (8 * sizeof(T))) - 1u) << shift;
  unsigned int old = *word;
  unsigned int assumed = 0;
  do {
    assumed = old;
    const auto bits = static_cast<std::conditional_t<sizeof(T) == 1, uint8_t, uint16_t>>((assumed & mask) >> shift);
    T current;
    memcpy(&current, &bits, sizeof(T));
    const T next = static_cast<T>(static_cast<C>(current) + static_cast<C>(v));
    std::conditional_t<sizeof(T) == 1, uint8_t, uint16_t> next_bits;
    memcpy(&next_bits, &next, sizeof(T));
    old = atomicCAS(word, assumed, (assumed & ~mask) | (static_cast<unsigned int>(next_bits) << shift));
  } while (old != assumed);
}

template <typename T>
__device__ void atomic_add(T* addr, T v) {
  if constexpr (std::is_same_v<T, bool>) {
    if (v) *addr = true;  // logical or: every writer stores the same value
  } else if constexpr (std::is_same_v<T, float> || std::is_same_v<T, double> || std::is_same_v<T, int32_t>) {
    atomicAdd(addr, v);
  } else if constexpr (std::is_same_v<T, int64_t>) {
    // Two's complement: the unsigned sum wraps exactly as the CPU's signed one does.
    static_assert(sizeof(unsigned long long) == sizeof(int64_t));
    atomicAdd(reinterpret_cast<unsigned long long*>(addr), static_cast<unsigned long long>(v));
  } else {
    atomic_add_narrow(addr, v);
  }
}

struct AtomicAdd {
  template <typename T>
  __device__ void operator()(T* target, T value) const {
    atomic_add(target, value);
  }
};

template <typename T>
__global__ void __launch_bounds__(kBlockThreads)
    scatter_add_kernel(T* out, const int64_t* index, const T* src, IndexGeometry g, int64_t total,
                       IndexErrorRecord* record) {
  for (int64_t i = grid_start(); i < total; i += grid_stride()) {
    if (!scatter_add_at(out, index, src, g, i, AtomicAdd{})) {
      record_bad_index(record, IndexOp::ScatterAdd, index_at(index, g, i), g.dim, g.bound);
    }
  }
}

// The deterministic form: one thread per column (index_geometry.h), elements added in order.
template <typename T>
__global__ void __launch_bounds__(kBlockThreads)
    scatter_add_columns_kernel(T* out, const int64_t* index, const T* src, IndexGeometry columns, int64_t length,
                               int64_t count, IndexErrorRecord* record) {
  for (int64_t c = grid_start(); c < count; c += grid_stride()) {
    const int64_t bad = scatter_add_column(out, index, src, columns, length, c, SequentialAdd{});
    if (bad >= 0) {
      const int64_t at = index_offsets(columns, c).index + bad * columns.index_strides[columns.dim];
      record_bad_index(record, IndexOp::ScatterAdd, index[at], columns.dim, columns.bound);
    }
  }
}

// scatter_reduce: one thread per column, combining in order along `dim` (index_geometry.h's
// scatter_add_column), which needs no atomics for prod/amax/amin, keeps Assign's "last in index
// order wins" and gives the CPU's result bit for bit.
template <typename T, typename Combine>
__global__ void __launch_bounds__(kBlockThreads)
    scatter_reduce_columns_kernel(T* out, const int64_t* index, const T* src, IndexGeometry columns, int64_t length,
                                  int64_t count, IndexErrorRecord* record, Combine combine) {
  for (int64_t c = grid_start(); c < count; c += grid_stride()) {
    const int64_t bad = scatter_add_column(out, index, src, columns, length, c, combine);
    if (bad >= 0) {
      const int64_t at = index_offsets(columns, c).index + bad * columns.index_strides[columns.dim];
      record_bad_index(record, IndexOp::ScatterAdd, index[at], columns.dim, columns.bound);
    }
  }
}

// EMBER_CUDA_CHECK_INDICES=1: the row-major position of the first index outside [0, bound).
__global__ void __launch_bounds__(kBlockThreads)
    first_bad_index_kernel(const int64_t* index, IndexGeometry g, int64_t total, unsigned long long* first_bad) {
  for (int64_t i = grid_start(); i < total; i += grid_stride()) {
    const int64_t v = index[index_offsets(g, i).index];
    if (v < 0 || v >= g.bound) atomicMin(first_bad, static_cast<unsigned long long>(i));
  }
}

// ------------------------------------------------------------------------------- host side

int64_t normalize_dim(int64_t dim, int64_t ndim, const char* op) {
  const int64_t wrapped = dim < 0 ? dim + ndim : dim;
  EMBER_CHECK(wrapped >= 0 && wrapped < ndim, op, "(): dimension out of range (expected to be in range of [", -ndim,
              ", ", ndim - 1, "], but got ", dim, ")");
  return wrapped;
}

void check_index_dtype(const TensorView& index, const char* op) {
  EMBER_CHECK(index.dtype == kInt64, op, "(): Expected dtype int64 for index");
}

/// EMBER_CUDA_CHECK_INDICES=1 only: raises `message(value)` for the first index (row-major) of
/// `index` outside [0, bound), before the caller writes anything. Waits for the device.
template <typename Message>
void validate_indices(const TensorView& index, int64_t bound, const char* op, const Message& message) {
  if (!check_indices_enabled() || index.numel() == 0) return;
  const IndexGeometry g = index_check_geometry(index, bound, op);
  const int device = index.device_index;
  const cudaStream_t stream = current_stream(device);
  Workspace flag(sizeof(unsigned long long), device);
  auto* first_bad = static_cast<unsigned long long*>(flag.data());
  EMBER_CUDA_CHECK(cudaMemsetAsync(first_bad, 0xff, sizeof(unsigned long long), stream), op);
  const Launch1d l = launch_1d(index.numel());
  first_bad_index_kernel<<<l.blocks, l.threads, 0, stream>>>(index.ptr<const int64_t>(), g, index.numel(), first_bad);
  check_launch(op);
  unsigned long long host_first = 0;
  EMBER_CUDA_CHECK(cudaMemcpyAsync(&host_first, first_bad, sizeof host_first, cudaMemcpyDeviceToHost, stream), op);
  EMBER_CUDA_CHECK(cudaStreamSynchronize(stream), op);
  if (host_first == ~0ull) return;
  const int64_t offset = index_offsets(g, static_cast<int64_t>(host_first)).index;
  int64_t value = 0;
  EMBER_CUDA_CHECK(
      cudaMemcpyAsync(&value, index.ptr<const int64_t>() + offset, sizeof value, cudaMemcpyDeviceToHost, stream), op);
  EMBER_CUDA_CHECK(cudaStreamSynchronize(stream), op);
  message(value);
}

void launch_gather(const TensorView& x, const TensorView& index, const TensorView& out, const IndexGeometry& g,
                   int64_t total, IndexOp which, const char* op) {
  const cudaStream_t stream = current_stream(out.device_index);
  IndexErrorRecord* record = index_error_record(out.device_index);
  const Launch1d l = launch_1d(total);
  kernels::dispatch_all(x.dtype, op, [&]<typename T>() {
    gather_kernel<T><<<l.blocks, l.threads, 0, stream>>>(x.ptr<const T>(), index.ptr<const int64_t>(), out.ptr<T>(), g,
                                                         total, record, which);
  });
  check_launch(op);
}

}  // namespace

void CudaBackend::index_select(const TensorView& x, int64_t dim, const TensorView& index, const TensorView& out) {
  check_index_dtype(index, "index_select");
  EMBER_CHECK(index.ndim() <= 1, "index_select(): Index is supposed to be a vector");
  const Dims xs = index_detail::sizes_of(x);
  dim = normalize_dim(dim, static_cast<int64_t>(xs.size()), "index_select");
  const int64_t size = xs[dim];
  DeviceGuard guard(x.device_index);
  validate_indices(index, size, "index_select", [](int64_t) { detail::fail("index out of range in self"); });
  if (out.numel() == 0) return;
  launch_gather(x, index, out, index_select_geometry(x, dim, index), out.numel(), IndexOp::IndexSelect, "index_select");
}

void CudaBackend::gather(const TensorView& x, int64_t dim, const TensorView& index, const TensorView& out) {
  check_index_dtype(index, "gather");
  const Dims xs = index_detail::sizes_of(x), is = index_detail::sizes_of(index);
  const int64_t nd = static_cast<int64_t>(xs.size());
  EMBER_CHECK(nd == static_cast<int64_t>(is.size()),
              "Index tensor must have the same number of dimensions as input tensor");
  dim = normalize_dim(dim, nd, "gather");
  for (int64_t d = 0; d < nd; ++d) {
    EMBER_CHECK(d == dim || is[d] <= xs[d], "Size does not match at dimension ", d, " expected index ",
                detail::shape_str(index.sizes), " to be smaller than self ", detail::shape_str(x.sizes),
                " apart from dimension ", dim);
  }
  EMBER_CHECK(out.numel() == index.numel() && out.dtype == x.dtype,
              "gather(): out must have index's sizes and x's dtype");
  const int64_t size = xs[dim];
  DeviceGuard guard(x.device_index);
  validate_indices(index, size, "gather", [&](int64_t v) {
    detail::fail("index ", v, " is out of bounds for dimension ", dim, " with size ", size);
  });
  if (index.numel() == 0) return;
  launch_gather(x, index, out, gather_geometry(x, dim, index), index.numel(), IndexOp::Gather, "gather");
}

namespace {

// The checks scatter_add and scatter_reduce share, with the CPU's messages; returns the
// normalized dim.
int64_t check_scatter(const TensorView& out, int64_t dim, const TensorView& index, const TensorView& src,
                      const char* op) {
  check_index_dtype(index, op);
  const Dims os = index_detail::sizes_of(out), is = index_detail::sizes_of(index), ss = index_detail::sizes_of(src);
  const int64_t nd = static_cast<int64_t>(os.size());
  EMBER_CHECK(nd == static_cast<int64_t>(is.size()) && ss.size() == is.size(),
              "Index tensor must have the same number of dimensions as self tensor");
  dim = normalize_dim(dim, nd, op);
  for (int64_t d = 0; d < nd; ++d) {
    EMBER_CHECK((d == dim || is[d] <= os[d]) && is[d] <= ss[d], "Expected index ", detail::shape_str(index.sizes),
                " to be smaller than self ", detail::shape_str(out.sizes), " apart from dimension ", dim,
                " and to be smaller size than src ", detail::shape_str(src.sizes));
  }
  EMBER_CHECK(out.dtype == src.dtype, op, "(): Expected self.dtype to be equal to src.dtype");
  const int64_t size = os[dim];
  validate_indices(index, size, op, [&](int64_t v) {
    detail::fail("index ", v, " is out of bounds for dimension ", dim, " with size ", size);
  });
  return dim;
}

}  // namespace

void CudaBackend::scatter_reduce(ScatterReduceOp op, const TensorView& out, int64_t dim, const TensorView& index,
                                 const TensorView& src) {
  DeviceGuard guard(out.device_index);
  dim = check_scatter(out, dim, index, src, "scatter_reduce");
  if (index.numel() == 0) return;
  const IndexGeometry g = scatter_add_geometry(out, dim, index, src);
  const int64_t length = g.sizes[g.dim], count = index.numel() / length;
  const cudaStream_t stream = current_stream(out.device_index);
  IndexErrorRecord* record = index_error_record(out.device_index);
  const Launch1d l = launch_1d(count);
  kernels::visit_scatter_reduce(op, [&](auto combine) {
    kernels::dispatch_all(out.dtype, "scatter_reduce", [&]<typename T>() {
      scatter_reduce_columns_kernel<T><<<l.blocks, l.threads, 0, stream>>>(out.ptr<T>(), index.ptr<const int64_t>(),
                                                                           src.ptr<const T>(), column_geometry(g),
                                                                           length, count, record, combine);
    });
  });
  check_launch("scatter_reduce");
}

void CudaBackend::scatter_add(const TensorView& out, int64_t dim, const TensorView& index, const TensorView& src) {
  DeviceGuard guard(out.device_index);
  dim = check_scatter(out, dim, index, src, "scatter_add");
  if (index.numel() == 0) return;
  const IndexGeometry g = scatter_add_geometry(out, dim, index, src);
  const int64_t total = index.numel();
  const cudaStream_t stream = current_stream(out.device_index);
  IndexErrorRecord* record = index_error_record(out.device_index);
  if (is_floating_point(out.dtype) && are_deterministic_algorithms_enabled()) {
    const int64_t length = g.sizes[g.dim], count = total / length;
    const Launch1d lc = launch_1d(count);
    kernels::dispatch_floating(out.dtype, "scatter_add", [&]<typename T>() {
      scatter_add_columns_kernel<T><<<lc.blocks, lc.threads, 0, stream>>>(
          out.ptr<T>(), index.ptr<const int64_t>(), src.ptr<const T>(), column_geometry(g), length, count, record);
    });
    check_launch("scatter_add");
    return;
  }
  const Launch1d l = launch_1d(total);
  kernels::dispatch_all(out.dtype, "scatter_add", [&]<typename T>() {
    scatter_add_kernel<T><<<l.blocks, l.threads, 0, stream>>>(out.ptr<T>(), index.ptr<const int64_t>(),
                                                              src.ptr<const T>(), g, total, record);
  });
  check_launch("scatter_add");
}

}  // namespace ember::cuda_impl
