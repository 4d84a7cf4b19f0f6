#pragma once
/// Transposed convolution: ember::nn::functional::conv_transpose1d and conv_transpose2d
/// (torch.nn.functional's) and the layers ember::nn::ConvTranspose1d and ConvTranspose2d
/// (torch.nn's), with PyTorch's semantics, messages and initialisation.
#include <cstdint>
#include <string>
#include <string_view>
#include <utility>

#include "ember/nn/conv.h"
#include "ember/nn/module.h"
#include "ember/nn/modules.h"
#include "ember/nn/sizes.h"
#include "ember/tensor.h"

namespace ember::nn {

namespace functional {

/// The transpose of conv2d: input [N, in_channels, H, W] (or unbatched [in_channels, H, W]),
/// weight [in_channels, out_channels / groups, kH, kW], bias [out_channels] when defined; each
/// output size is (in - 1) * stride - 2 * padding + dilation * (k - 1) + output_padding + 1. Note
/// the argument order, PyTorch's: groups before dilation. ember::conv_transpose2d
/// (ember/conv_transpose.h) is the same op.
Tensor conv_transpose2d(const Tensor& input, const Tensor& weight, const Tensor& bias = Tensor(), IntList stride = {1},
                        IntList padding = {0}, IntList output_padding = {0}, int64_t groups = 1,
                        IntList dilation = {1});

/// The transpose of conv1d: input [N, in_channels, L] (or [in_channels, L]), weight
/// [in_channels, out_channels / groups, k]. ember::conv_transpose1d is the same op.
Tensor conv_transpose1d(const Tensor& input, const Tensor& weight, const Tensor& bias = Tensor(), int64_t stride = 1,
                        int64_t padding = 0, int64_t output_padding = 0, int64_t groups = 1, int64_t dilation = 1);

}  // namespace functional

/// The options of nn.ConvTranspose1d after in_channels, out_channels and kernel_size, in
/// PyTorch's order (groups and bias before dilation) with its defaults.
struct ConvTranspose1dOptions {
  detail::DesignatedOnly designated_only = {};
  ExpandingSize<1> stride = 1;
  ExpandingSize<1> padding = 0;
  ExpandingSize<1> output_padding = 0;
  int64_t groups = 1;
  bool bias = true;
  ExpandingSize<1> dilation = 1;
  std::string padding_mode = "zeros";  // the only mode PyTorch accepts
};

/// torch.nn.ConvTranspose1d: weight [in_channels, out_channels / groups, kernel_size] and bias
/// [out_channels], initialised as PyTorch's: kaiming_uniform_(a = √5) with the fan-in of the
/// transposed weight (weight.size(1) * kernel_size), then uniform(±1/√fan_in) for the bias.
/// Only padding_mode "zeros" exists, as in PyTorch.
///   nn::ConvTranspose1d(32, 16, 4, 2, 1);        // doubles the length
///   nn::ConvTranspose1d(32, 16, 4, {.stride = 2, .padding = 1, .bias = false});
class ConvTranspose1d : public Module {
 public:
  ConvTranspose1d(int64_t in_channels, int64_t out_channels, ExpandingSize<1> kernel_size,
                  ConvTranspose1dOptions options);
  /// PyTorch's positional order (a template only so that the options form wins a call GCC 12
  /// reads as either, as Conv1d's).
  template <int = 0>
  ConvTranspose1d(int64_t in_channels, int64_t out_channels, ExpandingSize<1> kernel_size, ExpandingSize<1> stride = 1,
                  ExpandingSize<1> padding = 0, ExpandingSize<1> output_padding = 0, int64_t groups = 1,
                  bool bias = true, ExpandingSize<1> dilation = 1, std::string_view padding_mode = "zeros")
      : ConvTranspose1d(in_channels, out_channels, std::move(kernel_size),
                        ConvTranspose1dOptions{.stride = std::move(stride),
                                               .padding = std::move(padding),
                                               .output_padding = std::move(output_padding),
                                               .groups = groups,
                                               .bias = bias,
                                               .dilation = std::move(dilation),
                                               .padding_mode = std::string(padding_mode)}) {}
  std::string name() const override { return "ConvTranspose1d"; }
  Tensor forward(const Tensor& input) override;
  /// The output sized as `output_size` asks ([L], or [N, C, L] / [C, L] whose last entry counts):
  /// its output_padding is chosen for it, as PyTorch's forward(input, output_size) does; a size
  /// out of the reachable range is an error naming that range.
  Tensor forward(const Tensor& input, IntList output_size);
  /// Redraws weight then bias from the global generator, as PyTorch's reset_parameters().
  void reset_parameters();

  int64_t in_channels, out_channels, kernel_size, stride, padding, output_padding, groups, dilation;
  std::string padding_mode;
  Tensor weight, bias;  // bias is undefined when built without one
};

/// The options of nn.ConvTranspose2d after in_channels, out_channels and kernel_size.
struct ConvTranspose2dOptions {
  detail::DesignatedOnly designated_only = {};
  Size2d stride = 1;
  Size2d padding = 0;
  Size2d output_padding = 0;
  int64_t groups = 1;
  bool bias = true;
  Size2d dilation = 1;
  std::string padding_mode = "zeros";  // the only mode PyTorch accepts
};

/// torch.nn.ConvTranspose2d: weight [in_channels, out_channels / groups, kH, kW] and bias
/// [out_channels], initialised as ConvTranspose1d's. Sizes are one number for both dimensions or
/// a {height, width} pair.
///   nn::ConvTranspose2d(128, 64, 4, 2, 1);       // DCGAN's upsampling: 16x16 -> 32x32
///   layer.forward(x, {33, 33});                  // picks output_padding 1 for an odd size
///   nn::ConvTranspose2d(128, 64, 4, {.stride = 2, .padding = 1});
class ConvTranspose2d : public Module {
 public:
  ConvTranspose2d(int64_t in_channels, int64_t out_channels, Size2d kernel_size, ConvTranspose2dOptions options);
  template <int = 0>
  ConvTranspose2d(int64_t in_channels, int64_t out_channels, Size2d kernel_size, Size2d stride = 1, Size2d padding = 0,
                  Size2d output_padding = 0, int64_t groups = 1, bool bias = true, Size2d dilation = 1,
                  std::string_view padding_mode = "zeros")
      : ConvTranspose2d(in_channels, out_channels, std::move(kernel_size),
                        ConvTranspose2dOptions{.stride = std::move(stride),
                                               .padding = std::move(padding),
                                               .output_padding = std::move(output_padding),
                                               .groups = groups,
                                               .bias = bias,
                                               .dilation = std::move(dilation),
                                               .padding_mode = std::string(padding_mode)}) {}
  std::string name() const override { return "ConvTranspose2d"; }
  Tensor forward(const Tensor& input) override;
  /// The output sized as `output_size` asks ([H, W], or with the batch and channel sizes in
  /// front): output_padding is chosen for it, as PyTorch's forward(input, output_size) does.
  Tensor forward(const Tensor& input, IntList output_size);
  /// Redraws weight then bias from the global generator, as PyTorch's reset_parameters().
  void reset_parameters();

  int64_t in_channels, out_channels;
  int64_t kernel_size[2], stride[2], padding[2], output_padding[2], dilation[2];
  int64_t groups;
  std::string padding_mode;
  Tensor weight, bias;  // bias is undefined when built without one
};

}  // namespace ember::nn
