#pragma once
/// ember::nn::init: in-place initialisers, all of torch.nn.init 2.15. Each runs without recording
/// a graph, draws from ember's global generator in PyTorch's order (on the CPU the same numbers
/// as PyTorch's CPU generator for the same seed, where ember's fills reproduce PyTorch's: uniform
/// draws always; normal draws in float64, and in float32 for fewer than 16 values), and returns
/// the tensor it filled. PyTorch's `generator=` arguments are not offered: ember draws from the
/// global generator of the tensor's device.
#include <cstdint>
#include <optional>
#include <string>
#include <utility>

#include "ember/tensor.h"

namespace ember::nn::init {

/// PyTorch's recommended gain for a nonlinearity: "linear", "conv1d/2d/3d",
/// "conv_transpose1d/2d/3d", "sigmoid" → 1, "tanh" → 5/3, "relu" → √2, "leaky_relu" →
/// √(2 / (1 + param²)) (param, the negative slope, defaults to 0.01), "selu" → 3/4.
double calculate_gain(const std::string& nonlinearity, std::optional<double> param = std::nullopt);
/// (fan_in, fan_out) of a weight with at least two dimensions: [out, in, *receptive field].
std::pair<int64_t, int64_t> calculate_fan_in_and_fan_out(const Tensor& tensor);

/// Uniform on [a, b).
Tensor uniform_(const Tensor& tensor, double a = 0.0, double b = 1.0);
/// N(mean, std²).
Tensor normal_(const Tensor& tensor, double mean = 0.0, double std = 1.0);
/// N(mean, std²) truncated to [a, b], by PyTorch 2.15's rejection sampling: when [a, b] holds
/// more than 30% of the mass, normal draws with the values outside redrawn; otherwise uniform
/// draws on [a, b] accepted with probability pdf(x) / pdf(mode). Warns when mean is more than
/// 2 std from [a, b].
Tensor trunc_normal_(const Tensor& tensor, double mean = 0.0, double std = 1.0, double a = -2.0, double b = 2.0);
Tensor constant_(const Tensor& tensor, double val);
Tensor ones_(const Tensor& tensor);
Tensor zeros_(const Tensor& tensor);
/// The identity matrix, for a 2-D tensor (Linear layers keep their inputs' identity).
Tensor eye_(const Tensor& tensor);
/// The Dirac delta for a 3-, 4- or 5-D convolution weight (the convolution keeps its input's
/// identity), in `groups` groups of output channels.
Tensor dirac_(const Tensor& tensor, int64_t groups = 1);
Tensor xavier_uniform_(const Tensor& tensor, double gain = 1.0);
Tensor xavier_normal_(const Tensor& tensor, double gain = 1.0);
/// mode is "fan_in" or "fan_out" (any case); a is the negative slope for leaky_relu. A tensor
/// with no element is left alone, with PyTorch's warning.
Tensor kaiming_uniform_(const Tensor& tensor, double a = 0.0, const std::string& mode = "fan_in",
                        const std::string& nonlinearity = "leaky_relu");
Tensor kaiming_normal_(const Tensor& tensor, double a = 0.0, const std::string& mode = "fan_in",
                       const std::string& nonlinearity = "leaky_relu");
/// A (semi-)orthogonal matrix, scaled by gain, for a tensor of two or more dimensions (the
/// trailing ones flattened): the Q of a QR decomposition of normal draws, with R's diagonal made
/// positive.
Tensor orthogonal_(const Tensor& tensor, double gain = 1.0);
/// A sparse 2-D matrix: N(0, std²) draws, then in each column ceil(sparsity * rows) entries,
/// chosen by randperm, set to zero.
Tensor sparse_(const Tensor& tensor, double sparsity, double std = 0.01);

/// torch.nn.init's deprecated names without the trailing underscore: each warns, as PyTorch's
/// FutureWarning, and calls the function with it.
Tensor uniform(const Tensor& tensor, double a = 0.0, double b = 1.0);
Tensor normal(const Tensor& tensor, double mean = 0.0, double std = 1.0);
Tensor constant(const Tensor& tensor, double val);
Tensor eye(const Tensor& tensor);
Tensor dirac(const Tensor& tensor, int64_t groups = 1);
Tensor xavier_uniform(const Tensor& tensor, double gain = 1.0);
Tensor xavier_normal(const Tensor& tensor, double gain = 1.0);
Tensor kaiming_uniform(const Tensor& tensor, double a = 0.0, const std::string& mode = "fan_in",
                       const std::string& nonlinearity = "leaky_relu");
Tensor kaiming_normal(const Tensor& tensor, double a = 0.0, const std::string& mode = "fan_in",
                      const std::string& nonlinearity = "leaky_relu");
Tensor orthogonal(const Tensor& tensor, double gain = 1.0);
Tensor sparse(const Tensor& tensor, double sparsity, double std = 0.01);

}  // namespace ember::nn::init
