#pragma once
/// 3-D pooling: torch.nn.functional's max_pool3d (and max_pool3d_with_indices), avg_pool3d,
/// adaptive_avg_pool3d, adaptive_max_pool3d (and its _with_indices form) and lp_pool3d, and the
/// layers MaxPool3d, AvgPool3d, AdaptiveAvgPool3d, AdaptiveMaxPool3d and LPPool3d, with PyTorch's
/// arguments, defaults and messages. Inputs are [N, C, D, H, W] or unbatched [C, D, H, W]; sizes
/// are one value for all three dimensions or a [depth, height, width] triple.
///
/// Each is composed of the 2-D pooling ops, because a box window is separable: the max (or sum)
/// over a kD x kH x kW window is the max (sum) over kD planes of the max (sum) over each plane's
/// kH x kW window. So the height and width are pooled first, over [N, C * D, H, W], and then the
/// depth, over [N, C, D, oH * oW] with a kD x 1 window. The divisors of average pooling are
/// products of one count per dimension (padding included or not, ceil_mode windows clipped), so
/// they split the same way. Ties and NaNs come out as PyTorch's kernel takes them (the first
/// maximum in depth, row, column order; a NaN wins), and the indices are PyTorch's flat
/// d * H * W + h * W + w within each [D, H, W] volume. Autograd comes with the 2-D ops.
#include <cstdint>
#include <initializer_list>
#include <optional>
#include <string>
#include <tuple>
#include <utility>
#include <vector>

#include "ember/nn/module.h"
#include "ember/nn/sizes.h"
#include "ember/tensor.h"

namespace ember::nn {

/// An optional ExpandingSize for options structs: unset by default (PyTorch's None), or one value
/// or D values, so that `{.stride = 2}` and `{.stride = {2, 1, 1}}` both read naturally (a
/// std::optional would not take the braced list).
template <size_t D>
class OptionalSize {
 public:
  OptionalSize() = default;
  OptionalSize(std::nullopt_t) {}                                                         // NOLINT
  OptionalSize(int64_t all) : value_(ExpandingSize<D>(all)) {}                            // NOLINT
  OptionalSize(std::initializer_list<int64_t> list) : value_(ExpandingSize<D>(list)) {}   // NOLINT
  OptionalSize(const std::vector<int64_t>& values) : value_(ExpandingSize<D>(values)) {}  // NOLINT
  OptionalSize(ExpandingSize<D> values) : value_(std::move(values)) {}                    // NOLINT

  bool has_value() const { return value_.has_value(); }
  explicit operator bool() const { return value_.has_value(); }
  const ExpandingSize<D>& operator*() const { return *value_; }
  const ExpandingSize<D>* operator->() const { return &*value_; }

 private:
  std::optional<ExpandingSize<D>> value_;
};

namespace functional {

/// The largest element of each window; `stride` empty means kernel_size. Padding acts as -inf
/// and may be at most half the kernel size; with ceil_mode the last window may hang over the end
/// as long as it starts inside the input or the left padding. Integer inputs are pooled too.
Tensor max_pool3d(const Tensor& input, IntList kernel_size, IntList stride = {}, IntList padding = {0},
                  IntList dilation = {1}, bool ceil_mode = false);
/// max_pool3d(return_indices=True): also the int64 flat index d*H*W + h*W + w of each maximum.
std::tuple<Tensor, Tensor> max_pool3d_with_indices(const Tensor& input, IntList kernel_size, IntList stride = {},
                                                   IntList padding = {0}, IntList dilation = {1},
                                                   bool ceil_mode = false);
/// The mean of each window. count_include_pad counts padded zeros in the divisor;
/// divisor_override (non-zero) replaces the divisor altogether.
Tensor avg_pool3d(const Tensor& input, IntList kernel_size, IntList stride = {}, IntList padding = {0},
                  bool ceil_mode = false, bool count_include_pad = true,
                  std::optional<int64_t> divisor_override = std::nullopt);
/// Averages over windows chosen so that the output is output_size ([d, h, w], or one value for
/// all three): window i of a dimension spans [floor(i*in/out), ceil((i+1)*in/out)).
Tensor adaptive_avg_pool3d(const Tensor& input, IntList output_size);
/// The largest element of each adaptive window (as adaptive_avg_pool3d's).
Tensor adaptive_max_pool3d(const Tensor& input, IntList output_size);
/// Also the int64 flat index d*H*W + h*W + w of each maximum.
std::tuple<Tensor, Tensor> adaptive_max_pool3d_with_indices(const Tensor& input, IntList output_size);
/// Power-average pooling, as torch.nn.functional.lp_pool3d composes it: the average pool of x^p
/// (no padding), then (sign(s) * relu(|s|) * kD*kH*kW)^(1/p); ±inf norms are max pools of ±|x|.
Tensor lp_pool3d(const Tensor& input, double norm_type, IntList kernel_size, IntList stride = {},
                 bool ceil_mode = false);

}  // namespace functional

/// MaxPool3d's optional arguments (PyTorch's names and defaults; no stride means kernel_size).
struct MaxPool3dOptions {
  detail::DesignatedOnly designated_only = {};
  OptionalSize<3> stride = {};
  ExpandingSize<3> padding = 0;
  ExpandingSize<3> dilation = 1;
  bool return_indices = false;
  bool ceil_mode = false;
};

/// torch.nn.MaxPool3d. With return_indices, call forward_with_indices, which returns
/// (output, indices) as PyTorch's forward then does; forward refuses such a layer rather than
/// drop the indices.
///   nn::MaxPool3d(2);                                       // 2x2x2, stride 2
///   nn::MaxPool3d(3, {.stride = 2, .padding = 1, .return_indices = true});
class MaxPool3d : public Module {
 public:
  explicit MaxPool3d(ExpandingSize<3> kernel_size, MaxPool3dOptions options = {});
  std::string name() const override { return "MaxPool3d"; }
  Tensor forward(const Tensor& input) override;
  std::tuple<Tensor, Tensor> forward_with_indices(const Tensor& input);

