// CpuBackend::reduce: sum, mean, prod, max, min, argmax, argmin and var over x's trailing dims.
//
// The reduced and the kept dimensions are first coalesced (size-1 dims dropped, neighbours that
// are one flat run merged), which keeps row-major linear indices unchanged. Then one of two
// strategies reads memory in order:
//  * row:    the innermost reduced dim is contiguous (or nothing better exists); each output
//            walks its slice run by run, with SIMD-friendly multi-lane loops.
//  * column: a kept dim is contiguous and no reduced dim is (sum over dim 0 of a row-major
//            matrix). A block of neighbouring outputs is accumulated together, one reduced
//            "row" at a time, so every load is contiguous instead of a column walk.
// When there are too few outputs to keep the threads busy, the reduced range is split into
// chunks whose partial results are merged in a fixed tree. The split depends only on the
// shapes, never on the thread count, so results are reproducible on any machine.
#include <algorithm>
#include <type_traits>
#include <vector>

#include "backend/cpu/cpu_backend.h"
#include "backend/cpu/dispatch.h"
#include "base/parallel.h"
#include "core/check.h"
#include "kernels/reduce_ops.h"

namespace ember::cpu {
namespace {

using kernels::MaxOp;
using kernels::MinOp;
using kernels::ValueIndex;
using kernels::WelfordData;
using kernels::WelfordOp;

// Max/min keep this many independent (value, index) lanes: two AVX-512 or four AVX2 registers of
// float, so the compares of consecutive iterations overlap instead of waiting on each other.
constexpr int kLanes = 32;
constexpr int64_t kBlock = 1024;       // elements one vectorised sum covers before the pairwise cascade
constexpr int64_t kColumnBlock = 256;  // outputs the column strategy accumulates together
constexpr int64_t kRowBlock = 64;      // rows a column sums in Acc before adding that to a double total
constexpr int64_t kChunk = 65536;      // elements per task when a reduction is split
constexpr int64_t kMinTasks = 16;      // fewer independent tasks than this: split the reduced range
constexpr int64_t kMaxChunks = 256;    // bounds the partial results kept per task

// Sizes and x-strides of a group of dimensions.
struct DimGroup {
  Dims sizes;
  Dims strides;
  int64_t ndim() const { return static_cast<int64_t>(sizes.size()); }
  int64_t numel() const {
    int64_t n = 1;
    for (int64_t s : sizes) n *= s;
    return n;
  }
};

DimGroup coalesce(const int64_t* sizes, const int64_t* strides, int64_t n) {
  DimGroup g;
  for (int64_t d = 0; d < n; ++d) {
    if (sizes[d] == 1) continue;
    size_t last = g.sizes.size() - 1;
    if (!g.sizes.empty() && g.strides[last] == sizes[d] * strides[d]) {
      g.sizes[last] *= sizes[d];
      g.strides[last] = strides[d];
    } else {
      g.sizes.push_back(sizes[d]);
      g.strides.push_back(strides[d]);
    }
  }
  return g;
}

int64_t offset_of(const DimGroup& g, int64_t linear) {
  int64_t offset = 0;
  for (int64_t d = g.ndim() - 1; d >= 0; --d) {
    offset += (linear % g.sizes[d]) * g.strides[d];
    linear /= g.sizes[d];
  }
  return offset;
}

// Steps through a DimGroup in row-major order, tracking the element offset.
class Walker {
 public:
  Walker(const DimGroup& g, int64_t start) : g_(g), index_(g.sizes.size()) {
    for (int64_t d = g.ndim() - 1; d >= 0; --d) {
      index_[d] = start % g.sizes[d];
      start /= g.sizes[d];
      offset_ += index_[d] * g.strides[d];
    }
  }
  int64_t offset() const { return offset_; }
  void next() {
    for (int64_t d = g_.ndim() - 1; d >= 0; --d) {
      offset_ += g_.strides[d];
      if (++index_[d] < g_.sizes[d]) return;
      offset_ -= g_.strides[d] * g_.sizes[d];
      index_[d] = 0;
    }
  }

