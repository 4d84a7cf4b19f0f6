#pragma once
/// ember::Tensor: a reference-counted handle to an n-dimensional array on a device. Copying a
/// Tensor copies the handle; views (reshape, transpose, narrow, ...) share storage.
#include <cstdint>
#include <initializer_list>
#include <iosfwd>
#include <memory>
#include <optional>
#include <string>
#include <string_view>
#include <tuple>
#include <vector>

#include "ember/detail/tensor_impl.h"
#include "ember/device.h"
#include "ember/dtype.h"
#include "ember/scalar.h"
#include "ember/small_vector.h"
#include "ember/tensor_options.h"

namespace ember {

class TensorIndex;  // ember/indexing.h

class Tensor {
 public:
  /// An undefined tensor, as in libtorch; most operations on it throw.
  Tensor() = default;
  explicit Tensor(std::shared_ptr<detail::TensorImpl> impl) : impl_(std::move(impl)) {}

  bool defined() const { return impl_ != nullptr; }

  // ---- metadata ----
  IntList sizes() const { return impl().sizes; }
  IntList strides() const { return impl().strides; }
  /// Size of dimension `d`; negative `d` counts from the end.
  int64_t size(int64_t d) const;
  int64_t stride(int64_t d) const;
  int64_t dim() const { return static_cast<int64_t>(impl().sizes.size()); }
  int64_t numel() const { return impl().numel; }
  int64_t storage_offset() const { return impl().offset; }
  Dtype dtype() const { return impl().dtype; }
  Dtype scalar_type() const { return impl().dtype; }
  Device device() const { return impl().storage->device(); }
  size_t element_size() const { return ember::element_size(dtype()); }
  size_t nbytes() const { return static_cast<size_t>(numel()) * element_size(); }
  bool is_contiguous() const;
  bool is_floating_point() const { return ember::is_floating_point(dtype()); }
  bool is_cuda() const { return device().is_cuda(); }
  bool is_cpu() const { return device().is_cpu(); }
  TensorOptions options() const { return TensorOptions().dtype(dtype()).device(device()); }
  /// True when both handles refer to the same tensor (not merely equal values).
  bool is_same(const Tensor& other) const { return impl_ == other.impl_; }
  /// True when both tensors view the same storage.
  bool is_alias_of(const Tensor& other) const;

  /// Pointer to the first element. T must match dtype(); the memory lives on device().
  template <typename T>
  T* data_ptr() const {
    check_dtype_for_access(dtype_v<T>);
    return static_cast<T*>(impl().data());
  }
  void* data_ptr() const { return impl().data(); }

  /// The value of a one-element tensor (copied to the host if needed).
  Scalar item() const;
  template <typename T>
  T item() const {
    return item().to<T>();
  }

  // ---- autograd (see ember/autograd.h) ----
  /// True for leaves marked with requires_grad_() and for results of recorded ops.
  bool requires_grad() const;
  Tensor& requires_grad_(bool requires_grad = true);
  /// True unless the tensor is the result of a recorded op.
  bool is_leaf() const;
  /// The accumulated gradient of a leaf, or of a non-leaf after retain_grad() (undefined until a
  /// backward pass reaches it). Reading it on any other non-leaf warns, as PyTorch does: backward
  /// never fills it.
  Tensor grad() const;
  /// Makes backward passes accumulate this non-leaf tensor's gradient into its grad(), as they
  /// do for leaves (Tensor.retain_grad); does nothing on a leaf. The tensor must require grad.
  /// Written in place afterwards, the tensor keeps the gradient of its newest value.
  void retain_grad() const;
  /// Whether retain_grad() was called on this non-leaf tensor (false for leaves, as in PyTorch).
  bool retains_grad() const;
  /// Replaces the gradient (an undefined tensor clears it, like `p.grad = None`).
  void set_grad(const Tensor& grad);
  /// Back-propagates from this tensor; `gradient` may be omitted for one-element tensors.
  /// `retain_graph` defaults to `create_graph`; see ember::backward().
  void backward(const Tensor& gradient = Tensor(), std::optional<bool> retain_graph = std::nullopt,
                bool create_graph = false) const;
  /// The name of the node that produced this tensor ("AddBackward0"), or "" for a leaf.
  std::string grad_fn_name() const;
  /// True for the result of a view op (PyTorch's is_view()); _base() is the tensor whose
  /// storage it views (never itself a view). Throws for a tensor that is not a view.
  bool is_view() const;
  Tensor _base() const;
  /// How many in-place writes this tensor's storage has had (PyTorch's _version()); autograd
  /// compares it with the version a saved tensor had when its op recorded it.
  int64_t _version() const;

