#pragma once
// The arithmetic of the CUDA reductions, free of CUDA headers (EMBER_HD): how an element enters
// a partial result, how partials combine (reduce_ops.h's functors) and how a result is converted
// into the output. reduce.cu's kernels run it on the GPU; the tests run it on the host, in the
// kernels' order, against the CPU backend.
#include <cstdint>
#include <type_traits>

#include "backend/backend.h"
#include "backend/cuda/reduce_plan.h"
#include "ember/dtype.h"
#include "ember/half.h"
#include "kernels/dtype_dispatch.h"
#include "kernels/reduce_ops.h"

namespace ember::cuda_impl::reduce_detail {

using kernels::compute_t;
using kernels::ValueIndex;

constexpr int kChunk = 64;  // elements a thread combines before merging them into its total

// Where and how results are written. `out` is contiguous; its dtype is the front end's choice.
struct OutArgs {
  void* data;
  Dtype dtype;
  int64_t* indices;  // Max/Min with indices wanted, else null
  int64_t count;     // elements per slice
  int64_t correction;
  bool flag;  // Sum: divide by count (mean). Max/Min: write the index only (argmax/argmin)
};

template <typename A, typename T>
EMBER_HD A to_acc(T v) {
  if constexpr (std::is_same_v<T, Half> || std::is_same_v<T, BFloat16>) {
    return static_cast<A>(static_cast<float>(v));
  } else {
    return static_cast<A>(v);
  }
}

// out[i] = v converted to out's dtype, as the CPU's OutWriter converts.
template <typename R>
EMBER_HD void store(void* data, Dtype dtype, int64_t i, R v) {
  switch (dtype) {
    case Dtype::Bool:
      static_cast<bool*>(data)[i] = static_cast<bool>(v);
      break;
    case Dtype::UInt8:
      static_cast<uint8_t*>(data)[i] = static_cast<uint8_t>(v);
      break;
    case Dtype::Int8:
      static_cast<int8_t*>(data)[i] = static_cast<int8_t>(v);
      break;
    case Dtype::Int16:
      static_cast<int16_t*>(data)[i] = static_cast<int16_t>(v);
      break;
    case Dtype::Int32:
      static_cast<int32_t*>(data)[i] = static_cast<int32_t>(v);
      break;
    case Dtype::Int64:
      static_cast<int64_t*>(data)[i] = static_cast<int64_t>(v);
      break;
    case Dtype::Float16:
      static_cast<Half*>(data)[i] = Half(static_cast<float>(v));
      break;
    case Dtype::BFloat16:
      static_cast<BFloat16*>(data)[i] = BFloat16(static_cast<float>(v));
      break;
    case Dtype::Float32:
      static_cast<float*>(data)[i] = static_cast<float>(v);
      break;
    case Dtype::Float64:
      static_cast<double*>(data)[i] = static_cast<double>(v);
      break;
  }
}

// ---- policies: the partial type, how an element enters it and how a result leaves ----

template <typename T>
using sum_acc_t = std::conditional_t<std::is_integral_v<T>, uint64_t, compute_t<T>>;

template <typename T>
struct SumPolicy {
  using Acc = sum_acc_t<T>;
  using Partial = Acc;
  using Result = Partial;  // what a chunk of a slice yields
  static constexpr bool kTwoPass = false;
  EMBER_HD static Partial identity() { return kernels::SumOp<Acc>::identity(); }
  EMBER_HD static Partial combine(Partial a, Partial b) { return kernels::SumOp<Acc>::combine(a, b); }
  EMBER_HD static Partial load(T v, int64_t) { return to_acc<Acc>(v); }
  EMBER_HD static void finish(Partial p, const OutArgs& o, int64_t i) {
    if constexpr (std::is_integral_v<Acc>) {
      const int64_t wrapped = static_cast<int64_t>(p);
      if (o.flag) {
        store(o.data, o.dtype, i, static_cast<double>(wrapped) / static_cast<double>(o.count));
      } else {
        store(o.data, o.dtype, i, wrapped);
      }
    } else {
      store(o.data, o.dtype, i, o.flag ? p / static_cast<Acc>(o.count) : p);
    }
  }
};

template <typename T>
struct ProdPolicy {
  using Acc = sum_acc_t<T>;
  using Partial = Acc;
  using Result = Partial;  // what a chunk of a slice yields
  static constexpr bool kTwoPass = false;
  EMBER_HD static Partial identity() { return kernels::ProdOp<Acc>::identity(); }
  EMBER_HD static Partial combine(Partial a, Partial b) { return kernels::ProdOp<Acc>::combine(a, b); }
  EMBER_HD static Partial load(T v, int64_t) { return to_acc<Acc>(v); }
  EMBER_HD static void finish(Partial p, const OutArgs& o, int64_t i) {
    if constexpr (std::is_integral_v<Acc>) {
      store(o.data, o.dtype, i, static_cast<int64_t>(p));
    } else {
      store(o.data, o.dtype, i, p);
    }
  }
};

// Op is MaxOp or MinOp: NaN wins, ties go to the lower index, so any tree gives the first extreme.
template <typename T, typename Op>
struct ExtremePolicy {
  using V = compute_t<T>;
  using Partial = ValueIndex<V>;
  using Result = Partial;  // what a chunk of a slice yields
  static constexpr bool kTwoPass = false;
  EMBER_HD static Partial identity() { return Op::identity(); }
  EMBER_HD static Partial combine(Partial a, Partial b) { return Op::combine(a, b); }
  EMBER_HD static Partial load(T v, int64_t j) { return Partial{to_acc<V>(v), j}; }
  EMBER_HD static void finish(Partial p, const OutArgs& o, int64_t i) {
    if (o.flag) {
      store(o.data, o.dtype, i, p.index);
      return;
    }
    store(o.data, o.dtype, i, p.value);
    if (o.indices != nullptr) o.indices[i] = p.index;
  }
};

// Two passes per chunk, in double: the sum, then the squared deviations from the chunk's mean;
// chunks merge with Chan's formula (WelfordOp::combine), as the CPU's chunks do.
template <typename T>
struct VarPolicy {
  using Partial = double;
  using Result = kernels::WelfordData<double>;
  static constexpr bool kTwoPass = true;
  EMBER_HD static Partial identity() { return 0.0; }
  EMBER_HD static Partial combine(Partial a, Partial b) { return kernels::SumOp<double>::combine(a, b); }
  EMBER_HD static Partial load(T v, int64_t) { return to_acc<double>(v); }
  EMBER_HD static Partial deviation(T v, double mean) {
    const double d = to_acc<double>(v) - mean;
    return d * d;
  }
  EMBER_HD static double mean_of(double sum, int64_t n) { return n > 0 ? sum / static_cast<double>(n) : 0.0; }
  EMBER_HD static void finish(Result r, const OutArgs& o, int64_t i) {
    store(o.data, o.dtype, i, kernels::WelfordOp<double>::variance(r, o.correction));
  }
};

template <typename P>
EMBER_HD typename P::Result merge(typename P::Result a, typename P::Result b) {
  if constexpr (P::kTwoPass) {
    return kernels::WelfordOp<double>::combine(a, b);
  } else {
    return P::combine(a, b);
  }
}

// Combines f(element j) for j = begin, begin + step, ... < end in two levels of chunks (kChunk
// elements, then kChunk of those) before the running total, so a float sum's rounding error
// grows like 2 * kChunk + n / kChunk^2 ulp rather than n: a thread of the column kernel may sum
// millions of rows.
template <typename P, typename T, typename F>
EMBER_HD inline typename P::Partial accumulate(const T* slice, const DimList& reduced, int64_t begin, int64_t step,
                                               int64_t end, F f) {
  using Partial = typename P::Partial;
  Partial total = P::identity();
  int64_t j = begin;
  while (j < end) {
    Partial group = P::identity();
    for (int g = 0; g < kChunk && j < end; ++g) {
      Partial chunk = P::identity();
      for (int k = 0; k < kChunk && j < end; ++k, j += step) chunk = P::combine(chunk, f(slice[reduced.offset(j)], j));
      group = P::combine(group, chunk);
    }
    total = P::combine(total, group);
  }
  return total;
}

/// Merges the `chunks` results of one output, parts[first], parts[first + step], ... in that
/// (chunk) order: the second pass of a split reduction, the same order on every run.
template <typename P>
EMBER_HD typename P::Result merge_parts(const typename P::Result* parts, int64_t first, int64_t step, int64_t chunks) {
  typename P::Result r = parts[first];
  for (int64_t c = 1; c < chunks; ++c) r = merge<P>(r, parts[first + c * step]);
  return r;
}

// ---- the column kernel (ReduceStrategy::Column), written once for the GPU and the tests ----

/// A column block's shared memory: each thread's partial, [y][x], and (var) each column's mean.
/// Partial is a plain aggregate, so this may be declared __shared__.
template <typename P>
struct ColumnShared {
  typename P::Partial partial[kReduceBlockThreads];
  double mean[kColumnMaxX];
};

template <typename T, typename P>
struct ColumnArgs {
  const T* x;
  DimList kept;
  DimList reduced;
  int64_t outputs;
  ColumnShape shape;
  OutArgs o;
  typename P::Result* parts;  // [chunk][output] when shape.chunks > 1, else unused
};

/// Block (bx, by) of the column kernel's grid (grid_x, shape.chunks): chunk `by` of the columns
/// of groups bx, bx + grid_x, ... `phase(f)` runs f(tx, ty) for every thread of the block and
/// then waits for all of them: f(threadIdx.x, threadIdx.y) and __syncthreads() in reduce.cu,
/// loops over (ty, tx) in the tests. No phase reads what another thread writes in that phase.
///
/// Thread (tx, ty) reduces column group * block_x + tx: rows lo + ty, lo + ty + block_y, ... of
/// chunk [lo, hi), by accumulate's nested chunks. Then, for h = block_y / 2, ..., 1, row ty < h
/// takes in row ty + h: a fixed tree. Var runs load and tree twice (the chunk's mean, then the
/// squared deviations from it), as the block kernel does. Row 0 writes the output, or the
/// chunk's result to parts[chunk * outputs + column] (neighbouring threads, neighbouring words).
template <typename T, typename P, typename Phase>
EMBER_HD void column_block(const ColumnArgs<T, P>& a, ColumnShared<P>& s, int64_t bx, int64_t by, int64_t grid_x,
                           Phase&& phase) {
  const int w = a.shape.block_x, height = a.shape.block_y;
  const int64_t lo = chunk_begin(a.o.count, a.shape.chunks, by), hi = chunk_begin(a.o.count, a.shape.chunks, by + 1);
  const auto tree = [&]() {
    for (int h = height / 2; h > 0; h /= 2) {
      phase([&](int tx, int ty) {
        if (ty < h) s.partial[ty * w + tx] = P::combine(s.partial[ty * w + tx], s.partial[(ty + h) * w + tx]);
      });
    }
  };
  for (int64_t group = bx; group < a.shape.groups; group += grid_x) {
    const int64_t first = group * w;
    phase([&](int tx, int ty) {
      const int64_t i = first + tx;
      const auto load = [](T v, int64_t j) { return P::load(v, j); };
      s.partial[ty * w + tx] =
          i < a.outputs ? accumulate<P>(a.x + a.kept.offset(i), a.reduced, lo + ty, height, hi, load) : P::identity();
    });
    tree();
    if constexpr (P::kTwoPass) {
      phase([&](int tx, int ty) {
        if (ty == 0) s.mean[tx] = P::mean_of(s.partial[tx], hi - lo);
      });
      phase([&](int tx, int ty) {
        const int64_t i = first + tx;
        const double mean = s.mean[tx];
        const auto dev = [mean](T v, int64_t) { return P::deviation(v, mean); };
        s.partial[ty * w + tx] =
            i < a.outputs ? accumulate<P>(a.x + a.kept.offset(i), a.reduced, lo + ty, height, hi, dev) : P::identity();
      });
      tree();
    }
    phase([&](int tx, int ty) {
      const int64_t i = first + tx;
      if (ty != 0 || i >= a.outputs) return;
      typename P::Result result;
      if constexpr (P::kTwoPass) {
        result = {s.mean[tx], s.partial[tx], hi - lo};
      } else {
        result = s.partial[tx];
      }
      if (a.shape.chunks == 1) {
        P::finish(result, a.o, i);
      } else {
        a.parts[by * a.outputs + i] = result;
      }
    });  // its barrier also frees s for the next group
  }
}

/// Calls f.template operator()<Policy>() with the policy that computes `op` on T, after setting
/// the flags of `o` the policy reads (mean, index-only).
template <typename T, typename F>
void with_policy(ReduceOp op, OutArgs& o, F&& f) {
  using V = compute_t<T>;
  switch (op) {
    case ReduceOp::Sum:
      return f.template operator()<SumPolicy<T>>();
    case ReduceOp::Mean:
      o.flag = true;
      return f.template operator()<SumPolicy<T>>();
    case ReduceOp::Prod:
      return f.template operator()<ProdPolicy<T>>();
    case ReduceOp::Max:
      return f.template operator()<ExtremePolicy<T, kernels::MaxOp<V>>>();
    case ReduceOp::Min:
      return f.template operator()<ExtremePolicy<T, kernels::MinOp<V>>>();
    case ReduceOp::ArgMax:
      o.flag = true;
      o.indices = nullptr;
      return f.template operator()<ExtremePolicy<T, kernels::MaxOp<V>>>();
    case ReduceOp::ArgMin:
      o.flag = true;
      o.indices = nullptr;
      return f.template operator()<ExtremePolicy<T, kernels::MinOp<V>>>();
    case ReduceOp::Var:
      return f.template operator()<VarPolicy<T>>();
  }
}

}  // namespace ember::cuda_impl::reduce_detail
