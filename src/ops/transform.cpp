// Rearranging ops: flip, roll, rot90, repeat, tile, repeat_interleave, tril/triu, diagonal, diag,
// trace, movedim, broadcast_to/broadcast_tensors, meshgrid, outer, cross. Each is composed of
// views and of index_select, where and expand, as PyTorch composes most of them, so their
// gradients and device handling come from those ops; the index tensors are made on the input's
// device.
#include <algorithm>
#include <numeric>
#include <string>
#include <vector>

#include "core/check.h"
#include "core/tensor_internal.h"
#include "ember/factories.h"
#include "ember/ops.h"

namespace ember {

using detail::check_defined;
using detail::wrap_dim;

namespace {

/// 0, 1, ..., n-1 as int64 on `device`.
Tensor positions(int64_t n, Device device) { return arange(n, TensorOptions().dtype(kInt64).device(device)); }

/// Dims wrapped into [0, ndim), checked to be distinct, as PyTorch's dim lists are.
std::vector<int64_t> wrap_dims(IntList dims, int64_t ndim) {
  std::vector<int64_t> out;
  for (int64_t d : dims) {
    const int64_t w = wrap_dim(d, ndim);
    EMBER_CHECK(std::find(out.begin(), out.end(), w) == out.end(), "dim ", w,
                " appears multiple times in the list of dims");
    out.push_back(w);
  }
  return out;
}

}  // namespace

Tensor flip(const Tensor& x, IntList dims) {
  detail::OpContext context("flip", {{"input", &x}});
  check_defined(x, "flip");
  const std::vector<int64_t> wrapped = wrap_dims(dims, std::max<int64_t>(x.dim(), 1));
  if (wrapped.empty() || x.dim() == 0) return x.clone();
  Tensor out = x;
  for (int64_t d : wrapped) {
    const int64_t n = x.size(d);
    const Tensor reversed = positions(n, x.device()).neg() + (n - 1);
    if (d == x.dim() - 1 && x.dim() > 1 && n > 1) {
      // Along the last dimension, index_select copies one element per row and a gather along
      // that dimension walks down the columns; one gather over the flattened tensor, with each
      // row's positions reversed, reads and writes in order (several times faster).
      const int64_t rows = out.numel() / n;
      const Tensor row_starts = (positions(rows, x.device()) * n).unsqueeze(1);
      const Tensor flat_index = (row_starts + reversed.unsqueeze(0)).reshape({-1});
      out = gather(out.contiguous().reshape({-1}), 0, flat_index).view(out.sizes());
    } else {
      out = index_select(out, d, reversed);
    }
  }
  return out;
}

Tensor fliplr(const Tensor& x) {
  EMBER_CHECK(x.dim() >= 2, "Input must be >= 2-d.");
  return flip(x, {1});
}

Tensor flipud(const Tensor& x) {
  EMBER_CHECK(x.dim() >= 1, "Input must be >= 1-d.");
  return flip(x, {0});
}

Tensor roll(const Tensor& x, IntList shifts, IntList dims) {
  detail::OpContext context("roll", {{"input", &x}});
  check_defined(x, "roll");
  EMBER_CHECK(!shifts.empty(), "`shifts` required");
  if (dims.empty()) {
    EMBER_CHECK(shifts.size() == 1, "shifts and dimensions must align. shifts: ", shifts.size(), ", dims:", 0);
    return roll(x.flatten(), shifts, {0}).view(x.sizes());
  }
  EMBER_CHECK(shifts.size() == dims.size(), "shifts and dimensions must align. shifts: ", shifts.size(),
              ", dims:", dims.size());
  Tensor out = x;
  for (size_t i = 0; i < dims.size(); ++i) {
    const int64_t d = wrap_dim(dims[i], x.dim());
    const int64_t n = x.size(d);
    if (n == 0) continue;
    const int64_t shift = ((shifts[i] % n) + n) % n;
    // out[j] = x[(j - shift) mod n]
    out = index_select(out, d, remainder(positions(n, x.device()) + (n - shift), Scalar(n)));
  }
  return out;
}

Tensor rot90(const Tensor& x, int64_t k, IntList dims) {
  detail::OpContext context("rot90", {{"input", &x}});
  check_defined(x, "rot90");
  EMBER_CHECK(dims.size() == 2, "expected total rotation dims == 2, but got dims = ", dims.size());
  EMBER_CHECK(x.dim() >= 2, "expected total dims >= 2, but got total dims = ", x.dim());
  EMBER_CHECK(dims[0] != dims[1] && std::abs(dims[0] - dims[1]) != x.dim(),
              "expected rotation dims to be different, but got dim0 = ", dims[0], " and dim1 = ", dims[1]);
  EMBER_CHECK(dims[0] < x.dim() && dims[0] >= -x.dim(), "Rotation dim0 out of range, dim0 = ", dims[0]);
  EMBER_CHECK(dims[1] < x.dim() && dims[1] >= -x.dim(), "Rotation dim1 out of range, dim1 = ", dims[1]);
  switch (((k % 4) + 4) % 4) {
    case 1:
      return flip(x, {dims[1]}).transpose(dims[0], dims[1]);
    case 2:
      return flip(x, dims);
    case 3:
      return flip(x, {dims[0]}).transpose(dims[0], dims[1]);
    default:
      return x.clone();
  }
}

Tensor repeat(const Tensor& x, IntList repeats) {
  detail::OpContext context("repeat", {{"input", &x}});
  check_defined(x, "repeat");
  const auto n = static_cast<int64_t>(repeats.size());
  EMBER_CHECK(n >= x.dim(),
              "Number of dimensions of repeat dims can not be smaller than number of dimensions of tensor");
  for (int64_t r : repeats)
    EMBER_CHECK(r >= 0, "Trying to create tensor with negative dimension ", r, ": ", detail::shape_str(repeats));
  // [s0, s1, ...] padded with leading ones, viewed as [1, s0, 1, s1, ...], expanded to
  // [r0, s0, r1, s1, ...] and merged pairwise: each copy of the input follows the last.
  std::vector<int64_t> padded(static_cast<size_t>(n - x.dim()), 1);
  for (int64_t s : x.sizes()) padded.push_back(s);
  std::vector<int64_t> interleaved, expanded, result;
  for (int64_t i = 0; i < n; ++i) {
    interleaved.insert(interleaved.end(), {1, padded[static_cast<size_t>(i)]});
    expanded.insert(expanded.end(), {repeats[static_cast<size_t>(i)], padded[static_cast<size_t>(i)]});
    result.push_back(repeats[static_cast<size_t>(i)] * padded[static_cast<size_t>(i)]);
  }
  return x.reshape(interleaved).expand(expanded).reshape(result);
}

Tensor tile(const Tensor& x, IntList reps) {
  std::vector<int64_t> padded(reps.begin(), reps.end());
  while (static_cast<int64_t>(padded.size()) < x.dim()) padded.insert(padded.begin(), 1);
  return repeat(x, padded);
}

Tensor repeat_interleave(const Tensor& x, const Tensor& repeats, std::optional<int64_t> dim) {
  detail::OpContext context("repeat_interleave", {{"input", &x}, {"repeats", &repeats}});
  check_defined(x, "repeat_interleave");
  check_defined(repeats, "repeat_interleave");
  EMBER_CHECK(repeats.dim() <= 1, "repeats must be 0-dim or 1-dim tensor");
  EMBER_CHECK(repeats.dtype() == kInt64 || repeats.dtype() == kInt32, "repeats has to be Long or Int tensor");
  const Tensor input = dim ? x : x.flatten();
  const int64_t d = dim ? wrap_dim(*dim, std::max<int64_t>(x.dim(), 1)) : 0;
  const int64_t n = input.dim() == 0 ? 1 : input.size(d);
  // The counts decide the result's size, so they are read on the host (PyTorch reads them too).
  const Tensor counts =
      (repeats.dim() == 0 ? repeats.expand({n}) : repeats).to(Device(DeviceType::CPU), kInt64).contiguous();
  EMBER_CHECK(counts.numel() == n,
              "repeats must have the same size as input along dim, but got repeats.size(0) = ", counts.numel(),
              " and input.size(", d, ") = ", n);
  std::vector<int64_t> index;
  const auto* c = static_cast<const int64_t*>(counts.data_ptr());
  for (int64_t i = 0; i < n; ++i) {
    EMBER_CHECK(c[i] >= 0, "repeats can not be negative");
    index.insert(index.end(), static_cast<size_t>(c[i]), i);
  }
  return index_select(input.dim() == 0 ? input.reshape({1}) : input, d,
                      tensor(index, TensorOptions().dtype(kInt64)).to(x.device()));
}

Tensor repeat_interleave(const Tensor& x, int64_t repeats, std::optional<int64_t> dim) {
  return repeat_interleave(x, tensor(std::vector<int64_t>{repeats}).reshape({}), dim);
}

namespace {

/// The mask of the lower (or upper) triangle of the last two dimensions: col - row <= k (>= k).
Tensor triangle_mask(const Tensor& x, int64_t k, bool lower) {
  const int64_t rows = x.size(-2), cols = x.size(-1);
  Tensor offset = positions(cols, x.device()).unsqueeze(0) - positions(rows, x.device()).unsqueeze(1);
  return lower ? offset <= k : offset >= k;
}

Tensor triangle(const Tensor& x, int64_t k, bool lower, const char* op) {
  detail::OpContext context(op, {{"input", &x}});
  check_defined(x, op);
  EMBER_CHECK(x.dim() >= 2, op, ": input tensor must have at least 2 dimensions");
  return where(triangle_mask(x, k, lower), x, zeros_like(x));
}

}  // namespace

Tensor tril(const Tensor& x, int64_t diagonal) { return triangle(x, diagonal, true, "tril"); }
Tensor triu(const Tensor& x, int64_t diagonal) { return triangle(x, diagonal, false, "triu"); }

Tensor diagonal(const Tensor& x, int64_t offset, int64_t dim1, int64_t dim2) {
  detail::OpContext context("diagonal", {{"input", &x}});
  check_defined(x, "diagonal");
  EMBER_CHECK(x.dim() >= 2, "diagonal dimensions requires ndim larger than 1");
  const int64_t d1 = wrap_dim(dim1, x.dim()), d2 = wrap_dim(dim2, x.dim());
  EMBER_CHECK(d1 != d2, "diagonal dimensions cannot be identical ", dim1, ", ", dim2);
  // A view: the other dimensions keep their strides, the diagonal steps along both at once.
  int64_t length = offset >= 0 ? std::min(x.size(d1), x.size(d2) - offset) : std::min(x.size(d1) + offset, x.size(d2));
  length = std::max<int64_t>(length, 0);
  int64_t start = x.storage_offset();
  if (length > 0) start += offset >= 0 ? offset * x.stride(d2) : -offset * x.stride(d1);
  std::vector<int64_t> sizes, strides;
  for (int64_t d = 0; d < x.dim(); ++d) {
    if (d == d1 || d == d2) continue;
    sizes.push_back(x.size(d));
    strides.push_back(x.stride(d));
  }
  sizes.push_back(length);
  strides.push_back(x.stride(d1) + x.stride(d2));
  return x.as_strided(sizes, strides, start);
}

Tensor diag(const Tensor& x, int64_t diagonal_offset) {
  detail::OpContext context("diag", {{"input", &x}});
  check_defined(x, "diag");
  EMBER_CHECK(x.dim() == 1 || x.dim() == 2, "diag(): Supports 1D or 2D tensors. Got ", x.dim(), "D");
  if (x.dim() == 2) return diagonal(x, diagonal_offset, 0, 1).clone();
  // A vector onto the k-th diagonal of a square matrix of zeros, scattered into its flat form.
  const int64_t n = x.size(0), k = diagonal_offset, side = n + std::abs(k);
  Tensor rows = positions(n, x.device()) + std::max<int64_t>(-k, 0);
  Tensor flat_index = rows * side + rows + k;
  return zeros({side * side}, TensorOptions().dtype(x.dtype()).device(x.device()))
      .scatter_add(0, flat_index, x)
      .view({side, side});
}

Tensor trace(const Tensor& x) {
  detail::OpContext context("trace", {{"input", &x}});
  check_defined(x, "trace");
  EMBER_CHECK(x.dim() == 2, "trace: expected a matrix, but got tensor with dim ", x.dim());
  return diagonal(x, 0, 0, 1).sum();
}

Tensor movedim(const Tensor& x, IntList source, IntList destination) {
  detail::OpContext context("movedim", {{"input", &x}});
  check_defined(x, "movedim");
  EMBER_CHECK(source.size() == destination.size(), "movedim: Invalid source or destination dims: source (",
              detail::shape_str(source), " dims) should contain the same number of dims as destination (",
              detail::shape_str(destination), " dims)");
  const int64_t n = x.dim();
  const std::vector<int64_t> src = wrap_dims(source, std::max<int64_t>(n, 1));
  const std::vector<int64_t> dst = wrap_dims(destination, std::max<int64_t>(n, 1));
  if (n == 0) return x;
  // Place each moved dim at its destination, then fill the free places with the rest in order.
  std::vector<int64_t> order(static_cast<size_t>(n), -1);
  std::vector<bool> moved(static_cast<size_t>(n), false);
  for (size_t i = 0; i < src.size(); ++i) {
    order[static_cast<size_t>(dst[i])] = src[i];
    moved[static_cast<size_t>(src[i])] = true;
  }
  int64_t next = 0;
  for (auto& slot : order) {
    if (slot >= 0) continue;
    while (moved[static_cast<size_t>(next)]) ++next;
    slot = next++;
  }
  return x.permute(order);
}

Tensor broadcast_to(const Tensor& x, IntList sizes) { return x.expand(sizes); }

std::vector<Tensor> broadcast_tensors(const std::vector<Tensor>& tensors) {
  Dims shape;
  for (const Tensor& t : tensors) {
    check_defined(t, "broadcast_tensors");
    shape = broadcast_shapes(shape, t.sizes());
  }
  std::vector<Tensor> out;
  out.reserve(tensors.size());
  for (const Tensor& t : tensors) out.push_back(t.expand(shape));
  return out;
}

std::vector<Tensor> meshgrid(const std::vector<Tensor>& tensors, std::string_view indexing) {
  EMBER_CHECK(!tensors.empty(), "torch.meshgrid: Expected at least one tensor");
  EMBER_CHECK(indexing == "ij" || indexing == "xy",
              "torch.meshgrid: indexing must be one of \"xy\" or \"ij\", but received: ", indexing);
  std::vector<int64_t> shape;
  for (const Tensor& t : tensors) {
    check_defined(t, "meshgrid");
    EMBER_CHECK(t.dim() <= 1, "torch.meshgrid: Expected 0D or 1D tensor in the tensor list but got: ", t.dim(), "D");
    shape.push_back(t.numel());
  }
  // "xy" swaps the first two axes of the grid (Cartesian indexing).
  const bool swap = indexing == "xy" && tensors.size() >= 2;
  if (swap) std::swap(shape[0], shape[1]);
  std::vector<Tensor> out;
  for (size_t i = 0; i < tensors.size(); ++i) {
    size_t axis = i;
    if (swap && i < 2) axis = 1 - i;
    std::vector<int64_t> view(tensors.size(), 1);
    view[axis] = tensors[i].numel();
    out.push_back(tensors[i].reshape(view).expand(shape));
  }
  return out;
}

Tensor outer(const Tensor& a, const Tensor& b) {
  detail::OpContext context("outer", {{"input", &a}, {"vec2", &b}});
  check_defined(a, "outer");
  check_defined(b, "outer");
  EMBER_CHECK(a.dim() == 1 && b.dim() == 1, "outer: Expected 1-D argument self, but got ", a.dim(), "-D");
  return a.unsqueeze(1) * b.unsqueeze(0);
}

Tensor cross(const Tensor& a, const Tensor& b, int64_t dim) {
  detail::OpContext context("linalg_cross", {{"input", &a}, {"other", &b}});
  check_defined(a, "cross");
  check_defined(b, "cross");
  EMBER_CHECK(a.dim() == b.dim(), "linalg.cross: inputs must have the same number of dimensions.");
  const int64_t d = wrap_dim(dim, a.dim());
  EMBER_CHECK(a.size(d) == 3 && b.size(d) == 3, "linalg.cross: inputs dimension ", dim, " must have length 3. Got ",
              a.size(d), " and ", b.size(d));
  auto part = [&](const Tensor& t, int64_t i) { return t.narrow(d, i, 1); };
  return cat({part(a, 1) * part(b, 2) - part(a, 2) * part(b, 1), part(a, 2) * part(b, 0) - part(a, 0) * part(b, 2),
              part(a, 0) * part(b, 1) - part(a, 1) * part(b, 0)},
             d);
}

Tensor Tensor::flip(IntList dims) const { return ember::flip(*this, dims); }
Tensor Tensor::roll(IntList shifts, IntList dims) const { return ember::roll(*this, shifts, dims); }
Tensor Tensor::repeat(IntList repeats) const { return ember::repeat(*this, repeats); }
Tensor Tensor::tile(IntList reps) const { return ember::tile(*this, reps); }
Tensor Tensor::tril(int64_t diagonal) const { return ember::tril(*this, diagonal); }
Tensor Tensor::triu(int64_t diagonal) const { return ember::triu(*this, diagonal); }
Tensor Tensor::diagonal(int64_t offset, int64_t dim1, int64_t dim2) const {
  return ember::diagonal(*this, offset, dim1, dim2);
}
Tensor Tensor::movedim(IntList source, IntList destination) const { return ember::movedim(*this, source, destination); }

}  // namespace ember
