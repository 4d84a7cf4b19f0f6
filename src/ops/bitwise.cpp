// The bitwise ops' front end (ember/bitwise.h): the binary and unary kernels with integer-only
// checks and PyTorch's messages, which name the kernel as PyTorch's CPU or CUDA kernel is named
// ("bitwise_and_cpu", "lshift_cuda"). Also isclose, composed as PyTorch composes it.
#include "ember/bitwise.h"

#include <string>

#include "core/check.h"
#include "core/tensor_internal.h"
#include "ember/ops.h"
#include "ops/elementwise.h"

namespace ember {

using detail::check_defined;

namespace {

// PyTorch's kernel name for the message: "<name>_<device type>".
std::string kernel_name(const char* name, const Device& device) {
  return std::string(name) + (device.is_cuda() ? "_cuda" : "_cpu");
}

void check_integral(Dtype dtype, bool allow_bool, const char* name, const Device& device) {
  EMBER_CHECK(!is_floating_point(dtype) && (allow_bool || dtype != kBool), "\"", kernel_name(name, device),
              "\" not implemented for '", scalar_type_name(dtype), "'");
}

// The promoted dtype must be integral: a float tensor or a float scalar makes the op fail.
Tensor bitwise_binary(BinaryOp op, const char* name, bool allow_bool, const Tensor& a, const Tensor& b) {
  check_defined(a, op_name(op));
  check_defined(b, op_name(op));
  check_integral(result_type(a, b), allow_bool, name, a.device());
  return ops::binary(op, a, b);
}

Tensor bitwise_binary(BinaryOp op, const char* name, bool allow_bool, const Tensor& a, const Scalar& b) {
  check_defined(a, op_name(op));
  check_integral(result_type(a, b), allow_bool, name, a.device());
  return ops::binary(op, a, b);
}

}  // namespace

Tensor bitwise_and(const Tensor& a, const Tensor& b) {
  return bitwise_binary(BinaryOp::BitwiseAnd, "bitwise_and", true, a, b);
}
Tensor bitwise_and(const Tensor& a, const Scalar& b) {
  return bitwise_binary(BinaryOp::BitwiseAnd, "bitwise_and", true, a, b);
}
Tensor bitwise_or(const Tensor& a, const Tensor& b) {
  return bitwise_binary(BinaryOp::BitwiseOr, "bitwise_or", true, a, b);
}
Tensor bitwise_or(const Tensor& a, const Scalar& b) {
  return bitwise_binary(BinaryOp::BitwiseOr, "bitwise_or", true, a, b);
}
Tensor bitwise_xor(const Tensor& a, const Tensor& b) {
  return bitwise_binary(BinaryOp::BitwiseXor, "bitwise_xor", true, a, b);
}
Tensor bitwise_xor(const Tensor& a, const Scalar& b) {
  return bitwise_binary(BinaryOp::BitwiseXor, "bitwise_xor", true, a, b);
}
Tensor bitwise_left_shift(const Tensor& a, const Tensor& b) {
  return bitwise_binary(BinaryOp::LeftShift, "lshift", false, a, b);
}
Tensor bitwise_left_shift(const Tensor& a, const Scalar& b) {
  return bitwise_binary(BinaryOp::LeftShift, "lshift", false, a, b);
}
Tensor bitwise_right_shift(const Tensor& a, const Tensor& b) {
  return bitwise_binary(BinaryOp::RightShift, "rshift", false, a, b);
}
Tensor bitwise_right_shift(const Tensor& a, const Scalar& b) {
  return bitwise_binary(BinaryOp::RightShift, "rshift", false, a, b);
}

Tensor bitwise_not(const Tensor& a) {
  check_defined(a, "bitwise_not");
  check_integral(a.dtype(), true, "bitwise_not", a.device());
  return ops::unary(UnaryOp::BitwiseNot, a);
}

Tensor operator&(const Tensor& a, const Tensor& b) { return bitwise_and(a, b); }
Tensor operator&(const Tensor& a, const Scalar& b) { return bitwise_and(a, b); }
Tensor operator|(const Tensor& a, const Tensor& b) { return bitwise_or(a, b); }
Tensor operator|(const Tensor& a, const Scalar& b) { return bitwise_or(a, b); }
Tensor operator^(const Tensor& a, const Tensor& b) { return bitwise_xor(a, b); }
Tensor operator^(const Tensor& a, const Scalar& b) { return bitwise_xor(a, b); }
Tensor operator~(const Tensor& a) { return bitwise_not(a); }
Tensor operator<<(const Tensor& a, const Tensor& b) { return bitwise_left_shift(a, b); }
Tensor operator<<(const Tensor& a, const Scalar& b) { return bitwise_left_shift(a, b); }
Tensor operator>>(const Tensor& a, const Tensor& b) { return bitwise_right_shift(a, b); }
Tensor operator>>(const Tensor& a, const Scalar& b) { return bitwise_right_shift(a, b); }

Tensor isclose(const Tensor& a, const Tensor& b, double rtol, double atol, bool equal_nan) {
  detail::OpContext context("isclose", {{"input", &a}, {"other", &b}});
  check_defined(a, "isclose");
  check_defined(b, "isclose");
  EMBER_CHECK(a.dtype() == b.dtype(), scalar_type_name(a.dtype()), " did not match ", scalar_type_name(b.dtype()));
  EMBER_CHECK(rtol >= 0, "rtol must be greater than or equal to zero, but got ", rtol);
  EMBER_CHECK(atol >= 0, "atol must be greater than or equal to zero, but got ", atol);
  Tensor close = eq(a, b);
  if (equal_nan && a.is_floating_point()) close = logical_or(close, logical_and(isnan(a), isnan(b)));
  if (rtol == 0 && atol == 0) return close;
  // As PyTorch: bool operands count in the default float type; integers subtract as integers.
  const Tensor x = a.dtype() == kBool ? a.to(kFloat32) : a;
  const Tensor y = b.dtype() == kBool ? b.to(kFloat32) : b;
  const Tensor allowed = abs(y * rtol) + atol;
  const Tensor actual = abs(x - y);
  return logical_or(close, logical_and(isfinite(actual), le(actual, allowed)));
}

}  // namespace ember
