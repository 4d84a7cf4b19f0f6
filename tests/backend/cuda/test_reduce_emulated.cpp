// The CUDA reductions' arithmetic (backend/cuda/reduce_policies.h) run on the host in the order
// the kernels use (reduce_plan.h's strategy and chunks; 256 "threads" striding over a slice, then
// a tree over their partials; chunk results merged in order), checked against the CPU backend.
// The column kernel's body (column_block) is executed here as it is on the GPU, each phase
// between two barriers run for every (tx, ty) of every block of the planned grid, in forward and
// in reverse thread order (a race inside a phase would show as a difference). What this cannot
// check is the rest of the CUDA code (launches, cub::BlockReduce, __syncthreads itself): that
// needs a GPU (tests/backend/test_device_parity_reduce.cpp).
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <cstring>
#include <memory>
#include <string>
#include <tuple>
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

// How the host runs the column kernel's blocks.
struct Emulation {
  bool reverse_threads = false;  // run each phase's threads from the last to the first
  int64_t max_grid_x = 0;        // > 0: a smaller grid than planned, so blocks loop over groups
};

// reduce_column_kernel on the host: every block of the grid, in an arbitrary (reversed) order,
// each with fresh shared memory, then reduce_merge_kernel when the columns are split.
template <typename T, typename P>
void emulate_column(const ReducePlan& plan, const T* data, const OutArgs& o, const Emulation& how) {
  ColumnShape shape = plan.column;
  if (how.max_grid_x > 0 && shape.grid_x > how.max_grid_x) shape.grid_x = how.max_grid_x;
  std::vector<typename P::Result> parts(static_cast<size_t>(plan.outputs * plan.chunks));
  const ColumnArgs<T, P> args{data, plan.kept, plan.reduced, plan.outputs, shape, o, parts.data()};
  const auto shared = std::make_unique<ColumnShared<P>>();
  const auto phase = [&](auto&& f) {
    for (int n = 0; n < shape.block_x * shape.block_y; ++n) {
      const int t = how.reverse_threads ? shape.block_x * shape.block_y - 1 - n : n;
      f(t % shape.block_x, t / shape.block_x);
    }
  };
  for (int64_t by = shape.chunks; by-- > 0;) {
    for (int64_t bx = shape.grid_x; bx-- > 0;) {
      std::memset(static_cast<void*>(shared.get()), 0xA5, sizeof(ColumnShared<P>));  // stale shared memory
      column_block(args, *shared, bx, by, shape.grid_x, phase);
    }
  }
  if (plan.chunks == 1) return;
  for (int64_t i = 0; i < plan.outputs; ++i)
    P::finish(merge_parts<P>(parts.data(), i, plan.outputs, plan.chunks), o, i);
}

