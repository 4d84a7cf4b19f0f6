// torch.nn.utils.rnn: PackedSequence and the functions that pack and pad variable-length batches.
// Everything is written with recorded views, cat and stack, so the data's gradient flows through
// packing and padding on every device; only the lengths and batch sizes, which are small int64
// CPU tensors by PyTorch's convention, are read on the host.
#include "ember/nn/packed_sequence.h"

#include <algorithm>
#include <numeric>

#include "core/check.h"
#include "core/tensor_internal.h"
#include "ember/factories.h"
#include "ember/ops.h"
#include "nn/packed_sequence_internal.h"

namespace ember::nn::utils::rnn {

namespace {

std::vector<int64_t> to_host_vector(const Tensor& t) {
  const Tensor host = t.to(Device(kCPU)).to(kInt64).contiguous();
  const int64_t* p = host.data_ptr<int64_t>();
  return std::vector<int64_t>(p, p + host.numel());
}

/// PyTorch's check of a lengths or batch_sizes tensor: 1-D, int64, on the CPU.
void check_long_cpu(const Tensor& t, const char* name) {
  EMBER_CHECK(t.dim() == 1 && t.device().is_cpu() && t.dtype() == kInt64, "'", name,
              "' argument should be a 1D CPU int64 tensor, but got ", t.dim(), "D ", t.device().str(), " ",
              scalar_type_name(t.dtype()), " tensor");
}

/// The sizes of `t` after its first `skip` dimensions.
std::vector<int64_t> trailing_sizes(const Tensor& t, int64_t skip) {
  std::vector<int64_t> out;
  for (int64_t d = skip; d < t.dim(); ++d) out.push_back(t.size(d));
  return out;
}

/// {leading..., trailing...}
std::vector<int64_t> shape_of(std::initializer_list<int64_t> leading, const std::vector<int64_t>& trailing) {
  std::vector<int64_t> out(leading);
  out.insert(out.end(), trailing.begin(), trailing.end());
  return out;
}

Tensor filled(const std::vector<int64_t>& sizes, double value, const Tensor& like) {
  return full(sizes, value, TensorOptions(like.dtype()).device(like.device()));
}

/// The inverse of a permutation held in an int64 tensor, computed on its device.
Tensor invert_permutation(const Tensor& permutation) {
  if (!permutation.defined()) return {};
  const TensorOptions options = TensorOptions(kInt64).device(permutation.device());
  return zeros({permutation.numel()}, options).scatter_add(0, permutation, arange(permutation.numel(), options));
}

void check_indices(const Tensor& indices, const Tensor& data, int64_t batch, const char* name) {
  if (!indices.defined()) return;
  EMBER_CHECK(indices.dim() == 1 && indices.dtype() == kInt64 && indices.numel() == batch, "PackedSequence: ", name,
              " must be a 1-D int64 tensor of batch_sizes[0] = ", batch, " elements, but got a ", indices.dim(), "-D ",
              scalar_type_name(indices.dtype()), " tensor of ", indices.numel(), " elements");
  EMBER_CHECK(indices.device() == data.device(), "PackedSequence: ", name, " is on ", indices.device().str(),
              " but data is on ", data.device().str(), "; both must be on the same device");
}

}  // namespace

namespace detail {

std::vector<int64_t> checked_batch_sizes(const PackedSequence& packed, const char* what) {
  ember::detail::check_defined(packed.data, what);
  EMBER_CHECK(packed.batch_sizes.defined(), what, ": the PackedSequence has no batch_sizes");
  EMBER_CHECK(packed.data.dim() >= 1, what, ": a PackedSequence's data needs at least 1 dimension, got a 0-D tensor");
  check_long_cpu(packed.batch_sizes, "batch_sizes");
  std::vector<int64_t> sizes = to_host_vector(packed.batch_sizes);
  int64_t total = 0;
  for (size_t t = 0; t < sizes.size(); ++t) {
    EMBER_CHECK(sizes[t] > 0 && (t == 0 || sizes[t] <= sizes[t - 1]), what,
                ": batch_sizes must be positive and non-increasing, but batch_sizes[", t, "] = ", sizes[t],
                t == 0 ? "" : " follows ", t == 0 ? "" : std::to_string(sizes[t - 1]));
    total += sizes[t];
  }
  EMBER_CHECK(total == packed.data.size(0), what, ": batch_sizes add up to ", total, " steps but the packed data has ",
              packed.data.size(0), " rows");
  return sizes;
}

}  // namespace detail

// ---- PackedSequence ----

PackedSequence::PackedSequence(Tensor data_arg, Tensor batch_sizes_arg, Tensor sorted, Tensor unsorted)
    : data(std::move(data_arg)),
      batch_sizes(std::move(batch_sizes_arg)),
      sorted_indices(std::move(sorted)),
      unsorted_indices(std::move(unsorted)) {
  const std::vector<int64_t> sizes = detail::checked_batch_sizes(*this, "PackedSequence");
  const int64_t batch = sizes.empty() ? 0 : sizes[0];
  EMBER_CHECK(sorted_indices.defined() || !unsorted_indices.defined(),
              "PackedSequence: unsorted_indices is given without sorted_indices");
  check_indices(sorted_indices, data, batch, "sorted_indices");
  if (!unsorted_indices.defined()) unsorted_indices = invert_permutation(sorted_indices);
  check_indices(unsorted_indices, data, batch, "unsorted_indices");
}

PackedSequence PackedSequence::to(Device device, bool non_blocking) const {
  if (data.device() == device) return *this;
  auto move = [&](const Tensor& t) { return t.defined() ? t.to(device, non_blocking) : t; };
  return PackedSequence(move(data), batch_sizes, move(sorted_indices), move(unsorted_indices));
}

PackedSequence PackedSequence::to(Dtype dtype) const {
  if (data.dtype() == dtype) return *this;
  return PackedSequence(data.to(dtype), batch_sizes, sorted_indices, unsorted_indices);
}

// ---- packing ----

PackedSequence pack_padded_sequence(const Tensor& input, const Tensor& lengths, bool batch_first, bool enforce_sorted) {
  ember::detail::check_defined(input, "pack_padded_sequence");
  ember::detail::check_defined(lengths, "pack_padded_sequence");
  // PyTorch first converts lengths with torch.as_tensor(lengths, dtype=torch.int64).
  const Tensor lengths_long = lengths.dtype() == kInt64 || lengths.dtype() == kBool ? lengths : lengths.to(kInt64);
  check_long_cpu(lengths_long, "lengths");
  return pack_padded_sequence(input, to_host_vector(lengths_long), batch_first, enforce_sorted);
}

PackedSequence pack_padded_sequence(const Tensor& input_arg, const std::vector<int64_t>& lengths_arg, bool batch_first,
                                    bool enforce_sorted) {
  ember::detail::check_defined(input_arg, "pack_padded_sequence");
  EMBER_CHECK(input_arg.dim() >= 2, "pack_padded_sequence: input must have at least 2 dimensions (",
              batch_first ? "[B, T, *]" : "[T, B, *]", "), got a ", input_arg.dim(), "-D tensor");
  const int64_t batch_dim = batch_first ? 0 : 1;
  std::vector<int64_t> lengths = lengths_arg;
  Tensor input = input_arg;
  Tensor sorted_indices;
  if (!enforce_sorted && lengths.size() == static_cast<size_t>(input.size(batch_dim))) {
    // torch.sort(lengths, descending=True), which keeps equal lengths in their order.
    std::vector<int64_t> order(lengths.size());
    std::iota(order.begin(), order.end(), int64_t{0});
    std::stable_sort(order.begin(), order.end(), [&](int64_t a, int64_t b) {
      return lengths[static_cast<size_t>(a)] > lengths[static_cast<size_t>(b)];
    });
    std::vector<int64_t> sorted_lengths;
    for (int64_t i : order) sorted_lengths.push_back(lengths[static_cast<size_t>(i)]);
    lengths = std::move(sorted_lengths);
    sorted_indices = tensor(order, TensorOptions(kInt64)).to(input.device());
    input = input.index_select(batch_dim, sorted_indices);
  }
  if (batch_first) input = input.transpose(0, 1);  // time-major from here on
  const int64_t steps = input.size(0), batch = input.size(1);
  EMBER_CHECK(input.numel() > 0, "Cannot pack empty tensors.");
  EMBER_CHECK(static_cast<int64_t>(lengths.size()) == batch,
              "Expected `len(lengths)` to be equal to batch_size, but got ", lengths.size(), " (batch_size=", batch,
              ")");
  EMBER_CHECK(lengths.back() > 0,
              "Length of all samples has to be greater than 0, but found an element in 'lengths' that is <= 0");
  for (size_t i = 1; i < lengths.size(); ++i) {
    EMBER_CHECK(lengths[i] <= lengths[i - 1],
                "`lengths` array must be sorted in decreasing order when `enforce_sorted` is True. You can pass "
                "`enforce_sorted=False` to pack_padded_sequence and/or pack_sequence to sidestep this requirement if "
                "you do not need ONNX exportability.");
  }
  // PyTorch accepts this and returns batch_sizes that describe rows the data does not have.
  EMBER_CHECK(lengths[0] <= steps, "pack_padded_sequence: the longest sequence has length ", lengths[0],
              " but the input holds only ", steps, " steps");

  // Scanning from the shortest sequence: whenever the length grows, the block of steps
  // [previous length, length) of the sequences still running is one slice of the input.
  const std::vector<int64_t> step_shape = shape_of({-1}, trailing_sizes(input, 2));
  std::vector<Tensor> blocks;
  std::vector<int64_t> batch_sizes;
  int64_t previous = 0;
  for (int64_t i = batch - 1; i >= 0; --i) {
    const int64_t length = lengths[static_cast<size_t>(i)];
    if (length == previous) continue;
    blocks.push_back(input.narrow(0, previous, length - previous).narrow(1, 0, i + 1).reshape(step_shape));
    batch_sizes.insert(batch_sizes.end(), static_cast<size_t>(length - previous), i + 1);
    previous = length;
  }
  return PackedSequence(cat(blocks, 0), tensor(batch_sizes, TensorOptions(kInt64)), sorted_indices);
}

std::pair<Tensor, Tensor> pad_packed_sequence(const PackedSequence& sequence, bool batch_first, double padding_value,
                                              std::optional<int64_t> total_length) {
  const std::vector<int64_t> batch_sizes = detail::checked_batch_sizes(sequence, "pad_packed_sequence");
  const Tensor& data = sequence.data;
  const int64_t real_steps = static_cast<int64_t>(batch_sizes.size());
  int64_t steps = real_steps;
  if (total_length) {
    EMBER_CHECK(*total_length >= real_steps,
                "Expected total_length to be at least the length of the longest sequence in input, but got "
                "total_length=",
                *total_length, " and max sequence length being ", real_steps);
    steps = *total_length;
  }
  EMBER_CHECK(real_steps > 0, "pad_packed_sequence: the PackedSequence holds no steps");
  const int64_t batch = batch_sizes[0];
  const std::vector<int64_t> trailing = trailing_sizes(data, 1);

  // One block per run of steps with the same batch size: those rows of the data, viewed as
  // [steps in the run, rows, *], and padding for the sequences that have ended.
  std::vector<Tensor> blocks;
  std::vector<int64_t> lengths(static_cast<size_t>(batch));
  int64_t offset = 0;
  for (int64_t start = 0; start < real_steps;) {
    const int64_t rows = batch_sizes[static_cast<size_t>(start)];
    int64_t end = start;
    while (end < real_steps && batch_sizes[static_cast<size_t>(end)] == rows) ++end;
    Tensor block = data.narrow(0, offset, (end - start) * rows).reshape(shape_of({end - start, rows}, trailing));
    if (rows < batch)
      block = cat({block, filled(shape_of({end - start, batch - rows}, trailing), padding_value, data)}, 1);
    blocks.push_back(block);
    const int64_t next_rows = end < real_steps ? batch_sizes[static_cast<size_t>(end)] : 0;
    for (int64_t b = next_rows; b < rows; ++b) lengths[static_cast<size_t>(b)] = end;
    offset += (end - start) * rows;
    start = end;
  }
  if (steps > real_steps)
    blocks.push_back(filled(shape_of({steps - real_steps, batch}, trailing), padding_value, data));
  Tensor padded = cat(blocks, 0);
  if (batch_first) padded = padded.transpose(0, 1);
  Tensor lengths_tensor = tensor(lengths, TensorOptions(kInt64));
  if (sequence.unsorted_indices.defined()) {
    padded = padded.index_select(batch_first ? 0 : 1, sequence.unsorted_indices);
    lengths_tensor = lengths_tensor.index_select(0, sequence.unsorted_indices.to(Device(kCPU)));
  }
  return {padded, lengths_tensor};
}

Tensor pad_sequence(const std::vector<Tensor>& sequences, bool batch_first, double padding_value,
                    const std::string& padding_side) {
  EMBER_CHECK(!sequences.empty(), "received an empty list of sequences");
  EMBER_CHECK(padding_side == "left" || padding_side == "right",
              "Expected padding_side to be one of left or right, but got ", padding_side, ".");
  const Tensor& first = sequences[0];
  int64_t longest = 0;
  for (size_t i = 0; i < sequences.size(); ++i) {
    ember::detail::check_defined(sequences[i], "pad_sequence");
    EMBER_CHECK(sequences[i].dim() >= 1, "pad_sequence: sequence ", i,
                " is a 0-D tensor; every sequence needs a first (time) dimension");
    EMBER_CHECK(trailing_sizes(sequences[i], 1) == trailing_sizes(first, 1), "pad_sequence: sequence ", i,
                " has sizes ", ember::detail::shape_str(sequences[i].sizes()), " but sequence 0 has ",
                ember::detail::shape_str(first.sizes()), "; all must agree after the first dimension");
    longest = std::max(longest, sequences[i].size(0));
  }
  const std::vector<int64_t> trailing = trailing_sizes(first, 1);
  std::vector<Tensor> columns;
  columns.reserve(sequences.size());
  for (const Tensor& s : sequences) {
    Tensor column = s.to(first.device(), first.dtype());
    const int64_t missing = longest - s.size(0);
    if (missing > 0) {
      Tensor padding = filled(shape_of({missing}, trailing), padding_value, first);
      column = padding_side == "right" ? cat({column, padding}, 0) : cat({padding, column}, 0);
    }
    columns.push_back(column);
  }
  return stack(columns, batch_first ? 0 : 1);
}

std::vector<Tensor> unpad_sequence(const Tensor& padded_arg, const Tensor& lengths, bool batch_first) {
  ember::detail::check_defined(padded_arg, "unpad_sequence");
  ember::detail::check_defined(lengths, "unpad_sequence");
  EMBER_CHECK(padded_arg.dim() >= 2, "unpad_sequence: padded_sequences must have at least 2 dimensions, got a ",
              padded_arg.dim(), "-D tensor");
  const Tensor padded = batch_first ? padded_arg : padded_arg.transpose(0, 1);
  EMBER_CHECK(lengths.dim() == 1 && lengths.numel() == padded.size(0), "unpad_sequence: expected ", padded.size(0),
              " lengths (one per sequence), got a ", lengths.dim(), "-D tensor of ", lengths.numel(), " elements");
  std::vector<Tensor> out;
  const std::vector<int64_t> host_lengths = to_host_vector(lengths);
  for (size_t i = 0; i < host_lengths.size(); ++i) {
    EMBER_CHECK(host_lengths[i] >= 0 && host_lengths[i] <= padded.size(1), "unpad_sequence: lengths[", i,
                "] = ", host_lengths[i], " is outside [0, ", padded.size(1), "], the padded length");
    out.push_back(padded[static_cast<int64_t>(i)].narrow(0, 0, host_lengths[i]));
  }
  return out;
}

PackedSequence pack_sequence(const std::vector<Tensor>& sequences, bool enforce_sorted) {
  Tensor padded = pad_sequence(sequences);
  std::vector<int64_t> lengths;
  for (const Tensor& s : sequences) lengths.push_back(s.size(0));
  return pack_padded_sequence(padded, lengths, false, enforce_sorted);
}

std::vector<Tensor> unpack_sequence(const PackedSequence& packed_sequences) {
  auto [padded, lengths] = pad_packed_sequence(packed_sequences, true);
  return unpad_sequence(padded, lengths, true);
}

}  // namespace ember::nn::utils::rnn
