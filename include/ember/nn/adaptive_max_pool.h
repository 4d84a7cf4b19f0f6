#pragma once
/// Adaptive max pooling: torch.nn.functional.adaptive_max_pool1d / adaptive_max_pool2d (and their
/// _with_indices forms) and the AdaptiveMaxPool1d / AdaptiveMaxPool2d layers. Output position i
/// of a dimension of size `in` pooled to `out` covers [floor(i*in/out), ceil((i+1)*in/out)).
/// Composed of ember's ops: every window's elements are gathered with one index_select (windows
/// shorter than the longest repeat their first element) and reduced with one max, whose gradient
/// goes to the first maximum in the window's row-major order, as PyTorch's kernel picks it.
/// Inputs are [N, C, H, W] / [C, H, W] (2-D) and [N, C, L] / [C, L] (1-D).
#include <cstdint>
#include <string>
#include <tuple>
#include <vector>

#include "ember/nn/module.h"
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

/// torch.nn.AdaptiveMaxPool2d(output_size, return_indices=False). With return_indices, call
/// forward_with_indices (forward refuses such a layer rather than drop the indices), as MaxPool1d.
class AdaptiveMaxPool2d : public Module {
 public:
  explicit AdaptiveMaxPool2d(std::vector<int64_t> output_size, bool return_indices = false);
  std::string name() const override { return "AdaptiveMaxPool2d"; }
  Tensor forward(const Tensor& input) override;
  std::tuple<Tensor, Tensor> forward_with_indices(const Tensor& input);
  std::vector<int64_t> output_size;
  bool return_indices;
};

/// torch.nn.AdaptiveMaxPool1d(output_size, return_indices=False); see AdaptiveMaxPool2d.
class AdaptiveMaxPool1d : public Module {
 public:
  explicit AdaptiveMaxPool1d(std::vector<int64_t> output_size, bool return_indices = false);
  std::string name() const override { return "AdaptiveMaxPool1d"; }
  Tensor forward(const Tensor& input) override;
  std::tuple<Tensor, Tensor> forward_with_indices(const Tensor& input);
  std::vector<int64_t> output_size;
  bool return_indices;
};

}  // namespace ember::nn
