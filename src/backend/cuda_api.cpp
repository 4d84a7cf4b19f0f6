// ember::cuda (include/ember/cuda.h): checks and messages here, the work in the CUDA backend
// (src/backend/cuda_runtime.h). Where CUDA is unusable (no build, no driver, no GPU, a plugin
// that would not load) queries answer "nothing" and actions throw ember::Error saying why.
#include <algorithm>
#include <utility>
#include <vector>

#include "backend/backend.h"
#include "backend/cuda_runtime.h"
#include "core/check.h"
#include "core/tensor_internal.h"
#include "ember/cuda.h"
#include "ember/device.h"

namespace ember::cuda {
namespace {

/// The runtime, when a GPU is usable; otherwise throws naming `what` and the reason.
CudaRuntime& runtime_for(const char* what) {
  EMBER_CHECK(is_available(), what, ": CUDA is not available: ", unavailable_reason());
  return *cuda_runtime();
}

/// `device`, or the current device when negative, checked against the visible devices.
int resolve(int device, const char* what) {
  CudaRuntime& rt = runtime_for(what);
  const int d = device < 0 ? rt.current_device() : device;
  EMBER_CHECK(d < device_count(), what, ": CUDA error: invalid device ordinal (cuda:", d, " requested, but only ",
              device_count(), " CUDA device(s) are visible)");
  return d;
}

// A moved-from Event holds no CUDA event.
void* handle_of(void* event, const char* what) {
  EMBER_CHECK(event != nullptr, what, ": the event was moved from; assign it a new cuda::Event first");
  return event;
}

// Memory queries answer 0 when there is no GPU (nothing can have been allocated), as
// torch.cuda.memory_allocated() does before CUDA is initialised.
CudaRuntime::MemoryStats stats_of(int device) {
  if (!is_available()) return {};
  const int d = device < 0 ? cuda_runtime()->current_device() : device;
  if (d >= device_count()) return {};
  return cuda_runtime()->memory_stats(d);
}

}  // namespace

DeviceProperties get_device_properties(int device) {
  const int d = resolve(device, "get_device_properties");
  return cuda_runtime()->device_properties(d);
}

int current_device() {
  CudaRuntime* rt = is_available() ? cuda_runtime() : nullptr;
  return rt != nullptr ? rt->current_device() : 0;
}

void set_device(int device) {
  EMBER_CHECK(device >= 0, "set_device: invalid device ordinal ", device);
  const int d = resolve(device, "set_device");
  cuda_runtime()->set_current_device(d);
}

void synchronize(int device) {
  const int d = resolve(device, "synchronize");  // first: it throws where there is no runtime
  cuda_runtime()->synchronize(d);
}

size_t memory_allocated(int device) { return stats_of(device).allocated; }
size_t memory_reserved(int device) { return stats_of(device).reserved; }
size_t max_memory_allocated(int device) { return stats_of(device).max_allocated; }

void reset_peak_memory_stats(int device) {
  if (!is_available()) return;
  const int d = device < 0 ? cuda_runtime()->current_device() : device;
  if (d < device_count()) cuda_runtime()->reset_peak_memory_stats(d);
}

void empty_cache() {
  if (CudaRuntime* rt = cuda_runtime()) rt->empty_cache();
}

Tensor get_rng_state(int device) {
  const int d = resolve(device, "get_rng_state");
  const std::vector<uint8_t> bytes = cuda_runtime()->backend().rng_state(d);
  Tensor state = detail::make_tensor({static_cast<int64_t>(bytes.size())}, kUInt8, Device(DeviceType::CPU));
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
  cuda_runtime()->backend().set_rng_state(d, {bytes.data_ptr<uint8_t>(), static_cast<size_t>(bytes.numel())});
}

void set_allow_tf32(bool allow) {
  if (CudaRuntime* rt = cuda_runtime()) rt->set_allow_tf32(allow);
}
bool allow_tf32() {
  CudaRuntime* rt = cuda_runtime();
  return rt != nullptr && rt->allow_tf32();
}

// ---- events ----

Event::Event() {
  CudaRuntime& rt = runtime_for("cuda::Event");
  device_ = rt.current_device();
  event_ = rt.event_create(device_);
}

Event::~Event() {
  if (event_ != nullptr) cuda_runtime()->event_destroy(event_);
}

Event::Event(Event&& other) noexcept : event_(std::exchange(other.event_, nullptr)), device_(other.device_) {}

Event& Event::operator=(Event&& other) noexcept {
  if (this != &other) {
    if (event_ != nullptr) cuda_runtime()->event_destroy(event_);
    event_ = std::exchange(other.event_, nullptr);
    device_ = other.device_;
  }
  return *this;
}

void Event::record(int device) {
  const int d = resolve(device, "Event::record");
  EMBER_CHECK(d == device_, "Event::record: the event was created on cuda:", device_, " but recorded on cuda:", d);
  cuda_runtime()->event_record(handle_of(event_, "Event::record"), d, nullptr);
}

void Event::record(const Stream& stream) {
  EMBER_CHECK(stream.device() == device_, "Event::record: the event was created on cuda:", device_,
              " but the stream is on cuda:", stream.device());
  cuda_runtime()->event_record(handle_of(event_, "Event::record"), device_, stream.handle());
}

void Event::synchronize() const { cuda_runtime()->event_synchronize(handle_of(event_, "Event::synchronize"), device_); }

bool Event::query() const { return cuda_runtime()->event_query(handle_of(event_, "Event::query")); }

float Event::elapsed_ms(const Event& end) const {
  return cuda_runtime()->event_elapsed_ms(handle_of(event_, "Event::elapsed_ms"),
                                          handle_of(end.event_, "Event::elapsed_ms"));
}

// ---- streams ----
// No Stream can exist without CUDA: every way to obtain one goes through resolve().

Stream Stream::create(int device, int priority) {
  const int d = resolve(device, "cuda::Stream::create");
  const bool high = priority < 0;
  return Stream(d, cuda_runtime()->stream_create(d, high), high ? -1 : 0);
}

bool Stream::query() const { return cuda_runtime()->stream_query(device_, handle_); }

void Stream::synchronize() const { cuda_runtime()->stream_synchronize(device_, handle_); }

void Stream::wait_event(const Event& event) const {
  cuda_runtime()->stream_wait_event(device_, handle_, handle_of(event.event_, "Stream::wait_event"));
}

void Stream::wait_stream(const Stream& other) const {
  if (other == *this) return;
  cuda_runtime()->stream_wait_stream(device_, handle_, other.device_, other.handle_);
}

Stream current_stream(int device) {
  const int d = resolve(device, "cuda::current_stream");
  void* handle = cuda_runtime()->current_stream(d);
  return Stream(d, handle, handle != nullptr ? cuda_runtime()->stream_priority(d, handle) : 0);
}

Stream default_stream(int device) { return Stream(resolve(device, "cuda::default_stream"), nullptr, 0); }

void set_stream(const Stream& stream) {
  cuda_runtime()->set_current_device(stream.device());
  cuda_runtime()->set_current_stream(stream.device(), stream.handle());
}

StreamGuard::StreamGuard(const Stream& stream)
    : previous_device_(runtime_for("cuda::StreamGuard").current_device()),
      previous_chosen_(cuda_runtime()->device_chosen()),
      previous_stream_(current_stream(stream.device())) {
  set_stream(stream);
}

StreamGuard::~StreamGuard() {
  CudaRuntime* rt = cuda_runtime();
  rt->set_current_stream(previous_stream_.device(), previous_stream_.handle());
  try {
    rt->restore_current_device(previous_device_, previous_chosen_);
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
  cuda_runtime()->record_stream(block, stream.device(), stream.handle());
}

}  // namespace ember::cuda
