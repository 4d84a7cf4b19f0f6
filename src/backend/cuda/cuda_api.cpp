// ember::cuda (include/ember/cuda.h) in a build with CUDA.
#include <algorithm>
#include <string>
#include <vector>

#include "backend/cuda/caching_allocator.h"
#include "backend/cuda/cuda_backend.h"
#include "backend/cuda/pinned_allocator.h"
#include "backend/cuda/runtime.h"
#include "backend/cuda_probe.h"
#include "core/check.h"
#include "core/tensor_internal.h"
#include "ember/cuda.h"
#include "ember/device.h"
#include "ember/factories.h"

namespace ember::cuda {
namespace {

void require_cuda(const char* what) {
  EMBER_CHECK(is_available(), what, ": CUDA is not available: ", unavailable_reason());
}

int resolve(int device, const char* what) {
  require_cuda(what);
  const int d = device < 0 ? cuda_impl::current_device() : device;
  EMBER_CHECK(d < device_count(), what, ": CUDA error: invalid device ordinal (cuda:", d, " requested, but only ",
              device_count(), " CUDA device(s) are visible)");
  return d;
}

// Memory queries answer 0 when there is no GPU (nothing can have been allocated), as
// torch.cuda.memory_allocated() does before CUDA is initialised.
cuda_impl::MemoryStats stats_of(int device) {
  if (!is_available()) return {};
  const int d = device < 0 ? cuda_impl::current_device() : device;
  if (d >= device_count()) return {};
  return cuda_impl::device_allocator(d).stats();
}

}  // namespace

DeviceProperties get_device_properties(int device) {
  const int d = resolve(device, "get_device_properties");
  cudaDeviceProp prop{};
  EMBER_CUDA_CHECK(cudaGetDeviceProperties(&prop, d), "get_device_properties");
  return {prop.name, prop.major, prop.minor, prop.totalGlobalMem, prop.multiProcessorCount};
}

int current_device() { return cuda_impl::current_device(); }

void set_device(int device) {
  EMBER_CHECK(device >= 0, "set_device: invalid device ordinal ", device);
  cuda_impl::set_current_device(resolve(device, "set_device"));
}

void synchronize(int device) {
  const int d = resolve(device, "synchronize");
  cuda_impl::DeviceGuard guard(d);
  EMBER_CUDA_CHECK(cudaDeviceSynchronize(), "synchronize");
  cuda_impl::raise_pending_index_error(d);  // every stream of d has finished: its record is complete
}

size_t memory_allocated(int device) { return stats_of(device).allocated; }
size_t memory_reserved(int device) { return stats_of(device).reserved; }
size_t max_memory_allocated(int device) { return stats_of(device).max_allocated; }

void reset_peak_memory_stats(int device) {
  if (!is_available()) return;
  const int d = device < 0 ? cuda_impl::current_device() : device;
  if (d < device_count()) cuda_impl::device_allocator(d).reset_peak();
}

void empty_cache() {
  for (int d = 0; d < device_count(); ++d) cuda_impl::device_allocator(d).empty_cache();
  cuda_impl::pinned_allocator().empty_cache();
}

Tensor get_rng_state(int device) {
  const int d = resolve(device, "get_rng_state");
  const std::vector<uint8_t> bytes = cuda_impl::cuda_backend().rng_state(d);
  Tensor state = empty({static_cast<int64_t>(bytes.size())}, kUInt8);
  std::copy(bytes.begin(), bytes.end(), state.data_ptr<uint8_t>());
  return state;
}

void set_rng_state(const Tensor& state, int device) {
  const int d = resolve(device, "set_rng_state");
  detail::check_defined(state, "set_rng_state");
  EMBER_CHECK(state.dtype() == kUInt8 && state.dim() == 1 && state.device().is_cpu(),
              "set_rng_state: expected a 1-D uint8 CPU tensor from cuda::get_rng_state(), got ",
              scalar_type_name(state.dtype()), " ", detail::shape_str(state.sizes()), " on ", state.device().str());
  const Tensor bytes = state.contiguous();
  cuda_impl::cuda_backend().set_rng_state(d, {bytes.data_ptr<uint8_t>(), static_cast<size_t>(bytes.numel())});
}

void set_allow_tf32(bool allow) { cuda_impl::set_allow_tf32(allow); }
bool allow_tf32() { return cuda_impl::allow_tf32(); }

Event::Event() {
  require_cuda("cuda::Event");
  device_ = cuda_impl::current_device();
  cuda_impl::DeviceGuard guard(device_);
  cudaEvent_t e = nullptr;
  EMBER_CUDA_CHECK(cudaEventCreate(&e), "cuda::Event");
  event_ = e;
}

Event::~Event() {
  if (event_ != nullptr) cudaEventDestroy(static_cast<cudaEvent_t>(event_));
}

void Event::record(int device) {
  const int d = resolve(device, "Event::record");
  EMBER_CHECK(d == device_, "Event::record: the event was created on cuda:", device_, " but recorded on cuda:", d);
  cuda_impl::DeviceGuard guard(d);
  EMBER_CUDA_CHECK(cudaEventRecord(static_cast<cudaEvent_t>(event_), cuda_impl::current_stream(d)), "Event::record");
}

void Event::synchronize() const {
  EMBER_CUDA_CHECK(cudaEventSynchronize(static_cast<cudaEvent_t>(event_)), "Event::synchronize");
  cuda_impl::raise_pending_index_error(device_);
}

bool Event::query() const {
  const cudaError_t err = cudaEventQuery(static_cast<cudaEvent_t>(event_));
  if (err == cudaErrorNotReady) {
    cudaGetLastError();  // "not ready" is an answer, not an error
    return false;
  }
  EMBER_CUDA_CHECK(err, "Event::query");
  return true;
}

float Event::elapsed_ms(const Event& end) const {
  float ms = 0;
  EMBER_CUDA_CHECK(cudaEventElapsedTime(&ms, static_cast<cudaEvent_t>(event_), static_cast<cudaEvent_t>(end.event_)),
                   "Event::elapsed_ms");
  return ms;
}

}  // namespace ember::cuda
