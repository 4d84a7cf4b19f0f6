// CpuBackend's element-wise entry points and copy/fill, called directly with TensorViews over
// std::vector buffers (no Tensor): contiguous, broadcast (stride 0), transposed and sliced
// operands, every dtype pair for copies, 16-bit rounding, and sizes large enough for threads.
#include <gtest/gtest.h>

#include <algorithm>
#include <bit>
#include <cmath>
#include <cstdint>
#include <cstring>
#include <limits>
#include <vector>

#include "backend/cpu/cpu_backend.h"
#include "backend/cpu/dispatch.h"
#include "base/parallel.h"
#include "ember/error.h"
#include "kernels/elementwise_ops.h"

namespace ember::cpu {
namespace {

constexpr float kNanF = std::numeric_limits<float>::quiet_NaN();
constexpr float kInfF = std::numeric_limits<float>::infinity();

Dims contiguous_strides(const Dims& sizes) {
  Dims strides(sizes.size(), 0);
  int64_t s = 1;
  for (size_t d = sizes.size(); d-- > 0;) {
    strides[d] = s;
    s *= sizes[d];
  }
  return strides;
}

template <typename T>
TensorView view(std::vector<T>& data, Dims sizes, Dims strides) {
  return TensorView{data.data(), std::move(sizes), std::move(strides), dtype_v<T>};
}
template <typename T>
TensorView view(std::vector<T>& data, const Dims& sizes) {
  return view(data, sizes, contiguous_strides(sizes));
}
/// bool buffers are bytes (std::vector<bool> has no element storage).
TensorView bool_view(std::vector<uint8_t>& data, const Dims& sizes) {
  return TensorView{data.data(), sizes, contiguous_strides(sizes), kBool};
}

// Generic code over all dtypes stores bool elements as bytes too.
template <typename T>
struct stored {
  using type = T;
};
template <>
struct stored<bool> {
  using type = uint8_t;
};
template <typename T>
using Buf = std::vector<typename stored<T>::type>;

template <typename T>
TensorView tview(Buf<T>& data, Dims sizes, Dims strides) {
  return TensorView{data.data(), std::move(sizes), std::move(strides), dtype_v<T>};
}
template <typename T>
TensorView tview(Buf<T>& data, const Dims& sizes) {
  return tview<T>(data, sizes, contiguous_strides(sizes));
}
template <typename T>
T element(const Buf<T>& data, size_t i) {
  return static_cast<T>(data[i]);
}
template <typename T>
typename stored<T>::type store(T v) {
  return static_cast<typename stored<T>::type>(v);
}

template <typename T>
Buf<T> filled(size_t n, double start, double step) {
  Buf<T> v(n);
  for (size_t i = 0; i < n; ++i) v[i] = store(kernels::convert<T>(start + step * static_cast<double>(i)));
  return v;
}

CpuBackend& be() { return cpu_backend(); }

bool same_value(double a, double b, double rel) {
  if (std::isnan(a) || std::isnan(b)) return std::isnan(a) && std::isnan(b);
  if (a == b) return true;
  return std::fabs(a - b) <= rel * std::max(std::fabs(a), std::fabs(b));
}

template <typename T>
double tolerance() {
  if constexpr (std::is_same_v<T, Half>) return 1e-3;
  if constexpr (std::is_same_v<T, BFloat16>) return 8e-3;
  if constexpr (std::is_same_v<T, float>) return 1e-6;
  return 1e-14;
}

// ---- binary ----

TEST(CpuElementwise, AddFourFloats) {
  std::vector<float> a = {1, 2, 3, 4}, b = {10, 20, 30, 40}, out(4);
  be().binary(BinaryOp::Add, view(a, {4}), view(b, {4}), view(out, {4}));
  EXPECT_EQ(out, (std::vector<float>{11, 22, 33, 44}));
}

/// Every binary op on dtype T over values including negatives, zero and (for floats) NaN,
/// against the functor called directly.
template <typename T, typename Op>
void check_binary_op(BinaryOp op) {
  if constexpr (kernels::accepts_v<Op, T>) {
    using C = compute_t<T>;
    using R = std::invoke_result_t<Op, C, C>;
    constexpr size_t n = 37;
    Buf<T> a = filled<T>(n, -3.0, 0.25);
    Buf<T> b = filled<T>(n, 2.0, -0.125);
    if constexpr (kernels::is_floating_v<T>) a[5] = kernels::convert<T>(kNanF);
    if constexpr (std::is_same_v<R, bool>) {
      std::vector<uint8_t> out(n, 7);
      be().binary(op, tview<T>(a, {n}), tview<T>(b, {n}), bool_view(out, {n}));
      for (size_t i = 0; i < n; ++i) {
        const bool expected = Op{}(static_cast<C>(element<T>(a, i)), static_cast<C>(element<T>(b, i)));
        ASSERT_EQ(out[i], expected ? 1 : 0) << op_name(op) << " at " << i;
      }
    } else {
      Buf<T> out(n);
      be().binary(op, tview<T>(a, {n}), tview<T>(b, {n}), tview<T>(out, {n}));
      // GELU's and SiLU's derivatives cross zero inside their domain (at x = -0.75 and -1.28),
      // where the formula's terms, of the size of the gradient, cancel: near there the rounding
      // error is relative to the gradient, not to the result.
      const bool cancels =
          op == BinaryOp::GeluBackward || op == BinaryOp::GeluTanhBackward || op == BinaryOp::SiluBackward;
      for (size_t i = 0; i < n; ++i) {
        const C r = Op{}(static_cast<C>(element<T>(a, i)), static_cast<C>(element<T>(b, i)));
        const double expected = static_cast<double>(kernels::convert<T>(r));
        const double got = static_cast<double>(element<T>(out, i));
        const double grad = std::fabs(static_cast<double>(element<T>(a, i)));
        const bool close = same_value(got, expected, tolerance<T>()) ||
                           (cancels && std::fabs(got - expected) <= tolerance<T>() * grad);
        ASSERT_TRUE(close) << op_name(op) << " at " << i << ": " << got << " vs " << expected;
      }
    }
  } else {
    Buf<T> a(2), b(2), out(2);
    EXPECT_THROW(be().binary(op, tview<T>(a, {2}), tview<T>(b, {2}), tview<T>(out, {2})), Error) << op_name(op);
  }
}

template <typename T>
void check_all_binary_ops() {
#define EMBER_CASE(Name, str) check_binary_op<T, kernels::Name>(BinaryOp::Name);
  EMBER_BINARY_OPS(EMBER_CASE)
#undef EMBER_CASE
}

TEST(CpuElementwise, EveryBinaryOpEveryDtype) {
  check_all_binary_ops<float>();
  check_all_binary_ops<double>();
  check_all_binary_ops<Half>();
  check_all_binary_ops<BFloat16>();
  check_all_binary_ops<int64_t>();
  check_all_binary_ops<int32_t>();
  check_all_binary_ops<int16_t>();
  check_all_binary_ops<int8_t>();
  check_all_binary_ops<uint8_t>();
  check_all_binary_ops<bool>();
}

TEST(CpuElementwise, BroadcastOperands) {
  std::vector<float> a = {1, 2, 3, 4, 5, 6}, row = {10, 20, 30}, col = {100, 200}, scalar = {0.5f}, out(6);
  be().binary(BinaryOp::Add, view(a, {2, 3}), view(row, {2, 3}, {0, 1}), view(out, {2, 3}));
  EXPECT_EQ(out, (std::vector<float>{11, 22, 33, 14, 25, 36}));
  be().binary(BinaryOp::Sub, view(col, {2, 3}, {1, 0}), view(a, {2, 3}), view(out, {2, 3}));
  EXPECT_EQ(out, (std::vector<float>{99, 98, 97, 196, 195, 194}));
  be().binary(BinaryOp::Mul, view(a, {2, 3}), view(scalar, {2, 3}, {0, 0}), view(out, {2, 3}));
  EXPECT_EQ(out, (std::vector<float>{0.5f, 1, 1.5f, 2, 2.5f, 3}));
  be().binary(BinaryOp::Div, view(scalar, {2, 3}, {0, 0}), view(a, {2, 3}), view(out, {2, 3}));
  EXPECT_FLOAT_EQ(out[3], 0.125f);
  // Both inputs broadcast scalars.
  be().binary(BinaryOp::Maximum, view(scalar, {2, 3}, {0, 0}), view(col, {2, 3}, {0, 0}), view(out, {2, 3}));
  EXPECT_EQ(out, std::vector<float>(6, 100.0f));
}

TEST(CpuElementwise, TransposedAndSlicedOperands) {
  // at = a.t() for a contiguous [3, 2] a = [[1,2],[3,4],[5,6]]: at = [[1,3,5],[2,4,6]].
  std::vector<float> a = {1, 2, 3, 4, 5, 6}, b = {0, 0, 0, 0, 0, 0}, out(6);
  be().binary(BinaryOp::Add, view(a, {2, 3}, {1, 2}), view(b, {2, 3}), view(out, {2, 3}));
  EXPECT_EQ(out, (std::vector<float>{1, 3, 5, 2, 4, 6}));
  // Every other element of a [2, 6] buffer: strides {6, 2}.
  std::vector<float> wide = {1, -1, 2, -1, 3, -1, 4, -1, 5, -1, 6, -1};
  be().binary(BinaryOp::Mul, view(wide, {2, 3}, {6, 2}), view(a, {2, 3}), view(out, {2, 3}));
  EXPECT_EQ(out, (std::vector<float>{1, 4, 9, 16, 25, 36}));
  // A transposed output: out.t() = a + 1 in place of a transposed view.
  std::vector<float> one = {1};
  std::vector<float> outt(6);
  be().binary(BinaryOp::Add, view(a, {2, 3}), view(one, {2, 3}, {0, 0}), view(outt, {2, 3}, {1, 2}));
  EXPECT_EQ(outt, (std::vector<float>{2, 5, 3, 6, 4, 7}));
}

TEST(CpuElementwise, InPlaceOnTransposedTensor) {
  std::vector<float> x = {1, 2, 3, 4, 5, 6};
  TensorView xt = view(x, {3, 2}, {1, 3});
  std::vector<float> two = {2};
  be().binary(BinaryOp::Mul, xt, view(two, {3, 2}, {0, 0}), xt);
  EXPECT_EQ(x, (std::vector<float>{2, 4, 6, 8, 10, 12}));
}

TEST(CpuElementwise, ComparisonsWriteBool) {
  std::vector<float> a = {1, 2, kNanF, 4}, b = {2, 2, 2, kNanF};
  std::vector<uint8_t> out(4, 9);
  be().binary(BinaryOp::Lt, view(a, {4}), view(b, {4}), bool_view(out, {4}));
  EXPECT_EQ(out, (std::vector<uint8_t>{1, 0, 0, 0}));
  be().binary(BinaryOp::Ne, view(a, {4}), view(b, {4}), bool_view(out, {4}));
  EXPECT_EQ(out, (std::vector<uint8_t>{1, 0, 1, 1}));
  be().binary(BinaryOp::Ge, view(a, {4}), view(b, {4}, {0}), bool_view(out, {4}));  // against b[0] = 2
  EXPECT_EQ(out, (std::vector<uint8_t>{0, 1, 0, 1}));
  std::vector<int64_t> i = {0, 5, -1, 0}, j = {0, 0, 3, 7};
  be().binary(BinaryOp::LogicalOr, view(i, {4}), view(j, {4}), bool_view(out, {4}));
  EXPECT_EQ(out, (std::vector<uint8_t>{0, 1, 1, 1}));
  be().binary(BinaryOp::LogicalAnd, view(i, {4}), view(j, {4}), bool_view(out, {4}));
  EXPECT_EQ(out, (std::vector<uint8_t>{0, 0, 1, 0}));
  std::vector<uint8_t> p = {0, 1, 0, 1}, q = {0, 0, 1, 1};
  be().binary(BinaryOp::Eq, bool_view(p, {4}), bool_view(q, {4}), bool_view(out, {4}));
  EXPECT_EQ(out, (std::vector<uint8_t>{1, 0, 0, 1}));
  // The output of a comparison must be bool.
  std::vector<float> wrong(4);
  EXPECT_THROW(be().binary(BinaryOp::Lt, view(a, {4}), view(b, {4}), view(wrong, {4})), Error);
}

TEST(CpuElementwise, IntegerAndBoolArithmetic) {
  std::vector<int32_t> a = {std::numeric_limits<int32_t>::max(), -7, 3, 2}, b = {1, 2, 4, 31}, out(4);
  be().binary(BinaryOp::Add, view(a, {4}), view(b, {4}), view(out, {4}));
  EXPECT_EQ(out, (std::vector<int32_t>{std::numeric_limits<int32_t>::min(), -5, 7, 33}));
  be().binary(BinaryOp::Pow, view(a, {4}), view(b, {4}), view(out, {4}));
  EXPECT_EQ(out[1], 49);
  EXPECT_EQ(out[2], 81);
  EXPECT_EQ(out[3], std::numeric_limits<int32_t>::min());  // 2^31 wraps
  std::vector<uint8_t> p = {0, 1, 0, 1}, q = {0, 0, 1, 1}, r(4);
  be().binary(BinaryOp::Add, bool_view(p, {4}), bool_view(q, {4}), bool_view(r, {4}));
  EXPECT_EQ(r, (std::vector<uint8_t>{0, 1, 1, 1}));
  be().binary(BinaryOp::Mul, bool_view(p, {4}), bool_view(q, {4}), bool_view(r, {4}));
  EXPECT_EQ(r, (std::vector<uint8_t>{0, 0, 0, 1}));
  EXPECT_THROW(be().binary(BinaryOp::Sub, bool_view(p, {4}), bool_view(q, {4}), bool_view(r, {4})), Error);
}

TEST(CpuElementwise, HalfAndBFloat16RoundToNearestEven) {
  // 1 + 2^-11 is halfway between two halfs; the float sum is exact, the rounding is to even.
  std::vector<Half> a = {Half(1.0f), Half(1.0f), Half(1.0f + 0x1p-10f)};
  std::vector<Half> b = {Half(0x1p-11f), Half(3 * 0x1p-11f), Half(0x1p-11f)};
  std::vector<Half> out(3);
  be().binary(BinaryOp::Add, view(a, {3}), view(b, {3}), view(out, {3}));
  EXPECT_EQ(out[0].bits, 0x3c00);  // 1.0
  EXPECT_EQ(out[1].bits, 0x3c02);  // 1 + 2^-9
  EXPECT_EQ(out[2].bits, 0x3c02);  // (1 + 2^-10) + 2^-11: tie, up to even
  std::vector<BFloat16> x = {BFloat16(1.0f), BFloat16(1.0f)};
  std::vector<BFloat16> y = {BFloat16(0x1p-8f), BFloat16(3 * 0x1p-8f)};
  std::vector<BFloat16> z(2);
  be().binary(BinaryOp::Add, view(x, {2}), view(y, {2}), view(z, {2}));
  EXPECT_EQ(z[0].bits, 0x3f80);
  EXPECT_EQ(z[1].bits, 0x3f82);
  // Half products are computed in float and rounded once.
  std::vector<Half> h = {Half(3.0f)}, k = {Half(1.0f / 3.0f)}, hk(1);
  be().binary(BinaryOp::Mul, view(h, {1}), view(k, {1}), view(hk, {1}));
  EXPECT_EQ(hk[0].bits, Half(3.0f * static_cast<float>(Half(1.0f / 3.0f))).bits);
}

// ---- unary ----

template <typename T, typename Op>
void check_unary_op(UnaryOp op) {
  if constexpr (kernels::accepts_v<Op, T>) {
    using C = compute_t<T>;
    using R = std::invoke_result_t<Op, C>;
    constexpr size_t n = 41;
    Buf<T> x = kernels::is_floating_v<T> ? filled<T>(n, -4.0, 0.2) : filled<T>(n, -20.0, 1.0);
    if constexpr (kernels::is_floating_v<T>) {
      x[3] = kernels::convert<T>(kNanF);
      x[4] = kernels::convert<T>(std::numeric_limits<float>::infinity());
      x[7] = kernels::convert<T>(0.0f);  // log, rsqrt of 0
    }
    if constexpr (std::is_same_v<R, bool>) {
      std::vector<uint8_t> out(n, 9);
      be().unary(op, tview<T>(x, {n}), bool_view(out, {n}));
      for (size_t i = 0; i < n; ++i) {
        ASSERT_EQ(out[i], Op{}(static_cast<C>(element<T>(x, i))) ? 1 : 0) << op_name(op);
      }
    } else {
      Buf<T> out(n);
      be().unary(op, tview<T>(x, {n}), tview<T>(out, {n}));
      for (size_t i = 0; i < n; ++i) {
        const double expected = static_cast<double>(kernels::convert<T>(Op{}(static_cast<C>(element<T>(x, i)))));
        const double got = static_cast<double>(element<T>(out, i));
        ASSERT_TRUE(same_value(got, expected, tolerance<T>()))
            << op_name(op) << "(" << static_cast<double>(element<T>(x, i)) << ") = " << got << " vs " << expected;
      }
    }
  } else {
    Buf<T> x(2), out(2);
    EXPECT_THROW(be().unary(op, tview<T>(x, {2}), tview<T>(out, {2})), Error) << op_name(op);
  }
}

template <typename T>
void check_all_unary_ops() {
#define EMBER_CASE(Name, str) check_unary_op<T, kernels::Name>(UnaryOp::Name);
  EMBER_UNARY_OPS(EMBER_CASE)
#undef EMBER_CASE
}

TEST(CpuElementwise, EveryUnaryOpEveryDtype) {
  check_all_unary_ops<float>();
  check_all_unary_ops<double>();
  check_all_unary_ops<Half>();
  check_all_unary_ops<BFloat16>();
  check_all_unary_ops<int64_t>();
  check_all_unary_ops<int8_t>();
  check_all_unary_ops<uint8_t>();
  check_all_unary_ops<bool>();
}

// The float transcendentals run through glibc's vector math (libmvec) in contiguous runs and the
// scalar libm in the remainders: both must stay within a few ulp of the exact value and keep NaN
// and the infinities. Reference: the same formula in double.
TEST(CpuElementwise, FloatTranscendentalsStayWithinAFewUlpOverTheirRange) {
  std::vector<float> x;
  for (int i = -200000; i <= 200000; ++i) x.push_back(static_cast<float>(i) * 5e-4f);  // [-100, 100]
  for (float v : {0.0f, -0.0f, 1e-30f, -1e-30f, 1e-42f, 88.7f, 89.0f, -87.0f, -104.0f, 1e30f, -1e30f}) x.push_back(v);
  const float inf = std::numeric_limits<float>::infinity();
  for (float v : {inf, -inf, std::numeric_limits<float>::quiet_NaN()}) x.push_back(v);
  const auto n = static_cast<int64_t>(x.size());

  struct Case {
    UnaryOp op;
    double (*exact)(double);
    double max_ulp;
  };
  const Case cases[] = {
      {UnaryOp::Exp, [](double v) { return std::exp(v); }, 4},
      {UnaryOp::Tanh, [](double v) { return std::tanh(v); }, 4},
      {UnaryOp::Erf, [](double v) { return std::erf(v); }, 4},
      {UnaryOp::Sigmoid, [](double v) { return 1 / (1 + std::exp(-v)); }, 4},
      {UnaryOp::Silu, [](double v) { return v / (1 + std::exp(-v)); }, 4},
      // The float GELU works from x itself (kernels/gelu_float.h), not from erfc of a rounded
      // -x/sqrt2, whose rounding erfc magnifies in the far tail (by 2z^2, 130 ulp at x = -11.5).
      {UnaryOp::Gelu, [](double v) { return v * 0.5 * std::erfc(v * -0.70710678118654752440); }, 4},
  };
  std::vector<float> out(static_cast<size_t>(n));
  for (const Case& c : cases) {
    be().unary(c.op, view(x, {n}), view(out, {n}));
    double worst = 0;
    float worst_at = 0;
    for (int64_t i = 0; i < n; ++i) {
      const double want = c.exact(static_cast<double>(x[i]));
      const float got = out[static_cast<size_t>(i)];
      if (std::isnan(want) || std::isinf(want)) {
        ASSERT_TRUE(std::isnan(want) ? std::isnan(got) : got == static_cast<float>(want))
            << op_name(c.op) << "(" << x[i] << ") = " << got << ", expected " << want;
        continue;
      }
      // One ulp of the float nearest the exact value, but no less than 1e-37: silu's formula (PyTorch's,
      // x / (1 + exp(-x))) gives 0 once exp(-x) overflows float, at x < -88.72, where the exact
      // value is still 2.6e-37. A result that overflows float must be infinite.
      const auto nearest = static_cast<float>(want);
      if (std::isinf(nearest)) {
        ASSERT_EQ(got, nearest) << op_name(c.op) << "(" << x[i] << ")";
        continue;
      }
      const double ulp =
          std::max(static_cast<double>(std::nextafter(std::fabs(nearest), inf) - std::fabs(nearest)), 1e-37);
      const double error = std::fabs(static_cast<double>(got) - want) / ulp;
      if (!(error <= worst)) {
        worst = error;
        worst_at = x[i];
      }
    }
    EXPECT_LE(worst, c.max_ulp) << op_name(c.op) << " is off by " << worst << " ulp at " << worst_at;
  }
}

// GELU's tanh form is x/2 (1 + tanh(u)); written that way, 1 + tanh(u) cancels for x < -3 and
// float32 results are off by thousands of ulp (3e-4 relative at x = -3.6). The kernel's
// x sigmoid(2u) is checked against the exact value within 4 ulp plus what the rounding of its own
// argument 2u (a few float ulps of it) can cost: |2u| (1 - sigmoid(2u)) times that relative error.
TEST(CpuElementwise, GeluTanhKeepsFullPrecisionInTheNegativeTail) {
  std::vector<float> x;
  for (int i = -20000; i <= 20000; ++i) x.push_back(static_cast<float>(i) * 1e-3f);  // [-20, 20]
  const auto n = static_cast<int64_t>(x.size());
  std::vector<float> out(static_cast<size_t>(n));
  be().unary(UnaryOp::GeluTanh, view(x, {n}), view(out, {n}));
  for (int64_t i = 0; i < n; ++i) {
    const double v = x[static_cast<size_t>(i)];
    const double two_u = 2 * 0.79788456080286535588 * (v + 0.044715 * v * v * v);
    const double want = v / (1 + std::exp(-two_u));
    const auto nearest = static_cast<float>(want);
    const double ulp =
        std::max(static_cast<double>(std::nextafter(std::fabs(nearest), kInfF) - std::fabs(nearest)), 1e-37);
    const double argument_rounding =
        std::fabs(want) * std::fabs(two_u) * (1 - 1 / (1 + std::exp(-two_u))) * 4 * 0x1p-24;
    const double error = std::fabs(static_cast<double>(out[static_cast<size_t>(i)]) - want);
    ASSERT_LE(error, 4 * ulp + argument_rounding)
        << "gelu_tanh(" << v << ") = " << out[static_cast<size_t>(i)] << ", exact " << want;
  }
}

// The exact GELU and its derivative for float are kmath::gelu_float and gelu_backward_float
// (kernels/gelu_float.h): fitted polynomial and rational arithmetic, not the C library's erfcf.
// Checked against the exact value over [-20, 20], in steps of 1e-3 and at every 4099th float bit
// pattern (every binade, denormal inputs and results included), both through the backend's
// kernels and through the functors called here: this file is compiled without FMA, so where the
// library uses it (-march=native on a machine with FMA) both of the header's paths are tested.
// Over every float in [-16.5, 16.5] the largest errors are 3.9 ulp (GELU) and 4.1 ulp
// (derivative) with FMA, 4.7 and 4.8 ulp without; on these points 3.1 and 3.3, 3.6 and 3.8.
// Changing any fitted coefficient in its second significant digit makes this test fail, except
// the highest-order one of the derivative's T, whose term stays below 10^-5 of T.
TEST(CpuElementwise, ExactGeluAndItsDerivativeStayWithinAFewUlp) {
  std::vector<float> x;
  for (int i = -20000; i <= 20000; ++i) x.push_back(static_cast<float>(i) * 1e-3f);
  for (uint32_t bits = 0; bits <= std::bit_cast<uint32_t>(20.0f); bits += 4099) {
    x.push_back(std::bit_cast<float>(bits));
    x.push_back(-std::bit_cast<float>(bits));
  }
  const auto n = static_cast<int64_t>(x.size());
  std::vector<float> ones(x.size(), 1.0f), forward(x.size()), derivative(x.size());
  be().unary(UnaryOp::Gelu, view(x, {n}), view(forward, {n}));
  be().binary(BinaryOp::GeluBackward, view(ones, {n}), view(x, {n}), view(derivative, {n}));

  // |got - want| beyond the reference's own error, in units of the last place of the float
  // nearest want (2^-149 for denormal and zero results).
  auto ulps = [](float got, double want, double reference_error) {
    const auto nearest = std::fabs(static_cast<float>(want));
    const auto ulp = static_cast<double>(std::nextafter(nearest, kInfF) - nearest);
    return std::max(std::fabs(static_cast<double>(got) - want) - reference_error, 0.0) / ulp;
  };
  const char* what[4] = {"gelu kernel", "gelu derivative kernel", "Gelu functor", "GeluBackward functor"};
  const double max_ulps[4] = {4, 4.5, 4, 4.5};
  double worst[4] = {};
  float worst_at[4] = {};
  for (size_t i = 0; i < x.size(); ++i) {
    const double v = x[i];
    const double cdf = 0.5 * std::erfc(v * -0.70710678118654752440);
    const double x_pdf = v * 0.39894228040143267794 * std::exp(-0.5 * v * v);
    // The double reference's own rounding; it counts only where cdf + x pdf cancels, near x = -0.75.
    const double reference_error = 0x1p-50 * (cdf + std::fabs(x_pdf));
    const double errors[4] = {ulps(forward[i], v * cdf, 0), ulps(derivative[i], cdf + x_pdf, reference_error),
                              ulps(kernels::Gelu{}(x[i]), v * cdf, 0),
                              ulps(kernels::GeluBackward{}(1.0f, x[i]), cdf + x_pdf, reference_error)};
    for (int k = 0; k < 4; ++k) {
      if (!(errors[k] <= worst[k])) {
        worst[k] = errors[k];
        worst_at[k] = x[i];
      }
    }
  }
  for (int k = 0; k < 4; ++k) {
    EXPECT_LE(worst[k], max_ulps[k]) << what[k] << " is off by " << worst[k] << " ulp at " << worst_at[k];
  }

  // The gradient multiplies the derivative (one more rounding); the values past the formulas' range
  // and the special ones are those of x/2 erfc(-x/sqrt2) and of PyTorch's derivative formula.
  const float nan = std::numeric_limits<float>::quiet_NaN();
  std::vector<float> s = {0.0f, -0.0f, 14.5f, 14.7f, -14.7f, 1e30f, -1e30f, 1e30f, kInfF, -kInfF, nan, -0.75f};
  std::vector<float> grad = {3.0f, 3.0f, 3.0f, 3.0f, 3.0f, 3.0f, 3.0f, 1e38f, 3.0f, 3.0f, 3.0f, -2.5f};
  const auto m = static_cast<int64_t>(s.size());
  std::vector<float> y(s.size()), dy(s.size());
  be().unary(UnaryOp::Gelu, view(s, {m}), view(y, {m}));
  be().binary(BinaryOp::GeluBackward, view(grad, {m}), view(s, {m}), view(dy, {m}));
  const float want_y[] = {0.0f, -0.0f, 14.5f, 14.7f, -0.0f, 1e30f, -0.0f, 1e30f, kInfF, nan, nan};
  const float want_dy[] = {1.5f, 1.5f, 3.0f, 3.0f, 0.0f, 3.0f, 0.0f, 1e38f, nan, nan, nan};
  for (size_t i = 0; i + 1 < s.size(); ++i) {
    if (std::isnan(want_y[i])) {
      EXPECT_TRUE(std::isnan(y[i])) << "gelu(" << s[i] << ") = " << y[i];
    } else {
      EXPECT_EQ(y[i], want_y[i]) << "gelu(" << s[i] << ")";
      EXPECT_EQ(std::signbit(y[i]), std::signbit(want_y[i])) << "gelu(" << s[i] << ")";
    }
    if (std::isnan(want_dy[i])) {
      EXPECT_TRUE(std::isnan(dy[i])) << "gelu'(" << s[i] << ") = " << dy[i];
    } else {
      EXPECT_EQ(dy[i], want_dy[i]) << "gelu'(" << s[i] << ")";
    }
  }
  const double v = -0.75, cdf = 0.5 * std::erfc(v * -0.70710678118654752440);
  const double want = -2.5 * (cdf + v * 0.39894228040143267794 * std::exp(-0.5 * v * v));
  EXPECT_LE(ulps(dy.back(), want, 0x1p-48 * cdf), 5) << "grad * gelu'(-0.75) = " << dy.back() << ", exact " << want;
}

TEST(CpuElementwise, UnaryValues) {
  std::vector<float> x = {-1.0f, 0.0f, 1.0f, kNanF}, out(4);
  be().unary(UnaryOp::Gelu, view(x, {4}), view(out, {4}));
  EXPECT_NEAR(out[0], -0.15865525393145707, 1e-7);
  EXPECT_NEAR(out[2], 0.8413447460685429, 1e-7);
  EXPECT_TRUE(std::isnan(out[3]));
  be().unary(UnaryOp::GeluTanh, view(x, {4}), view(out, {4}));
  EXPECT_NEAR(out[2], 0.8411919906082768, 1e-7);
  be().unary(UnaryOp::Relu, view(x, {4}), view(out, {4}));
  EXPECT_EQ(out[0], 0.0f);
  EXPECT_EQ(out[2], 1.0f);
  EXPECT_TRUE(std::isnan(out[3]));
  std::vector<uint8_t> b(4);
  be().unary(UnaryOp::LogicalNot, view(x, {4}), bool_view(b, {4}));
  EXPECT_EQ(b, (std::vector<uint8_t>{0, 1, 0, 0}));
  // Broadcast input (one value for all outputs) and strided output.
  std::vector<double> s = {0.0}, wide(8, -1.0);
  be().unary(UnaryOp::Exp, view(s, {4}, {0}), view(wide, {4}, {2}));
  EXPECT_EQ(wide, (std::vector<double>{1, -1, 1, -1, 1, -1, 1, -1}));
  // Output dtype must match.
  std::vector<double> d(4);
  EXPECT_THROW(be().unary(UnaryOp::Exp, view(x, {4}), view(d, {4})), Error);
  // Shapes must have been broadcast by the caller.
  EXPECT_THROW(be().unary(UnaryOp::Exp, view(x, {4}), view(out, {2, 2})), Error);
}

// ---- add_scaled, where, clamp ----

TEST(CpuElementwise, AddScaled) {
  std::vector<float> a = {1, 2, 3}, b = {10, 20, 30}, out(3);
  be().add_scaled(view(a, {3}), view(b, {3}), Scalar(2.0), view(out, {3}));
  EXPECT_EQ(out, (std::vector<float>{21, 42, 63}));
  be().add_scaled(view(a, {3}), view(b, {3}, {0}), Scalar(-0.5), view(out, {3}));
  EXPECT_EQ(out, (std::vector<float>{-4, -3, -2}));
  std::vector<int64_t> i = {5, 6}, j = {1, 2}, k(2);
  be().add_scaled(view(i, {2}), view(j, {2}), Scalar(int64_t{-1}), view(k, {2}));
  EXPECT_EQ(k, (std::vector<int64_t>{4, 4}));
  std::vector<Half> h = {Half(1.0f)}, g = {Half(2.0f)}, hg(1);
  be().add_scaled(view(h, {1}), view(g, {1}), Scalar(0.25), view(hg, {1}));
  EXPECT_EQ(static_cast<float>(hg[0]), 1.5f);
}

TEST(CpuElementwise, Where) {
  std::vector<uint8_t> cond = {1, 0, 1, 0, 0, 1};
  std::vector<float> a = {1, 2, 3, 4, 5, 6}, zero = {0}, out(6);
  be().where(bool_view(cond, {6}), view(a, {6}), view(zero, {6}, {0}), view(out, {6}));
  EXPECT_EQ(out, (std::vector<float>{1, 0, 3, 0, 0, 6}));
  be().where(bool_view(cond, {6}), view(zero, {6}, {0}), view(a, {6}), view(out, {6}));
  EXPECT_EQ(out, (std::vector<float>{0, 2, 0, 4, 5, 0}));
  // Condition broadcast along rows, values transposed.
  std::vector<uint8_t> row = {1, 0, 1};
  TensorView row_cond{row.data(), {2, 3}, {0, 1}, kBool};
  std::vector<int16_t> x = {1, 2, 3, 4, 5, 6}, y = {-1, -2, -3, -4, -5, -6}, z(6);
  be().where(row_cond, view(x, {2, 3}, {1, 2}), view(y, {2, 3}), view(z, {2, 3}));
  EXPECT_EQ(z, (std::vector<int16_t>{1, -2, 5, 2, -5, 6}));
  std::vector<double> d = {1.5, 2.5, 3.5, 4.5, 5.5, 6.5}, e(6);
  be().where(bool_view(cond, {6}), view(d, {6}), view(d, {6}, {0}), view(e, {6}));
  EXPECT_EQ(e, (std::vector<double>{1.5, 1.5, 3.5, 1.5, 1.5, 6.5}));
  std::vector<float> f(6);
  EXPECT_THROW(be().where(view(a, {6}), view(a, {6}), view(a, {6}), view(f, {6})), Error);  // cond not bool
}

TEST(CpuElementwise, Clamp) {
  std::vector<float> x = {-5, -1, 0, 3, 9, kNanF}, out(6);
  be().clamp(view(x, {6}), Scalar(-2.0), Scalar(4.0), true, true, view(out, {6}));
  EXPECT_EQ(out[0], -2.0f);
  EXPECT_EQ(out[1], -1.0f);
  EXPECT_EQ(out[3], 3.0f);
  EXPECT_EQ(out[4], 4.0f);
  EXPECT_TRUE(std::isnan(out[5]));
  // Only a lower bound; the unused upper one is passed as NaN and ignored.
  be().clamp(view(x, {6}), Scalar(0.0), Scalar(std::nan("")), true, false, view(out, {6}));
  EXPECT_EQ(out[0], 0.0f);
  EXPECT_EQ(out[4], 9.0f);
  EXPECT_TRUE(std::isnan(out[5]));
  be().clamp(view(x, {6}), Scalar(std::nan("")), Scalar(1.0), false, true, view(out, {6}));
  EXPECT_EQ(out[0], -5.0f);
  EXPECT_EQ(out[4], 1.0f);
  // A NaN bound that is in use makes everything NaN.
  be().clamp(view(x, {6}), Scalar(std::nan("")), Scalar(1.0), true, true, view(out, {6}));
  for (float v : out) EXPECT_TRUE(std::isnan(v));
  std::vector<int32_t> i = {-100, 0, 100}, j(3);
  be().clamp(view(i, {3}), Scalar(-10), Scalar(std::numeric_limits<int32_t>::max()), true, false, view(j, {3}));
  EXPECT_EQ(j, (std::vector<int32_t>{-10, 0, 100}));
  std::vector<Half> h = {Half(0.0f), Half(1.0f)}, hc(2);
  be().clamp(view(h, {2}), Scalar(0.1), Scalar(0.5), true, true, view(hc, {2}));
  EXPECT_EQ(hc[0].bits, Half(0.1f).bits);
  EXPECT_EQ(hc[1].bits, Half(0.5f).bits);
  std::vector<uint8_t> bools = {0, 1}, bout(2);
  EXPECT_THROW(be().clamp(bool_view(bools, {2}), Scalar(0), Scalar(1), true, true, bool_view(bout, {2})), Error);
}

// ---- large sizes: the threaded paths ----

TEST(CpuElementwise, LargeContiguousAndStridedUseThreads) {
  const int64_t n = 3 * base::kGrainSize + 17;
  std::vector<float> a = filled<float>(n, 0.0, 1.0), b = filled<float>(n, 5.0, -0.5), out(n);
  be().binary(BinaryOp::Add, view(a, {n}), view(b, {n}), view(out, {n}));
  for (int64_t i = 0; i < n; ++i) ASSERT_EQ(out[i], a[i] + b[i]) << i;
  be().binary(BinaryOp::Mul, view(a, {n}), view(b, {n}, {0}), view(out, {n}));
  for (int64_t i = 0; i < n; ++i) ASSERT_EQ(out[i], a[i] * 5.0f) << i;

  // A transposed [rows, cols] input with odd sizes: thread chunks split rows.
  const int64_t rows = 509, cols = 263;
  std::vector<double> m = filled<double>(rows * cols, 1.0, 1.0), r(rows * cols);
  std::vector<double> bias = filled<double>(cols, 0.0, 1000.0);
  be().binary(BinaryOp::Add, view(m, {rows, cols}, {1, rows}), view(bias, {rows, cols}, {0, 1}), view(r, {rows, cols}));
  for (int64_t i = 0; i < rows; ++i) {
    for (int64_t j = 0; j < cols; ++j) ASSERT_EQ(r[i * cols + j], m[j * rows + i] + bias[j]) << i << "," << j;
  }

  std::vector<uint8_t> lt(n);
  be().binary(BinaryOp::Gt, view(a, {n}), view(b, {n}), bool_view(lt, {n}));
  for (int64_t i = 0; i < n; ++i) ASSERT_EQ(lt[i], a[i] > b[i] ? 1 : 0) << i;

  std::vector<float> e(n);
  std::vector<float> small = filled<float>(n, -3.0, 1e-4);
  be().unary(UnaryOp::Exp, view(small, {n}), view(e, {n}));
  // Runs may call libmvec's vector expf and a remainder the scalar one: equal within a few ulp.
  for (int64_t i = 0; i < n; ++i) ASSERT_NEAR(e[i], std::exp(small[i]), 4e-7f * std::exp(small[i])) << i;

  std::vector<float> w(n);
  be().where(bool_view(lt, {n}), view(a, {n}), view(b, {n}), view(w, {n}));
  for (int64_t i = 0; i < n; ++i) ASSERT_EQ(w[i], lt[i] ? a[i] : b[i]) << i;
}

// ---- copy ----

/// Copies a fixed set of values from S to D, contiguous and transposed, and compares with
/// kernels::convert element by element.
template <typename D, typename S>
void check_copy_pair() {
  const std::vector<double> values = {0.0, 1.0, -1.0, 2.7, -2.7, 100.5, 255.0, 0.1, -0.5, 65504.0, 1e-3, 3.0};
  Buf<S> src(values.size());
  for (size_t i = 0; i < values.size(); ++i) src[i] = store(kernels::convert<S>(values[i]));
  Buf<D> dst(values.size());
  be().copy(tview<D>(dst, {12}), tview<S>(src, {12}));
  for (size_t i = 0; i < values.size(); ++i) {
    const auto expected = store(kernels::convert<D>(element<S>(src, i)));
    ASSERT_EQ(std::memcmp(&dst[i], &expected, sizeof(expected)), 0)
        << dtype_name(dtype_v<S>) << " -> " << dtype_name(dtype_v<D>) << " at " << i;
  }
  // [3, 4] destination from the transposed view of a [4, 3] source.
  Buf<D> dst2(values.size());
  be().copy(tview<D>(dst2, {3, 4}), tview<S>(src, {3, 4}, {1, 3}));
  for (size_t r = 0; r < 3; ++r) {
    for (size_t c = 0; c < 4; ++c) {
      const auto expected = store(kernels::convert<D>(element<S>(src, c * 3 + r)));
      ASSERT_EQ(std::memcmp(&dst2[r * 4 + c], &expected, sizeof(expected)), 0);
    }
  }
}

template <typename D>
void check_copy_to() {
  check_copy_pair<D, bool>();
  check_copy_pair<D, uint8_t>();
  check_copy_pair<D, int8_t>();
  check_copy_pair<D, int16_t>();
  check_copy_pair<D, int32_t>();
  check_copy_pair<D, int64_t>();
  check_copy_pair<D, Half>();
  check_copy_pair<D, BFloat16>();
  check_copy_pair<D, float>();
  check_copy_pair<D, double>();
}

TEST(CpuCopy, EveryDtypePair) {
  check_copy_to<bool>();
  check_copy_to<uint8_t>();
  check_copy_to<int8_t>();
  check_copy_to<int16_t>();
  check_copy_to<int32_t>();
  check_copy_to<int64_t>();
  check_copy_to<Half>();
  check_copy_to<BFloat16>();
  check_copy_to<float>();
  check_copy_to<double>();
}

TEST(CpuCopy, ConversionValues) {
  std::vector<float> f = {2.7f, -2.7f, -1.0f, 200.0f, kNanF, 0.0f};
  std::vector<int32_t> i(6);
  be().copy(view(i, {6}), view(f, {6}));
  EXPECT_EQ(i[0], 2);
  EXPECT_EQ(i[1], -2);
  EXPECT_EQ(i[2], -1);
  std::vector<uint8_t> u(6);
  be().copy(view(u, {6}), view(f, {6}));
  EXPECT_EQ(u[2], 255);  // -1.0 -> uint8 wraps (PyTorch goes through int64)
  EXPECT_EQ(u[3], 200);
  std::vector<uint8_t> b(6);
  be().copy(bool_view(b, {6}), view(f, {6}));
  EXPECT_EQ(b, (std::vector<uint8_t>{1, 1, 1, 1, 1, 0}));  // NaN is true
  // double -> half through float, like PyTorch: a double just above a half tie rounds to even.
  std::vector<double> d = {1.0 + 0x1p-11 + 0x1p-40, 65519.0, 65520.0, 0x1p-24};
  std::vector<Half> h(4);
  be().copy(view(h, {4}), view(d, {4}));
  EXPECT_EQ(h[0].bits, 0x3c00);
  EXPECT_EQ(h[1].bits, 0x7bff);  // 65504, the largest half
  EXPECT_EQ(h[2].bits, 0x7c00);  // inf
  EXPECT_EQ(h[3].bits, 0x0001);  // smallest subnormal
  std::vector<double> back(4);
  be().copy(view(back, {4}), view(h, {4}));
  EXPECT_EQ(back[1], 65504.0);
  EXPECT_EQ(back[3], 0x1p-24);
  std::vector<int64_t> big = {(int64_t{1} << 53) + 1};
  std::vector<double> bd(1);
  be().copy(view(bd, {1}), view(big, {1}));
  EXPECT_EQ(bd[0], 9007199254740992.0);
}

TEST(CpuCopy, StridesBroadcastAndSameDtype) {
  std::vector<int16_t> src = {1, 2, 3, 4, 5, 6}, dst(6);
  be().copy(view(dst, {2, 3}), view(src, {2, 3}));  // memcpy path
  EXPECT_EQ(dst, src);
  be().copy(view(dst, {2, 3}), view(src, {2, 3}, {1, 2}));  // transposed source
  EXPECT_EQ(dst, (std::vector<int16_t>{1, 3, 5, 2, 4, 6}));
  be().copy(view(dst, {2, 3}, {1, 2}), view(src, {2, 3}));  // transposed destination
  EXPECT_EQ(dst, (std::vector<int16_t>{1, 4, 2, 5, 3, 6}));
  std::vector<int16_t> row = {7, 8, 9};
  be().copy(view(dst, {2, 3}), view(row, {2, 3}, {0, 1}));  // expanded source
  EXPECT_EQ(dst, (std::vector<int16_t>{7, 8, 9, 7, 8, 9}));
  be().copy(view(dst, {2, 3}), view(row, {3}));  // source of lower rank: broadcast here
  EXPECT_EQ(dst, (std::vector<int16_t>{7, 8, 9, 7, 8, 9}));
  std::vector<float> one = {4.5f};
  be().copy(view(dst, {2, 3}), view(one, {2, 3}, {0, 0}));  // a broadcast scalar, converted
  EXPECT_EQ(dst, std::vector<int16_t>(6, 4));
  std::vector<int16_t> bad = {1, 2};
  EXPECT_THROW(be().copy(view(dst, {2, 3}), view(bad, {2})), Error);
  // Zero elements: nothing happens, null data is fine.
  TensorView empty_dst{nullptr, {0, 3}, {3, 1}, kFloat32};
  TensorView empty_src{nullptr, {0, 3}, {3, 1}, kInt64};
  be().copy(empty_dst, empty_src);
  // Large, to take the threaded conversion and memcpy paths.
  const int64_t n = 2 * base::kGrainSize + 5;
  std::vector<double> big = filled<double>(n, -1000.0, 0.37);
  std::vector<float> bf(n);
  be().copy(view(bf, {n}), view(big, {n}));
  for (int64_t k = 0; k < n; ++k) ASSERT_EQ(bf[k], static_cast<float>(big[k])) << k;
  std::vector<double> big2(n);
  be().copy(view(big2, {n}), view(big, {n}));
  EXPECT_EQ(big2, big);
}

TEST(CpuCopy, TransposedSourcesAnyRank) {
  // [rows, cols] from the transpose of a [cols, rows] buffer, with odd sizes (partial tiles),
  // large enough for several threads, same dtype and converting.
  const int64_t rows = 301, cols = 229;
  std::vector<int32_t> src(rows * cols);
  for (size_t i = 0; i < src.size(); ++i) src[i] = static_cast<int32_t>(i * 7 - 1000);
  std::vector<int32_t> same(rows * cols);
  std::vector<double> wide(rows * cols);
  be().copy(view(same, {rows, cols}), view(src, {rows, cols}, {1, rows}));
  be().copy(view(wide, {rows, cols}), view(src, {rows, cols}, {1, rows}));
  for (int64_t r = 0; r < rows; ++r) {
    for (int64_t c = 0; c < cols; ++c) {
      ASSERT_EQ(same[r * cols + c], src[c * rows + r]) << r << "," << c;
      ASSERT_EQ(wide[r * cols + c], static_cast<double>(src[c * rows + r])) << r << "," << c;
    }
  }
  // x.permute(0, 2, 1) of a contiguous [B, N, M] into a contiguous [B, M, N], and a
  // transposed destination (contiguous source written into dst.t()).
  const int64_t batch = 3, n = 19, m = 40;
  std::vector<Half> x(batch * n * m);
  for (size_t i = 0; i < x.size(); ++i) x[i] = Half(static_cast<float>(i % 1000) * 0.5f);
  std::vector<float> y(batch * m * n);
  be().copy(view(y, {batch, m, n}), view(x, {batch, m, n}, {n * m, 1, m}));
  for (int64_t b = 0; b < batch; ++b) {
    for (int64_t i = 0; i < m; ++i) {
      for (int64_t j = 0; j < n; ++j) {
        ASSERT_EQ(y[(b * m + i) * n + j], static_cast<float>(x[(b * n + j) * m + i])) << b << "," << i << "," << j;
      }
    }
  }
  std::vector<Half> back(batch * n * m);
  be().copy(view(back, {batch, m, n}, {n * m, 1, m}), view(y, {batch, m, n}));
  for (size_t i = 0; i < x.size(); ++i) ASSERT_EQ(back[i].bits, x[i].bits) << i;
}

// ---- fill ----

template <typename T>
void check_fill(const Scalar& value, T expected) {
  std::vector<T> buf(8, kernels::convert<T>(3));
  const T three = buf[0];
  be().fill(view(buf, {8}), value);
  for (const T& v : buf) ASSERT_EQ(std::memcmp(&v, &expected, sizeof(T)), 0) << dtype_name(dtype_v<T>);
  std::vector<T> strided(8, three);
  be().fill(view(strided, {2, 2}, {4, 2}), value);  // elements 0, 2, 4, 6
  for (size_t i = 0; i < 8; ++i) {
    const T want = i % 2 == 0 ? expected : three;
    ASSERT_EQ(std::memcmp(&strided[i], &want, sizeof(T)), 0) << dtype_name(dtype_v<T>) << " at " << i;
  }
}

TEST(CpuFill, EveryDtypeAnyStrides) {
  check_fill<float>(Scalar(2.5), 2.5f);
  check_fill<double>(Scalar(int64_t{-7}), -7.0);
  check_fill<Half>(Scalar(0.1), Half(0.1f));
  check_fill<BFloat16>(Scalar(true), BFloat16(1.0f));
  check_fill<int64_t>(Scalar(int64_t{1} << 40), int64_t{1} << 40);
  check_fill<int32_t>(Scalar(-2.9), -2);                       // truncated
  check_fill<int16_t>(Scalar(int64_t{70000}), int16_t{4464});  // wraps
  check_fill<int8_t>(Scalar(int64_t{-5}), int8_t{-5});
  check_fill<uint8_t>(Scalar(-1.0), uint8_t{255});
  std::vector<uint8_t> b(4, 0);
  be().fill(bool_view(b, {4}), Scalar(0.5));
  EXPECT_EQ(b, std::vector<uint8_t>(4, 1));
  const int64_t n = 2 * base::kGrainSize + 3;
  std::vector<float> big(2 * n, 1.0f);
  be().fill(view(big, {n}, {2}), Scalar(-3.0));
  for (int64_t i = 0; i < 2 * n; ++i) ASSERT_EQ(big[i], i % 2 == 0 ? -3.0f : 1.0f) << i;
}

}  // namespace
}  // namespace ember::cpu
