#pragma once
/// ember::models::UNet: the U-Net of milesial's Pytorch-UNet (unet/unet_parts.py and
/// unet/unet_model.py), with its module names and registration order, so that a state_dict moves
/// between the two unchanged ("inc.double_conv.0.weight", "down1.maxpool_conv.1.double_conv.3.
/// running_mean", "up1.up.weight", "up4.conv.double_conv.4.bias", "outc.conv.weight", ...).
///
///   models::UNet model(3, 2);                      // RGB in, two classes per pixel
///   Tensor logits = model(images);                 // [N, 3, H, W] → [N, 2, H, W]
///   Tensor loss = nn::functional::cross_entropy(logits, masks);   // masks: int64 [N, H, W]
///
/// Any H and W of at least 16 work: where a level halved an odd size, the decoder pads its
/// upsampled map to the skip connection's size (the extra row or column goes last), as the
/// reference does. Initialisation is each layer's PyTorch default (the reference sets none).
#include <cstdint>
#include <memory>
#include <string>

#include "ember/nn/batchnorm.h"
#include "ember/nn/conv.h"
#include "ember/nn/modules.h"

namespace ember::models {

namespace unet_parts {

/// (Conv2d 3x3 without bias, BatchNorm2d, ReLU) twice, as the Sequential `double_conv`.
/// mid_channels 0 means out_channels (the reference's None).
class DoubleConv : public nn::Module {
 public:
  DoubleConv(int64_t in_channels, int64_t out_channels, int64_t mid_channels = 0);
  std::string name() const override { return "DoubleConv"; }
  Tensor forward(const Tensor& x) override { return (*double_conv)(x); }
  std::shared_ptr<nn::Sequential> double_conv;
};

/// MaxPool2d(2) then DoubleConv, as the Sequential `maxpool_conv`.
class Down : public nn::Module {
 public:
  Down(int64_t in_channels, int64_t out_channels);
  std::string name() const override { return "Down"; }
  Tensor forward(const Tensor& x) override { return (*maxpool_conv)(x); }
  std::shared_ptr<nn::Sequential> maxpool_conv;
};

/// Upsamples x1 (bilinear: Upsample(scale 2, bilinear, align_corners) and DoubleConv(in, out,
/// in / 2); else ConvTranspose2d(in, in / 2, 2, stride 2) and DoubleConv(in, out)), pads it to
/// x2's size (the odd row or column at the end) and convolves cat([x2, x1], channels).
class Up : public nn::Module {
 public:
  Up(int64_t in_channels, int64_t out_channels, bool bilinear = true);
  std::string name() const override { return "Up"; }
  /// x1 from the level below, x2 the skip connection.
  Tensor forward(const Tensor& x1, const Tensor& x2);
  using nn::Module::forward;  // the one-input form throws, as the reference's needs two inputs

  std::shared_ptr<nn::Module> up;  // nn::Upsample or nn::ConvTranspose2d
  std::shared_ptr<DoubleConv> conv;
};

/// A 1x1 convolution to the class scores (with bias).
class OutConv : public nn::Module {
 public:
  OutConv(int64_t in_channels, int64_t out_channels);
  std::string name() const override { return "OutConv"; }
  Tensor forward(const Tensor& x) override { return (*conv)(x); }
  std::shared_ptr<nn::Conv2d> conv;
};

}  // namespace unet_parts

/// UNet's arguments after n_channels and n_classes, with the reference's defaults.
struct UNetOptions {
  /// Upsample bilinearly (halving the channels of the deepest level, `factor` 2) instead of with
  /// transposed convolutions.
  bool bilinear = false;
  /// NOT a reference argument (ember's extension): the channels of the first level, the
  /// reference's fixed 64 (the levels below have 2, 4, 8 and 16 times as many). Smaller values
  /// give the same structure with fewer channels, for tests and small experiments.
  int64_t base_channels = 64;
};

/// inc, down1..down4, up1..up4 (each with the matching encoder output as skip), outc.
class UNet : public nn::Module {
 public:
  UNet(int64_t n_channels, int64_t n_classes, UNetOptions options = {});
  std::string name() const override { return "UNet"; }
  /// x [N, n_channels, H, W] (H, W >= 16) → per-pixel logits [N, n_classes, H, W].
  Tensor forward(const Tensor& x) override;

  int64_t n_channels, n_classes;
  bool bilinear;
  std::shared_ptr<unet_parts::DoubleConv> inc;
  std::shared_ptr<unet_parts::Down> down1, down2, down3, down4;
  std::shared_ptr<unet_parts::Up> up1, up2, up3, up4;
  std::shared_ptr<unet_parts::OutConv> outc;
};

}  // namespace ember::models
