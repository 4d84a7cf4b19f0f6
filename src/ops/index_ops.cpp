// index_add, index_copy, index_fill, masked_select, masked_scatter, nonzero, argwhere, take,
// take_along_dim, one_hot, bincount and histc, with PyTorch's checks and messages. Each is
// composed of index_select, gather, scatter / scatter_add and element-wise ops, so its gradient
// and device handling come from those: index_add is scatter_add with the index broadcast along
// the other dimensions, index_copy the same with scatter, masked_select an index_select of the
// mask's positions. The ops whose result size depends on the data (nonzero, masked_select,
// masked_scatter, one_hot without num_classes, bincount) read it on the host, as PyTorch does.
#include <cmath>
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

namespace {

/// `index` (a vector of positions along dim) as an int64 tensor of `sizes` on `device`, each
/// position repeated along every other dimension: what scatter needs to move whole slices.
Tensor slices_index(const Tensor& index, int64_t dim, IntList sizes, Device device) {
  Dims shape(sizes.size(), 1);
  shape[static_cast<size_t>(dim)] = index.numel();
  return index.to(device, kInt64).reshape(shape).expand(sizes).contiguous();
}

Tensor as1d(const Tensor& t) { return t.dim() == 0 ? t.reshape({1}) : t; }

/// The checks index_add and index_copy share on source's shape against self's.
bool slices_match(const Tensor& x, const Tensor& source, int64_t dim) {
  const Tensor a = as1d(x), b = as1d(source);
  if (a.dim() != b.dim()) return false;
  for (int64_t d = 0; d < a.dim(); ++d) {
    if (d != dim && a.size(d) != b.size(d)) return false;
  }
  return true;
}

}  // namespace

Tensor index_add(const Tensor& x, int64_t dim, const Tensor& index, const Tensor& source, const Scalar& alpha) {
  detail::OpContext context("index_add", {{"input", &x}, {"index", &index}, {"source", &source}});
  check_defined(x, "index_add");
  check_defined(index, "index_add");
  check_defined(source, "index_add");
  dim = detail::wrap_dim(dim, std::max<int64_t>(x.dim(), 1));
  EMBER_CHECK(index.dtype() == kInt64 || index.dtype() == kInt32,
              "index_add_(): Expected dtype int32/int64 for index but got: ", scalar_type_name(index.dtype()));
  EMBER_CHECK(index.dim() <= 1, "index_add_(): Index is supposed to be a vector, but got dim: ", index.dim(),
              " with type: ", scalar_type_name(index.dtype()), " and size: ", shape_str(index.sizes()));
  EMBER_CHECK(x.dtype() == source.dtype(), "index_add_(): self (", scalar_type_name(x.dtype()), ") and source (",
              scalar_type_name(source.dtype()), ") must have the same scalar type");
  const int64_t along = source.dim() == 0 ? 1 : source.size(dim);
  EMBER_CHECK(index.numel() == along, "index_add_(): Number of indices (", index.numel(),
              ") should be equal to source.size(dim): (", along, "), for dim: ", dim);
  EMBER_CHECK(slices_match(x, source, dim),
              "source tensor shape must match self tensor shape, excluding the specified dimension. Got self.shape = ",
              shape_str(x.sizes()), " source.shape = ", shape_str(source.sizes()));
  const int64_t size = x.dim() == 0 ? 1 : x.size(dim);
  detail::check_index_bounds(index, size, false, [&](int64_t v) {
    if (x.dim() <= 1) detail::fail("index out of range in self");
    detail::fail("index ", v, " is out of bounds for dimension ", dim, " with size ", size);
  });
  const Tensor src = as1d(source);
  const Tensor scaled = alpha.to<double>() == 1.0 ? src : src * alpha;
  const Tensor out = scatter_add(as1d(x), dim, slices_index(index, dim, src.sizes(), x.device()), scaled);
  return x.dim() == 0 ? out.reshape({}) : out;
}

