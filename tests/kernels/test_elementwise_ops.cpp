// The shared element-wise functors (src/kernels/elementwise_ops.h) called as plain host
// functions: the same code the CPU loops and the CUDA kernels instantiate.
#include <gtest/gtest.h>

#include <cmath>
#include <cstdint>
#include <cstring>
#include <limits>

#include "kernels/elementwise_ops.h"

namespace ember::kernels {
namespace {

constexpr float kNanF = std::numeric_limits<float>::quiet_NaN();
constexpr double kNan = std::numeric_limits<double>::quiet_NaN();
constexpr double kInf = std::numeric_limits<double>::infinity();

// ---- domains ----

static_assert(accepts_v<Add, bool> && accepts_v<Add, int8_t> && accepts_v<Add, Half>);
static_assert(!accepts_v<Sub, bool> && accepts_v<Sub, uint8_t>);
static_assert(!accepts_v<Neg, bool> && accepts_v<Neg, int64_t>);
static_assert(!accepts_v<Exp, int32_t> && !accepts_v<Exp, bool> && accepts_v<Exp, BFloat16> && accepts_v<Exp, double>);
static_assert(!accepts_v<Div, int64_t> && accepts_v<Div, float>);
static_assert(accepts_v<Pow, int16_t> && !accepts_v<Pow, bool>);
static_assert(accepts_v<Eq, bool> && accepts_v<LogicalAnd, double> && accepts_v<LogicalNot, int8_t>);
static_assert(!accepts_v<Clamp<bool>, bool> && accepts_v<Clamp<int>, int>);
static_assert(is_floating_v<Half> && is_floating_v<BFloat16> && !is_floating_v<int>);

// ---- return types ----

static_assert(std::is_same_v<decltype(Lt{}(1.0f, 2.0f)), bool>);
static_assert(std::is_same_v<decltype(LogicalOr{}(1, 0)), bool>);
static_assert(std::is_same_v<decltype(LogicalNot{}(2.5)), bool>);
static_assert(std::is_same_v<decltype(Add{}(int8_t{1}, int8_t{2})), int8_t>);
static_assert(std::is_same_v<decltype(Maximum{}(1.0f, 2.0f)), float>);

TEST(ElementwiseOps, ArithmeticOnFloats) {
  EXPECT_EQ(Add{}(1.5f, 2.25f), 3.75f);
  EXPECT_EQ(Sub{}(1.5, 2.25), -0.75);
  EXPECT_EQ(Mul{}(-3.0f, 0.5f), -1.5f);
  EXPECT_EQ(Div{}(1.0, 4.0), 0.25);
  EXPECT_EQ(Div{}(1.0f, 0.0f), std::numeric_limits<float>::infinity());
  EXPECT_TRUE(std::isnan(Div{}(0.0, 0.0)));
  EXPECT_EQ(Neg{}(2.5f), -2.5f);
  EXPECT_TRUE(std::signbit(Neg{}(0.0)));
}

TEST(ElementwiseOps, IntegerArithmeticWraps) {
  constexpr int32_t kMax32 = std::numeric_limits<int32_t>::max();
  constexpr int64_t kMin64 = std::numeric_limits<int64_t>::min();
  EXPECT_EQ(Add{}(kMax32, int32_t{1}), std::numeric_limits<int32_t>::min());
  EXPECT_EQ(Sub{}(kMin64, int64_t{1}), std::numeric_limits<int64_t>::max());
  EXPECT_EQ(Mul{}(int64_t{1} << 62, int64_t{4}), 0);
  EXPECT_EQ(Mul{}(kMax32, kMax32), 1);  // (2^31-1)^2 mod 2^32
  EXPECT_EQ(Add{}(uint8_t{250}, uint8_t{10}), uint8_t{4});
  EXPECT_EQ(Sub{}(uint8_t{3}, uint8_t{5}), uint8_t{254});
  EXPECT_EQ(Mul{}(int8_t{64}, int8_t{4}), int8_t{0});
  EXPECT_EQ(Neg{}(int8_t{-128}), int8_t{-128});
  EXPECT_EQ(Neg{}(uint8_t{1}), uint8_t{255});
  EXPECT_EQ(Neg{}(kMin64), kMin64);
}

TEST(ElementwiseOps, BoolArithmeticIsLogical) {
  EXPECT_EQ(Add{}(true, true), true);
  EXPECT_EQ(Add{}(false, false), false);
  EXPECT_EQ(Mul{}(true, false), false);
  EXPECT_EQ(Mul{}(true, true), true);
  EXPECT_EQ(Maximum{}(false, true), true);
  EXPECT_EQ(Minimum{}(false, true), false);
}

TEST(ElementwiseOps, IntegerDivisionNeverTraps) {
  EXPECT_EQ(Div{}(7, 2), 3);
  EXPECT_EQ(Div{}(-7, 2), -3);  // truncation toward zero
  EXPECT_EQ(Div{}(7, 0), 0);
  EXPECT_EQ(Div{}(int64_t{0}, int64_t{0}), 0);
  EXPECT_EQ(Div{}(std::numeric_limits<int32_t>::min(), -1), std::numeric_limits<int32_t>::min());
  EXPECT_EQ(Div{}(int8_t{-128}, int8_t{-1}), int8_t{-128});
  EXPECT_EQ(Div{}(uint8_t{200}, uint8_t{0}), uint8_t{0});
  EXPECT_EQ(Div{}(true, false), false);
  EXPECT_EQ(Div{}(true, true), true);
}

TEST(ElementwiseOps, MaximumMinimumPropagateNan) {
  EXPECT_EQ(Maximum{}(1.0f, 2.0f), 2.0f);
  EXPECT_EQ(Minimum{}(1.0f, 2.0f), 1.0f);
  EXPECT_TRUE(std::isnan(Maximum{}(kNanF, 2.0f)));
  EXPECT_TRUE(std::isnan(Maximum{}(2.0f, kNanF)));
  EXPECT_TRUE(std::isnan(Minimum{}(kNan, -kInf)));
  EXPECT_TRUE(std::isnan(Minimum{}(-kInf, kNan)));
  EXPECT_EQ(Maximum{}(-kInf, 3.0), 3.0);
  EXPECT_EQ(Maximum{}(int64_t{-5}, int64_t{3}), 3);
  EXPECT_EQ(Minimum{}(uint8_t{200}, uint8_t{7}), 7);
  // std::fmax would drop the NaN; the functor must not behave like it.
  EXPECT_FALSE(std::isnan(std::fmax(kNan, 1.0)));
}

TEST(ElementwiseOps, IntegerPowBySquaring) {
  EXPECT_EQ(Pow{}(3, 4), 81);
  EXPECT_EQ(Pow{}(-2, 3), -8);
  EXPECT_EQ(Pow{}(-2, 4), 16);
  EXPECT_EQ(Pow{}(0, 0), 1);
  EXPECT_EQ(Pow{}(5, 0), 1);
  EXPECT_EQ(Pow{}(0, 5), 0);
  EXPECT_EQ(Pow{}(int64_t{2}, int64_t{62}), int64_t{1} << 62);
  EXPECT_EQ(Pow{}(int64_t{2}, int64_t{64}), 0);  // wraps
  EXPECT_EQ(Pow{}(int64_t{3}, int64_t{39}), int64_t{4052555153018976267});
  EXPECT_EQ(Pow{}(uint8_t{3}, uint8_t{5}), uint8_t{243});
  EXPECT_EQ(Pow{}(uint8_t{2}, uint8_t{9}), uint8_t{0});
  EXPECT_EQ(Pow{}(int8_t{-3}, int8_t{3}), int8_t{-27});
  // Negative exponents (rejected by the front end) still have defined values.
  EXPECT_EQ(Pow{}(1, -3), 1);
  EXPECT_EQ(Pow{}(-1, -3), -1);
  EXPECT_EQ(Pow{}(-1, -4), 1);
  EXPECT_EQ(Pow{}(2, -1), 0);
}

TEST(ElementwiseOps, FloatPowIsStdPow) {
  EXPECT_EQ(Pow{}(2.0, 0.5), std::pow(2.0, 0.5));
  EXPECT_EQ(Pow{}(1.7f, 3.2f), std::pow(1.7f, 3.2f));
  EXPECT_TRUE(std::isnan(Pow{}(-2.0, 0.5)));
  EXPECT_EQ(Pow{}(kNan, 0.0), 1.0);
}

TEST(ElementwiseOps, Comparisons) {
  EXPECT_TRUE(Eq{}(1.0f, 1.0f));
  EXPECT_FALSE(Eq{}(kNanF, kNanF));
  EXPECT_TRUE(Ne{}(kNanF, kNanF));
  EXPECT_FALSE(Lt{}(kNan, 1.0));
  EXPECT_FALSE(Ge{}(kNan, 1.0));
  EXPECT_TRUE(Le{}(2, 2));
  EXPECT_FALSE(Gt{}(2, 2));
  EXPECT_TRUE(Gt{}(uint8_t{200}, uint8_t{100}));
  EXPECT_TRUE(Lt{}(false, true));
  EXPECT_TRUE(Eq{}(0.0, -0.0));
}

TEST(ElementwiseOps, LogicalOpsTreatNonzeroAsTrue) {
  EXPECT_TRUE(LogicalAnd{}(2.5, -1.0));
  EXPECT_FALSE(LogicalAnd{}(2.5, 0.0));
  EXPECT_FALSE(LogicalAnd{}(-0.0, 1.0));
  EXPECT_TRUE(LogicalAnd{}(kNan, 1.0));  // NaN is nonzero
  EXPECT_TRUE(LogicalOr{}(0, 7));
  EXPECT_FALSE(LogicalOr{}(uint8_t{0}, uint8_t{0}));
  EXPECT_TRUE(LogicalOr{}(false, true));
  EXPECT_TRUE(LogicalNot{}(0));
  EXPECT_FALSE(LogicalNot{}(int64_t{-3}));
  EXPECT_TRUE(LogicalNot{}(-0.0f));
  EXPECT_FALSE(LogicalNot{}(kNanF));
  EXPECT_FALSE(LogicalNot{}(true));
}

TEST(ElementwiseOps, FloatClassifiers) {
  const double inf = std::numeric_limits<double>::infinity();
  for (double x : {0.0, -0.0, 1.5, -1e308, std::numeric_limits<double>::denorm_min()}) {
    EXPECT_TRUE(IsFinite{}(x)) << x;
    EXPECT_FALSE(IsNan{}(x)) << x;
    EXPECT_FALSE(IsInf{}(x)) << x;
  }
  for (double x : {inf, -inf}) {
    EXPECT_FALSE(IsFinite{}(x));
    EXPECT_FALSE(IsNan{}(x));
    EXPECT_TRUE(IsInf{}(x));
  }
  EXPECT_FALSE(IsFinite{}(kNanF));
  EXPECT_TRUE(IsNan{}(kNanF));
  EXPECT_FALSE(IsInf{}(kNanF));
  EXPECT_FALSE(IsInf{}(-std::numeric_limits<float>::infinity() * 0.0f));  // NaN, not infinity
  // Integers and bools are always finite, including the extremes where x - x could overflow.
  EXPECT_TRUE(IsFinite{}(std::numeric_limits<int64_t>::min()));
  EXPECT_TRUE(IsFinite{}(uint8_t{255}));
  EXPECT_TRUE(IsFinite{}(true));
  EXPECT_FALSE(IsNan{}(int32_t{-7}));
  EXPECT_FALSE(IsInf{}(std::numeric_limits<int32_t>::max()));
}

TEST(ElementwiseOps, AbsAndRelu) {
  EXPECT_EQ(Abs{}(-2.5f), 2.5f);
  EXPECT_FALSE(std::signbit(Abs{}(-0.0)));
  EXPECT_TRUE(std::isnan(Abs{}(kNan)));
  EXPECT_EQ(Abs{}(int16_t{-7}), 7);
  EXPECT_EQ(Abs{}(std::numeric_limits<int32_t>::min()), std::numeric_limits<int32_t>::min());
  EXPECT_EQ(Abs{}(uint8_t{200}), 200);

  EXPECT_EQ(Relu{}(-3.0f), 0.0f);
  EXPECT_EQ(Relu{}(3.0f), 3.0f);
  EXPECT_TRUE(std::isnan(Relu{}(kNanF)));
  EXPECT_TRUE(std::isnan(Relu{}(-kNan)));
  EXPECT_EQ(Relu{}(-kInf), 0.0);
  EXPECT_EQ(Relu{}(int64_t{-9}), 0);
  EXPECT_EQ(Relu{}(int8_t{9}), 9);
  EXPECT_EQ(Relu{}(uint8_t{9}), 9);
}

TEST(ElementwiseOps, TranscendentalsMatchStd) {
  for (double x : {0.1, 0.5, 1.0, 2.0, 7.25}) {
    EXPECT_EQ(Exp{}(x), std::exp(x));
    EXPECT_EQ(Log{}(x), std::log(x));
    EXPECT_EQ(Sqrt{}(x), std::sqrt(x));
    EXPECT_DOUBLE_EQ(Rsqrt{}(x), 1.0 / std::sqrt(x));
    EXPECT_EQ(Sin{}(x), std::sin(x));
    EXPECT_EQ(Cos{}(-x), std::cos(-x));
    EXPECT_EQ(Tanh{}(-x), std::tanh(-x));
    const float xf = static_cast<float>(x);
    EXPECT_EQ(Exp{}(xf), std::exp(xf));
    EXPECT_EQ(Tanh{}(xf), std::tanh(xf));
  }
  EXPECT_TRUE(std::isnan(Log{}(-1.0)));
  EXPECT_EQ(Log{}(0.0), -kInf);
  EXPECT_TRUE(std::isnan(Sqrt{}(-1.0f)));
  EXPECT_EQ(Rsqrt{}(0.0), kInf);
  EXPECT_EQ(Rsqrt{}(4.0f), 0.5f);
}

TEST(ElementwiseOps, SigmoidIsStableInBothTails) {
  EXPECT_EQ(Sigmoid{}(0.0), 0.5);
  EXPECT_NEAR(Sigmoid{}(2.0), 1.0 / (1.0 + std::exp(-2.0)), 1e-16);
  EXPECT_NEAR(Sigmoid{}(-2.0), 1.0 / (1.0 + std::exp(2.0)), 1e-16);
  EXPECT_EQ(Sigmoid{}(100.0f), 1.0f);
  // The naive 1 / (1 + exp(100)) overflows exp in float and returns exactly 0.
  const float tiny = Sigmoid{}(-100.0f);
  EXPECT_GT(tiny, 0.0f);
  EXPECT_NEAR(tiny, 3.7200759760208356e-44, 2e-45);  // a float subnormal: 1.4e-45 apart
  EXPECT_NEAR(Sigmoid{}(-700.0), std::exp(-700.0), 1e-310);
  EXPECT_EQ(Sigmoid{}(kInf), 1.0);
  EXPECT_EQ(Sigmoid{}(-kInf), 0.0);
  EXPECT_TRUE(std::isnan(Sigmoid{}(kNan)));
  EXPECT_TRUE(std::isnan(Sigmoid{}(kNanF)));
}

TEST(ElementwiseOps, GeluMatchesPyTorch) {
  // torch.nn.functional.gelu(torch.tensor([...], dtype=torch.float64)).
  EXPECT_NEAR(Gelu{}(1.0), 0.8413447460685429, 1e-15);
  EXPECT_NEAR(Gelu{}(-1.0), -0.15865525393145707, 1e-15);
  EXPECT_EQ(Gelu{}(0.0), 0.0);
  EXPECT_NEAR(Gelu{}(1.0f), 0.8413447460685429, 1e-7);
  EXPECT_NEAR(Gelu{}(-1.0f), -0.15865525393145707, 1e-7);
  EXPECT_NEAR(Gelu{}(3.0), 3.0 * 0.5 * (1.0 + std::erf(3.0 / std::sqrt(2.0))), 1e-15);
  EXPECT_TRUE(std::isnan(Gelu{}(kNan)));
  // approximate="tanh".
  EXPECT_NEAR(GeluTanh{}(1.0), 0.8411919906082768, 1e-15);
  EXPECT_NEAR(GeluTanh{}(1.0f), 0.8411919906082768, 1e-7);
  EXPECT_NEAR(GeluTanh{}(-1.0), -0.15880800939172324, 1e-15);
  EXPECT_EQ(GeluTanh{}(0.0), 0.0);
  // The two forms differ, but only slightly.
  EXPECT_NE(Gelu{}(1.0), GeluTanh{}(1.0));
}

TEST(ElementwiseOps, Silu) {
  EXPECT_EQ(Silu{}(0.0), 0.0);
  EXPECT_NEAR(Silu{}(1.0), 0.7310585786300049, 1e-15);
  EXPECT_NEAR(Silu{}(-2.0), -2.0 / (1.0 + std::exp(2.0)), 1e-15);
  EXPECT_NEAR(Silu{}(-20.0f), -20.0f / (1.0f + std::exp(20.0f)), 1e-12);
  EXPECT_TRUE(std::isnan(Silu{}(kNan)));
}

TEST(ElementwiseOps, AddScaledAndClamp) {
  EXPECT_EQ(AddScaled<double>{2.0}(1.0, 3.0), 7.0);
  EXPECT_EQ(AddScaled<float>{-1.0f}(1.0f, 3.0f), -2.0f);
  EXPECT_EQ(AddScaled<int32_t>{3}(1, 4), 13);
  EXPECT_EQ(AddScaled<int32_t>{2}(0, std::numeric_limits<int32_t>::max()), -2);  // wraps
  EXPECT_EQ(AddScaled<bool>{true}(false, true), true);

  const Clamp<float> c{-1.0f, 2.0f};
  EXPECT_EQ(c(-5.0f), -1.0f);
  EXPECT_EQ(c(0.5f), 0.5f);
  EXPECT_EQ(c(9.0f), 2.0f);
  EXPECT_TRUE(std::isnan(c(kNanF)));
  EXPECT_EQ((Clamp<float>{3.0f, 1.0f}(2.0f)), 1.0f);  // lo > hi: hi wins, as in PyTorch
  EXPECT_EQ((Clamp<int64_t>{0, 10}(-4)), 0);
  EXPECT_EQ((Clamp<uint8_t>{5, 10}(200)), 10);
}

TEST(ElementwiseOps, ConvertFloatToInteger) {
  EXPECT_EQ(convert<int32_t>(2.7f), 2);
  EXPECT_EQ(convert<int32_t>(-2.7f), -2);
  EXPECT_EQ(convert<int64_t>(-0.5), 0);
  EXPECT_EQ(convert<int64_t>(1e18), int64_t{1000000000000000000});
  // Out of range and NaN: the x86 "integer indefinite" value, without undefined behaviour.
  EXPECT_EQ(convert<int32_t>(3e9), std::numeric_limits<int32_t>::min());
  EXPECT_EQ(convert<int32_t>(kNan), std::numeric_limits<int32_t>::min());
  EXPECT_EQ(convert<int64_t>(kInf), std::numeric_limits<int64_t>::min());
  EXPECT_EQ(convert<int32_t>(-2147483648.0), std::numeric_limits<int32_t>::min());
  EXPECT_EQ(convert<int32_t>(2147483647.0), std::numeric_limits<int32_t>::max());
  // Narrow types truncate to int32 and then wrap; uint8 goes through int64 (PyTorch's rule).
  EXPECT_EQ(convert<int8_t>(200.0f), int8_t{-56});
  EXPECT_EQ(convert<int16_t>(40000.0), int16_t{-25536});
  EXPECT_EQ(convert<uint8_t>(-1.0f), uint8_t{255});
  EXPECT_EQ(convert<uint8_t>(300.5), uint8_t{44});
  EXPECT_EQ(convert<uint8_t>(kNan), uint8_t{0});
}

TEST(ElementwiseOps, ConvertToAndFromBool) {
  EXPECT_TRUE(convert<bool>(0.1));
  EXPECT_FALSE(convert<bool>(0.0));
  EXPECT_FALSE(convert<bool>(-0.0f));
  EXPECT_TRUE(convert<bool>(kNan));
  EXPECT_TRUE(convert<bool>(int64_t{-4}));
  EXPECT_FALSE(convert<bool>(Half(0.0f)));
  EXPECT_TRUE(convert<bool>(BFloat16(-2.0f)));
  EXPECT_EQ(convert<float>(true), 1.0f);
  EXPECT_EQ(convert<int64_t>(false), 0);
  EXPECT_EQ(convert<Half>(true).bits, Half(1.0f).bits);
}

TEST(ElementwiseOps, ConvertHalfAndBFloat16) {
  // float -> half rounds to nearest even: 1 + 2^-11 is a tie between 1 and 1 + 2^-10.
  EXPECT_EQ(convert<Half>(1.0f + 0x1p-11f).bits, 0x3c00);
  EXPECT_EQ(convert<Half>(1.0f + 3 * 0x1p-11f).bits, 0x3c02);
  EXPECT_EQ(convert<Half>(65520.0f).bits, 0x7c00);    // rounds up to inf
  EXPECT_EQ(convert<Half>(0x1p-25f).bits, 0x0000);    // a tie with zero: to even
  EXPECT_EQ(convert<Half>(0x1.8p-24f).bits, 0x0002);  // 1.5 x the smallest subnormal: to even
  // double -> half goes through float, as PyTorch does: 1 + 2^-11 + 2^-40 first rounds to the
  // tie 1 + 2^-11 in float, which then rounds to even (1.0). Direct rounding would give 1 + 2^-10.
  EXPECT_EQ(convert<Half>(1.0 + 0x1p-11 + 0x1p-40).bits, 0x3c00);
  EXPECT_EQ(convert<Half>(int64_t{65504}).bits, 0x7bff);
  EXPECT_EQ(convert<Half>(int64_t{70000}).bits, 0x7c00);
  EXPECT_EQ(convert<Half>(-2.5).bits, 0xc100);
  // bfloat16: 1 + 2^-8 is a tie between 1 and 1 + 2^-7.
  EXPECT_EQ(convert<BFloat16>(1.0f + 0x1p-8f).bits, 0x3f80);
  EXPECT_EQ(convert<BFloat16>(1.0f + 3 * 0x1p-8f).bits, 0x3f82);
  EXPECT_EQ(convert<BFloat16>(1.0 + 0x1p-8 + 0x1p-30).bits, 0x3f80);  // via float, like PyTorch
  EXPECT_TRUE(std::isnan(static_cast<float>(convert<BFloat16>(kNan))));
  EXPECT_TRUE(std::isnan(static_cast<float>(convert<Half>(kNanF))));
  // From the 16-bit types: through float, then the usual rules.
  EXPECT_EQ(convert<int32_t>(Half(-2.75f)), -2);
  EXPECT_EQ(convert<uint8_t>(BFloat16(-1.0f)), 255);
  EXPECT_EQ(convert<double>(Half::from_bits(0x0001)), 0x1p-24);
  EXPECT_EQ(convert<BFloat16>(Half(3.0f)).bits, BFloat16(3.0f).bits);
  EXPECT_EQ(convert<Half>(BFloat16(0.5f)).bits, 0x3800);
}

// The branch-free 16-bit conversions must agree bit for bit with Half / BFloat16 (ember/half.h).
float next_up(float f) { return std::nextafter(f, std::numeric_limits<float>::infinity()); }
float next_down(float f) { return std::nextafter(f, -std::numeric_limits<float>::infinity()); }

TEST(ElementwiseOps, BranchFreeHalfMatchesHalfStruct) {
  for (uint32_t bits = 0; bits <= 0xffff; ++bits) {
    const uint16_t h = static_cast<uint16_t>(bits);
    const float ref = Half::to_float(h);
    const float got = detail::half_bits_to_float(h);
    ASSERT_EQ(std::memcmp(&ref, &got, sizeof(float)), 0) << std::hex << bits;
    // Every half, the float midpoints to its neighbour (ties) and one float ulp around them.
    const float next = Half::to_float(static_cast<uint16_t>(h + 1));
    const float mid = (ref + next) / 2;
    for (float f : {ref, mid, next_up(mid), next_down(mid), next_up(ref), next_down(ref)}) {
      ASSERT_EQ(detail::half_bits_from_float(f), Half::from_float(f)) << std::hexfloat << f;
    }
  }
  uint32_t state = 12345;
  for (int i = 0; i < 1 << 20; ++i) {  // random bit patterns: NaN payloads, huge and tiny values
    state = state * 1664525u + 1013904223u;
    float f;
    std::memcpy(&f, &state, sizeof f);
    ASSERT_EQ(detail::half_bits_from_float(f), Half::from_float(f)) << std::hex << state;
  }
}

TEST(ElementwiseOps, BranchFreeBFloat16MatchesBFloat16Struct) {
  for (uint32_t bits = 0; bits <= 0xffff; ++bits) {
    const uint16_t b = static_cast<uint16_t>(bits);
    const float ref = static_cast<float>(BFloat16::from_bits(b));
    const float got = detail::bfloat16_bits_to_float(b);
    ASSERT_EQ(std::memcmp(&ref, &got, sizeof(float)), 0) << std::hex << bits;
    const float next = static_cast<float>(BFloat16::from_bits(static_cast<uint16_t>(b + 1)));
    const float mid = (ref + next) / 2;
    for (float f : {ref, mid, next_up(mid), next_down(mid)}) {
      ASSERT_EQ(detail::bfloat16_bits_from_float(f), BFloat16::from_float(f)) << std::hexfloat << f;
    }
  }
  uint32_t state = 777;
  for (int i = 0; i < 1 << 20; ++i) {
    state = state * 1664525u + 1013904223u;
    float f;
    std::memcpy(&f, &state, sizeof f);
    ASSERT_EQ(detail::bfloat16_bits_from_float(f), BFloat16::from_float(f)) << std::hex << state;
  }
}

TEST(ElementwiseOps, ConvertBetweenIntegersWraps) {
  EXPECT_EQ(convert<int8_t>(int64_t{300}), int8_t{44});
  EXPECT_EQ(convert<uint8_t>(int32_t{-1}), uint8_t{255});
  EXPECT_EQ(convert<int32_t>(int64_t{1} << 32), 0);
  EXPECT_EQ(convert<int64_t>(uint8_t{255}), 255);
  EXPECT_EQ(convert<double>(int64_t{1} << 53), 9007199254740992.0);
  EXPECT_EQ(convert<float>(16777217), 16777216.0f);  // round to nearest
}

}  // namespace
}  // namespace ember::kernels
