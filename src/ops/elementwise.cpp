// Binary element-wise ops, where, clamp and masked_fill, the in-place forms and the operators:
// type promotion, broadcasting and device checks, then one backend call. The unary ops are in
// unary.cpp.
#include "ops/elementwise.h"

#include <cmath>
#include <limits>
#include <numbers>

#include "amp/autocast_policy.h"
#include "autograd/node.h"
#include "backend/backend.h"
#include "core/check.h"
#include "core/tensor_internal.h"
#include "ember/factories.h"
#include "ember/ops.h"
#include "ops/infer.h"

namespace ember {

using detail::check_defined;
using detail::make_tensor;
using ops::assign_result;
using ops::binary;
using ops::binary_impl;
using ops::prepare_operand;
using ops::unary;

namespace {

// The dtype an arithmetic binary op computes in (and returns), with PyTorch's special cases.
Dtype arith_dtype(BinaryOp op, Dtype promoted) {
  if ((op == BinaryOp::Div || op == BinaryOp::Atan2) && !is_floating_point(promoted)) {
    return kFloat32;  // true division; atan2 of integers
  }
  return promoted;
}

using autograd::SavedTensor;

// Backward formulas of the arithmetic binary ops. Gradients come back in the output's shape and
// dtype; autograd::record sums them down to each input's shape and casts them to its dtype.
void record_binary(BinaryOp op, Tensor& out, const Tensor& a, const Tensor& b) {
  // Only the backward functions that read the inputs save them (saving one that needs no grad
  // makes a detached alias).
  switch (op) {
    case BinaryOp::Add:
      autograd::record(out, "AddBackward0", {&a, &b}, [](const Tensor& g) { return std::vector<Tensor>{g, g}; });
      return;
    case BinaryOp::Sub:
      autograd::record(out, "SubBackward0", {&a, &b}, [](const Tensor& g) { return std::vector<Tensor>{g, -g}; });
      return;
    case BinaryOp::Mul:
      // Each input is kept only for the other's gradient, so that h.mul_(2) keeps nothing of h.
      autograd::record(out, "MulBackward0", {&a, &b},
                       [sa = b.requires_grad() ? SavedTensor(a) : SavedTensor(),
                        sb = a.requires_grad() ? SavedTensor(b) : SavedTensor()](const Tensor& g) {
                         Tensor x = sa.get(), y = sb.get();
                         return std::vector<Tensor>{y.defined() ? g * y : Tensor(), x.defined() ? g * x : Tensor()};
                       });
      return;
    case BinaryOp::Div:
      // The numerator is read only for the denominator's gradient.
      autograd::record(out, "DivBackward0", {&a, &b},
                       [sa = b.requires_grad() ? SavedTensor(a) : SavedTensor(), sb = SavedTensor(b)](const Tensor& g) {
                         Tensor x = sa.get(), y = sb.get();
                         return std::vector<Tensor>{g / y, x.defined() ? -g * x / (y * y) : Tensor()};
                       });
      return;
    case BinaryOp::Maximum:
    case BinaryOp::Minimum: {
      const bool is_max = op == BinaryOp::Maximum;
      // The larger (smaller) input gets the gradient; ties split it evenly, as PyTorch does.
      autograd::record(out, is_max ? "MaximumBackward0" : "MinimumBackward0", {&a, &b},
                       [sa = SavedTensor(a), sb = SavedTensor(b), is_max](const Tensor& g) {
                         Tensor x = sa.get(), y = sb.get();
                         Tensor wins = (is_max ? gt(x, y) : lt(x, y)).to(g.dtype());
                         Tensor ties = eq(x, y).to(g.dtype()) * 0.5;
                         Tensor share = wins + ties;
                         return std::vector<Tensor>{g * share, g * (1 - share)};
                       });
      return;
    }
    case BinaryOp::Pow:
      autograd::record(out, b.dim() == 0 && !b.requires_grad() ? "PowBackward0" : "PowBackward1", {&a, &b},
                       [sa = SavedTensor(a), sb = SavedTensor(b)](const Tensor& g) {
                         Tensor x = sa.get(), y = sb.get();
                         Tensor ga = g * y * pow(x, y - 1);
                         Tensor gb = y.requires_grad() ? g * pow(x, y) * log(x) : Tensor();
                         return std::vector<Tensor>{ga, gb};
                       });
      return;
    case BinaryOp::ThresholdBackward:
      // ReLU's backward, recorded when a backward pass records itself (create_graph): linear in
      // the gradient a, and flat in the mask b.
      autograd::record(out, "ThresholdBackwardBackward0", {&a, &b}, [sb = SavedTensor(b)](const Tensor& g) {
        return std::vector<Tensor>{binary_impl(BinaryOp::ThresholdBackward, g, sb.get(), g.dtype()), Tensor()};
      });
      return;
    case BinaryOp::Remainder:
    case BinaryOp::Fmod: {
      // d/db (a - q b) = -q, q = a / b rounded down (remainder) or toward zero (fmod).
      const bool floored = op == BinaryOp::Remainder;
      autograd::record(out, floored ? "RemainderBackward0" : "FmodBackward0", {&a, &b},
                       [sa = b.requires_grad() ? SavedTensor(a) : SavedTensor(),
                        sb = b.requires_grad() ? SavedTensor(b) : SavedTensor(), floored](const Tensor& g) {
                         Tensor x = sa.get(), y = sb.get();
                         Tensor gb;
                         if (y.defined()) {
                           Tensor q = x / y;
                           gb = -g * (floored ? floor(q) : trunc(q));
                         }
                         return std::vector<Tensor>{g, gb};
                       });
      return;
    }
    case BinaryOp::Atan2:
      autograd::record(out, "Atan2Backward0", {&a, &b}, [sa = SavedTensor(a), sb = SavedTensor(b)](const Tensor& g) {
        Tensor x = sa.get(), y = sb.get();
        Tensor scale = g / (x * x + y * y);
        return std::vector<Tensor>{scale * y, -scale * x};
      });
      return;
    case BinaryOp::Hypot:
      autograd::record(out, "HypotBackward0", {&a, &b},
                       [sa = SavedTensor(a), sb = SavedTensor(b), sout = SavedTensor::output(out)](const Tensor& g) {
                         Tensor scale = g / sout.get();
                         return std::vector<Tensor>{scale * sa.get(), scale * sb.get()};
                       });
      return;
    default:
      return;  // comparisons and logical ops are not differentiable
  }
}

}  // namespace

namespace ops {

Tensor binary_impl(BinaryOp op, const Tensor& a, const Tensor& b, Dtype promoted) {
  const Device device = ops::common_device({&a, &b});
  const Dims sizes = broadcast_shapes(a.sizes(), b.sizes());
  const bool compare = is_comparison(op);
  const Dtype compute = compare ? promoted : arith_dtype(op, promoted);
  if (op == BinaryOp::Sub && compute == kBool) {
    detail::fail(
        "Subtraction, the `-` operator, with two bool tensors is not supported. Use the `^` or "
        "`logical_xor()` operator instead.");
  }
  Tensor out = make_tensor(sizes, compare ? kBool : compute, device);
  backend_for(device).binary(op, view_of(prepare_operand(a, compute, sizes, device)),
                             view_of(prepare_operand(b, compute, sizes, device)), view_of(out));
  if (!compare && autograd::needs_grad({&a, &b})) record_binary(op, out, a, b);
  return out;
}

Tensor binary(BinaryOp op, const Tensor& a, const Tensor& b) {
  detail::OpContext context(op_name(op), {{"input", &a}, {"other", &b}});
  check_defined(a, op_name(op));
  check_defined(b, op_name(op));
  return binary_impl(op, a, b, result_type(a, b));
}

Tensor binary(BinaryOp op, const Tensor& a, const Scalar& b) {
  detail::OpContext context(op_name(op), {{"input", &a}});
  check_defined(a, op_name(op));
  const Dtype promoted = result_type(a, b);
  return binary_impl(op, a, ops::wrap_scalar(b, promoted, a.device()), promoted);
}

Tensor binary(BinaryOp op, const Scalar& a, const Tensor& b) {
  detail::OpContext context(op_name(op), {{"other", &b}});
  check_defined(b, op_name(op));
  const Dtype promoted = result_type(b, a);
  return binary_impl(op, ops::wrap_scalar(a, promoted, b.device()), b, promoted);
}

}  // namespace ops

namespace {

// out = a + alpha * b, for add/sub with alpha != 1.
Tensor add_scaled(const Tensor& a, const Tensor& b, const Scalar& alpha) {
  detail::OpContext context("add", {{"input", &a}, {"other", &b}});
  check_defined(a, "add");
  check_defined(b, "add");
  const Device device = ops::common_device({&a, &b});
  const Dtype dtype = result_type(a, b);
  EMBER_CHECK(is_floating_point(dtype) || !alpha.is_floating_point(),
              "For integral input tensors, argument alpha must not be a floating point number.");
  const Dims sizes = broadcast_shapes(a.sizes(), b.sizes());
  Tensor out = make_tensor(sizes, dtype, device);
  backend_for(device).add_scaled(view_of(prepare_operand(a, dtype, sizes, device)),
                                 view_of(prepare_operand(b, dtype, sizes, device)), alpha, view_of(out));
  if (autograd::needs_grad({&a, &b})) {
    autograd::record(out, alpha.to_double() < 0 ? "SubBackward0" : "AddBackward0", {&a, &b}, [alpha](const Tensor& g) {
      return std::vector<Tensor>{g, g * alpha};
    });
  }
  return out;
}

}  // namespace

namespace ops {

Tensor& assign_result(Tensor& self, const Tensor& result, const char* op) {
  EMBER_CHECK(same_dims(result.sizes(), self.sizes()), "output with shape ", detail::shape_str(self.sizes()),
              " doesn't match the broadcast shape ", detail::shape_str(result.sizes()));
  EMBER_CHECK(is_floating_point(self.dtype()) || !is_floating_point(result.dtype()), "result type ",
              scalar_type_name(result.dtype()), " can't be cast to the desired output type ",
              scalar_type_name(self.dtype()), " (in ", op, "_)");
  const bool record = GradMode::is_enabled() && result.requires_grad();
  if (record) autograd::check_inplace(self);
  {
    NoGradGuard no_grad;
    self.copy_(result);
  }
  if (record) autograd::rebase_history(self, autograd::grad_fn_of(result));
  return self;
}

}  // namespace ops

namespace {

// What mul_ and div_ compute from: their node keeps self for `other`'s gradient, and the write
// would change what it kept, so then they read a copy (as PyTorch keeps the original self).
Tensor operand_for_inplace(const Tensor& self, const Tensor& other) {
  return autograd::needs_grad({&other}) ? self.clone() : self;
}

}  // namespace

// ---- free functions ----

Tensor add(const Tensor& a, const Tensor& b, const Scalar& alpha) {
  if (alpha.to_double() == 1.0 && !alpha.is_bool()) return binary(BinaryOp::Add, a, b);
  return add_scaled(a, b, alpha);
}
Tensor sub(const Tensor& a, const Tensor& b, const Scalar& alpha) {
  if (alpha.to_double() == 1.0 && !alpha.is_bool()) return binary(BinaryOp::Sub, a, b);
  EMBER_CHECK(b.dtype() != kBool && a.dtype() != kBool,
              "Subtraction, the `-` operator, with a bool tensor is not supported. If you are trying to invert a "
              "mask, use the `~` or `logical_not()` operator instead.");
  return add_scaled(a, b, alpha.is_floating_point() ? Scalar(-alpha.to_double()) : Scalar(-alpha.to_int64()));
}
Tensor mul(const Tensor& a, const Tensor& b) { return binary(BinaryOp::Mul, a, b); }
Tensor div(const Tensor& a, const Tensor& b) { return binary(BinaryOp::Div, a, b); }
Tensor maximum(const Tensor& a, const Tensor& b) { return binary(BinaryOp::Maximum, a, b); }
Tensor minimum(const Tensor& a, const Tensor& b) { return binary(BinaryOp::Minimum, a, b); }
Tensor pow(const Tensor& a, const Tensor& exponent) {
  if (const auto device = amp::detail::autocast_gpu_device(a, exponent)) {
    return amp::detail::autocast_call(
        amp::detail::CastPolicy::Float32, *device, [](const Tensor& x, const Tensor& y) { return pow(x, y); }, a,
        exponent);
  }
  return binary(BinaryOp::Pow, a, exponent);
}
Tensor pow(const Tensor& a, const Scalar& exponent) {
  if (const auto device = amp::detail::autocast_gpu_device(a)) {
    return amp::detail::autocast_call(
        amp::detail::CastPolicy::Float32, *device, [](const Tensor& x, const Scalar& y) { return pow(x, y); }, a,
        exponent);
  }
  EMBER_CHECK(a.is_floating_point() || exponent.is_floating_point() || exponent.to_int64() >= 0,
              "Integers to negative integer powers are not allowed.");
  return binary(BinaryOp::Pow, a, exponent);
}
Tensor eq(const Tensor& a, const Tensor& b) { return binary(BinaryOp::Eq, a, b); }
Tensor ne(const Tensor& a, const Tensor& b) { return binary(BinaryOp::Ne, a, b); }
Tensor lt(const Tensor& a, const Tensor& b) { return binary(BinaryOp::Lt, a, b); }
Tensor le(const Tensor& a, const Tensor& b) { return binary(BinaryOp::Le, a, b); }
Tensor gt(const Tensor& a, const Tensor& b) { return binary(BinaryOp::Gt, a, b); }
Tensor ge(const Tensor& a, const Tensor& b) { return binary(BinaryOp::Ge, a, b); }
Tensor logical_and(const Tensor& a, const Tensor& b) { return binary(BinaryOp::LogicalAnd, a, b); }
Tensor logical_or(const Tensor& a, const Tensor& b) { return binary(BinaryOp::LogicalOr, a, b); }

namespace {

// remainder and fmod of integers: PyTorch's CPU kernels raise on a zero divisor. The check reads
// the divisor, so it is made on the CPU only (a GPU's result there is 0, with no error).
Tensor integer_modulus(BinaryOp op, const Tensor& a, const Tensor& b) {
  detail::OpContext context(op_name(op), {{"input", &a}, {"other", &b}});
  check_defined(a, op_name(op));
  check_defined(b, op_name(op));
  const Dtype dtype = result_type(a, b);
  if (!is_floating_point(dtype) && b.device().is_cpu()) {
    EMBER_CHECK(!any(b == 0).item<bool>(), "ZeroDivisionError");
  }
  return binary(op, a, b);
}

}  // namespace

Tensor remainder(const Tensor& a, const Tensor& b) { return integer_modulus(BinaryOp::Remainder, a, b); }
Tensor remainder(const Tensor& a, const Scalar& b) {
  const Dtype dtype = result_type(a, b);
  return integer_modulus(BinaryOp::Remainder, a, ops::wrap_scalar(b, dtype, a.device()));
}
Tensor fmod(const Tensor& a, const Tensor& b) { return integer_modulus(BinaryOp::Fmod, a, b); }
Tensor fmod(const Tensor& a, const Scalar& b) {
  const Dtype dtype = result_type(a, b);
  return integer_modulus(BinaryOp::Fmod, a, ops::wrap_scalar(b, dtype, a.device()));
}
Tensor atan2(const Tensor& a, const Tensor& b) { return binary(BinaryOp::Atan2, a, b); }
Tensor hypot(const Tensor& a, const Tensor& b) { return binary(BinaryOp::Hypot, a, b); }

Tensor lerp(const Tensor& a, const Tensor& b, const Tensor& weight) {
  detail::OpContext context("lerp", {{"input", &a}, {"end", &b}, {"weight", &weight}});
  check_defined(a, "lerp");
  check_defined(b, "lerp");
  check_defined(weight, "lerp");
  EMBER_CHECK(a.dtype() == b.dtype(), "expected dtype ", scalar_type_name(a.dtype()), " for `end` but got dtype ",
              scalar_type_name(b.dtype()));
  EMBER_CHECK(a.is_floating_point(), "\"lerp_kernel_scalar\" not implemented for '", scalar_type_name(a.dtype()), "'");
  // PyTorch's two-sided formula: from a below weight 1/2, from b above, so lerp(a, b, 1) == b.
  Tensor diff = b - a;
  return where(abs(weight) < 0.5, a + weight * diff, b - diff * (1 - weight));
}
Tensor lerp(const Tensor& a, const Tensor& b, const Scalar& weight) {
  return lerp(a, b, ops::wrap_scalar(weight, a.dtype(), a.device()));
}

Tensor where(const Tensor& cond, const Tensor& a, const Tensor& b) {
  detail::OpContext context("where", {{"condition", &cond}, {"input", &a}, {"other", &b}});
  check_defined(cond, "where");
  check_defined(a, "where");
  check_defined(b, "where");
  EMBER_CHECK(cond.dtype() == kBool, "where expected condition to be a boolean tensor, but got a tensor with dtype ",
              scalar_type_name(cond.dtype()));
  const Device device = ops::common_device({&cond, &a, &b});
  const Dtype dtype = result_type(a, b);
  const Dims sizes = broadcast_shapes(broadcast_shapes(cond.sizes(), a.sizes()), b.sizes());
  Tensor out = make_tensor(sizes, dtype, device);
  backend_for(device).where(view_of(prepare_operand(cond, kBool, sizes, device)),
                            view_of(prepare_operand(a, dtype, sizes, device)),
                            view_of(prepare_operand(b, dtype, sizes, device)), view_of(out));
  if (autograd::needs_grad({&a, &b})) {
    autograd::record(out, "WhereBackward0", {&cond, &a, &b}, [sc = autograd::SavedTensor(cond)](const Tensor& g) {
      Tensor c = sc.get(), z = zeros_like(g);
      return std::vector<Tensor>{Tensor(), where(c, g, z), where(c, z, g)};
    });
  }
  return out;
}

Tensor clamp(const Tensor& x, std::optional<Scalar> min, std::optional<Scalar> max) {
  detail::OpContext context("clamp", {{"input", &x}});
  check_defined(x, "clamp");
  EMBER_CHECK(min || max, "torch.clamp: At least one of 'min' or 'max' must not be None");
  ops::ResultTypeState state;
  state.add(x);
  if (min) state.add(*min);
  if (max) state.add(*max);
  const Dtype dtype = state.result();
  Tensor out = make_tensor(x.sizes(), dtype, x.device());
  backend_for(x.device())
      .clamp(view_of(prepare_operand(x, dtype, x.sizes(), x.device())), min.value_or(0), max.value_or(0),
             min.has_value(), max.has_value(), view_of(out));
  if (autograd::needs_grad({&x})) {
    // The gradient passes strictly inside the bounds, min < x < max: on a bound it is 0, as in
    // PyTorch 2.15 (earlier versions passed it there).
    autograd::record(out, "ClampBackward1", {&x}, [sx = autograd::SavedTensor(x), min, max](const Tensor& g) {
      Tensor v = sx.get();
      Tensor pass = ones_like(v, kBool);
      if (min) pass = logical_and(pass, v > *min);
      if (max) pass = logical_and(pass, v < *max);
      return std::vector<Tensor>{g * pass.to(g.dtype())};
    });
  }
  return out;
}

namespace {
Tensor masked_fill_with(const Tensor& x, const Tensor& mask, const Tensor& value, bool value_is_tensor) {
  check_defined(x, "masked_fill");
  check_defined(mask, "masked_fill");
  check_defined(value, "masked_fill");
  EMBER_CHECK(mask.dtype() == kBool, "masked_fill_ only supports boolean masks, but got mask with dtype ",
              cpp_type_name(mask.dtype()));
  EMBER_CHECK(value.dim() == 0, "masked_fill_ only supports a 0-dimensional value tensor, but got tensor with ",
              value.dim(), " dimension(s).");
  ops::check_same_device("masked_fill", {{"self", &x}, {"mask", &mask}});
  Tensor out;
  {
    NoGradGuard no_grad;  // the node recorded below is masked_fill's own
    out = where(mask, value.to(x.device(), x.dtype()), x);
  }
  if (autograd::needs_grad({&x, &value})) {
    autograd::record(out, value_is_tensor ? "MaskedFillBackward1" : "MaskedFillBackward0", {&x, &value},
                     [sm = SavedTensor(mask), value_is_tensor](const Tensor& g) {
                       Tensor m = sm.get(), z = zeros_like(g);
                       return std::vector<Tensor>{where(m, z, g), value_is_tensor ? where(m, g, z).sum() : Tensor()};
                     });
  }
  return out;
}
}  // namespace

Tensor masked_fill(const Tensor& x, const Tensor& mask, const Scalar& value) {
  detail::OpContext context("masked_fill", {{"input", &x}, {"mask", &mask}});
  check_defined(x, "masked_fill");
  return masked_fill_with(x, mask, ops::wrap_scalar(value, x.dtype(), x.device()), false);
}

Tensor masked_fill(const Tensor& x, const Tensor& mask, const Tensor& value) {
  detail::OpContext context("masked_fill", {{"input", &x}, {"mask", &mask}, {"value", &value}});
  return masked_fill_with(x, mask, value, true);
}

// ---- Tensor methods ----

Tensor Tensor::add(const Tensor& other, const Scalar& alpha) const { return ember::add(*this, other, alpha); }
Tensor Tensor::sub(const Tensor& other, const Scalar& alpha) const { return ember::sub(*this, other, alpha); }
Tensor Tensor::mul(const Tensor& other) const { return ember::mul(*this, other); }
Tensor Tensor::div(const Tensor& other) const { return ember::div(*this, other); }
Tensor Tensor::pow(const Scalar& exponent) const { return ember::pow(*this, exponent); }
Tensor Tensor::clamp(std::optional<Scalar> min, std::optional<Scalar> max) const {
  return ember::clamp(*this, min, max);
}
Tensor Tensor::masked_fill(const Tensor& mask, const Scalar& value) const {
  return ember::masked_fill(*this, mask, value);
}
Tensor Tensor::masked_fill(const Tensor& mask, const Tensor& value) const {
  return ember::masked_fill(*this, mask, value);
}
Tensor Tensor::remainder(const Tensor& other) const { return ember::remainder(*this, other); }
Tensor Tensor::remainder(const Scalar& other) const { return ember::remainder(*this, other); }
Tensor Tensor::fmod(const Tensor& other) const { return ember::fmod(*this, other); }
Tensor Tensor::fmod(const Scalar& other) const { return ember::fmod(*this, other); }
Tensor Tensor::eq(const Tensor& other) const { return ember::eq(*this, other); }
Tensor Tensor::ne(const Tensor& other) const { return ember::ne(*this, other); }
Tensor Tensor::lt(const Tensor& other) const { return ember::lt(*this, other); }
Tensor Tensor::le(const Tensor& other) const { return ember::le(*this, other); }
Tensor Tensor::gt(const Tensor& other) const { return ember::gt(*this, other); }
Tensor Tensor::ge(const Tensor& other) const { return ember::ge(*this, other); }

Tensor& Tensor::add_(const Tensor& other, const Scalar& alpha) {
  detail::OpContext context("add_", {{"self", this}, {"other", &other}});
  return assign_result(*this, ember::add(*this, other, alpha), "add");
}
Tensor& Tensor::sub_(const Tensor& other, const Scalar& alpha) {
  detail::OpContext context("sub_", {{"self", this}, {"other", &other}});
  return assign_result(*this, ember::sub(*this, other, alpha), "sub");
}
Tensor& Tensor::mul_(const Tensor& other) {
  detail::OpContext context("mul_", {{"self", this}, {"other", &other}});
  return assign_result(*this, ember::mul(operand_for_inplace(*this, other), other), "mul");
}
Tensor& Tensor::div_(const Tensor& other) {
  detail::OpContext context("div_", {{"self", this}, {"other", &other}});
  return assign_result(*this, ember::div(operand_for_inplace(*this, other), other), "div");
}
Tensor& Tensor::add_(const Scalar& other) {
  detail::OpContext context("add_", {{"self", this}});
  return assign_result(*this, binary(BinaryOp::Add, *this, other), "add");
}
Tensor& Tensor::mul_(const Scalar& other) {
  detail::OpContext context("mul_", {{"self", this}});
  return assign_result(*this, binary(BinaryOp::Mul, *this, other), "mul");
}
Tensor& Tensor::relu_() {
  detail::OpContext context("relu_", {{"self", this}});
  return assign_result(*this, ember::relu(*this), "relu");  // relu keeps its result, not self
}
Tensor& Tensor::clamp_(std::optional<Scalar> min, std::optional<Scalar> max) {
  detail::OpContext context("clamp_", {{"self", this}});
  // clamp keeps its input for the gradient: while recording, it reads a copy of self.
  return assign_result(*this, ember::clamp(autograd::needs_grad({this}) ? clone() : *this, min, max), "clamp");
}
Tensor& Tensor::masked_fill_(const Tensor& mask, const Scalar& value) {
  detail::OpContext context("masked_fill_", {{"self", this}, {"mask", &mask}});
  return assign_result(*this, ember::masked_fill(*this, mask, value), "masked_fill");
}
Tensor& Tensor::masked_fill_(const Tensor& mask, const Tensor& value) {
  detail::OpContext context("masked_fill_", {{"self", this}, {"mask", &mask}, {"value", &value}});
  return assign_result(*this, ember::masked_fill(*this, mask, value), "masked_fill");
}

// ---- operators ----

Tensor operator+(const Tensor& a, const Tensor& b) { return binary(BinaryOp::Add, a, b); }
Tensor operator-(const Tensor& a, const Tensor& b) { return ember::sub(a, b); }
Tensor operator*(const Tensor& a, const Tensor& b) { return binary(BinaryOp::Mul, a, b); }
Tensor operator/(const Tensor& a, const Tensor& b) { return binary(BinaryOp::Div, a, b); }
Tensor operator+(const Tensor& a, const Scalar& b) { return binary(BinaryOp::Add, a, b); }
Tensor operator-(const Tensor& a, const Scalar& b) { return binary(BinaryOp::Sub, a, b); }
Tensor operator*(const Tensor& a, const Scalar& b) { return binary(BinaryOp::Mul, a, b); }
Tensor operator/(const Tensor& a, const Scalar& b) { return binary(BinaryOp::Div, a, b); }
Tensor operator+(const Scalar& a, const Tensor& b) { return binary(BinaryOp::Add, a, b); }
Tensor operator-(const Scalar& a, const Tensor& b) { return binary(BinaryOp::Sub, a, b); }
Tensor operator*(const Scalar& a, const Tensor& b) { return binary(BinaryOp::Mul, a, b); }
Tensor operator/(const Scalar& a, const Tensor& b) { return binary(BinaryOp::Div, a, b); }
Tensor operator-(const Tensor& a) { return ember::neg(a); }
Tensor operator==(const Tensor& a, const Tensor& b) { return binary(BinaryOp::Eq, a, b); }
Tensor operator!=(const Tensor& a, const Tensor& b) { return binary(BinaryOp::Ne, a, b); }
Tensor operator<(const Tensor& a, const Tensor& b) { return binary(BinaryOp::Lt, a, b); }
Tensor operator<=(const Tensor& a, const Tensor& b) { return binary(BinaryOp::Le, a, b); }
Tensor operator>(const Tensor& a, const Tensor& b) { return binary(BinaryOp::Gt, a, b); }
Tensor operator>=(const Tensor& a, const Tensor& b) { return binary(BinaryOp::Ge, a, b); }
Tensor operator==(const Tensor& a, const Scalar& b) { return binary(BinaryOp::Eq, a, b); }
Tensor operator!=(const Tensor& a, const Scalar& b) { return binary(BinaryOp::Ne, a, b); }
Tensor operator<(const Tensor& a, const Scalar& b) { return binary(BinaryOp::Lt, a, b); }
Tensor operator<=(const Tensor& a, const Scalar& b) { return binary(BinaryOp::Le, a, b); }
Tensor operator>(const Tensor& a, const Scalar& b) { return binary(BinaryOp::Gt, a, b); }
Tensor operator>=(const Tensor& a, const Scalar& b) { return binary(BinaryOp::Ge, a, b); }
Tensor& operator+=(Tensor& a, const Tensor& b) { return a.add_(b); }
Tensor& operator-=(Tensor& a, const Tensor& b) { return a.sub_(b); }
Tensor& operator*=(Tensor& a, const Tensor& b) { return a.mul_(b); }
Tensor& operator/=(Tensor& a, const Tensor& b) { return a.div_(b); }
Tensor& operator+=(Tensor& a, const Scalar& b) { return assign_result(a, binary(BinaryOp::Add, a, b), "add"); }
Tensor& operator-=(Tensor& a, const Scalar& b) { return assign_result(a, binary(BinaryOp::Sub, a, b), "sub"); }
Tensor& operator*=(Tensor& a, const Scalar& b) { return assign_result(a, binary(BinaryOp::Mul, a, b), "mul"); }
Tensor& operator/=(Tensor& a, const Scalar& b) { return assign_result(a, binary(BinaryOp::Div, a, b), "div"); }

}  // namespace ember