  // ---- views: share storage with *this ----
  // An in-place op on a view (t.select(0, i).copy_(x)) is recorded on its base too, so that
  // gradients flow through the write to the base and to every other view of it, as in PyTorch.
  Tensor view(IntList sizes) const;
  Tensor reshape(IntList sizes) const;
  Tensor t() const;
  Tensor transpose(int64_t d0, int64_t d1) const;
  Tensor permute(IntList dims) const;
  Tensor narrow(int64_t dim, int64_t start, int64_t length) const;
  Tensor select(int64_t dim, int64_t index) const;
  /// Python's t[start:end:step] along `dim`; bounds are clamped as in Python.
  Tensor slice(int64_t dim, std::optional<int64_t> start = std::nullopt, std::optional<int64_t> end = std::nullopt,
               int64_t step = 1) const;
  Tensor operator[](int64_t index) const { return select(0, index); }
  /// torch.chunk: up to `chunks` views of ceil(size / chunks) along `dim`, the last one smaller
  /// (so there may be fewer than `chunks`).
  std::vector<Tensor> chunk(int64_t chunks, int64_t dim = 0) const;
  /// torch.split with an int: views of `split_size` along `dim`, the last one smaller.
  std::vector<Tensor> split(int64_t split_size, int64_t dim = 0) const;
  /// torch.split with a list: views of these sizes along `dim`, which must add up to its size.
  std::vector<Tensor> split_with_sizes(IntList split_sizes, int64_t dim = 0) const;
  /// torch.unbind: every index of `dim`, as views without that dimension.
  std::vector<Tensor> unbind(int64_t dim = 0) const;
  Tensor squeeze() const;
  Tensor squeeze(int64_t dim) const;
  Tensor unsqueeze(int64_t dim) const;
  Tensor expand(IntList sizes) const;
  Tensor expand_as(const Tensor& other) const { return expand(other.sizes()); }
  Tensor flatten(int64_t start_dim = 0, int64_t end_dim = -1) const;
  /// Splits dimension `dim` into `sizes` (one entry may be -1), the inverse of flatten.
  Tensor unflatten(int64_t dim, IntList sizes) const;
  // Rearranging (ember/ops.h has the documentation).
  Tensor flip(IntList dims) const;
  Tensor roll(IntList shifts, IntList dims = {}) const;
  Tensor repeat(IntList repeats) const;
  Tensor tile(IntList reps) const;
  Tensor tril(int64_t diagonal = 0) const;
  Tensor triu(int64_t diagonal = 0) const;
  Tensor diagonal(int64_t offset = 0, int64_t dim1 = 0, int64_t dim2 = 1) const;
  Tensor movedim(IntList source, IntList destination) const;
  Tensor as_strided(IntList sizes, IntList strides, std::optional<int64_t> storage_offset = std::nullopt) const;
  /// Tensor.unfold: a view of every window of `size` elements along `dimension`, `step` apart,
  /// as a new last dimension (windows overlap when step < size; their gradients add up).
  Tensor unfold(int64_t dimension, int64_t size, int64_t step) const;

