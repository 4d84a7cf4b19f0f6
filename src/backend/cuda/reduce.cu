// CudaBackend::reduce: sum, mean, prod, max, min, argmax, argmin and var over x's trailing dims,
// with the CPU backend's semantics (src/backend/cpu/reduce.cpp) and its combine functors
// (src/kernels/reduce_ops.h).
//
// Three kernels, chosen by reduce_plan.h from the shapes alone:
//  * block per output: the block's threads stride over the slice, each combining its elements in
//    registers, then cub::BlockReduce merges the 256 partials in a fixed tree;
//  * column: when a slice's elements are strided and neighbouring outputs are neighbours in
//    memory (a sum over dim 0 of a row-major matrix: bias gradients, BatchNorm1d statistics),
//    2-D blocks put consecutive threads on consecutive outputs, so a warp's loads are coalesced,
//    and split each column over the block's rows (and over grid.y for long columns); the body is
//    reduce_policies.h's column_block, which the tests execute on the host;
//  * thread per output: for short slices (a thread reads the whole slice).
// When a few outputs have long slices (a full sum, a long column), each slice is cut into chunks
// of a block each and a second kernel merges the chunk results in chunk order (var's with
// Chan's formula). Within a thread, elements are combined in nested chunks (see accumulate),
// which keeps the rounding error of long float sums far below n ulp. Every order is fixed by the
// shapes, so results are reproducible run to run.
//
// Accumulation types follow the CPU: float for the 16-bit floats, the type itself for float and
// double, uint64 for integer and bool sums and products (wrapping like PyTorch's int64, read back
// as int64), and double for var (two passes: the mean, then the squared deviations).
#include <cub/block/block_reduce.cuh>
#include <type_traits>

#include "backend/cuda/cuda_backend.h"
#include "backend/cuda/launch.h"
#include "backend/cuda/reduce_plan.h"
#include "backend/cuda/reduce_policies.h"
#include "backend/cuda/runtime.h"
#include "core/check.h"
#include "kernels/dtype_dispatch.h"
#include "kernels/reduce_ops.h"

