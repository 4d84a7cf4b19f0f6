#pragma once
/// 2-D pooling: torch.nn.functional.max_pool2d / avg_pool2d / adaptive_avg_pool2d and the
/// MaxPool2d, AvgPool2d and AdaptiveAvgPool2d layers. Inputs are [N, C, H, W] or unbatched
/// [C, H, W]; window sizes are one value (used for both dimensions) or a [height, width] pair.
/// 1-D pooling: max_pool1d / avg_pool1d / adaptive_avg_pool1d and MaxPool1d, AvgPool1d and
/// AdaptiveAvgPool1d, over [N, C, L] or [C, L] with windows of one value, computed as PyTorch
/// computes them: the 2-D pooling of a height of one.
#include <cstdint>
#include <optional>
#include <string>
#include <tuple>
#include <utility>
#include <vector>

#include "ember/nn/module.h"
#include "ember/tensor.h"

namespace ember::nn {

namespace functional {

/// The largest element of each window; `stride` empty means kernel_size. Padding acts as -inf
/// and may be at most half the effective kernel size (dilation*(kernel-1)+1); with ceil_mode the
/// last window may hang over the end as long as it starts inside the input or the left padding.
/// A NaN in a window is that window's result.
Tensor max_pool2d(const Tensor& input, IntList kernel_size, IntList stride = {}, IntList padding = {0},
                  IntList dilation = {1}, bool ceil_mode = false);
/// As max_pool2d, also returning the int64 flat index h*W+w of each maximum within its plane.
std::tuple<Tensor, Tensor> max_pool2d_with_indices(const Tensor& input, IntList kernel_size, IntList stride = {},
                                                   IntList padding = {0}, IntList dilation = {1},
                                                   bool ceil_mode = false);
/// The mean of each window. count_include_pad counts padded zeros in the divisor;
/// divisor_override (non-zero) replaces the divisor altogether.
Tensor avg_pool2d(const Tensor& input, IntList kernel_size, IntList stride = {}, IntList padding = {0},
                  bool ceil_mode = false, bool count_include_pad = true,
                  std::optional<int64_t> divisor_override = std::nullopt);
/// Averages over windows chosen so that the output is output_size ([h, w], or one value for
/// both): window i spans [floor(i*in/out), ceil((i+1)*in/out)).
Tensor adaptive_avg_pool2d(const Tensor& input, IntList output_size);

/// The largest element of each window along the last dimension, as max_pool2d does in 2-D;
/// kernel_size, stride (empty: kernel_size), padding and dilation are one value each.
Tensor max_pool1d(const Tensor& input, IntList kernel_size, IntList stride = {}, IntList padding = {0},
                  IntList dilation = {1}, bool ceil_mode = false);
/// torch.nn.functional.max_pool1d(return_indices=True): also the int64 position of each maximum
/// along the last dimension.
std::tuple<Tensor, Tensor> max_pool1d_with_indices(const Tensor& input, IntList kernel_size, IntList stride = {},
                                                   IntList padding = {0}, IntList dilation = {1},
                                                   bool ceil_mode = false);
/// The mean of each window along the last dimension (see avg_pool2d).
Tensor avg_pool1d(const Tensor& input, IntList kernel_size, IntList stride = {}, IntList padding = {0},
                  bool ceil_mode = false, bool count_include_pad = true);
/// Averages over output_size (one value) windows: window i spans [floor(i*L/out), ceil((i+1)*L/out)).
Tensor adaptive_avg_pool1d(const Tensor& input, IntList output_size);

}  // namespace functional

/// torch.nn.MaxPool2d (without return_indices: use functional::max_pool2d_with_indices).
class MaxPool2d : public Module {
 public:
  explicit MaxPool2d(std::vector<int64_t> kernel_size, std::vector<int64_t> stride = {},
                     std::vector<int64_t> padding = {0}, std::vector<int64_t> dilation = {1}, bool ceil_mode = false);
  std::string name() const override { return "MaxPool2d"; }
  Tensor forward(const Tensor& input) override;
  std::vector<int64_t> kernel_size, stride, padding, dilation;
  bool ceil_mode;
};

class AvgPool2d : public Module {
 public:
  explicit AvgPool2d(std::vector<int64_t> kernel_size, std::vector<int64_t> stride = {},
                     std::vector<int64_t> padding = {0}, bool ceil_mode = false, bool count_include_pad = true,
                     std::optional<int64_t> divisor_override = std::nullopt);
  std::string name() const override { return "AvgPool2d"; }
  Tensor forward(const Tensor& input) override;
  std::vector<int64_t> kernel_size, stride, padding;
  bool ceil_mode, count_include_pad;
  std::optional<int64_t> divisor_override;
};

class AdaptiveAvgPool2d : public Module {
 public:
  explicit AdaptiveAvgPool2d(std::vector<int64_t> output_size) : output_size(std::move(output_size)) {}
  std::string name() const override { return "AdaptiveAvgPool2d"; }
  Tensor forward(const Tensor& input) override { return functional::adaptive_avg_pool2d(input, output_size); }
  std::vector<int64_t> output_size;
};

/// torch.nn.MaxPool1d, with PyTorch's arguments in its order. With return_indices, call
/// forward_with_indices, which returns (output, indices) as PyTorch's forward then does; forward
/// itself refuses such a layer rather than drop the indices.
class MaxPool1d : public Module {
 public:
  explicit MaxPool1d(std::vector<int64_t> kernel_size, std::vector<int64_t> stride = {},
                     std::vector<int64_t> padding = {0}, std::vector<int64_t> dilation = {1},
                     bool return_indices = false, bool ceil_mode = false);
  std::string name() const override { return "MaxPool1d"; }
  Tensor forward(const Tensor& input) override;
  std::tuple<Tensor, Tensor> forward_with_indices(const Tensor& input);
  std::vector<int64_t> kernel_size, stride, padding, dilation;
  bool return_indices, ceil_mode;
};

/// torch.nn.AvgPool1d; an empty stride means kernel_size.
class AvgPool1d : public Module {
 public:
  explicit AvgPool1d(std::vector<int64_t> kernel_size, std::vector<int64_t> stride = {},
                     std::vector<int64_t> padding = {0}, bool ceil_mode = false, bool count_include_pad = true);
  std::string name() const override { return "AvgPool1d"; }
  Tensor forward(const Tensor& input) override;
  std::vector<int64_t> kernel_size, stride, padding;
  bool ceil_mode, count_include_pad;
};

class AdaptiveAvgPool1d : public Module {
 public:
  explicit AdaptiveAvgPool1d(std::vector<int64_t> output_size) : output_size(std::move(output_size)) {}
  std::string name() const override { return "AdaptiveAvgPool1d"; }
  Tensor forward(const Tensor& input) override { return functional::adaptive_avg_pool1d(input, output_size); }
  std::vector<int64_t> output_size;
};

}  // namespace ember::nn
