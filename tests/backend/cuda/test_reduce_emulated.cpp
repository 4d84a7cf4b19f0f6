// The CUDA reductions' arithmetic (backend/cuda/reduce_policies.h) run on the host in the order
// the kernels use (reduce_plan.h's strategy and chunks; 256 "threads" striding over a slice, then
// a tree over their partials; chunk results merged in order), checked against the CPU backend.
// What this cannot check is the CUDA code itself (launches, cub::BlockReduce, shared memory):
// that needs a GPU (tests/backend/test_device_parity_reduce.cpp).
#include <gtest/gtest.h>

#include <cmath>
#include <cstdint>
#include <cstring>
#include <string>
#include <vector>

#include "backend/cpu/cpu_backend.h"
#include "backend/cuda/reduce_plan.h"
#include "backend/cuda/reduce_policies.h"

namespace ember::cuda_impl {
namespace {

using namespace reduce_detail;

// cub::BlockReduce's shape: a tree over the threads' partials (any tree gives the same exact
// results, the combines being commutative and associative up to rounding).
template <typename P, typename A>
A tree(const std::vector<A>& v, size_t lo, size_t hi) {
  if (hi - lo == 1) return v[lo];
  const size_t mid = lo + (hi - lo) / 2;
  if constexpr (P::kTwoPass) {
    return tree<P>(v, lo, mid) + tree<P>(v, mid, hi);
  } else {
    return P::combine(tree<P>(v, lo, mid), tree<P>(v, mid, hi));
  }
}

// CudaBackend::reduce with each kernel replaced by host loops that do what its threads do.
void emulated_reduce(ReduceOp op, const TensorView& x, int64_t reduced_dims, const TensorView& out,
                     const TensorView& indices, int64_t correction, ReduceStrategy* used = nullptr) {
  const int64_t lead = x.ndim() - reduced_dims;
  int64_t outputs = 1, count = 1;
  for (int64_t d = 0; d < x.ndim(); ++d) (d < lead ? outputs : count) *= x.sizes[d];
  if (outputs == 0) return;
  OutArgs o{out.data, out.dtype, indices.ptr<int64_t>(), count, correction, false};
  const bool value_op =
      op == ReduceOp::Sum || op == ReduceOp::Mean || op == ReduceOp::Prod || op == ReduceOp::Max || op == ReduceOp::Min;
  ReducePlan plan;
  const int64_t plan_lead = (reduced_dims == 0 && value_op) ? x.ndim() : lead;
  ASSERT_TRUE(make_reduce_plan(x.sizes.data(), x.strides.data(), x.ndim(), plan_lead, plan));
  if (used != nullptr) *used = plan.strategy;
  kernels::dispatch_all(x.dtype, "test", [&]<typename T>() {
    const T* data = x.ptr<const T>();
    if (reduced_dims == 0 && value_op) {  // copy_values_kernel
      for (int64_t i = 0; i < outputs; ++i) {
        store(o.data, o.dtype, i, to_acc<compute_t<T>>(data[plan.kept.offset(i)]));
        if (o.indices != nullptr) o.indices[i] = 0;
      }
      return;
    }
    with_policy<T>(op, o, [&]<typename P>() {
      const auto load = [](T v, int64_t j) { return P::load(v, j); };
      if (plan.strategy == ReduceStrategy::ThreadPerOutput) {  // reduce_thread_kernel
        for (int64_t i = 0; i < outputs; ++i) {
          const T* slice = data + plan.kept.offset(i);
          if constexpr (P::kTwoPass) {
            const double mean = P::mean_of(accumulate<P>(slice, plan.reduced, 0, 1, count, load), count);
            const auto dev = [mean](T v, int64_t) { return P::deviation(v, mean); };
            P::finish({mean, accumulate<P>(slice, plan.reduced, 0, 1, count, dev), count}, o, i);
          } else {
            P::finish(accumulate<P>(slice, plan.reduced, 0, 1, count, load), o, i);
          }
        }
        return;
      }
      // reduce_block_kernel, then reduce_merge_kernel when split.
      const int64_t chunks = plan.chunks, threads = kReduceBlockThreads;
      std::vector<typename P::Result> parts(outputs * chunks);
      for (int64_t t = 0; t < outputs * chunks; ++t) {
        const int64_t i = t / chunks, c = t % chunks;
        const int64_t lo = chunk_begin(count, chunks, c), hi = chunk_begin(count, chunks, c + 1);
        const T* slice = data + plan.kept.offset(i);
        std::vector<typename P::Partial> partial(threads);
        for (int64_t tid = 0; tid < threads; ++tid) {
          partial[tid] = accumulate<P>(slice, plan.reduced, lo + tid, threads, hi, load);
        }
        const typename P::Partial total = tree<P>(partial, 0, partial.size());
        if constexpr (P::kTwoPass) {
          const double mean = P::mean_of(total, hi - lo);
          const auto dev = [mean](T v, int64_t) { return P::deviation(v, mean); };
          for (int64_t tid = 0; tid < threads; ++tid) {
            partial[tid] = accumulate<P>(slice, plan.reduced, lo + tid, threads, hi, dev);
          }
          parts[t] = {mean, tree<P>(partial, 0, partial.size()), hi - lo};
        } else {
          parts[t] = total;
        }
      }
      for (int64_t i = 0; i < outputs; ++i) {
        typename P::Result r = parts[i * chunks];
        for (int64_t c = 1; c < chunks; ++c) r = merge<P>(r, parts[i * chunks + c]);
        P::finish(r, o, i);
      }
    });
  });
}

// A tensor's bytes and a view of them.
struct Buffer {
  std::vector<unsigned char> bytes;
  TensorView view;
};

Buffer make_buffer(Dtype dtype, const Dims& sizes, const Dims& strides, int64_t storage) {
  Buffer b;
  b.bytes.assign(static_cast<size_t>(storage) * element_size(dtype) + 1, 0);
  b.view.data = b.bytes.data();
  b.view.sizes = sizes;
  b.view.strides = strides;
  b.view.dtype = dtype;
  return b;
}

Dims contiguous(const Dims& sizes) {
  Dims strides(sizes.size());
  int64_t s = 1;
  for (size_t d = sizes.size(); d-- > 0;) {
    strides[d] = s;
    s *= sizes[d];
  }
  return strides;
}

// Storage of `n` elements of `dtype` filled with value(k) for k = 0..n-1.
template <typename F>
Buffer filled(Dtype dtype, const Dims& sizes, const Dims& strides, int64_t storage, F&& value) {
  Buffer b = make_buffer(dtype, sizes, strides, storage);
  kernels::dispatch_all(dtype, "fill", [&]<typename T>() {
    T* p = reinterpret_cast<T*>(b.bytes.data());
    for (int64_t k = 0; k < storage; ++k) {
      if constexpr (std::is_same_v<T, Half> || std::is_same_v<T, BFloat16>) {
        p[k] = T(static_cast<float>(value(k)));
      } else {
        p[k] = static_cast<T>(value(k));
      }
    }
  });
  return b;
}

double read(const TensorView& v, int64_t i) {
  return kernels::dispatch_all(v.dtype, "read", [&]<typename T>() -> double {
    const T v_i = v.ptr<const T>()[i];
    if constexpr (std::is_same_v<T, Half> || std::is_same_v<T, BFloat16>) {
      return static_cast<double>(static_cast<float>(v_i));
    } else {
      return static_cast<double>(v_i);
    }
  });
}

Dtype out_dtype_for(ReduceOp op, Dtype x) {
  if (op == ReduceOp::ArgMax || op == ReduceOp::ArgMin) return kInt64;
  const bool integral = x == kBool || x == kUInt8 || x == kInt8 || x == kInt16 || x == kInt32 || x == kInt64;
  if (integral && (op == ReduceOp::Sum || op == ReduceOp::Prod)) return kInt64;
  if (integral && (op == ReduceOp::Mean || op == ReduceOp::Var)) return kFloat64;
  return x;
}

double tolerance_for(Dtype x) {
  switch (x) {
    case Dtype::Float16:
    case Dtype::BFloat16:
      return 1e-2;
    case Dtype::Float32:
      return 2e-5;
    case Dtype::Float64:
      return 1e-12;
    default:
      return 1e-12;  // integer sums are exact; var/mean of integers are in double
  }
}

constexpr ReduceOp kOps[] = {ReduceOp::Sum, ReduceOp::Mean,   ReduceOp::Prod,   ReduceOp::Max,
                             ReduceOp::Min, ReduceOp::ArgMax, ReduceOp::ArgMin, ReduceOp::Var};

// Every op over the last `reduced_dims` dims of x: the emulated CUDA path against the CPU backend.
void expect_matches_cpu(const TensorView& x, int64_t reduced_dims, const std::string& label) {
  const int64_t lead = x.ndim() - reduced_dims;
  Dims out_sizes;
  int64_t outputs = 1, count = 1;
  for (int64_t d = 0; d < x.ndim(); ++d) {
    if (d < lead) {
      out_sizes.push_back(x.sizes[d]);
      outputs *= x.sizes[d];
    } else {
      count *= x.sizes[d];
    }
  }
  for (ReduceOp op : kOps) {
    const bool extreme = op == ReduceOp::Max || op == ReduceOp::Min || op == ReduceOp::ArgMax || op == ReduceOp::ArgMin;
    if (count == 0 && extreme) continue;
    if (op == ReduceOp::Prod && count > 64) continue;  // products of many values only overflow
    const Dtype od = out_dtype_for(op, x.dtype);
    const bool with_indices = op == ReduceOp::Max || op == ReduceOp::Min;
    for (int64_t correction : {int64_t{0}, int64_t{1}}) {
      if (correction == 1 && op != ReduceOp::Var) continue;
      Buffer expected = make_buffer(od, out_sizes, contiguous(out_sizes), outputs);
      Buffer actual = make_buffer(od, out_sizes, contiguous(out_sizes), outputs);
      Buffer expected_idx = make_buffer(kInt64, out_sizes, contiguous(out_sizes), outputs);
      Buffer actual_idx = make_buffer(kInt64, out_sizes, contiguous(out_sizes), outputs);
      TensorView no_indices;
      cpu::cpu_backend().reduce(op, x, reduced_dims, expected.view, with_indices ? expected_idx.view : no_indices,
                                correction);
      emulated_reduce(op, x, reduced_dims, actual.view, with_indices ? actual_idx.view : no_indices, correction);
      const double tol = (op == ReduceOp::Sum || op == ReduceOp::Mean || op == ReduceOp::Var || op == ReduceOp::Prod)
                             ? tolerance_for(x.dtype)
                             : 0.0;
      for (int64_t i = 0; i < outputs; ++i) {
        const double e = read(expected.view, i), a = read(actual.view, i);
        const std::string what =
            label + " " + op_name(op) + " (correction " + std::to_string(correction) + ") output " + std::to_string(i);
        if (std::isnan(e)) {
          ASSERT_TRUE(std::isnan(a)) << what << ": " << a;
        } else if (std::isinf(e)) {
          ASSERT_EQ(a, e) << what;
        } else {
          ASSERT_NEAR(a, e, tol * std::max(1.0, std::fabs(e))) << what;
        }
        if (with_indices) {
          ASSERT_EQ(read(actual_idx.view, i), read(expected_idx.view, i)) << what << " index";
        }
      }
    }
  }
}

// Deterministic values: integers in [-range, range) when range > 0, else normal-ish floats.
struct Values {
  uint64_t state;
  int range;
  double operator()(int64_t) {
    state = state * 6364136223846793005ull + 1442695040888963407ull;
    const double u = static_cast<double>(state >> 11) * 0x1p-53;
    return range > 0 ? std::floor(u * 2 * range) - range : 1.0 + 0.25 * (u - 0.5);
  }
};

const Dtype kDtypes[] = {kFloat32, kFloat64, kFloat16, kBFloat16, kInt64, kInt32, kInt16, kInt8, kUInt8, kBool};

TEST(CudaReduceEmulated, SmallShapesEveryDtypeAndDimCount) {
  const Dims sizes{4, 5, 6};
  for (Dtype dt : kDtypes) {
    for (int64_t reduced = 0; reduced <= 3; ++reduced) {
      const int range = dt == kBool ? 1 : (dt == kUInt8 ? 0 : 3);
      Buffer x = filled(dt, sizes, contiguous(sizes), 120,
                        [dt, v = Values{static_cast<uint64_t>(reduced) + 1, range}](int64_t k) mutable {
                          return dt == kUInt8 ? std::fabs(v(k)) * 4 : v(k);
                        });
      expect_matches_cpu(x.view, reduced, std::string(dtype_name(dt)) + " reduce " + std::to_string(reduced));
    }
  }
}

TEST(CudaReduceEmulated, PermutedSlicedAndBroadcastLayouts) {
  // [6,5,8] storage viewed as permute(2,0,1) sliced every other along the new dim 0: [4,6,5].
  Buffer a = filled(kFloat32, {4, 6, 5}, {2, 40, 8}, 240, Values{7, 0});
  a.view.data = reinterpret_cast<float*>(a.bytes.data()) + 1;
  for (int64_t reduced = 0; reduced <= 3; ++reduced) expect_matches_cpu(a.view, reduced, "permuted slice");
  Buffer b = filled(kFloat64, {4, 7, 3}, {0, 1, 0}, 7, Values{8, 0});  // an expanded row
  for (int64_t reduced = 0; reduced <= 3; ++reduced) expect_matches_cpu(b.view, reduced, "expanded");
}

TEST(CudaReduceEmulated, TiesAndNansKeepTheCpusIndices) {
  const Dims sizes{9, 300};
  Buffer ties = filled(kFloat32, sizes, contiguous(sizes), 2700, Values{3, 2});
  expect_matches_cpu(ties.view, 1, "ties rows (block per output)");
  Buffer cols = filled(kFloat32, {300, 9}, {1, 300}, 2700, Values{3, 2});
  expect_matches_cpu(cols.view, 1, "ties columns (thread per output)");
  Buffer nans = filled(kFloat32, sizes, contiguous(sizes), 2700, [v = Values{4, 0}](int64_t k) mutable {
    const double x = v(k);
    return (k % 97 == 5 || k % 131 == 7) ? std::nan("") : x;
  });
  expect_matches_cpu(nans.view, 1, "nans rows");
  expect_matches_cpu(nans.view, 2, "nans all");
}

TEST(CudaReduceEmulated, LongSlicesSplitIntoChunks) {
  const Dims sizes{2, 100000};
  ReducePlan plan;
  const Dims strides = contiguous(sizes);
  ASSERT_TRUE(make_reduce_plan(sizes.data(), strides.data(), 2, 1, plan));
  ASSERT_GT(plan.chunks, 1);  // this test is about the split path
  for (Dtype dt : {kFloat32, kFloat64, kFloat16, kInt32}) {
    Buffer x = filled(dt, sizes, strides, 200000, Values{5, dt == kInt32 ? 1000 : 0});
    expect_matches_cpu(x.view, 1, std::string("split ") + std::string(dtype_name(dt)));
    expect_matches_cpu(x.view, 2, std::string("split all ") + std::string(dtype_name(dt)));
  }
}

TEST(CudaReduceEmulated, ColumnLayoutUsesAThreadPerOutput) {
  // Sum over dim 0 of a row-major [70, 5000] matrix, as the front end hands it over.
  Buffer x = filled(kFloat32, {5000, 70}, {1, 5000}, 350000, Values{6, 0});
  ReduceStrategy used{};
  Buffer out = make_buffer(kFloat32, {5000}, {1}, 5000);
  emulated_reduce(ReduceOp::Sum, x.view, 1, out.view, TensorView{}, 0, &used);
  EXPECT_EQ(used, ReduceStrategy::ThreadPerOutput);
  expect_matches_cpu(x.view, 1, "columns");
}

TEST(CudaReduceEmulated, ZeroElementSlices) {
  for (Dtype dt : {kFloat32, kInt64, kBool}) {
    Buffer x = make_buffer(dt, {3, 0}, {0, 1}, 0);
    expect_matches_cpu(x.view, 1,
                       std::string("empty slices ") + std::string(dtype_name(dt)));  // sum 0, mean/var NaN, prod 1
  }
}

}  // namespace
}  // namespace ember::cuda_impl
