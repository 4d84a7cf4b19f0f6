// Tensor: storage, geometry and metadata. What tensors do is in ops (src/ops/view.cpp, copy.cpp
// and the op families); core owns only the tensor itself and the memory it lives in
// (core/device_memory.h).
#include "ember/tensor.h"

#include <algorithm>

#include "core/check.h"
#include "core/device_memory.h"
#include "core/tensor_internal.h"
#include "ember/grad_mode.h"

namespace ember {

namespace detail {

Storage::~Storage() {
  if (owner_) return;  // the owner releases the memory when its last user goes
  if (pinned_) {
    if (DeviceMemory* cuda = find_device_memory(DeviceType::CUDA)) cuda->free_pinned(data_);
    return;
  }
  if (DeviceMemory* memory = find_device_memory(device_.type()); memory != nullptr && data_ != nullptr) {
    memory->deallocate(data_, nbytes_, device_.has_index() ? device_.index() : 0);
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

bool is_contiguous_layout(IntList sizes, IntList strides) {
  bool contiguous = true;
  int64_t expected = 1;
  for (size_t d = sizes.size(); d-- > 0;) {
    if (sizes[d] == 0) return true;  // empty: contiguous whatever the strides
    if (sizes[d] == 1) continue;
    contiguous = contiguous && strides[d] == expected;
    expected *= sizes[d];
  }
  return contiguous;
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
  DeviceMemory& memory = device_memory_for(device);
  const int64_t n = numel_of(sizes);
  const size_t nbytes = static_cast<size_t>(n) * element_size(dtype);
  void* data = memory.allocate(nbytes, device.has_index() ? device.index() : 0);
  auto impl = std::make_shared<TensorImpl>();
  impl->storage = std::make_shared<Storage>(data, nbytes, device);
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

bool Tensor::is_contiguous() const { return detail::is_contiguous_layout(impl().sizes, impl().strides); }

bool Tensor::is_alias_of(const Tensor& other) const {
  return defined() && other.defined() && impl().storage == other.impl().storage;
}

void Tensor::check_dtype_for_access(Dtype requested) const {
  EMBER_CHECK(requested == dtype(), "expected scalar type ", scalar_type_name(requested), " but found ",
              scalar_type_name(dtype()));
}

Tensor Tensor::detach() const { return detail::make_alias(*this); }

bool Tensor::is_view() const { return impl().view_base != nullptr; }

Tensor Tensor::_base() const {
  EMBER_CHECK(is_view(), "Can't get base of non-view Tensor");
  return Tensor(impl().view_base);
}

int64_t Tensor::_version() const { return impl().storage->version(); }

bool Tensor::is_pinned() const { return defined() && impl().storage->pinned(); }

}  // namespace ember
