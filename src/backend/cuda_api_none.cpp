// ember::cuda (include/ember/cuda.h) in a build without CUDA: queries answer "nothing", actions
// throw ember::Error saying why.
#if !defined(EMBER_HAVE_CUDA)
#include "core/check.h"
#include "ember/cuda.h"
#include "ember/device.h"

namespace ember::cuda {
namespace {
[[noreturn]] void unavailable(const char* what) {
  detail::fail(what, ": CUDA is not available: ", unavailable_reason());
}
}  // namespace

DeviceProperties get_device_properties(int) { unavailable("get_device_properties"); }
int current_device() { return 0; }
void set_device(int) { unavailable("set_device"); }
void synchronize(int) { unavailable("synchronize"); }
size_t memory_allocated(int) { return 0; }
size_t memory_reserved(int) { return 0; }
size_t max_memory_allocated(int) { return 0; }
void reset_peak_memory_stats(int) {}
void empty_cache() {}
Tensor get_rng_state(int) { unavailable("get_rng_state"); }
void set_rng_state(const Tensor&, int) { unavailable("set_rng_state"); }
void set_allow_tf32(bool) {}
bool allow_tf32() { return false; }

Event::Event() { unavailable("cuda::Event"); }
Event::~Event() = default;
Event::Event(Event&& other) noexcept : event_(other.event_), device_(other.device_) {}
Event& Event::operator=(Event&&) noexcept = default;
void Event::record(int) { unavailable("Event::record"); }
void Event::record(const Stream&) { unavailable("Event::record"); }
void Event::synchronize() const { unavailable("Event::synchronize"); }
bool Event::query() const { unavailable("Event::query"); }
float Event::elapsed_ms(const Event&) const { unavailable("Event::elapsed_ms"); }

// No Stream can exist without CUDA: every way to obtain one throws.
Stream Stream::create(int, int) { unavailable("cuda::Stream::create"); }
bool Stream::query() const { unavailable("Stream::query"); }
void Stream::synchronize() const { unavailable("Stream::synchronize"); }
void Stream::wait_event(const Event&) const { unavailable("Stream::wait_event"); }
void Stream::wait_stream(const Stream&) const { unavailable("Stream::wait_stream"); }
Stream current_stream(int) { unavailable("cuda::current_stream"); }
Stream default_stream(int) { unavailable("cuda::default_stream"); }
void set_stream(const Stream&) { unavailable("cuda::set_stream"); }
StreamGuard::StreamGuard(const Stream& stream)
    : previous_device_(0), previous_chosen_(false), previous_stream_(stream) {
  unavailable("cuda::StreamGuard");
}
StreamGuard::~StreamGuard() { (void)previous_device_, (void)previous_chosen_; }  // never reached: no guard can be made
void record_stream(const Tensor&, const Stream&) { unavailable("cuda::record_stream"); }

}  // namespace ember::cuda
#endif
