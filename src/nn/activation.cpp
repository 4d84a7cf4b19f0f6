// torch.nn's activation layers and their functional forms: argument checks and the in-place
// choice here, the math in ember's ops (src/ops/activation.cpp).
#include "ember/nn/activation.h"

#include "core/check.h"
#include "ember/factories.h"
#include "ember/grad_mode.h"

namespace ember::nn {
namespace functional {

namespace {

/// The tensor an in-place call writes into: the caller's own, so that its handle sees the change.
Tensor& written(const Tensor& input) { return const_cast<Tensor&>(input); }

}  // namespace

Tensor elu(const Tensor& input, double alpha, bool inplace) {
  return inplace ? ember::elu_(written(input), alpha) : ember::elu(input, alpha);
}
Tensor selu(const Tensor& input, bool inplace) { return inplace ? ember::selu_(written(input)) : ember::selu(input); }
Tensor celu(const Tensor& input, double alpha, bool inplace) {
  return inplace ? ember::celu_(written(input), alpha) : ember::celu(input, alpha);
}
Tensor leaky_relu(const Tensor& input, double negative_slope, bool inplace) {
  return inplace ? ember::leaky_relu_(written(input), negative_slope) : ember::leaky_relu(input, negative_slope);
}
Tensor hardtanh(const Tensor& input, double min_val, double max_val, bool inplace) {
  return inplace ? ember::hardtanh_(written(input), min_val, max_val) : ember::hardtanh(input, min_val, max_val);
}
Tensor relu6(const Tensor& input, bool inplace) {
  return inplace ? ember::hardtanh_(written(input), 0.0, 6.0) : ember::relu6(input);
}
Tensor threshold(const Tensor& input, double threshold, double value, bool inplace) {
  return inplace ? ember::threshold_(written(input), threshold, value) : ember::threshold(input, threshold, value);
}
Tensor hardsigmoid(const Tensor& input, bool inplace) {
  return inplace ? ember::hardsigmoid_(written(input)) : ember::hardsigmoid(input);
}
Tensor hardswish(const Tensor& input, bool inplace) {
  return inplace ? ember::hardswish_(written(input)) : ember::hardswish(input);
}
Tensor mish(const Tensor& input, bool inplace) { return inplace ? ember::mish_(written(input)) : ember::mish(input); }
Tensor rrelu(const Tensor& input, double lower, double upper, bool training, bool inplace) {
  return inplace ? ember::rrelu_(written(input), lower, upper, training) : ember::rrelu(input, lower, upper, training);
}
Tensor softplus(const Tensor& input, double beta, double threshold) { return ember::softplus(input, beta, threshold); }
Tensor hardshrink(const Tensor& input, double lambd) { return ember::hardshrink(input, lambd); }
Tensor softshrink(const Tensor& input, double lambd) { return ember::softshrink(input, lambd); }
Tensor logsigmoid(const Tensor& input) { return ember::logsigmoid(input); }
Tensor softsign(const Tensor& input) { return ember::softsign(input); }
Tensor tanhshrink(const Tensor& input) { return ember::tanhshrink(input); }
Tensor glu(const Tensor& input, int64_t dim) { return ember::glu(input, dim); }
Tensor prelu(const Tensor& input, const Tensor& weight) { return ember::prelu(input, weight); }
Tensor softmin(const Tensor& input, int64_t dim) { return ember::softmin(input, dim); }

}  // namespace functional

Hardtanh::Hardtanh(double min_val, double max_val, bool inplace)
    : min_val(min_val), max_val(max_val), inplace(inplace) {
  EMBER_CHECK(max_val > min_val, "max_val must be greater than min_val");
}

RReLU::RReLU(double lower, double upper, bool inplace) : lower(lower), upper(upper), inplace(inplace) {
  EMBER_CHECK(lower <= upper, "Lower bound should be less than or equal to the upper bound");
}

PReLU::PReLU(int64_t num_parameters, double init) : num_parameters(num_parameters), init(init) {
  EMBER_CHECK(num_parameters >= 1, "PReLU: num_parameters must be at least 1, got ", num_parameters);
  weight = register_parameter("weight", empty({num_parameters}));
  reset_parameters();
}

void PReLU::reset_parameters() {
  NoGradGuard no_grad;
  weight.fill_(init);
}

Tensor Softmax2d::forward(const Tensor& input) {
  EMBER_CHECK(input.dim() == 3 || input.dim() == 4, "Softmax2d: expected input to be 3D or 4D, got ", input.dim(),
              "D instead");
  return ember::softmax(input, -3);
}

}  // namespace ember::nn