 private:
  const DimGroup& g_;
  Dims index_;
  int64_t offset_ = 0;
};

// The reduced dims as runs: `outer` dims, each position of which starts a run of `len`
// elements `stride` apart.
struct Runs {
  DimGroup outer;
  int64_t len = 1;
  int64_t stride = 1;
};

Runs make_runs(const DimGroup& reduced) {
  Runs r;
  if (reduced.sizes.empty()) return r;
  int64_t last = reduced.ndim() - 1;
  r.len = reduced.sizes[last];
  r.stride = reduced.strides[last];
  for (int64_t d = 0; d < last; ++d) {
    r.outer.sizes.push_back(reduced.sizes[d]);
    r.outer.strides.push_back(reduced.strides[d]);
  }
  return r;
}

// Calls f(offset, length, first_linear_index) for each run piece inside [lo, hi); stops early
// when f returns false. Returns false when stopped.
template <typename F>
bool for_each_run(const Runs& r, int64_t lo, int64_t hi, const F& f) {
  Walker w(r.outer, lo / r.len);
  int64_t pos = lo % r.len;
  for (int64_t i = lo; i < hi; pos = 0, w.next()) {
    int64_t n = std::min(r.len - pos, hi - i);
    if (!f(w.offset() + pos * r.stride, n, i)) return false;
    i += n;
  }
  return true;
}

// ---- summation ----

struct Identity {
  template <typename A>
  A operator()(A v) const {
    return v;
  }
};

// Sums f(x) over n (at most kBlock) elements. Two interleaved halves give two independent
// vector accumulator chains, and OpenMP's simd reduction keeps each in a register across all
// vector lanes (each lane sums at most kBlock / (2 * width) elements serially).
template <typename Acc, bool kUnit, typename T, typename F>
Acc block_sum(const T* p, int64_t n, int64_t stride, const F& f) {
  const int64_t s = kUnit ? 1 : stride;
  const int64_t half = n / 2;
  const T* q = p + half * s;
  Acc first = Acc(0), second = Acc(0);
#pragma omp simd reduction(+ : first, second)
  for (int64_t i = 0; i < half; ++i) {
    first += f(static_cast<Acc>(p[i * s]));
    second += f(static_cast<Acc>(q[i * s]));
  }
  if (n % 2) second += f(static_cast<Acc>(p[(n - 1) * s]));
  return first + second;
}

// Pairwise summation of a stream of partial sums, kept as a binary counter: level l holds the
// sum of 2^l values. The rounding error grows with log2 of the count instead of the count.
template <typename Acc>
class Cascade {
 public:
  void add(Acc v) {
    int level = 0;
    for (uint64_t c = count_; c & 1; c >>= 1, ++level) v = levels_[level] + v;
    levels_[level] = v;
    ++count_;
  }
  Acc total() const {
    Acc t = Acc(0);
    int level = 0;
    for (uint64_t c = count_; c != 0; c >>= 1, ++level) {
      if (c & 1) t += levels_[level];
    }
    return t;
  }

 private:
  Acc levels_[64];
  uint64_t count_ = 0;
};

template <typename Acc, typename T, typename F>
Acc sum_slice(const T* x, const Runs& r, int64_t lo, int64_t hi, const F& f) {
  Cascade<Acc> cascade;
  for_each_run(r, lo, hi, [&](int64_t offset, int64_t n, int64_t) {
    const T* p = x + offset;
    for (int64_t b = 0; b < n; b += kBlock) {
      int64_t m = std::min(kBlock, n - b);
      cascade.add(r.stride == 1 ? block_sum<Acc, true>(p + b, m, 1, f)
                                : block_sum<Acc, false>(p + b * r.stride, m, r.stride, f));
    }
    return true;
  });
  return cascade.total();
}

// Calls f(row_offset, row_linear_index) for each reduced position in [lo, hi) (column strategy).
template <typename F>
void for_each_row(const DimGroup& reduced, int64_t lo, int64_t hi, const F& f) {
  Walker w(reduced, lo);
  for (int64_t r = lo; r < hi; ++r, w.next()) f(w.offset(), r);
}

// ---- output ----

template <typename O, typename R>
O convert(R v) {
  if constexpr (std::is_same_v<O, Half> || std::is_same_v<O, BFloat16>) {
    return O(static_cast<float>(v));
  } else {
    return static_cast<O>(v);
  }
}

// Stores results of type R into `out`, converting to out's dtype (chosen by the front end).
// The common case, out already of type R, is a plain store; the others go through one
// conversion function picked once per call.
template <typename R>
class OutWriter {
 public:
  using StoreFn = void (*)(void*, int64_t, R);
  explicit OutWriter(const TensorView& out) : data_(out.data), direct_(out.dtype == dtype_v<R>) {
    store_ = dispatch_all(out.dtype, "reduce", [&]<typename O>() -> StoreFn {
      return [](void* data, int64_t i, R v) { static_cast<O*>(data)[i] = convert<O>(v); };
    });
  }
  void operator()(int64_t i, R v) const {
    if (direct_) {
      static_cast<R*>(data_)[i] = v;
    } else {
      store_(data_, i, v);
    }
  }