Tensor index_copy(const Tensor& x, int64_t dim, const Tensor& index, const Tensor& source) {
  detail::OpContext context("index_copy", {{"input", &x}, {"index", &index}, {"source", &source}});
  check_defined(x, "index_copy");
  check_defined(index, "index_copy");
  check_defined(source, "index_copy");
  dim = detail::wrap_dim(dim, std::max<int64_t>(x.dim(), 1));
  EMBER_CHECK(index.dim() <= 1, "index_copy_(): Index should have dimension 1 or 0 (got ", index.dim(), ")");
  EMBER_CHECK(index.dtype() == kInt64, "index_copy_(): Expected a long tensor for index, but got ",
              scalar_type_name(index.dtype()));
  EMBER_CHECK(x.dtype() == source.dtype(),
              "index_copy_(): self and source expected to have the same dtype, but got (self) ",
              scalar_type_name(x.dtype()), " and (source) ", scalar_type_name(source.dtype()));
  const int64_t along = source.dim() == 0 ? 1 : source.size(dim);
  EMBER_CHECK(index.numel() == along, "index_copy_(): Number of indices (", index.numel(),
              ") should be equal to source.size(dim) (", along, ")");
  EMBER_CHECK(slices_match(x, source, dim), "index_copy_(): Source/destination tensor must have same slice shapes. ",
              "Destination slice shape: ", shape_str(x.sizes()), " at dimension ", dim,
              " and source slice shape: ", shape_str(source.sizes()), " at dimension ", dim, ".");
  const int64_t size = x.dim() == 0 ? 1 : x.size(dim);
  detail::check_index_bounds(index, size, false, [&](int64_t v) {
    detail::fail("index_copy_(): index ", v, " is out of bounds for dimension ", dim, " with size ", size);
  });
  const Tensor src = as1d(source);
  const Tensor out = scatter(as1d(x), dim, slices_index(index, dim, src.sizes(), x.device()), src);
  return x.dim() == 0 ? out.reshape({}) : out;
}

namespace {

/// The bool mask of x's shape that is true on the slices index[i] along dim.
Tensor slices_mask(const Tensor& x, int64_t dim, const Tensor& index) {
  EMBER_CHECK(index.dim() <= 1, "Index has to be a vector/scalar");
  EMBER_CHECK(index.dtype() == kInt64 || index.dtype() == kInt32, "index_fill_(): Expected dtype int64 for index.");
  const int64_t size = x.dim() == 0 ? 1 : x.size(dim);
  detail::check_index_bounds(index, size, true, [&](int64_t v) {
    detail::fail("index ", v, " is out of bounds for dimension ", dim, " with size ", size);
  });
  NoGradGuard no_grad;
  const Tensor positions = detail::wrap_negative(detail::long_index_on(index, x.device()), size).reshape({-1});
  const Tensor along = scatter(zeros({size}, TensorOptions().dtype(kBool).device(x.device())), 0, positions, true);
  if (x.dim() == 0) return along.reshape({});
  Dims shape(static_cast<size_t>(x.dim()), 1);
  shape[static_cast<size_t>(dim)] = size;
  return along.reshape(shape);
}

}  // namespace

Tensor index_fill(const Tensor& x, int64_t dim, const Tensor& index, const Scalar& value) {
  detail::OpContext context("index_fill", {{"input", &x}, {"index", &index}});
  check_defined(x, "index_fill");
  check_defined(index, "index_fill");
  dim = detail::wrap_dim(dim, std::max<int64_t>(x.dim(), 1));
  return masked_fill(x, slices_mask(x, dim, index), value);
}

Tensor index_fill(const Tensor& x, int64_t dim, const Tensor& index, const Tensor& value) {
  detail::OpContext context("index_fill", {{"input", &x}, {"index", &index}, {"value", &value}});
  check_defined(x, "index_fill");
  check_defined(index, "index_fill");
  check_defined(value, "index_fill");
  EMBER_CHECK(value.dim() == 0, "index_fill_ only supports a 0-dimensional value tensor, but got tensor with ",
              value.dim(), " dimension(s).");
  dim = detail::wrap_dim(dim, std::max<int64_t>(x.dim(), 1));
  return masked_fill(x, slices_mask(x, dim, index), value.to(x.dtype()));
}

Tensor masked_select(const Tensor& x, const Tensor& mask) {
  detail::OpContext context("masked_select", {{"input", &x}, {"mask", &mask}});
  check_defined(x, "masked_select");
  check_defined(mask, "masked_select");
  EMBER_CHECK(mask.dtype() == kBool, "masked_select: expected BoolTensor for mask");
  const std::vector<Tensor> both = broadcast_tensors({x, mask.to(x.device())});
  const Tensor positions = detail::nonzero_flat_positions(both[1]).to(x.device());
  return index_select(both[0].reshape({-1}), 0, positions);
}

