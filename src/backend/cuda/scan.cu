// CudaBackend::scan: cumsum, cumprod, logcumsumexp, cummax and cummin along one dimension of a
// contiguous view, with the CPU's semantics (cpu/scan.cpp; the steps are kernels/scan_ops.h).
//
// One thread per column (a position of every other dimension) walks the scanned dimension in
// order, so every element is formed exactly as on the CPU, up to the accumulation type (the
// compute type here, as PyTorch's CUDA kernels use). Adjacent threads take adjacent inner
// positions, so their loads coalesce when the scanned dimension is not the last. A long scan
// over few columns (cumsum of one long vector) runs on few threads; a decoupled look-back
// scan (CUB's DeviceScan) would be the faster kernel there. A reverse scan walks from the last
// position to the first.
#include <cuda_runtime.h>

#include <cstdint>

#include "backend/cuda/cuda_backend.h"
#include "backend/cuda/launch.h"
#include "backend/cuda/runtime.h"
#include "core/check.h"
#include "kernels/dtype_dispatch.h"
#include "kernels/scan_ops.h"

namespace ember::cuda_impl {
namespace {

__device__ inline int64_t grid_start() { return static_cast<int64_t>(blockIdx.x) * blockDim.x + threadIdx.x; }
__device__ inline int64_t grid_stride() { return static_cast<int64_t>(gridDim.x) * blockDim.x; }

template <typename T, typename Step>
__global__ void __launch_bounds__(kBlockThreads)
    accumulate_kernel(const T* x, T* out, int64_t columns, int64_t n, int64_t inner, bool reverse, Step step) {
  using A = kernels::scan_device_acc_t<T>;
  for (int64_t c = grid_start(); c < columns; c += grid_stride()) {
    const int64_t base = (c / inner) * n * inner + c % inner;
    A running = Step::init();
    for (int64_t k = 0; k < n; ++k) {
      const int64_t i = reverse ? n - 1 - k : k;
      running = step(running, static_cast<A>(x[base + i * inner]));
      out[base + i * inner] = static_cast<T>(running);
    }
  }
}

template <typename T, bool Max>
__global__ void __launch_bounds__(kBlockThreads)
    extreme_kernel(const T* x, T* out, int64_t* indices, int64_t columns, int64_t n, int64_t inner) {
  using C = kernels::compute_t<T>;
  for (int64_t c = grid_start(); c < columns; c += grid_stride()) {
    const int64_t base = (c / inner) * n * inner + c % inner;
    T best = x[base];
    int64_t best_at = 0;
    for (int64_t i = 0; i < n; ++i) {
      const int64_t at = base + i * inner;
      const C v = static_cast<C>(x[at]), current = static_cast<C>(best);
      if (Max ? kernels::cummax_takes(v, current) : kernels::cummin_takes(v, current)) {
        best = x[at];
        best_at = i;
      }
      out[at] = best;
      indices[at] = best_at;
    }
  }
}

}  // namespace

void CudaBackend::scan(ScanOp op, const TensorView& x, int64_t dim, bool reverse, const TensorView& out,
                       const TensorView& indices) {
  EMBER_CHECK(x.is_contiguous() && out.is_contiguous() && out.dtype == x.dtype && out.numel() == x.numel() &&
                  (x.ndim() == 0 ? dim == 0 : dim >= 0 && dim < x.ndim()),
              op_name(op), ": the kernel takes contiguous views of one dtype and a dimension in range");
  EMBER_CHECK(!reverse || (op != ScanOp::Max && op != ScanOp::Min), op_name(op), ": the kernel has no reverse scan");
  if (x.numel() == 0) return;
  int64_t n = 1, inner = 1;
  for (int64_t d = dim; d < x.ndim(); ++d) (d == dim ? n : inner) *= x.sizes[d];
  const int64_t columns = x.numel() / n;
  DeviceGuard guard(x.device_index);
  const cudaStream_t stream = current_stream(x.device_index);
  const Launch1d l = launch_1d(columns);
  switch (op) {
    case ScanOp::Sum:
      kernels::dispatch_all(x.dtype, "cumsum", [&]<typename T>() {
        accumulate_kernel<T><<<l.blocks, l.threads, 0, stream>>>(x.ptr<const T>(), out.ptr<T>(), columns, n, inner,
                                                                 reverse,
                                                                 kernels::CumSum<kernels::scan_device_acc_t<T>>{});
      });
      break;
    case ScanOp::Prod:
      kernels::dispatch_all(x.dtype, "cumprod", [&]<typename T>() {
        accumulate_kernel<T><<<l.blocks, l.threads, 0, stream>>>(x.ptr<const T>(), out.ptr<T>(), columns, n, inner,
                                                                 reverse,
                                                                 kernels::CumProd<kernels::scan_device_acc_t<T>>{});
      });
      break;
    case ScanOp::LogSumExp:
      kernels::dispatch_floating(x.dtype, "logcumsumexp", [&]<typename T>() {
        accumulate_kernel<T>
            <<<l.blocks, l.threads, 0, stream>>>(x.ptr<const T>(), out.ptr<T>(), columns, n, inner, reverse,
                                                 kernels::LogCumSumExp<kernels::scan_device_acc_t<T>>{});
      });
      break;
    case ScanOp::Max:
    case ScanOp::Min:
      EMBER_CHECK(indices.dtype == kInt64 && indices.is_contiguous() && indices.numel() == x.numel(), op_name(op),
                  ": the kernel takes contiguous int64 indices of x's sizes");
      kernels::dispatch_all(x.dtype, op_name(op), [&]<typename T>() {
        if (op == ScanOp::Max) {
          extreme_kernel<T, true><<<l.blocks, l.threads, 0, stream>>>(x.ptr<const T>(), out.ptr<T>(),
                                                                      indices.ptr<int64_t>(), columns, n, inner);
        } else {
          extreme_kernel<T, false><<<l.blocks, l.threads, 0, stream>>>(x.ptr<const T>(), out.ptr<T>(),
                                                                       indices.ptr<int64_t>(), columns, n, inner);
        }
      });
      break;
  }
  check_launch(op_name(op));
}

}  // namespace ember::cuda_impl
