// The view ops: results that share their input's storage with new sizes, strides and offset
// (view, reshape, transpose, permute, narrow, select, slice, squeeze, unsqueeze, expand, flatten,
// as_strided), each recorded for autograd with the backward that maps its gradient back.
#include <algorithm>
#include <functional>
#include <numeric>
#include <optional>

#include "autograd/node.h"
#include "core/check.h"
#include "core/tensor_internal.h"
#include "ember/factories.h"
#include "ember/ops.h"
#include "ember/tensor.h"

namespace ember {

using autograd::record_view_of;
using detail::make_view;
using detail::wrap_dim;

namespace {

// Infers one -1 entry and checks that the element count is preserved.
Dims infer_size(IntList shape, int64_t numel) {
  Dims out(shape);
  int64_t known = 1;
  std::optional<size_t> infer;
  for (size_t i = 0; i < shape.size(); ++i) {
    if (shape[i] == -1) {
      EMBER_CHECK(!infer, "only one dimension can be inferred");
      infer = i;
    } else {
      EMBER_CHECK(shape[i] >= 0, "invalid shape dimension ", shape[i]);
      known *= shape[i];
    }
  }
  if (infer) {
    EMBER_CHECK(known != 0 && numel % known == 0, "shape '", detail::shape_str(shape),
                "' is invalid for input of size ", numel);
    out[*infer] = numel / known;
  } else {
    EMBER_CHECK(known == numel, "shape '", detail::shape_str(shape), "' is invalid for input of size ", numel);
  }
  return out;
}

// Strides for viewing (sizes, strides) as `shape` without copying, if possible (PyTorch's
// computeStride): each run of old dimensions that is contiguous in memory may be re-split freely.
std::optional<Dims> view_strides(IntList old_sizes, IntList old_strides, IntList shape) {
  Dims new_strides(shape.size());
  if (old_sizes.empty()) {
    for (auto& s : new_strides) s = 1;
    return new_strides;
  }
  int64_t numel = detail::numel_of(old_sizes);
  if (numel == 0) {
    if (same_dims(old_sizes, shape)) return Dims(old_strides);
    return detail::contiguous_strides(shape);
  }
  int64_t view_d = static_cast<int64_t>(shape.size()) - 1;
  int64_t chunk_base_stride = old_strides.back();
  int64_t tensor_numel = 1, view_numel = 1;
  for (int64_t tensor_d = static_cast<int64_t>(old_sizes.size()) - 1; tensor_d >= 0; --tensor_d) {
    tensor_numel *= old_sizes[tensor_d];
    if (tensor_d == 0 ||
        (old_sizes[tensor_d - 1] != 1 && old_strides[tensor_d - 1] != tensor_numel * chunk_base_stride)) {
      while (view_d >= 0 && (view_numel < tensor_numel || shape[view_d] == 1)) {
        new_strides[view_d] = view_numel * chunk_base_stride;
        view_numel *= shape[view_d];
        --view_d;
      }
      if (view_numel != tensor_numel) return std::nullopt;
      if (tensor_d > 0) {
        chunk_base_stride = old_strides[tensor_d - 1];
        tensor_numel = 1;
        view_numel = 1;
      }
    }
  }
  if (view_d != -1) return std::nullopt;
  return new_strides;
}

// The gradient of a view that picked part of self: zeros with the picked part filled in. When
// the backward pass records itself (create_graph), that is an op too, named `name`, whose own
// gradient picks the same part again.
std::function<Tensor(const Tensor&)> embed_into(Dims sizes, const char* name, std::function<Tensor(Tensor&)> pick) {
  return [sizes = std::move(sizes), name, pick = std::move(pick)](const Tensor& g) {
    Tensor full = zeros(sizes, TensorOptions(g.dtype()).device(g.device()));
    {
      NoGradGuard no_grad;
      pick(full).copy_(g);
    }
    if (autograd::needs_grad({&g})) {
      autograd::record(full, name, {&g}, [pick](const Tensor& gg) {
        Tensor whole = gg;
        return std::vector<Tensor>{pick(whole)};
      });
    }
    return full;
  };
}

}  // namespace

Tensor Tensor::view(IntList sizes) const {
  detail::OpContext context("view", {{"self", this}});
  Dims shape = infer_size(sizes, numel());
  auto strides = view_strides(impl().sizes, impl().strides, shape);
  EMBER_CHECK(strides.has_value(),
              "view size is not compatible with input tensor's size and stride (at least one dimension spans across "
              "two contiguous subspaces). Use .reshape(...) instead.");
  return record_view_of(make_view(*this, std::move(shape), std::move(*strides), storage_offset()), *this,
                        "ViewBackward0", [in = Dims(this->sizes())](const Tensor& g) { return g.reshape(in); });
}

Tensor Tensor::reshape(IntList sizes) const {
  detail::OpContext context("reshape", {{"self", this}});
  Dims shape = infer_size(sizes, numel());
  if (auto strides = view_strides(impl().sizes, impl().strides, shape)) {
    return record_view_of(make_view(*this, std::move(shape), std::move(*strides), storage_offset()), *this,
                          "ViewBackward0", [in = Dims(this->sizes())](const Tensor& g) { return g.reshape(in); });
  }
  return contiguous().view(shape);
}

Tensor Tensor::t() const {
  EMBER_CHECK(dim() <= 2, "t() expects a tensor with <= 2 dimensions, but self is ", dim(), "D");
  return dim() < 2 ? *this : transpose(0, 1);
}

Tensor Tensor::transpose(int64_t d0, int64_t d1) const {
  d0 = wrap_dim(d0, dim());
  d1 = wrap_dim(d1, dim());
  Dims sizes = impl().sizes, strides = impl().strides;
  if (dim() > 0) {
    std::swap(sizes[d0], sizes[d1]);
    std::swap(strides[d0], strides[d1]);
  }
  return record_view_of(make_view(*this, std::move(sizes), std::move(strides), storage_offset()), *this,
                        "TransposeBackward0", [d0, d1](const Tensor& g) { return g.transpose(d0, d1); });
}

Tensor Tensor::permute(IntList dims) const {
  detail::OpContext context("permute", {{"self", this}});
  EMBER_CHECK(static_cast<int64_t>(dims.size()) == dim(),
              "permute(sparse_coo): number of dimensions in the tensor input does not match the length of the desired "
              "ordering of dimensions i.e. input.dim() = ",
              dim(), " is not equal to len(dims) = ", dims.size());
  Dims sizes(dims.size()), strides(dims.size());
  std::vector<bool> seen(dims.size(), false);
  for (size_t i = 0; i < dims.size(); ++i) {
    int64_t d = wrap_dim(dims[i], dim());
    EMBER_CHECK(!seen[d], "permute(): duplicate dims are not allowed.");
    seen[d] = true;
    sizes[i] = impl().sizes[d];
    strides[i] = impl().strides[d];
  }
  Dims inverse(dims.size());
  for (size_t i = 0; i < dims.size(); ++i) inverse[wrap_dim(dims[i], dim())] = static_cast<int64_t>(i);
  return record_view_of(make_view(*this, std::move(sizes), std::move(strides), storage_offset()), *this,
                        "PermuteBackward0", [inverse](const Tensor& g) { return g.permute(inverse); });
}

Tensor Tensor::narrow(int64_t d, int64_t start, int64_t length) const {
  EMBER_CHECK(dim() > 0, "narrow() cannot be applied to a 0-dim tensor.");
  d = wrap_dim(d, dim());
  const int64_t n = impl().sizes[d];
  EMBER_CHECK(start >= -n && start <= n, "start out of range (expected to be in range of [", -n, ", ", n, "], but got ",
              start, ")");
  if (start < 0) start += n;
  EMBER_CHECK(length >= 0 && start <= n - length, "start (", start, ") + length (", length,
              ") exceeds dimension size (", n, ").");
  return slice(d, start, start + length, 1);
}

Tensor Tensor::select(int64_t d, int64_t index) const {
  detail::OpContext context("select", {{"self", this}});
  EMBER_CHECK(dim() > 0, "select() cannot be applied to a 0-dim tensor.");
  d = wrap_dim(d, dim());
  const int64_t n = impl().sizes[d];
  EMBER_CHECK(index >= -n && index < n, "select(): index ", index, " out of range for tensor of size ",
              detail::shape_str(sizes()), " at dimension ", d);
  if (index < 0) index += n;
  Dims sizes = impl().sizes, strides = impl().strides;
  int64_t offset = storage_offset() + index * strides[d];
  sizes.erase(d);
  strides.erase(d);
  return record_view_of(
      make_view(*this, std::move(sizes), std::move(strides), offset), *this, "SelectBackward0",
      embed_into(impl().sizes, "SelectBackwardBackward0", [d, index](Tensor& full) { return full.select(d, index); }));
}

Tensor Tensor::slice(int64_t d, std::optional<int64_t> start_opt, std::optional<int64_t> end_opt, int64_t step) const {
  EMBER_CHECK(dim() > 0, "slice() cannot be applied to a 0-dim tensor.");
  EMBER_CHECK(step > 0, "slice step must be positive");
  d = wrap_dim(d, dim());
  const int64_t n = impl().sizes[d];
  int64_t start = start_opt.value_or(0), end = end_opt.value_or(n);
  if (start < 0) start += n;
  if (end < 0) end += n;
  start = std::clamp<int64_t>(start, 0, n);
  end = std::clamp<int64_t>(end, start, n);
  Dims sizes = impl().sizes, strides = impl().strides;
  int64_t offset = storage_offset() + start * strides[d];
  sizes[d] = (end - start + step - 1) / step;
  strides[d] *= step;
  return record_view_of(make_view(*this, std::move(sizes), std::move(strides), offset), *this, "SliceBackward0",
                        embed_into(impl().sizes, "SliceBackwardBackward0",
                                   [d, start, end, step](Tensor& full) { return full.slice(d, start, end, step); }));
}

Tensor Tensor::squeeze() const {
  Dims sizes, strides;
  for (int64_t i = 0; i < dim(); ++i) {
    if (impl().sizes[i] != 1) {
      sizes.push_back(impl().sizes[i]);
      strides.push_back(impl().strides[i]);
    }
  }
  return record_view_of(make_view(*this, std::move(sizes), std::move(strides), storage_offset()), *this,
                        "SqueezeBackward0", [in = impl().sizes](const Tensor& g) { return g.reshape(in); });
}

Tensor Tensor::squeeze(int64_t d) const {
  d = wrap_dim(d, dim());
  Dims sizes = impl().sizes, strides = impl().strides;
  if (dim() > 0 && sizes[d] == 1) {
    sizes.erase(d);
    strides.erase(d);
  }
  return record_view_of(make_view(*this, std::move(sizes), std::move(strides), storage_offset()), *this,
                        "SqueezeBackward1", [in = impl().sizes](const Tensor& g) { return g.reshape(in); });
}

Tensor Tensor::unsqueeze(int64_t d) const {
  d = wrap_dim(d, dim() + 1);
  Dims sizes = impl().sizes, strides = impl().strides;
  int64_t stride = d < dim() ? sizes[d] * strides[d] : 1;
  sizes.insert(d, 1);
  strides.insert(d, stride);
  return record_view_of(make_view(*this, std::move(sizes), std::move(strides), storage_offset()), *this,
                        "UnsqueezeBackward0", [d](const Tensor& g) { return g.squeeze(d); });
}

Tensor Tensor::expand(IntList target) const {
  detail::OpContext context("expand", {{"self", this}});
  EMBER_CHECK(static_cast<int64_t>(target.size()) >= dim(), "expand(", dtype_name(dtype()), "{",
              detail::shape_str(sizes()), "}, size=", detail::shape_str(target), "): the number of sizes provided (",
              target.size(), ") must be greater or equal to the number of dimensions in the tensor (", dim(), ")");
  const int64_t nd = static_cast<int64_t>(target.size());
  Dims sizes(nd), strides(nd);
  for (int64_t i = nd - 1; i >= 0; --i) {
    int64_t off = nd - 1 - i;
    int64_t src_d = dim() - 1 - off;
    int64_t src_size = src_d >= 0 ? impl().sizes[src_d] : 1;
    int64_t src_stride = src_d >= 0 ? impl().strides[src_d] : 0;
    int64_t want = target[i];
    if (want == -1) {
      EMBER_CHECK(src_d >= 0,
                  "The expanded size of the tensor (-1) isn't allowed in a leading, non-existing dimension ", i);
      want = src_size;
    }
    if (src_size == want) {
      sizes[i] = want;
      strides[i] = src_d >= 0 ? src_stride : 0;
    } else {
      EMBER_CHECK(src_size == 1, "The expanded size of the tensor (", want, ") must match the existing size (",
                  src_size, ") at non-singleton dimension ", i, ".  Target sizes: ", detail::shape_str(target),
                  ".  Tensor sizes: ", detail::shape_str(this->sizes()));
      sizes[i] = want;
      strides[i] = 0;
    }
  }
  // The engine sums the gradient back down to the original sizes.
  return record_view_of(make_view(*this, std::move(sizes), std::move(strides), storage_offset()), *this,
                        "ExpandBackward0", [](const Tensor& g) { return g; });
}

Tensor Tensor::flatten(int64_t start_dim, int64_t end_dim) const {
  if (dim() == 0) return reshape(std::vector<int64_t>{1});
  start_dim = wrap_dim(start_dim, dim());
  end_dim = wrap_dim(end_dim, dim());
  EMBER_CHECK(start_dim <= end_dim, "flatten() has invalid args: start_dim cannot come after end_dim");
  if (start_dim == end_dim) return *this;
  Dims shape;
  for (int64_t i = 0; i < start_dim; ++i) shape.push_back(impl().sizes[i]);
  int64_t merged = 1;
  for (int64_t i = start_dim; i <= end_dim; ++i) merged *= impl().sizes[i];
  shape.push_back(merged);
  for (int64_t i = end_dim + 1; i < dim(); ++i) shape.push_back(impl().sizes[i]);
  return reshape(shape);
}

Tensor Tensor::unflatten(int64_t dim, IntList sizes) const {
  EMBER_CHECK(this->dim() > 0, "unflatten: Dimension specified as ", dim, " but tensor has no dimensions");
  dim = wrap_dim(dim, this->dim());
  EMBER_CHECK(!sizes.empty(), "unflatten: sizes must be non-empty");
  const int64_t size = impl().sizes[dim];
  int64_t known = 1;
  int64_t inferred = -1;
  for (size_t i = 0; i < sizes.size(); ++i) {
    if (sizes[i] == -1) {
      EMBER_CHECK(inferred < 0, "only one dimension can be inferred");
      inferred = static_cast<int64_t>(i);
    } else {
      known *= sizes[i];
    }
  }
  EMBER_CHECK(inferred >= 0 ? (known != 0 && size % known == 0) : known == size, "unflatten: Provided sizes ",
              detail::shape_str(sizes), " don't multiply up to the size of dim ", dim, " (", size,
              ") in the input tensor");
  Dims shape;
  for (int64_t i = 0; i < dim; ++i) shape.push_back(impl().sizes[i]);
  for (size_t i = 0; i < sizes.size(); ++i)
    shape.push_back(static_cast<int64_t>(i) == inferred ? size / known : sizes[i]);
  for (int64_t i = dim + 1; i < this->dim(); ++i) shape.push_back(impl().sizes[i]);
  return view(shape);
}

Tensor Tensor::as_strided(IntList sizes, IntList strides, std::optional<int64_t> storage_offset) const {
  EMBER_CHECK(sizes.size() == strides.size(), "mismatch in length of strides and shape");
  int64_t offset = storage_offset.value_or(this->storage_offset());
  int64_t max_index = offset;
  for (size_t i = 0; i < sizes.size(); ++i) {
    EMBER_CHECK(sizes[i] >= 0 && strides[i] >= 0, "as_strided: negative sizes and strides are not supported");
    if (sizes[i] == 0) max_index = -1;
    if (max_index >= 0) max_index += (sizes[i] - 1) * strides[i];
  }
  EMBER_CHECK(max_index < 0 || static_cast<size_t>(max_index + 1) * element_size() <= impl().storage->nbytes(),
              "setStorage: sizes ", detail::shape_str(sizes), ", strides ", detail::shape_str(strides),
              ", storage offset ", offset, " require more memory than the storage holds (", impl().storage->nbytes(),
              " bytes)");
  return record_view_of(
      make_view(*this, Dims(sizes), Dims(strides), offset), *this, "AsStridedBackward0",
      [input = autograd::Geometry::of(*this), output = autograd::Geometry{Dims(sizes), Dims(strides), offset}](
          const Tensor& g) { return autograd::as_strided_backward(g, input, output); });
}

}  // namespace ember

