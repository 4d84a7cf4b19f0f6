// CUDA all_finite: the trainer's per-step check of the loss and every gradient, as one kernel
// launch per 32 tensors of a dtype (finite_plan.h) writing one flag on the device. Nothing waits
// for the GPU here; the caller reads the flag when it needs the answer.
#include <array>
#include <vector>

#include "backend/cuda/cuda_backend.h"
#include "backend/cuda/finite_plan.h"
#include "backend/cuda/runtime.h"
#include "core/check.h"
#include "kernels/finite_bits.h"

namespace ember::cuda_impl {
namespace {

template <typename Bits>
struct FiniteBatch {
  const Bits* data[kFiniteBatch];
  int64_t numel[kFiniteBatch];
};

// Elements are read as unsigned integers of their width, as copy.cu moves them: finiteness is a
// test of the exponent bits (kernels/finite_bits.h, shared with the CPU).
template <typename Bits>
__global__ void __launch_bounds__(kBlockThreads)
    nonfinite_kernel(FiniteBatch<Bits> batch, Bits mask, bool* all_finite) {
  const Bits* data = batch.data[blockIdx.y];
  const int64_t n = batch.numel[blockIdx.y];
  const int64_t stride = static_cast<int64_t>(blockDim.x) * gridDim.x;
  Bits found = 0;
  for (int64_t i = static_cast<int64_t>(blockIdx.x) * blockDim.x + threadIdx.x; i < n; i += stride) {
    found |= kernels::nonfinite_bit(data[i], mask);
  }
  // Every block that finds one writes the same value, so the races are benign.
  if (__syncthreads_or(found != 0) && threadIdx.x == 0) *all_finite = false;
}

template <typename Bits>
void launch_batch(const FiniteLaunch& launch, std::span<const TensorView> xs, Bits mask, bool* flag,
                  cudaStream_t stream) {
  FiniteBatch<Bits> batch{};
  for (size_t k = 0; k < launch.tensors.size(); ++k) {
    const TensorView& x = xs[static_cast<size_t>(launch.tensors[k])];
    batch.data[k] = static_cast<const Bits*>(x.data);
    batch.numel[k] = x.numel();
  }
  const dim3 grid(launch.blocks_x, static_cast<unsigned>(launch.tensors.size()));
  nonfinite_kernel<Bits><<<grid, kBlockThreads, 0, stream>>>(batch, mask, flag);
  check_launch("all_finite");
}

}  // namespace

void CudaBackend::all_finite(std::span<const TensorView> xs, const TensorView& out) {
  EMBER_CHECK(out.dtype == kBool && out.numel() == 1, "[all_finite] the result must be one bool");
  std::vector<Dtype> dtypes;
  std::vector<int64_t> numels;
  for (const TensorView& x : xs) {
    EMBER_CHECK(is_floating_point(x.dtype) && x.is_contiguous(), "[all_finite] expected contiguous floating tensors");
    EMBER_CHECK(x.device_index == out.device_index, "[all_finite] every tensor must be on cuda:", out.device_index);
    dtypes.push_back(x.dtype);
    numels.push_back(x.numel());
  }
  DeviceGuard guard(out.device_index);
  cudaStream_t stream = current_stream(out.device_index);
  bool* flag = out.ptr<bool>();
  EMBER_CUDA_CHECK(cudaMemsetAsync(flag, 1, 1, stream), "all_finite");
  for (const FiniteLaunch& launch : plan_all_finite(dtypes, numels)) {
    const kernels::ExponentBits exponent = kernels::exponent_bits(launch.dtype);
    switch (exponent.bytes) {
      case 2:
        launch_batch<uint16_t>(launch, xs, static_cast<uint16_t>(exponent.mask), flag, stream);
        break;
      case 4:
        launch_batch<uint32_t>(launch, xs, static_cast<uint32_t>(exponent.mask), flag, stream);
        break;
      default:
        launch_batch<uint64_t>(launch, xs, exponent.mask, flag, stream);
        break;
    }
  }
}

}  // namespace ember::cuda_impl
