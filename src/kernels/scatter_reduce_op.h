#pragma once
// The reductions of scatter_reduce: named here, below the backend interface that takes them and
// the functors (kernels/scatter_ops.h) that carry them out.
#include <cstdint>

namespace ember {

/// How scatter_reduce combines a scattered value with the element it lands on (Assign replaces).
enum class ScatterReduceOp : uint8_t { Assign, Sum, Prod, Amax, Amin };

}  // namespace ember