namespace ember {

namespace {

// The gradient of x.unfold(dim, size, step): each window's gradient added back at the positions
// it covers (windows overlap when step < size), as a scatter_add along `dim` so that it is
// differentiable in turn.
Tensor unfold_backward(const Tensor& g, IntList input_sizes, int64_t dim, int64_t size, int64_t step) {
  const int64_t windows = g.size(dim);
  const TensorOptions index_options = TensorOptions(kInt64).device(g.device());
  // Window w's element j came from position w * step + j.
  const Tensor positions =
      (arange(0, windows * step, step, index_options).unsqueeze(1) + arange(size, index_options)).reshape({-1});
  const Tensor flat = g.movedim({g.dim() - 1}, {dim + 1}).flatten(dim, dim + 1);  // [.., windows * size, ..]
  Dims index_sizes(static_cast<size_t>(flat.dim()), 1);
  index_sizes[static_cast<size_t>(dim)] = windows * size;
  const Tensor index = positions.view(index_sizes).expand(flat.sizes());
  return zeros(input_sizes, g.options()).scatter_add(dim, index, flat);
}

}  // namespace

Tensor Tensor::unfold(int64_t dimension, int64_t size, int64_t step) const {
  detail::OpContext context("unfold", {{"input", this}});
  const int64_t nd = dim();
  const int64_t d = detail::wrap_dim(dimension, nd);
  const int64_t length = nd == 0 ? 1 : impl().sizes[d];
  EMBER_CHECK(size <= length, "maximum size for tensor at dimension ", d, " is ", length, " but size is ", size);
  EMBER_CHECK(step > 0, "step is ", step, " but must be > 0");
  EMBER_CHECK(size >= 0, "size is ", size, " but must be >= 0");
  Dims sizes, strides;
  for (int64_t i = 0; i < nd; ++i) {
    sizes.push_back(i == d ? (length - size) / step + 1 : impl().sizes[i]);
    strides.push_back(i == d ? impl().strides[i] * step : impl().strides[i]);
  }
  sizes.push_back(size);
  strides.push_back(nd == 0 ? 1 : impl().strides[d]);
  return autograd::record_view_of(detail::make_view(*this, sizes, strides, storage_offset()), *this, "UnfoldBackward0",
                                  [input_sizes = Dims(impl().sizes), d, size, step, scalar = nd == 0](const Tensor& g) {
                                    if (scalar) return g.reshape({});
                                    return unfold_backward(g, input_sizes, d, size, step);
                                  });
}

}  // namespace ember