Tensor masked_scatter(const Tensor& x, const Tensor& mask, const Tensor& source) {
  detail::OpContext context("masked_scatter", {{"input", &x}, {"mask", &mask}, {"source", &source}});
  check_defined(x, "masked_scatter");
  check_defined(mask, "masked_scatter");
  check_defined(source, "masked_scatter");
  EMBER_CHECK(mask.dtype() == kBool, "masked_scatter_ only supports boolean masks, but got mask with dtype ",
              scalar_type_name(mask.dtype()));
  EMBER_CHECK(x.dtype() == source.dtype(), "masked_scatter: expected self and source to have same dtypes but got",
              scalar_type_name(x.dtype()), " and ", scalar_type_name(source.dtype()));
  const std::vector<Tensor> both = broadcast_tensors({x, mask.to(x.device())});
  const Tensor positions = detail::nonzero_flat_positions(both[1]).to(x.device());
  const int64_t count = positions.numel();
  EMBER_CHECK(source.numel() >= count, "Number of elements of source < number of ones in mask");
  const Tensor values = source.to(x.device()).reshape({-1}).narrow(0, 0, count);
  return scatter(both[0].reshape({-1}), 0, positions, values).view(both[0].sizes());
}

Tensor nonzero(const Tensor& x) {
  detail::OpContext context("nonzero", {{"input", &x}});
  check_defined(x, "nonzero");
  const Tensor flat = detail::nonzero_flat_positions(x);
  const int64_t count = flat.numel(), rank = x.dim();
  std::vector<int64_t> coordinates(static_cast<size_t>(count * rank));
  const auto* positions = static_cast<const int64_t*>(flat.data_ptr());
  for (int64_t i = 0; i < count; ++i) {
    int64_t rest = positions[i];
    for (int64_t d = rank - 1; d >= 0; --d) {
      coordinates[static_cast<size_t>(i * rank + d)] = rest % x.size(d);
      rest /= x.size(d);
    }
  }
  return tensor(coordinates, TensorOptions().dtype(kInt64)).reshape({count, rank}).to(x.device());
}

std::vector<Tensor> nonzero(const Tensor& x, bool as_tuple) {
  if (!as_tuple) return {nonzero(x)};
  if (x.dim() == 0) return {nonzero(x.reshape({1})).select(1, 0)};
  const Tensor positions = nonzero(x);
  std::vector<Tensor> out;
  for (int64_t d = 0; d < x.dim(); ++d) out.push_back(positions.select(1, d));
  return out;
}

Tensor argwhere(const Tensor& x) { return nonzero(x); }

Tensor take(const Tensor& x, const Tensor& index) {
  detail::OpContext context("take", {{"input", &x}, {"index", &index}});
  check_defined(x, "take");
  check_defined(index, "take");
  EMBER_CHECK(index.dtype() == kInt64, "take(): Expected a long tensor for index, but got ",
              scalar_type_name(index.dtype()));
  EMBER_CHECK(x.numel() > 0 || index.numel() == 0, "take(): tried to take from an empty tensor");
  const int64_t n = x.numel();
  detail::check_index_bounds(index, n, true, [&](int64_t v) {
    detail::fail("out of range: tried to access index ", v, " on a tensor of ", n, " elements.");
  });
  const Tensor positions = detail::wrap_negative(detail::long_index_on(index, x.device()), n);
  return index_select(x.reshape({-1}), 0, positions.reshape({-1})).view(index.sizes());
}

Tensor take_along_dim(const Tensor& x, const Tensor& indices, std::optional<int64_t> dim) {
  detail::OpContext context("take_along_dim", {{"input", &x}, {"indices", &indices}});
  check_defined(x, "take_along_dim");
  check_defined(indices, "take_along_dim");
  EMBER_CHECK(indices.dtype() == kInt64, "torch.take_along_dim(): dtype of indices should be Long but got ",
              scalar_type_name(indices.dtype()));
  if (!dim) return gather(x.reshape({-1}), 0, indices.to(x.device()).reshape({-1}));
  const int64_t d = detail::wrap_dim(*dim, std::max<int64_t>(x.dim(), 1));
  EMBER_CHECK(x.dim() == indices.dim(), "torch.take_along_dim(): input and indices should have the same number of ",
              "dimensions, but got ", x.dim(), " dimensions for input, and ", indices.dim(), " dimensions for indices");
  if (x.dim() == 0) return gather(x, 0, indices.to(x.device()));
  // Broadcast everything but dim: indices keep their size along it, x keeps its own.
  Dims self_sizes(x.sizes());
  self_sizes[static_cast<size_t>(d)] = indices.size(d);
  Dims shape = broadcast_shapes(self_sizes, indices.sizes());
  const Tensor idx = indices.to(x.device()).expand(shape);
  shape[static_cast<size_t>(d)] = x.size(d);
  return gather(x.expand(shape), d, idx);
}