  // ---- copies ----
  Tensor contiguous() const;
  Tensor clone() const;
  Tensor detach() const;
  /// Copies src into *this (broadcasting src), converting dtype and device as needed. With
  /// non_blocking, a copy between pinned host memory and a GPU may still be running when this
  /// returns (PyTorch's semantics: synchronise before reading or reusing the host memory).
  Tensor& copy_(const Tensor& src, bool non_blocking = false);
  Tensor& fill_(const Scalar& value);
  Tensor& zero_();

  // ---- moving between devices and dtypes; returns *this when nothing changes ----
  // non_blocking: a copy from pinned memory to a GPU, or from a GPU to the host (into pinned
  // memory), is queued without waiting; call cuda::synchronize() before reading the result on
  // the host. Other copies are synchronous, as in PyTorch.
  Tensor to(Device device, bool non_blocking = false, bool copy = false) const;
  Tensor to(Dtype dtype, bool non_blocking = false, bool copy = false) const;
  Tensor to(Device device, Dtype dtype, bool non_blocking = false, bool copy = false) const;
  Tensor to(const TensorOptions& options, bool non_blocking = false, bool copy = false) const;
  Tensor cpu() const { return to(Device(DeviceType::CPU)); }
  /// A copy of this CPU tensor in pinned (page-locked) host memory, which a GPU copies to and
  /// from asynchronously: x.pin_memory().to(device, /*non_blocking=*/true) does not wait. Needs
  /// a usable GPU (ember::Error otherwise); returns *this when already pinned.
  Tensor pin_memory() const;
  bool is_pinned() const;
  Tensor cuda(int index = -1) const { return to(Device(DeviceType::CUDA, index)); }
  Tensor float_() const { return to(kFloat32); }
  Tensor double_() const { return to(kFloat64); }
  Tensor long_() const { return to(kInt64); }

  // ---- element-wise math (see ops.h for the free-function forms) ----
  Tensor add(const Tensor& other, const Scalar& alpha = 1) const;
  Tensor sub(const Tensor& other, const Scalar& alpha = 1) const;
  Tensor mul(const Tensor& other) const;
  Tensor div(const Tensor& other) const;
  Tensor pow(const Scalar& exponent) const;
  Tensor neg() const;
  Tensor abs() const;
  Tensor exp() const;
  Tensor log() const;
  Tensor sqrt() const;
  Tensor rsqrt() const;
  Tensor tanh() const;
  Tensor sigmoid() const;
  Tensor relu() const;
  Tensor gelu() const;
  Tensor floor() const;
  Tensor ceil() const;
  Tensor round(int64_t decimals = 0) const;
  Tensor trunc() const;
  Tensor frac() const;
  Tensor sign() const;
  Tensor square() const;
  Tensor log1p() const;
  Tensor expm1() const;
  Tensor log2() const;
  Tensor log10() const;
  Tensor exp2() const;
  Tensor reciprocal() const;
  Tensor sin() const;
  Tensor cos() const;
  Tensor tan() const;
  Tensor asin() const;
  Tensor acos() const;
  Tensor atan() const;
  Tensor sinh() const;
  Tensor cosh() const;
  Tensor asinh() const;
  Tensor acosh() const;
  Tensor atanh() const;
  Tensor erf() const;
  Tensor erfc() const;
  Tensor erfinv() const;
  Tensor lgamma() const;
  Tensor digamma() const;
  Tensor norm(double p = 2.0, IntList dims = {}, bool keepdim = false) const;
  Tensor logsumexp(IntList dims, bool keepdim = false) const;
  Tensor any() const;
  Tensor all() const;
  Tensor remainder(const Tensor& other) const;
  Tensor remainder(const Scalar& other) const;
  Tensor fmod(const Tensor& other) const;
  Tensor fmod(const Scalar& other) const;
  Tensor clamp(std::optional<Scalar> min, std::optional<Scalar> max = std::nullopt) const;
  Tensor masked_fill(const Tensor& mask, const Scalar& value) const;
  Tensor masked_fill(const Tensor& mask, const Tensor& value) const;
  Tensor eq(const Tensor& other) const;
  Tensor ne(const Tensor& other) const;
  Tensor lt(const Tensor& other) const;
  Tensor le(const Tensor& other) const;
  Tensor gt(const Tensor& other) const;
  Tensor ge(const Tensor& other) const;
  Tensor& add_(const Tensor& other, const Scalar& alpha = 1);
  Tensor& sub_(const Tensor& other, const Scalar& alpha = 1);
  Tensor& mul_(const Tensor& other);
  Tensor& div_(const Tensor& other);
  Tensor& add_(const Scalar& other);
  Tensor& mul_(const Scalar& other);
  Tensor& relu_();
  Tensor& clamp_(std::optional<Scalar> min, std::optional<Scalar> max = std::nullopt);
  Tensor& masked_fill_(const Tensor& mask, const Scalar& value);
  Tensor& masked_fill_(const Tensor& mask, const Tensor& value);

