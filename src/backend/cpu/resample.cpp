// CpuBackend::resample and resample_backward: interpolate's modes over contiguous views, with the
// arithmetic of kernels/resample_ops.h (the last dimension combined first, every product and sum
// rounded in the computation type, no fused multiply-add).
//
// Separable, one (n, c) plane at a time: the forward pass combines along the last dimension
// into a buffer of rows ([in_0, .., in_{K-2}, out_{K-1}]), then along each earlier dimension, so
// an input row that several output rows read is combined once; the buffers are per thread and
// small (a 64 x 64 plane upsampled 2x needs 32 KiB). The inner loops of the earlier dimensions run
// along contiguous rows with the weights fixed, which the compiler vectorises; the last one
// gathers. The backward pass runs the transposes in the opposite order, each adding an output
// row's gradient times its weights into the input rows it read. Both thread over planes: a plane
// belongs to one thread, so the backward pass's additions never race and do not depend on the
// thread count. The nearest modes (no weights) gather directly in the storage type, copying an
// output row that reads the same input row as the one before it (every other row at 2x).
//
// float16 and bfloat16 read into float and round once, on the final store. The backward pass
// takes grad_x in the computation type (the front end rounds a 16-bit gradient afterwards), so its
// sums always accumulate in float or double.

// The products must round before they are summed, as interpolate's composed form (and PyTorch's
// CPU kernels) round them: -march=native would otherwise let the compiler fuse them into FMAs.
#if defined(__clang__)
#pragma clang fp contract(off)
#elif defined(__GNUC__)
#pragma GCC optimize("fp-contract=off")
#endif

#include <algorithm>
#include <cstdint>
#include <cstring>
#include <span>
#include <type_traits>
#include <vector>

#include "backend/cpu/cpu_backend.h"
#include "backend/cpu/dispatch.h"
#include "base/parallel.h"
#include "core/check.h"
#include "kernels/resample_ops.h"

namespace ember::cpu {
namespace {

using kernels::kMaxResampleDims;
using kernels::resample_product;

// One resized dimension's table, copied into contiguous host arrays (and checked) once per call.
template <typename C>
struct AxisTable {
  std::vector<int64_t> index;  // [taps, out]
  std::vector<C> weight;       // [taps, out], empty for one tap of weight 1
  int64_t taps = 1, in = 1, out = 1;

