#pragma once
// The CPU backend's names for the shared dtype dispatch (src/kernels/dtype_dispatch.h).
#include "kernels/dtype_dispatch.h"

namespace ember::cpu {
using kernels::compute_t;
using kernels::compute_type;
using kernels::dispatch_all;
using kernels::dispatch_floating;
}  // namespace ember::cpu
