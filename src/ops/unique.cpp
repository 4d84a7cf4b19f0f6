// torch.unique and torch.unique_consecutive (ember/sort.h), of the flattened input or of the
// slices along a dimension, composed of sort, comparisons, cumsum and scatters: no kernel of
// their own, so every device runs them, and the only host read is the number of groups (which
// sizes the results, as in PyTorch).
//
// Slices along a dimension are ranked lexicographically without comparing whole slices: each
// column of the [slices, elements] matrix is sorted once (one batched sort along dimension 0)
// and replaced by the dense rank of its values; then neighbouring columns are fused pairwise
// into one key (rank_left * slices + rank_right, which keeps their lexicographic order and fits
// in int64) and ranked again, halving the columns each round. After ceil(log2(elements)) rounds
// one column is left: the dense rank of each slice among the distinct slices, ascending, which
// is at once the inverse of the sorted unique.
#include <optional>
#include <tuple>
#include <vector>

#include "backend/backend.h"
#include "core/check.h"
#include "core/tensor_internal.h"
#include "ember/factories.h"
#include "ember/grad_mode.h"
#include "ember/ops.h"
#include "ember/scan.h"
#include "ember/sort.h"

namespace ember {

using detail::check_defined;
using detail::make_tensor;

namespace {

// unique and unique_consecutive of the flattened input, from the (sorted or original) order of
// its elements: `order` holds the elements, `positions` where each came from (undefined for
// unique_consecutive, where the order is the input's own). A new group starts wherever an
// element differs from the one before it (so NaNs, unequal to everything, are each their own
// group, as in PyTorch).
std::tuple<Tensor, Tensor, Tensor> group_runs(const Tensor& order, const Tensor& positions, IntList input_sizes) {
  const int64_t n = order.numel();
  const TensorOptions index_options = TensorOptions(kInt64).device(order.device());
  if (n == 0) {
    return {order.clone(), zeros(input_sizes, index_options), zeros({0}, index_options)};
  }
  const Tensor starts =
      cat({ones({1}, TensorOptions(kBool).device(order.device())), ne(order.slice(0, 1), order.slice(0, 0, n - 1))});
  const Tensor group = cumsum(starts, 0) - 1;  // int64: each element's group
  const int64_t groups = group[n - 1].item<int64_t>() + 1;
  Backend& backend = backend_for(order.device());
  Tensor values = make_tensor({groups}, order.dtype(), order.device());
  backend.scatter_reduce(ScatterReduceOp::Assign, view_of(values), 0, view_of(group), view_of(order));
  const Tensor counts = zeros({groups}, index_options).scatter_add(0, group, ones({n}, index_options));
  Tensor inverse = group;
  if (positions.defined()) {
    inverse = make_tensor({n}, kInt64, order.device());
    backend.scatter_reduce(ScatterReduceOp::Assign, view_of(inverse), 0, view_of(positions), view_of(group));
  }
  return {values, inverse.reshape(input_sizes), counts};
}

// For each column of `keys` [rows, columns], the dense rank of each value within its column
// (0 for the smallest; equal values share a rank, NaNs never do).
Tensor column_dense_ranks(const Tensor& keys) {
  const int64_t rows = keys.size(0);
  auto [sorted, positions] = sort(keys, 0);
  const Tensor starts = cat({zeros({1, keys.size(1)}, TensorOptions(kBool).device(keys.device())),
                             ne(sorted.slice(0, 1), sorted.slice(0, 0, rows - 1))});
  const Tensor ranks_in_order = cumsum(starts, 0);  // int64
  return empty_like(ranks_in_order).scatter(0, positions, ranks_in_order);
}

// The dense lexicographic rank of each row of `rows` [n, k] (k >= 1) among the distinct rows.
Tensor row_dense_ranks(const Tensor& rows) {
  const int64_t n = rows.size(0);
  Tensor ranks = column_dense_ranks(rows);
  while (ranks.size(1) > 1) {
    if (ranks.size(1) % 2 == 1) ranks = cat({ranks, zeros({n, 1}, ranks.options())}, 1);
    const Tensor pairs = ranks.view({n, ranks.size(1) / 2, 2});
    ranks = column_dense_ranks(pairs.select(2, 0) * n + pairs.select(2, 1));
  }
  return ranks.select(1, 0);
}

// The slices of `input` along `dim` as the rows of a [slices, elements] matrix, after PyTorch's
// checks; nullopt when there are no slices (the results are then empty).
std::optional<Tensor> slices_as_rows(const Tensor& input, int64_t dim) {
  EMBER_CHECK(input.dim() > 0, "Dimension specified as ", dim, " but tensor has no dimensions");
  dim = detail::wrap_dim(dim, input.dim());
  int64_t zero_sized = 0;
  for (int64_t size : input.sizes()) zero_sized += size == 0;
  if (input.size(dim) == 0) {
    EMBER_CHECK(zero_sized == 1, "Number of zero sized dimensions is more than one, so unique cannot be applied ");
    return std::nullopt;
  }
  EMBER_CHECK(zero_sized == 0, "There are 0 sized dimensions, and they aren't selected, so unique cannot be applied");
  return input.movedim({dim}, {0}).reshape({input.size(dim), -1});
}

// The results of unique along `dim` from each slice's group (`group`, dense, 0..groups-1): the
// first slice of each group, each slice's group, and the groups' sizes.
std::tuple<Tensor, Tensor, Tensor> gather_groups(const Tensor& input, int64_t dim, const Tensor& group) {
  const int64_t n = group.numel();
  const int64_t groups = group.max().item<int64_t>() + 1;
  const TensorOptions index_options = TensorOptions(kInt64).device(input.device());
  const Tensor counts = zeros({groups}, index_options).scatter_add(0, group, ones({n}, index_options));
  // Slices of one group are equal, so any of them would do; the first keeps it deterministic.
  const Tensor first = full({groups}, n, index_options)
                           .scatter_reduce(0, group, arange(n, index_options), "amin", /*include_self=*/true);
  return {index_select(input, detail::wrap_dim(dim, input.dim()), first), group, counts};
}

std::tuple<Tensor, Tensor, Tensor> empty_results(const Tensor& input) {
  const TensorOptions index_options = TensorOptions(kInt64).device(input.device());
  return {empty(input.sizes(), input.options()), zeros({0}, index_options), zeros({0}, index_options)};
}

}  // namespace

std::tuple<Tensor, Tensor, Tensor> unique(const Tensor& input, bool /*sorted*/, std::optional<int64_t> dim) {
  detail::OpContext context("unique", {{"input", &input}});
  check_defined(input, "unique");
  NoGradGuard no_grad;
  if (!dim) {
    auto [order, positions] = sort(input.reshape({-1}), 0);
    return group_runs(order, positions, input.sizes());
  }
  // Along a dimension the result is sorted whatever `sorted` says, as in PyTorch.
  const std::optional<Tensor> rows = slices_as_rows(input, *dim);
  if (!rows) return empty_results(input);
  return gather_groups(input, *dim, row_dense_ranks(*rows));
}

std::tuple<Tensor, Tensor, Tensor> unique_dim(const Tensor& input, int64_t dim, bool sorted) {
  return unique(input, sorted, dim);
}

std::tuple<Tensor, Tensor, Tensor> unique_consecutive(const Tensor& input, std::optional<int64_t> dim) {
  detail::OpContext context("unique_consecutive", {{"input", &input}});
  check_defined(input, "unique_consecutive");
  NoGradGuard no_grad;
  if (!dim) return group_runs(input.reshape({-1}).contiguous(), Tensor(), input.sizes());
  const std::optional<Tensor> rows = slices_as_rows(input, *dim);
  if (!rows) return empty_results(input);
  const int64_t n = rows->size(0);
  const Tensor differs = any(ne(rows->slice(0, 1), rows->slice(0, 0, n - 1)), {1});
  const Tensor starts = cat({zeros({1}, TensorOptions(kBool).device(input.device())), differs});
  return gather_groups(input, *dim, cumsum(starts, 0));
}

}  // namespace ember
