#pragma once
/// 1-D and 2-D convolution: ember::nn::functional::conv1d and conv2d (torch.nn.functional's) and
/// the layers ember::nn::Conv1d and Conv2d (torch.nn's), with PyTorch's semantics, messages and
/// initialisation.
#include <concepts>
#include <cstdint>
#include <initializer_list>
#include <string>
#include <string_view>
#include <utility>

#include "ember/nn/module.h"
#include "ember/nn/modules.h"
#include "ember/nn/sizes.h"
#include "ember/tensor.h"

namespace ember::nn {

namespace functional {

/// Cross-correlation of input [N, C, H, W] (or unbatched [C, H, W]) with weight
/// [out_channels, C / groups, kH, kW], plus bias [out_channels] when defined. stride, padding and
/// dilation are one value for both dimensions or a [height, width] pair. The result records one
/// autograd node, ConvolutionBackward0, whose backward records itself for higher-order gradients
/// (ConvolutionBackwardBackward0). ember::conv2d (ember/ops.h) is the same op.
Tensor conv2d(const Tensor& input, const Tensor& weight, const Tensor& bias = Tensor(), IntList stride = {1},
              IntList padding = {0}, IntList dilation = {1}, int64_t groups = 1);

namespace detail {
Tensor conv2d_padding_string(const Tensor& input, const Tensor& weight, const Tensor& bias, IntList stride,
                             std::string_view padding, IntList dilation, int64_t groups);
}  // namespace detail

/// A string naming a padding mode. Overloads take it as a constrained template so that a braced
/// list such as {0}, which could also build a std::string, still picks the numeric overload.
template <typename S>
concept PaddingString = std::convertible_to<const S&, std::string_view>;

/// conv2d with padding "valid" (none) or "same" (output as large as the input; stride must be 1).
/// When "same" needs an odd total padding, the extra row/column goes at the bottom/right, as in
/// PyTorch.
template <PaddingString String>
Tensor conv2d(const Tensor& input, const Tensor& weight, const Tensor& bias, IntList stride, const String& padding,
              IntList dilation = {1}, int64_t groups = 1) {
  return detail::conv2d_padding_string(input, weight, bias, stride, std::string_view(padding), dilation, groups);
}

namespace detail {
Tensor conv1d_padding_string(const Tensor& input, const Tensor& weight, const Tensor& bias, int64_t stride,
                             std::string_view padding, int64_t dilation, int64_t groups);
}  // namespace detail

/// Cross-correlation of input [N, C, L] (or unbatched [C, L]) with weight
/// [out_channels, C / groups, k], plus bias [out_channels] when defined: conv2d over a height of
/// one, so it runs on the same kernels (oneDNN, cuDNN). Its grad_fn is the squeeze of that unit
/// height (SqueezeBackward1), whose input is conv2d's ConvolutionBackward0; PyTorch's is
/// ConvolutionBackward0 itself. The gradients are the same.
Tensor conv1d(const Tensor& input, const Tensor& weight, const Tensor& bias = Tensor(), int64_t stride = 1,
              int64_t padding = 0, int64_t dilation = 1, int64_t groups = 1);

/// conv1d with padding "valid" or "same" (stride 1; an odd total padding puts the extra element
/// at the end, as in PyTorch).
template <PaddingString String>
Tensor conv1d(const Tensor& input, const Tensor& weight, const Tensor& bias, int64_t stride, const String& padding,
              int64_t dilation = 1, int64_t groups = 1) {
  return detail::conv1d_padding_string(input, weight, bias, stride, std::string_view(padding), dilation, groups);
}

}  // namespace functional

namespace detail {
/// Throws PyTorch's message unless padding_mode is "zeros", "reflect", "replicate" or "circular".
void check_padding_mode(const std::string& padding_mode);
}  // namespace detail

/// Conv1d's padding: a number ({2} too), or the string "valid" or "same".
class Conv1dPadding {
 public:
  Conv1dPadding(int64_t size) : size_(size) {}  // NOLINT(google-explicit-constructor)
  template <functional::PaddingString String>
  Conv1dPadding(const String& mode) : mode_(std::string_view(mode)) {}  // NOLINT(google-explicit-constructor)
  int64_t size() const { return size_; }
  const std::string& mode() const { return mode_; }

