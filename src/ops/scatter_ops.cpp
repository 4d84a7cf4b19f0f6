// scatter and scatter_reduce: PyTorch's checks, one backend scatter_reduce call on a copy of the
// input (prepared with the reduction's identity where include_self is false), and the gradients
// of torch's derivatives.yaml / FunctionsManual (prod's zeros, amax/amin's even split of the
// gradient among the elements equal to the result, mean's division by the counts).
#include <limits>
#include <string>
#include <string_view>
#include <vector>

#include "autograd/node.h"
#include "backend/backend.h"
#include "core/check.h"
#include "core/tensor_internal.h"
#include "ember/factories.h"
#include "ember/grad_mode.h"
#include "ember/indexing.h"
#include "ember/ops.h"
#include "ember/warning.h"
#include "ops/index_internal.h"
#include "ops/infer.h"

namespace ember {

using detail::check_defined;
using detail::shape_str;

namespace {

enum class Reduction { Sum, Prod, Mean, Amax, Amin };

Reduction reduction_of(std::string_view reduce) {
  if (reduce == "sum") return Reduction::Sum;
  if (reduce == "prod") return Reduction::Prod;
  if (reduce == "mean") return Reduction::Mean;
  if (reduce == "amax") return Reduction::Amax;
  if (reduce == "amin") return Reduction::Amin;
  detail::fail("reduce argument must be either sum, prod, mean, amax or amin, got ", reduce);
}

ScatterReduceOp kernel_op(Reduction r) {
  switch (r) {
    case Reduction::Sum:
    case Reduction::Mean:
      return ScatterReduceOp::Sum;
    case Reduction::Prod:
      return ScatterReduceOp::Prod;
    case Reduction::Amax:
      return ScatterReduceOp::Amax;
    case Reduction::Amin:
      return ScatterReduceOp::Amin;
  }
  return ScatterReduceOp::Sum;
}

/// The value a reduction starts from: 0, 1, or the lowest / highest value of the dtype.
Scalar identity_of(Reduction r, Dtype dtype) {
  constexpr double kInf = std::numeric_limits<double>::infinity();
  const bool floating = is_floating_point(dtype);
  auto lowest = [&]() -> Scalar {
    switch (dtype) {
      case kBool:
        return false;
      case kUInt8:
        return int64_t{0};
      case kInt8:
        return int64_t{std::numeric_limits<int8_t>::min()};
      case kInt16:
        return int64_t{std::numeric_limits<int16_t>::min()};
      case kInt32:
        return int64_t{std::numeric_limits<int32_t>::min()};
      default:
        return std::numeric_limits<int64_t>::min();
    }
  };
  auto highest = [&]() -> Scalar {
    switch (dtype) {
      case kBool:
        return true;
      case kUInt8:
        return int64_t{std::numeric_limits<uint8_t>::max()};
      case kInt8:
        return int64_t{std::numeric_limits<int8_t>::max()};
      case kInt16:
        return int64_t{std::numeric_limits<int16_t>::max()};
      case kInt32:
        return int64_t{std::numeric_limits<int32_t>::max()};
      default:
        return std::numeric_limits<int64_t>::max();
    }
  };
  switch (r) {
    case Reduction::Sum:
    case Reduction::Mean:
      return int64_t{0};
    case Reduction::Prod:
      return int64_t{1};
    case Reduction::Amax:
      return floating ? Scalar(-kInf) : lowest();
    case Reduction::Amin:
      return floating ? Scalar(kInf) : highest();
  }
  return int64_t{0};
}

/// PyTorch's scatter checks, in its order; returns the wrapped dim and the index as int64 on
/// x's device. `src` is null for the scalar forms.
std::pair<int64_t, Tensor> check_scatter(const char* op, const Tensor& x, int64_t dim, const Tensor& index,
                                         const Tensor* src) {
  check_defined(x, op);
  check_defined(index, op);
  if (src != nullptr) check_defined(*src, op);
  EMBER_CHECK(index.dtype() == kInt64 || index.dtype() == kInt32, op, "(): Expected dtype int32/int64 for index");
  const int64_t rank = std::max<int64_t>(x.dim(), 1);
  EMBER_CHECK(std::max<int64_t>(index.dim(), 1) == rank,
              "Index tensor must have the same number of dimensions as self tensor");
  if (src != nullptr) {
    EMBER_CHECK(std::max<int64_t>(src->dim(), 1) == rank,
                "Index tensor must have the same number of dimensions as src tensor");
  }
  dim = detail::wrap_dim(dim, rank);
  auto size_of = [](const Tensor& t, int64_t d) { return t.dim() == 0 ? 1 : t.size(d); };
  if (index.numel() > 0) {
    for (int64_t d = 0; d < std::max<int64_t>(index.dim(), 1); ++d) {
      const bool fits_self = d == dim || size_of(index, d) <= size_of(x, d);
      const bool fits_src = src == nullptr || size_of(index, d) <= size_of(*src, d);
      if (src != nullptr) {
        EMBER_CHECK(fits_self && fits_src, "Expected index ", shape_str(index.sizes()), " to be no larger than self ",
                    shape_str(x.sizes()), " apart from dimension ", dim, " and to be no larger size than src ",
                    shape_str(src->sizes()));
      } else {
        EMBER_CHECK(fits_self, "Expected index ", shape_str(index.sizes()), " to be no larger than self ",
                    shape_str(x.sizes()), " apart from dimension ", dim);
      }
    }
  }
  if (src != nullptr) {
    EMBER_CHECK(src->dtype() == x.dtype(), op, "(): Expected self.dtype to be equal to src.dtype");
  }
  const int64_t size = size_of(x, dim);
  detail::check_index_bounds(index, size, false, [&](int64_t v) {
    detail::fail("index ", v, " is out of bounds for dimension ", dim, " with size ", size);
  });
  return {dim, detail::long_index_on(index, x.device())};
}

Tensor as1d(const Tensor& t) { return t.dim() == 0 ? t.reshape({1}) : t; }

/// src narrowed to index's sizes (the part of it that is scattered).
Tensor narrow_to(const Tensor& src, const Tensor& index) {
  if (src.dim() == 0 || index.dim() == 0) return src;
  Tensor out = src;
  for (int64_t d = 0; d < index.dim(); ++d) {
    if (out.size(d) != index.size(d)) out = out.narrow(d, 0, index.size(d));
  }
  return out;
}

/// Runs the kernel on a detached copy of `into` (which the caller prepared) and returns it.
void run_kernel(ScatterReduceOp op, const Tensor& into, int64_t dim, const Tensor& index, const Tensor& src) {
  if (index.numel() == 0) return;
  backend_for(into.device()).scatter_reduce(op, view_of(as1d(into)), dim, view_of(as1d(index)), view_of(as1d(src)));
}

/// A gradient for src shaped as the index (the scattered part) put into zeros of src's sizes.
Tensor fit_to(const Tensor& grad, IntList sizes) {
  if (same_dims(grad.sizes(), sizes)) return grad;
  Tensor out = zeros(sizes, grad.options());
  Tensor part = out;
  for (int64_t d = 0; d < grad.dim(); ++d) part = part.narrow(d, 0, grad.size(d));
  part.copy_(grad);
  return out;
}

Tensor scalar_src(const Scalar& value, const Tensor& x, const Tensor& index) {
  return scalar_tensor(value, TensorOptions().dtype(x.dtype()).device(x.device())).expand(index.sizes());
}

std::optional<ScatterReduceOp> legacy_reduce(std::string_view reduce) {
  if (reduce == "add") return ScatterReduceOp::Sum;
  if (reduce == "multiply") return ScatterReduceOp::Prod;
  detail::fail("reduce argument must be either add or multiply.");
}

Tensor scatter_legacy_reduce(const Tensor& x, int64_t dim, const Tensor& index, const Tensor& src,
                             std::string_view reduce, bool tensor_src) {
  const auto checked = check_scatter("scatter", x, dim, index, tensor_src ? &src : nullptr);
  const int64_t wrapped = checked.first;
  const Tensor idx = checked.second;
  const ScatterReduceOp op = *legacy_reduce(reduce);
  if (tensor_src) {
    warn(
        "The reduce argument of torch.scatter with Tensor src is deprecated and will be removed in a future PyTorch "
        "release. Use torch.scatter_reduce instead for more reduction options.");
  }
  Tensor out = x.detach().clone();
  run_kernel(op, out, wrapped, idx, narrow_to(src, idx));
  if (autograd::needs_grad({&x, &src})) {
    autograd::record(out, "ScatterBackward0", {&x, &src}, [](const Tensor&) -> std::vector<Tensor> {
      detail::fail("derivative for aten::scatter is not implemented");
    });
  }
  return out;
}

}  // namespace

Tensor scatter(const Tensor& x, int64_t dim, const Tensor& index, const Tensor& src) {
  detail::OpContext context("scatter", {{"input", &x}, {"index", &index}, {"src", &src}});
  const auto checked = check_scatter("scatter", x, dim, index, &src);
  const int64_t wrapped = checked.first;
  const Tensor idx = checked.second;
  Tensor out = x.detach().clone();
  run_kernel(ScatterReduceOp::Assign, out, wrapped, idx, narrow_to(src.to(x.device()), idx));
  if (autograd::needs_grad({&x, &src})) {
    autograd::record(
        out, "ScatterBackward0", {&x, &src}, [dim = wrapped, idx, src_sizes = Dims(src.sizes())](const Tensor& g) {
          return std::vector<Tensor>{scatter(g, dim, idx, Scalar(0)), fit_to(g.gather(dim, idx), src_sizes)};
        });
  }
  return out;
}

Tensor scatter(const Tensor& x, int64_t dim, const Tensor& index, const Scalar& value) {
  detail::OpContext context("scatter", {{"input", &x}, {"index", &index}});
  const auto checked = check_scatter("scatter", x, dim, index, nullptr);
  const int64_t wrapped = checked.first;
  const Tensor idx = checked.second;
  Tensor out = x.detach().clone();
  run_kernel(ScatterReduceOp::Assign, out, wrapped, idx, scalar_src(value, x, idx));
  if (autograd::needs_grad({&x})) {
    autograd::record(out, "ScatterBackward1", {&x}, [dim = wrapped, idx](const Tensor& g) {
      return std::vector<Tensor>{scatter(g, dim, idx, Scalar(0))};
    });
  }
  return out;
}

Tensor scatter(const Tensor& x, int64_t dim, const Tensor& index, const Tensor& src, std::string_view reduce) {
  detail::OpContext context("scatter", {{"input", &x}, {"index", &index}, {"src", &src}});
  return scatter_legacy_reduce(x, dim, index, src, reduce, true);
}

Tensor scatter(const Tensor& x, int64_t dim, const Tensor& index, const Scalar& value, std::string_view reduce) {
  detail::OpContext context("scatter", {{"input", &x}, {"index", &index}});
  check_defined(x, "scatter");
  check_defined(index, "scatter");
  return scatter_legacy_reduce(x, dim, index, scalar_src(value, x, index.to(x.device(), kInt64)), reduce, false);
}

namespace {

/// The forward computation of scatter_reduce on plain tensors (no recording).
Tensor scatter_reduce_values(const Tensor& x, int64_t dim, const Tensor& idx, const Tensor& src, Reduction r,
                             bool include_self) {
  NoGradGuard no_grad;
  Tensor out = x.detach().clone();
  if (!include_self && idx.numel() > 0)
    run_kernel(ScatterReduceOp::Assign, out, dim, idx, scalar_src(identity_of(r, x.dtype()), x, idx));
  run_kernel(kernel_op(r), out, dim, idx, src.detach());
  if (r != Reduction::Mean) return out;
  // Divide by how many values each position received (plus one for self where it counts).
  Tensor counts = include_self ? ones_like(out) : zeros_like(out);
  counts = counts.scatter_add(dim, idx, ones_like(src));
  counts = masked_fill(counts, counts == 0, 1);
  if (is_floating_point(out.dtype())) return out / counts;
  // Integer dtypes round down (floor division); the sums are exact in float64 well past any
  // count of values a tensor can hold.
  const Tensor quotient = floor(out.to(kFloat64) / counts.to(kFloat64));
  return quotient.to(out.dtype());
}

}  // namespace

Tensor scatter_reduce(const Tensor& x, int64_t dim, const Tensor& index, const Tensor& src, std::string_view reduce,
                      bool include_self) {
  detail::OpContext context("scatter_reduce", {{"input", &x}, {"index", &index}, {"src", &src}});
  const Reduction r = reduction_of(reduce);
  const auto checked = check_scatter("scatter_reduce", x, dim, index, &src);
  const int64_t wrapped = checked.first;
  const Tensor idx = checked.second;
  const Tensor part = narrow_to(src.to(x.device()), idx);
  Tensor out = scatter_reduce_values(x, wrapped, idx, part, r, include_self);
  if (!autograd::needs_grad({&x, &src})) return out;
  const autograd::SavedTensor saved_x(x), saved_src(part), saved_out = autograd::SavedTensor::output(out);
  autograd::record(out, "ScatterReduceBackward0", {&x, &src},
                   [dim = wrapped, idx, r, include_self, saved_x, saved_src, saved_out, reduce = std::string(reduce),
                    src_sizes = Dims(src.sizes())](const Tensor& g) {
                     const Tensor self = saved_x.get(), source = saved_src.get(), result = saved_out.get();
                     Tensor grad_self, grad_src;
                     switch (r) {
                       case Reduction::Sum:
                         grad_self = g;
                         grad_src = g.gather(dim, idx);
                         break;
                       case Reduction::Mean: {
                         Tensor counts = include_self ? ones_like(g) : zeros_like(g);
                         counts = counts.scatter_add(dim, idx, ones_like(source));
                         counts = masked_fill(counts, counts == 0, 1);
                         grad_self = g / counts;
                         grad_src = grad_self.gather(dim, idx);
                         break;
                       }
                       case Reduction::Prod: {
                         // Divide the result by the element itself, except where that is zero: there the
                         // product of the others is computed directly (self set to 1, or a lone zero in src
                         // set to 1).
                         const Tensor self_ones = masked_fill(self, self == 0, 1);
                         grad_self = g * scatter_reduce(self_ones, dim, idx, source, reduce, include_self) / self_ones;
                         const Tensor src_zero = source == 0;
                         const Tensor zeros_at =
                             zeros_like(self).scatter_add(dim, idx, src_zero.to(self.dtype())).gather(dim, idx);
                         const Tensor lone_zero = logical_and(src_zero, zeros_at == 1);
                         const Tensor without_lone =
                             scatter_reduce(self, dim, idx, masked_fill(source, lone_zero, 1), reduce, include_self);
                         grad_src = where(lone_zero, (g * without_lone).gather(dim, idx),
                                          (g * result).gather(dim, idx) / masked_fill(source, src_zero, 1));
                         break;
                       }
                       case Reduction::Amax:
                       case Reduction::Amin: {
                         // Shared evenly among the elements (of self and src) equal to the result; self counts
                         // even where include_self is false, as in PyTorch.
                         const Tensor self_is_result = (self == result).to(self.dtype());
                         const Tensor src_is_result = (source == result.gather(dim, idx)).to(self.dtype());
                         const Tensor shares = self_is_result.scatter_add(dim, idx, src_is_result);
                         const Tensor per_share = g / shares;
                         grad_self = self_is_result * per_share;
                         grad_src = src_is_result * per_share.gather(dim, idx);
                         break;
                       }
                     }
                     if (!include_self) grad_self = scatter(grad_self, dim, idx, Scalar(0));
                     return std::vector<Tensor>{grad_self, fit_to(grad_src, src_sizes)};
                   });
  return out;
}

}  // namespace ember