 private:
  void* data_;
  bool direct_;
  StoreFn store_;
};

// ---- the kernels: slice() for the row strategy, columns() for the column strategy ----

// Sum and mean. Integers (and bool) accumulate in uint64 so overflow wraps as in PyTorch and
// the result is read back as int64.
template <typename T, typename Acc, bool kMean>
struct SumKernel {
  using Partial = Acc;
  using Result = std::conditional_t<std::is_integral_v<Acc>, std::conditional_t<kMean, double, int64_t>, Acc>;
  OutWriter<Result> out;
  int64_t count;

  static Partial identity() { return Acc(0); }
  static Partial combine(Partial a, Partial b) { return kernels::SumOp<Acc>::combine(a, b); }

  // (For integers the cascade changes nothing, wrapping adds being exact in any order.)
  Partial slice(const T* x, const Runs& r, int64_t lo, int64_t hi) const {
    return sum_slice<Acc>(x, r, lo, hi, Identity{});
  }

  // Rows are added in Acc (full-width float vectors) for at most kRowBlock rows, and those block
  // sums are added in double, so the serial per-column error stays small over millions of rows.
  void columns(const T* x, int64_t width, const DimGroup& reduced, int64_t lo, int64_t hi, Partial* parts) const {
    using Wide = std::conditional_t<std::is_integral_v<Acc>, Acc, double>;
    Wide total[kColumnBlock] = {};
    Acc block[kColumnBlock];
    for (int64_t r0 = lo; r0 < hi; r0 += kRowBlock) {
      std::fill(block, block + width, Acc(0));
      for_each_row(reduced, r0, std::min(hi, r0 + kRowBlock), [&](int64_t offset, int64_t) {
        const T* row = x + offset;
        for (int64_t j = 0; j < width; ++j) block[j] += static_cast<Acc>(row[j]);
      });
      for (int64_t j = 0; j < width; ++j) total[j] += static_cast<Wide>(block[j]);
    }
    for (int64_t j = 0; j < width; ++j) parts[j] = static_cast<Acc>(total[j]);
  }

  void finish(Partial p, int64_t i) const {
    if constexpr (std::is_integral_v<Acc>) {
      int64_t wrapped = static_cast<int64_t>(p);
      if constexpr (kMean) {
        out(i, static_cast<double>(wrapped) / static_cast<double>(count));
      } else {
        out(i, wrapped);
      }
    } else if constexpr (kMean) {
      out(i, p / static_cast<Acc>(count));
    } else {
      out(i, p);
    }
  }
};

template <typename T, typename Acc>
struct ProdKernel {
  using Partial = Acc;
  using Result = std::conditional_t<std::is_integral_v<Acc>, int64_t, Acc>;
  OutWriter<Result> out;

  static Partial identity() { return Acc(1); }
  static Partial combine(Partial a, Partial b) { return kernels::ProdOp<Acc>::combine(a, b); }

  Partial slice(const T* x, const Runs& r, int64_t lo, int64_t hi) const {
    Acc product = Acc(1);
    for_each_run(r, lo, hi, [&](int64_t offset, int64_t n, int64_t) {
      const T* p = x + offset;
      for (int64_t i = 0; i < n; ++i) product *= static_cast<Acc>(p[i * r.stride]);
      return true;
    });
    return product;
  }

