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
void Event::record(int) { unavailable("Event::record"); }
void Event::synchronize() const { unavailable("Event::synchronize"); }
bool Event::query() const { unavailable("Event::query"); }
float Event::elapsed_ms(const Event&) const { unavailable("Event::elapsed_ms"); }

}  // namespace ember::cuda
#endif
