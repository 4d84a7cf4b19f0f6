// Initialisers, with PyTorch's formulas (torch/nn/init.py) and its generator draws (the
// in-place random fills of src/ops/random.cpp).
#include "ember/nn/init.h"

#include <cmath>

#include "core/check.h"
#include "core/tensor_internal.h"
#include "ember/autograd.h"
#include "ops/random.h"

namespace ember::nn::init {

namespace {

int64_t chosen_fan(const Tensor& tensor, const std::string& mode) {
  EMBER_CHECK(mode == "fan_in" || mode == "fan_out", "Mode ", mode,
              " not supported, please use one of fan_in, fan_out");
  auto [fan_in, fan_out] = calculate_fan_in_and_fan_out(tensor);
  return mode == "fan_in" ? fan_in : fan_out;
}

}  // namespace

double calculate_gain(const std::string& nonlinearity, std::optional<double> param) {
  if (nonlinearity == "linear" || nonlinearity == "sigmoid" || nonlinearity.starts_with("conv")) return 1.0;
  if (nonlinearity == "tanh") return 5.0 / 3.0;
  if (nonlinearity == "relu") return std::sqrt(2.0);
  if (nonlinearity == "leaky_relu") {
    const double slope = param.value_or(0.01);
    return std::sqrt(2.0 / (1.0 + slope * slope));
  }
  if (nonlinearity == "selu") return 3.0 / 4.0;
  detail::fail("Unsupported nonlinearity ", nonlinearity);
}

std::pair<int64_t, int64_t> calculate_fan_in_and_fan_out(const Tensor& tensor) {
  EMBER_CHECK(tensor.dim() >= 2, "Fan in and fan out can not be computed for tensor with fewer than 2 dimensions");
  int64_t receptive_field = 1;
  for (int64_t d = 2; d < tensor.dim(); ++d) receptive_field *= tensor.size(d);
  return {tensor.size(1) * receptive_field, tensor.size(0) * receptive_field};
}

Tensor uniform_(const Tensor& tensor, double low, double high) { return ember::detail::uniform_(tensor, low, high); }

Tensor normal_(const Tensor& tensor, double mean, double std) { return ember::detail::normal_(tensor, mean, std); }

Tensor constant_(const Tensor& tensor, double value) {
  detail::check_defined(tensor, "constant_");
  NoGradGuard no_grad;
  Tensor target = tensor;
  target.fill_(value);
  return tensor;
}

Tensor zeros_(const Tensor& tensor) { return constant_(tensor, 0.0); }
Tensor ones_(const Tensor& tensor) { return constant_(tensor, 1.0); }

Tensor kaiming_uniform_(const Tensor& tensor, double a, const std::string& mode, const std::string& nonlinearity) {
  const int64_t fan = chosen_fan(tensor, mode);
  if (tensor.numel() == 0) return tensor;  // PyTorch warns and leaves it alone
  const double gain = calculate_gain(nonlinearity, a);
  const double bound = std::sqrt(3.0) * (gain / std::sqrt(static_cast<double>(fan)));
  return uniform_(tensor, -bound, bound);
}

Tensor kaiming_normal_(const Tensor& tensor, double a, const std::string& mode, const std::string& nonlinearity) {
  const int64_t fan = chosen_fan(tensor, mode);
  if (tensor.numel() == 0) return tensor;
  const double gain = calculate_gain(nonlinearity, a);
  return normal_(tensor, 0.0, gain / std::sqrt(static_cast<double>(fan)));
}

Tensor xavier_uniform_(const Tensor& tensor, double gain) {
  auto [fan_in, fan_out] = calculate_fan_in_and_fan_out(tensor);
  const double std = gain * std::sqrt(2.0 / static_cast<double>(fan_in + fan_out));
  const double bound = std::sqrt(3.0) * std;
  return uniform_(tensor, -bound, bound);
}

Tensor xavier_normal_(const Tensor& tensor, double gain) {
  auto [fan_in, fan_out] = calculate_fan_in_and_fan_out(tensor);
  return normal_(tensor, 0.0, gain * std::sqrt(2.0 / static_cast<double>(fan_in + fan_out)));
}

}  // namespace ember::nn::init
