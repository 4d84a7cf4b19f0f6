#pragma once
// What backends call when deterministic algorithms were asked for (ember/backends.h); the switches
// themselves are public. Lives in libember's core, with no CUDA dependency, so that every backend
// library reads the same settings.
#include <string_view>

namespace ember::detail {

/// For an operation about to run an implementation that is not deterministic: nothing unless
/// use_deterministic_algorithms(true) is in effect; then ember::Error naming `op` (as PyTorch's
/// alertNotDeterministic), or with warn_only a warning, after which the caller goes on.
void alert_not_deterministic(std::string_view op);

}  // namespace ember::detail
