// torchvision's EfficientNet, MBConv, SqueezeExcitation and StochasticDepth (see
// include/ember/models/efficientnet.h), built from ember::nn layers.
#include "ember/models/efficientnet.h"

#include <cmath>
#include <utility>

#include "core/check.h"
#include "ember/factories.h"
#include "ember/nn/init.h"
#include "ember/sampling.h"

namespace ember::models {

Tensor stochastic_depth(const Tensor& input, double p, const std::string& mode, bool training) {
  EMBER_CHECK(p >= 0.0 && p <= 1.0, "drop probability has to be between 0 and 1, but got ", detail::python_float(p));
  EMBER_CHECK(mode == "batch" || mode == "row", "mode has to be either 'batch' or 'row', but got ", mode);
  if (!training || p == 0.0) return input;
  const double survival_rate = 1.0 - p;
  // One draw per row ([N, 1, ..., 1]) or one for the whole batch ([1, ..., 1]), broadcast.
  std::vector<int64_t> noise_size(static_cast<size_t>(input.dim()), 1);
  if (mode == "row") {
    EMBER_CHECK(input.dim() >= 1, "stochastic_depth: mode 'row' needs an input with a batch dimension");
    noise_size[0] = input.size(0);
  }
  Tensor noise =
      bernoulli(empty(noise_size, TensorOptions().dtype(input.dtype()).device(input.device())), survival_rate);
  if (survival_rate > 0.0) noise = noise / survival_rate;
  return input * noise;
}

SqueezeExcitation::SqueezeExcitation(int64_t input_channels, int64_t squeeze_channels, ActivationFactory activation,
                                     ActivationFactory scale_activation) {
  avgpool = register_module("avgpool", std::make_shared<nn::AdaptiveAvgPool2d>(1));
  fc1 = register_module("fc1", std::make_shared<nn::Conv2d>(input_channels, squeeze_channels, 1));
  fc2 = register_module("fc2", std::make_shared<nn::Conv2d>(squeeze_channels, input_channels, 1));
  this->activation = register_module(
      "activation", activation ? activation() : std::static_pointer_cast<nn::Module>(std::make_shared<nn::ReLU>()));
  this->scale_activation = register_module(
      "scale_activation",
      scale_activation ? scale_activation() : std::static_pointer_cast<nn::Module>(std::make_shared<nn::Sigmoid>()));
}

Tensor SqueezeExcitation::forward(const Tensor& input) {
  Tensor scale = (*fc2)((*activation)((*fc1)((*avgpool)(input))));
  return (*scale_activation)(scale)*input;
}

MBConvConfig::MBConvConfig(double expand_ratio, int64_t kernel, int64_t stride, int64_t input_channels,
                           int64_t out_channels, int64_t num_layers, double width_mult, double depth_mult)
    : expand_ratio(expand_ratio),
      kernel(kernel),
      stride(stride),
      input_channels(adjust_channels(static_cast<double>(input_channels), width_mult)),
      out_channels(adjust_channels(static_cast<double>(out_channels), width_mult)),
      num_layers(adjust_depth(num_layers, depth_mult)) {}

int64_t MBConvConfig::adjust_channels(double channels, double width_mult, std::optional<int64_t> min_value) {
  return make_divisible(channels * width_mult, 8, min_value);
}

int64_t MBConvConfig::adjust_depth(int64_t num_layers, double depth_mult) {
  return static_cast<int64_t>(std::ceil(static_cast<double>(num_layers) * depth_mult));
}

namespace {

ActivationFactory silu() {
  return [] { return std::make_shared<nn::SiLU>(); };
}

}  // namespace

MBConv::MBConv(const MBConvConfig& cnf, double stochastic_depth_prob, NormLayerFactory norm_layer)
    : use_res_connect(cnf.stride == 1 && cnf.input_channels == cnf.out_channels), out_channels(cnf.out_channels) {
  EMBER_CHECK(cnf.stride >= 1 && cnf.stride <= 2, "illegal stride value");
  if (!norm_layer) norm_layer = batch_norm2d_factory();
  auto layers = std::make_shared<nn::Sequential>();
  const int64_t expanded_channels =
      MBConvConfig::adjust_channels(static_cast<double>(cnf.input_channels), cnf.expand_ratio);
  if (expanded_channels != cnf.input_channels) {
    layers->push_back(std::make_shared<Conv2dNormActivation>(
        cnf.input_channels, expanded_channels,
        Conv2dNormActivationOptions{.kernel_size = 1, .norm_layer = norm_layer, .activation_layer = silu()}));
  }
  // The depthwise convolution: one kxk filter per channel.
  layers->push_back(std::make_shared<Conv2dNormActivation>(expanded_channels, expanded_channels,
                                                           Conv2dNormActivationOptions{.kernel_size = cnf.kernel,
                                                                                       .stride = cnf.stride,
                                                                                       .groups = expanded_channels,
                                                                                       .norm_layer = norm_layer,
                                                                                       .activation_layer = silu()}));
  const int64_t squeeze_channels = std::max<int64_t>(1, cnf.input_channels / 4);
  layers->push_back(std::make_shared<SqueezeExcitation>(expanded_channels, squeeze_channels, silu()));
  layers->push_back(std::make_shared<Conv2dNormActivation>(
      expanded_channels, cnf.out_channels,
      Conv2dNormActivationOptions{.kernel_size = 1, .norm_layer = norm_layer, .activation_layer = {}}));
  block = register_module("block", std::move(layers));
  stochastic_depth =
      register_module("stochastic_depth", std::make_shared<StochasticDepth>(stochastic_depth_prob, "row"));
}

Tensor MBConv::forward(const Tensor& input) {
  Tensor result = (*block)(input);
  if (use_res_connect) result = (*stochastic_depth)(result) + input;
  return result;
}

EfficientNet::EfficientNet(const std::vector<MBConvConfig>& inverted_residual_setting, EfficientNetOptions options,
                           std::optional<int64_t> last_channel) {
  EMBER_CHECK(!inverted_residual_setting.empty(), "The inverted_residual_setting should not be empty");
  EMBER_CHECK(options.num_classes >= 1, "EfficientNet: num_classes must be positive, got ", options.num_classes);
  NormLayerFactory norm_layer = options.norm_layer ? options.norm_layer : batch_norm2d_factory();

  auto layers = std::make_shared<nn::Sequential>();
  const int64_t firstconv_output_channels = inverted_residual_setting.front().input_channels;
  layers->push_back(std::make_shared<Conv2dNormActivation>(
      3, firstconv_output_channels,
      Conv2dNormActivationOptions{.stride = 2, .norm_layer = norm_layer, .activation_layer = silu()}));
  int64_t total_stage_blocks = 0;
  for (const auto& cnf : inverted_residual_setting) total_stage_blocks += cnf.num_layers;
  int64_t stage_block_id = 0;
  for (const auto& cnf : inverted_residual_setting) {
    auto stage = std::make_shared<nn::Sequential>();
    for (int64_t i = 0; i < cnf.num_layers; ++i) {
      MBConvConfig block_cnf = cnf;
      if (i > 0) {  // later blocks of a stage keep its channels and resolution
        block_cnf.input_channels = block_cnf.out_channels;
        block_cnf.stride = 1;
      }
      // Deeper blocks drop more often, linearly from 0 to stochastic_depth_prob.
      const double sd_prob =
          options.stochastic_depth_prob * static_cast<double>(stage_block_id) / static_cast<double>(total_stage_blocks);
      stage->push_back(std::make_shared<MBConv>(block_cnf, sd_prob, norm_layer));
      ++stage_block_id;
    }
    layers->push_back(stage);
  }
  const int64_t lastconv_input_channels = inverted_residual_setting.back().out_channels;
  const int64_t lastconv_output_channels = last_channel.value_or(4 * lastconv_input_channels);
  layers->push_back(std::make_shared<Conv2dNormActivation>(
      lastconv_input_channels, lastconv_output_channels,
      Conv2dNormActivationOptions{.kernel_size = 1, .norm_layer = norm_layer, .activation_layer = silu()}));
  features = register_module("features", std::move(layers));
  avgpool = register_module("avgpool", std::make_shared<nn::AdaptiveAvgPool2d>(1));
  classifier = register_module(
      "classifier",
      std::make_shared<nn::Sequential>(std::make_shared<nn::Dropout>(options.dropout, true),
                                       std::make_shared<nn::Linear>(lastconv_output_channels, options.num_classes)));

  // torchvision redraws in modules() order (depth first) after every layer drew its default
  // initialisation on construction: the same sequence of draws from the generator.
  for (const auto& module : modules()) {
    if (auto conv = std::dynamic_pointer_cast<nn::Conv2d>(module)) {
      nn::init::kaiming_normal_(conv->weight, 0.0, "fan_out");
      if (conv->bias.defined()) nn::init::zeros_(conv->bias);
    } else if (auto bn = std::dynamic_pointer_cast<nn::BatchNorm2d>(module)) {
      if (bn->weight.defined()) nn::init::ones_(bn->weight);
      if (bn->bias.defined()) nn::init::zeros_(bn->bias);
    } else if (auto gn = std::dynamic_pointer_cast<nn::GroupNorm>(module)) {
      if (gn->weight.defined()) nn::init::ones_(gn->weight);
      if (gn->bias.defined()) nn::init::zeros_(gn->bias);
    } else if (auto linear = std::dynamic_pointer_cast<nn::Linear>(module)) {
      const double init_range = 1.0 / std::sqrt(static_cast<double>(linear->weight.size(0)));
      nn::init::uniform_(linear->weight, -init_range, init_range);
      if (linear->bias.defined()) nn::init::zeros_(linear->bias);
    }
  }
}

Tensor EfficientNet::forward(const Tensor& input) {
  const Tensor x = (*avgpool)((*features)(input));
  return (*classifier)(x.flatten(1));
}

std::vector<MBConvConfig> efficientnet_b_setting(double width_mult, double depth_mult) {
  auto stage = [&](double expand_ratio, int64_t kernel, int64_t stride, int64_t in, int64_t out, int64_t layers) {
    return MBConvConfig(expand_ratio, kernel, stride, in, out, layers, width_mult, depth_mult);
  };
  return {stage(1, 3, 1, 32, 16, 1),  stage(6, 3, 2, 16, 24, 2),  stage(6, 5, 2, 24, 40, 2),
          stage(6, 3, 2, 40, 80, 3),  stage(6, 5, 1, 80, 112, 3), stage(6, 5, 2, 112, 192, 4),
          stage(6, 3, 1, 192, 320, 1)};
}

std::shared_ptr<EfficientNet> efficientnet_b0(EfficientNetOptions options) {
  return std::make_shared<EfficientNet>(efficientnet_b_setting(1.0, 1.0), std::move(options));
}

}  // namespace ember::models
