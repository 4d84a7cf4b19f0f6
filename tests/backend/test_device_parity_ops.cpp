// Every element-wise Backend entry point (copy, fill, unary, binary, add_scaled, where, clamp) and
// the tensor plumbing around it (moves between devices, printing, item) on each accelerator,
// compared with the CPU. Inputs are built on the CPU from a fixed seed and moved with .to().
#include <gtest/gtest.h>

#include <cmath>
#include <functional>
#include <limits>
#include <string>
#include <utility>
#include <vector>

#include "ember/ember.h"
#include "support/devices.h"
#include "support/error_of.h"

namespace {

using namespace ember;
using ember_test::close_to_cpu;
using ember_test::error_of;

constexpr double kNaN = std::numeric_limits<double>::quiet_NaN();
constexpr double kInf = std::numeric_limits<double>::infinity();
constexpr float kNaNf = std::numeric_limits<float>::quiet_NaN();
constexpr float kInff = std::numeric_limits<float>::infinity();

// float32 element-wise results may differ by a few ulp (CUDA's libdevice vs glibc).
constexpr double kRtol = 1e-5, kAtol = 1e-6;
// 16-bit results: one rounding of the float32 result, which may land on either neighbour.
constexpr double kRtol16 = 1e-2, kAtol16 = 1e-2;

double rtol_for(Dtype d) { return (d == kFloat16 || d == kBFloat16) ? kRtol16 : (d == kFloat64 ? 1e-12 : kRtol); }
double atol_for(Dtype d) { return (d == kFloat16 || d == kBFloat16) ? kAtol16 : (d == kFloat64 ? 1e-12 : kAtol); }

const std::vector<Dtype> kAllDtypes = {kBool,  kUInt8,   kInt8,     kInt16,   kInt32,
                                       kInt64, kFloat16, kBFloat16, kFloat32, kFloat64};
const std::vector<Dtype> kFloatDtypes = {kFloat32, kFloat64, kFloat16, kBFloat16};

/// Values that every dtype can hold exactly or by plain truncation: 0..40 in steps of 0.75
/// (non-negative, so float -> uint8 conversion is defined).
Tensor conversion_values() { return arange(0.0, 40.0, 0.75, kFloat64).reshape({6, 9}); }

/// Finite values, zeros of both signs, infinities and a NaN, for the NaN/inf rules of each op.
Tensor special_values() { return tensor({0.0, -0.0, 1.0, -1.0, 0.5, -2.5, 100.0, -100.0, kInf, -kInf, kNaN}); }

class DeviceParityOps : public ember_test::DeviceTest {
 protected:
  void SetUp() override {
    DeviceTest::SetUp();
    if (IsSkipped()) return;
    manual_seed(1234);
  }
  // Always a copy, so that in-place ops on it never touch the reference (the CPU self-test).
  Tensor on(const Tensor& cpu) const { return cpu.to(device(), false, true); }
};

TEST_P(DeviceParityOps, RoundTripIsExactForEveryDtype) {
  for (Dtype d : kAllDtypes) {
    SCOPED_TRACE(std::string(dtype_name(d)));
    Tensor x = conversion_values().to(d);
    Tensor moved = on(x);
    EXPECT_EQ(moved.device(), device());
    EXPECT_EQ(moved.dtype(), d);
    EXPECT_TRUE(equal(moved.cpu(), x));
  }
  Tensor scalar = scalar_tensor(2.5);
  EXPECT_EQ(on(scalar).dim(), 0);
  EXPECT_TRUE(equal(on(scalar).cpu(), scalar));
}

TEST_P(DeviceParityOps, CopyConvertsBetweenEveryPairOfDtypes) {
  for (Dtype from : kAllDtypes) {
    for (Dtype to : kAllDtypes) {
      const std::string what = std::string(dtype_name(from)) + " -> " + std::string(dtype_name(to));
      Tensor x = conversion_values().to(from);
      EXPECT_TRUE(close_to_cpu(on(x).to(to), x.to(to), 0, 0, what));
    }
  }
  // Rounding to the 16-bit types (round to nearest even), including values they cannot hold.
  Tensor fine = randn({257}, kFloat64) * 1000;
  for (Dtype to : {kFloat16, kBFloat16, kFloat32}) {
    EXPECT_TRUE(close_to_cpu(on(fine).to(to), fine.to(to), 0, 0, "float64 -> " + std::string(dtype_name(to))));
  }
  Tensor special = special_values();
  for (Dtype to : {kFloat16, kBFloat16, kFloat32, kBool}) {
    EXPECT_TRUE(close_to_cpu(on(special).to(to), special.to(to), 0, 0, "special -> " + std::string(dtype_name(to))));
  }
}

TEST_P(DeviceParityOps, CopyHandlesNonContiguousSources) {
  Tensor x = randn({6, 8, 5});
  Tensor d = on(x);
  EXPECT_CLOSE_TO_CPU(d.transpose(0, 2).contiguous(), x.transpose(0, 2).contiguous(), 0, 0);
  EXPECT_CLOSE_TO_CPU(d.permute({1, 2, 0}).contiguous(), x.permute({1, 2, 0}).contiguous(), 0, 0);
  EXPECT_CLOSE_TO_CPU(d.slice(1, 1, 7, 3).contiguous(), x.slice(1, 1, 7, 3).contiguous(), 0, 0);
  EXPECT_CLOSE_TO_CPU(d.select(2, 3).contiguous(), x.select(2, 3).contiguous(), 0, 0);
  EXPECT_CLOSE_TO_CPU(d.narrow(0, 2, 3).transpose(0, 1).contiguous(), x.narrow(0, 2, 3).transpose(0, 1).contiguous(), 0,
                      0);
  Tensor row = randn({1, 5});
  EXPECT_CLOSE_TO_CPU(on(row).expand({4, 5}).contiguous(), row.expand({4, 5}).contiguous(), 0, 0);
  EXPECT_CLOSE_TO_CPU(on(row).expand({3, 4, 5}).to(kFloat64), row.expand({3, 4, 5}).to(kFloat64), 0, 0);
  // Non-contiguous sources with a dtype change at the same time.
  EXPECT_CLOSE_TO_CPU(d.transpose(0, 1).to(kFloat16), x.transpose(0, 1).to(kFloat16), 0, 0);
  EXPECT_CLOSE_TO_CPU(d.slice(0, 0, 6, 2).to(kInt32), x.slice(0, 0, 6, 2).to(kInt32), 0, 0);
  // A non-contiguous CPU tensor moved to the device, and a device view moved back.
  EXPECT_CLOSE_TO_CPU(x.transpose(0, 2).to(device()), x.transpose(0, 2), 0, 0);
  EXPECT_TRUE(equal(d.slice(2, 1, 5, 2).cpu(), x.slice(2, 1, 5, 2)));
  EXPECT_CLOSE_TO_CPU(d.clone(), x, 0, 0);
}

TEST_P(DeviceParityOps, CopyIntoViewsAndAcrossDevices) {
  Tensor x = randn({4, 6});
  Tensor dst_cpu = zeros({6, 4});
  Tensor dst_dev = on(dst_cpu);
  dst_cpu.t().copy_(x);
  dst_dev.t().copy_(on(x));
  EXPECT_CLOSE_TO_CPU(dst_dev, dst_cpu, 0, 0);
  // Broadcasting source, other dtype, into a strided slice.
  Tensor big_cpu = zeros({5, 8}, kFloat64);
  Tensor big_dev = on(big_cpu);
  Tensor src = arange(4, kInt32);
  big_cpu.slice(1, 0, 8, 2).copy_(src);
  big_dev.slice(1, 0, 8, 2).copy_(on(src));
  EXPECT_CLOSE_TO_CPU(big_dev, big_cpu, 0, 0);
  // copy_ between devices in both directions, converting dtype on the way.
  Tensor into_dev = zeros({4, 6}, TensorOptions(kFloat16).device(device()));
  into_dev.copy_(x);
  EXPECT_CLOSE_TO_CPU(into_dev, x.to(kFloat16), 0, 0);
  Tensor into_cpu = zeros({6, 4}, kFloat64);
  into_cpu.copy_(on(x).t());
  EXPECT_TRUE(equal(into_cpu, x.t().to(kFloat64)));
}

TEST_P(DeviceParityOps, FillAndFactories) {
  for (Dtype d : kAllDtypes) {
    SCOPED_TRACE(std::string(dtype_name(d)));
    const TensorOptions o = TensorOptions(d).device(device());
    EXPECT_CLOSE_TO_CPU(zeros({3, 5}, o), zeros({3, 5}, d), 0, 0);
    EXPECT_CLOSE_TO_CPU(ones({3, 5}, o), ones({3, 5}, d), 0, 0);
    EXPECT_CLOSE_TO_CPU(full({2, 7}, 3, o), full({2, 7}, 3, d), 0, 0);
    EXPECT_CLOSE_TO_CPU(arange(0, 11, 2, o), arange(0, 11, 2, d), 0, 0);
  }
  const TensorOptions f = TensorOptions(kFloat32).device(device());
  EXPECT_CLOSE_TO_CPU(full({4}, -1.5, f), full({4}, -1.5), 0, 0);
  EXPECT_CLOSE_TO_CPU(full({4}, kNaN, f), full({4}, kNaN), 0, 0);
  EXPECT_CLOSE_TO_CPU(linspace(-1, 1, 9, f), linspace(-1, 1, 9), kRtol, kAtol);
  EXPECT_CLOSE_TO_CPU(eye(4, 3, f), eye(4, 3), 0, 0);
  // fill_ through a strided view leaves the rest alone.
  Tensor x = randn({5, 6});
  Tensor d = on(x);
  x.slice(1, 1, 6, 2).fill_(7.25);
  d.slice(1, 1, 6, 2).fill_(7.25);
  EXPECT_CLOSE_TO_CPU(d, x, 0, 0);
  x.t()[2].zero_();
  d.t()[2].zero_();
  EXPECT_CLOSE_TO_CPU(d, x, 0, 0);
  // Empty tensors: nothing to do, but no error either.
  EXPECT_EQ(zeros({0, 3}, f).numel(), 0);
  EXPECT_EQ(full({4, 0}, 2.0, f).cpu().numel(), 0);
}

using UnaryFn = std::function<Tensor(const Tensor&)>;
const std::vector<std::pair<std::string, UnaryFn>>& unary_ops() {
  static const std::vector<std::pair<std::string, UnaryFn>> ops = {
      {"neg", [](const Tensor& x) { return neg(x); }},
      {"abs", [](const Tensor& x) { return abs(x); }},
      {"exp", [](const Tensor& x) { return exp(x); }},
      {"log", [](const Tensor& x) { return log(x); }},
      {"sqrt", [](const Tensor& x) { return sqrt(x); }},
      {"rsqrt", [](const Tensor& x) { return rsqrt(x); }},
      {"sin", [](const Tensor& x) { return sin(x); }},
      {"cos", [](const Tensor& x) { return cos(x); }},
      {"tanh", [](const Tensor& x) { return tanh(x); }},
      {"erf", [](const Tensor& x) { return erf(x); }},
      {"sigmoid", [](const Tensor& x) { return sigmoid(x); }},
      {"relu", [](const Tensor& x) { return relu(x); }},
      {"gelu", [](const Tensor& x) { return gelu(x); }},
      {"gelu_tanh", [](const Tensor& x) { return gelu(x, "tanh"); }},
      {"silu", [](const Tensor& x) { return silu(x); }},
      {"logical_not", [](const Tensor& x) { return logical_not(x); }},
      {"isfinite", [](const Tensor& x) { return isfinite(x.log()); }},  // log gives NaN and -inf
      {"isnan", [](const Tensor& x) { return isnan(x.log()); }},
      {"isinf", [](const Tensor& x) { return isinf(x.log()); }},
  };
  return ops;
}

TEST_P(DeviceParityOps, EveryUnaryOpInEveryFloatingDtype) {
  Tensor base = randn({7, 33}) * 3;
  for (Dtype d : kFloatDtypes) {
    for (const auto& [name, fn] : unary_ops()) {
      const bool positive = name == "log" || name == "sqrt" || name == "rsqrt";
      Tensor x = (positive ? abs(base) + 0.05 : base).to(d);
      const std::string what = name + "(" + std::string(dtype_name(d)) + ")";
      EXPECT_TRUE(close_to_cpu(fn(on(x)), fn(x), rtol_for(d), atol_for(d), what));
      // A transposed (non-contiguous) operand.
      EXPECT_TRUE(close_to_cpu(fn(on(x).t()), fn(x.t()), rtol_for(d), atol_for(d), what + " transposed"));
    }
  }
}

TEST_P(DeviceParityOps, UnaryOpsFollowTheCpusNanAndInfinityRules) {
  for (Dtype d : {kFloat32, kFloat64, kFloat16}) {
    Tensor x = special_values().to(d);
    for (const auto& [name, fn] : unary_ops()) {
      EXPECT_TRUE(close_to_cpu(fn(on(x)), fn(x), rtol_for(d), atol_for(d),
                               name + " of special values (" + std::string(dtype_name(d)) + ")"));
    }
  }
}

TEST_P(DeviceParityOps, UnaryOpsOnIntegersAndBool) {
  Tensor i = tensor({-5, 0, 3, 127, -128});
  for (Dtype d : {kInt8, kInt16, kInt32, kInt64}) {
    Tensor x = i.to(d);
    EXPECT_CLOSE_TO_CPU(neg(on(x)), neg(x), 0, 0);
    EXPECT_CLOSE_TO_CPU(abs(on(x)), abs(x), 0, 0);
    EXPECT_CLOSE_TO_CPU(logical_not(on(x)), logical_not(x), 0, 0);
    // Integer inputs of floating functions give float32.
    EXPECT_CLOSE_TO_CPU(exp(on(x).to(kInt64) / 50), exp(x.to(kInt64) / 50), kRtol, kAtol);
    EXPECT_CLOSE_TO_CPU(sigmoid(on(x)), sigmoid(x), kRtol, kAtol);
  }
  Tensor b = tensor({true, false, true});
  EXPECT_CLOSE_TO_CPU(logical_not(on(b)), logical_not(b), 0, 0);
  EXPECT_CLOSE_TO_CPU(abs(on(b).to(kUInt8)), abs(b.to(kUInt8)), 0, 0);
}

using BinaryFn = std::function<Tensor(const Tensor&, const Tensor&)>;
const std::vector<std::pair<std::string, BinaryFn>>& binary_ops() {
  static const std::vector<std::pair<std::string, BinaryFn>> ops = {
      {"add", [](const Tensor& a, const Tensor& b) { return add(a, b); }},
      {"sub", [](const Tensor& a, const Tensor& b) { return sub(a, b); }},
      {"mul", [](const Tensor& a, const Tensor& b) { return mul(a, b); }},
      {"div", [](const Tensor& a, const Tensor& b) { return div(a, b); }},
      {"maximum", [](const Tensor& a, const Tensor& b) { return maximum(a, b); }},
      {"minimum", [](const Tensor& a, const Tensor& b) { return minimum(a, b); }},
      {"pow", [](const Tensor& a, const Tensor& b) { return pow(abs(a) + 0.5, b); }},
      {"eq", [](const Tensor& a, const Tensor& b) { return eq(a, b); }},
      {"ne", [](const Tensor& a, const Tensor& b) { return ne(a, b); }},
      {"lt", [](const Tensor& a, const Tensor& b) { return lt(a, b); }},
      {"le", [](const Tensor& a, const Tensor& b) { return le(a, b); }},
      {"gt", [](const Tensor& a, const Tensor& b) { return gt(a, b); }},
      {"ge", [](const Tensor& a, const Tensor& b) { return ge(a, b); }},
      {"logical_and", [](const Tensor& a, const Tensor& b) { return logical_and(a, b); }},
      {"logical_or", [](const Tensor& a, const Tensor& b) { return logical_or(a, b); }},
  };
  return ops;
}

TEST_P(DeviceParityOps, EveryBinaryOpWithBroadcasting) {
  // Rounded to a quarter so that comparisons see exact ties, and with some zeros.
  Tensor a = (randn({3, 1, 5}) * 4).mul_(4).to(kInt64).to(kFloat32) / 4;
  Tensor b = (randn({4, 5}) * 4).mul_(4).to(kInt64).to(kFloat32) / 4;
  for (Dtype d : kFloatDtypes) {
    Tensor x = a.to(d), y = b.to(d);
    for (const auto& [name, fn] : binary_ops()) {
      const std::string what = name + "(" + std::string(dtype_name(d)) + ")";
      EXPECT_TRUE(close_to_cpu(fn(on(x), on(y)), fn(x, y), rtol_for(d), atol_for(d), what));
      // Broadcast the other way round, with a non-contiguous operand.
      EXPECT_TRUE(close_to_cpu(fn(on(y).t().unsqueeze(0), on(x).transpose(1, 2)),
                               fn(y.t().unsqueeze(0), x.transpose(1, 2)), rtol_for(d), atol_for(d),
                               what + " transposed"));
    }
  }
}

TEST_P(DeviceParityOps, BinaryOpsPromoteTypesLikeTheCpu) {
  Tensor i64 = tensor({-3, 0, 2, 7, 5});
  Tensor i32 = tensor({2, 2, -4, 3, 5}).to(kInt32);
  Tensor u8 = tensor({1, 0, 3, 250, 5}).to(kUInt8);
  Tensor f32 = tensor({0.5f, -1.5f, 2.0f, 0.0f, 5.0f});
  Tensor f64 = tensor({0.25, 1.5, -2.0, 3.0, 5.0}, kFloat64);
  Tensor f16 = f32.to(kFloat16);
  Tensor bf16 = f32.to(kBFloat16);
  Tensor b = tensor({true, false, true, true, false});
  const std::vector<std::pair<std::string, Tensor>> operands = {{"int64", i64},     {"int32", i32},   {"uint8", u8},
                                                                {"float32", f32},   {"float64", f64}, {"float16", f16},
                                                                {"bfloat16", bf16}, {"bool", b}};
  for (const auto& [na, x] : operands) {
    for (const auto& [nb, y] : operands) {
      for (const auto& [op, fn] : binary_ops()) {
        if (op == "pow") continue;  // shifts its base through abs(); see below
        const std::string what = op + "(" + na + ", " + nb + ")";
        Tensor want;
        // Explicit captures: clang before 16 cannot capture structured bindings implicitly.
        const std::string cpu_error = error_of([&, &fn = fn, &x = x, &y = y] { want = fn(x, y); });
        if (cpu_error != "no error") {  // e.g. subtracting bools: the device must refuse alike
          EXPECT_EQ(error_of([&, &fn = fn, &x = x, &y = y] { fn(on(x), on(y)); }), cpu_error) << what;
          continue;
        }
        EXPECT_TRUE(close_to_cpu(fn(on(x), on(y)), want, rtol_for(want.dtype()), atol_for(want.dtype()), what));
      }
    }
  }
  // True division of integers gives float; integer pow stays integral.
  EXPECT_CLOSE_TO_CPU(div(on(i64), on(i32)), div(i64, i32), kRtol, kAtol);
  EXPECT_CLOSE_TO_CPU(pow(on(abs(i64)), on(abs(i32))), pow(abs(i64), abs(i32)), 0, 0);
  // Wrapped scalars and 0-dim tensors count by category only.
  EXPECT_CLOSE_TO_CPU(on(i32) + 2, i32 + 2, 0, 0);
  EXPECT_CLOSE_TO_CPU(on(i32) * 2.5, i32 * 2.5, kRtol, kAtol);
  EXPECT_CLOSE_TO_CPU(on(f16) + on(scalar_tensor(1.0, kFloat64)), f16 + scalar_tensor(1.0, kFloat64), kRtol16, kAtol16);
  EXPECT_CLOSE_TO_CPU(1 - on(f32), 1 - f32, kRtol, kAtol);
  EXPECT_CLOSE_TO_CPU(on(f32) / 3, f32 / 3, kRtol, kAtol);
  EXPECT_CLOSE_TO_CPU(pow(on(f32), 2), pow(f32, 2), kRtol, kAtol);
  EXPECT_CLOSE_TO_CPU(pow(on(f32), 0.5), pow(f32, 0.5), kRtol, kAtol);
  EXPECT_CLOSE_TO_CPU(on(f32) > 0.5, f32 > 0.5, 0, 0);
  EXPECT_CLOSE_TO_CPU(on(i64) == 2, i64 == 2, 0, 0);
}

TEST_P(DeviceParityOps, BinaryOpsFollowTheCpusNanAndInfinityRules) {
  Tensor s = special_values();
  Tensor x = s.unsqueeze(1), y = s.unsqueeze(0);  // every pair
  for (Dtype d : {kFloat32, kFloat64}) {
    for (const auto& [name, fn] : binary_ops()) {
      if (name == "pow") continue;  // its operands are shifted; see below
      EXPECT_TRUE(close_to_cpu(fn(on(x.to(d)), on(y.to(d))), fn(x.to(d), y.to(d)), rtol_for(d), atol_for(d),
                               name + " of special values (" + std::string(dtype_name(d)) + ")"));
    }
    EXPECT_TRUE(close_to_cpu(pow(on(x.to(d)), on(y.to(d))), pow(x.to(d), y.to(d)), rtol_for(d), atol_for(d),
                             "pow of special values"));
  }
}

TEST_P(DeviceParityOps, AddAndSubWithAlpha) {
  Tensor a = randn({4, 6}), b = randn({6});
  EXPECT_CLOSE_TO_CPU(add(on(a), on(b), 2.5), add(a, b, 2.5), kRtol, kAtol);
  EXPECT_CLOSE_TO_CPU(sub(on(a), on(b), -0.75), sub(a, b, -0.75), kRtol, kAtol);
  EXPECT_CLOSE_TO_CPU(add(on(a).t(), on(a).t(), 3), add(a.t(), a.t(), 3), kRtol, kAtol);
  Tensor i = tensor({1, 2, 3}), j = tensor({10, 20, 30});
  EXPECT_CLOSE_TO_CPU(add(on(i), on(j), 3), add(i, j, 3), 0, 0);
  EXPECT_CLOSE_TO_CPU(sub(on(i), on(j), 2), sub(i, j, 2), 0, 0);
  for (Dtype d : {kFloat16, kBFloat16, kFloat64}) {
    EXPECT_TRUE(close_to_cpu(add(on(a.to(d)), on(b.to(d)), 0.5), add(a.to(d), b.to(d), 0.5), rtol_for(d), atol_for(d),
                             "add alpha " + std::string(dtype_name(d))));
  }
  // In place, through a non-contiguous view.
  Tensor x = randn({5, 4});
  Tensor dx = on(x);
  x.t().add_(on(b.narrow(0, 0, 5)).cpu(), 2);
  dx.t().add_(on(b.narrow(0, 0, 5)), 2);
  EXPECT_CLOSE_TO_CPU(dx, x, kRtol, kAtol);
  x.slice(0, 0, 5, 2).sub_(ones({4}), 0.5);
  dx.slice(0, 0, 5, 2).sub_(on(ones({4})), 0.5);
  EXPECT_CLOSE_TO_CPU(dx, x, kRtol, kAtol);
  x.mul_(2.0).add_(1.0);
  dx.mul_(2.0).add_(1.0);
  EXPECT_CLOSE_TO_CPU(dx, x, kRtol, kAtol);
}

TEST_P(DeviceParityOps, WhereBroadcastsAndPromotes) {
  Tensor c = randn({3, 4}) > 0;
  Tensor a = randn({3, 4}), b = randn({4});
  EXPECT_CLOSE_TO_CPU(where(on(c), on(a), on(b)), where(c, a, b), 0, 0);
  EXPECT_CLOSE_TO_CPU(where(on(c).t(), on(a).t(), on(b).unsqueeze(1)), where(c.t(), a.t(), b.unsqueeze(1)), 0, 0);
  Tensor i = arange(4);
  EXPECT_CLOSE_TO_CPU(where(on(c), on(i), on(a)), where(c, i, a), 0, 0);
  EXPECT_CLOSE_TO_CPU(where(on(c), on(a.to(kFloat16)), on(b.to(kFloat64))), where(c, a.to(kFloat16), b.to(kFloat64)), 0,
                      0);
  Tensor s = special_values();
  EXPECT_CLOSE_TO_CPU(where(on(s > 0), on(s), on(zeros({11}))), where(s > 0, s, zeros({11})), 0, 0);
}

TEST_P(DeviceParityOps, Clamp) {
  Tensor x = randn({6, 7}) * 3;
  EXPECT_CLOSE_TO_CPU(clamp(on(x), -1.0, 2.0), clamp(x, -1.0, 2.0), 0, 0);
  EXPECT_CLOSE_TO_CPU(clamp(on(x), -0.5), clamp(x, -0.5), 0, 0);
  EXPECT_CLOSE_TO_CPU(clamp(on(x), std::nullopt, 0.25), clamp(x, std::nullopt, 0.25), 0, 0);
  EXPECT_CLOSE_TO_CPU(clamp(on(x).t(), 1.0, -1.0), clamp(x.t(), 1.0, -1.0), 0, 0);  // min > max: max wins
  Tensor s = special_values();
  EXPECT_CLOSE_TO_CPU(clamp(on(s), -1.0, 1.0), clamp(s, -1.0, 1.0), 0, 0);
  EXPECT_CLOSE_TO_CPU(clamp(on(x), kNaN, 1.0), clamp(x, kNaN, 1.0), 0, 0);
  Tensor i = arange(-5, 6);
  EXPECT_CLOSE_TO_CPU(clamp(on(i), -2, 3), clamp(i, -2, 3), 0, 0);
  EXPECT_CLOSE_TO_CPU(clamp(on(i.to(kInt8)), 0), clamp(i.to(kInt8), 0), 0, 0);
  EXPECT_CLOSE_TO_CPU(clamp(on(i), -2.5, 3.5), clamp(i, -2.5, 3.5), 0, 0);  // float bounds promote
  for (Dtype d : {kFloat16, kBFloat16, kFloat64}) {
    EXPECT_TRUE(close_to_cpu(clamp(on(x.to(d)), -1.0, 1.5), clamp(x.to(d), -1.0, 1.5), 0, 0,
                             "clamp " + std::string(dtype_name(d))));
  }
}

TEST_P(DeviceParityOps, EmptyTensors) {
  Tensor e = randn({0, 4});
  EXPECT_CLOSE_TO_CPU(exp(on(e)), exp(e), 0, 0);
  EXPECT_CLOSE_TO_CPU(on(e) + on(randn({4})), e + randn({4}), 0, 0);
  EXPECT_CLOSE_TO_CPU(on(e).to(kInt32), e.to(kInt32), 0, 0);
  EXPECT_CLOSE_TO_CPU(clamp(on(e), 0.0, 1.0), clamp(e, 0.0, 1.0), 0, 0);
  EXPECT_CLOSE_TO_CPU(where(on(e) > 0, on(e), on(e)), where(e > 0, e, e), 0, 0);
}

TEST_P(DeviceParityOps, ItemCopiesOneElementToTheHost) {
  EXPECT_EQ(on(scalar_tensor(2.5)).item<double>(), 2.5);
  EXPECT_EQ(on(scalar_tensor(int64_t{-7})).item<int64_t>(), -7);
  EXPECT_EQ(on(scalar_tensor(true)).item<bool>(), true);
  EXPECT_EQ(on(tensor({1.5f}).to(kFloat16)).item<double>(), 1.5);
  EXPECT_EQ(on(tensor({-3.0f}).to(kBFloat16)).item<float>(), -3.0f);
  Tensor x = randn({4, 5});
  EXPECT_EQ(on(x)[2][3].item<float>(), x[2][3].item<float>());
  EXPECT_EQ(on(x).t()[1][3].item<float>(), x[3][1].item<float>());
  EXPECT_NEAR(on(x).sum().item<double>(), x.sum().item<double>(), 1e-4);
  EXPECT_THROW(on(x).item(), Error);
}

TEST_P(DeviceParityOps, PrintsLikePyTorch) {
  // PyTorch names the device after the values and before the dtype, and never for the CPU.
  const std::string dev = device().is_cpu() ? "" : ", device='" + Device(device().type(), 0).str() + "'";
  EXPECT_EQ(on(tensor({1.f, 2.5f})).str(), "tensor([1.0000, 2.5000]" + dev + ")");
  EXPECT_EQ(on(tensor({1, 2})).to(kInt32).str(), "tensor([1, 2]" + dev + ", dtype=torch.int32)");
  EXPECT_EQ(on(scalar_tensor(3.0)).str(), "tensor(3." + dev + ")");
  EXPECT_EQ(on(zeros({0})).str(), "tensor([]" + dev + ")");
  EXPECT_EQ(on(zeros({0, 3})).str(), "tensor([]" + dev + ", size=(0, 3))");
  Tensor x = randn({3, 4});
  const std::string cpu_text = x.str();
  EXPECT_EQ(on(x).str(), cpu_text.substr(0, cpu_text.size() - 1) + dev + ")");
  Tensor w = on(randn({2})).requires_grad_();
  EXPECT_NE(w.str().find(dev + ", requires_grad=True)"), std::string::npos) << w.str();
  if (!device().is_cpu()) {
    const std::string text = on(tensor({1.f, 2.f})).str();
    const std::string tail = ", device='cuda:0')";
    if (device().is_cuda()) {
      ASSERT_GE(text.size(), tail.size());
      EXPECT_EQ(text.substr(text.size() - tail.size()), tail);
    }
  }
}

EMBER_INSTANTIATE_DEVICE_SUITE(DeviceParityOps);

// ember::cuda (include/ember/cuda.h) on a real GPU: memory statistics follow tensors, events
// time work, the device can be selected and synchronised.
class DeviceCudaApi : public ember_test::DeviceTest {
 protected:
  Tensor on_device(const Tensor& cpu) const { return cpu.to(device()); }
  void SetUp() override {
    DeviceTest::SetUp();
    if (IsSkipped()) return;
    if (!device().is_cuda()) GTEST_SKIP() << "the ember::cuda API needs a CUDA device, not " << device();
  }
};

TEST_P(DeviceCudaApi, MemoryStatisticsFollowTensors) {
  cuda::synchronize();
  const size_t before = cuda::memory_allocated();
  cuda::reset_peak_memory_stats();
  EXPECT_EQ(cuda::max_memory_allocated(), before);
  constexpr int64_t kFloats = int64_t{1} << 20;  // 4 MiB
  {
    Tensor a = empty({kFloats}, TensorOptions(kFloat32).device(device()));
    EXPECT_GE(cuda::memory_allocated(), before + 4 * kFloats);
    EXPECT_GE(cuda::memory_reserved(), cuda::memory_allocated());
    Tensor b = a + 1;  // another 4 MiB
    EXPECT_GE(cuda::memory_allocated(0), before + 8 * kFloats);
  }
  // Freed blocks return to the cache (still reserved), not to the driver.
  EXPECT_EQ(cuda::memory_allocated(), before);
  EXPECT_GE(cuda::max_memory_allocated(), before + 8 * kFloats);
  EXPECT_GE(cuda::memory_reserved(), cuda::max_memory_allocated() - before);
  cuda::empty_cache();
  EXPECT_EQ(cuda::memory_allocated(), before);
  cuda::reset_peak_memory_stats();
  EXPECT_EQ(cuda::max_memory_allocated(), before);
}

TEST_P(DeviceCudaApi, DevicesEventsAndSynchronize) {
  EXPECT_GE(cuda::device_count(), 1);
  EXPECT_TRUE(cuda::unavailable_reason().empty());
  const cuda::DeviceProperties p = cuda::get_device_properties(0);
  EXPECT_FALSE(p.name.empty());
  EXPECT_GE(p.major, 5);
  EXPECT_GT(p.total_memory, size_t{0});
  EXPECT_GT(p.multi_processor_count, 0);
  EXPECT_NO_THROW(cuda::set_device(0));
  EXPECT_EQ(cuda::current_device(), 0);
  EXPECT_THROW(cuda::set_device(cuda::device_count()), Error);
  EXPECT_THROW(cuda::get_device_properties(cuda::device_count()), Error);
  EXPECT_EQ(cuda::current_device(), 0);
  EXPECT_THROW(zeros({1}, Device(kCUDA, cuda::device_count())), Error);

  cuda::Event start, stop;
  start.record();
  Tensor x = randn({512, 512}, TensorOptions().device(device()));
  for (int i = 0; i < 5; ++i) x = mm(x, x) / 512;
  stop.record();
  stop.synchronize();
  EXPECT_TRUE(stop.query());
  EXPECT_GE(start.elapsed_ms(stop), 0.0f);
  cuda::synchronize();
  cuda::synchronize(0);
  EXPECT_TRUE(equal(x.cpu(), x.cpu()));  // finite, and readable after the waits
  // TF32 is a switch, off by default; turning it on must not break float32 products.
  EXPECT_FALSE(cuda::allow_tf32());
  cuda::set_allow_tf32(true);
  Tensor a = randn({64, 64}), b = randn({64, 64});
  EXPECT_CLOSE_TO_CPU(mm(on_device(a), on_device(b)), mm(a, b), 1e-2, 5e-2);
  cuda::set_allow_tf32(false);
  EXPECT_FALSE(cuda::allow_tf32());
}

TEST_P(DeviceCudaApi, PinnedMemoryAndNonBlockingCopies) {
  const Tensor x = arange(1 << 16).to(kFloat32);
  const Tensor pinned = x.pin_memory();
  EXPECT_TRUE(pinned.is_pinned());
  EXPECT_TRUE(pinned.is_cpu());
  EXPECT_TRUE(equal(pinned, x));
  EXPECT_EQ(pinned.pin_memory().data_ptr(), pinned.data_ptr());  // already pinned: itself

  Tensor on_gpu = pinned.to(device(), /*non_blocking=*/true);
  Tensor back = (on_gpu * 2).to(Device(kCPU), /*non_blocking=*/true);
  EXPECT_TRUE(back.is_pinned());  // a non-blocking copy to the host lands in pinned memory
  cuda::synchronize();
  EXPECT_TRUE(equal(back, x * 2));

  // A blocking copy from pinned memory is complete on return: overwriting the source after it
  // must not change what the GPU received.
  Tensor source = x.pin_memory().clone().pin_memory();
  Tensor copied = source.to(device());
  source.fill_(-1);
  EXPECT_TRUE(equal(copied.cpu(), x));
  // copy_ into a pinned destination of the same layout.
  Tensor destination = zeros({1 << 16}).pin_memory();
  destination.copy_(on_gpu, /*non_blocking=*/true);
  cuda::synchronize();
  EXPECT_TRUE(equal(destination, x));
}

TEST_P(DeviceCudaApi, APinnedBlockFreedWhileItsCopyIsQueuedIsNotHandedOutAgain) {
  // Pinned memory is cached (src/backend/cuda/pinned_allocator.h): a block let go while a
  // non-blocking copy still has to read it must not be given to the next pin_memory() of its
  // size, which would overwrite it before the copy runs. Matrix products queued first (tens of
  // milliseconds) hold the copy back while the host frees the block and pins again at once.
  cuda::empty_cache();  // no cached block of this size from earlier tests
  const int64_t n = int64_t{1} << 22;  // 16 MiB of float32
  const Tensor x = arange(n).to(kFloat32);
  const Tensor minus_one = full({n}, -1.0f);
  Tensor on_gpu;
  void* first_block = nullptr;
  {
    const Tensor source = x.pin_memory();
    first_block = source.data_ptr();
    Tensor busy = randn({4096, 4096}).to(device());
    for (int i = 0; i < 20; ++i) busy = busy.matmul(busy) * 1e-3;
    on_gpu = source.to(device(), /*non_blocking=*/true);
  }  // source is freed here, its copy still queued behind the products
  const Tensor other = minus_one.pin_memory();
  EXPECT_NE(other.data_ptr(), first_block);
  cuda::synchronize();
  EXPECT_TRUE(equal(on_gpu.cpu(), x));
  // Once the copy is done, the block is handed out again rather than pinned anew.
  const Tensor again = x.pin_memory();
  EXPECT_EQ(again.data_ptr(), first_block);
  cuda::empty_cache();  // also gives cached pinned blocks back
}

EMBER_INSTANTIATE_DEVICE_SUITE(DeviceCudaApi);

// The comparison itself, on the CPU: it must catch what the device suites rely on it to catch.
TEST(DeviceParityHelper, CloseToCpuNamesTheOpAndTheWorstElement) {
  Tensor ref = tensor({{1.0f, 2.0f, 3.0f}, {4.0f, kNaNf, -kInff}});
  EXPECT_TRUE(close_to_cpu(ref.clone(), ref, 0, 0, "same"));
  Tensor off = ref.clone();
  off[0][1].fill_(2.5);
  off[1][0].fill_(4.0001);
  const std::string message = close_to_cpu(off, ref, 1e-3, 0, "exp(x)").message();
  EXPECT_NE(message.find("exp(x)"), std::string::npos) << message;
  EXPECT_NE(message.find("1 of 6 elements"), std::string::npos) << message;
  EXPECT_NE(message.find("worst at [0, 1]: 2.5 vs 2"), std::string::npos) << message;
  Tensor nan_moved = ref.clone();
  nan_moved[1][1].fill_(5.0);
  EXPECT_FALSE(close_to_cpu(nan_moved, ref, 1, 1, "nan"));
  Tensor inf_sign = ref.clone();
  inf_sign[1][2].fill_(kInf);
  EXPECT_FALSE(close_to_cpu(inf_sign, ref, 1, 1, "inf"));
  EXPECT_FALSE(close_to_cpu(ref.to(kFloat64), ref, 1, 1, "dtype"));
  EXPECT_FALSE(close_to_cpu(ref.t(), ref, 1, 1, "sizes"));
  EXPECT_TRUE(close_to_cpu(ref.t().contiguous().t(), ref, 0, 0, "strides do not matter"));
}

}  // namespace
