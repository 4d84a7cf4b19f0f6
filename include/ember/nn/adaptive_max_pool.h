#pragma once
/// Adaptive max pooling: torch.nn.functional.adaptive_max_pool1d / adaptive_max_pool2d (and their
/// _with_indices forms) and the AdaptiveMaxPool1d / AdaptiveMaxPool2d layers. Output position i
/// of a dimension of size `in` pooled to `out` covers [floor(i*in/out), ceil((i+1)*in/out)).
/// Composed of ember's ops: every window's elements are gathered with one index_select (windows
/// shorter than the longest repeat their first element) and reduced with one max, whose gradient
/// goes to the first maximum in the window's row-major order, as PyTorch's kernel picks it.
/// Inputs are [N, C, H, W] / [C, H, W] (2-D) and [N, C, L] / [C, L] (1-D).
#include <cstdint>
#include <initializer_list>
#include <string>
#include <tuple>
#include <utility>
#include <vector>

#include "ember/nn/module.h"
#include "ember/nn/modules.h"
#include "ember/nn/sizes.h"
#include "ember/tensor.h"

namespace ember::nn {

namespace functional {

/// output_size: [h, w], or one value for both.
Tensor adaptive_max_pool2d(const Tensor& input, IntList output_size);
/// Also the int64 flat index h*W+w of each maximum within its plane.
std::tuple<Tensor, Tensor> adaptive_max_pool2d_with_indices(const Tensor& input, IntList output_size);
/// output_size: one value.
Tensor adaptive_max_pool1d(const Tensor& input, IntList output_size);
/// Also the int64 position of each maximum along L.
std::tuple<Tensor, Tensor> adaptive_max_pool1d_with_indices(const Tensor& input, IntList output_size);

}  // namespace functional

/// The options of nn.AdaptiveMaxPool1d/2d after output_size.
struct AdaptiveMaxPoolOptions {
  detail::DesignatedOnly designated_only = {};
  bool return_indices = false;
};
using AdaptiveMaxPool1dOptions = AdaptiveMaxPoolOptions;
using AdaptiveMaxPool2dOptions = AdaptiveMaxPoolOptions;

/// torch.nn.AdaptiveMaxPool2d(output_size, return_indices=False). With return_indices, call
/// forward_with_indices (forward refuses such a layer rather than drop the indices), as MaxPool1d.
/// output_size is one value or two; it is stored as two.
///   nn::AdaptiveMaxPool2d(7);                    nn::AdaptiveMaxPool2d({7, 5}, {.return_indices = true});
class AdaptiveMaxPool2d : public Module {
 public:
  explicit AdaptiveMaxPool2d(ExpandingSize<2> output_size, bool return_indices = false);
  AdaptiveMaxPool2d(ExpandingSize<2> output_size, AdaptiveMaxPoolOptions options)
      : AdaptiveMaxPool2d(std::move(output_size), options.return_indices) {}
  /// One braced list alone is the output size (`{7, 5}`), never a list of constructor arguments.
  explicit AdaptiveMaxPool2d(std::initializer_list<int64_t> output_size)
      : AdaptiveMaxPool2d(ExpandingSize<2>(output_size)) {}
  std::string name() const override { return "AdaptiveMaxPool2d"; }
  Tensor forward(const Tensor& input) override;
  std::tuple<Tensor, Tensor> forward_with_indices(const Tensor& input);
  std::vector<int64_t> output_size;
  bool return_indices;
};

/// torch.nn.AdaptiveMaxPool1d(output_size, return_indices=False); see AdaptiveMaxPool2d.
class AdaptiveMaxPool1d : public Module {
 public:
  explicit AdaptiveMaxPool1d(ExpandingSize<1> output_size, bool return_indices = false);
  AdaptiveMaxPool1d(ExpandingSize<1> output_size, AdaptiveMaxPoolOptions options)
      : AdaptiveMaxPool1d(std::move(output_size), options.return_indices) {}
  explicit AdaptiveMaxPool1d(std::initializer_list<int64_t> output_size)
      : AdaptiveMaxPool1d(ExpandingSize<1>(output_size)) {}
  std::string name() const override { return "AdaptiveMaxPool1d"; }
  Tensor forward(const Tensor& input) override;
  std::tuple<Tensor, Tensor> forward_with_indices(const Tensor& input);
  std::vector<int64_t> output_size;
  bool return_indices;
};

}  // namespace ember::nn
