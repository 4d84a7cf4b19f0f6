#pragma once
/// Sorting and selection: torch.sort, argsort, msort, topk, kthvalue, median, nanmedian, unique,
/// unique_consecutive, searchsorted and bucketize (src/ops/sort.cpp; unique and
/// unique_consecutive in src/ops/unique.cpp), on the sort family's kernels. Differentiable where
/// PyTorch is: the values of sort, topk, kthvalue and median pass the gradient back to the
/// positions they came from.
#include <optional>
#include <string_view>
#include <tuple>

#include "ember/scalar.h"
#include "ember/tensor.h"

namespace ember {

/// The elements along `dim` in ascending (or descending) order, and their positions. NaN sorts
/// above every number; equal elements keep their order (ember's sort is always stable, which
/// stable=false permits). A 0-d tensor is its own sort.
std::tuple<Tensor, Tensor> sort(const Tensor& input, int64_t dim = -1, bool descending = false, bool stable = false);
/// The positions of sort().
Tensor argsort(const Tensor& input, int64_t dim = -1, bool descending = false, bool stable = false);
/// The values of sort() along dimension 0.
Tensor msort(const Tensor& input);

/// The k largest (or smallest) elements along `dim` and their positions, largest (smallest)
/// first. `sorted` = false permits any order; ember returns them sorted either way. Which of
/// equal elements is taken is unspecified, as in PyTorch.
std::tuple<Tensor, Tensor> topk(const Tensor& input, int64_t k, int64_t dim = -1, bool largest = true,
                                bool sorted = true);
/// The k-th smallest element (k counts from 1) along `dim` and its position.
std::tuple<Tensor, Tensor> kthvalue(const Tensor& input, int64_t k, int64_t dim = -1, bool keepdim = false);
/// The lower median of all elements (NaN if there is one); its gradient is shared evenly among
/// the elements equal to it, as PyTorch's.
Tensor median(const Tensor& input);
/// The lower median along `dim` and its position; NaN where the slice has one.
std::tuple<Tensor, Tensor> median(const Tensor& input, int64_t dim, bool keepdim = false);
/// median ignoring NaNs (NaN only where a slice is all NaN).
Tensor nanmedian(const Tensor& input);
std::tuple<Tensor, Tensor> nanmedian(const Tensor& input, int64_t dim, bool keepdim = false);

/// torch.unique(input, sorted, return_inverse=True, return_counts=True, dim) (src/ops/unique.cpp):
/// (values, inverse, counts), all three always. Not differentiable.
///  - dim unset: the distinct elements of the flattened input (ascending; `sorted` = false
///    permits any order, ember sorts anyway), for each element the position of its value among
///    them (`inverse`, input's sizes), and how often each occurs (`counts`).
///  - dim set: each slice along `dim` counts as one element; the distinct slices in
///    lexicographic order, stacked along `dim` (sorted whatever `sorted` says, as PyTorch),
///    each slice's position among them ([input.size(dim)]) and their counts. A slice holding
///    a NaN equals no other (PyTorch's order for those depends on its sort and is not matched).
/// A host read of the number of distinct values sizes the results, as in PyTorch.
std::tuple<Tensor, Tensor, Tensor> unique(const Tensor& input, bool sorted = true,
                                          std::optional<int64_t> dim = std::nullopt);
/// libtorch's torch::unique_dim: unique(input, sorted, dim).
std::tuple<Tensor, Tensor, Tensor> unique_dim(const Tensor& input, int64_t dim, bool sorted = true);
/// torch.unique_consecutive(input, return_inverse=True, return_counts=True, dim): collapses
/// runs of equal consecutive elements of the flattened input (dim unset) or of equal
/// consecutive slices along `dim`: the values, each element's (slice's) run, and the runs'
/// lengths.
std::tuple<Tensor, Tensor, Tensor> unique_consecutive(const Tensor& input, std::optional<int64_t> dim = std::nullopt);

/// For each element of `values`, the position in the ascending innermost dimension of
/// `sorted_sequence` where it would be inserted: before equal elements (right = false, or
/// side = "left") or after them. sorted_sequence is 1-D, or has values' leading dimensions.
/// `sorter` (int64, sorted_sequence's sizes) gives the ascending order of an unsorted sequence.
/// int64 positions, or int32 with out_int32.
Tensor searchsorted(const Tensor& sorted_sequence, const Tensor& values, bool out_int32 = false, bool right = false,
                    std::optional<std::string_view> side = std::nullopt, const Tensor& sorter = Tensor());
Tensor searchsorted(const Tensor& sorted_sequence, const Scalar& value, bool out_int32 = false, bool right = false,
                    std::optional<std::string_view> side = std::nullopt, const Tensor& sorter = Tensor());
/// The bucket of each element of `input` among 1-D ascending `boundaries`: searchsorted with
/// the arguments the other way round.
Tensor bucketize(const Tensor& input, const Tensor& boundaries, bool out_int32 = false, bool right = false);

}  // namespace ember
