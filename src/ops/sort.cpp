// Sorting and selection (ember/sort.h): sort, argsort, msort, topk, kthvalue, median, nanmedian,
// searchsorted and bucketize, on the sort family's kernels (backend/cpu/sort.cpp,
// backend/cuda/sort.cu). unique and unique_consecutive are composed over sort in unique.cpp.
//
// The kernels work along the last dimension of a contiguous tensor, so each front end moves the
// dimension it works on last (a copy when it is not last already) and the results back. The
// selecting ops record one node each, under PyTorch's name, whose backward puts the gradient
// back where the values came from (a scatter_add into zeros: the positions along a row are
// distinct, so nothing adds up, and scatter_add is differentiable for double backward).
#include "ember/sort.h"

#include <limits>
#include <string>
#include <vector>

#include "autograd/node.h"
#include "backend/backend.h"
#include "core/check.h"
#include "core/tensor_internal.h"
#include "ember/factories.h"
#include "ember/grad_mode.h"
#include "ember/ops.h"

namespace ember {

using detail::check_defined;
using detail::make_tensor;

namespace {

// x with dimension `dim` moved last, contiguous: what the kernels take.
Tensor last_contiguous(const Tensor& x, int64_t dim) {
  return (dim == x.dim() - 1 ? x : x.movedim({dim}, {-1})).contiguous();
}

// The inverse of last_contiguous for a result: its last dimension back to `dim`, contiguous.
Tensor from_last(const Tensor& t, int64_t dim) { return dim == t.dim() - 1 ? t : t.movedim({-1}, {dim}).contiguous(); }

// Records `values` (selected from x along `dim` at `indices`, both with x's dimensions: keepdim
// form) as the result of a selection: the gradient goes back to those positions.
void record_selection(Tensor& values, const Tensor& x, const Tensor& indices, int64_t dim, const char* name) {
  if (!autograd::needs_grad({&x})) return;
  autograd::record(values, name, {&x}, [indices, dim, sizes = x.sizes().vec(), options = x.options()](const Tensor& g) {
    return std::vector<Tensor>{zeros(sizes, options.dtype(g.dtype())).scatter_add(dim, indices, g)};
  });
}

// A selecting op's outputs, from its keepdim form over x1 (the input, seen as 1-D when it is
// 0-d): the node is recorded there, so its backward sees matching dimensions; then the reduced
// dimension goes unless keepdim, and a 0-d input gives 0-d results.
std::tuple<Tensor, Tensor> finish_reduction(Tensor values, Tensor indices, const Tensor& x1, int64_t dim, bool keepdim,
                                            bool zero_d, const char* name) {
  record_selection(values, x1, indices, dim, name);
  if (zero_d) return {values.reshape({}), indices.reshape({})};
  if (keepdim) return {values, indices};
  return {values.squeeze(dim), indices.squeeze(dim)};
}

// Sorts x along `dim` without recording: (values, positions), both with x's sizes.
std::tuple<Tensor, Tensor> sort_untracked(const Tensor& x, int64_t dim, bool descending) {
  const Tensor moved = last_contiguous(x, dim);
  Tensor values = make_tensor(moved.sizes(), x.dtype(), x.device());
  Tensor indices = make_tensor(moved.sizes(), kInt64, x.device());
  backend_for(x.device()).sort(view_of(moved), descending, view_of(values), view_of(indices));
  return {from_last(values, dim), from_last(indices, dim)};
}

// The k smallest or largest along `dim`, without recording: [.., k, ..] values and positions.
std::tuple<Tensor, Tensor> topk_untracked(const Tensor& x, int64_t k, int64_t dim, bool largest) {
  const Tensor moved = last_contiguous(x, dim);
  Dims sizes(moved.sizes());
  sizes[sizes.size() - 1] = k;
  Tensor values = make_tensor(sizes, x.dtype(), x.device());
  Tensor indices = make_tensor(sizes, kInt64, x.device());
  backend_for(x.device()).topk(view_of(moved), k, largest, view_of(values), view_of(indices));
  return {from_last(values, dim), from_last(indices, dim)};
}

// A 0-d input is handled as one element along dimension 0 (PyTorch accepts dims 0 and -1).
Tensor as_1d(const Tensor& x) { return x.dim() == 0 ? x.reshape({1}) : x; }

// median and nanmedian along `dim` (keepdim form): the lower median of each slice, NaN (at the
// first NaN) where a slice has one unless ignore_nan, where NaNs are left out.
std::tuple<Tensor, Tensor> median_keepdim(const Tensor& x, int64_t dim, bool ignore_nan) {
  NoGradGuard no_grad;
  auto [sorted, positions] = sort_untracked(x, dim, /*descending=*/false);  // NaNs last, in order
  const Tensor valid = logical_not(isnan(x)).sum({dim}, /*keepdim=*/true);  // int64 counts
  const int64_t n = x.size(dim);
  Tensor k;
  if (ignore_nan) {
    // (valid - 1) // 2, exactly, through float64 (valid < 2^53).
    k = where(valid > 0, floor((valid - 1).to(kFloat64) / 2).to(kInt64), zeros_like(valid));
  } else {
    k = where(valid < n, valid, full_like(valid, (n - 1) / 2));
  }
  return {sorted.gather(dim, k), positions.gather(dim, k)};
}

// The gradient of a full median: shared evenly among the elements equal to the result (NaNs
// count as equal to a NaN result), as PyTorch's evenly_distribute_backward.
void record_full_median(Tensor& value, const Tensor& x, const char* name) {
  if (!autograd::needs_grad({&x})) return;
  autograd::record(value, name, {&x},
                   [sx = autograd::SavedTensor(x), sv = autograd::SavedTensor::output(value)](const Tensor& g) {
                     const Tensor input = sx.get(), result = sv.get();
                     const Tensor mask = logical_or(eq(input, result), logical_and(isnan(input), isnan(result)));
                     return std::vector<Tensor>{mask * (g / mask.sum())};
                   });
}

Tensor full_median(const Tensor& x, bool ignore_nan, const char* op, const char* name) {
  detail::OpContext context(op, {{"input", &x}});
  check_defined(x, op);
  if (x.numel() == 0) return full({}, std::numeric_limits<double>::quiet_NaN(), x.options());
  const Tensor flat = x.reshape({-1});
  Tensor value = std::get<0>(median_keepdim(flat, 0, ignore_nan)).reshape({});
  record_full_median(value, x, name);
  return value;
}

std::tuple<Tensor, Tensor> dim_median(const Tensor& x, int64_t dim, bool keepdim, bool ignore_nan, const char* op,
                                      const char* name) {
  detail::OpContext context(op, {{"input", &x}});
  check_defined(x, op);
  const Tensor x1 = as_1d(x);
  dim = detail::wrap_dim(dim, x.dim());
  EMBER_CHECK(x1.size(dim) != 0, op, "(): Expected reduction dim ", dim, " to have non-zero size.");
  auto [values, indices] = median_keepdim(x1, dim, ignore_nan);
  return finish_reduction(values, indices, x1, dim, keepdim, x.dim() == 0, name);
}

void check_sorter(const Tensor& boundaries, const Tensor& sorter) {
  EMBER_CHECK(sorter.dtype() == kInt64, "torch.searchsorted(): sorter must be a tensor of long dtype but got dtype ",
              scalar_type_name(sorter.dtype()));
  EMBER_CHECK(same_dims(sorter.sizes(), boundaries.sizes()),
              "torch.searchsorted(): boundary and sorter must have the same size, but got boundary tensor ",
              detail::shape_str(boundaries.sizes()), "and got sorter tensor ", detail::shape_str(sorter.sizes()));
  EMBER_CHECK(sorter.device() == boundaries.device(),
              "torch.searchsorted(): sorter and boundaries must be on the same device");
  if (sorter.numel() == 0) return;
  const int64_t m = boundaries.dim() == 0 ? 1 : boundaries.size(-1);
  const auto [lo, hi] = aminmax(sorter);
  EMBER_CHECK(lo.item<int64_t>() >= 0 && hi.item<int64_t>() < m, "torch.searchsorted(): sorter index out of range");
}

}  // namespace

std::tuple<Tensor, Tensor> sort(const Tensor& input, int64_t dim, bool descending, bool /*stable*/) {
  detail::OpContext context("sort", {{"input", &input}});
  check_defined(input, "sort");
  dim = detail::wrap_dim(dim, input.dim());
  const Tensor x1 = as_1d(input);
  Tensor values, indices;
  {
    NoGradGuard no_grad;
    std::tie(values, indices) = sort_untracked(x1, dim, descending);
  }
  return finish_reduction(values, indices, x1, dim, /*keepdim=*/true, input.dim() == 0, "SortBackward0");
}

Tensor argsort(const Tensor& input, int64_t dim, bool descending, bool stable) {
  return std::get<1>(sort(input.detach(), dim, descending, stable));
}

Tensor msort(const Tensor& input) { return std::get<0>(sort(input, 0)); }

std::tuple<Tensor, Tensor> topk(const Tensor& input, int64_t k, int64_t dim, bool largest, bool /*sorted*/) {
  detail::OpContext context("topk", {{"input", &input}});
  check_defined(input, "topk");
  dim = detail::wrap_dim(dim, input.dim());
  const Tensor x1 = as_1d(input);
  EMBER_CHECK(k >= 0 && k <= x1.size(dim), "selected index k out of range");
  Tensor values, indices;
  {
    NoGradGuard no_grad;
    std::tie(values, indices) = topk_untracked(x1, k, dim, largest);
  }
  return finish_reduction(values, indices, x1, dim, /*keepdim=*/true, input.dim() == 0, "TopkBackward0");
}

std::tuple<Tensor, Tensor> kthvalue(const Tensor& input, int64_t k, int64_t dim, bool keepdim) {
  detail::OpContext context("kthvalue", {{"input", &input}});
  check_defined(input, "kthvalue");
  dim = detail::wrap_dim(dim, input.dim());
  const Tensor x1 = as_1d(input);
  EMBER_CHECK(k >= 1 && k <= x1.size(dim), "kthvalue(): selected number k out of range for dimension ", dim);
  Tensor values, indices;
  {
    NoGradGuard no_grad;
    std::tie(values, indices) = topk_untracked(x1, k, dim, /*largest=*/false);
    values = values.narrow(dim, k - 1, 1).contiguous();
    indices = indices.narrow(dim, k - 1, 1).contiguous();
  }
  return finish_reduction(values, indices, x1, dim, keepdim, input.dim() == 0, "KthvalueBackward0");
}

Tensor median(const Tensor& input) { return full_median(input, false, "median", "MedianBackward0"); }
std::tuple<Tensor, Tensor> median(const Tensor& input, int64_t dim, bool keepdim) {
  return dim_median(input, dim, keepdim, false, "median", "MedianBackward1");
}
Tensor nanmedian(const Tensor& input) { return full_median(input, true, "nanmedian", "NanmedianBackward0"); }
std::tuple<Tensor, Tensor> nanmedian(const Tensor& input, int64_t dim, bool keepdim) {
  return dim_median(input, dim, keepdim, true, "nanmedian", "NanmedianBackward1");
}

Tensor searchsorted(const Tensor& sorted_sequence, const Tensor& values, bool out_int32, bool right,
                    std::optional<std::string_view> side, const Tensor& sorter) {
  detail::OpContext context("searchsorted", {{"sorted_sequence", &sorted_sequence}, {"input", &values}});
  check_defined(sorted_sequence, "searchsorted");
  check_defined(values, "searchsorted");
  if (side) {
    EMBER_CHECK(*side == "left" || *side == "right",
                "torch.searchsorted(): side can only be 'left' or 'right' but got ", *side);
    EMBER_CHECK(!(*side == "left" && right),
                "torch.searchsorted(): side and right can't be set to opposites, got side of left while right was "
                "True");
    right = *side == "right";
  }
  EMBER_CHECK(sorted_sequence.device() == values.device(),
              "torch.searchsorted(): boundaries and input value tensors should be on the same device, but got "
              "boundaries on ",
              sorted_sequence.device().str(), " and input values on ", values.device().str());
  const bool shared = sorted_sequence.dim() == 1;
  bool leading_match = !shared && sorted_sequence.dim() == values.dim() && values.dim() > 0;
  for (int64_t d = 0; leading_match && d + 1 < values.dim(); ++d) {
    leading_match = sorted_sequence.size(d) == values.size(d);
  }
  EMBER_CHECK(shared || leading_match,
              "torch.searchsorted(): boundaries tensor should be 1 dimension or the first N-1 dimensions of boundaries "
              "tensor and input value tensor must match, but we got boundaries tensor ",
              detail::shape_str(sorted_sequence.sizes()), " and input value tensor ",
              detail::shape_str(values.sizes()));
  if (sorter.defined()) check_sorter(sorted_sequence, sorter);
  const Dtype common = result_type(sorted_sequence, values);
  const Tensor seq = sorted_sequence.to(common).contiguous();
  const Tensor vals = values.to(common).contiguous();
  Tensor out = make_tensor(values.sizes(), out_int32 ? kInt32 : kInt64, values.device());
  TensorView sorter_view;
  sorter_view.data = nullptr;
  const Tensor perm = sorter.defined() ? sorter.contiguous() : Tensor();
  if (perm.defined()) sorter_view = view_of(perm);
  backend_for(values.device()).searchsorted(view_of(seq), view_of(vals), right, sorter_view, view_of(out));
  return out;
}

Tensor searchsorted(const Tensor& sorted_sequence, const Scalar& value, bool out_int32, bool right,
                    std::optional<std::string_view> side, const Tensor& sorter) {
  check_defined(sorted_sequence, "searchsorted");
  EMBER_CHECK(sorted_sequence.dim() == 1,
              "torch.searchsorted(): input value can be a scalar only when boundaries tensor dimension is 1, but we "
              "got boundaries tensor dim(",
              sorted_sequence.dim(), ") and input value's dim(0) numel(1)");
  const Tensor v = full({}, value, TensorOptions(result_type(sorted_sequence, value)).device(sorted_sequence.device()));
  return searchsorted(sorted_sequence, v, out_int32, right, side, sorter);
}

Tensor bucketize(const Tensor& input, const Tensor& boundaries, bool out_int32, bool right) {
  check_defined(boundaries, "bucketize");
  EMBER_CHECK(boundaries.dim() == 1, "boundaries tensor must be 1 dimension, but got dim(", boundaries.dim(), ")");
  return searchsorted(boundaries, input, out_int32, right);
}

std::tuple<Tensor, Tensor> Tensor::sort(int64_t dim, bool descending, bool stable) const {
  return ember::sort(*this, dim, descending, stable);
}
Tensor Tensor::argsort(int64_t dim, bool descending, bool stable) const {
  return ember::argsort(*this, dim, descending, stable);
}
std::tuple<Tensor, Tensor> Tensor::topk(int64_t k, int64_t dim, bool largest, bool sorted) const {
  return ember::topk(*this, k, dim, largest, sorted);
}
std::tuple<Tensor, Tensor> Tensor::kthvalue(int64_t k, int64_t dim, bool keepdim) const {
  return ember::kthvalue(*this, k, dim, keepdim);
}
Tensor Tensor::median() const { return ember::median(*this); }
std::tuple<Tensor, Tensor> Tensor::median(int64_t dim, bool keepdim) const {
  return ember::median(*this, dim, keepdim);
}

}  // namespace ember
