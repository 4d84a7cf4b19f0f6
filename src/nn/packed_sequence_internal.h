#pragma once
// What the recurrent layers need from a PackedSequence beyond its public fields.
#include <cstdint>
#include <vector>

#include "ember/nn/packed_sequence.h"

namespace ember::nn::utils::rnn::detail {

/// The batch sizes of `packed` on the host, after checking that they describe its data: a 1-D
/// int64 CPU tensor of positive, non-increasing sizes that add up to data.size(0). `what` names
/// the caller in the error ("LSTM", "pad_packed_sequence").
std::vector<int64_t> checked_batch_sizes(const PackedSequence& packed, const char* what);

}  // namespace ember::nn::utils::rnn::detail
