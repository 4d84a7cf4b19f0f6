#pragma once
/// ember::models::EfficientNet: torchvision's efficientnet_b0 (torchvision.models.efficientnet),
/// with torchvision's module names, registration order and initialisation, so a state_dict moves
/// between the two unchanged ("features.0.0.weight", "features.1.0.block.0.0.weight",
/// "features.2.0.block.2.fc1.weight", "features.8.1.running_var", "classifier.1.weight", ...).
///
///   auto model = ember::models::efficientnet_b0({.num_classes = 10});
///   Tensor logits = (*model)(images);            // images [N, 3, H, W] → [N, num_classes]
///
/// Also here: torchvision.ops' SqueezeExcitation, StochasticDepth and stochastic_depth, and
/// torchvision's MBConvConfig (whose width_mult and depth_mult scale the stage table, as
/// efficientnet_b1..b7 do; EfficientNet takes any such table).
///
/// Initialisation as torchvision's: every Conv2d kaiming_normal_(mode = "fan_out") and a zero bias,
/// every BatchNorm2d / GroupNorm weight ones and bias zeros, every Linear weight
/// uniform(±1/sqrt(out_features)) and bias zeros, redrawn in modules() order after each layer
/// drew its own default.
///
/// Departures from torchvision: only MBConv blocks (EfficientNetV2's FusedMBConv is not here), and
/// no se_layer / block replacement arguments. The random rows StochasticDepth drops come from
/// ember's generator, not PyTorch's (same distribution, other draws).
#include <cstdint>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "ember/models/mobilenet.h"  // Conv2dNormActivation, make_divisible, NormLayerFactory
#include "ember/nn/modules.h"
#include "ember/nn/pooling.h"

namespace ember::models {

/// torchvision.ops.stochastic_depth: in training, zeroes the whole input ("batch") or each row
/// (index of dimension 0, "row") with probability p and scales what survives by 1 / (1 - p);
/// the input unchanged when not training or p is 0.
Tensor stochastic_depth(const Tensor& input, double p, const std::string& mode, bool training = true);

/// torchvision.ops.StochasticDepth: stochastic_depth with the module's training flag. p and mode
/// are checked when it runs, as torchvision's.
class StochasticDepth : public nn::Module {
 public:
  StochasticDepth(double p, std::string mode) : p(p), mode(std::move(mode)) {}
  std::string name() const override { return "StochasticDepth"; }
  Tensor forward(const Tensor& input) override { return stochastic_depth(input, p, mode, is_training()); }
  double p;
  std::string mode;
};

/// torchvision.ops.SqueezeExcitation: input * scale_activation(fc2(activation(fc1(avgpool(input))))),
/// fc1 and fc2 1x1 convolutions with bias; children avgpool, fc1, fc2, activation, scale_activation.
class SqueezeExcitation : public nn::Module {
 public:
  /// activation empty: ReLU; scale_activation empty: Sigmoid (torchvision's defaults).
  SqueezeExcitation(int64_t input_channels, int64_t squeeze_channels, ActivationFactory activation = {},
                    ActivationFactory scale_activation = {});
  std::string name() const override { return "SqueezeExcitation"; }
  Tensor forward(const Tensor& input) override;

  std::shared_ptr<nn::AdaptiveAvgPool2d> avgpool;
  std::shared_ptr<nn::Conv2d> fc1, fc2;
  std::shared_ptr<nn::Module> activation, scale_activation;
};

/// torchvision's MBConvConfig: one stage of the table, its channels scaled by width_mult (rounded
/// to multiples of 8) and its block count by depth_mult (rounded up).
struct MBConvConfig {
  MBConvConfig(double expand_ratio, int64_t kernel, int64_t stride, int64_t input_channels, int64_t out_channels,
               int64_t num_layers, double width_mult = 1.0, double depth_mult = 1.0);
  static int64_t adjust_channels(double channels, double width_mult, std::optional<int64_t> min_value = std::nullopt);
  static int64_t adjust_depth(int64_t num_layers, double depth_mult);

  double expand_ratio;
  int64_t kernel, stride, input_channels, out_channels, num_layers;
};

/// torchvision's MBConv: a 1x1 expansion (when it changes the channels), a depthwise kxk
/// convolution, each with BatchNorm and SiLU, squeeze-and-excitation, and a 1x1 projection with
/// BatchNorm; with stride 1 and equal channels, the input is added to the stochastic_depth of that.
class MBConv : public nn::Module {
 public:
  MBConv(const MBConvConfig& cnf, double stochastic_depth_prob, NormLayerFactory norm_layer);
  std::string name() const override { return "MBConv"; }
  Tensor forward(const Tensor& input) override;

  std::shared_ptr<nn::Sequential> block;
  std::shared_ptr<StochasticDepth> stochastic_depth;
  bool use_res_connect;
  int64_t out_channels;
};

/// efficientnet_b0's keyword arguments (and EfficientNet's after the stage table), with torchvision's
/// defaults.
struct EfficientNetOptions {
  int64_t num_classes = 1000;
  /// The probability of the classifier's Dropout.
  double dropout = 0.2;
  /// The last block's; block i of the B blocks drops with stochastic_depth_prob * i / B.
  double stochastic_depth_prob = 0.2;
  /// empty: BatchNorm2d with PyTorch's defaults (eps 1e-5, momentum 0.1), as efficientnet_b0.
  NormLayerFactory norm_layer = {};
};

/// torchvision's EfficientNet (V1 layout): features (Sequential: the stem Conv2dNormActivation, one
/// Sequential of MBConv per stage, the last 1x1 Conv2dNormActivation), avgpool, classifier
/// (Sequential: Dropout, Linear).
class EfficientNet : public nn::Module {
 public:
  /// last_channel: the last convolution's channels, std::nullopt for 4x the last stage's.
  EfficientNet(const std::vector<MBConvConfig>& inverted_residual_setting, EfficientNetOptions options = {},
               std::optional<int64_t> last_channel = std::nullopt);
  std::string name() const override { return "EfficientNet"; }
  /// input [N, 3, H, W] → logits [N, num_classes].
  Tensor forward(const Tensor& input) override;

  std::shared_ptr<nn::Sequential> features;
  std::shared_ptr<nn::AdaptiveAvgPool2d> avgpool;
  std::shared_ptr<nn::Sequential> classifier;
};

/// The B0 stage table (torchvision's _efficientnet_conf for "efficientnet_b*") with the given
/// multipliers: B0 is 1.0, 1.0; B1 1.0, 1.1; ... B7 2.0, 3.1.
std::vector<MBConvConfig> efficientnet_b_setting(double width_mult = 1.0, double depth_mult = 1.0);

/// torchvision.models.efficientnet_b0 without pretrained weights (load them with load_state_dict).
std::shared_ptr<EfficientNet> efficientnet_b0(EfficientNetOptions options = {});

}  // namespace ember::models
