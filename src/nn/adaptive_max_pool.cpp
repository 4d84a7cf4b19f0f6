// AdaptiveMaxPool1d/2d and their functionals (include/ember/nn/adaptive_max_pool.h): ATen's checks
// and messages, then a table of every window's flat positions built on the host, one index_select
// of the windows' elements and one max over each window.
#include "ember/nn/adaptive_max_pool.h"

#include <algorithm>
#include <utility>
#include <vector>

#include "core/check.h"
#include "core/tensor_internal.h"
#include "ember/factories.h"
#include "ember/ops.h"

namespace ember::nn {

namespace functional {

namespace {

int64_t window_start(int64_t i, int64_t in, int64_t out) { return (i * in) / out; }
int64_t window_end(int64_t i, int64_t in, int64_t out) { return ((i + 1) * in + out - 1) / out; }

/// The pooling of a 4-D input [N, C, H, W] to [N, C, oh, ow], with the flat indices.
std::tuple<Tensor, Tensor> pool_planes(const Tensor& x, int64_t oh, int64_t ow) {
  const int64_t n = x.size(0), c = x.size(1), h = x.size(2), w = x.size(3);
  const Tensor flat = x.reshape({n, c, h * w});
  if (oh == 0 || ow == 0) {
    return {flat.narrow(2, 0, 0).reshape({n, c, oh, ow}), zeros({n, c, oh, ow}, x.options().dtype(kInt64))};
  }
  int64_t kh = 0, kw = 0;
  for (int64_t i = 0; i < oh; ++i) kh = std::max(kh, window_end(i, h, oh) - window_start(i, h, oh));
  for (int64_t j = 0; j < ow; ++j) kw = std::max(kw, window_end(j, w, ow) - window_start(j, w, ow));
  std::vector<int64_t> table;
  table.reserve(static_cast<size_t>(oh * ow * kh * kw));
  for (int64_t i = 0; i < oh; ++i) {
    const int64_t h0 = window_start(i, h, oh), h1 = window_end(i, h, oh);
    for (int64_t j = 0; j < ow; ++j) {
      const int64_t w0 = window_start(j, w, ow), w1 = window_end(j, w, ow);
      for (int64_t a = 0; a < kh; ++a) {
        for (int64_t b = 0; b < kw; ++b) {
          // Slots past a short window repeat its first element, which comes before any tie.
          const bool inside = h0 + a < h1 && w0 + b < w1;
          table.push_back(inside ? (h0 + a) * w + w0 + b : h0 * w + w0);
        }
      }
    }
  }
  const TensorOptions long_options = TensorOptions().dtype(kInt64);
  const Tensor positions = tensor(table, long_options).to(x.device());
  const Tensor windows = ember::index_select(flat, 2, positions).view({n, c, oh, ow, kh * kw});
  auto [values, slot] = ember::max(windows, -1);
  const Tensor base = (arange(oh * ow, long_options) * (kh * kw)).to(x.device()).view({oh, ow});
  const Tensor indices = ember::index_select(positions, 0, (slot + base).reshape({-1})).view({n, c, oh, ow});
  return {values, indices};
}

std::tuple<Tensor, Tensor> adaptive_max_pool2d_impl(const Tensor& input, IntList output_size) {
  const int64_t ndim = input.dim();
  EMBER_CHECK(ndim == 3 || ndim == 4,
              "adaptive_max_pool2d(): Expected 3D or 4D tensor, but got: ", ember::detail::shape_str(input.sizes()));
  for (int64_t d = 1; d < ndim; ++d) {
    EMBER_CHECK(input.size(d) > 0,
                "adaptive_max_pool2d(): Expected input to have non-zero size for non-batch dimensions, but input has "
                "sizes ",
                ember::detail::shape_str(input.sizes()), " with dimension ", d, " being empty");
  }
  EMBER_CHECK(output_size.size() == 1 || output_size.size() == 2,
              "adaptive_max_pool2d(): internal error: output_size.size() must be 2");
  const int64_t oh = output_size[0], ow = output_size.size() == 2 ? output_size[1] : output_size[0];
  std::vector<int64_t> out_sizes(input.sizes().begin(), input.sizes().end() - 2);
  out_sizes.insert(out_sizes.end(), {oh, ow});
  EMBER_CHECK(oh >= 0 && ow >= 0, "Trying to create tensor with negative dimension ", oh < 0 ? oh : ow, ": ",
              ember::detail::shape_str(out_sizes));
  EMBER_CHECK(input.is_floating_point(), "\"adaptive_max_pool2d\" not implemented for '",
              scalar_type_name(input.dtype()), "'");
  const bool batched = ndim == 4;
  auto [values, indices] = pool_planes(batched ? input : input.unsqueeze(0), oh, ow);
  if (!batched) return {values.squeeze(0), indices.squeeze(0)};
  return {values, indices};
}

std::tuple<Tensor, Tensor> adaptive_max_pool1d_impl(const Tensor& input, IntList output_size) {
  const int64_t ndim = input.dim();
  EMBER_CHECK(ndim >= 2 && ndim < 4, "Expected 2 to 3 dimensions, but got ", ndim,
              "-dimensional tensor for argument #1 'self' (while checking arguments for adaptive_max_pool1d)");
  EMBER_CHECK(output_size.size() == 1, "adaptive_max_pool1d() argument 'output_size' should contain one int (got ",
              output_size.size(), ")");
  for (int64_t d = 1; d < ndim; ++d) {
    EMBER_CHECK(input.size(d) > 0,
                "adaptive_max_pool1d(): Expected input to have non-zero size for non-batch dimensions, but input has "
                "sizes ",
                ember::detail::shape_str(input.sizes()), " with dimension ", d, " being empty");
  }
  auto [values, indices] = adaptive_max_pool2d_impl(input.unsqueeze(-2), {1, output_size[0]});
  return {values.squeeze(-2), indices.squeeze(-2)};
}

}  // namespace

Tensor adaptive_max_pool2d(const Tensor& input, IntList output_size) {
  return std::get<0>(adaptive_max_pool2d_with_indices(input, output_size));
}

std::tuple<Tensor, Tensor> adaptive_max_pool2d_with_indices(const Tensor& input, IntList output_size) {
  ember::detail::OpContext context("adaptive_max_pool2d", {{"input", &input}});
  ember::detail::check_defined(input, "adaptive_max_pool2d");
  return adaptive_max_pool2d_impl(input, output_size);
}

Tensor adaptive_max_pool1d(const Tensor& input, IntList output_size) {
  return std::get<0>(adaptive_max_pool1d_with_indices(input, output_size));
}

std::tuple<Tensor, Tensor> adaptive_max_pool1d_with_indices(const Tensor& input, IntList output_size) {
  ember::detail::OpContext context("adaptive_max_pool1d", {{"input", &input}});
  ember::detail::check_defined(input, "adaptive_max_pool1d");
  return adaptive_max_pool1d_impl(input, output_size);
}

}  // namespace functional

AdaptiveMaxPool2d::AdaptiveMaxPool2d(ExpandingSize<2> output_size, bool return_indices)
    : output_size(output_size.vec()), return_indices(return_indices) {
  // The functional's message, given when the layer is built rather than when it runs.
  EMBER_CHECK(output_size.valid(), "adaptive_max_pool2d(): internal error: output_size.size() must be 2");
}

Tensor AdaptiveMaxPool2d::forward(const Tensor& input) {
  EMBER_CHECK(!return_indices,
              "AdaptiveMaxPool2d(return_indices=true) returns (output, indices): call forward_with_indices instead of "
              "forward");
  return functional::adaptive_max_pool2d(input, output_size);
}

std::tuple<Tensor, Tensor> AdaptiveMaxPool2d::forward_with_indices(const Tensor& input) {
  return functional::adaptive_max_pool2d_with_indices(input, output_size);
}

AdaptiveMaxPool1d::AdaptiveMaxPool1d(ExpandingSize<1> output_size, bool return_indices)
    : output_size(output_size.vec()), return_indices(return_indices) {
  EMBER_CHECK(output_size.valid(), "adaptive_max_pool1d() argument 'output_size' should contain one int (got ",
              output_size.given(), ")");
}

Tensor AdaptiveMaxPool1d::forward(const Tensor& input) {
  EMBER_CHECK(!return_indices,
              "AdaptiveMaxPool1d(return_indices=true) returns (output, indices): call forward_with_indices instead of "
              "forward");
  return functional::adaptive_max_pool1d(input, output_size);
}

std::tuple<Tensor, Tensor> AdaptiveMaxPool1d::forward_with_indices(const Tensor& input) {
  return functional::adaptive_max_pool1d_with_indices(input, output_size);
}

}  // namespace ember::nn
