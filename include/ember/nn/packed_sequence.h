#pragma once
/// Variable-length batches for the recurrent layers: torch.nn.utils.rnn's PackedSequence and the
/// functions that make and undo one (pack_padded_sequence, pad_packed_sequence, pad_sequence,
/// unpad_sequence, pack_sequence, unpack_sequence), with PyTorch's semantics and error messages.
///
/// A packed batch stores only the real steps, time-major: the first step of every sequence, then
/// the second step of every sequence that has one, and so on, longest sequence first. For
/// sequences "abc" and "x" that is data "axbc" with batch_sizes [2, 1, 1]. nn::RNN, LSTM and GRU
/// take a PackedSequence and run each sequence for exactly its own length, so a sequence's final
/// state is the one after its last real step, not after the padding.
///
///   auto packed = nn::utils::rnn::pack_padded_sequence(padded, lengths, true, false);
///   auto [out, h_n, c_n] = lstm.forward(packed);
///   auto [unpacked, out_lengths] = nn::utils::rnn::pad_packed_sequence(out, true);
#include <cstdint>
#include <optional>
#include <string>
#include <utility>
#include <vector>

#include "ember/device.h"
#include "ember/dtype.h"
#include "ember/tensor.h"

namespace ember::nn::utils::rnn {

/// torch.nn.utils.rnn.PackedSequence. `data` may have any dtype and device; `batch_sizes` is
/// always a 1-D int64 CPU tensor (the host reads it to slice the steps); the two index tensors
/// are int64 on data's device, or both undefined when the batch was packed in sorted order.
struct PackedSequence {
  PackedSequence() = default;
  /// Checks that batch_sizes is a 1-D int64 CPU tensor of positive, non-increasing sizes adding
  /// up to data.size(0), and that sorted_indices is a permutation of batch_sizes[0] elements.
  /// unsorted_indices defaults to sorted_indices' inverse, as in PyTorch.
  PackedSequence(Tensor data, Tensor batch_sizes, Tensor sorted_indices = {}, Tensor unsorted_indices = {});

  Tensor data;              // [total steps, *]
  Tensor batch_sizes;       // [longest length]: how many sequences have a step t
  Tensor sorted_indices;    // batch position of the i-th longest sequence
  Tensor unsorted_indices;  // sorted position of the sequence at batch position i

  /// The same sequences with data (and the index tensors) moved or cast; batch_sizes stays on
  /// the CPU. Returns *this when nothing changes, like Tensor::to.
  PackedSequence to(Device device, bool non_blocking = false) const;
  PackedSequence to(Dtype dtype) const;
  bool is_cuda() const { return data.is_cuda(); }
};

/// Packs `input` [T, B, *] ([B, T, *] with batch_first) holding sequences of `lengths` (one per
/// batch element, each in [1, T]). With enforce_sorted the lengths must not increase; without,
/// the batch is sorted here and the permutation kept in the result. Differentiable in `input`.
PackedSequence pack_padded_sequence(const Tensor& input, const Tensor& lengths, bool batch_first = false,
                                    bool enforce_sorted = true);
PackedSequence pack_padded_sequence(const Tensor& input, const std::vector<int64_t>& lengths, bool batch_first = false,
                                    bool enforce_sorted = true);

/// The inverse of pack_padded_sequence: the padded batch [T, B, *] ([B, T, *] with batch_first),
/// in the original batch order, filled with padding_value after each sequence's end, and the
/// lengths as an int64 CPU tensor. total_length pads T further (it must be at least the longest
/// length). Differentiable in sequence.data.
std::pair<Tensor, Tensor> pad_packed_sequence(const PackedSequence& sequence, bool batch_first = false,
                                              double padding_value = 0.0,
                                              std::optional<int64_t> total_length = std::nullopt);

/// Stacks sequences [L_i, *] into [T, B, *] ([B, T, *] with batch_first), T the longest length,
/// padding after each sequence (padding_side "right") or before it ("left"). The trailing sizes
/// must agree; the result has the first sequence's dtype and device. Differentiable.
Tensor pad_sequence(const std::vector<Tensor>& sequences, bool batch_first = false, double padding_value = 0.0,
                    const std::string& padding_side = "right");

/// The sequences of a padded batch, each cut to its length: [lengths[i], *] views.
std::vector<Tensor> unpad_sequence(const Tensor& padded_sequences, const Tensor& lengths, bool batch_first = false);

/// pack_padded_sequence(pad_sequence(sequences), their lengths, false, enforce_sorted).
PackedSequence pack_sequence(const std::vector<Tensor>& sequences, bool enforce_sorted = true);

/// The sequences of a packed batch, in the original order.
std::vector<Tensor> unpack_sequence(const PackedSequence& packed_sequences);

}  // namespace ember::nn::utils::rnn