Tensor one_hot(const Tensor& x, int64_t num_classes) {
  detail::OpContext context("one_hot", {{"input", &x}});
  check_defined(x, "one_hot");
  EMBER_CHECK(x.dtype() == kInt64, "one_hot is only applicable to index tensor of type LongTensor.");
  if (num_classes == -1) {
    EMBER_CHECK(x.numel() > 0, "Can not infer total number of classes from empty tensor.");
  }
  if (x.numel() > 0) {
    // The range decides the result's size (or must be checked against it): read on the host.
    const auto [low, high] = aminmax(x);
    EMBER_CHECK(low.item<int64_t>() >= 0, "Class values must be non-negative.");
    if (num_classes == -1) num_classes = high.item<int64_t>() + 1;
    EMBER_CHECK(high.item<int64_t>() < num_classes, "Class values must be smaller than num_classes.");
  }
  EMBER_CHECK(num_classes >= 0, "Class values must be smaller than num_classes.");
  const Tensor classes = arange(num_classes, TensorOptions().dtype(kInt64).device(x.device()));
  return (x.unsqueeze(-1) == classes).to(kInt64);
}

Tensor bincount(const Tensor& x, const Tensor& weights, int64_t minlength) {
  detail::OpContext context("bincount", {{"input", &x}, {"weights", &weights}});
  check_defined(x, "bincount");
  EMBER_CHECK(!is_floating_point(x.dtype()) && x.dtype() != kBool, "\"bincount_cpu\" not implemented for '",
              scalar_type_name(x.dtype()), "'");
  EMBER_CHECK(minlength >= 0, "minlength should be >= 0");
  const bool weighted = weights.defined();
  EMBER_CHECK(x.dim() == 1, "bincount only supports 1-d non-negative integral inputs.");
  if (weighted) {
    EMBER_CHECK(weights.dim() == 1 && weights.numel() == x.numel(),
                "weights should be 1-d and have the same length as input");
  }
  const Dtype dtype = !weighted ? kInt64 : (is_floating_point(weights.dtype()) ? weights.dtype() : kFloat64);
  const TensorOptions options = TensorOptions().dtype(dtype).device(x.device());
  NoGradGuard no_grad;
  if (x.numel() == 0) return zeros({minlength}, options);
  const auto [low, high] = aminmax(x);
  EMBER_CHECK(low.item<int64_t>() >= 0, "bincount only supports 1-d non-negative integral inputs.");
  const int64_t bins = std::max(high.item<int64_t>() + 1, minlength);
  const Tensor values = weighted ? weights.to(x.device(), dtype) : ones({x.numel()}, options);
  return scatter_add(zeros({bins}, options), 0, x.to(kInt64), values);
}

Tensor histc(const Tensor& x, int64_t bins, const Scalar& min, const Scalar& max) {
  detail::OpContext context("histc", {{"input", &x}});
  check_defined(x, "histc");
  EMBER_CHECK(is_floating_point(x.dtype()), "\"histogram_cpu\" not implemented for '", scalar_type_name(x.dtype()),
              "'");
  EMBER_CHECK(bins > 0, "torch.histogram(): bins must be > 0, but got ", bins, " for dimension 0");
  double low = min.to<double>(), high = max.to<double>();
  EMBER_CHECK(low <= high, "torch.histc: max must be larger than min");
  NoGradGuard no_grad;
  if (low == high && x.numel() > 0) {
    // Both bounds equal: the data's own range (read on the host, as PyTorch does).
    const auto [data_low, data_high] = aminmax(x);
    low = data_low.to(kFloat64).item<double>();
    high = data_high.to(kFloat64).item<double>();
  }
  if (low == high) {
    low -= 1;
    high += 1;
  }
  EMBER_CHECK(std::isfinite(low) && std::isfinite(high), "torch.histc: range of [", low, ", ", high, "] is not finite");
  // PyTorch computes the bin in the input's dtype: (x - min) * bins / (max - min), truncated,
  // with x == max in the last bin and elements outside [min, max] (NaN included) left out.
  const Tensor lo = scalar_tensor(low, TensorOptions().dtype(x.dtype()).device(x.device()));
  const Tensor hi = scalar_tensor(high, TensorOptions().dtype(x.dtype()).device(x.device()));
  const Tensor inside = logical_and(x >= lo, x <= hi).reshape({-1});
  const Tensor scaled = (x - lo) * static_cast<double>(bins) / (hi - lo);
  Tensor bin = trunc(scaled).to(kInt64).reshape({-1});
  bin = where(bin >= bins, full_like(bin, bins - 1), bin);
  bin = where(inside, bin, zeros_like(bin));
  const TensorOptions options = TensorOptions().dtype(x.dtype()).device(x.device());
  return scatter_add(zeros({bins}, options), 0, bin, inside.to(x.dtype()));
}

}  // namespace ember