namespace ember::cuda_impl {
namespace {

using kernels::compute_t;
using namespace reduce_detail;

template <typename P>
struct CombineFn {
  template <typename A>
  __device__ A operator()(const A& a, const A& b) const {
    return P::combine(a, b);
  }
};

template <typename T, typename P>
__global__ void __launch_bounds__(kBlockThreads)
    reduce_thread_kernel(const T* x, DimList kept, DimList reduced, int64_t outputs, OutArgs o) {
  const int64_t stride = static_cast<int64_t>(gridDim.x) * blockDim.x;
  const auto load = [](T v, int64_t j) { return P::load(v, j); };
  for (int64_t i = static_cast<int64_t>(blockIdx.x) * blockDim.x + threadIdx.x; i < outputs; i += stride) {
    const T* slice = x + kept.offset(i);
    if constexpr (P::kTwoPass) {
      const double mean = P::mean_of(accumulate<P>(slice, reduced, 0, 1, o.count, load), o.count);
      const auto dev = [mean](T v, int64_t) { return P::deviation(v, mean); };
      P::finish({mean, accumulate<P>(slice, reduced, 0, 1, o.count, dev), o.count}, o, i);
    } else {
      P::finish(accumulate<P>(slice, reduced, 0, 1, o.count, load), o, i);
    }
  }
}

// Task t is chunk t % chunks of output t / chunks. Unsplit (chunks == 1), the block writes the
// output; split, it writes its chunk's result to parts[t] for reduce_merge_kernel.
template <typename T, typename P>
__global__ void __launch_bounds__(kReduceBlockThreads)
    reduce_block_kernel(const T* x, DimList kept, DimList reduced, int64_t outputs, int64_t chunks, OutArgs o,
                        typename P::Result* parts) {
  using Partial = typename P::Partial;
  using BlockReduce = cub::BlockReduce<Partial, kReduceBlockThreads>;
  __shared__ typename BlockReduce::TempStorage temp;
  __shared__ double shared_mean;
  const auto load = [](T v, int64_t j) { return P::load(v, j); };
  const int64_t tasks = outputs * chunks;
  for (int64_t t = blockIdx.x; t < tasks; t += gridDim.x) {
    const int64_t i = t / chunks, c = t - i * chunks;
    const int64_t lo = chunk_begin(o.count, chunks, c), hi = chunk_begin(o.count, chunks, c + 1);
    const T* slice = x + kept.offset(i);
    const Partial total = BlockReduce(temp).Reduce(
        accumulate<P>(slice, reduced, lo + threadIdx.x, kReduceBlockThreads, hi, load), CombineFn<P>{});
    typename P::Result result;
    if constexpr (P::kTwoPass) {
      if (threadIdx.x == 0) shared_mean = P::mean_of(total, hi - lo);
      __syncthreads();  // the mean is visible, and temp may be reused
      const double mean = shared_mean;
      const auto dev = [mean](T v, int64_t) { return P::deviation(v, mean); };
      const double m2 = BlockReduce(temp).Reduce(
          accumulate<P>(slice, reduced, lo + threadIdx.x, kReduceBlockThreads, hi, dev), CombineFn<P>{});
      result = {mean, m2, hi - lo};
    } else {
      result = total;
    }
    if (threadIdx.x == 0) {
      if (chunks == 1) {
        P::finish(result, o, i);
      } else {
        parts[t] = result;
      }
    }
    __syncthreads();  // temp (and shared_mean) are reused by the next task
  }
}

// The column kernel: reduce_policies.h's column_block, its phases separated by barriers.
template <typename T, typename P>
__global__ void __launch_bounds__(kReduceBlockThreads) reduce_column_kernel(ColumnArgs<T, P> a) {
  __shared__ ColumnShared<P> shared;
  const auto phase = [](auto&& f) {
    f(static_cast<int>(threadIdx.x), static_cast<int>(threadIdx.y));
    __syncthreads();
  };
  column_block(a, shared, blockIdx.x, blockIdx.y, gridDim.x, phase);
}

// Merges each output's chunk results, parts[i * out_step + c * chunk_step] for c = 0, 1, ..., in
// chunk order (a fixed order: reproducible sums).
template <typename P>
__global__ void __launch_bounds__(kBlockThreads)
    reduce_merge_kernel(const typename P::Result* parts, int64_t outputs, int64_t chunks, int64_t out_step,
                        int64_t chunk_step, OutArgs o) {
  const int64_t stride = static_cast<int64_t>(gridDim.x) * blockDim.x;
  for (int64_t i = static_cast<int64_t>(blockIdx.x) * blockDim.x + threadIdx.x; i < outputs; i += stride) {
    P::finish(merge_parts<P>(parts, i * out_step, chunk_step, chunks), o, i);
  }
}

// Reducing over no dims: the values themselves (and index 0).
template <typename T>
__global__ void __launch_bounds__(kBlockThreads) copy_values_kernel(const T* x, DimList all, int64_t n, OutArgs o) {
  const int64_t stride = static_cast<int64_t>(gridDim.x) * blockDim.x;
  for (int64_t i = static_cast<int64_t>(blockIdx.x) * blockDim.x + threadIdx.x; i < n; i += stride) {
    store(o.data, o.dtype, i, to_acc<compute_t<T>>(x[all.offset(i)]));
    if (o.indices != nullptr) o.indices[i] = 0;
  }
}

template <typename P>
void launch_merge(const Workspace& parts, const ReducePlan& plan, int64_t out_step, int64_t chunk_step,
                  const OutArgs& o, cudaStream_t stream, const char* op) {
  using Result = typename P::Result;
  const Launch1d m = launch_1d(plan.outputs);
  reduce_merge_kernel<P><<<m.blocks, m.threads, 0, stream>>>(static_cast<const Result*>(parts.data()), plan.outputs,
                                                             plan.chunks, out_step, chunk_step, o);
  check_launch(op);
}

template <typename T, typename P>
void launch_reduce(const T* x, const ReducePlan& plan, const OutArgs& o, int device, const char* op) {
  using Result = typename P::Result;
  const cudaStream_t stream = current_stream(device);
  // Released at the end of this scope; the merge below is queued on the same stream first.
  Workspace parts(plan.chunks > 1 ? static_cast<size_t>(plan.outputs * plan.chunks) * sizeof(Result) : 0, device);
  switch (plan.strategy) {
    case ReduceStrategy::ThreadPerOutput: {
      const Launch1d l = launch_1d(plan.outputs);
      reduce_thread_kernel<T, P><<<l.blocks, l.threads, 0, stream>>>(x, plan.kept, plan.reduced, plan.outputs, o);
      check_launch(op);
      return;
    }
    case ReduceStrategy::Column: {
      const ColumnShape& c = plan.column;
      const dim3 grid(static_cast<unsigned>(c.grid_x), static_cast<unsigned>(c.chunks));
      const dim3 block(static_cast<unsigned>(c.block_x), static_cast<unsigned>(c.block_y));
      const ColumnArgs<T, P> args{x, plan.kept, plan.reduced, plan.outputs, c, o, static_cast<Result*>(parts.data())};
      reduce_column_kernel<T, P><<<grid, block, 0, stream>>>(args);
      check_launch(op);
      // parts is [chunk][output]: the merge's neighbouring threads read neighbouring words.
      if (plan.chunks > 1) launch_merge<P>(parts, plan, 1, plan.outputs, o, stream, op);
      return;
    }
    case ReduceStrategy::BlockPerOutput: {
      const Launch1d l = launch_rows(plan.outputs * plan.chunks, kReduceBlockThreads);
      reduce_block_kernel<T, P><<<l.blocks, l.threads, 0, stream>>>(x, plan.kept, plan.reduced, plan.outputs,
                                                                    plan.chunks, o, static_cast<Result*>(parts.data()));
      check_launch(op);
      // parts is [output][chunk] (task t = i * chunks + c).
      if (plan.chunks > 1) launch_merge<P>(parts, plan, plan.chunks, 1, o, stream, op);
      return;
    }
  }
}

}  // namespace

void CudaBackend::reduce(ReduceOp op, const TensorView& x, int64_t reduced_dims, const TensorView& out,
                         const TensorView& indices, int64_t correction) {
  DeviceGuard guard(x.device_index);
  const char* name = op_name(op);
  EMBER_CHECK(reduced_dims >= 0 && reduced_dims <= x.ndim(), "[", name, "] cannot reduce ", reduced_dims, " dims of a ",
              x.ndim(), "-d tensor");
  const int64_t lead = x.ndim() - reduced_dims;
  int64_t outputs = 1, count = 1;
  for (int64_t d = 0; d < x.ndim(); ++d) (d < lead ? outputs : count) *= x.sizes[d];
  if (outputs == 0) return;
  const bool extreme = op == ReduceOp::Max || op == ReduceOp::Min || op == ReduceOp::ArgMax || op == ReduceOp::ArgMin;
  EMBER_CHECK(count > 0 || !extreme, name, "(): cannot reduce over zero elements");

  OutArgs o{out.data, out.dtype, indices.ptr<int64_t>(), count, correction, false};
  const bool value_op =
      op == ReduceOp::Sum || op == ReduceOp::Mean || op == ReduceOp::Prod || op == ReduceOp::Max || op == ReduceOp::Min;
  ReducePlan plan;
  // Over no dims, the value ops copy; var and argmax/argmin reduce each single element.
  const int64_t plan_lead = (reduced_dims == 0 && value_op) ? x.ndim() : lead;
  EMBER_CHECK(make_reduce_plan(x.sizes.data(), x.strides.data(), x.ndim(), plan_lead, plan), "[", name,
              "] the tensor's layout has too many dimensions for the CUDA backend");

  kernels::dispatch_all(x.dtype, name, [&]<typename T>() {
    const T* data = x.ptr<const T>();
    if (reduced_dims == 0 && value_op) {
      const Launch1d l = launch_1d(outputs);
      copy_values_kernel<T><<<l.blocks, l.threads, 0, current_stream(x.device_index)>>>(data, plan.kept, outputs, o);
      check_launch(name);
      return;
    }
    with_policy<T>(op, o, [&]<typename P>() { launch_reduce<T, P>(data, plan, o, x.device_index, name); });
  });
}

}  // namespace ember::cuda_impl
