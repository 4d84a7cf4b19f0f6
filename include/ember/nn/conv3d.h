#pragma once
/// 3-D convolution: ember::nn::functional::conv3d and conv_transpose3d (torch.nn.functional's)
/// and the layers ember::nn::Conv3d and ConvTranspose3d (torch.nn's), with PyTorch's arguments,
/// defaults, initialisation, state_dict names and messages.
///
/// Both are composed of the 2-D ops, so they run on conv2d's kernels (oneDNN or im2col on the
/// CPU, cuDNN on CUDA) and autograd comes with them:
/// - conv3d folds the output depth into the batch and the kernel's depth into the channels: each
///   output plane is one conv2d over the kD input planes it reads, stacked along the channels,
///   with the weight [O, C/g, kD, kH, kW] laid out as [O, kD * C/g, kH, kW] to match. One conv2d
///   call does the whole convolution; the stacking is one copy of kD times the input.
/// - conv_transpose3d runs conv_transpose2d over every input plane with the kernel's depth folded
///   into the output channels, then adds each kernel depth's planes at their output depths
///   (t * stride + kd * dilation - padding), the adjoint of conv3d's stacking.
/// The result's grad_fn is therefore a view or copy node over conv2d's ConvolutionBackward0,
/// where PyTorch's is ConvolutionBackward0 itself; the gradients are the same.
#include <cstdint>
#include <string>
#include <string_view>

#include "ember/nn/conv.h"
#include "ember/nn/module.h"
#include "ember/nn/sizes.h"
#include "ember/tensor.h"

namespace ember::nn {

namespace functional {

/// Cross-correlation of input [N, C, D, H, W] (or unbatched [C, D, H, W]) with weight
/// [out_channels, C / groups, kD, kH, kW], plus bias [out_channels] when defined. stride,
/// padding and dilation are one value for all three dimensions or a [depth, height, width]
/// triple.
Tensor conv3d(const Tensor& input, const Tensor& weight, const Tensor& bias = Tensor(), IntList stride = {1},
              IntList padding = {0}, IntList dilation = {1}, int64_t groups = 1);

namespace detail {
Tensor conv3d_padding_string(const Tensor& input, const Tensor& weight, const Tensor& bias, IntList stride,
                             std::string_view padding, IntList dilation, int64_t groups);
}  // namespace detail

/// conv3d with padding "valid" (none) or "same" (output as large as the input; stride 1). An odd
/// total "same" padding puts the extra plane/row/column at the end, as in PyTorch.
template <PaddingString String>
Tensor conv3d(const Tensor& input, const Tensor& weight, const Tensor& bias, IntList stride, const String& padding,
              IntList dilation = {1}, int64_t groups = 1) {
  return detail::conv3d_padding_string(input, weight, bias, stride, std::string_view(padding), dilation, groups);
}

/// The transpose of conv3d: input [N, in_channels, D, H, W] (or [in_channels, D, H, W]), weight
/// [in_channels, out_channels / groups, kD, kH, kW], bias [out_channels]; each output size is
/// (in - 1) * stride - 2 * padding + dilation * (k - 1) + output_padding + 1. PyTorch's argument
/// order: groups before dilation.
Tensor conv_transpose3d(const Tensor& input, const Tensor& weight, const Tensor& bias = Tensor(), IntList stride = {1},
                        IntList padding = {0}, IntList output_padding = {0}, int64_t groups = 1,
                        IntList dilation = {1});

}  // namespace functional

/// Conv3d's padding: one value, a [depth, height, width] triple, or "valid" / "same".
class Conv3dPadding {
 public:
  Conv3dPadding(int64_t all) : size_(all) {}                           // NOLINT(google-explicit-constructor)
  Conv3dPadding(std::initializer_list<int64_t> list) : size_(list) {}  // NOLINT(google-explicit-constructor)
  Conv3dPadding(ExpandingSize<3> size) : size_(std::move(size)) {}     // NOLINT(google-explicit-constructor)
  template <functional::PaddingString String>
  Conv3dPadding(const String& mode) : size_(0), mode_(std::string_view(mode)) {}  // NOLINT(google-explicit-constructor)

