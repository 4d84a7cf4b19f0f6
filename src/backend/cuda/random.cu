// CudaBackend::random, randperm and the generator state: one Philox4x32-10 stream per device.
//
// The host-side logic (samplers, per-device states, their bytes) is in random_plan.h; the layout
// of the numbers in src/kernels/philox.h. Every element is a pure function of the seed, the
// offset and its index, never of the GPU or the launch shape. The numbers are not PyTorch's:
// its CUDA generator's layout depends on the grid it launches.
#include <cub/device/device_radix_sort.cuh>
#include <type_traits>

#include "backend/cuda/cuda_backend.h"
#include "backend/cuda/launch.h"
#include "backend/cuda/random_plan.h"
#include "backend/cuda/runtime.h"
#include "core/check.h"
#include "kernels/dtype_dispatch.h"
#include "kernels/philox.h"

namespace ember::cuda_impl {
namespace {

using kernels::compute_t;
using kernels::Philox4;

PhiloxGenerators& generators() {
  static PhiloxGenerators g;
  return g;
}

void check_rng_device(int device, const char* op) {
  EMBER_CHECK(PhiloxGenerators::valid_device(device), "[", op, "] cuda:", device,
              " is beyond the devices the CUDA generator supports (", kMaxRngDevices, ")");
}

// The state to draw from, with `counters` Philox blocks reserved for this call.
GeneratorState reserve(int device, uint64_t counters, const char* op) {
  check_rng_device(device, op);
  return generators().reserve(device, counters);
}

// One thread per Philox block (grid-stride): each block yields Sampler::kPerCounter elements.
template <typename T, typename Sampler>
__global__ void __launch_bounds__(kBlockThreads)
    random_kernel(T* out, uint64_t n, uint64_t blocks, uint64_t seed, uint64_t offset, Sampler s) {
  const uint64_t stride = static_cast<uint64_t>(gridDim.x) * blockDim.x;
  for (uint64_t g = static_cast<uint64_t>(blockIdx.x) * blockDim.x + threadIdx.x; g < blocks; g += stride) {
    kernels::philox_visit_block(seed, offset, g, Sampler::kPerCounter, n,
                                [&](uint64_t i, const Philox4& b, int lane) { out[i] = s(b, lane); });
  }
}

template <typename T, typename Sampler>
void launch_random(const TensorView& out, const Sampler& s, const char* op) {
  const uint64_t n = static_cast<uint64_t>(out.numel());
  const uint64_t blocks = kernels::philox_counters(n, Sampler::kPerCounter);
  const GeneratorState state = reserve(out.device_index, blocks, op);
  const Launch1d l = launch_1d(static_cast<int64_t>(blocks));
  random_kernel<T><<<l.blocks, l.threads, 0, current_stream(out.device_index)>>>(out.ptr<T>(), n, blocks, state.seed,
                                                                                 state.offset, s);
  check_launch(op);
}

// ---- randperm: sort iota by random 64-bit keys ----

__global__ void __launch_bounds__(kBlockThreads)
    randperm_keys_kernel(uint64_t* keys, int64_t* values, uint64_t n, uint64_t blocks, uint64_t seed, uint64_t offset) {
  const uint64_t stride = static_cast<uint64_t>(gridDim.x) * blockDim.x;
  for (uint64_t g = static_cast<uint64_t>(blockIdx.x) * blockDim.x + threadIdx.x; g < blocks; g += stride) {
    kernels::philox_visit_block(seed, offset, g, 2, n, [&](uint64_t i, const Philox4& b, int lane) {
      keys[i] = kernels::word64(b, lane);
      values[i] = static_cast<int64_t>(i);
    });
  }
}

template <typename T>
__global__ void __launch_bounds__(kBlockThreads) convert_index_kernel(T* out, const int64_t* values, int64_t n) {
  const int64_t stride = static_cast<int64_t>(gridDim.x) * blockDim.x;
  for (int64_t i = static_cast<int64_t>(blockIdx.x) * blockDim.x + threadIdx.x; i < n; i += stride) {
    if constexpr (std::is_same_v<T, Half> || std::is_same_v<T, BFloat16>) {
      out[i] = T(static_cast<float>(values[i]));
    } else {
      out[i] = static_cast<T>(values[i]);
    }
  }
}

constexpr size_t align_up(size_t n) { return (n + 255) / 256 * 256; }

}  // namespace

void CudaBackend::random(const TensorView& out, const RandomArgs& args) {
  DeviceGuard guard(out.device_index);
  EMBER_CHECK(out.is_contiguous(), "[random] internal error: output must be contiguous");
  const bool empty = out.numel() == 0;
  switch (args.distribution) {
    case Distribution::Uniform:
      kernels::dispatch_floating(out.dtype, "uniform_", [&]<typename T>() {
        using C = compute_t<T>;
        if (empty) return;
        launch_random<T>(out, UniformSampler<T>{static_cast<C>(args.a), static_cast<C>(args.b)}, "uniform_");
      });
      break;
    case Distribution::Normal:
      kernels::dispatch_floating(out.dtype, "normal_", [&]<typename T>() {
        using C = compute_t<T>;
        if (empty) return;
        launch_random<T>(out, NormalSampler<T>{static_cast<C>(args.a), static_cast<C>(args.b)}, "normal_");
      });
      break;
    case Distribution::RandInt:
      kernels::dispatch_all(out.dtype, "random_", [&]<typename T>() {
        const int64_t low = static_cast<int64_t>(args.a), high = static_cast<int64_t>(args.b);
        EMBER_CHECK(low < high, "random_ expects 'from' to be less than 'to', but got from=", low, " >= to=", high);
        if (empty) return;
        const uint64_t range = static_cast<uint64_t>(high) - static_cast<uint64_t>(low);
        const uint64_t ulow = static_cast<uint64_t>(low);
        if (randint_is_wide(low, high)) {
          launch_random<T>(out, RandIntSampler<T, true>{range, ulow}, "random_");
        } else {
          launch_random<T>(out, RandIntSampler<T, false>{range, ulow}, "random_");
        }
      });
      break;
  }
}

void CudaBackend::randperm(const TensorView& out) {
  DeviceGuard guard(out.device_index);
  EMBER_CHECK(out.is_contiguous() && out.ndim() == 1, "[randperm] internal error: output must be 1-D contiguous");
  EMBER_CHECK(out.dtype != kBool, "\"randperm\" not implemented for 'Bool'");
  const int64_t n = out.numel();
  if (n == 0) return;
  const int device = out.device_index;
  const cudaStream_t stream = current_stream(device);
  const uint64_t un = static_cast<uint64_t>(n);
  const uint64_t blocks = kernels::philox_counters(un, 2);

  // Stable radix sort of (key, i) pairs: equal keys keep their indices in order, so the values
  // stay a permutation even when two 64-bit keys collide.
  const bool direct = out.dtype == kInt64;
  size_t sort_bytes = 0;
  EMBER_CUDA_CHECK(cub::DeviceRadixSort::SortPairs(
                       nullptr, sort_bytes, static_cast<const uint64_t*>(nullptr), static_cast<uint64_t*>(nullptr),
                       static_cast<const int64_t*>(nullptr), static_cast<int64_t*>(nullptr), n, 0, 64, stream),
                   "randperm");
  const size_t key_bytes = align_up(un * sizeof(uint64_t));
  const size_t value_bytes = align_up(un * sizeof(int64_t));
  Workspace ws(2 * key_bytes + (direct ? 1 : 2) * value_bytes + align_up(sort_bytes), device);
  auto* base = static_cast<uint8_t*>(ws.data());
  auto* keys_in = reinterpret_cast<uint64_t*>(base);
  auto* keys_out = reinterpret_cast<uint64_t*>(base + key_bytes);
  auto* values_in = reinterpret_cast<int64_t*>(base + 2 * key_bytes);
  int64_t* values_out = direct ? out.ptr<int64_t>() : reinterpret_cast<int64_t*>(base + 2 * key_bytes + value_bytes);
  void* temp = base + 2 * key_bytes + (direct ? 1 : 2) * value_bytes;

  const GeneratorState state = reserve(device, blocks, "randperm");
  const Launch1d l = launch_1d(static_cast<int64_t>(blocks));
  randperm_keys_kernel<<<l.blocks, l.threads, 0, stream>>>(keys_in, values_in, un, blocks, state.seed, state.offset);
  check_launch("randperm");
  EMBER_CUDA_CHECK(
      cub::DeviceRadixSort::SortPairs(temp, sort_bytes, keys_in, keys_out, values_in, values_out, n, 0, 64, stream),
      "randperm");
  if (direct) return;
  kernels::dispatch_all(out.dtype, "randperm", [&]<typename T>() {
    const Launch1d lc = launch_1d(n);
    convert_index_kernel<T><<<lc.blocks, lc.threads, 0, stream>>>(out.ptr<T>(), values_out, n);
    check_launch("randperm");
  });
}

void CudaBackend::manual_seed(uint64_t seed) { generators().seed_all(seed); }

uint64_t CudaBackend::initial_seed(int device) {
  check_rng_device(device, "initial_seed");
  return generators().get(device).seed;
}

// cuda:`device`'s generator, as torch.cuda.get_rng_state(device) returns it.
std::vector<uint8_t> CudaBackend::rng_state(int device) {
  check_rng_device(device, "get_rng_state");
  return encode_rng_state(generators().get(device));
}

void CudaBackend::set_rng_state(int device, std::span<const uint8_t> state) {
  check_rng_device(device, "set_rng_state");
  const std::optional<GeneratorState> s = decode_rng_state(state);
  EMBER_CHECK(s.has_value(),
              "set_rng_state: not a CUDA generator state saved by ember (expected one from get_rng_state())");
  generators().set(device, *s);
}

}  // namespace ember::cuda_impl
