// Unary element-wise ops: each one's dtype rule, one backend call, and its backward formula.
// The math of every op is kernels/elementwise_ops.h's and kernels/math_ops.h's.
#include <cmath>
#include <numbers>
#include <vector>

#include "amp/autocast_policy.h"
#include "autograd/node.h"
#include "backend/backend.h"
#include "core/check.h"
#include "core/tensor_internal.h"
#include "ember/factories.h"
#include "ember/ops.h"
#include "ops/elementwise.h"
#include "ops/infer.h"

namespace ember {

using detail::check_defined;
using detail::make_tensor;
using ops::binary_impl;
using ops::prepare_operand;
using ops::unary;

namespace {

using autograd::SavedTensor;

/// An activation's backward: one fused kernel (`fused`, of the gradient and the saved tensor)
/// when the backward is not itself recorded, the formula as ops (`composed`) when it is
/// (create_graph), so that it can be differentiated again.
template <typename Composed>
Tensor activation_backward(BinaryOp fused, const Tensor& g, const Tensor& saved, const Composed& composed) {
  if (GradMode::is_enabled()) return composed(g, saved);
  return binary_impl(fused, g, saved, g.dtype());
}

void record_unary(UnaryOp op, Tensor& out, const Tensor& x) {
  // The backward formula is stored as is (no std::function inside the node's std::function);
  // x and out are saved only by the formulas that read them.
  auto rec = [&](const char* name, auto f) {
    autograd::record(out, name, {&x}, [f = std::move(f)](const Tensor& g) { return std::vector<Tensor>{f(g)}; });
  };
  constexpr double kInvSqrt2Pi = 0.39894228040143267794;  // 1/sqrt(2*pi)
  switch (op) {
    case UnaryOp::Neg:
      rec("NegBackward0", [](const Tensor& g) { return -g; });
      return;
    case UnaryOp::Abs:
      rec("AbsBackward0", [sx = SavedTensor(x)](const Tensor& g) {
        Tensor v = sx.get();
        return g * (gt(v, zeros_like(v)).to(g.dtype()) - lt(v, zeros_like(v)).to(g.dtype()));
      });
      return;
    case UnaryOp::Exp:
      rec("ExpBackward0", [sout = SavedTensor::output(out)](const Tensor& g) { return g * sout.get(); });
      return;
    case UnaryOp::Log:
      rec("LogBackward0", [sx = SavedTensor(x)](const Tensor& g) { return g / sx.get(); });
      return;
    case UnaryOp::Sqrt:
      rec("SqrtBackward0", [sout = SavedTensor::output(out)](const Tensor& g) { return g / (2 * sout.get()); });
      return;
    case UnaryOp::Rsqrt:
      rec("RsqrtBackward0", [sout = SavedTensor::output(out)](const Tensor& g) {
        Tensor r = sout.get();
        return -0.5 * g * r * r * r;
      });
      return;
    case UnaryOp::Sin:
      rec("SinBackward0", [sx = SavedTensor(x)](const Tensor& g) { return g * cos(sx.get()); });
      return;
    case UnaryOp::Cos:
      rec("CosBackward0", [sx = SavedTensor(x)](const Tensor& g) { return -g * sin(sx.get()); });
      return;
    case UnaryOp::Tanh:
      rec("TanhBackward0", [sout = SavedTensor::output(out)](const Tensor& g) {
        return activation_backward(BinaryOp::TanhBackward, g, sout.get(),
                                   [](const Tensor& grad, const Tensor& t) { return grad * (1 - t * t); });
      });
      return;
    case UnaryOp::Erf:
      rec("ErfBackward0", [sx = SavedTensor(x)](const Tensor& g) {
        Tensor v = sx.get();
        return g * (2 * kInvSqrt2Pi * std::numbers::sqrt2) * exp(-(v * v));
      });
      return;
    case UnaryOp::Sigmoid:
      rec("SigmoidBackward0", [sout = SavedTensor::output(out)](const Tensor& g) {
        return activation_backward(BinaryOp::SigmoidBackward, g, sout.get(),
                                   [](const Tensor& grad, const Tensor& s) { return grad * (1 - s) * s; });
      });
      return;
    case UnaryOp::Relu:
      rec("ReluBackward0", [sout = SavedTensor(out)](const Tensor& g) {
        return binary_impl(BinaryOp::ThresholdBackward, g, sout.get(), g.dtype());
      });
      return;
    case UnaryOp::Gelu:
      rec("GeluBackward0", [sx = SavedTensor(x)](const Tensor& g) {
        return activation_backward(BinaryOp::GeluBackward, g, sx.get(), [](const Tensor& grad, const Tensor& v) {
          Tensor cdf = 0.5 * (1 + erf(v * (1 / std::numbers::sqrt2)));
          Tensor pdf = exp(-0.5 * v * v) * kInvSqrt2Pi;
          return grad * (cdf + v * pdf);
        });
      });
      return;
    case UnaryOp::GeluTanh:
      rec("GeluBackward0", [sx = SavedTensor(x)](const Tensor& g) {
        return activation_backward(BinaryOp::GeluTanhBackward, g, sx.get(), [](const Tensor& grad, const Tensor& v) {
          const double beta = std::numbers::sqrt2 * std::numbers::inv_sqrtpi, kappa = 0.044715;
          Tensor inner = beta * (v + kappa * v * v * v);
          Tensor t = tanh(inner);
          Tensor d_inner = beta * (1 + 3 * kappa * v * v);
          return grad * (0.5 * (1 + t) + 0.5 * v * (1 - t * t) * d_inner);
        });
      });
      return;
    case UnaryOp::Silu:
      rec("SiluBackward0", [sx = SavedTensor(x)](const Tensor& g) {
        return activation_backward(BinaryOp::SiluBackward, g, sx.get(), [](const Tensor& grad, const Tensor& v) {
          Tensor s = sigmoid(v);
          return grad * s * (1 + v * (1 - s));
        });
      });
      return;
    case UnaryOp::Floor:
      rec("FloorBackward0", [](const Tensor& g) { return zeros_like(g); });
      return;
    case UnaryOp::Ceil:
      rec("CeilBackward0", [](const Tensor& g) { return zeros_like(g); });
      return;
    case UnaryOp::Round:
      rec("RoundBackward0", [](const Tensor& g) { return zeros_like(g); });
      return;
    case UnaryOp::Trunc:
      rec("TruncBackward0", [](const Tensor& g) { return zeros_like(g); });
      return;
    case UnaryOp::Sign:
      rec("SignBackward0", [](const Tensor& g) { return zeros_like(g); });
      return;
    case UnaryOp::Frac:
      rec("FracBackward0", [](const Tensor& g) { return g; });
      return;
    case UnaryOp::Log1p:
      rec("Log1PBackward0", [sx = SavedTensor(x)](const Tensor& g) { return g / (sx.get() + 1); });
      return;
    case UnaryOp::Expm1:
      rec("Expm1Backward0", [sout = SavedTensor::output(out)](const Tensor& g) { return g * (sout.get() + 1); });
      return;
    case UnaryOp::Log2:
      rec("Log2Backward0", [sx = SavedTensor(x)](const Tensor& g) { return g / (sx.get() * std::numbers::ln2); });
      return;
    case UnaryOp::Log10:
      rec("Log10Backward0", [sx = SavedTensor(x)](const Tensor& g) { return g / (sx.get() * std::numbers::ln10); });
      return;
    case UnaryOp::Exp2:
      rec("Exp2Backward0",
          [sout = SavedTensor::output(out)](const Tensor& g) { return g * sout.get() * std::numbers::ln2; });
      return;
    case UnaryOp::Reciprocal:
      rec("ReciprocalBackward0", [sout = SavedTensor::output(out)](const Tensor& g) {
        Tensor r = sout.get();
        return -g * r * r;
      });
      return;
    case UnaryOp::Tan:
      rec("TanBackward0", [sout = SavedTensor::output(out)](const Tensor& g) {
        Tensor t = sout.get();
        return g * (1 + t * t);
      });
      return;
    case UnaryOp::Asin:
      rec("AsinBackward0", [sx = SavedTensor(x)](const Tensor& g) {
        Tensor v = sx.get();
        return g * rsqrt(1 - v * v);
      });
      return;
    case UnaryOp::Acos:
      rec("AcosBackward0", [sx = SavedTensor(x)](const Tensor& g) {
        Tensor v = sx.get();
        return g * -rsqrt(1 - v * v);
      });
      return;
    case UnaryOp::Atan:
      rec("AtanBackward0", [sx = SavedTensor(x)](const Tensor& g) {
        Tensor v = sx.get();
        return g / (v * v + 1);
      });
      return;
    case UnaryOp::Sinh:
      rec("SinhBackward0", [sx = SavedTensor(x)](const Tensor& g) { return g * cosh(sx.get()); });
      return;
    case UnaryOp::Cosh:
      rec("CoshBackward0", [sx = SavedTensor(x)](const Tensor& g) { return g * sinh(sx.get()); });
      return;
    case UnaryOp::Asinh:
      rec("AsinhBackward0", [sx = SavedTensor(x)](const Tensor& g) {
        Tensor v = sx.get();
        return g * rsqrt(v * v + 1);
      });
      return;
    case UnaryOp::Acosh:
      rec("AcoshBackward0", [sx = SavedTensor(x)](const Tensor& g) {
        Tensor v = sx.get();
        return g * rsqrt(v * v - 1);
      });
      return;
    case UnaryOp::Atanh:
      rec("AtanhBackward0", [sx = SavedTensor(x)](const Tensor& g) {
        Tensor v = sx.get();
        return g / (1 - v * v);
      });
      return;
    case UnaryOp::Erfc:
      rec("ErfcBackward0", [sx = SavedTensor(x)](const Tensor& g) {
        Tensor v = sx.get();
        return g * (-2 * std::numbers::inv_sqrtpi) * exp(-(v * v));
      });
      return;
    case UnaryOp::Erfinv:
      rec("ErfinvBackward0", [sout = SavedTensor::output(out)](const Tensor& g) {
        Tensor y = sout.get();
        return g * (0.5 / std::numbers::inv_sqrtpi) * exp(y * y);  // sqrt(pi)/2 * exp(erfinv(x)^2)
      });
      return;
    case UnaryOp::Lgamma:
      rec("LgammaBackward0", [sx = SavedTensor(x)](const Tensor& g) { return g * digamma(sx.get()); });
      return;
    case UnaryOp::Digamma:
      rec("DigammaBackward0",
          [sx = SavedTensor(x)](const Tensor& g) { return g * unary(UnaryOp::Trigamma, sx.get()); });
      return;
    case UnaryOp::Trigamma:
      // d/dx polygamma(1, x) is polygamma(2, x), which ember does not compute.
      rec("PolygammaBackward0", [](const Tensor&) -> Tensor {
        detail::fail(
            "the derivative of polygamma(1, x) (digamma's derivative) is not implemented: ember differentiates "
            "digamma once, not twice");
      });
      return;
    case UnaryOp::LogicalNot:
    case UnaryOp::IsFinite:
    case UnaryOp::IsNan:
    case UnaryOp::IsInf:
    case UnaryOp::BitwiseNot:
      return;  // bool and integer results carry no gradient
  }
}

enum class FloatRule { Keep, Promote, FloatingOnly };

FloatRule float_rule(UnaryOp op) {
  switch (op) {
    case UnaryOp::Exp:
    case UnaryOp::Log:
    case UnaryOp::Sqrt:
    case UnaryOp::Rsqrt:
    case UnaryOp::Sin:
    case UnaryOp::Cos:
    case UnaryOp::Tanh:
    case UnaryOp::Sigmoid:
    case UnaryOp::Erf:
    case UnaryOp::Log1p:
    case UnaryOp::Expm1:
    case UnaryOp::Log2:
    case UnaryOp::Log10:
    case UnaryOp::Exp2:
    case UnaryOp::Reciprocal:
    case UnaryOp::Tan:
    case UnaryOp::Asin:
    case UnaryOp::Acos:
    case UnaryOp::Atan:
    case UnaryOp::Sinh:
    case UnaryOp::Cosh:
    case UnaryOp::Asinh:
    case UnaryOp::Acosh:
    case UnaryOp::Atanh:
    case UnaryOp::Erfc:
    case UnaryOp::Erfinv:
    case UnaryOp::Lgamma:
    case UnaryOp::Digamma:
    case UnaryOp::Trigamma:
      return FloatRule::Promote;
    case UnaryOp::Gelu:
    case UnaryOp::GeluTanh:
    case UnaryOp::Silu:
    case UnaryOp::Frac:
      return FloatRule::FloatingOnly;
    default:
      return FloatRule::Keep;
  }
}

}  // namespace

Tensor ops::unary(UnaryOp op, const Tensor& x) {
  detail::OpContext context(op_name(op), {{"input", &x}});
  check_defined(x, op_name(op));
  Dtype compute = x.dtype();
  switch (float_rule(op)) {
    case FloatRule::Promote:
      compute = ops::to_floating(compute);
      break;
    case FloatRule::FloatingOnly:
      EMBER_CHECK(x.is_floating_point(), "\"", op_name(op), "\" not implemented for '", scalar_type_name(x.dtype()),
                  "'");
      break;
    case FloatRule::Keep:
      break;
  }
  EMBER_CHECK(!(op == UnaryOp::Neg && x.dtype() == kBool),
              "Negation, the `-` operator, on a bool tensor is not supported. If you are trying to invert a mask, use "
              "the `~` or `logical_not()` operator instead.");
  const bool predicate =
      op == UnaryOp::LogicalNot || op == UnaryOp::IsFinite || op == UnaryOp::IsNan || op == UnaryOp::IsInf;
  const Dtype out_dtype = predicate ? kBool : compute;
  Tensor out = make_tensor(x.sizes(), out_dtype, x.device());
  backend_for(x.device()).unary(op, view_of(prepare_operand(x, compute, x.sizes(), x.device())), view_of(out));
  if (autograd::needs_grad({&x})) record_unary(op, out, x);
  return out;
}

// ---- free functions ----

Tensor logical_not(const Tensor& a) { return unary(UnaryOp::LogicalNot, a); }
Tensor isfinite(const Tensor& x) { return unary(UnaryOp::IsFinite, x); }
Tensor isnan(const Tensor& x) { return unary(UnaryOp::IsNan, x); }
Tensor isinf(const Tensor& x) { return unary(UnaryOp::IsInf, x); }

Tensor neg(const Tensor& x) { return unary(UnaryOp::Neg, x); }
Tensor abs(const Tensor& x) { return unary(UnaryOp::Abs, x); }
Tensor exp(const Tensor& x) {
  const auto device = amp::detail::autocast_gpu_device(x);  // listed as float32 for CUDA
  return unary(UnaryOp::Exp, device ? amp::detail::cast(x, *device, kFloat) : x);
}
Tensor log(const Tensor& x) {
  const auto device = amp::detail::autocast_gpu_device(x);  // listed as float32 for CUDA
  return unary(UnaryOp::Log, device ? amp::detail::cast(x, *device, kFloat) : x);
}
Tensor sqrt(const Tensor& x) { return unary(UnaryOp::Sqrt, x); }
Tensor rsqrt(const Tensor& x) {
  const auto device = amp::detail::autocast_gpu_device(x);  // listed as float32 for CUDA
  return unary(UnaryOp::Rsqrt, device ? amp::detail::cast(x, *device, kFloat) : x);
}
Tensor sin(const Tensor& x) { return unary(UnaryOp::Sin, x); }
Tensor cos(const Tensor& x) { return unary(UnaryOp::Cos, x); }
Tensor tanh(const Tensor& x) { return unary(UnaryOp::Tanh, x); }
Tensor erf(const Tensor& x) { return unary(UnaryOp::Erf, x); }
Tensor sigmoid(const Tensor& x) { return unary(UnaryOp::Sigmoid, x); }
Tensor relu(const Tensor& x) { return unary(UnaryOp::Relu, x); }
Tensor silu(const Tensor& x) { return unary(UnaryOp::Silu, x); }
Tensor gelu(const Tensor& x, const char* approximate) {
  const std::string_view mode = approximate ? approximate : "none";
  EMBER_CHECK(mode == "none" || mode == "tanh", "approximate argument must be either none or tanh (got '", mode, "')");
  return unary(mode == "tanh" ? UnaryOp::GeluTanh : UnaryOp::Gelu, x);
}

Tensor floor(const Tensor& x) { return unary(UnaryOp::Floor, x); }
Tensor ceil(const Tensor& x) { return unary(UnaryOp::Ceil, x); }
Tensor trunc(const Tensor& x) { return unary(UnaryOp::Trunc, x); }
Tensor frac(const Tensor& x) { return unary(UnaryOp::Frac, x); }
Tensor sign(const Tensor& x) { return unary(UnaryOp::Sign, x); }
Tensor round(const Tensor& x, int64_t decimals) {
  if (decimals == 0) return unary(UnaryOp::Round, x);
  detail::OpContext context("round", {{"input", &x}});
  check_defined(x, "round");
  EMBER_CHECK(x.is_floating_point(), "\"round_decimals\" not implemented for '", scalar_type_name(x.dtype()), "'");
  // PyTorch's round_decimals: scale by 10^|decimals| (dividing when decimals < 0), round half to
  // even, scale back. Its gradient is zero, like round's.
  const double ten_pow = std::pow(10.0, static_cast<double>(decimals > 0 ? decimals : -decimals));
  Tensor out;
  {
    NoGradGuard no_grad;
    out = decimals > 0 ? unary(UnaryOp::Round, x * ten_pow) / ten_pow : unary(UnaryOp::Round, x / ten_pow) * ten_pow;
  }
  if (autograd::needs_grad({&x})) {
    autograd::record(out, "RoundBackward1", {&x}, [](const Tensor& g) { return std::vector<Tensor>{zeros_like(g)}; });
  }
  return out;
}
Tensor log1p(const Tensor& x) { return unary(UnaryOp::Log1p, x); }
Tensor expm1(const Tensor& x) { return unary(UnaryOp::Expm1, x); }
Tensor log2(const Tensor& x) { return unary(UnaryOp::Log2, x); }
Tensor log10(const Tensor& x) { return unary(UnaryOp::Log10, x); }
Tensor exp2(const Tensor& x) { return unary(UnaryOp::Exp2, x); }
Tensor reciprocal(const Tensor& x) { return unary(UnaryOp::Reciprocal, x); }
Tensor square(const Tensor& x) { return pow(x, Scalar(int64_t{2})); }
Tensor tan(const Tensor& x) { return unary(UnaryOp::Tan, x); }
Tensor asin(const Tensor& x) { return unary(UnaryOp::Asin, x); }
Tensor acos(const Tensor& x) { return unary(UnaryOp::Acos, x); }
Tensor atan(const Tensor& x) { return unary(UnaryOp::Atan, x); }
Tensor sinh(const Tensor& x) { return unary(UnaryOp::Sinh, x); }
Tensor cosh(const Tensor& x) { return unary(UnaryOp::Cosh, x); }
Tensor asinh(const Tensor& x) { return unary(UnaryOp::Asinh, x); }
Tensor acosh(const Tensor& x) { return unary(UnaryOp::Acosh, x); }
Tensor atanh(const Tensor& x) { return unary(UnaryOp::Atanh, x); }
Tensor erfc(const Tensor& x) { return unary(UnaryOp::Erfc, x); }
Tensor erfinv(const Tensor& x) { return unary(UnaryOp::Erfinv, x); }
Tensor lgamma(const Tensor& x) { return unary(UnaryOp::Lgamma, x); }
Tensor digamma(const Tensor& x) { return unary(UnaryOp::Digamma, x); }

// ---- Tensor methods ----

Tensor Tensor::neg() const { return ember::neg(*this); }
Tensor Tensor::abs() const { return ember::abs(*this); }
Tensor Tensor::exp() const { return ember::exp(*this); }
Tensor Tensor::log() const { return ember::log(*this); }
Tensor Tensor::sqrt() const { return ember::sqrt(*this); }
Tensor Tensor::rsqrt() const { return ember::rsqrt(*this); }
Tensor Tensor::tanh() const { return ember::tanh(*this); }
Tensor Tensor::sigmoid() const { return ember::sigmoid(*this); }
Tensor Tensor::relu() const { return ember::relu(*this); }
Tensor Tensor::gelu() const { return ember::gelu(*this); }
Tensor Tensor::floor() const { return ember::floor(*this); }
Tensor Tensor::ceil() const { return ember::ceil(*this); }
Tensor Tensor::round(int64_t decimals) const { return ember::round(*this, decimals); }
Tensor Tensor::trunc() const { return ember::trunc(*this); }
Tensor Tensor::frac() const { return ember::frac(*this); }
Tensor Tensor::sign() const { return ember::sign(*this); }
Tensor Tensor::log1p() const { return ember::log1p(*this); }
Tensor Tensor::expm1() const { return ember::expm1(*this); }
Tensor Tensor::log2() const { return ember::log2(*this); }
Tensor Tensor::log10() const { return ember::log10(*this); }
Tensor Tensor::exp2() const { return ember::exp2(*this); }
Tensor Tensor::reciprocal() const { return ember::reciprocal(*this); }
Tensor Tensor::square() const { return ember::square(*this); }
Tensor Tensor::sin() const { return ember::sin(*this); }
Tensor Tensor::cos() const { return ember::cos(*this); }
Tensor Tensor::tan() const { return ember::tan(*this); }
Tensor Tensor::asin() const { return ember::asin(*this); }
Tensor Tensor::acos() const { return ember::acos(*this); }
Tensor Tensor::atan() const { return ember::atan(*this); }
Tensor Tensor::sinh() const { return ember::sinh(*this); }
Tensor Tensor::cosh() const { return ember::cosh(*this); }
Tensor Tensor::asinh() const { return ember::asinh(*this); }
Tensor Tensor::acosh() const { return ember::acosh(*this); }
Tensor Tensor::atanh() const { return ember::atanh(*this); }
Tensor Tensor::erf() const { return ember::erf(*this); }
Tensor Tensor::erfc() const { return ember::erfc(*this); }
Tensor Tensor::erfinv() const { return ember::erfinv(*this); }
Tensor Tensor::lgamma() const { return ember::lgamma(*this); }
Tensor Tensor::digamma() const { return ember::digamma(*this); }

}  // namespace ember
