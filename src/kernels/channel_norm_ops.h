#pragma once
// The arithmetic of the channel_norm family (batch_norm and group_norm over [N, C, S] views),
// written once for the CPU (cpu/channel_norm.cpp) and CUDA (cuda/channel_norm.cu) kernels.
//
// Statistics accumulate in double on both devices (float32 inputs included), in two passes: the
// mean, then the squared deviations from it, so that a channel whose mean is large against its
// spread keeps its variance's digits (a one-pass sum of squares would lose them).
#include <cstdint>

#include "kernels/kmath.h"

namespace ember::kernels {

/// The element of channel_affine: a * (x - m) + b + d * y, in the element type.
template <typename T>
EMBER_HD inline T channel_affine_value(T x, T m, T a, T b, T y, T d) {
  return a * (x - m) + b + d * y;
}

/// [N, C, S] with the coefficient views' strides along N and C (in elements).
struct ChannelShape {
  int64_t n = 1, c = 1, s = 1;
};

}  // namespace ember::kernels