 private:
  int64_t size_ = 0;
  std::string mode_;
};

/// The options of nn.Conv1d after in_channels, out_channels and kernel_size, PyTorch's defaults.
struct Conv1dOptions {
  detail::DesignatedOnly designated_only = {};
  ExpandingSize<1> stride = 1;
  Conv1dPadding padding = 0;
  ExpandingSize<1> dilation = 1;
  int64_t groups = 1;
  bool bias = true;
  /// "zeros", "reflect", "replicate" or "circular": the others pad the input with ember::pad
  /// first, as PyTorch does.
  std::string padding_mode = "zeros";
};

/// torch.nn.Conv1d: weight [out_channels, in_channels / groups, kernel_size] and bias
/// [out_channels], initialised as Conv2d's (kaiming_uniform_(a = √5), then uniform(±1/√fan_in)).
///   nn::Conv1d(16, 32, 5, 1, "same");            // kernel 5, output as long as the input
///   nn::Conv1d(16, 32, 5, {.padding = "same", .padding_mode = "reflect"});
class Conv1d : public Module {
 public:
  Conv1d(int64_t in_channels, int64_t out_channels, ExpandingSize<1> kernel_size, Conv1dOptions options);
  /// PyTorch's positional order. (A template only so that, when a call could mean either form,
  /// as GCC 12 finds for `{.stride = 2}`, the options form wins the tie.)
  template <int = 0>
  Conv1d(int64_t in_channels, int64_t out_channels, ExpandingSize<1> kernel_size, ExpandingSize<1> stride = 1,
         Conv1dPadding padding = 0, ExpandingSize<1> dilation = 1, int64_t groups = 1, bool bias = true,
         std::string padding_mode = "zeros")
      : Conv1d(in_channels, out_channels, std::move(kernel_size),
               Conv1dOptions{.stride = std::move(stride),
                             .padding = std::move(padding),
                             .dilation = std::move(dilation),
                             .groups = groups,
                             .bias = bias,
                             .padding_mode = std::move(padding_mode)}) {}
  std::string name() const override { return "Conv1d"; }
  Tensor forward(const Tensor& input) override;
  /// Redraws weight then bias from the global generator, as PyTorch's reset_parameters().
  void reset_parameters();

  int64_t in_channels, out_channels, kernel_size, stride, padding, dilation;
  std::string padding_string;  // "valid" or "same" when padding was given as a string, else empty
  int64_t groups;
  std::string padding_mode;
  Tensor weight, bias;  // bias is undefined when built without one
};

/// A [height, width] pair written as one number for both (3) or as a braced list ({3} or {3, 5}).
using Size2d = ExpandingSize<2>;

/// Conv2d's padding: a Size2d, or the string "valid" or "same".
class Conv2dPadding {
 public:
  Conv2dPadding(int64_t both) : size_(both) {}                         // NOLINT(google-explicit-constructor)
  Conv2dPadding(std::initializer_list<int64_t> list) : size_(list) {}  // NOLINT(google-explicit-constructor)
  Conv2dPadding(Size2d size) : size_(std::move(size)) {}               // NOLINT(google-explicit-constructor)
  template <functional::PaddingString String>
  Conv2dPadding(const String& mode) : size_(0), mode_(std::string_view(mode)) {}  // NOLINT(google-explicit-constructor)

  const Size2d& size() const { return size_; }
  /// "valid" or "same" when given as a string, otherwise empty.
  const std::string& mode() const { return mode_; }

 private:
  Size2d size_;
  std::string mode_;
};

/// The options of nn.Conv2d after in_channels, out_channels and kernel_size, PyTorch's defaults.
struct Conv2dOptions {
  detail::DesignatedOnly designated_only = {};
  Size2d stride = 1;
  Conv2dPadding padding = 0;
  Size2d dilation = 1;
  int64_t groups = 1;
  bool bias = true;
  /// "zeros", "reflect", "replicate" or "circular": the others pad the input with ember::pad
  /// first, as PyTorch does.
  std::string padding_mode = "zeros";
};

/// torch.nn.Conv2d. weight [out_channels, in_channels / groups, kH, kW] and bias [out_channels]
/// start as PyTorch's do: kaiming_uniform_(a = √5) for weight, then uniform(±1/√fan_in) for bias,
/// drawn in that order from ember's generator, so the same manual_seed gives PyTorch's values.
///   nn::Conv2d(1, 32, 3);                        // 3x3, stride 1, no padding
///   nn::Conv2d(32, 64, {3, 5}, 2, {1, 2});       // kernel 3x5, stride 2, padding 1 and 2
///   nn::Conv2d(16, 16, 3, 1, "same", 1, 4);      // depth 16, groups 4, output as large as input
///   nn::Conv2d(3, 64, 7, {.stride = 2, .padding = 3, .bias = false});
class Conv2d : public Module {
 public:
  Conv2d(int64_t in_channels, int64_t out_channels, Size2d kernel_size, Conv2dOptions options);
  /// PyTorch's positional order (a template for the reason Conv1d's is).
  template <int = 0>
  Conv2d(int64_t in_channels, int64_t out_channels, Size2d kernel_size, Size2d stride = 1, Conv2dPadding padding = 0,
         Size2d dilation = 1, int64_t groups = 1, bool bias = true, std::string padding_mode = "zeros")
      : Conv2d(in_channels, out_channels, std::move(kernel_size),
               Conv2dOptions{.stride = std::move(stride),
                             .padding = std::move(padding),
                             .dilation = std::move(dilation),
                             .groups = groups,
                             .bias = bias,
                             .padding_mode = std::move(padding_mode)}) {}
  std::string name() const override { return "Conv2d"; }
  Tensor forward(const Tensor& input) override;
  /// Redraws weight then bias from the global generator, as PyTorch's reset_parameters().
  void reset_parameters();

  int64_t in_channels, out_channels;
  int64_t kernel_size[2], stride[2], padding[2], dilation[2];
  std::string padding_string;  // "valid" or "same" when padding was given as a string, else empty
  int64_t groups;
  std::string padding_mode;
  Tensor weight, bias;  // bias is undefined when built without one
};

}  // namespace ember::nn