  void columns(const T* x, int64_t width, const DimGroup& reduced, int64_t lo, int64_t hi, Partial* parts) const {
    std::fill(parts, parts + width, Acc(1));
    for_each_row(reduced, lo, hi, [&](int64_t offset, int64_t) {
      const T* row = x + offset;
      for (int64_t j = 0; j < width; ++j) parts[j] *= static_cast<Acc>(row[j]);
    });
  }

  void finish(Partial p, int64_t i) const { out(i, static_cast<Result>(p)); }
};

enum class ExtremeMode { Value, ValueAndIndex, Index };

// Max/min (Op = MaxOp or MinOp) and argmax/argmin, in one pass that carries the index along
// in each SIMD lane; the lanes merge with Op::combine, whose tie-break keeps the first index.
template <typename T, typename Op, ExtremeMode kMode>
struct ExtremeKernel {
  using V = compute_t<T>;
  using Partial = ValueIndex<V>;
  using Result = std::conditional_t<kMode == ExtremeMode::Index, int64_t, V>;
  OutWriter<Result> out;
  int64_t* indices;

  static Partial identity() { return Op::identity(); }
  static Partial combine(Partial a, Partial b) { return Op::combine(a, b); }

  // Adds p[0..n) (linear indices first..first+n) to `best`.
  template <bool kUnit>
  static void scan(const T* p, int64_t n, int64_t stride, int64_t first, Partial& best) {
    const int64_t s = kUnit ? 1 : stride;
    int64_t i = 0;
    if (n >= kLanes) {
      // Lanes start from `best`, so a later equal value never displaces an earlier index.
      V values[kLanes];
      int64_t where[kLanes];
      for (int j = 0; j < kLanes; ++j) {
        values[j] = best.value;
        where[j] = best.index;
      }
      for (; i + kLanes <= n; i += kLanes) {
#pragma omp simd
        for (int j = 0; j < kLanes; ++j) {
          V v = static_cast<V>(p[(i + j) * s]);
          bool take = Op::better(v, values[j]);
          values[j] = take ? v : values[j];
          if constexpr (kMode != ExtremeMode::Value) where[j] = take ? first + i + j : where[j];
        }
      }
      for (int j = 0; j < kLanes; ++j) best = Op::combine(best, Partial{values[j], where[j]});
    }
    for (; i < n; ++i) {
      V v = static_cast<V>(p[i * s]);
      if (Op::better(v, best.value)) best = {v, first + i};
    }
  }

  Partial slice(const T* x, const Runs& r, int64_t lo, int64_t hi) const {
    // Seeded with the first element; in Value mode the index stays `lo`, which is enough to
    // keep chunk merges ordered.
    Partial best{static_cast<V>(x[offset_of(r.outer, lo / r.len) + (lo % r.len) * r.stride]), lo};
    for_each_run(r, lo, hi, [&](int64_t offset, int64_t n, int64_t first) {
      if (r.stride == 1) {
        scan<true>(x + offset, n, 1, first, best);
      } else {
        scan<false>(x + offset, n, r.stride, first, best);
      }
      return true;
    });
    return best;
  }

  void columns(const T* x, int64_t width, const DimGroup& reduced, int64_t lo, int64_t hi, Partial* parts) const {
    V values[kColumnBlock];
    int64_t where[kColumnBlock];
    for_each_row(reduced, lo, hi, [&](int64_t offset, int64_t r) {
      const T* row = x + offset;
      if (r == lo) {
        for (int64_t j = 0; j < width; ++j) values[j] = static_cast<V>(row[j]);
        std::fill(where, where + width, lo);
        return;
      }
      for (int64_t j = 0; j < width; ++j) {
        V v = static_cast<V>(row[j]);
        bool take = Op::better(v, values[j]);  // strict, so ties and later NaNs keep the first
        values[j] = take ? v : values[j];
        where[j] = take ? r : where[j];
      }
    });
    for (int64_t j = 0; j < width; ++j) parts[j] = {values[j], where[j]};
  }

  void finish(Partial p, int64_t i) const {
    if constexpr (kMode == ExtremeMode::Index) {
      out(i, p.index);
    } else {
      out(i, p.value);
      if constexpr (kMode == ExtremeMode::ValueAndIndex) indices[i] = p.index;
    }
  }
};

// Variance, two-pass (mean, then squared deviations) in double per slice or chunk; chunks merge
// with Chan's formula.
template <typename T>
struct VarKernel {
  using Partial = WelfordData<double>;
  OutWriter<double> out;
  int64_t correction;

