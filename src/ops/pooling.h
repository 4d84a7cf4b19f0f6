#pragma once
// The pooling front end's shared geometry, for the pooling built on it (nn/pool3d.cpp).
#include <cstdint>

namespace ember::ops {

/// PyTorch's pooling_output_shape, with its checks and messages in its order: the number of
/// windows of `kernel` (dilated by `dilation`, `stride` apart) over `in` padded by `pad` on both
/// sides; with ceil_mode the last window may hang over the end if it starts inside the input or
/// the left padding.
int64_t pooled_size(int64_t in, int64_t kernel, int64_t pad, int64_t stride, int64_t dilation, bool ceil_mode);

}  // namespace ember::ops