  ExpandingSize<3> kernel_size, stride, padding, dilation;  // stride is kernel_size when not given
  bool return_indices, ceil_mode;
};

/// AvgPool3d's optional arguments (PyTorch's names and defaults; no stride means kernel_size).
struct AvgPool3dOptions {
  detail::DesignatedOnly designated_only = {};
  OptionalSize<3> stride = {};
  ExpandingSize<3> padding = 0;
  bool ceil_mode = false;
  bool count_include_pad = true;
  std::optional<int64_t> divisor_override = std::nullopt;
};

/// torch.nn.AvgPool3d.
///   nn::AvgPool3d(3, {.stride = 2, .padding = 1, .count_include_pad = false});
class AvgPool3d : public Module {
 public:
  explicit AvgPool3d(ExpandingSize<3> kernel_size, AvgPool3dOptions options = {});
  std::string name() const override { return "AvgPool3d"; }
  Tensor forward(const Tensor& input) override;

  ExpandingSize<3> kernel_size, stride, padding;  // stride is kernel_size when not given
  bool ceil_mode, count_include_pad;
  std::optional<int64_t> divisor_override;
};

/// torch.nn.AdaptiveAvgPool3d(output_size).
class AdaptiveAvgPool3d : public Module {
 public:
  explicit AdaptiveAvgPool3d(ExpandingSize<3> output_size);
  std::string name() const override { return "AdaptiveAvgPool3d"; }
  Tensor forward(const Tensor& input) override;
  ExpandingSize<3> output_size;
};

/// AdaptiveMaxPool3d's optional argument.
struct AdaptiveMaxPool3dOptions {
  detail::DesignatedOnly designated_only = {};
  bool return_indices = false;
};

/// torch.nn.AdaptiveMaxPool3d(output_size, return_indices=False); with return_indices, call
/// forward_with_indices (as MaxPool3d).
class AdaptiveMaxPool3d : public Module {
 public:
  explicit AdaptiveMaxPool3d(ExpandingSize<3> output_size, AdaptiveMaxPool3dOptions options = {});
  std::string name() const override { return "AdaptiveMaxPool3d"; }
  Tensor forward(const Tensor& input) override;
  std::tuple<Tensor, Tensor> forward_with_indices(const Tensor& input);
  ExpandingSize<3> output_size;
  bool return_indices;
};

/// LPPool3d's optional arguments (no stride means kernel_size).
struct LPPool3dOptions {
  detail::DesignatedOnly designated_only = {};
  OptionalSize<3> stride = {};
  bool ceil_mode = false;
};

/// torch.nn.LPPool3d(norm_type, kernel_size, stride=None, ceil_mode=False).
class LPPool3d : public Module {
 public:
  LPPool3d(double norm_type, ExpandingSize<3> kernel_size, LPPool3dOptions options = {});
  std::string name() const override { return "LPPool3d"; }
  Tensor forward(const Tensor& input) override;
  double norm_type;
  ExpandingSize<3> kernel_size;
  OptionalSize<3> stride = {};  // PyTorch keeps None here
  bool ceil_mode;
};

}  // namespace ember::nn
