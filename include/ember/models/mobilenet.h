#pragma once
/// ember::models::MobileNetV2: torchvision's mobilenet_v2 (torchvision.models.mobilenetv2), with
/// torchvision's module names, registration order and initialisation, so a state_dict moves
/// between the two unchanged ("features.0.0.weight", "features.1.conv.0.0.weight",
/// "features.2.conv.1.1.running_mean", "classifier.1.weight", ...).
///
///   auto model = ember::models::mobilenet_v2({.num_classes = 10});
///   Tensor logits = (*model)(images);            // images [N, 3, H, W] → [N, num_classes]
///
/// Also here, because EfficientNet (efficientnet.h) builds from them as well: torchvision.ops'
/// Conv2dNormActivation and torchvision's _make_divisible.
///
/// Initialisation as torchvision's: every Conv2d kaiming_normal_(mode = "fan_out") and a zero bias,
/// every BatchNorm2d / GroupNorm weight ones and bias zeros, every Linear weight normal(0, 0.01)
/// and bias zeros, redrawn in modules() order after each layer drew its own default.
///
/// Departure from torchvision: MobileNetV2's `block` argument (a replacement for
/// InvertedResidual) is not offered; every block is an InvertedResidual.
#include <array>
#include <cstdint>
#include <functional>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "ember/nn/batchnorm.h"
#include "ember/nn/conv.h"
#include "ember/nn/modules.h"

namespace ember::models {

/// torchvision's _make_divisible: `value` rounded to the nearest multiple of `divisor` (at least
/// min_value, by default divisor), one divisor more where rounding down lost over 10%.
int64_t make_divisible(double value, int64_t divisor, std::optional<int64_t> min_value = std::nullopt);

/// Makes the normalisation layer for a number of channels (torchvision's norm_layer callables);
/// an empty function means no normalisation.
using NormLayerFactory = std::function<std::shared_ptr<nn::Module>(int64_t channels)>;
/// Makes the activation layer (torchvision's activation_layer callables); empty means none.
using ActivationFactory = std::function<std::shared_ptr<nn::Module>()>;

/// nn.BatchNorm2d(channels) with PyTorch's defaults, torchvision's default norm_layer.
NormLayerFactory batch_norm2d_factory(nn::BatchNormOptions options = {});

/// torchvision.ops.Conv2dNormActivation's arguments after the channel counts, with its defaults.
struct Conv2dNormActivationOptions {
  int64_t kernel_size = 3;
  int64_t stride = 1;
  /// std::nullopt: (kernel_size - 1) / 2 * dilation, which keeps the size at stride 1.
  std::optional<int64_t> padding = std::nullopt;
  int64_t groups = 1;
  NormLayerFactory norm_layer = batch_norm2d_factory();
  /// torchvision's default is nn.ReLU (in place).
  ActivationFactory activation_layer = [] { return std::make_shared<nn::ReLU>(true); };
  int64_t dilation = 1;
  /// std::nullopt: a bias only when there is no norm_layer.
  std::optional<bool> bias = std::nullopt;
};

/// torchvision.ops.Conv2dNormActivation: a Sequential of Conv2d ("0"), the normalisation ("1")
/// when there is one, and the activation after them.
class Conv2dNormActivation : public nn::Sequential {
 public:
  Conv2dNormActivation(int64_t in_channels, int64_t out_channels, Conv2dNormActivationOptions options = {});
  std::string name() const override { return "Conv2dNormActivation"; }
  int64_t out_channels;
};

/// torchvision's InvertedResidual: a 1x1 expansion (when expand_ratio is not 1), a depthwise 3x3
/// convolution (groups = hidden channels), each with BatchNorm and ReLU6, and a linear 1x1
/// projection with BatchNorm; the input is added back when stride is 1 and the channel count is kept.
class InvertedResidual : public nn::Module {
 public:
  /// norm_layer empty: BatchNorm2d.
  InvertedResidual(int64_t inp, int64_t oup, int64_t stride, int64_t expand_ratio, NormLayerFactory norm_layer = {});
  std::string name() const override { return "InvertedResidual"; }
  Tensor forward(const Tensor& input) override;

  std::shared_ptr<nn::Sequential> conv;
  int64_t stride;
  bool use_res_connect;
  int64_t out_channels;
};

/// torchvision's MobileNetV2 arguments, with its defaults.
struct MobileNetV2Options {
  int64_t num_classes = 1000;
  /// Multiplies every layer's channels (then rounded to round_nearest); the last 1x1 convolution
  /// keeps 1280 channels unless width_mult is above 1.
  double width_mult = 1.0;
  /// Rows of (expansion t, channels c, repeats n, first stride s); std::nullopt: the paper's
  /// seven stages {1, 16, 1, 1}, {6, 24, 2, 2}, {6, 32, 3, 2}, {6, 64, 4, 2}, {6, 96, 3, 1},
  /// {6, 160, 3, 2}, {6, 320, 1, 1}.
  std::optional<std::vector<std::vector<int64_t>>> inverted_residual_setting = std::nullopt;
  /// Channel counts are rounded to multiples of this (1 turns rounding off).
  int64_t round_nearest = 8;
  /// empty: BatchNorm2d.
  NormLayerFactory norm_layer = {};
  /// The probability of the classifier's Dropout.
  double dropout = 0.2;
};

/// torchvision's MobileNetV2: features (Sequential: the stem Conv2dNormActivation, the
/// InvertedResidual blocks, the last 1x1 Conv2dNormActivation), global average pooling, then
/// classifier (Sequential: Dropout, Linear).
class MobileNetV2 : public nn::Module {
 public:
  explicit MobileNetV2(MobileNetV2Options options = {});
  std::string name() const override { return "MobileNetV2"; }
  /// input [N, 3, H, W] → logits [N, num_classes].
  Tensor forward(const Tensor& input) override;

  std::shared_ptr<nn::Sequential> features;
  std::shared_ptr<nn::Sequential> classifier;
  int64_t last_channel;
};

/// torchvision.models.mobilenet_v2 without pretrained weights (load them with load_state_dict).
std::shared_ptr<MobileNetV2> mobilenet_v2(MobileNetV2Options options = {});

}  // namespace ember::models