  const int64_t* tap_index(int64_t t) const { return index.data() + t * out; }
  const C* tap_weight(int64_t t) const { return weight.data() + t * out; }
  bool weighted() const { return !weight.empty(); }
};

struct Geometry {
  int dims = 0;
  int64_t planes = 1;
  int64_t in[kMaxResampleDims] = {}, out[kMaxResampleDims] = {};
  int64_t in_plane = 1, out_plane = 1;
};

Dtype computation_dtype(Dtype dtype) { return dtype == kFloat64 ? kFloat64 : kFloat32; }

// The sizes of x (input side) and y (output side) and the tables' shapes agree; returns the plane
// geometry. `op` names the entry point in the messages.
Geometry check_geometry(const char* op, const TensorView& x, const TensorView& y, std::span<const TensorView> index,
                        std::span<const TensorView> weight) {
  const int64_t k = static_cast<int64_t>(index.size());
  EMBER_CHECK(k >= 1 && k <= kMaxResampleDims && weight.size() == index.size(), "[", op,
              "] takes 1 to 3 resized dimensions, each with an index and a weight view");
  EMBER_CHECK(x.ndim() == y.ndim() && x.ndim() >= k, "[", op, "] input and output ranks differ");
  EMBER_CHECK(x.is_contiguous() && y.is_contiguous(), "[", op, "] expects contiguous tensors");
  Geometry g;
  g.dims = static_cast<int>(k);
  const int64_t lead = x.ndim() - k;
  for (int64_t d = 0; d < lead; ++d) {
    EMBER_CHECK(x.sizes[d] == y.sizes[d], "[", op, "] input and output differ outside the resized dimensions");
    g.planes *= x.sizes[d];
  }
  for (int64_t i = 0; i < k; ++i) {
    g.in[i] = x.sizes[lead + i];
    g.out[i] = y.sizes[lead + i];
    g.in_plane *= g.in[i];
    g.out_plane *= g.out[i];
    const TensorView& idx = index[static_cast<size_t>(i)];
    EMBER_CHECK(idx.dtype == kInt64 && idx.ndim() == 2 && idx.sizes[0] >= 1 && idx.sizes[1] == g.out[i], "[", op,
                "] index ", i, " must be an int64 [taps, ", g.out[i], "] view");
    const TensorView& w = weight[static_cast<size_t>(i)];
    EMBER_CHECK(
        w.data == nullptr ? idx.sizes[0] == 1 : (w.ndim() == 2 && w.sizes[0] == idx.sizes[0] && w.sizes[1] == g.out[i]),
        "[", op, "] weight ", i, " must match index ", i, "'s [taps, out] shape (or be absent for one tap)");
  }
  return g;
}

template <typename C>
std::vector<AxisTable<C>> read_tables(const char* op, const Geometry& g, std::span<const TensorView> index,
                                      std::span<const TensorView> weight, Dtype compute) {
  std::vector<AxisTable<C>> tables(static_cast<size_t>(g.dims));
  for (int i = 0; i < g.dims; ++i) {
    AxisTable<C>& a = tables[static_cast<size_t>(i)];
    const TensorView& idx = index[static_cast<size_t>(i)];
    const TensorView& w = weight[static_cast<size_t>(i)];
    a.taps = idx.sizes[0];
    a.in = g.in[i];
    a.out = g.out[i];
    a.index.resize(static_cast<size_t>(a.taps * a.out));
    const int64_t* src = idx.ptr<const int64_t>();
    for (int64_t t = 0; t < a.taps; ++t) {
      for (int64_t j = 0; j < a.out; ++j) {
        const int64_t v = src[t * idx.strides[0] + j * idx.strides[1]];
        EMBER_CHECK(v >= 0 && v < a.in, "[", op, "] index ", v, " is out of bounds for a dimension of size ", a.in);
        a.index[static_cast<size_t>(t * a.out + j)] = v;
      }
    }
    if (w.data == nullptr) continue;
    EMBER_CHECK(w.dtype == compute, "[", op, "] weight ", i, " must be ", dtype_name(compute));
    a.weight.resize(a.index.size());
    const C* ws = w.ptr<const C>();
    for (int64_t t = 0; t < a.taps; ++t) {
      for (int64_t j = 0; j < a.out; ++j)
        a.weight[static_cast<size_t>(t * a.out + j)] = ws[t * w.strides[0] + j * w.strides[1]];
    }
  }
  return tables;
}

template <typename D, typename C>
inline D store_as(C v) {
  if constexpr (std::is_same_v<D, C>) {
    return v;
  } else {
    return static_cast<D>(v);
  }
}

// ---- forward passes -------------------------------------------------------------------------------

// Along the last dimension: dst[r, j] = sum_t w_t[j] * src[r, index_t[j]] over `rows` rows.
template <typename Src, typename Dst, typename C>
void combine_last(const Src* src, Dst* dst, int64_t rows, const AxisTable<C>& a) {
  const int64_t* i0 = a.tap_index(0);
  for (int64_t r = 0; r < rows; ++r) {
    const Src* s = src + r * a.in;
    Dst* d = dst + r * a.out;
    if (!a.weighted()) {
      for (int64_t j = 0; j < a.out; ++j) d[j] = store_as<Dst>(static_cast<C>(s[i0[j]]));
    } else if (a.taps == 2) {
      const int64_t* i1 = a.tap_index(1);
      const C *w0 = a.tap_weight(0), *w1 = a.tap_weight(1);
      for (int64_t j = 0; j < a.out; ++j) {
        d[j] = store_as<Dst>(resample_product(static_cast<C>(s[i0[j]]), w0[j]) +
                             resample_product(static_cast<C>(s[i1[j]]), w1[j]));
      }
    } else {
      for (int64_t j = 0; j < a.out; ++j) {
        C acc = resample_product(static_cast<C>(s[i0[j]]), a.tap_weight(0)[j]);
        for (int64_t t = 1; t < a.taps; ++t)
          acc = acc + resample_product(static_cast<C>(s[a.tap_index(t)[j]]), a.tap_weight(t)[j]);
        d[j] = store_as<Dst>(acc);
      }
    }
  }
}

// Along an earlier dimension: src is [prefix, in, inner], dst [prefix, out, inner]; each output
// row is the weighted sum of whole input rows.
template <typename Src, typename Dst, typename C>
void combine_outer(const Src* src, Dst* dst, int64_t prefix, int64_t inner, const AxisTable<C>& a) {
  for (int64_t p = 0; p < prefix; ++p) {
    const Src* base = src + p * a.in * inner;
    for (int64_t j = 0; j < a.out; ++j) {
      Dst* __restrict d = dst + (p * a.out + j) * inner;
      const Src* __restrict r0 = base + a.tap_index(0)[j] * inner;
      if (!a.weighted()) {
        for (int64_t i = 0; i < inner; ++i) d[i] = store_as<Dst>(static_cast<C>(r0[i]));
      } else if (a.taps == 2) {
        const Src* __restrict r1 = base + a.tap_index(1)[j] * inner;
        const C w0 = a.tap_weight(0)[j], w1 = a.tap_weight(1)[j];
        for (int64_t i = 0; i < inner; ++i) {
          d[i] =
              store_as<Dst>(resample_product(static_cast<C>(r0[i]), w0) + resample_product(static_cast<C>(r1[i]), w1));
        }
      } else if (a.taps == 4) {
        const Src* __restrict r1 = base + a.tap_index(1)[j] * inner;
        const Src* __restrict r2 = base + a.tap_index(2)[j] * inner;
        const Src* __restrict r3 = base + a.tap_index(3)[j] * inner;
        const C w0 = a.tap_weight(0)[j], w1 = a.tap_weight(1)[j], w2 = a.tap_weight(2)[j], w3 = a.tap_weight(3)[j];
        for (int64_t i = 0; i < inner; ++i) {
          const C s01 = resample_product(static_cast<C>(r0[i]), w0) + resample_product(static_cast<C>(r1[i]), w1);
          const C s012 = s01 + resample_product(static_cast<C>(r2[i]), w2);
          d[i] = store_as<Dst>(s012 + resample_product(static_cast<C>(r3[i]), w3));
        }
      } else {
        for (int64_t i = 0; i < inner; ++i) {
          C acc = resample_product(static_cast<C>(r0[i]), a.tap_weight(0)[j]);
          for (int64_t t = 1; t < a.taps; ++t) {
            acc = acc + resample_product(static_cast<C>(base[a.tap_index(t)[j] * inner + i]), a.tap_weight(t)[j]);
          }
          d[i] = store_as<Dst>(acc);
        }
      }
    }
  }
}

// The nearest modes: every output element is one input element, so gather in the storage type.
// An output row that reads the same input row as the previous one is a copy of it.
template <typename S, typename C>
void gather_plane(const S* x, S* y, const Geometry& g, const std::vector<AxisTable<C>>& tables) {
  const int k = g.dims;
  const AxisTable<C>& last = tables[static_cast<size_t>(k - 1)];
  const int64_t* cols = last.tap_index(0);
  const int64_t rows = g.out_plane / last.out;
  int64_t previous = -1;
  for (int64_t r = 0; r < rows; ++r) {
    // The input row that output row r reads: its positions in the earlier dimensions.
    int64_t rest = r, source = 0, stride = 1;
    for (int d = k - 2; d >= 0; --d) {
      const AxisTable<C>& a = tables[static_cast<size_t>(d)];
      source += a.tap_index(0)[rest % a.out] * stride;
      rest /= a.out;
      stride *= a.in;
    }
    S* d = y + r * last.out;
    if (source == previous) {
      std::memcpy(d, d - last.out, static_cast<size_t>(last.out) * sizeof(S));
      continue;
    }
    const S* s = x + source * last.in;
    for (int64_t j = 0; j < last.out; ++j) d[j] = s[cols[j]];
    previous = source;
  }
}

// Buffer elements the forward pass needs between passes: after the last dimension's pass and
// after each earlier one but the final (which writes the output).
int64_t forward_buffer(const Geometry& g) {
  int64_t most = 0, in_before = g.in_plane, out_after = 1;
  for (int d = g.dims - 1; d >= 1; --d) {
    in_before /= g.in[d];
    out_after *= g.out[d];
    most = std::max(most, in_before * out_after);
  }
  return most;
}

template <typename S, typename C>
void forward_plane(const S* x, S* y, const Geometry& g, const std::vector<AxisTable<C>>& tables, C* buf0, C* buf1) {
  const int k = g.dims;
  const AxisTable<C>& last = tables[static_cast<size_t>(k - 1)];
  if (k == 1) {
    combine_last<S, S, C>(x, y, 1, last);
    return;
  }
  int64_t prefix = g.in_plane / g.in[k - 1];  // rows of the input over the earlier dimensions
  combine_last<S, C, C>(x, buf0, prefix, last);
  int64_t inner = g.out[k - 1];
  C* current = buf0;
  C* spare = buf1;
  for (int d = k - 2; d >= 0; --d) {
    const AxisTable<C>& a = tables[static_cast<size_t>(d)];
    prefix /= g.in[d];
    if (d == 0) {
      combine_outer<C, S, C>(current, y, prefix, inner, a);
    } else {
      combine_outer<C, C, C>(current, spare, prefix, inner, a);
      std::swap(current, spare);
    }
    inner *= g.out[d];
  }
}

// ---- backward passes ------------------------------------------------------------------------------

// The transpose of combine_outer: src [prefix, out, inner], dst [prefix, in, inner] (zeroed here).
template <typename Src, typename C>
void spread_outer(const Src* src, C* dst, int64_t prefix, int64_t inner, const AxisTable<C>& a) {
  std::fill(dst, dst + prefix * a.in * inner, C(0));
  for (int64_t p = 0; p < prefix; ++p) {
    C* base = dst + p * a.in * inner;
    for (int64_t j = 0; j < a.out; ++j) {
      const Src* __restrict s = src + (p * a.out + j) * inner;
      for (int64_t t = 0; t < a.taps; ++t) {
        C* __restrict d = base + a.tap_index(t)[j] * inner;
        if (!a.weighted()) {
          for (int64_t i = 0; i < inner; ++i) d[i] = d[i] + static_cast<C>(s[i]);
        } else {
          const C w = a.tap_weight(t)[j];
          for (int64_t i = 0; i < inner; ++i) d[i] = d[i] + resample_product(static_cast<C>(s[i]), w);
        }
      }
    }
  }
}

// The transpose of combine_last: src [rows, out], dst [rows, in] (zeroed here).
template <typename Src, typename C>
void spread_last(const Src* src, C* dst, int64_t rows, const AxisTable<C>& a) {
  std::fill(dst, dst + rows * a.in, C(0));
  for (int64_t r = 0; r < rows; ++r) {
    const Src* s = src + r * a.out;
    C* d = dst + r * a.in;
    for (int64_t t = 0; t < a.taps; ++t) {
      const int64_t* it = a.tap_index(t);
      if (!a.weighted()) {
        for (int64_t j = 0; j < a.out; ++j) d[it[j]] += static_cast<C>(s[j]);
      } else {
        const C* wt = a.tap_weight(t);
        for (int64_t j = 0; j < a.out; ++j) d[it[j]] += resample_product(static_cast<C>(s[j]), wt[j]);
      }
    }
  }
}

// Buffer elements between the backward passes: after each earlier dimension's transpose.
int64_t backward_buffer(const Geometry& g) {
  int64_t most = 0, in_before = 1, out_after = g.out_plane;
  for (int d = 0; d + 1 < g.dims; ++d) {
    in_before *= g.in[d];
    out_after /= g.out[d];
    most = std::max(most, in_before * out_after);
  }
  return most;
}

template <typename S, typename C>
void backward_plane(const S* gy, C* gx, const Geometry& g, const std::vector<AxisTable<C>>& tables, C* buf0, C* buf1) {
  const int k = g.dims;
  const AxisTable<C>& last = tables[static_cast<size_t>(k - 1)];
  if (k == 1) {
    spread_last<S, C>(gy, gx, 1, last);
    return;
  }
  int64_t prefix = 1, inner = g.out_plane / g.out[0];
  spread_outer<S, C>(gy, buf0, prefix, inner, tables[0]);
  C* current = buf0;
  C* spare = buf1;
  for (int d = 1; d + 1 < k; ++d) {
    prefix *= g.in[d - 1];
    inner /= g.out[d];
    spread_outer<C, C>(current, spare, prefix, inner, tables[static_cast<size_t>(d)]);
    std::swap(current, spare);
  }
  spread_last<C, C>(current, gx, g.in_plane / g.in[k - 1], last);
}

// Planes per task: enough elements that a task is worth a thread.
int64_t plane_grain(const Geometry& g) {
  return std::max<int64_t>(1, base::kGrainSize / std::max<int64_t>(1, g.out_plane));
}

template <typename S>
void resample_typed(const TensorView& x, std::span<const TensorView> index, std::span<const TensorView> weight,
                    const TensorView& out, const Geometry& g) {
  using C = std::conditional_t<std::is_same_v<S, double>, double, float>;
  const std::vector<AxisTable<C>> tables = read_tables<C>("resample", g, index, weight, computation_dtype(x.dtype));
  const bool weighted = std::any_of(tables.begin(), tables.end(), [](const AxisTable<C>& a) { return a.weighted(); });
  if constexpr (std::is_same_v<S, uint8_t>) {
    EMBER_CHECK(!weighted, "[resample] uint8 takes the nearest modes only (no weights)");
  }
  const S* xs = x.ptr<const S>();
  S* ys = out.ptr<S>();
  const int64_t buffer = weighted ? forward_buffer(g) : 0;
  base::parallel_for(g.planes, plane_grain(g), [&](int64_t begin, int64_t end) {
    std::vector<C> buf0(static_cast<size_t>(buffer)), buf1(static_cast<size_t>(buffer));
    for (int64_t p = begin; p < end; ++p) {
      const S* xp = xs + p * g.in_plane;
      S* yp = ys + p * g.out_plane;
      if (!weighted) {
        gather_plane<S, C>(xp, yp, g, tables);
      } else if constexpr (!std::is_same_v<S, uint8_t>) {
        forward_plane<S, C>(xp, yp, g, tables, buf0.data(), buf1.data());
      }
    }
  });
}

template <typename S>
void resample_backward_typed(const TensorView& grad_out, std::span<const TensorView> index,
                             std::span<const TensorView> weight, const TensorView& grad_x, const Geometry& g) {
  using C = std::conditional_t<std::is_same_v<S, double>, double, float>;
  const std::vector<AxisTable<C>> tables =
      read_tables<C>("resample_backward", g, index, weight, computation_dtype(grad_out.dtype));
  const S* gys = grad_out.ptr<const S>();
  C* gxs = grad_x.ptr<C>();
  const int64_t buffer = backward_buffer(g);
  base::parallel_for(g.planes, plane_grain(g), [&](int64_t begin, int64_t end) {
    std::vector<C> buf0(static_cast<size_t>(buffer)), buf1(static_cast<size_t>(buffer));
    for (int64_t p = begin; p < end; ++p) {
      backward_plane<S, C>(gys + p * g.out_plane, gxs + p * g.in_plane, g, tables, buf0.data(), buf1.data());
    }
  });
}

}  // namespace

void CpuBackend::resample(const TensorView& x, std::span<const TensorView> index, std::span<const TensorView> weight,
                          const TensorView& out) {
  EMBER_CHECK(x.dtype == out.dtype, "[resample] input and output dtypes differ");
  const Geometry g = check_geometry("resample", x, out, index, weight);
  if (out.numel() == 0) return;
  EMBER_CHECK(x.numel() > 0, "[resample] an empty input cannot fill a non-empty output");
  if (x.dtype == kUInt8) {
    resample_typed<uint8_t>(x, index, weight, out, g);
    return;
  }
  dispatch_floating(x.dtype, "resample", [&]<typename S>() { resample_typed<S>(x, index, weight, out, g); });
}

void CpuBackend::resample_backward(const TensorView& grad_out, std::span<const TensorView> index,
                                   std::span<const TensorView> weight, const TensorView& grad_x) {
  EMBER_CHECK(grad_x.dtype == computation_dtype(grad_out.dtype), "[resample_backward] grad_x must be ",
              dtype_name(computation_dtype(grad_out.dtype)), " for a ", dtype_name(grad_out.dtype), " gradient");
  const Geometry g = check_geometry("resample_backward", grad_x, grad_out, index, weight);
  if (grad_x.numel() == 0) return;
  if (grad_out.numel() == 0) {
    std::memset(grad_x.data, 0, static_cast<size_t>(grad_x.numel()) * element_size(grad_x.dtype));
    return;
  }
  dispatch_floating(grad_out.dtype, "resample_backward",
                    [&]<typename S>() { resample_backward_typed<S>(grad_out, index, weight, grad_x, g); });
}

}  // namespace ember::cpu