  static Partial identity() { return WelfordOp<double>::identity(); }
  static Partial combine(Partial a, Partial b) { return WelfordOp<double>::combine(a, b); }

  Partial slice(const T* x, const Runs& r, int64_t lo, int64_t hi) const {
    const int64_t n = hi - lo;
    const double mean = sum_slice<double>(x, r, lo, hi, Identity{}) / static_cast<double>(n);
    const double m2 = sum_slice<double>(x, r, lo, hi, [mean](double v) { return (v - mean) * (v - mean); });
    return {mean, m2, n};
  }

  void columns(const T* x, int64_t width, const DimGroup& reduced, int64_t lo, int64_t hi, Partial* parts) const {
    double sums[kColumnBlock] = {};
    for_each_row(reduced, lo, hi, [&](int64_t offset, int64_t) {
      const T* row = x + offset;
      for (int64_t j = 0; j < width; ++j) sums[j] += static_cast<double>(row[j]);
    });
    const int64_t n = hi - lo;
    double means[kColumnBlock];
    for (int64_t j = 0; j < width; ++j) means[j] = sums[j] / static_cast<double>(n);
    double m2[kColumnBlock] = {};
    for_each_row(reduced, lo, hi, [&](int64_t offset, int64_t) {
      const T* row = x + offset;
      for (int64_t j = 0; j < width; ++j) {
        double d = static_cast<double>(row[j]) - means[j];
        m2[j] += d * d;
      }
    });
    for (int64_t j = 0; j < width; ++j) parts[j] = {means[j], m2[j], n};
  }