  const ExpandingSize<3>& size() const { return size_; }
  /// "valid" or "same" when given as a string, otherwise empty.
  const std::string& mode() const { return mode_; }

 private:
  ExpandingSize<3> size_;
  std::string mode_;
};

/// Conv3d's optional arguments, PyTorch's names and defaults.
struct Conv3dOptions {
  detail::DesignatedOnly designated_only = {};
  ExpandingSize<3> stride = 1;
  Conv3dPadding padding = 0;
  ExpandingSize<3> dilation = 1;
  int64_t groups = 1;
  bool bias = true;
  /// "zeros", "reflect", "replicate" or "circular"; the others pad with ember::pad first.
  std::string padding_mode = "zeros";
};

/// torch.nn.Conv3d: weight [out_channels, in_channels / groups, kD, kH, kW] and bias
/// [out_channels], initialised as Conv2d's: kaiming_uniform_(a = √5), then uniform(±1/√fan_in).
///   nn::Conv3d(16, 32, 3);                                  // 3x3x3, stride 1, no padding
///   nn::Conv3d(16, 32, {3, 5, 5}, {.stride = 2, .padding = {1, 2, 2}});
///   nn::Conv3d(8, 8, 3, {.padding = "same", .groups = 4});
class Conv3d : public Module {
 public:
  Conv3d(int64_t in_channels, int64_t out_channels, ExpandingSize<3> kernel_size, Conv3dOptions options = {});
  std::string name() const override { return "Conv3d"; }
  Tensor forward(const Tensor& input) override;
  /// Redraws weight then bias from the global generator, as PyTorch's reset_parameters().
  void reset_parameters();

  int64_t in_channels, out_channels;
  ExpandingSize<3> kernel_size, stride, padding, dilation;
  std::string padding_string;  // "valid" or "same" when padding was given as a string, else empty
  int64_t groups;
  std::string padding_mode;
  Tensor weight, bias;  // bias is undefined when built without one
};

/// ConvTranspose3d's optional arguments, PyTorch's names and defaults.
struct ConvTranspose3dOptions {
  detail::DesignatedOnly designated_only = {};
  ExpandingSize<3> stride = 1;
  ExpandingSize<3> padding = 0;
  ExpandingSize<3> output_padding = 0;
  int64_t groups = 1;
  bool bias = true;
  ExpandingSize<3> dilation = 1;
  std::string padding_mode = "zeros";  // the only mode PyTorch accepts
};

/// torch.nn.ConvTranspose3d: weight [in_channels, out_channels / groups, kD, kH, kW] and bias
/// [out_channels], initialised as ConvTranspose2d's.
///   nn::ConvTranspose3d(32, 16, 4, {.stride = 2, .padding = 1});   // doubles D, H and W
class ConvTranspose3d : public Module {
 public:
  ConvTranspose3d(int64_t in_channels, int64_t out_channels, ExpandingSize<3> kernel_size,
                  ConvTranspose3dOptions options = {});
  std::string name() const override { return "ConvTranspose3d"; }
  Tensor forward(const Tensor& input) override;
  /// The output sized as `output_size` asks ([D, H, W], or with the batch and channel sizes in
  /// front): output_padding is chosen for it, as PyTorch's forward(input, output_size) does.
  Tensor forward(const Tensor& input, IntList output_size);
  /// Redraws weight then bias from the global generator, as PyTorch's reset_parameters().
  void reset_parameters();

  int64_t in_channels, out_channels;
  ExpandingSize<3> kernel_size, stride, padding, output_padding, dilation;
  int64_t groups;
  std::string padding_mode;
  Tensor weight, bias;  // bias is undefined when built without one
};

}  // namespace ember::nn
