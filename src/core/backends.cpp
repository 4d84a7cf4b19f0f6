// The switches of ember/backends.h: plain atomics in libember's core, so that every backend (the
// CUDA one included, which is loaded as a library of its own) reads one copy of them, without any
// CUDA dependency here. Relaxed ordering: a switch is a setting read at each call, and ordering
// with other memory is the caller's business, as with PyTorch's global context.
#include "ember/backends.h"

#include <atomic>
#include <string>

#include "core/check.h"
#include "core/determinism.h"
#include "ember/warning.h"

namespace ember {
namespace {

std::atomic<bool> g_deterministic_algorithms{false};
std::atomic<bool> g_deterministic_warn_only{false};
std::atomic<bool> g_cudnn_deterministic{false};
std::atomic<bool> g_cudnn_benchmark{false};
std::atomic<bool> g_cudnn_allow_tf32{true};  // torch.backends.cudnn.allow_tf32's default

}  // namespace

void use_deterministic_algorithms(bool mode, bool warn_only) {
  g_deterministic_algorithms.store(mode, std::memory_order_relaxed);
  // As in PyTorch, warn_only only means something while the mode is on.
  g_deterministic_warn_only.store(mode && warn_only, std::memory_order_relaxed);
}
bool are_deterministic_algorithms_enabled() { return g_deterministic_algorithms.load(std::memory_order_relaxed); }
bool is_deterministic_algorithms_warn_only_enabled() {
  return g_deterministic_warn_only.load(std::memory_order_relaxed);
}

DeterministicAlgorithmsGuard::DeterministicAlgorithmsGuard(bool mode, bool warn_only)
    : previous_mode_(are_deterministic_algorithms_enabled()),
      previous_warn_only_(is_deterministic_algorithms_warn_only_enabled()) {
  use_deterministic_algorithms(mode, warn_only);
}
DeterministicAlgorithmsGuard::~DeterministicAlgorithmsGuard() {
  use_deterministic_algorithms(previous_mode_, previous_warn_only_);
}

namespace backends::cudnn {

void set_deterministic(bool deterministic) { g_cudnn_deterministic.store(deterministic, std::memory_order_relaxed); }
bool deterministic() { return g_cudnn_deterministic.load(std::memory_order_relaxed); }
void set_benchmark(bool benchmark) { g_cudnn_benchmark.store(benchmark, std::memory_order_relaxed); }
bool benchmark() { return g_cudnn_benchmark.load(std::memory_order_relaxed); }
void set_allow_tf32(bool allow) { g_cudnn_allow_tf32.store(allow, std::memory_order_relaxed); }
bool allow_tf32() { return g_cudnn_allow_tf32.load(std::memory_order_relaxed); }

FlagsGuard::FlagsGuard(const Flags& flags)
    : previous_deterministic_(deterministic()), previous_benchmark_(benchmark()), previous_allow_tf32_(allow_tf32()) {
  if (flags.deterministic) set_deterministic(*flags.deterministic);
  if (flags.benchmark) set_benchmark(*flags.benchmark);
  if (flags.allow_tf32) set_allow_tf32(*flags.allow_tf32);
}
FlagsGuard::~FlagsGuard() {
  set_deterministic(previous_deterministic_);
  set_benchmark(previous_benchmark_);
  set_allow_tf32(previous_allow_tf32_);
}

}  // namespace backends::cudnn

namespace detail {

void alert_not_deterministic(std::string_view op) {
  if (!are_deterministic_algorithms_enabled()) return;
  const std::string message = concat(
      op, " does not have a deterministic implementation, but you set 'ember::use_deterministic_algorithms(true)'. ",
      "You can turn off determinism just for this operation, or you can use the 'warn_only=true' option, if that's "
      "acceptable for your application.");
  if (is_deterministic_algorithms_warn_only_enabled()) {
    warn(message);
    return;
  }
  fail(message);
}

}  // namespace detail
}  // namespace ember