  // ---- reductions ----
  Tensor sum() const;
  Tensor sum(IntList dims, bool keepdim = false) const;
  Tensor mean() const;
  Tensor mean(IntList dims, bool keepdim = false) const;
  Tensor prod() const;
  Tensor prod(int64_t dim, bool keepdim = false) const;
  Tensor max() const;
  Tensor min() const;
  /// Values of max along `dim` (see ember::max for values and indices together).
  Tensor amax(IntList dims, bool keepdim = false) const;
  Tensor amin(IntList dims, bool keepdim = false) const;
  Tensor argmax(std::optional<int64_t> dim = std::nullopt, bool keepdim = false) const;
  Tensor argmin(std::optional<int64_t> dim = std::nullopt, bool keepdim = false) const;
  /// Variance over all elements with Bessel's correction; var({}, 0) is the population variance.
  Tensor var() const;
  Tensor var(IntList dims, int64_t correction = 1, bool keepdim = false) const;
  Tensor std() const;
  Tensor std(IntList dims, int64_t correction = 1, bool keepdim = false) const;

  // ---- linear algebra, indexing, nn-style ops ----
  Tensor matmul(const Tensor& other) const;
  Tensor mm(const Tensor& other) const;
  Tensor bmm(const Tensor& other) const;
  Tensor softmax(int64_t dim) const;
  Tensor log_softmax(int64_t dim) const;
  Tensor index_select(int64_t dim, const Tensor& index) const;
  Tensor gather(int64_t dim, const Tensor& index) const;
  Tensor scatter_add(int64_t dim, const Tensor& index, const Tensor& src) const;
  // ember/indexing.h has the documentation, and Slice, None and Ellipsis for index().
  /// Python's x[...]: x.index({Slice(), 0, idx}) is x[:, 0, idx].
  Tensor index(std::initializer_list<TensorIndex> indices) const;
  /// Python's x[...] = value, in place.
  Tensor& index_put_(std::initializer_list<TensorIndex> indices, const Tensor& value);
  Tensor& index_put_(std::initializer_list<TensorIndex> indices, const Scalar& value);
  Tensor scatter(int64_t dim, const Tensor& index, const Tensor& src) const;
  Tensor scatter(int64_t dim, const Tensor& index, const Scalar& value) const;
  Tensor scatter_reduce(int64_t dim, const Tensor& index, const Tensor& src, std::string_view reduce,
                        bool include_self = true) const;
  Tensor index_add(int64_t dim, const Tensor& index, const Tensor& source, const Scalar& alpha = 1) const;
  Tensor index_copy(int64_t dim, const Tensor& index, const Tensor& source) const;
  Tensor index_fill(int64_t dim, const Tensor& index, const Scalar& value) const;
  Tensor masked_select(const Tensor& mask) const;
  Tensor masked_scatter(const Tensor& mask, const Tensor& source) const;
  Tensor take(const Tensor& index) const;
  Tensor nonzero() const;

