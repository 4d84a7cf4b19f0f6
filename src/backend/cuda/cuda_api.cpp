// ember::cuda (include/ember/cuda.h) in a build with CUDA.
#include <algorithm>
#include <string>
#include <utility>
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

// A moved-from Event holds no CUDA event.
cudaEvent_t handle_of(void* event, const char* what) {
  EMBER_CHECK(event != nullptr, what, ": the event was moved from; assign it a new cuda::Event first");
  return static_cast<cudaEvent_t>(event);
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

Event::Event(Event&& other) noexcept : event_(std::exchange(other.event_, nullptr)), device_(other.device_) {}

Event& Event::operator=(Event&& other) noexcept {
  if (this != &other) {
    if (event_ != nullptr) cudaEventDestroy(static_cast<cudaEvent_t>(event_));
    event_ = std::exchange(other.event_, nullptr);
    device_ = other.device_;
  }
  return *this;
}

void Event::record(int device) {
  const int d = resolve(device, "Event::record");
  EMBER_CHECK(d == device_, "Event::record: the event was created on cuda:", device_, " but recorded on cuda:", d);
  cuda_impl::DeviceGuard guard(d);
  EMBER_CUDA_CHECK(cudaEventRecord(handle_of(event_, "Event::record"), cuda_impl::current_stream(d)), "Event::record");
}

void Event::record(const Stream& stream) {
  EMBER_CHECK(stream.device() == device_, "Event::record: the event was created on cuda:", device_,
              " but the stream is on cuda:", stream.device());
  cuda_impl::DeviceGuard guard(device_);
  EMBER_CUDA_CHECK(cudaEventRecord(handle_of(event_, "Event::record"), static_cast<cudaStream_t>(stream.handle())),
                   "Event::record");
}

void Event::synchronize() const {
  EMBER_CUDA_CHECK(cudaEventSynchronize(handle_of(event_, "Event::synchronize")), "Event::synchronize");
  cuda_impl::raise_pending_index_error(device_);
}

bool Event::query() const {
  return cuda_impl::query_completed(cudaEventQuery(handle_of(event_, "Event::query")), "Event::query",
                                    "cudaEventQuery(event)");
}

float Event::elapsed_ms(const Event& end) const {
  float ms = 0;
  EMBER_CUDA_CHECK(
      cudaEventElapsedTime(&ms, handle_of(event_, "Event::elapsed_ms"), handle_of(end.event_, "Event::elapsed_ms")),
      "Event::elapsed_ms");
  return ms;
}

// ---- streams ----

Stream Stream::create(int device, int priority) {
  const int d = resolve(device, "cuda::Stream::create");
  const bool high = priority < 0;
  return Stream(d, cuda_impl::pooled_stream(d, high), high ? -1 : 0);
}

bool Stream::query() const {
  cuda_impl::DeviceGuard guard(device_);
  return cuda_impl::query_completed(cudaStreamQuery(static_cast<cudaStream_t>(handle_)), "Stream::query",
                                    "cudaStreamQuery(stream)");
}

void Stream::synchronize() const {
  cuda_impl::DeviceGuard guard(device_);
  EMBER_CUDA_CHECK(cudaStreamSynchronize(static_cast<cudaStream_t>(handle_)), "Stream::synchronize");
  cuda_impl::raise_pending_index_error(device_);
}

void Stream::wait_event(const Event& event) const {
  cuda_impl::DeviceGuard guard(device_);
  EMBER_CUDA_CHECK(
      cudaStreamWaitEvent(static_cast<cudaStream_t>(handle_), handle_of(event.event_, "Stream::wait_event"), 0),
      "Stream::wait_event");
}

void Stream::wait_stream(const Stream& other) const {
  if (other == *this) return;
  // An event of `other`'s device marks its work so far. Destroying it at once is allowed: the
  // wait below has already taken its place in this stream's queue.
  cudaEvent_t marker = nullptr;
  {
    cuda_impl::DeviceGuard guard(other.device_);
    marker = cuda_impl::record_marker(static_cast<cudaStream_t>(other.handle_), "Stream::wait_stream");
  }
  cuda_impl::DeviceGuard guard(device_);
  const cudaError_t err = cudaStreamWaitEvent(static_cast<cudaStream_t>(handle_), marker, 0);
  cudaEventDestroy(marker);
  if (err != cudaSuccess) cuda_impl::throw_cuda_error(err, "Stream::wait_stream", "cudaStreamWaitEvent(this, marker)");
}

Stream current_stream(int device) {
  const int d = resolve(device, "cuda::current_stream");
  cudaStream_t handle = cuda_impl::current_stream(d);
  int priority = 0;
  if (handle != nullptr) {
    cuda_impl::DeviceGuard guard(d);
    EMBER_CUDA_CHECK(cudaStreamGetPriority(handle, &priority), "cuda::current_stream");
  }
  return Stream(d, handle, priority < 0 ? -1 : 0);
}

Stream default_stream(int device) { return Stream(resolve(device, "cuda::default_stream"), nullptr, 0); }

void set_stream(const Stream& stream) {
  cuda_impl::set_current_device(stream.device());
  cuda_impl::set_current_stream(stream.device(), static_cast<cudaStream_t>(stream.handle()));
}

StreamGuard::StreamGuard(const Stream& stream)
    : previous_device_(cuda_impl::current_device()),
      previous_chosen_(cuda_impl::device_chosen()),
      previous_stream_(current_stream(stream.device())) {
  set_stream(stream);
}

StreamGuard::~StreamGuard() {
  cuda_impl::set_current_stream(previous_stream_.device(), static_cast<cudaStream_t>(previous_stream_.handle()));
  try {
    cuda_impl::restore_current_device(previous_device_, previous_chosen_);
  } catch (...) {
    // The device was current when the guard began; a driver that fails now has failed for
    // every later call too, which reports it.
  }
}

void record_stream(const Tensor& tensor, const Stream& stream) {
  detail::check_defined(tensor, "record_stream");
  EMBER_CHECK(tensor.device().is_cuda(), "record_stream: expected a CUDA tensor, got one on ", tensor.device().str());
  EMBER_CHECK(tensor.device().index() == stream.device(), "record_stream: the tensor is on ", tensor.device().str(),
              " but the stream is on cuda:", stream.device());
  // The storage's start names its block; an empty tensor holds none.
  void* block = tensor.impl().storage->data();
  if (block == nullptr) return;
  cuda_impl::device_allocator(stream.device()).record_stream(block, static_cast<cudaStream_t>(stream.handle()));
}

}  // namespace ember::cuda
