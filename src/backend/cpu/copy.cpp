// CPU copy (with dtype conversion and any strides) and fill.
//
// Same-dtype copies move bytes: memcpy when both sides are contiguous, otherwise the strided
// loops below over an unsigned type of the element's width. Conversions instantiate one loop
// per (destination, source) pair, with kernels::convert doing the element conversion exactly
// as PyTorch's CPU copy does (see its comment). Strided operands are walked with
// kernels::StridedIndexer in the destination's memory order; when that leaves the source
// transposed (e.g. x.t().contiguous()), the last two dimensions are copied in square tiles,
// so that each cache line and page of the source is used fully before it is evicted.
#include <algorithm>
#include <array>
#include <cstring>

#include "backend/cpu/cpu_backend.h"
#include "backend/cpu/dispatch.h"
#include "base/parallel.h"
#include "core/check.h"
#include "kernels/elementwise_ops.h"
#include "kernels/indexer.h"
#include "kernels/scalar_as.h"

namespace ember::cpu {
namespace {

using Indexer2 = kernels::StridedIndexer<2, kernels::kMaxInputDims>;

/// Tile edge for transposing copies: 32 x 32 elements of up to 8 bytes span 32 source cache
/// lines of 64 bytes (or fewer), which stay in L1 while the tile is written.
constexpr int64_t kTile = 32;

/// Strides that make `src` read as if it had `dst_sizes` (standard broadcasting: missing
/// leading dimensions and size-1 dimensions get stride 0).
Dims broadcast_strides(const TensorView& src, const Dims& dst_sizes) {
  const int64_t nd = static_cast<int64_t>(dst_sizes.size());
  const int64_t lead = nd - src.ndim();
  EMBER_CHECK(lead >= 0, "copy: source of shape ", detail::shape_str(src.sizes),
              " cannot be broadcast to destination shape ", detail::shape_str(dst_sizes));
  Dims strides(static_cast<size_t>(nd), 0);
  for (int64_t d = 0; d < src.ndim(); ++d) {
    const int64_t size = src.sizes[d];
    EMBER_CHECK(size == dst_sizes[d + lead] || size == 1, "copy: source of shape ", detail::shape_str(src.sizes),
                " cannot be broadcast to destination shape ", detail::shape_str(dst_sizes));
    strides[d + lead] = size == 1 ? 0 : src.strides[d];
  }
  return strides;
}

/// 1 if (sizes, strides) is contiguous, 0 if all its elements are one element, -1 otherwise.
int64_t flat_stride(const Dims& sizes, const int64_t* strides) {
  bool contiguous = true;
  bool all_zero = true;
  int64_t expected = 1;
  for (size_t d = sizes.size(); d-- > 0;) {
    if (sizes[d] == 1) continue;
    contiguous = contiguous && strides[d] == expected;
    all_zero = all_zero && strides[d] == 0;
    expected *= sizes[d];
  }
  return contiguous ? 1 : (all_zero ? 0 : -1);
}

/// dst[i * sd] = convert<D>(src[i * ss]) for i < n, with the stride patterns that vectorise
/// spelled out.
template <typename D, typename S>
void convert_run(D* d, int64_t sd, const S* s, int64_t ss, int64_t n) {
  if (sd == 1 && ss == 1) {
    for (int64_t i = 0; i < n; ++i) d[i] = kernels::convert<D>(s[i]);
  } else if (sd == 1 && ss == 0) {
    std::fill_n(d, n, kernels::convert<D>(s[0]));
  } else {
    for (int64_t i = 0; i < n; ++i) d[i * sd] = kernels::convert<D>(s[i * ss]);
  }
}

/// The transposing case: the last two (simplified) dimensions are copied tile by tile.
/// Work is split over (outer index, tile row) pairs.
template <typename D, typename S>
void convert_tiled(const Indexer2& ix, D* dp, const S* sp) {
  const int nd = ix.ndim;
  const int64_t rows = ix.sizes[nd - 2];
  const int64_t cols = ix.sizes[nd - 1];
  const int64_t d_row = ix.strides[0][nd - 2], d_col = ix.strides[0][nd - 1];
  const int64_t s_row = ix.strides[1][nd - 2], s_col = ix.strides[1][nd - 1];
  int64_t outer = 1;
  for (int d = 0; d < nd - 2; ++d) outer *= ix.sizes[d];
  const int64_t row_tiles = (rows + kTile - 1) / kTile;
  const int64_t grain = std::max<int64_t>(1, base::kGrainSize / (kTile * cols));
  base::parallel_for(outer * row_tiles, grain, [&](int64_t begin, int64_t end) {
    for (int64_t item = begin; item < end; ++item) {
      int64_t o = item / row_tiles;
      const int64_t r0 = (item - o * row_tiles) * kTile;
      int64_t d_base = 0, s_base = 0;
      for (int d = nd - 3; d >= 0; --d) {
        const int64_t i = o % ix.sizes[d];
        o /= ix.sizes[d];
        d_base += i * ix.strides[0][d];
        s_base += i * ix.strides[1][d];
      }
      const int64_t r1 = std::min(rows, r0 + kTile);
      for (int64_t c0 = 0; c0 < cols; c0 += kTile) {
        const int64_t c1 = std::min(cols, c0 + kTile);
        for (int64_t r = r0; r < r1; ++r) {
          convert_run(dp + d_base + r * d_row + c0 * d_col, d_col, sp + s_base + r * s_row + c0 * s_col, s_col,
                      c1 - c0);
        }
      }
    }
  });
}

/// dst = convert<D>(src) over any strides (src_strides already aligned to dst's sizes).
template <typename D, typename S>
void convert_copy(const TensorView& dst, const void* src_data, const int64_t* src_strides) {
  D* dp = dst.ptr<D>();
  const S* sp = static_cast<const S*>(src_data);
  const int64_t numel = dst.numel();
  const int64_t flat_src = flat_stride(dst.sizes, src_strides);
  if (flat_src >= 0 && dst.is_contiguous()) {
    base::parallel_for(numel, base::kGrainSize, [&](int64_t begin, int64_t end) {
      convert_run(dp + begin, 1, sp + begin * flat_src, flat_src, end - begin);
    });
    return;
  }

  Indexer2 ix;
  const int64_t* strides[2] = {dst.strides.data(), src_strides};
  EMBER_CHECK(ix.build(dst.ndim(), dst.sizes.data(), strides, /*memory_order=*/true),
              "copy: too many non-mergeable dimensions in shape ", detail::shape_str(dst.sizes));
  const int nd = ix.ndim;
  // After sorting by the destination's strides, a source that is contiguous along the
  // next-to-last dimension but not the last one is a transpose of the destination.
  if (nd >= 2 && ix.strides[1][nd - 2] == 1 && ix.strides[1][nd - 1] != 1 && ix.sizes[nd - 1] >= 8 &&
      ix.sizes[nd - 2] >= 8) {
    convert_tiled<D, S>(ix, dp, sp);
    return;
  }
  const int64_t sd = ix.inner_stride(0), ss = ix.inner_stride(1);
  base::parallel_for(numel, base::kGrainSize, [&](int64_t begin, int64_t end) {
    kernels::for_each_row(ix, begin, end,
                          [&](const int64_t* off, int64_t n) { convert_run(dp + off[0], sd, sp + off[1], ss, n); });
  });
}

/// Contiguous same-dtype copy: memcpy in chunks spread over the threads (memmove when the
/// ranges overlap, which only a single pass can do correctly).
void copy_bytes(void* dst, const void* src, int64_t numel, size_t element_bytes) {
  if (dst == src) return;
  const size_t nbytes = static_cast<size_t>(numel) * element_bytes;
  auto* d = static_cast<char*>(dst);
  const auto* s = static_cast<const char*>(src);
  if (d < s + nbytes && s < d + nbytes) {
    std::memmove(d, s, nbytes);
    return;
  }
  base::parallel_for(numel, base::kGrainSize, [&](int64_t begin, int64_t end) {
    std::memcpy(d + static_cast<size_t>(begin) * element_bytes, s + static_cast<size_t>(begin) * element_bytes,
                static_cast<size_t>(end - begin) * element_bytes);
  });
}

/// Writes `bits` into every element of `out`, any strides.
template <typename U>
void fill_bits(const TensorView& out, U bits) {
  U* op = out.ptr<U>();
  const int64_t numel = out.numel();
  if (out.is_contiguous()) {
    base::parallel_for(numel, base::kGrainSize,
                       [&](int64_t begin, int64_t end) { std::fill_n(op + begin, end - begin, bits); });
    return;
  }
  kernels::StridedIndexer<1, kernels::kMaxInputDims> ix;
  const int64_t* strides[1] = {out.strides.data()};
  EMBER_CHECK(ix.build(out.ndim(), out.sizes.data(), strides, /*memory_order=*/true),
              "fill: too many non-mergeable dimensions in shape ", detail::shape_str(out.sizes));
  const int64_t so = ix.inner_stride(0);
  base::parallel_for(numel, base::kGrainSize, [&](int64_t begin, int64_t end) {
    kernels::for_each_row(ix, begin, end, [&](const int64_t* off, int64_t n) {
      U* o = op + off[0];
      for (int64_t i = 0; i < n; ++i) o[i * so] = bits;
    });
  });
}

template <typename T, typename U>
U bits_of(T v) {
  static_assert(sizeof(T) == sizeof(U));
  U u;
  std::memcpy(&u, &v, sizeof u);
  return u;
}

}  // namespace

void CpuBackend::copy(const TensorView& dst, const TensorView& src) {
  // Usually the front end has expanded src already; if not, broadcast it here.
  Dims aligned;
  const int64_t* src_strides = src.strides.data();
  if (!(src.sizes == dst.sizes)) {
    aligned = broadcast_strides(src, dst.sizes);
    src_strides = aligned.data();
  }
  if (dst.numel() == 0) return;

  if (dst.dtype == src.dtype) {
    const size_t width = element_size(dst.dtype);
    if (dst.is_contiguous() && flat_stride(dst.sizes, src_strides) == 1) {
      copy_bytes(dst.data, src.data, dst.numel(), width);
      return;
    }
    switch (width) {
      case 1:
        return convert_copy<uint8_t, uint8_t>(dst, src.data, src_strides);
      case 2:
        return convert_copy<uint16_t, uint16_t>(dst, src.data, src_strides);
      case 4:
        return convert_copy<uint32_t, uint32_t>(dst, src.data, src_strides);
      case 8:
        return convert_copy<uint64_t, uint64_t>(dst, src.data, src_strides);
      default:
        break;
    }
    detail::fail("copy: unsupported dtype ", dtype_name(dst.dtype));
  }

  dispatch_all(dst.dtype, "copy", [&]<typename D>() {
    dispatch_all(src.dtype, "copy", [&]<typename S>() {
      if constexpr (!std::is_same_v<D, S>) convert_copy<D, S>(dst, src.data, src_strides);
    });
  });
}

void CpuBackend::fill(const TensorView& out, const Scalar& value) {
  if (out.numel() == 0) return;
  dispatch_all(out.dtype, "fill", [&]<typename T>() {
    const T v = kernels::scalar_as<T>(value);
    // Fill by bit pattern: one loop per element width serves all ten dtypes.
    if constexpr (sizeof(T) == 1) {
      fill_bits(out, bits_of<T, uint8_t>(v));
    } else if constexpr (sizeof(T) == 2) {
      fill_bits(out, bits_of<T, uint16_t>(v));
    } else if constexpr (sizeof(T) == 4) {
      fill_bits(out, bits_of<T, uint32_t>(v));
    } else {
      fill_bits(out, bits_of<T, uint64_t>(v));
    }
  });
}

}  // namespace ember::cpu
