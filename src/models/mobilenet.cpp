// torchvision's MobileNetV2 and Conv2dNormActivation (see include/ember/models/mobilenet.h), built
// from ember::nn layers.
#include "ember/models/mobilenet.h"

#include <cmath>
#include <sstream>
#include <utility>

#include "core/check.h"
#include "ember/nn/activation.h"
#include "ember/nn/init.h"
#include "ember/ops.h"

namespace ember::models {

int64_t make_divisible(double value, int64_t divisor, std::optional<int64_t> min_value) {
  EMBER_CHECK(divisor >= 1, "make_divisible: divisor must be positive, got ", divisor);
  const int64_t floor_value = min_value.value_or(divisor);
  // Python's int() truncates toward zero, then // floors: both floor for the non-negative values
  // channel counts are.
  const auto rounded = static_cast<int64_t>(value + static_cast<double>(divisor) / 2.0) / divisor * divisor;
  int64_t result = std::max(floor_value, rounded);
  if (static_cast<double>(result) < 0.9 * value) result += divisor;
  return result;
}

NormLayerFactory batch_norm2d_factory(nn::BatchNormOptions options) {
  return [options](int64_t channels) { return std::make_shared<nn::BatchNorm2d>(channels, options); };
}

Conv2dNormActivation::Conv2dNormActivation(int64_t in_channels, int64_t out_channels,
                                           Conv2dNormActivationOptions options)
    : out_channels(out_channels) {
  const int64_t padding = options.padding.value_or((options.kernel_size - 1) / 2 * options.dilation);
  const bool bias = options.bias.value_or(!options.norm_layer);
  push_back(std::make_shared<nn::Conv2d>(in_channels, out_channels, options.kernel_size,
                                         nn::Conv2dOptions{.stride = options.stride,
                                                           .padding = padding,
                                                           .dilation = options.dilation,
                                                           .groups = options.groups,
                                                           .bias = bias}));
  if (options.norm_layer) push_back(options.norm_layer(out_channels));
  if (options.activation_layer) push_back(options.activation_layer());
}

namespace {

ActivationFactory relu6() {
  return [] { return std::make_shared<nn::ReLU6>(true); };
}

/// Python's repr of a list of int lists, "[[1, 16, 1]]", for torchvision's message.
std::string list_repr(const std::vector<std::vector<int64_t>>& rows) {
  std::ostringstream os;
  os << "[";
  for (size_t i = 0; i < rows.size(); ++i) {
    os << (i ? ", " : "") << "[";
    for (size_t j = 0; j < rows[i].size(); ++j) os << (j ? ", " : "") << rows[i][j];
    os << "]";
  }
  os << "]";
  return os.str();
}

}  // namespace

InvertedResidual::InvertedResidual(int64_t inp, int64_t oup, int64_t stride, int64_t expand_ratio,
                                   NormLayerFactory norm_layer)
    : stride(stride), use_res_connect(stride == 1 && inp == oup), out_channels(oup) {
  EMBER_CHECK(stride == 1 || stride == 2, "stride should be 1 or 2 instead of ", stride);
  if (!norm_layer) norm_layer = batch_norm2d_factory();
  const int64_t hidden_dim = inp * expand_ratio;  // torchvision's int(round(inp * expand_ratio)) of ints
  EMBER_CHECK(hidden_dim >= 1, "InvertedResidual: inp * expand_ratio must be positive, got inp=", inp,
              ", expand_ratio=", expand_ratio);
  auto layers = std::make_shared<nn::Sequential>();
  if (expand_ratio != 1) {
    layers->push_back(std::make_shared<Conv2dNormActivation>(
        inp, hidden_dim,
        Conv2dNormActivationOptions{.kernel_size = 1, .norm_layer = norm_layer, .activation_layer = relu6()}));
  }
  // The depthwise convolution: one 3x3 filter per channel.
  layers->push_back(std::make_shared<Conv2dNormActivation>(
      hidden_dim, hidden_dim,
      Conv2dNormActivationOptions{
          .stride = stride, .groups = hidden_dim, .norm_layer = norm_layer, .activation_layer = relu6()}));
  layers->push_back(std::make_shared<nn::Conv2d>(hidden_dim, oup, 1, nn::Conv2dOptions{.bias = false}));
  layers->push_back(norm_layer(oup));
  conv = register_module("conv", std::move(layers));
}

Tensor InvertedResidual::forward(const Tensor& input) {
  if (use_res_connect) return input + (*conv)(input);
  return (*conv)(input);
}

MobileNetV2::MobileNetV2(MobileNetV2Options options) {
  NormLayerFactory norm_layer = options.norm_layer ? options.norm_layer : batch_norm2d_factory();
  const std::vector<std::vector<int64_t>> setting =
      options.inverted_residual_setting.value_or(std::vector<std::vector<int64_t>>{
          {1, 16, 1, 1}, {6, 24, 2, 2}, {6, 32, 3, 2}, {6, 64, 4, 2}, {6, 96, 3, 1}, {6, 160, 3, 2}, {6, 320, 1, 1}});
  EMBER_CHECK(!setting.empty() && setting[0].size() == 4,
              "inverted_residual_setting should be non-empty or a 4-element list, got ", list_repr(setting));
  for (const auto& row : setting) {
    // Python fails to unpack a later row of another length; ember says which.
    EMBER_CHECK(row.size() == 4, "MobileNetV2: every inverted_residual_setting row needs 4 values (t, c, n, s), got ",
                list_repr({row}));
  }
  EMBER_CHECK(options.num_classes >= 1, "MobileNetV2: num_classes must be positive, got ", options.num_classes);
  EMBER_CHECK(options.width_mult > 0.0, "MobileNetV2: width_mult must be positive, got ",
              detail::python_float(options.width_mult));

  int64_t input_channel = make_divisible(32 * options.width_mult, options.round_nearest);
  last_channel = make_divisible(1280 * std::max(1.0, options.width_mult), options.round_nearest);
  auto feature_layers = std::make_shared<nn::Sequential>();
  feature_layers->push_back(std::make_shared<Conv2dNormActivation>(
      3, input_channel,
      Conv2dNormActivationOptions{.stride = 2, .norm_layer = norm_layer, .activation_layer = relu6()}));
  for (const auto& row : setting) {
    const int64_t t = row[0], c = row[1], n = row[2], s = row[3];
    const int64_t output_channel = make_divisible(static_cast<double>(c) * options.width_mult, options.round_nearest);
    for (int64_t i = 0; i < n; ++i) {
      feature_layers->push_back(
          std::make_shared<InvertedResidual>(input_channel, output_channel, i == 0 ? s : 1, t, norm_layer));
      input_channel = output_channel;
    }
  }
  feature_layers->push_back(std::make_shared<Conv2dNormActivation>(
      input_channel, last_channel,
      Conv2dNormActivationOptions{.kernel_size = 1, .norm_layer = norm_layer, .activation_layer = relu6()}));
  features = register_module("features", std::move(feature_layers));
  classifier = register_module(
      "classifier", std::make_shared<nn::Sequential>(std::make_shared<nn::Dropout>(options.dropout),
                                                     std::make_shared<nn::Linear>(last_channel, options.num_classes)));

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
      nn::init::normal_(linear->weight, 0.0, 0.01);
      if (linear->bias.defined()) nn::init::zeros_(linear->bias);
    }
  }
}

Tensor MobileNetV2::forward(const Tensor& input) {
  const Tensor x = (*features)(input);
  return (*classifier)(adaptive_avg_pool2d(x, {1, 1}).flatten(1));
}

std::shared_ptr<MobileNetV2> mobilenet_v2(MobileNetV2Options options) {
  return std::make_shared<MobileNetV2>(std::move(options));
}

}  // namespace ember::models
