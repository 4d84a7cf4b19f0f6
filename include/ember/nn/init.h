#pragma once
/// ember::nn::init: in-place initialisers (torch.nn.init). Each runs without recording a graph,
/// draws from ember's global generator exactly as PyTorch's CPU generator would, and returns
/// the tensor it filled.
#include <cstdint>
#include <optional>
#include <string>
#include <utility>

#include "ember/tensor.h"

namespace ember::nn::init {

/// PyTorch's recommended gain for a nonlinearity: "linear", "conv*", "sigmoid" → 1, "tanh" → 5/3,
/// "relu" → √2, "leaky_relu" → √(2 / (1 + param²)) (param defaults to 0.01), "selu" → 3/4.
double calculate_gain(const std::string& nonlinearity, std::optional<double> param = std::nullopt);
/// (fan_in, fan_out) of a weight with at least two dimensions: [out, in, *receptive field].
std::pair<int64_t, int64_t> calculate_fan_in_and_fan_out(const Tensor& tensor);

Tensor uniform_(const Tensor& tensor, double low = 0.0, double high = 1.0);
Tensor normal_(const Tensor& tensor, double mean = 0.0, double std = 1.0);
Tensor constant_(const Tensor& tensor, double value);
Tensor zeros_(const Tensor& tensor);
Tensor ones_(const Tensor& tensor);
/// mode is "fan_in" or "fan_out"; a is the negative slope for leaky_relu.
Tensor kaiming_uniform_(const Tensor& tensor, double a = 0.0, const std::string& mode = "fan_in",
                        const std::string& nonlinearity = "leaky_relu");
Tensor kaiming_normal_(const Tensor& tensor, double a = 0.0, const std::string& mode = "fan_in",
                       const std::string& nonlinearity = "leaky_relu");
Tensor xavier_uniform_(const Tensor& tensor, double gain = 1.0);
Tensor xavier_normal_(const Tensor& tensor, double gain = 1.0);

}  // namespace ember::nn::init
