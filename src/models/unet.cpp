// milesial's U-Net (see include/ember/models/unet.h), built from ember::nn layers.
#include "ember/models/unet.h"

#include <utility>

#include "core/check.h"
#include "ember/nn/conv_transpose.h"
#include "ember/nn/padding.h"
#include "ember/nn/pooling.h"
#include "ember/nn/upsampling.h"
#include "ember/ops.h"

namespace ember::models {

namespace unet_parts {

DoubleConv::DoubleConv(int64_t in_channels, int64_t out_channels, int64_t mid_channels) {
  if (mid_channels == 0) mid_channels = out_channels;
  auto conv3x3 = [](int64_t in, int64_t out) {
    return std::make_shared<nn::Conv2d>(in, out, 3, nn::Conv2dOptions{.padding = 1, .bias = false});
  };
  // Made one by one in the reference's order (the convolutions draw their initial weights as they
  // are made; the arguments of one call would be evaluated in an unspecified order).
  auto first = conv3x3(in_channels, mid_channels);
  auto first_norm = std::make_shared<nn::BatchNorm2d>(mid_channels);
  auto second = conv3x3(mid_channels, out_channels);
  auto second_norm = std::make_shared<nn::BatchNorm2d>(out_channels);
  double_conv = register_module(
      "double_conv", std::make_shared<nn::Sequential>(first, first_norm, std::make_shared<nn::ReLU>(true), second,
                                                      second_norm, std::make_shared<nn::ReLU>(true)));
}

Down::Down(int64_t in_channels, int64_t out_channels) {
  maxpool_conv = register_module(
      "maxpool_conv", std::make_shared<nn::Sequential>(std::make_shared<nn::MaxPool2d>(2),
                                                       std::make_shared<DoubleConv>(in_channels, out_channels)));
}

Up::Up(int64_t in_channels, int64_t out_channels, bool bilinear) {
  if (bilinear) {
    up = register_module("up", std::make_shared<nn::Upsample>(nn::UpsampleOptions{
                                   .scale_factor = {2.0}, .mode = "bilinear", .align_corners = true}));
    conv = register_module("conv", std::make_shared<DoubleConv>(in_channels, out_channels, in_channels / 2));
  } else {
    up = register_module("up", std::make_shared<nn::ConvTranspose2d>(in_channels, in_channels / 2, 2,
                                                                     nn::ConvTranspose2dOptions{.stride = 2}));
    conv = register_module("conv", std::make_shared<DoubleConv>(in_channels, out_channels));
  }
}

Tensor Up::forward(const Tensor& x1, const Tensor& x2) {
  EMBER_CHECK(x1.dim() == 4 && x2.dim() == 4, "Up: expected 4-D inputs [N, C, H, W], got ", x1.dim(), "-D and ",
              x2.dim(), "-D");
  const Tensor upsampled = (*up)(x1);
  // The skip is at most a row and a column larger (its level halved an odd size): the upsampled
  // map gets the difference, its smaller half first. Python's // floors, so a negative
  // difference (a larger upsampled map) crops the same way.
  auto floor_half = [](int64_t d) { return d >= 0 ? d / 2 : -((-d + 1) / 2); };
  const int64_t diff_y = x2.size(2) - upsampled.size(2), diff_x = x2.size(3) - upsampled.size(3);
  Tensor padded = upsampled;
  if (diff_y != 0 || diff_x != 0) {
    padded = nn::functional::pad(
        upsampled, {floor_half(diff_x), diff_x - floor_half(diff_x), floor_half(diff_y), diff_y - floor_half(diff_y)});
  }
  return (*conv)(cat({x2, padded}, 1));
}

OutConv::OutConv(int64_t in_channels, int64_t out_channels) {
  conv = register_module("conv", std::make_shared<nn::Conv2d>(in_channels, out_channels, 1));
}

}  // namespace unet_parts

UNet::UNet(int64_t n_channels, int64_t n_classes, UNetOptions options)
    : n_channels(n_channels), n_classes(n_classes), bilinear(options.bilinear) {
  const int64_t c = options.base_channels;
  EMBER_CHECK(c >= 1, "UNet: base_channels must be positive, got ", c);
  EMBER_CHECK(n_channels >= 1 && n_classes >= 1, "UNet: n_channels and n_classes must be positive, got ", n_channels,
              " and ", n_classes);
  using namespace unet_parts;
  const int64_t factor = bilinear ? 2 : 1;
  inc = register_module("inc", std::make_shared<DoubleConv>(n_channels, c));
  down1 = register_module("down1", std::make_shared<Down>(c, 2 * c));
  down2 = register_module("down2", std::make_shared<Down>(2 * c, 4 * c));
  down3 = register_module("down3", std::make_shared<Down>(4 * c, 8 * c));
  down4 = register_module("down4", std::make_shared<Down>(8 * c, 16 * c / factor));
  up1 = register_module("up1", std::make_shared<Up>(16 * c, 8 * c / factor, bilinear));
  up2 = register_module("up2", std::make_shared<Up>(8 * c, 4 * c / factor, bilinear));
  up3 = register_module("up3", std::make_shared<Up>(4 * c, 2 * c / factor, bilinear));
  up4 = register_module("up4", std::make_shared<Up>(2 * c, c, bilinear));
  outc = register_module("outc", std::make_shared<OutConv>(c, n_classes));
}

Tensor UNet::forward(const Tensor& x) {
  const Tensor x1 = (*inc)(x);
  const Tensor x2 = (*down1)(x1);
  const Tensor x3 = (*down2)(x2);
  const Tensor x4 = (*down3)(x3);
  const Tensor x5 = (*down4)(x4);
  Tensor y = up1->forward(x5, x4);
  y = up2->forward(y, x3);
  y = up3->forward(y, x2);
  y = up4->forward(y, x1);
  return (*outc)(y);
}

}  // namespace ember::models
