#pragma once
/// 2-D pooling: torch.nn.functional.max_pool2d / avg_pool2d / adaptive_avg_pool2d and the
/// MaxPool2d, AvgPool2d and AdaptiveAvgPool2d layers. Inputs are [N, C, H, W] or unbatched
/// [C, H, W]; window sizes are one value (used for both dimensions) or a [height, width] pair.
/// 1-D pooling: max_pool1d / avg_pool1d / adaptive_avg_pool1d and MaxPool1d, AvgPool1d and
/// AdaptiveAvgPool1d, over [N, C, L] or [C, L] with windows of one value, computed as PyTorch
/// computes them: the 2-D pooling of a height of one.
#include <cstdint>
#include <initializer_list>
#include <optional>
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

// Layer sizes: one number or one per dimension (ExpandingSize); a stride given as `{}` (or an
// empty list) is PyTorch's stride=None: the kernel size. A list of the wrong length is refused
// when the layer is built, with the message PyTorch's functional gives when it runs. The stored
// sizes hold one value per dimension (stride empty when omitted).
//
// Each layer takes PyTorch's optional arguments positionally or as `<Layer>Options`:
//   nn::MaxPool2d(3, 2, 1);                      nn::MaxPool2d(3, {.stride = 2, .padding = 1});
// The positional constructors are templates only so that a call GCC 12 reads as either form
// (`{.stride = 2}`, which it also offers to ExpandingSize's list constructor) picks the options.

/// The options of nn.MaxPool2d after kernel_size, PyTorch's names and defaults.
struct MaxPool2dOptions {
  detail::DesignatedOnly designated_only = {};
  ExpandingSize<2> stride = {};  // {}: kernel_size
  ExpandingSize<2> padding = 0;
  ExpandingSize<2> dilation = 1;
  /// forward refuses such a layer: call forward_with_indices, which returns (output, indices).
  bool return_indices = false;
  bool ceil_mode = false;
};

/// torch.nn.MaxPool2d. The positional form keeps ember's order (kernel_size, stride, padding,
/// dilation, ceil_mode); return_indices is an option.
class MaxPool2d : public Module {
 public:
  MaxPool2d(ExpandingSize<2> kernel_size, MaxPool2dOptions options);
  /// One braced list alone is the kernel size (`{3, 3}`), never a list of constructor arguments.
  explicit MaxPool2d(std::initializer_list<int64_t> kernel_size) : MaxPool2d(ExpandingSize<2>(kernel_size), {}) {}
  template <int = 0>
  explicit MaxPool2d(ExpandingSize<2> kernel_size, ExpandingSize<2> stride = {}, ExpandingSize<2> padding = 0,
                     ExpandingSize<2> dilation = 1, bool ceil_mode = false)
      : MaxPool2d(std::move(kernel_size), MaxPool2dOptions{.stride = std::move(stride),
                                                           .padding = std::move(padding),
                                                           .dilation = std::move(dilation),
                                                           .ceil_mode = ceil_mode}) {}
  std::string name() const override { return "MaxPool2d"; }
  Tensor forward(const Tensor& input) override;
  std::tuple<Tensor, Tensor> forward_with_indices(const Tensor& input);
  std::vector<int64_t> kernel_size, stride, padding, dilation;
  bool return_indices, ceil_mode;
};

/// The options of nn.AvgPool2d after kernel_size.
struct AvgPool2dOptions {
  detail::DesignatedOnly designated_only = {};
  ExpandingSize<2> stride = {};  // {}: kernel_size
  ExpandingSize<2> padding = 0;
  bool ceil_mode = false;
  bool count_include_pad = true;
  std::optional<int64_t> divisor_override = std::nullopt;
};

class AvgPool2d : public Module {
 public:
  AvgPool2d(ExpandingSize<2> kernel_size, AvgPool2dOptions options);
  /// One braced list alone is the kernel size (`{3, 3}`), never a list of constructor arguments.
  explicit AvgPool2d(std::initializer_list<int64_t> kernel_size) : AvgPool2d(ExpandingSize<2>(kernel_size), {}) {}
  template <int = 0>
  explicit AvgPool2d(ExpandingSize<2> kernel_size, ExpandingSize<2> stride = {}, ExpandingSize<2> padding = 0,
                     bool ceil_mode = false, bool count_include_pad = true,
                     std::optional<int64_t> divisor_override = std::nullopt)
      : AvgPool2d(std::move(kernel_size), AvgPool2dOptions{.stride = std::move(stride),
                                                           .padding = std::move(padding),
                                                           .ceil_mode = ceil_mode,
                                                           .count_include_pad = count_include_pad,
                                                           .divisor_override = divisor_override}) {}
  std::string name() const override { return "AvgPool2d"; }
  Tensor forward(const Tensor& input) override;
  std::vector<int64_t> kernel_size, stride, padding;
  bool ceil_mode, count_include_pad;
  std::optional<int64_t> divisor_override;
};

