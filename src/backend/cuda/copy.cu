// CUDA copy (with dtype conversion and any strides) and fill.
//
// A same-dtype copy between contiguous views is one cudaMemcpyAsync (two, through a temporary,
// when the views overlap); other same-dtype copies move elements as unsigned integers of the
// element's width (4 instantiations serve 10 dtypes); conversions go through kernels::convert,
// the CPU's conversion, so both devices round alike.
#include <cstdint>
#include <cstring>
#include <type_traits>

#include "backend/cuda/copy_plan.h"
#include "backend/cuda/cuda_backend.h"
#include "backend/cuda/elementwise.cuh"
#include "kernels/dtype_dispatch.h"
#include "kernels/elementwise_ops.h"
#include "kernels/scalar_as.h"

namespace ember::cuda_impl {

namespace {

template <typename D, typename S>
struct ConvertBody {
  D* dst;
  const S* src;
  __device__ void operator()(const Offsets<2>& o) const { dst[o[0]] = kernels::convert<D>(src[o[1]]); }
};

template <typename U>
struct FillBody {
  U* out;
  U bits;
  __device__ void operator()(const Offsets<1>& o) const { out[o[0]] = bits; }
};

/// The strides that read `src` as if it had `sizes` (standard broadcasting), so copy accepts a
/// source the front end did not expand, as the CPU backend does.
TensorView broadcast_to(const TensorView& src, const Dims& sizes) {
  const int64_t nd = static_cast<int64_t>(sizes.size());
  const int64_t lead = nd - src.ndim();
  auto fail = [&] {
    detail::fail("copy: source of shape ", detail::shape_str(src.sizes), " cannot be broadcast to destination shape ",
                 detail::shape_str(sizes));
  };
  if (lead < 0) fail();
  TensorView v = src;
  v.sizes = sizes;
  v.strides = Dims(static_cast<size_t>(nd), 0);
  for (int64_t d = 0; d < src.ndim(); ++d) {
    if (src.sizes[d] != sizes[d + lead] && src.sizes[d] != 1) fail();
    v.strides[d + lead] = src.sizes[d] == 1 ? 0 : src.strides[d];
  }
  return v;
}

template <typename U>
void copy_bits(const TensorView& dst, const TensorView& src) {
  launch_elementwise<2>("copy", {&dst, &src}, ConvertBody<U, U>{dst.ptr<U>(), src.ptr<const U>()});
}

}  // namespace

void CudaBackend::copy(const TensorView& dst, const TensorView& in) {
  const TensorView src = in.sizes == dst.sizes ? in : broadcast_to(in, dst.sizes);
  if (dst.numel() == 0) return;
  EMBER_CHECK(dst.device_index == src.device_index, "copy: between cuda:", src.device_index,
              " and cuda:", dst.device_index, " the front end moves the bytes with copy_between_devices first");
  if (dst.dtype == src.dtype) {
    if (dst.is_contiguous() && src.is_contiguous()) {
      if (dst.data == src.data) return;
      DeviceGuard guard(dst.device_index);
      const size_t nbytes = static_cast<size_t>(dst.numel()) * element_size(dst.dtype);
      const cudaStream_t stream = current_stream(dst.device_index);
      if (ranges_overlap(dst.data, src.data, nbytes)) {
        // Overlapping views of one buffer (x[1:].copy_(x[:-1])) go through a temporary, as the
        // CPU's memmove would; the stream orders its reuse after both copies.
        Workspace staged(nbytes, dst.device_index);
        EMBER_CUDA_CHECK(cudaMemcpyAsync(staged.data(), src.data, nbytes, cudaMemcpyDeviceToDevice, stream), "copy");
        EMBER_CUDA_CHECK(cudaMemcpyAsync(dst.data, staged.data(), nbytes, cudaMemcpyDeviceToDevice, stream), "copy");
        return;
      }
      EMBER_CUDA_CHECK(cudaMemcpyAsync(dst.data, src.data, nbytes, cudaMemcpyDeviceToDevice, stream), "copy");
      return;
    }
    switch (element_size(dst.dtype)) {
      case 1:
        return copy_bits<uint8_t>(dst, src);
      case 2:
        return copy_bits<uint16_t>(dst, src);
      case 4:
        return copy_bits<uint32_t>(dst, src);
      case 8:
        return copy_bits<uint64_t>(dst, src);
      default:
        detail::fail("copy: unsupported dtype ", dtype_name(dst.dtype));
    }
  }
  kernels::dispatch_all(dst.dtype, "copy", [&]<typename D>() {
    kernels::dispatch_all(src.dtype, "copy", [&]<typename S>() {
      if constexpr (!std::is_same_v<D, S>) {
        launch_elementwise<2>("copy", {&dst, &src}, ConvertBody<D, S>{dst.ptr<D>(), src.ptr<const S>()});
      }
    });
  });
}

void CudaBackend::fill(const TensorView& out, const Scalar& value) {
  if (out.numel() == 0) return;
  kernels::dispatch_all(out.dtype, "fill", [&]<typename T>() {
    const T v = kernels::scalar_as<T>(value);
    // One kernel per element width serves every dtype: the value is written as its bit pattern.
    using U = std::conditional_t<
        sizeof(T) == 1, uint8_t,
        std::conditional_t<sizeof(T) == 2, uint16_t, std::conditional_t<sizeof(T) == 4, uint32_t, uint64_t>>>;
    U bits;
    std::memcpy(&bits, &v, sizeof bits);
    launch_elementwise<1>("fill", {&out}, FillBody<U>{out.ptr<U>(), bits});
  });
}

}  // namespace ember::cuda_impl
