// The activations beyond ReLU, GELU, SiLU, tanh and sigmoid: the ones with parameters run as one
// backend call each way (ActivationOp, kernels/activation_ops.h), the rest are composed from ops
// as PyTorch composes them (softsign, tanhshrink, glu, prelu, rrelu, softmin).
#include <cmath>
#include <vector>

#include "autograd/node.h"
#include "backend/backend.h"
#include "core/check.h"
#include "core/tensor_internal.h"
#include "ember/factories.h"
#include "ember/grad_mode.h"
#include "ember/ops.h"
#include "ops/elementwise.h"
#include "ops/infer.h"

namespace ember {

using autograd::SavedTensor;
using detail::check_defined;
using detail::make_tensor;

namespace {

// SELU's constants (Klambauer et al. 2017), as PyTorch spells them.
constexpr double kSeluAlpha = 1.6732632423543772848170429916717;
constexpr double kSeluScale = 1.0507009873554804934193349852946;

/// The gradient as ops, for a backward pass that records itself (create_graph), so that it can be
/// differentiated again; the same formulas as kernels/activation_ops.h's backward functors.
Tensor composed_backward(ActivationOp op, const Tensor& g, const Tensor& x, const ActivationArgs& args) {
  const double* p = args.p;
  Tensor zero = zeros_like(g);
  switch (op) {
    case ActivationOp::Elu: {
      // The exponential's own derivative counts only where x < 0: at x = 0 the gradient takes the
      // negative branch's value but, as PyTorch's elu_double_backward, no second derivative.
      Tensor inside = where(x < 0, x, x.detach());
      return where(x <= 0, g * (p[2] * p[0] * p[1]) * exp(inside * p[2]), g * p[1]);
    }
    case ActivationOp::LeakyRelu:
      return where(x > 0, g, g * p[0]);
    case ActivationOp::Hardtanh:
      return where(logical_or(x <= p[0], x >= p[1]), zero, g);
    case ActivationOp::Softplus: {
      // As PyTorch's softplus_double_backward, the second derivative is 0 from beta x = threshold on.
      Tensor z = exp(where(x * p[0] < p[1], x, x.detach()) * p[0]);
      return where(x * p[0] > p[1], g, g * z / (z + 1));
    }
    case ActivationOp::Threshold:
      return where(x <= p[0], zero, g);
    case ActivationOp::Hardshrink:
    case ActivationOp::Softshrink:
      return where(logical_and(x >= -p[0], x <= p[0]), zero, g);
    case ActivationOp::Hardsigmoid:
      return where(logical_and(x > -3.0, x < 3.0), g * static_cast<double>(1.0f / 6.0f), zero);
    case ActivationOp::Hardswish:
      return where(x <= -3.0, zero, where(x < 3.0, g * (x / 3.0 + 0.5), g));
    case ActivationOp::Mish: {
      Tensor s = sigmoid(x);
      Tensor t = tanh(log1p(exp(x)));
      return g * (t + x * s * (1 - t * t));
    }
    case ActivationOp::LogSigmoid:
      return g * sigmoid(-x);
  }
  detail::fail("[activation] unknown op ", static_cast<int>(op));
}

/// PyTorch's name for the backward node of each op (SELU and CELU are ELUs, ReLU6 a hardtanh).
const char* node_name(ActivationOp op) {
  switch (op) {
    case ActivationOp::Elu:
      return "EluBackward0";
    case ActivationOp::LeakyRelu:
      return "LeakyReluBackward0";
    case ActivationOp::Hardtanh:
      return "HardtanhBackward0";
    case ActivationOp::Softplus:
      return "SoftplusBackward0";
    case ActivationOp::Threshold:
      return "ThresholdBackward0";
    case ActivationOp::Hardshrink:
      return "HardshrinkBackward0";
    case ActivationOp::Softshrink:
      return "SoftshrinkBackward0";
    case ActivationOp::Hardsigmoid:
      return "HardsigmoidBackward0";
    case ActivationOp::Hardswish:
      return "HardswishBackward0";
    case ActivationOp::Mish:
      return "MishBackward0";
    case ActivationOp::LogSigmoid:
      return "LogSigmoidBackward0";
  }
  return "?";
}

Tensor activation_backward(ActivationOp op, const Tensor& g, const Tensor& x, const ActivationArgs& args) {
  if (GradMode::is_enabled()) return composed_backward(op, g, x, args);
  Tensor grad_x = make_tensor(x.sizes(), x.dtype(), x.device());
  const Tensor expanded = ops::prepare_operand(g, x.dtype(), x.sizes(), x.device());
  backend_for(x.device()).activation_backward(op, view_of(expanded), view_of(x), args, view_of(grad_x));
  return grad_x;
}

Tensor activation(ActivationOp op, const Tensor& x, ActivationArgs args, const char* name = nullptr) {
  if (name == nullptr) name = op_name(op);
  detail::OpContext context(name, {{"input", &x}});
  check_defined(x, name);
  EMBER_CHECK(x.is_floating_point(), "\"", name, "\" not implemented for '", scalar_type_name(x.dtype()), "'");
  Tensor out = make_tensor(x.sizes(), x.dtype(), x.device());
  backend_for(x.device()).activation(op, view_of(x), args, view_of(out));
  if (autograd::needs_grad({&x})) {
    autograd::record(out, node_name(op), {&x}, [sx = SavedTensor(x), op, args](const Tensor& g) {
      return std::vector<Tensor>{activation_backward(op, g, sx.get(), args)};
    });
  }
  return out;
}

ActivationArgs args_of(double a = 0.0, double b = 0.0, double c = 0.0) { return ActivationArgs{{a, b, c}}; }

/// The in-place form of `op`: computes out of place (from a copy while recording, since the
/// backward reads the input) and writes the result into x.
template <typename Op>
Tensor& in_place(Tensor& x, const char* name, const Op& op) {
  detail::OpContext context(name, {{"self", &x}});
  check_defined(x, name);
  return ops::assign_result(x, op(autograd::needs_grad({&x}) ? x.clone() : x), name);
}

}  // namespace

Tensor elu(const Tensor& x, double alpha) { return activation(ActivationOp::Elu, x, args_of(alpha, 1.0, 1.0)); }
Tensor selu(const Tensor& x) { return activation(ActivationOp::Elu, x, args_of(kSeluAlpha, kSeluScale, 1.0), "selu"); }
Tensor celu(const Tensor& x, double alpha) {
  EMBER_CHECK(alpha != 0.0, "ZeroDivisionError from celu: alpha cannot be 0.");
  return activation(ActivationOp::Elu, x, args_of(alpha, 1.0, 1.0 / alpha), "celu");
}
Tensor leaky_relu(const Tensor& x, double negative_slope) {
  return activation(ActivationOp::LeakyRelu, x, args_of(negative_slope));
}
Tensor hardtanh(const Tensor& x, double min_val, double max_val) {
  EMBER_CHECK(min_val <= max_val, "min_val cannot be greater than max_val");
  return activation(ActivationOp::Hardtanh, x, args_of(min_val, max_val));
}
Tensor relu6(const Tensor& x) { return activation(ActivationOp::Hardtanh, x, args_of(0.0, 6.0), "relu6"); }
Tensor softplus(const Tensor& x, double beta, double threshold) {
  return activation(ActivationOp::Softplus, x, args_of(beta, threshold));
}
Tensor threshold(const Tensor& x, double threshold, double value) {
  return activation(ActivationOp::Threshold, x, args_of(threshold, value));
}
Tensor hardshrink(const Tensor& x, double lambd) { return activation(ActivationOp::Hardshrink, x, args_of(lambd)); }
Tensor softshrink(const Tensor& x, double lambd) {
  EMBER_CHECK(lambd >= 0, "lambda must be greater or equal to 0, but found to be ", detail::python_float(lambd), ".");
  return activation(ActivationOp::Softshrink, x, args_of(lambd));
}
Tensor hardsigmoid(const Tensor& x) { return activation(ActivationOp::Hardsigmoid, x, args_of()); }
Tensor hardswish(const Tensor& x) { return activation(ActivationOp::Hardswish, x, args_of()); }
Tensor mish(const Tensor& x) { return activation(ActivationOp::Mish, x, args_of()); }
Tensor logsigmoid(const Tensor& x) { return activation(ActivationOp::LogSigmoid, x, args_of()); }

Tensor softsign(const Tensor& x) { return x / (abs(x) + 1); }
Tensor tanhshrink(const Tensor& x) { return x - tanh(x); }

Tensor glu(const Tensor& x, int64_t dim) {
  detail::OpContext context("glu", {{"input", &x}});
  check_defined(x, "glu");
  EMBER_CHECK(x.dim() > 0, "glu does not support scalars because halving size must be even");
  const int64_t d = dim < 0 ? dim + x.dim() : dim;
  EMBER_CHECK(d >= 0 && d < x.dim(), "Dimension out of range (expected to be in range of [", -x.dim(), ", ",
              x.dim() - 1, "], but got ", dim, ")");
  const int64_t size = x.size(d);
  EMBER_CHECK(size % 2 == 0, "Halving dimension must be even, but dimension ", d, " is size ", size);
  return x.narrow(d, 0, size / 2) * sigmoid(x.narrow(d, size / 2, size / 2));
}

Tensor prelu(const Tensor& x, const Tensor& weight) {
  detail::OpContext context("prelu", {{"input", &x}, {"weight", &weight}});
  check_defined(x, "prelu");
  check_defined(weight, "prelu");
  EMBER_CHECK(weight.dim() <= 1,
              "prelu: Expected `weight` to be a scalar or 1D tensor, but got: ndim = ", weight.dim());
  const int64_t channels = x.dim() >= 2 ? x.size(1) : 1;
  const int64_t n = weight.numel();
  EMBER_CHECK(n == 1 || n == channels,
              "Mismatch of parameter numbers and input channel size. Found parameter numbers = ", n,
              " and channel size = ", channels, ".");
  EMBER_CHECK(x.dim() > 0 || n == 1, "Not allow zero-dim input tensor.");
  // The weight lines up with dimension 1: [C] becomes [C, 1, ..., 1].
  Tensor w = weight;
  if (n != 1 && x.dim() >= 2) {
    std::vector<int64_t> shape(static_cast<size_t>(x.dim() - 1), 1);
    shape[0] = n;
    w = weight.reshape(shape);
  } else if (n == 1) {
    w = weight.reshape({});
  }
  return where(x > 0, x, w * x);
}

Tensor rrelu(const Tensor& x, double lower, double upper, bool training) {
  detail::OpContext context("rrelu", {{"input", &x}});
  check_defined(x, "rrelu");
  EMBER_CHECK(lower <= upper, "Lower bound should be less than or equal to the upper bound");
  if (!training) return activation(ActivationOp::LeakyRelu, x, args_of((lower + upper) / 2.0), "rrelu");
  EMBER_CHECK(x.is_floating_point(), "\"rrelu\" not implemented for '", scalar_type_name(x.dtype()), "'");
  // One slope per element, drawn from U(lower, upper) for the negative ones (1 elsewhere), as
  // PyTorch's noise tensor; the gradient is that slope.
  Tensor slope;
  {
    NoGradGuard no_grad;
    Tensor drawn = rand(x.sizes(), TensorOptions().dtype(x.dtype()).device(x.device())) * (upper - lower) + lower;
    slope = where(x > 0, ones_like(x), drawn);
  }
  return x * slope;
}

Tensor softmin(const Tensor& x, int64_t dim) { return softmax(-x, dim); }

Tensor& elu_(Tensor& x, double alpha) {
  return in_place(x, "elu", [&](const Tensor& v) { return elu(v, alpha); });
}
Tensor& selu_(Tensor& x) {
  return in_place(x, "selu", [](const Tensor& v) { return selu(v); });
}
Tensor& celu_(Tensor& x, double alpha) {
  return in_place(x, "celu", [&](const Tensor& v) { return celu(v, alpha); });
}
Tensor& leaky_relu_(Tensor& x, double negative_slope) {
  return in_place(x, "leaky_relu", [&](const Tensor& v) { return leaky_relu(v, negative_slope); });
}
Tensor& hardtanh_(Tensor& x, double min_val, double max_val) {
  return in_place(x, "hardtanh", [&](const Tensor& v) { return hardtanh(v, min_val, max_val); });
}
Tensor& threshold_(Tensor& x, double threshold_value, double value) {
  return in_place(x, "threshold", [&](const Tensor& v) { return threshold(v, threshold_value, value); });
}
Tensor& hardsigmoid_(Tensor& x) {
  return in_place(x, "hardsigmoid", [](const Tensor& v) { return hardsigmoid(v); });
}
Tensor& hardswish_(Tensor& x) {
  return in_place(x, "hardswish", [](const Tensor& v) { return hardswish(v); });
}
Tensor& mish_(Tensor& x) {
  return in_place(x, "mish", [](const Tensor& v) { return mish(v); });
}
Tensor& rrelu_(Tensor& x, double lower, double upper, bool training) {
  return in_place(x, "rrelu", [&](const Tensor& v) { return rrelu(v, lower, upper, training); });
}

}  // namespace ember