/// torch.nn.AdaptiveAvgPool2d: AdaptiveAvgPool2d(1), AdaptiveAvgPool2d({7, 7}).
class AdaptiveAvgPool2d : public Module {
 public:
  explicit AdaptiveAvgPool2d(ExpandingSize<2> output_size);
  /// One braced list alone is the output size, never a list of constructor arguments.
  explicit AdaptiveAvgPool2d(std::initializer_list<int64_t> output_size)
      : AdaptiveAvgPool2d(ExpandingSize<2>(output_size)) {}
  std::string name() const override { return "AdaptiveAvgPool2d"; }
  Tensor forward(const Tensor& input) override { return functional::adaptive_avg_pool2d(input, output_size); }
  std::vector<int64_t> output_size;
};

/// The options of nn.MaxPool1d after kernel_size.
struct MaxPool1dOptions {
  detail::DesignatedOnly designated_only = {};
  ExpandingSize<1> stride = {};  // {}: kernel_size
  ExpandingSize<1> padding = 0;
  ExpandingSize<1> dilation = 1;
  bool return_indices = false;
  bool ceil_mode = false;
};

/// torch.nn.MaxPool1d, with PyTorch's arguments in its order. With return_indices, call
/// forward_with_indices, which returns (output, indices) as PyTorch's forward then does; forward
/// itself refuses such a layer rather than drop the indices.
class MaxPool1d : public Module {
 public:
  MaxPool1d(ExpandingSize<1> kernel_size, MaxPool1dOptions options);
  /// One braced list alone is the kernel size (`{3, 3}`), never a list of constructor arguments.
  explicit MaxPool1d(std::initializer_list<int64_t> kernel_size) : MaxPool1d(ExpandingSize<1>(kernel_size), {}) {}
  template <int = 0>
  explicit MaxPool1d(ExpandingSize<1> kernel_size, ExpandingSize<1> stride = {}, ExpandingSize<1> padding = 0,
                     ExpandingSize<1> dilation = 1, bool return_indices = false, bool ceil_mode = false)
      : MaxPool1d(std::move(kernel_size), MaxPool1dOptions{.stride = std::move(stride),
                                                           .padding = std::move(padding),
                                                           .dilation = std::move(dilation),
                                                           .return_indices = return_indices,
                                                           .ceil_mode = ceil_mode}) {}
  std::string name() const override { return "MaxPool1d"; }
  Tensor forward(const Tensor& input) override;
  std::tuple<Tensor, Tensor> forward_with_indices(const Tensor& input);
  std::vector<int64_t> kernel_size, stride, padding, dilation;
  bool return_indices, ceil_mode;
};

/// The options of nn.AvgPool1d after kernel_size.
struct AvgPool1dOptions {
  detail::DesignatedOnly designated_only = {};
  ExpandingSize<1> stride = {};  // {}: kernel_size
  ExpandingSize<1> padding = 0;
  bool ceil_mode = false;
  bool count_include_pad = true;
};

/// torch.nn.AvgPool1d.
class AvgPool1d : public Module {
 public:
  AvgPool1d(ExpandingSize<1> kernel_size, AvgPool1dOptions options);
  /// One braced list alone is the kernel size (`{3, 3}`), never a list of constructor arguments.
  explicit AvgPool1d(std::initializer_list<int64_t> kernel_size) : AvgPool1d(ExpandingSize<1>(kernel_size), {}) {}
  template <int = 0>
  explicit AvgPool1d(ExpandingSize<1> kernel_size, ExpandingSize<1> stride = {}, ExpandingSize<1> padding = 0,
                     bool ceil_mode = false, bool count_include_pad = true)
      : AvgPool1d(std::move(kernel_size), AvgPool1dOptions{.stride = std::move(stride),
                                                           .padding = std::move(padding),
                                                           .ceil_mode = ceil_mode,
                                                           .count_include_pad = count_include_pad}) {}
  std::string name() const override { return "AvgPool1d"; }
  Tensor forward(const Tensor& input) override;
  std::vector<int64_t> kernel_size, stride, padding;
  bool ceil_mode, count_include_pad;
};

class AdaptiveAvgPool1d : public Module {
 public:
  explicit AdaptiveAvgPool1d(ExpandingSize<1> output_size);
  explicit AdaptiveAvgPool1d(std::initializer_list<int64_t> output_size)
      : AdaptiveAvgPool1d(ExpandingSize<1>(output_size)) {}
  std::string name() const override { return "AdaptiveAvgPool1d"; }
  Tensor forward(const Tensor& input) override { return functional::adaptive_avg_pool1d(input, output_size); }
  std::vector<int64_t> output_size;
};

}  // namespace ember::nn
