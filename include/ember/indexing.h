#pragma once
/// Indexing ops beyond index_select/gather/scatter_add (src/ops/index_ops.cpp, scatter_ops.cpp,
/// tensor_indexing.cpp), with PyTorch 2.15's semantics, messages and gradients:
///  - scatter / scatter_reduce, index_add / index_copy / index_fill / index_put, masked_select /
///    masked_scatter, nonzero / argwhere, take / take_along_dim, one_hot, bincount, histc;
///  - libtorch-style tensor indexing: `index(x, {Slice(), 2, None, Ellipsis, idx, mask})` is
///    Python's `x[:, 2, None, ..., idx, mask]`, and `index_put_(x, {...}, value)` its assignment.
///
/// Index values may be negative (counted from the end) where PyTorch allows it: tensor indexing,
/// index_put, index_fill, take, take_along_dim. scatter, gather and index_add/index_copy refuse
/// them, as PyTorch does.
#include <cstdint>
#include <initializer_list>
#include <optional>
#include <string_view>
#include <type_traits>
#include <vector>

#include "ember/scalar.h"
#include "ember/tensor.h"

namespace ember {

// ---- tensor indexing ----

/// Python's `None` in an index: a new dimension of size one (and, as a Slice end, "absent").
struct NoneIndex {
  constexpr operator std::optional<int64_t>() const { return std::nullopt; }  // NOLINT: Slice(None, 3)
};
inline constexpr NoneIndex None{};

/// Python's `start:stop:step`; an absent end means "from the beginning" / "to the end". A
/// negative start or stop counts from the end; the step must be positive (as PyTorch's).
struct Slice {
  std::optional<int64_t> start;
  std::optional<int64_t> stop;
  int64_t step = 1;
  Slice() = default;
  Slice(std::optional<int64_t> start_, std::optional<int64_t> stop_ = std::nullopt, int64_t step_ = 1)
      : start(start_), stop(stop_), step(step_) {}
};
/// Python's `...`: as many full slices as the other indices leave dimensions.
struct EllipsisIndex {};
inline constexpr EllipsisIndex Ellipsis{};

/// One entry of an index list: an integer (selects, removing the dimension), a Slice, None,
/// Ellipsis, a bool (True adds a dimension of one, False one of zero) or a tensor (int64/int32
/// positions, or a bool/uint8 mask covering as many dimensions as it has).
class TensorIndex {
 public:
  enum class Kind { Integer, Slice, None, Ellipsis, Boolean, Tensor };

  template <typename T>
  requires(std::is_integral_v<T> && !std::is_same_v<T, bool>) TensorIndex(T integer)
      : kind_(Kind::Integer), integer_(static_cast<int64_t>(integer)) {}
  TensorIndex(bool boolean) : kind_(Kind::Boolean), boolean_(boolean) {}
  TensorIndex(Slice slice) : kind_(Kind::Slice), slice_(slice) {}
  TensorIndex(NoneIndex) : kind_(Kind::None) {}
  TensorIndex(std::nullopt_t) : kind_(Kind::None) {}
  TensorIndex(EllipsisIndex) : kind_(Kind::Ellipsis) {}
  TensorIndex(Tensor tensor) : kind_(Kind::Tensor), tensor_(std::move(tensor)) {}

  Kind kind() const { return kind_; }
  bool is_integer() const { return kind_ == Kind::Integer; }
  bool is_slice() const { return kind_ == Kind::Slice; }
  bool is_none() const { return kind_ == Kind::None; }
  bool is_ellipsis() const { return kind_ == Kind::Ellipsis; }
  bool is_boolean() const { return kind_ == Kind::Boolean; }
  bool is_tensor() const { return kind_ == Kind::Tensor; }
  int64_t integer() const { return integer_; }
  bool boolean() const { return boolean_; }
  const Slice& slice() const { return slice_; }
  const Tensor& tensor() const { return tensor_; }

