#pragma once
/// ember::models::ResNet: torchvision's resnet18, resnet34 and resnet50 (torchvision.models.resnet),
/// with torchvision's module names, registration order and initialisation, so a state_dict moves
/// between the two unchanged ("conv1.weight", "layer1.0.conv1.weight", "layer2.0.downsample.0.weight",
/// "fc.bias", ...).
///
///   auto model = ember::models::resnet18({.num_classes = 10});
///   Tensor logits = (*model)(images);            // images [N, 3, H, W] → [N, num_classes]
///
/// Initialisation as torchvision's: every Conv2d kaiming_normal_(mode = "fan_out", nonlinearity =
/// "relu"), every BatchNorm2d weight ones and bias zeros, fc as nn.Linear's default; with
/// zero_init_residual the last BatchNorm of each residual branch starts at zero.
#include <array>
#include <cstdint>
#include <memory>
#include <string>

#include "ember/nn/batchnorm.h"
#include "ember/nn/conv.h"
#include "ember/nn/modules.h"
#include "ember/nn/pooling.h"

namespace ember::models {

/// torchvision's ResNet arguments after block and layers, with its defaults.
struct ResNetOptions {
  int64_t num_classes = 1000;
  /// Start the last BatchNorm of each residual branch (bn2 in BasicBlock, bn3 in Bottleneck) at
  /// zero, so that each block begins as the identity.
  bool zero_init_residual = false;
  /// Groups and width per group of the 3x3 convolution in Bottleneck (ResNeXt, Wide ResNet);
  /// BasicBlock accepts only 1 and 64, as torchvision's.
  int64_t groups = 1;
  int64_t width_per_group = 64;
  /// Per stage 2, 3 and 4: a dilated convolution instead of the stride (Bottleneck only).
  std::array<bool, 3> replace_stride_with_dilation = {false, false, false};
  /// NOT a torchvision argument (ember's extension): the planes of the four stages, torchvision's
  /// fixed 64, 128, 256, 512 (the stem convolution has stage_widths[0] channels). Smaller values
  /// give the same structure with fewer channels, for tests and small experiments; the defaults
  /// are torchvision's model.
  std::array<int64_t, 4> stage_widths = {64, 128, 256, 512};
};

/// Two 3x3 convolutions with a residual connection (torchvision's BasicBlock, expansion 1).
class BasicBlock : public nn::Module {
 public:
  static constexpr int64_t expansion = 1;
  /// `downsample` (may be null) maps the input to the output's shape for the residual sum.
  BasicBlock(int64_t inplanes, int64_t planes, int64_t stride = 1, std::shared_ptr<nn::Sequential> downsample = nullptr,
             int64_t groups = 1, int64_t base_width = 64, int64_t dilation = 1);
  std::string name() const override { return "BasicBlock"; }
  Tensor forward(const Tensor& input) override;

  std::shared_ptr<nn::Conv2d> conv1, conv2;
  std::shared_ptr<nn::BatchNorm2d> bn1, bn2;
  std::shared_ptr<nn::ReLU> relu;
  std::shared_ptr<nn::Sequential> downsample;  // null when the input already has the output's shape
  int64_t stride;
};

/// 1x1, 3x3 (strided, grouped, dilated), 1x1 convolutions with a residual connection
/// (torchvision's Bottleneck, the ResNet V1.5 variant that strides in the 3x3 convolution;
/// expansion 4).
class Bottleneck : public nn::Module {
 public:
  static constexpr int64_t expansion = 4;
  Bottleneck(int64_t inplanes, int64_t planes, int64_t stride = 1, std::shared_ptr<nn::Sequential> downsample = nullptr,
             int64_t groups = 1, int64_t base_width = 64, int64_t dilation = 1);
  std::string name() const override { return "Bottleneck"; }
  Tensor forward(const Tensor& input) override;

  std::shared_ptr<nn::Conv2d> conv1, conv2, conv3;
  std::shared_ptr<nn::BatchNorm2d> bn1, bn2, bn3;
  std::shared_ptr<nn::ReLU> relu;
  std::shared_ptr<nn::Sequential> downsample;
  int64_t stride;
};

enum class ResNetBlock { Basic, Bottleneck };

/// torchvision's ResNet: conv1 (7x7, stride 2), bn1, relu, maxpool (3x3, stride 2), layer1..layer4
/// (Sequential of blocks), avgpool (adaptive, 1x1), flatten, fc.
class ResNet : public nn::Module {
 public:
  ResNet(ResNetBlock block, std::array<int64_t, 4> layers, ResNetOptions options = {});
  std::string name() const override { return "ResNet"; }
  /// input [N, 3, H, W] → logits [N, num_classes].
  Tensor forward(const Tensor& input) override;

  std::shared_ptr<nn::Conv2d> conv1;
  std::shared_ptr<nn::BatchNorm2d> bn1;
  std::shared_ptr<nn::ReLU> relu;
  std::shared_ptr<nn::MaxPool2d> maxpool;
  std::shared_ptr<nn::Sequential> layer1, layer2, layer3, layer4;
  std::shared_ptr<nn::AdaptiveAvgPool2d> avgpool;
  std::shared_ptr<nn::Linear> fc;

 private:
  std::shared_ptr<nn::Sequential> make_layer(ResNetBlock block, int64_t planes, int64_t blocks, int64_t stride,
                                             bool dilate);
  int64_t inplanes_, dilation_, groups_, base_width_;
};

/// torchvision.models.resnet18/34/50 without pretrained weights (load them with load_state_dict).
std::shared_ptr<ResNet> resnet18(ResNetOptions options = {});
std::shared_ptr<ResNet> resnet34(ResNetOptions options = {});
std::shared_ptr<ResNet> resnet50(ResNetOptions options = {});

}  // namespace ember::models
