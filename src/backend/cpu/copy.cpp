// CPU copy (with dtype conversion and any strides) and fill.
//
// Same-dtype copies move bytes: memcpy when both sides are contiguous, otherwise a strided
// loop over an unsigned type of the element's width. Conversions instantiate one loop per
// (destination, source) pair, with kernels::convert doing the element conversion exactly as
// PyTorch's CPU copy does (see its comment). Strided operands are walked with
// kernels::StridedIndexer in the destination's memory order.
#include <algorithm>
#include <array>
#include <cstring>

#include "backend/cpu/cpu_backend.h"
#include "backend/cpu/dispatch.h"
#include "backend/cpu/parallel.h"
#include "core/check.h"
#include "kernels/elementwise_ops.h"
#include "kernels/indexer.h"

namespace ember::cpu {
namespace {

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
  for (int64_t d = static_cast<int64_t>(sizes.size()) - 1; d >= 0; --d) {
    if (sizes[d] == 1) continue;
    contiguous = contiguous && strides[d] == expected;
    all_zero = all_zero && strides[d] == 0;
    expected *= sizes[d];
  }
  return contiguous ? 1 : (all_zero ? 0 : -1);
}

/// Calls row(offsets, strides, count) over every element of `sizes` for N operands with the
/// given strides (operand 0 is the one written), in parallel for large work.
template <int N, typename Row>
void for_each_element(const Dims& sizes, const std::array<const int64_t*, N>& strides, const Row& row) {
  int64_t numel = 1;
  for (int64_t s : sizes) numel *= s;
  if (numel == 0) return;

  int64_t flat[N];
  bool flat_ok = true;
  for (int k = 0; k < N; ++k) {
    flat[k] = flat_stride(sizes, strides[k]);
    flat_ok = flat_ok && flat[k] >= 0;
  }
  if (flat_ok && flat[0] == 1) {
    parallel_for(numel, kGrainSize, [&](int64_t begin, int64_t end) {
      int64_t off[N];
      for (int k = 0; k < N; ++k) off[k] = begin * flat[k];
      row(static_cast<const int64_t*>(off), static_cast<const int64_t*>(flat), end - begin);
    });
    return;
  }
  kernels::StridedIndexer<N, kernels::kMaxInputDims> ix;
  EMBER_CHECK(ix.build(static_cast<int64_t>(sizes.size()), sizes.data(), strides.data(), /*memory_order=*/true),
              "copy: too many non-mergeable dimensions in shape ", detail::shape_str(sizes));
  int64_t inner[N];
  for (int k = 0; k < N; ++k) inner[k] = ix.inner_stride(k);
  parallel_for(numel, kGrainSize, [&](int64_t begin, int64_t end) {
    kernels::for_each_row(ix, begin, end, [&](const int64_t* off, int64_t count) { row(off, inner, count); });
  });
}

/// dst[i] = convert<D>(src[i]) over strided views; D == S copies.
template <typename D, typename S>
void convert_loop(const TensorView& dst, const void* src_data, const int64_t* src_strides) {
  D* dp = dst.ptr<D>();
  const S* sp = static_cast<const S*>(src_data);
  for_each_element<2>(dst.sizes, {dst.strides.data(), src_strides},
                      [=](const int64_t* off, const int64_t* st, int64_t n) {
                        D* d = dp + off[0];
                        const S* s = sp + off[1];
                        if (st[0] == 1 && st[1] == 1) {
                          for (int64_t i = 0; i < n; ++i) d[i] = kernels::convert<D>(s[i]);
                        } else if (st[0] == 1 && st[1] == 0) {
                          std::fill_n(d, n, kernels::convert<D>(s[0]));
                        } else {
                          for (int64_t i = 0; i < n; ++i) d[i * st[0]] = kernels::convert<D>(s[i * st[1]]);
                        }
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
  parallel_for(numel, kGrainSize, [&](int64_t begin, int64_t end) {
    std::memcpy(d + static_cast<size_t>(begin) * element_bytes, s + static_cast<size_t>(begin) * element_bytes,
                static_cast<size_t>(end - begin) * element_bytes);
  });
}

/// `value` as an element of type T, converted like an element of its own kind would be.
template <typename T>
T scalar_as(const Scalar& value) {
  switch (value.kind()) {
    case Scalar::Kind::Bool: return kernels::convert<T>(value.to_bool());
    case Scalar::Kind::Int: return kernels::convert<T>(value.to_int64());
    case Scalar::Kind::Float: break;
  }
  return kernels::convert<T>(value.to_double());
}

template <typename U>
void fill_loop(const TensorView& out, U bits) {
  U* op = out.ptr<U>();
  for_each_element<1>(out.sizes, {out.strides.data()}, [=](const int64_t* off, const int64_t* st, int64_t n) {
    U* o = op + off[0];
    if (st[0] == 1) {
      std::fill_n(o, n, bits);
    } else {
      for (int64_t i = 0; i < n; ++i) o[i * st[0]] = bits;
    }
  });
}

}  // namespace

void CpuBackend::copy(const TensorView& dst, const TensorView& src) {
  if (dst.numel() == 0) return;
  // Usually the front end has expanded src already; if not, broadcast it here.
  Dims aligned;
  const int64_t* src_strides = src.strides.data();
  if (!(src.sizes == dst.sizes)) {
    aligned = broadcast_strides(src, dst.sizes);
    src_strides = aligned.data();
  }

  if (dst.dtype == src.dtype) {
    const size_t width = element_size(dst.dtype);
    if (dst.is_contiguous() && flat_stride(dst.sizes, src_strides) == 1) {
      copy_bytes(dst.data, src.data, dst.numel(), width);
      return;
    }
    switch (width) {
      case 1: return convert_loop<uint8_t, uint8_t>(dst, src.data, src_strides);
      case 2: return convert_loop<uint16_t, uint16_t>(dst, src.data, src_strides);
      case 4: return convert_loop<uint32_t, uint32_t>(dst, src.data, src_strides);
      case 8: return convert_loop<uint64_t, uint64_t>(dst, src.data, src_strides);
      default: break;
    }
    detail::fail("copy: unsupported dtype ", dtype_name(dst.dtype));
  }

  dispatch_all(dst.dtype, "copy", [&]<typename D>() {
    dispatch_all(src.dtype, "copy", [&]<typename S>() {
      if constexpr (!std::is_same_v<D, S>) convert_loop<D, S>(dst, src.data, src_strides);
    });
  });
}

void CpuBackend::fill(const TensorView& out, const Scalar& value) {
  if (out.numel() == 0) return;
  dispatch_all(out.dtype, "fill", [&]<typename T>() {
    const T v = scalar_as<T>(value);
    // Fill by bit pattern: one loop per element width serves all ten dtypes.
    if constexpr (sizeof(T) == 1) {
      uint8_t bits;
      std::memcpy(&bits, &v, 1);
      fill_loop<uint8_t>(out, bits);
    } else if constexpr (sizeof(T) == 2) {
      uint16_t bits;
      std::memcpy(&bits, &v, 2);
      fill_loop<uint16_t>(out, bits);
    } else if constexpr (sizeof(T) == 4) {
      uint32_t bits;
      std::memcpy(&bits, &v, 4);
      fill_loop<uint32_t>(out, bits);
    } else {
      static_assert(sizeof(T) == 8);
      uint64_t bits;
      std::memcpy(&bits, &v, 8);
      fill_loop<uint64_t>(out, bits);
    }
  });
}

}  // namespace ember::cpu