 private:
  Kind kind_;
  int64_t integer_ = 0;
  bool boolean_ = false;
  Slice slice_;
  Tensor tensor_;
};

/// x[indices...] as Python's indexing: integers, slices, None and Ellipsis alone give a view of
/// x; any tensor (or bool) index makes it advanced indexing, which copies. The advanced indices
/// are broadcast together; their result dimensions replace the indexed ones in place when the
/// advanced indices are adjacent, and go first otherwise (after integers have been applied, as
/// PyTorch does). Its gradient scatters back with accumulation (duplicates add up).
Tensor index(const Tensor& x, std::initializer_list<TensorIndex> indices);
Tensor index(const Tensor& x, const std::vector<TensorIndex>& indices);
/// x[indices...] = value, in place (value broadcast to the indexed result's shape); returns x.
Tensor& index_put_(Tensor& x, std::initializer_list<TensorIndex> indices, const Tensor& value);
Tensor& index_put_(Tensor& x, std::initializer_list<TensorIndex> indices, const Scalar& value);
Tensor& index_put_(Tensor& x, const std::vector<TensorIndex>& indices, const Tensor& value);
Tensor& index_put_(Tensor& x, const std::vector<TensorIndex>& indices, const Scalar& value);

/// torch.index_put: a copy of x with x[indices] = values (or += with accumulate). `indices` has
/// one optional tensor per leading dimension (undefined: the whole dimension), broadcast
/// together; bool masks stand for their nonzero positions. Without accumulate, a position given
/// twice takes one of its values (which one is unspecified, as in PyTorch).
Tensor index_put(const Tensor& x, const std::vector<Tensor>& indices, const Tensor& values, bool accumulate = false);
Tensor& index_put_(Tensor& x, const std::vector<Tensor>& indices, const Tensor& values, bool accumulate = false);

// ---- scatter family (ScatterBackward0, ScatterReduceBackward0) ----

/// torch.scatter: a copy of x with x[..., index[p], ...] = src[p] along dim (src narrowed to
/// index's sizes); duplicates leave one of their values. With `reduce` "add" or "multiply"
/// (torch.scatter's deprecated reduce argument) the values are combined instead; that form has
/// no gradient, as in PyTorch.
Tensor scatter(const Tensor& x, int64_t dim, const Tensor& index, const Tensor& src);
Tensor scatter(const Tensor& x, int64_t dim, const Tensor& index, const Scalar& value);
Tensor scatter(const Tensor& x, int64_t dim, const Tensor& index, const Tensor& src, std::string_view reduce);
Tensor scatter(const Tensor& x, int64_t dim, const Tensor& index, const Scalar& value, std::string_view reduce);
/// torch.scatter_reduce: reduce is "sum", "prod", "mean", "amax" or "amin"; with include_self
/// false the positions scattered to start from the identity instead of x (x elsewhere). "mean"
/// divides by the count of values (plus one with include_self), rounding down for integer dtypes.
/// Its gradient is PyTorch's: prod handles zeros, amax/amin split the gradient evenly among the
/// elements equal to the result.
Tensor scatter_reduce(const Tensor& x, int64_t dim, const Tensor& index, const Tensor& src, std::string_view reduce,
                      bool include_self = true);

// ---- index_* along one dimension ----

/// x with alpha * source[..., i, ...] added to x[..., index[i], ...] along dim (torch.index_add).
Tensor index_add(const Tensor& x, int64_t dim, const Tensor& index, const Tensor& source, const Scalar& alpha = 1);
/// x with source[..., i, ...] copied to x[..., index[i], ...] along dim (torch.index_copy).
Tensor index_copy(const Tensor& x, int64_t dim, const Tensor& index, const Tensor& source);
/// x with every slice index[i] along dim filled with value (a scalar or a 0-dim tensor).
Tensor index_fill(const Tensor& x, int64_t dim, const Tensor& index, const Scalar& value);
Tensor index_fill(const Tensor& x, int64_t dim, const Tensor& index, const Tensor& value);

// ---- masks and positions ----

/// The elements of x where the bool mask (broadcast with x) is true, as a 1-D tensor. Reads the
/// count on the host (a sync on a GPU, as in PyTorch).
Tensor masked_select(const Tensor& x, const Tensor& mask);
/// x with the positions where mask (broadcast to x) is true taken, in order, from source's first
/// elements. Reads the count on the host.
Tensor masked_scatter(const Tensor& x, const Tensor& mask, const Tensor& source);
/// The positions of the non-zero elements, [count, x.dim()] int64 in row-major order.
Tensor nonzero(const Tensor& x);
/// nonzero(x, as_tuple=True): one 1-D tensor per dimension (one for a 0-dim x).
std::vector<Tensor> nonzero(const Tensor& x, bool as_tuple);
/// torch.argwhere: nonzero(x).
Tensor argwhere(const Tensor& x);

// ---- taking ----

/// x's elements at the flat (row-major) positions in index, in index's shape (torch.take).
Tensor take(const Tensor& x, const Tensor& index);
/// gather along dim with the index broadcast to x (but along dim); without dim, take on the
/// flattened tensor (torch.take_along_dim).
Tensor take_along_dim(const Tensor& x, const Tensor& indices, std::optional<int64_t> dim = std::nullopt);

// ---- counting ----

/// nn.functional.one_hot: int64 [..., num_classes]; num_classes = -1 takes max(x) + 1 (read on
/// the host).
Tensor one_hot(const Tensor& x, int64_t num_classes = -1);
/// torch.bincount: counts of each value of a 1-D non-negative integer tensor (or the sums of
/// `weights` at them), with at least minlength bins. Reads the max on the host.
Tensor bincount(const Tensor& x, const Tensor& weights = Tensor(), int64_t minlength = 0);
/// torch.histc: `bins` equal-width bins over [min, max] (the data's own range when both are
/// 0); elements outside are ignored and max itself falls in the last bin.
Tensor histc(const Tensor& x, int64_t bins = 100, const Scalar& min = 0, const Scalar& max = 0);

}  // namespace ember
