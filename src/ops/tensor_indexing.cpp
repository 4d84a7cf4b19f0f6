// Tensor indexing as Python's x[...] (ember::index, ember::index_put_) and torch.index_put.
//
// Basic indices (integers, slices, None, Ellipsis) become views: select, slice, unsqueeze. The
// tensor indices left over are advanced indexing, which is reduced to one flat gather or scatter:
// every result element's row-major offset in a contiguous copy of x is computed as a sum of
// broadcast terms (index * stride for the indexed dimensions, arange * stride for the others), so
// reading is index_select over the flattened x and writing is scatter / scatter_add into it. Their
// gradients (scatter-add back for reads, as PyTorch's accumulating index_put) come with them.
#include <algorithm>
#include <span>
#include <string>
#include <vector>

#include "core/check.h"
#include "core/tensor_internal.h"
#include "ember/factories.h"
#include "ember/grad_mode.h"
#include "ember/indexing.h"
#include "ember/ops.h"
#include "ops/index_internal.h"

namespace ember {

using detail::check_defined;
using detail::shape_str;

namespace detail {

Tensor long_index_on(const Tensor& index, Device device) { return index.to(device, kInt64); }

Tensor wrap_negative(const Tensor& index, int64_t size) { return where(index < 0, index + size, index); }

void check_index_bounds(const Tensor& index, int64_t size, bool allow_negative,
                        const std::function<void(int64_t)>& fail) {
  if (!index.is_cpu() || index.numel() == 0) return;
  const Tensor values = index.to(kInt64).contiguous();
  const auto* data = static_cast<const int64_t*>(values.data_ptr());
  const int64_t low = allow_negative ? -size : 0;
  for (int64_t i = 0; i < values.numel(); ++i) {
    if (data[i] < low || data[i] >= size) fail(data[i]);
  }
}

Tensor nonzero_flat_positions(const Tensor& x) {
  NoGradGuard no_grad;
  const Tensor flags = (x != 0).to(Device(DeviceType::CPU)).contiguous().reshape({-1});
  const auto* data = static_cast<const bool*>(flags.data_ptr());
  std::vector<int64_t> positions;
  for (int64_t i = 0; i < flags.numel(); ++i) {
    if (data[i]) positions.push_back(i);
  }
  return tensor(positions, TensorOptions().dtype(kInt64));
}

namespace {

bool is_mask(const Tensor& t) { return t.dtype() == kBool || t.dtype() == kUInt8; }

std::string shapes_list(const std::vector<Tensor>& tensors) {
  std::string out;
  for (const Tensor& t : tensors) out += (out.empty() ? "" : ", ") + shape_str(t.sizes());
  return out;
}

/// The broadcast of every tensor's sizes, or PyTorch's message naming them all.
Dims broadcast_all(const std::vector<Tensor>& tensors) {
  size_t ndim = 0;
  for (const Tensor& t : tensors) ndim = std::max(ndim, static_cast<size_t>(t.dim()));
  Dims out(ndim, 1);
  for (const Tensor& t : tensors) {
    const size_t shift = ndim - static_cast<size_t>(t.dim());
    for (int64_t d = 0; d < t.dim(); ++d) {
      int64_t& target = out[shift + static_cast<size_t>(d)];
      const int64_t size = t.size(d);
      if (size == target || size == 1) continue;
      EMBER_CHECK(target == 1, "shape mismatch: indexing tensors could not be broadcast together with shapes ",
                  shapes_list(tensors));
      target = size;
    }
  }
  return out;
}

}  // namespace

AdvancedIndex advanced_index_of(const Tensor& x, const std::vector<Tensor>& indices, bool explicit_list) {
  // Masks stand for the positions of their true elements, one index tensor per dimension.
  std::vector<Tensor> per_dim;
  for (const Tensor& t : indices) {
    if (!t.defined()) {
      per_dim.emplace_back();
      continue;
    }
    EMBER_CHECK(t.dtype() == kInt64 || t.dtype() == kInt32 || is_mask(t),
                "tensors used as indices must be long, int, byte or bool tensors");
    if (!is_mask(t)) {
      per_dim.push_back(t);
      continue;
    }
    const int64_t start = static_cast<int64_t>(per_dim.size());
    for (int64_t j = 0; j < t.dim(); ++j) {
      EMBER_CHECK(start + j < x.dim(), "too many indices for tensor of dimension ", x.dim());
      EMBER_CHECK(t.size(j) == x.size(start + j), "The shape of the mask ", shape_str(t.sizes()), " at index ", j,
                  " does not match the shape of the indexed tensor ", shape_str(x.sizes()), " at index ", start + j);
    }
    const Tensor positions = nonzero(t);
    for (int64_t j = 0; j < t.dim(); ++j) per_dim.push_back(positions.select(1, j));
  }
  const int64_t count = static_cast<int64_t>(per_dim.size());
  if (explicit_list) {
    EMBER_CHECK(count <= x.dim(), "too many indices for tensor of dimension ", x.dim(), " (got ", count, ")");
  } else {
    EMBER_CHECK(count <= x.dim(), "too many indices for tensor of dimension ", x.dim());
  }
  std::vector<int64_t> indexed_dims;
  std::vector<Tensor> indexed;
  for (int64_t d = 0; d < count; ++d) {
    if (!per_dim[d].defined()) continue;
    indexed_dims.push_back(d);
    indexed.push_back(per_dim[d]);
  }
  EMBER_CHECK(!indexed.empty(), "advanced indexing needs at least one index tensor");
  const Dims broadcast_dims = broadcast_all(indexed);
  const std::vector<int64_t> broadcast(broadcast_dims.begin(), broadcast_dims.end());
  for (size_t k = 0; k < indexed.size(); ++k) {
    const int64_t size = x.size(indexed_dims[k]);
    check_index_bounds(indexed[k], size, true, [&](int64_t v) {
      fail("index ", v, " is out of bounds for dimension ", k, " with size ", size);
    });
  }
  // Where the broadcast index dimensions go: in place of the indexed ones when those are
  // adjacent, first otherwise.
  const bool adjacent = indexed_dims.back() - indexed_dims.front() + 1 == static_cast<int64_t>(indexed_dims.size());
  const int64_t at = adjacent ? indexed_dims.front() : 0;
  const int64_t nb = static_cast<int64_t>(broadcast.size());
  std::vector<int64_t> result_sizes;
  std::vector<int64_t> rest_position(static_cast<size_t>(x.dim()), -1);
  for (int64_t d = 0; d < x.dim(); ++d) {
    if (adjacent && d == at) result_sizes.insert(result_sizes.end(), broadcast.begin(), broadcast.end());
    if (std::find(indexed_dims.begin(), indexed_dims.end(), d) != indexed_dims.end()) continue;
    if (!adjacent && result_sizes.empty()) result_sizes.insert(result_sizes.end(), broadcast.begin(), broadcast.end());
    rest_position[d] = static_cast<int64_t>(result_sizes.size());
    result_sizes.push_back(x.size(d));
  }
  if (result_sizes.size() < static_cast<size_t>(nb))
    result_sizes.insert(result_sizes.end(), broadcast.begin(), broadcast.end());
  const int64_t rank = static_cast<int64_t>(result_sizes.size());
  const Dims strides = contiguous_strides(x.sizes());
  const TensorOptions on_device = TensorOptions().dtype(kInt64).device(x.device());
  NoGradGuard no_grad;
  Tensor offsets = zeros({}, on_device);
  for (size_t k = 0; k < indexed.size(); ++k) {
    const int64_t d = indexed_dims[k];
    Tensor idx = wrap_negative(long_index_on(indexed[k], x.device()), x.size(d));
    Dims shape(static_cast<size_t>(rank), 1);
    const int64_t shift = nb - idx.dim();
    for (int64_t j = 0; j < idx.dim(); ++j) shape[at + shift + j] = idx.size(j);
    offsets = offsets + idx.reshape(shape) * strides[d];
  }
  for (int64_t d = 0; d < x.dim(); ++d) {
    if (rest_position[d] < 0) continue;
    Dims shape(static_cast<size_t>(rank), 1);
    shape[rest_position[d]] = x.size(d);
    offsets = offsets + arange(x.size(d), on_device).reshape(shape) * strides[d];
  }
  return {offsets.expand(result_sizes).contiguous()};
}

Tensor advanced_get(const Tensor& x, const std::vector<Tensor>& indices) {
  const AdvancedIndex where_from = advanced_index_of(x, indices, false);
  const Tensor& offsets = where_from.offsets;
  return index_select(x.reshape({-1}), 0, offsets.reshape({-1})).view(offsets.sizes());
}

Tensor advanced_put(const Tensor& x, const std::vector<Tensor>& indices, const Tensor& values, bool accumulate,
                    bool explicit_list) {
  const AdvancedIndex where_to = advanced_index_of(x, indices, explicit_list);
  const Tensor& offsets = where_to.offsets;
  // PyTorch checks that the values broadcast to the indexed result's shape.
  bool fits = values.dim() <= offsets.dim();
  for (int64_t j = 1; fits && j <= values.dim(); ++j) {
    fits = values.size(-j) == 1 || values.size(-j) == offsets.size(-j);
  }
  EMBER_CHECK(fits, "shape mismatch: value tensor of shape ", shape_str(values.sizes()),
              " cannot be broadcast to indexing result of shape ", shape_str(offsets.sizes()));
  const Tensor flat_values = values.to(x.device()).expand(offsets.sizes()).reshape({-1});
  const Tensor flat_offsets = offsets.reshape({-1});
  const Tensor flat_x = x.reshape({-1});
  const Tensor out =
      accumulate ? scatter_add(flat_x, 0, flat_offsets, flat_values) : scatter(flat_x, 0, flat_offsets, flat_values);
  return out.view(x.sizes());
}

}  // namespace detail

Tensor index_put(const Tensor& x, const std::vector<Tensor>& indices, const Tensor& values, bool accumulate) {
  detail::OpContext context("index_put", {{"input", &x}, {"values", &values}});
  check_defined(x, "index_put");
  check_defined(values, "index_put");
  EMBER_CHECK(values.dtype() == x.dtype(), "Index put requires the source and destination dtypes match, got ",
              scalar_type_name(x.dtype()), " for the destination and ", scalar_type_name(values.dtype()),
              " for the source.");
  return detail::advanced_put(x, indices, values, accumulate, true);
}

Tensor& index_put_(Tensor& x, const std::vector<Tensor>& indices, const Tensor& values, bool accumulate) {
  Tensor result = index_put(x, indices, values, accumulate);
  x.copy_(result);
  return x;
}

namespace {

/// What the basic indices leave: a view of x, and the advanced indices still to apply to it,
/// one entry per dimension of the view (undefined where there is none).
struct BasicResult {
  Tensor view;
  std::vector<Tensor> advanced;
  bool has_advanced = false;
};

BasicResult apply_basic(const Tensor& x, std::span<const TensorIndex> indices) {
  // How many of x's dimensions the indices name, to size the Ellipsis.
  int64_t specified = 0;
  bool seen_ellipsis = false;
  for (const TensorIndex& i : indices) {
    if (i.is_integer() || i.is_slice()) ++specified;
    if (i.is_tensor()) {
      const Tensor& t = i.tensor();
      specified += t.defined() && (t.dtype() == kBool || t.dtype() == kUInt8) ? t.dim() : 1;
    }
    if (i.is_ellipsis()) {
      EMBER_CHECK(!seen_ellipsis, "an index can only have a single ellipsis ('...')");
      seen_ellipsis = true;
    }
  }
  EMBER_CHECK(specified <= x.dim(), "too many indices for tensor of dimension ", x.dim());
  BasicResult r{x, {}, false};
  int64_t dim = 0;
  // r.advanced lists one entry per dimension of the view up to the last tensor index, a mask
  // standing for all the dimensions it covers (advanced_index_of expands it).
  auto pass_dims = [&](int64_t n) {
    for (int64_t k = 0; k < n; ++k) r.advanced.emplace_back();
  };
  auto note_advanced = [&](const Tensor& t) {
    r.advanced.push_back(t);
    r.has_advanced = true;
  };
  const TensorOptions long_on_cpu = TensorOptions().dtype(kInt64);
  for (const TensorIndex& i : indices) {
    switch (i.kind()) {
      case TensorIndex::Kind::Integer: {
        const int64_t size = r.view.size(dim);
        EMBER_CHECK(i.integer() >= -size && i.integer() < size, "index ", i.integer(),
                    " is out of bounds for dimension ", dim, " with size ", size);
        r.view = r.view.select(dim, i.integer());
        break;
      }
      case TensorIndex::Kind::Slice: {
        EMBER_CHECK(i.slice().step > 0, "step must be greater than zero");
        r.view = r.view.slice(dim, i.slice().start, i.slice().stop, i.slice().step);
        pass_dims(1);
        ++dim;
        break;
      }
      case TensorIndex::Kind::None:
        r.view = r.view.unsqueeze(dim);
        pass_dims(1);
        ++dim;
        break;
      case TensorIndex::Kind::Ellipsis:
        pass_dims(x.dim() - specified);
        dim += x.dim() - specified;
        break;
      case TensorIndex::Kind::Boolean:
        // True adds a dimension of one that the index [0] keeps, False one that [] empties.
        r.view = r.view.unsqueeze(dim);
        note_advanced(i.boolean() ? zeros({1}, long_on_cpu) : zeros({0}, long_on_cpu));
        ++dim;
        break;
      case TensorIndex::Kind::Tensor: {
        const Tensor& t = i.tensor();
        check_defined(t, "index");
        EMBER_CHECK(t.dtype() == kInt64 || t.dtype() == kInt32 || t.dtype() == kBool || t.dtype() == kUInt8,
                    "tensors used as indices must be long, int, byte or bool tensors");
        if ((t.dtype() == kBool || t.dtype() == kUInt8) && t.dim() == 0) {
          r.view = r.view.unsqueeze(dim);
          note_advanced(t.reshape({1}));
          ++dim;
        } else if (t.dtype() == kBool || t.dtype() == kUInt8) {
          note_advanced(t);
          dim += t.dim();
        } else {
          note_advanced(t);
          ++dim;
        }
        break;
      }
    }
  }
  return r;
}

Tensor index_impl(const Tensor& x, std::span<const TensorIndex> indices) {
  detail::OpContext context("index", {{"input", &x}});
  check_defined(x, "index");
  BasicResult r = apply_basic(x, indices);
  if (!r.has_advanced) return r.view;
  return detail::advanced_get(r.view, r.advanced);
}

Tensor& index_put_impl(Tensor& x, std::span<const TensorIndex> indices, const Tensor& value) {
  detail::OpContext context("index_put_", {{"input", &x}, {"value", &value}});
  check_defined(x, "index_put_");
  check_defined(value, "index_put_");
  BasicResult r = apply_basic(x, indices);
  const Tensor converted = value.to(x.device(), x.dtype());
  if (!r.has_advanced) {
    r.view.copy_(converted);
    return x;
  }
  Tensor result = detail::advanced_put(r.view, r.advanced, converted, false, false);
  r.view.copy_(result);
  return x;
}

std::span<const TensorIndex> span_of(std::initializer_list<TensorIndex> indices) {
  return {indices.begin(), indices.size()};
}

}  // namespace

Tensor index(const Tensor& x, std::initializer_list<TensorIndex> indices) { return index_impl(x, span_of(indices)); }
Tensor index(const Tensor& x, const std::vector<TensorIndex>& indices) { return index_impl(x, indices); }

Tensor& index_put_(Tensor& x, std::initializer_list<TensorIndex> indices, const Tensor& value) {
  return index_put_impl(x, span_of(indices), value);
}
Tensor& index_put_(Tensor& x, const std::vector<TensorIndex>& indices, const Tensor& value) {
  return index_put_impl(x, indices, value);
}
Tensor& index_put_(Tensor& x, std::initializer_list<TensorIndex> indices, const Scalar& value) {
  return index_put_impl(x, span_of(indices), scalar_tensor(value, TensorOptions().dtype(x.dtype())));
}
Tensor& index_put_(Tensor& x, const std::vector<TensorIndex>& indices, const Scalar& value) {
  return index_put_impl(x, indices, scalar_tensor(value, TensorOptions().dtype(x.dtype())));
}

// ---- the Tensor methods of ember/indexing.h's ops ----

Tensor Tensor::index(std::initializer_list<TensorIndex> indices) const { return ember::index(*this, indices); }
Tensor& Tensor::index_put_(std::initializer_list<TensorIndex> indices, const Tensor& value) {
  ember::index_put_(*this, indices, value);
  return *this;
}
Tensor& Tensor::index_put_(std::initializer_list<TensorIndex> indices, const Scalar& value) {
  ember::index_put_(*this, indices, value);
  return *this;
}
Tensor Tensor::scatter(int64_t dim, const Tensor& index, const Tensor& src) const {
  return ember::scatter(*this, dim, index, src);
}
Tensor Tensor::scatter(int64_t dim, const Tensor& index, const Scalar& value) const {
  return ember::scatter(*this, dim, index, value);
}
Tensor Tensor::scatter_reduce(int64_t dim, const Tensor& index, const Tensor& src, std::string_view reduce,
                              bool include_self) const {
  return ember::scatter_reduce(*this, dim, index, src, reduce, include_self);
}
Tensor Tensor::index_add(int64_t dim, const Tensor& index, const Tensor& source, const Scalar& alpha) const {
  return ember::index_add(*this, dim, index, source, alpha);
}
Tensor Tensor::index_copy(int64_t dim, const Tensor& index, const Tensor& source) const {
  return ember::index_copy(*this, dim, index, source);
}
Tensor Tensor::index_fill(int64_t dim, const Tensor& index, const Scalar& value) const {
  return ember::index_fill(*this, dim, index, value);
}
Tensor Tensor::masked_select(const Tensor& mask) const { return ember::masked_select(*this, mask); }
Tensor Tensor::masked_scatter(const Tensor& mask, const Tensor& source) const {
  return ember::masked_scatter(*this, mask, source);
}
Tensor Tensor::take(const Tensor& index) const { return ember::take(*this, index); }
Tensor Tensor::nonzero() const { return ember::nonzero(*this); }

}  // namespace ember
