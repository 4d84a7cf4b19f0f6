// Tensor: metadata, views, copies and moves between devices and dtypes.
#include "ember/tensor.h"

#include <algorithm>
#include <functional>
#include <numeric>

#include "autograd/node.h"
#include "backend/backend.h"
#include "core/check.h"
#include "core/tensor_internal.h"
#include "ember/factories.h"
#include "ember/ops.h"

namespace ember {

namespace detail {

Storage::~Storage() {
  if (owner_) return;  // the owner releases the memory when its last user goes
  if (pinned_) {
    if (Backend* cuda = find_backend(DeviceType::CUDA)) cuda->free_pinned(data_);
    return;
  }
  if (Backend* b = find_backend(device_.type()); b != nullptr && data_ != nullptr) {
    b->deallocate(data_, nbytes_, device_.has_index() ? device_.index() : 0);
  }
}

Dims contiguous_strides(IntList sizes) {
  Dims strides(sizes.size());
  int64_t s = 1;
  for (size_t i = sizes.size(); i-- > 0;) {
    strides[i] = s;
    s *= std::max<int64_t>(sizes[i], 1);
  }
  return strides;
}

int64_t numel_of(IntList sizes) {
  int64_t n = 1;
  for (int64_t s : sizes) n *= s;
  return n;
}

Tensor make_tensor(IntList sizes, Dtype dtype, Device device) {
  for (int64_t s : sizes) {
    EMBER_CHECK(s >= 0, "Trying to create tensor with negative dimension ", s, ": ", shape_str(sizes));
  }
  Backend& backend = backend_for(device);
  device = normalize_device(device);
  const int64_t n = numel_of(sizes);
  const size_t nbytes = static_cast<size_t>(n) * element_size(dtype);
  void* data = backend.allocate(nbytes, device.has_index() ? device.index() : 0);
  auto impl = std::make_shared<TensorImpl>();
  impl->storage = std::make_shared<Storage>(data, nbytes, device);
  impl->sizes = Dims(sizes);
  impl->strides = contiguous_strides(sizes);
  impl->numel = n;
  impl->dtype = dtype;
  return Tensor(std::move(impl));
}

Tensor make_pinned_tensor(IntList sizes, Dtype dtype) {
  EMBER_CHECK(cuda::is_available(), "pin_memory: pinned memory is for copies to a GPU, and CUDA is not available: ",
              cuda::unavailable_reason());
  const int64_t n = numel_of(sizes);
  const size_t nbytes = static_cast<size_t>(n) * element_size(dtype);
  void* data = find_backend(DeviceType::CUDA)->allocate_pinned(nbytes);
  auto impl = std::make_shared<TensorImpl>();
  impl->storage = std::make_shared<Storage>(data, nbytes, Device(DeviceType::CPU), /*pinned=*/true);
  impl->sizes = Dims(sizes);
  impl->strides = contiguous_strides(sizes);
  impl->numel = n;
  impl->dtype = dtype;
  return Tensor(std::move(impl));
}

Tensor make_tensor_over(std::shared_ptr<Storage> storage, Dims sizes, Dims strides, int64_t offset, Dtype dtype) {
  auto impl = std::make_shared<TensorImpl>();
  impl->storage = std::move(storage);
  impl->numel = numel_of(sizes);
  impl->sizes = std::move(sizes);
  impl->strides = std::move(strides);
  impl->offset = offset;
  impl->dtype = dtype;
  return Tensor(std::move(impl));
}

namespace {
Tensor alias_with_geometry(const Tensor& base, Dims sizes, Dims strides, int64_t offset) {
  return make_tensor_over(base.impl().storage, std::move(sizes), std::move(strides), offset, base.dtype());
}
}  // namespace

Tensor make_view(const Tensor& base, Dims sizes, Dims strides, int64_t offset) {
  Tensor view = alias_with_geometry(base, std::move(sizes), std::move(strides), offset);
  TensorImpl& impl = view.impl();
  const TensorImpl& from = base.impl();
  impl.view_base = from.view_base ? from.view_base : base.impl_ptr();
  impl.view_version = from.storage->version();
  // As PyTorch's propagate_creation_meta: a view made in grad mode keeps what its base view had.
  const auto made = GradMode::is_enabled() ? TensorImpl::ViewCreation::Default : TensorImpl::ViewCreation::NoGradMode;
  impl.view_creation = from.view_base && made == TensorImpl::ViewCreation::Default ? from.view_creation : made;
  return view;
}

void forget_base(Tensor& t) {
  t.impl().view_base.reset();
  t.impl().view_creation = TensorImpl::ViewCreation::Default;
  t.impl().view_output_nr = 0;
}

Tensor make_alias(const Tensor& t) {
  return alias_with_geometry(t, t.impl().sizes, t.impl().strides, t.storage_offset());
}

int64_t wrap_dim(int64_t dim, int64_t ndim) {
  int64_t n = std::max<int64_t>(ndim, 1);  // a 0-dim tensor accepts dims -1 and 0
  EMBER_CHECK(dim >= -n && dim < n, "Dimension out of range (expected to be in range of [", -n, ", ", n - 1,
              "], but got ", dim, ")");
  return dim < 0 ? dim + n : dim;
}

void check_defined(const Tensor& t, const char* op) {
  EMBER_CHECK(t.defined(), "[", op,
              "] the tensor is undefined (default-constructed); create it with a factory "
              "such as ember::zeros first");
}

}  // namespace detail

using detail::make_view;
using detail::wrap_dim;

void Tensor::fail_undefined() { detail::fail("Tensor is undefined: it was default-constructed and never assigned"); }

int64_t Tensor::size(int64_t d) const { return impl().sizes[wrap_dim(d, dim())]; }
int64_t Tensor::stride(int64_t d) const { return impl().strides[wrap_dim(d, dim())]; }

bool Tensor::is_contiguous() const { return view_of(*this).is_contiguous(); }

bool Tensor::is_alias_of(const Tensor& other) const {
  return defined() && other.defined() && impl().storage == other.impl().storage;
}

void Tensor::check_dtype_for_access(Dtype requested) const {
  EMBER_CHECK(requested == dtype(), "expected scalar type ", scalar_type_name(requested), " but found ",
              scalar_type_name(dtype()));
}

Scalar Tensor::item() const {
  detail::OpContext context("item", {{"self", this}});
  EMBER_CHECK(numel() == 1, "a Tensor with ", numel(), " elements cannot be converted to Scalar");
  Tensor host = is_cpu() ? *this : to(Device(DeviceType::CPU));
  const void* p = host.data_ptr();
  switch (dtype()) {
    case Dtype::Bool:
      return Scalar(*static_cast<const bool*>(p));
    case Dtype::UInt8:
      return Scalar(*static_cast<const uint8_t*>(p));
    case Dtype::Int8:
      return Scalar(*static_cast<const int8_t*>(p));
    case Dtype::Int16:
      return Scalar(*static_cast<const int16_t*>(p));
    case Dtype::Int32:
      return Scalar(*static_cast<const int32_t*>(p));
    case Dtype::Int64:
      return Scalar(*static_cast<const int64_t*>(p));
    case Dtype::Float16:
      return Scalar(*static_cast<const Half*>(p));
    case Dtype::BFloat16:
      return Scalar(*static_cast<const BFloat16*>(p));
    case Dtype::Float32:
      return Scalar(*static_cast<const float*>(p));
    case Dtype::Float64:
      return Scalar(*static_cast<const double*>(p));
  }
  detail::fail("[item] unknown dtype");
}

// ---- views ----

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

// Records a view (or copy) op for autograd: `grad_of` maps the output's gradient to self's.
Tensor with_grad(Tensor out, const Tensor& self, const char* name, std::function<Tensor(const Tensor&)> grad_of) {
  if (autograd::needs_grad({&self})) {
    const Tensor* inputs[] = {&self};
    autograd::record_view(out, name, inputs,
                          [f = std::move(grad_of)](const Tensor& g) { return std::vector<Tensor>{f(g)}; });
  }
  return out;
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
  return with_grad(make_view(*this, std::move(shape), std::move(*strides), storage_offset()), *this, "ViewBackward0",
                   [in = Dims(this->sizes())](const Tensor& g) { return g.reshape(in); });
}

Tensor Tensor::reshape(IntList sizes) const {
  detail::OpContext context("reshape", {{"self", this}});
  Dims shape = infer_size(sizes, numel());
  if (auto strides = view_strides(impl().sizes, impl().strides, shape)) {
    return with_grad(make_view(*this, std::move(shape), std::move(*strides), storage_offset()), *this, "ViewBackward0",
                     [in = Dims(this->sizes())](const Tensor& g) { return g.reshape(in); });
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
  return with_grad(make_view(*this, std::move(sizes), std::move(strides), storage_offset()), *this,
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
  return with_grad(make_view(*this, std::move(sizes), std::move(strides), storage_offset()), *this, "PermuteBackward0",
                   [inverse](const Tensor& g) { return g.permute(inverse); });
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
  return with_grad(
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
  return with_grad(make_view(*this, std::move(sizes), std::move(strides), offset), *this, "SliceBackward0",
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
  return with_grad(make_view(*this, std::move(sizes), std::move(strides), storage_offset()), *this, "SqueezeBackward0",
                   [in = impl().sizes](const Tensor& g) { return g.reshape(in); });
}

Tensor Tensor::squeeze(int64_t d) const {
  d = wrap_dim(d, dim());
  Dims sizes = impl().sizes, strides = impl().strides;
  if (dim() > 0 && sizes[d] == 1) {
    sizes.erase(d);
    strides.erase(d);
  }
  return with_grad(make_view(*this, std::move(sizes), std::move(strides), storage_offset()), *this, "SqueezeBackward1",
                   [in = impl().sizes](const Tensor& g) { return g.reshape(in); });
}

Tensor Tensor::unsqueeze(int64_t d) const {
  d = wrap_dim(d, dim() + 1);
  Dims sizes = impl().sizes, strides = impl().strides;
  int64_t stride = d < dim() ? sizes[d] * strides[d] : 1;
  sizes.insert(d, 1);
  strides.insert(d, stride);
  return with_grad(make_view(*this, std::move(sizes), std::move(strides), storage_offset()), *this,
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
  return with_grad(make_view(*this, std::move(sizes), std::move(strides), storage_offset()), *this, "ExpandBackward0",
                   [](const Tensor& g) { return g; });
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
  return with_grad(
      make_view(*this, Dims(sizes), Dims(strides), offset), *this, "AsStridedBackward0",
      [input = autograd::Geometry::of(*this), output = autograd::Geometry{Dims(sizes), Dims(strides), offset}](
          const Tensor& g) { return autograd::as_strided_backward(g, input, output); });
}

// ---- copies ----

namespace {
// PyTorch's has_internal_overlap, in the case it can tell cheaply: a dimension of stride 0 (an
// expanded tensor) makes several elements one memory location, and a write to them races.
void check_no_internal_overlap(const Tensor& self) {
  for (int64_t d = 0; d < self.dim(); ++d) {
    EMBER_CHECK(self.stride(d) != 0 || self.size(d) <= 1,
                "unsupported operation: more than one element of the written-to tensor refers to a single memory "
                "location. Please clone() the tensor before performing the operation.");
  }
}

int index_of(Device device) { return device.has_index() ? device.index() : 0; }

// The copy itself, without autograd. Across devices the bytes move as one contiguous block:
// through the backend's host copies between the CPU and a device, device to device between two
// devices of one type; the destination's backend then converts and lays them out.
void copy_values(Tensor& self, const Tensor& src, bool non_blocking) {
  Tensor source = src;
  if (src.device() != self.device()) {
    Tensor contiguous_src = src.contiguous();
    if (src.is_cpu()) {
      Tensor moved = detail::make_tensor(src.sizes(), src.dtype(), self.device());
      // Asynchronous only from pinned memory, which the device reads directly.
      backend_for(self.device())
          .copy_from_host(moved.data_ptr(), contiguous_src.data_ptr(), contiguous_src.nbytes(), index_of(self.device()),
                          non_blocking && contiguous_src.is_pinned());
      source = moved;
    } else if (self.is_cpu()) {
      // Into pinned memory of the same layout, a non-blocking copy lands directly; the data is
      // valid once the device is synchronised, as with PyTorch's .to("cpu", non_blocking=True).
      const bool direct = non_blocking && self.is_pinned() && self.is_contiguous() && self.dtype() == src.dtype() &&
                          same_dims(self.sizes(), src.sizes());
      Tensor moved = direct ? self : detail::make_tensor(src.sizes(), src.dtype(), self.device());
      backend_for(src.device())
          .copy_to_host(moved.data_ptr(), contiguous_src.data_ptr(), contiguous_src.nbytes(), index_of(src.device()),
                        direct);
      if (direct) {
        self.impl().storage->bump_version();
        return;
      }
      source = moved;
    } else if (src.device().type() == self.device().type()) {
      // Two devices of one backend (cuda:0 -> cuda:1): peer to peer where the devices allow it,
      // ordered with both devices' streams, never through the host; straight into self when it
      // has src's layout and dtype, as into pinned memory above.
      const bool direct = self.is_contiguous() && self.dtype() == src.dtype() && same_dims(self.sizes(), src.sizes());
      Tensor moved = direct ? self : detail::make_tensor(src.sizes(), src.dtype(), self.device());
      backend_for(self.device())
          .copy_between_devices(moved.data_ptr(), index_of(self.device()), contiguous_src.data_ptr(),
                                index_of(src.device()), contiguous_src.nbytes());
      if (direct) {
        self.impl().storage->bump_version();
        return;
      }
      source = moved;
    } else {
      // Two device types (no build has two accelerator backends yet): through the host.
      copy_values(self, contiguous_src.to(Device(DeviceType::CPU)), non_blocking);
      return;
    }
  }
  if (source.is_alias_of(self) && source.data_ptr() == self.data_ptr() && same_dims(source.sizes(), self.sizes()) &&
      same_dims(source.strides(), self.strides()) && source.dtype() == self.dtype()) {
    return;  // copying a tensor onto itself
  }
  Tensor expanded = source.expand(self.sizes());
  backend_for(self.device()).copy(view_of(self), view_of(expanded));
  self.impl().storage->bump_version();
}

// fill_ and zero_: the node recorded for a write of a constant sends no gradient back.
Tensor& fill_recorded(Tensor& self, const Scalar& value, const char* node_name) {
  detail::check_defined(self, "fill_");
  std::shared_ptr<autograd::Node> history;
  if (autograd::needs_grad({&self})) {
    autograd::check_inplace(self);
    history =
        autograd::make_node(node_name, {&self}, [](const Tensor& g) { return std::vector<Tensor>{zeros_like(g)}; });
  }
  backend_for(self.device()).fill(view_of(self), value);
  self.impl().storage->bump_version();
  if (history) autograd::rebase_history(self, std::move(history));
  return self;
}
}  // namespace

Tensor Tensor::contiguous() const { return is_contiguous() ? *this : clone(); }

Tensor Tensor::clone() const {
  Tensor out = detail::make_tensor(sizes(), dtype(), device());
  backend_for(device()).copy(view_of(out), view_of(*this));
  return with_grad(out, *this, "CloneBackward0", [](const Tensor& g) { return g; });
}

Tensor Tensor::detach() const { return detail::make_alias(*this); }

Tensor& Tensor::copy_(const Tensor& src, bool non_blocking) {
  detail::OpContext context("copy_", {{"self", this}, {"src", &src}});
  detail::check_defined(*this, "copy_");
  detail::check_defined(src, "copy_");
  check_no_internal_overlap(*this);
  std::shared_ptr<autograd::Node> history;
  if (autograd::needs_grad({this, &src})) {
    // Self's old value is overwritten: it gets a zero gradient, src gets the gradient itself.
    autograd::check_inplace(*this);
    history = autograd::make_node("CopyBackwards", {this, &src}, [src_device = src.device()](const Tensor& g) {
      return std::vector<Tensor>{zeros_like(g), g.to(src_device)};
    });
  }
  {
    NoGradGuard no_grad;  // the staging copies are internal
    copy_values(*this, src, non_blocking);
  }
  if (history) autograd::rebase_history(*this, std::move(history));
  return *this;
}

Tensor& Tensor::fill_(const Scalar& value) { return fill_recorded(*this, value, "FillBackward2"); }
Tensor& Tensor::zero_() { return fill_recorded(*this, 0, "ZeroBackward0"); }

bool Tensor::is_view() const { return impl().view_base != nullptr; }

Tensor Tensor::_base() const {
  EMBER_CHECK(is_view(), "Can't get base of non-view Tensor");
  return Tensor(impl().view_base);
}

int64_t Tensor::_version() const { return impl().storage->version(); }

// ---- to() ----

Tensor Tensor::to(const TensorOptions& options, bool non_blocking, bool copy) const {
  detail::OpContext context("to", {{"self", this}});
  detail::check_defined(*this, "to");
  const Dtype target_dtype = options.dtype_or(dtype());
  Device target_device = device();
  if (options.has_device()) {
    Device requested = options.device();
    // PyTorch's ensure_has_index: cuda/mps get the current index, cpu stays as given, so
    // to("cpu:0") copies while to("cpu") aliases.
    target_device = requested.is_cpu() ? requested : normalize_device(requested);
    if (!requested.is_cpu()) backend_for(target_device);  // throws when unusable
  }
  if (!copy && target_dtype == dtype() && target_device == device()) return *this;
  Device alloc_device = target_device.is_cpu() ? Device(DeviceType::CPU) : target_device;
  // A non-blocking copy to the host goes into pinned memory, which the device writes directly.
  const bool pinned_out = non_blocking && alloc_device.is_cpu() && !is_cpu() && target_dtype == dtype();
  Tensor out = pinned_out ? detail::make_pinned_tensor(sizes(), target_dtype)
                          : detail::make_tensor(sizes(), target_dtype, alloc_device);
  {
    NoGradGuard no_grad;  // the copy is internal; ToCopyBackward0 below is the recorded op
    if (alloc_device == device()) {
      backend_for(device()).copy(view_of(out), view_of(*this));
    } else if (target_dtype == dtype()) {
      out.copy_(*this, non_blocking);
    } else {
      // Convert on the source device, then move the bytes.
      out.copy_(to(target_dtype));
    }
  }
  return with_grad(out, *this, "ToCopyBackward0", [src = device()](const Tensor& g) { return g.to(src); });
}

bool Tensor::is_pinned() const { return defined() && impl().storage->pinned(); }

Tensor Tensor::pin_memory() const {
  detail::check_defined(*this, "pin_memory");
  if (is_pinned()) return *this;
  EMBER_CHECK(is_cpu(), "cannot pin '", device(), "' memory: only CPU tensors can be pinned");
  Tensor out = detail::make_pinned_tensor(sizes(), dtype());
  {
    NoGradGuard no_grad;
    backend_for(device()).copy(view_of(out), view_of(*this));
  }
  return with_grad(out, *this, "CloneBackward0", [](const Tensor& g) { return g; });
}

Tensor Tensor::to(Device device, bool non_blocking, bool copy) const {
  return to(TensorOptions().device(device), non_blocking, copy);
}
Tensor Tensor::to(Dtype dtype, bool non_blocking, bool copy) const {
  return to(TensorOptions().dtype(dtype), non_blocking, copy);
}
Tensor Tensor::to(Device device, Dtype dtype, bool non_blocking, bool copy) const {
  return to(TensorOptions().device(device).dtype(dtype), non_blocking, copy);
}

}  // namespace ember
