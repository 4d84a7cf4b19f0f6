// The ops that cut a tensor into views along one dimension: unbind, split, split_with_sizes and
// chunk. Their pieces share one gather node, so that backward builds the input's gradient once
// from all the pieces' gradients (a stack or a cat) instead of adding up one input-sized
// gradient per piece, which would make a recurrent layer's backward quadratic in its length.
#include <vector>

#include "autograd/node.h"
#include "core/check.h"
#include "core/tensor_internal.h"
#include "ember/factories.h"
#include "ember/ops.h"

namespace ember {

namespace {

/// The pieces' gradients, with zeros standing in for the pieces no gradient reached;
/// sizes_of(i) gives piece i's sizes.
template <typename SizesOf>
std::vector<Tensor> with_zeros(std::vector<Tensor>& grads, const SizesOf& sizes_of) {
  Tensor any;
  for (const Tensor& g : grads) {
    if (g.defined()) any = g;
  }
  for (size_t i = 0; i < grads.size(); ++i) {
    if (!grads[i].defined()) grads[i] = zeros(sizes_of(i), TensorOptions(any.dtype()).device(any.device()));
  }
  return grads;
}

/// Marks views made in grad mode as pieces of a multi-output op, which an in-place write refuses
/// (PyTorch's CreationMeta::MULTI_OUTPUT_NODE).
void mark_pieces(std::vector<Tensor>& pieces) {
  if (!GradMode::is_enabled()) return;
  for (size_t i = 0; i < pieces.size(); ++i) {
    pieces[i].impl().view_creation = detail::TensorImpl::ViewCreation::MultiOutput;
    pieces[i].impl().view_output_nr = static_cast<uint32_t>(i);
  }
}

/// Views of `self` of `lengths` along `d` (which must add up to its size there), recorded as
/// one split named `name`.
std::vector<Tensor> split_along(const Tensor& self, int64_t d, const std::vector<int64_t>& lengths, const char* name) {
  std::vector<Tensor> pieces;
  pieces.reserve(lengths.size());
  std::vector<Dims> piece_sizes;
  int64_t start = 0;
  for (int64_t length : lengths) {
    Dims sizes(self.sizes()), strides(self.strides());
    sizes[d] = length;
    pieces.push_back(
        detail::make_view(self, sizes, std::move(strides), self.storage_offset() + start * self.stride(d)));
    piece_sizes.push_back(std::move(sizes));
    start += length;
  }
  mark_pieces(pieces);
  if (autograd::needs_grad({&self})) {
    autograd::record_pieces(pieces, name, self, [d, piece_sizes](std::vector<Tensor>& grads) {
      return std::vector<Tensor>{cat(with_zeros(grads, [&](size_t i) { return piece_sizes[i]; }), d)};
    });
  }
  return pieces;
}

}  // namespace

std::vector<Tensor> Tensor::unbind(int64_t d) const {
  detail::check_defined(*this, "unbind");
  d = detail::wrap_dim(d, dim());
  EMBER_CHECK(dim() > 0, "Dimension specified as 0 but tensor has no dimensions");
  const int64_t n = size(d);
  Dims sizes(this->sizes()), strides(this->strides());
  sizes.erase(d);
  strides.erase(d);
  std::vector<Tensor> pieces;
  pieces.reserve(static_cast<size_t>(n));
  for (int64_t i = 0; i < n; ++i)
    pieces.push_back(detail::make_view(*this, sizes, strides, storage_offset() + i * stride(d)));
  mark_pieces(pieces);
  if (autograd::needs_grad({this})) {
    autograd::record_pieces(pieces, "UnbindBackward0", *this, [d, sizes](std::vector<Tensor>& grads) {
      return std::vector<Tensor>{stack(with_zeros(grads, [&](size_t) { return sizes; }), d)};
    });
  }
  return pieces;
}

std::vector<Tensor> Tensor::split(int64_t split_size, int64_t d) const {
  detail::check_defined(*this, "split");
  EMBER_CHECK(dim() > 0, "split expects at least a 1-dimensional tensor");
  EMBER_CHECK(split_size >= 0, "split expects split_size be non-negative, but got split_size=", split_size);
  d = detail::wrap_dim(d, dim());
  const int64_t n = size(d);
  EMBER_CHECK(split_size > 0 || n == 0, "split_size can only be 0 if dimension size is 0, but got dimension size of ",
              n);
  std::vector<int64_t> lengths;
  if (split_size == 0) {
    lengths.push_back(0);
  } else {
    for (int64_t start = 0; start < n || lengths.empty(); start += split_size) {
      lengths.push_back(std::min(split_size, n - start));
    }
  }
  return split_along(*this, d, lengths, "SplitBackward0");
}

std::vector<Tensor> Tensor::split_with_sizes(IntList split_sizes, int64_t d) const {
  detail::check_defined(*this, "split_with_sizes");
  EMBER_CHECK(dim() > 0, "split expects at least a 1-dimensional tensor");
  const int64_t given_dim = d;  // PyTorch's message names the dimension as given
  d = detail::wrap_dim(d, dim());
  int64_t total = 0;
  for (int64_t s : split_sizes) {
    EMBER_CHECK(s >= 0, "split_with_sizes expects split_sizes have only non-negative entries, but got split_sizes=",
                detail::shape_str(split_sizes));
    total += s;
  }
  EMBER_CHECK(total == size(d), "split_with_sizes expects split_sizes to sum exactly to ", size(d),
              " (input tensor's size at dimension ", given_dim,
              "), but got split_sizes=", detail::shape_str(split_sizes));
  return split_along(*this, d, std::vector<int64_t>(split_sizes.begin(), split_sizes.end()), "SplitWithSizesBackward0");
}

std::vector<Tensor> Tensor::chunk(int64_t chunks, int64_t d) const {
  detail::check_defined(*this, "chunk");
  EMBER_CHECK(dim() > 0, "chunk expects at least a 1-dimensional tensor");
  EMBER_CHECK(chunks > 0, "chunk expects `chunks` to be greater than 0, got: ", chunks);
  d = detail::wrap_dim(d, dim());
  const int64_t n = size(d);
  const int64_t split_size = (n + chunks - 1) / chunks;
  // An empty dimension still gives `chunks` empty pieces, as in PyTorch.
  if (split_size == 0 && n == 0)
    return split_along(*this, d, std::vector<int64_t>(chunks, 0), "SplitWithSizesBackward0");
  return split(split_size, d);
}

}  // namespace ember