  void finish(Partial p, int64_t i) const { out(i, WelfordOp<double>::variance(p, correction)); }
};

// ---- the driver ----

template <typename K>
typename K::Partial tree_combine(const typename K::Partial* parts, int64_t n) {
  if (n == 1) return parts[0];
  int64_t half = n / 2;
  return K::combine(tree_combine<K>(parts, half), tree_combine<K>(parts + half, n - half));
}

// How many pieces to cut each task's reduced range into: only when there are too few tasks to
// occupy the threads, and never by a rule that looks at the thread count.
int64_t chunk_count(int64_t tasks, int64_t elements_per_task, int64_t count) {
  if (tasks >= kMinTasks || elements_per_task < 2 * kChunk) return 1;
  return std::min({(elements_per_task + kChunk - 1) / kChunk, kMaxChunks, count});
}

int64_t grain_for(int64_t elements_per_task) {
  return std::max<int64_t>(1, base::kGrainSize / std::max<int64_t>(1, elements_per_task));
}

template <typename T, typename K>
void run_rows(const T* x, const DimGroup& kept, const DimGroup& reduced, int64_t count, const K& k) {
  const Runs runs = make_runs(reduced);
  const int64_t outputs = kept.numel();
  const int64_t chunks = chunk_count(outputs, count, count);
  if (chunks == 1) {
    base::parallel_for(outputs, grain_for(count), [&](int64_t begin, int64_t end) {
      for (int64_t i = begin; i < end; ++i) k.finish(k.slice(x + offset_of(kept, i), runs, 0, count), i);
    });
    return;
  }
  std::vector<typename K::Partial> parts(outputs * chunks);
  base::parallel_for(outputs * chunks, grain_for(count / chunks), [&](int64_t begin, int64_t end) {
    for (int64_t t = begin; t < end; ++t) {
      int64_t i = t / chunks, c = t % chunks;
      parts[t] = k.slice(x + offset_of(kept, i), runs, count * c / chunks, count * (c + 1) / chunks);
    }
  });
  for (int64_t i = 0; i < outputs; ++i) k.finish(tree_combine<K>(parts.data() + i * chunks, chunks), i);
}

template <typename T, typename K>
void run_columns(const T* x, const DimGroup& kept, int64_t vec_dim, const DimGroup& reduced, int64_t count,
                 const K& k) {
  // The other kept dims, with their x strides and their strides in the contiguous output.
  DimGroup outer_x, outer_out;
  int64_t out_stride = 1, vec_out_stride = 1;
  for (int64_t d = kept.ndim() - 1; d >= 0; --d) {
    if (d == vec_dim) {
      vec_out_stride = out_stride;
    } else {
      outer_x.sizes.insert(0, kept.sizes[d]);
      outer_x.strides.insert(0, kept.strides[d]);
      outer_out.sizes.insert(0, kept.sizes[d]);
      outer_out.strides.insert(0, out_stride);
    }
    out_stride *= kept.sizes[d];
  }
  const int64_t width = kept.sizes[vec_dim];
  const int64_t blocks = (width + kColumnBlock - 1) / kColumnBlock;
  const int64_t tasks = outer_x.numel() * blocks;
  const int64_t block_elements = count * std::min(width, kColumnBlock);
  const int64_t chunks = chunk_count(tasks, block_elements, count);

  using Partial = typename K::Partial;
  std::vector<Partial> parts(chunks > 1 ? tasks * chunks * kColumnBlock : 0);
  base::parallel_for(tasks * chunks, grain_for(block_elements / chunks), [&](int64_t begin, int64_t end) {
    Partial local[kColumnBlock];
    for (int64_t t = begin; t < end; ++t) {
      int64_t task = t / chunks, c = t % chunks;
      int64_t o = task / blocks, j0 = (task % blocks) * kColumnBlock;
      int64_t w = std::min(kColumnBlock, width - j0);
      const T* base = x + offset_of(outer_x, o) + j0;
      Partial* dst = chunks > 1 ? parts.data() + t * kColumnBlock : local;
      k.columns(base, w, reduced, count * c / chunks, count * (c + 1) / chunks, dst);
      if (chunks == 1) {
        int64_t out0 = offset_of(outer_out, o) + j0 * vec_out_stride;
        for (int64_t j = 0; j < w; ++j) k.finish(local[j], out0 + j * vec_out_stride);
      }
    }
  });
  if (chunks == 1) return;
  std::vector<Partial> column(chunks);
  for (int64_t task = 0; task < tasks; ++task) {
    int64_t o = task / blocks, j0 = (task % blocks) * kColumnBlock;
    int64_t w = std::min(kColumnBlock, width - j0);
    int64_t out0 = offset_of(outer_out, o) + j0 * vec_out_stride;
    for (int64_t j = 0; j < w; ++j) {
      for (int64_t c = 0; c < chunks; ++c) column[c] = parts[(task * chunks + c) * kColumnBlock + j];
      k.finish(tree_combine<K>(column.data(), chunks), out0 + j * vec_out_stride);
    }
  }
}

template <typename T, typename K>
void run_reduction(const TensorView& x, int64_t lead, int64_t count, const K& k) {
  int64_t outputs = 1;
  for (int64_t d = 0; d < lead; ++d) outputs *= x.sizes[d];
  if (count == 0) {
    for (int64_t i = 0; i < outputs; ++i) k.finish(K::identity(), i);
    return;
  }
  const DimGroup kept = coalesce(x.sizes.data(), x.strides.data(), lead);
  const DimGroup reduced = coalesce(x.sizes.data() + lead, x.strides.data() + lead, x.ndim() - lead);
  const T* data = x.ptr<const T>();

  int64_t vec_dim = -1;
  for (int64_t d = 0; d < kept.ndim(); ++d) {
    if (kept.strides[d] == 1) vec_dim = d;
  }
  bool reduced_contiguous = false;
  for (int64_t s : reduced.strides) reduced_contiguous |= (s == 1 || s == -1);
  if (vec_dim >= 0 && !reduced.sizes.empty() && !reduced_contiguous) {
    run_columns(data, kept, vec_dim, reduced, count, k);
  } else {
    run_rows(data, kept, reduced, count, k);
  }
}

// Reducing over no dimensions: the values themselves, converted to out's dtype.
template <typename T>
void copy_values(const TensorView& x, const TensorView& out) {
  const DimGroup all = coalesce(x.sizes.data(), x.strides.data(), x.ndim());
  const int64_t n = x.numel();
  const T* data = x.ptr<const T>();
  OutWriter<compute_t<T>> write(out);
  base::parallel_for(n, base::kGrainSize, [&](int64_t begin, int64_t end) {
    Walker w(all, begin);
    for (int64_t i = begin; i < end; ++i, w.next()) write(i, static_cast<compute_t<T>>(data[w.offset()]));
  });
}

template <typename T>
using sum_acc_t = std::conditional_t<std::is_integral_v<T>, uint64_t, compute_t<T>>;

template <typename T>
void reduce_typed(ReduceOp op, const TensorView& x, int64_t lead, int64_t count, const TensorView& out,
                  const TensorView& indices, int64_t correction) {
  using V = compute_t<T>;
  using SumK = SumKernel<T, sum_acc_t<T>, false>;
  using MeanK = SumKernel<T, sum_acc_t<T>, true>;
  using ProdK = ProdKernel<T, sum_acc_t<T>>;
  auto run = [&](const auto& kernel) { run_reduction<T>(x, lead, count, kernel); };
  int64_t* index_out = indices.ptr<int64_t>();
  switch (op) {
    case ReduceOp::Sum:
      return run(SumK{OutWriter<typename SumK::Result>(out), count});
    case ReduceOp::Mean:
      return run(MeanK{OutWriter<typename MeanK::Result>(out), count});
    case ReduceOp::Prod:
      return run(ProdK{OutWriter<typename ProdK::Result>(out)});
    case ReduceOp::Max:
      if (index_out != nullptr) {
        return run(ExtremeKernel<T, MaxOp<V>, ExtremeMode::ValueAndIndex>{OutWriter<V>(out), index_out});
      }
      return run(ExtremeKernel<T, MaxOp<V>, ExtremeMode::Value>{OutWriter<V>(out), nullptr});
    case ReduceOp::Min:
      if (index_out != nullptr) {
        return run(ExtremeKernel<T, MinOp<V>, ExtremeMode::ValueAndIndex>{OutWriter<V>(out), index_out});
      }
      return run(ExtremeKernel<T, MinOp<V>, ExtremeMode::Value>{OutWriter<V>(out), nullptr});
    case ReduceOp::ArgMax:
      return run(ExtremeKernel<T, MaxOp<V>, ExtremeMode::Index>{OutWriter<int64_t>(out), nullptr});
    case ReduceOp::ArgMin:
      return run(ExtremeKernel<T, MinOp<V>, ExtremeMode::Index>{OutWriter<int64_t>(out), nullptr});
    case ReduceOp::Var:
      return run(VarKernel<T>{OutWriter<double>(out), correction});
  }
}

}  // namespace

void CpuBackend::reduce(ReduceOp op, const TensorView& x, int64_t reduced_dims, const TensorView& out,
                        const TensorView& indices, int64_t correction) {
  EMBER_CHECK(reduced_dims >= 0 && reduced_dims <= x.ndim(), "[", op_name(op), "] cannot reduce ", reduced_dims,
              " dims of a ", x.ndim(), "-d tensor");
  const int64_t lead = x.ndim() - reduced_dims;
  int64_t outputs = 1, count = 1;
  for (int64_t d = 0; d < x.ndim(); ++d) (d < lead ? outputs : count) *= x.sizes[d];
  if (outputs == 0) return;
  const bool extreme = op == ReduceOp::Max || op == ReduceOp::Min || op == ReduceOp::ArgMax || op == ReduceOp::ArgMin;
  EMBER_CHECK(count > 0 || !extreme, op_name(op), "(): cannot reduce over zero elements");

  // Over no dims, sum/mean/prod/max/min are the values themselves; var and argmax/argmin still
  // reduce over the single element (var of one element is NaN with correction 1, argmax is 0).
  const bool value_op =
      op == ReduceOp::Sum || op == ReduceOp::Mean || op == ReduceOp::Prod || op == ReduceOp::Max || op == ReduceOp::Min;
  if (reduced_dims == 0 && value_op) {
    dispatch_all(x.dtype, op_name(op), [&]<typename T>() { copy_values<T>(x, out); });
    if (indices.data != nullptr) std::fill(indices.ptr<int64_t>(), indices.ptr<int64_t>() + outputs, int64_t{0});
    return;
  }
  dispatch_all(x.dtype, op_name(op),
               [&]<typename T>() { reduce_typed<T>(op, x, lead, count, out, indices, correction); });
}

}  // namespace ember::cpu