  // ---- sorting and running reductions (ember/sort.h, ember/scan.h have the documentation) ----
  std::tuple<Tensor, Tensor> sort(int64_t dim = -1, bool descending = false, bool stable = false) const;
  Tensor argsort(int64_t dim = -1, bool descending = false, bool stable = false) const;
  std::tuple<Tensor, Tensor> topk(int64_t k, int64_t dim = -1, bool largest = true, bool sorted = true) const;
  std::tuple<Tensor, Tensor> kthvalue(int64_t k, int64_t dim = -1, bool keepdim = false) const;
  Tensor median() const;
  std::tuple<Tensor, Tensor> median(int64_t dim, bool keepdim = false) const;
  Tensor cumsum(int64_t dim, std::optional<Dtype> dtype = std::nullopt) const;
  Tensor cumprod(int64_t dim, std::optional<Dtype> dtype = std::nullopt) const;
  std::tuple<Tensor, Tensor> cummax(int64_t dim) const;
  std::tuple<Tensor, Tensor> cummin(int64_t dim) const;
  Tensor logcumsumexp(int64_t dim) const;

  /// Exactly what PyTorch's repr() prints.
  std::string str() const;

  /// Internal: the implementation, for ember's own code.
  detail::TensorImpl& impl() const {
    if (!impl_) [[unlikely]]
      fail_undefined();
    return *impl_;
  }
  const std::shared_ptr<detail::TensorImpl>& impl_ptr() const { return impl_; }

 private:
  void check_dtype_for_access(Dtype requested) const;
  [[noreturn]] static void fail_undefined();
  std::shared_ptr<detail::TensorImpl> impl_;
};

std::ostream& operator<<(std::ostream& os, const Tensor& t);

// Arithmetic operators with tensors and scalars, as in libtorch.
Tensor operator+(const Tensor& a, const Tensor& b);
Tensor operator-(const Tensor& a, const Tensor& b);
Tensor operator*(const Tensor& a, const Tensor& b);
Tensor operator/(const Tensor& a, const Tensor& b);
Tensor operator+(const Tensor& a, const Scalar& b);
Tensor operator-(const Tensor& a, const Scalar& b);
Tensor operator*(const Tensor& a, const Scalar& b);
Tensor operator/(const Tensor& a, const Scalar& b);
Tensor operator+(const Scalar& a, const Tensor& b);
Tensor operator-(const Scalar& a, const Tensor& b);
Tensor operator*(const Scalar& a, const Tensor& b);
Tensor operator/(const Scalar& a, const Tensor& b);
Tensor operator-(const Tensor& a);
Tensor operator==(const Tensor& a, const Tensor& b);
Tensor operator!=(const Tensor& a, const Tensor& b);
Tensor operator<(const Tensor& a, const Tensor& b);
Tensor operator<=(const Tensor& a, const Tensor& b);
Tensor operator>(const Tensor& a, const Tensor& b);
Tensor operator>=(const Tensor& a, const Tensor& b);
Tensor operator==(const Tensor& a, const Scalar& b);
Tensor operator!=(const Tensor& a, const Scalar& b);
Tensor operator<(const Tensor& a, const Scalar& b);
Tensor operator<=(const Tensor& a, const Scalar& b);
Tensor operator>(const Tensor& a, const Scalar& b);
Tensor operator>=(const Tensor& a, const Scalar& b);
Tensor& operator+=(Tensor& a, const Tensor& b);
Tensor& operator-=(Tensor& a, const Tensor& b);
Tensor& operator*=(Tensor& a, const Tensor& b);
Tensor& operator/=(Tensor& a, const Tensor& b);
Tensor& operator+=(Tensor& a, const Scalar& b);
Tensor& operator-=(Tensor& a, const Scalar& b);
Tensor& operator*=(Tensor& a, const Scalar& b);
Tensor& operator/=(Tensor& a, const Scalar& b);

}  // namespace ember