// CudaBackend::reduce with each kernel replaced by host loops that do what its threads do.
void emulated_reduce(ReduceOp op, const TensorView& x, int64_t reduced_dims, const TensorView& out,
                     const TensorView& indices, int64_t correction, ReduceStrategy* used = nullptr,
                     const Emulation& how = {}) {
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
      if (plan.strategy == ReduceStrategy::Column) return emulate_column<T, P>(plan, data, o, how);
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
      for (int64_t i = 0; i < outputs; ++i) P::finish(merge_parts<P>(parts.data(), i * chunks, 1, chunks), o, i);
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
void expect_matches_cpu(const TensorView& x, int64_t reduced_dims, const std::string& label,
                        const Emulation& how = {}) {
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
      emulated_reduce(op, x, reduced_dims, actual.view, with_indices ? actual_idx.view : no_indices, correction,
                      nullptr, how);
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

ReducePlan plan_of(const TensorView& x, int64_t reduced_dims) {
  ReducePlan plan;
  EXPECT_TRUE(make_reduce_plan(x.sizes.data(), x.strides.data(), x.ndim(), x.ndim() - reduced_dims, plan));
  return plan;
}

// The emulated result of `op`, as bytes, run with `how`.
std::vector<unsigned char> emulated_bytes(ReduceOp op, const TensorView& x, int64_t reduced_dims,
                                          const Emulation& how) {
  Dims out_sizes;
  int64_t outputs = 1;
  for (int64_t d = 0; d < x.ndim() - reduced_dims; ++d) {
    out_sizes.push_back(x.sizes[d]);
    outputs *= x.sizes[d];
  }
  Buffer out = make_buffer(out_dtype_for(op, x.dtype), out_sizes, contiguous(out_sizes), outputs);
  Buffer idx = make_buffer(kInt64, out_sizes, contiguous(out_sizes), outputs);
  const bool with_indices = op == ReduceOp::Max || op == ReduceOp::Min;
  emulated_reduce(op, x, reduced_dims, out.view, with_indices ? idx.view : TensorView{}, 1, nullptr, how);
  std::vector<unsigned char> bytes = out.bytes;
  if (with_indices) bytes.insert(bytes.end(), idx.bytes.begin(), idx.bytes.end());
  return bytes;
}

// The column kernel's result does not depend on the order its threads and blocks run in, nor on
// the grid being smaller than planned (blocks then loop over groups): no races, full coverage.
void expect_same_bits_every_way(const TensorView& x, int64_t reduced_dims, const std::string& label) {
  for (ReduceOp op : kOps) {
    if (op == ReduceOp::Prod) continue;
    const std::vector<unsigned char> planned = emulated_bytes(op, x, reduced_dims, {});
    EXPECT_EQ(emulated_bytes(op, x, reduced_dims, {true, 0}), planned) << label << " " << op_name(op) << " reversed";
    EXPECT_EQ(emulated_bytes(op, x, reduced_dims, {false, 3}), planned) << label << " " << op_name(op) << " grid 3";
  }
}

// reduce_plan.h's documented order for a column sum, written out naively: thread row y of chunk
// c sums rows lo + y, lo + y + block_y, ... in runs of kChunk, kChunk runs to a group, groups
// into its total; rows then fold in halving steps (y += y + h); chunks add up in order.
float documented_column_sum(const float* x, const Dims& sizes, const Dims& strides, const ReducePlan& plan, int64_t i) {
  // Output i's slice start and element j's offset, from the uncoalesced sizes and strides.
  const size_t lead = sizes.size() - 1;  // these tests reduce one dim
  int64_t base = 0, rest = i;
  for (size_t d = lead; d-- > 0;) {
    base += (rest % sizes[d]) * strides[d];
    rest /= sizes[d];
  }
  const ColumnShape& c = plan.column;
  float total = 0;
  for (int64_t chunk = 0; chunk < c.chunks; ++chunk) {
    const int64_t q = plan.count / c.chunks, r = plan.count % c.chunks;
    const int64_t begin = chunk * q + std::min(chunk, r), end = begin + q + (chunk < r ? 1 : 0);
    std::vector<float> rows(static_cast<size_t>(c.block_y), 0.0f);
    for (int y = 0; y < c.block_y; ++y) {
      std::vector<int64_t> js;
      for (int64_t j = begin + y; j < end; j += c.block_y) js.push_back(j);
      float t = 0;
      for (size_t g = 0; g < js.size(); g += size_t{kChunk} * kChunk) {
        float group = 0;
        for (size_t k = g; k < std::min(js.size(), g + size_t{kChunk} * kChunk); k += kChunk) {
          float run = 0;
          for (size_t m = k; m < std::min(js.size(), k + kChunk); ++m) run += x[base + js[m] * strides[lead]];
          group += run;
        }
        t += group;
      }
      rows[static_cast<size_t>(y)] = t;
    }
    for (int h = c.block_y / 2; h > 0; h /= 2) {
      for (int y = 0; y < h; ++y) rows[static_cast<size_t>(y)] += rows[static_cast<size_t>(y + h)];
    }
    total = chunk == 0 ? rows[0] : total + rows[0];
  }
  return total;
}

void expect_documented_column_sums(const Buffer& x, const std::string& label) {
  const ReducePlan plan = plan_of(x.view, 1);
  ASSERT_EQ(plan.strategy, ReduceStrategy::Column) << label;
  Buffer out = make_buffer(kFloat32, {plan.outputs}, {1}, plan.outputs);
  emulated_reduce(ReduceOp::Sum, x.view, 1, out.view, TensorView{}, 0);
  const float* got = out.view.ptr<const float>();
  for (int64_t i = 0; i < plan.outputs; ++i) {
    const float want = documented_column_sum(x.view.ptr<const float>(), x.view.sizes, x.view.strides, plan, i);
    ASSERT_EQ(std::memcmp(&got[i], &want, sizeof(float)), 0)
        << label << " output " << i << ": " << got[i] << " vs " << want;
  }
}

TEST(CudaReduceEmulated, ColumnLayoutUsesTheColumnKernel) {
  // Sum over dim 0 of a row-major [70, 5000] matrix, as the front end hands it over: the
  // reduced dim last with stride 5000, the outputs contiguous.
  Buffer x = filled(kFloat32, {5000, 70}, {1, 5000}, 350000, Values{6, 0});
  const ReducePlan plan = plan_of(x.view, 1);
  ASSERT_EQ(plan.strategy, ReduceStrategy::Column);
  EXPECT_EQ(plan.column.block_x, 32);
  EXPECT_EQ(plan.chunks, 1);
  expect_matches_cpu(x.view, 1, "columns");
  expect_documented_column_sums(x, "columns");
  expect_same_bits_every_way(x.view, 1, "columns");
}

TEST(CudaReduceEmulated, FewLongColumnsAreSplitAcrossBlocks) {
  // [200000, 3] summed over dim 0: three outputs, long columns. A warp takes 8 rows of 4 outputs
  // (the fourth is the next row's first), and grid.y cuts each column into chunks.
  Buffer x = filled(kFloat32, {3, 200000}, {1, 3}, 600000, Values{9, 0});
  const ReducePlan plan = plan_of(x.view, 1);
  ASSERT_EQ(plan.strategy, ReduceStrategy::Column);
  EXPECT_EQ(plan.column.block_x, 4);
  EXPECT_EQ(plan.column.block_y, 64);
  ASSERT_GT(plan.chunks, 1);
  expect_matches_cpu(x.view, 1, "few long columns");
  expect_documented_column_sums(x, "few long columns");
  expect_same_bits_every_way(x.view, 1, "few long columns");
  for (Dtype dt : {kFloat64, kFloat16, kBFloat16, kInt32, kBool}) {
    Buffer y = filled(dt, {3, 200000}, {1, 3}, 600000, Values{10, dt == kBool ? 1 : (dt == kInt32 ? 1000 : 0)});
    expect_matches_cpu(y.view, 1, std::string("few long columns ") + std::string(dtype_name(dt)));
  }
}

TEST(CudaReduceEmulated, ColumnsOfManyOutputsLoopOverGroups) {
  // 1000 outputs in 32-wide groups, with a grid of 3 blocks in x: each block loops.
  Buffer x = filled(kFloat64, {1000, 300}, {1, 1000}, 300000, Values{11, 0});
  expect_matches_cpu(x.view, 1, "grid-stride columns", {false, 3});
  expect_matches_cpu(x.view, 1, "grid-stride columns reversed", {true, 3});
}

TEST(CudaReduceEmulated, ColumnsOverSeveralKeptAndReducedDims) {
  // x[A=3, N=70, C=40] summed over N: the front end's order [A, C, N]; outputs (a, c) are
  // contiguous along c only.
  Buffer a = filled(kFloat32, {3, 40, 70}, {2800, 1, 40}, 8400, Values{12, 0});
  EXPECT_EQ(plan_of(a.view, 1).strategy, ReduceStrategy::Column);
  expect_matches_cpu(a.view, 1, "kept [A, C]");
  expect_same_bits_every_way(a.view, 1, "kept [A, C]");
  // x[N1=6, N2=30, C=33] sliced to every other N2, summed over N1 and N2: two reduced dims that
  // do not coalesce, and a var over them.
  Buffer b = filled(kFloat32, {33, 6, 15}, {1, 1980, 66}, 11880, Values{13, 0});
  const ReducePlan plan = plan_of(b.view, 2);
  EXPECT_EQ(plan.strategy, ReduceStrategy::Column);
  EXPECT_EQ(plan.reduced.ndim, 2);
  expect_matches_cpu(b.view, 2, "two reduced dims");
  expect_same_bits_every_way(b.view, 2, "two reduced dims");
  // Outputs 2 apart (x[:, ::2] summed over dim 0), and flipped columns (negative strides).
  Buffer c = filled(kFloat32, {20, 100}, {2, 40}, 4000, Values{14, 0});
  EXPECT_EQ(plan_of(c.view, 1).strategy, ReduceStrategy::Column);
  expect_matches_cpu(c.view, 1, "strided outputs");
  Buffer d = filled(kFloat32, {20, 100}, {-1, -20}, 2000, Values{16, 0});
  d.view.data = reinterpret_cast<float*>(d.bytes.data()) + 1999;
  EXPECT_EQ(plan_of(d.view, 1).strategy, ReduceStrategy::Column);
  expect_matches_cpu(d.view, 1, "flipped");
  expect_same_bits_every_way(d.view, 1, "flipped");
}

TEST(CudaReduceEmulated, ColumnSumsReadEachElementOnce) {
  // Integer sums of 64-bit random values wrap exactly: a missed, repeated or misattributed
  // element changes the sum. Compared bit for bit with a plain loop over naive offsets.
  for (const auto& [sizes, strides, storage] : std::vector<std::tuple<Dims, Dims, int64_t>>{
           {{5, 100000}, {1, 5}, 500000},      // few long columns: split
           {{257, 333}, {1, 257}, 85581},      // a partial last group
           {{2, 66}, {1, 2}, 132},             // the shortest column the kernel takes
           {{40, 7, 90}, {7, 1, 280}, 25200},  // kept [40, 7] with strides [7, 1]
       }) {
    Buffer x = make_buffer(kInt64, sizes, strides, storage);  // random 64-bit words (no double holds them)
    uint64_t state = 99;
    auto* p = reinterpret_cast<int64_t*>(x.bytes.data());
    for (int64_t k = 0; k < storage; ++k) {
      state = state * 6364136223846793005ull + 1442695040888963407ull;
      p[k] = static_cast<int64_t>(state ^ (state >> 29));
    }
    const ReducePlan plan = plan_of(x.view, 1);
    ASSERT_EQ(plan.strategy, ReduceStrategy::Column);
    Buffer out = make_buffer(kInt64, {plan.outputs}, {1}, plan.outputs);
    emulated_reduce(ReduceOp::Sum, x.view, 1, out.view, TensorView{}, 0);
    const size_t lead = sizes.size() - 1;
    for (int64_t i = 0; i < plan.outputs; ++i) {
      int64_t base = 0, rest = i;
      for (size_t d = lead; d-- > 0;) {
        base += (rest % sizes[d]) * strides[d];
        rest /= sizes[d];
      }
      uint64_t want = 0;
      for (int64_t j = 0; j < sizes[lead]; ++j) want += static_cast<uint64_t>(p[base + j * strides[lead]]);
      ASSERT_EQ(static_cast<uint64_t>(out.view.ptr<const int64_t>()[i]), want) << "output " << i;
    }
  }
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
