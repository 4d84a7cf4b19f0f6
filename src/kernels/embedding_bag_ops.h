#pragma once
// What the CPU (cpu/embedding_bag.cpp) and CUDA (cuda/embedding_bag.cu) kernels of embedding_bag
// decide the same way: which positions of `indices` a bag covers, which positions count, how Max
// chooses its row and the factor a position's gradient is scaled by.
#include <cstdint>

#include "ember/half.h"  // EMBER_HD

namespace ember::kernels {

/// The positions [begin, end) of `indices` that a bag reduces.
struct BagRange {
  int64_t begin;
  int64_t end;
};

/// Bag b of the B + 1 `offsets` over `length` indices. The CPU front end has checked the offsets
/// (offsets[0] == 0, non-decreasing, offsets[B] <= length); a device's have not been read, so
/// they are clamped into [0, length] with end >= begin, which keeps every read in bounds.
EMBER_HD inline BagRange bag_range(const int64_t* offsets, int64_t b, int64_t length) {
  int64_t begin = offsets[b], end = offsets[b + 1];
  begin = begin < 0 ? 0 : (begin > length ? length : begin);
  end = end < begin ? begin : (end > length ? length : end);
  return {begin, end};
}

/// Whether a row index counts in its bag: padding_idx (-1 for none) is skipped, and not counted
/// in Mean's divisor either.
EMBER_HD inline bool counts_in_bag(int64_t index, int64_t padding_idx) { return index != padding_idx; }

/// Whether Max replaces the running maximum with `candidate`: always for the bag's first counted
/// row, then only when strictly greater, as PyTorch's kernels compare. So among equal values the
/// first row wins, a NaN met first stays and a later NaN never replaces a number.
template <typename T>
EMBER_HD inline bool replaces_max(bool first, T candidate, T current) {
  return first || candidate > current;
}

/// The factor by which a position's output gradient reaches its row in Sum and Mean, in
/// PyTorch's order: the position's weight (1 without per_sample_weights), divided by the row's
/// count over all the indices under scale_grad_by_freq (`frequency`, else 0), then by the bag's
/// counted size in Mean (`bag_size`, else 0; an empty bag has no position to scale).
template <typename T>
EMBER_HD inline T gradient_scale(T sample_weight, int64_t frequency, int64_t bag_size) {
  T scale = sample_weight;
  if (frequency > 0) scale /= static_cast<T>(frequency);
  if (bag_size > 0) scale /= static_cast<T>(bag_size);
  return scale;
}

}  // namespace ember::kernels
