#pragma once
// The kernel-calling front end of embedding_bag (Backend::embedding_bag and
// embedding_bag_backward) behind nn::functional::embedding_bag, which checks the arguments with
// PyTorch's messages, applies max_norm and lays the input out as below. Internal.
#include <cstdint>

#include "ember/tensor.h"

namespace ember::detail {

enum class BagReduction : uint8_t { Sum, Mean, Max };

/// How the bags are reduced, normalised by the caller.
struct BagOptions {
  BagReduction reduction = BagReduction::Mean;
  int64_t padding_idx = -1;  // a row the bags skip (and Mean does not count); -1 for none, never negative otherwise
  bool scale_grad_by_freq = false;
};

/// The [B, D] reductions of the bags of `weight` ([V, D], floating): bag b reduces the rows
/// indices[offsets[b] .. offsets[b + 1]), `indices` being int64 [L] and `offsets` int64 [B + 1]
/// on weight's device, each row scaled by its per_sample_weights entry ([L], weight's dtype;
/// Sum only) when that is defined. An empty bag gives zeros. Differentiable in weight and
/// per_sample_weights, twice as well (a backward pass under create_graph is written as ops).
/// On the CPU an index outside [0, V) raises PyTorch's error; the caller has checked the
/// offsets there. A device's kernels clamp the offsets into [0, L] and report a bad index at the
/// next synchronisation.
Tensor embedding_bag_reduce(const Tensor& weight, const Tensor& indices, const Tensor& offsets,
                            const Tensor& per_sample_weights, const BagOptions& options);

}  // namespace ember::detail
