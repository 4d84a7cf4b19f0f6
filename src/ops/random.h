#pragma once
// In-place random fills, PyTorch's Tensor.uniform_ and Tensor.normal_, drawn from the global
// generator of the tensor's device. Internal: nn::init's uniform_ and normal_ (and the
// initialisers built on them) are the public way in. They are not free functions in ember::
// (ops.h) because, found by argument-dependent lookup, they would make every unqualified call of
// nn::init's same-signature uniform_/normal_ ambiguous.
#include "ember/tensor.h"

namespace ember::detail {

/// Fills `tensor` (floating point, any layout) with values uniform on [from, to), without
/// recording a graph; returns it. The CPU's draws are torch's for the same seed.
Tensor uniform_(const Tensor& tensor, double from = 0.0, double to = 1.0);
/// Fills `tensor` with values from N(mean, std²) (std >= 0), without recording a graph.
Tensor normal_(const Tensor& tensor, double mean = 0.0, double std = 1.0);

}  // namespace ember::detail
