// Sorting and selection (sort, argsort, msort, topk, kthvalue, median, nanmedian, unique,
// unique_consecutive, searchsorted, bucketize), the scans (cumsum, cumprod, cummax, cummin,
// logcumsumexp), prod's gradient with zeros, Tensor.unfold, the bitwise ops and isclose, and
// the sampling ops: values and gradients against PyTorch's (tools/gen_sort_scan_golden.py),
// dtypes, double backward, errors, and the stand-in device against the CPU.
#include <gtest/gtest.h>

#include <cmath>
#include <limits>
#include <string>
#include <vector>

#include "ember/ember.h"
#include "support/devices.h"
#include "support/error_of.h"
#include "support/gradcheck.h"
#include "support/transform_norm_golden.h"

namespace {

using namespace ember;
using ember_test::error_of;
using ember_test::GoldenCase;
using ember_test::GoldenOp;
using Inputs = std::map<std::string, Tensor>;
using OpTable = std::map<std::string, std::function<GoldenOp(const GoldenCase&)>>;

const io::SafetensorsData& golden() {
  static const io::SafetensorsData data =
      io::load_safetensors(EMBER_SOURCE_DIR "/tests/ops/golden/sort_scan_golden.safetensors");
  return data;
}

// An op of the golden file returning (values, indices): "name" checks the values, "name.indices"
// the indices.
template <typename Make>
void add_pair(OpTable& table, const std::string& name, Make make) {
  table[name] = [make](const GoldenCase& c) -> GoldenOp {
    return [f = make(c)](const Inputs& in) { return std::get<0>(f(in)); };
  };
  table[name + ".indices"] = [make](const GoldenCase& c) -> GoldenOp {
    return [f = make(c)](const Inputs& in) { return std::get<1>(f(in)); };
  };
}

OpTable sort_ops() {
  OpTable t;
  add_pair(t, "sort", [](const GoldenCase& c) {
    return [d = c.num("dim"), desc = c.flag("descending"), st = c.flag("stable")](const Inputs& in) {
      return sort(in.at("x"), d, desc, st);
    };
  });
  t["argsort"] = [](const GoldenCase& c) -> GoldenOp {
    return [d = c.num("dim"), desc = c.flag("descending")](const Inputs& in) {
      return argsort(in.at("x"), d, desc, true);
    };
  };
  t["msort"] = [](const GoldenCase&) -> GoldenOp { return [](const Inputs& in) { return msort(in.at("x")); }; };
  add_pair(t, "topk", [](const GoldenCase& c) {
    return [k = c.num("k"), d = c.num("dim"), l = c.flag("largest")](const Inputs& in) {
      return topk(in.at("x"), k, d, l);
    };
  });
  add_pair(t, "kthvalue", [](const GoldenCase& c) {
    return [k = c.num("k"), d = c.num("dim"), kd = c.flag("keepdim")](const Inputs& in) {
      return kthvalue(in.at("x"), k, d, kd);
    };
  });
  for (const bool ignore_nan : {false, true}) {
    const std::string name = ignore_nan ? "nanmedian" : "median";
    const auto full_form = [ignore_nan](const Inputs& in) {
      return ignore_nan ? nanmedian(in.at("x")) : median(in.at("x"));
    };
    const auto dim_form = [ignore_nan](const GoldenCase& c) {
      return [d = c.num("dim"), kd = c.flag("keepdim"), ignore_nan](const Inputs& in) {
        return ignore_nan ? nanmedian(in.at("x"), d, kd) : median(in.at("x"), d, kd);
      };
    };
    t[name] = [full_form, dim_form](const GoldenCase& c) -> GoldenOp {
      if (!c.options.count("dim")) return full_form;
      return [f = dim_form(c)](const Inputs& in) { return std::get<0>(f(in)); };
    };
    t[name + ".indices"] = [dim_form](const GoldenCase& c) -> GoldenOp {
      return [f = dim_form(c)](const Inputs& in) { return std::get<1>(f(in)); };
    };
  }
  t["unique"] = [](const GoldenCase&) -> GoldenOp {
    return [](const Inputs& in) { return std::get<0>(unique(in.at("x"))); };
  };
  t["unique.inverse"] = [](const GoldenCase&) -> GoldenOp {
    return [](const Inputs& in) { return std::get<1>(unique(in.at("x"))); };
  };
  t["unique.counts"] = [](const GoldenCase&) -> GoldenOp {
    return [](const Inputs& in) { return std::get<2>(unique(in.at("x"))); };
  };
  t["unique_consecutive"] = [](const GoldenCase&) -> GoldenOp {
    return [](const Inputs& in) { return std::get<0>(unique_consecutive(in.at("x"))); };
  };
  t["unique_consecutive.inverse"] = [](const GoldenCase&) -> GoldenOp {
    return [](const Inputs& in) { return std::get<1>(unique_consecutive(in.at("x"))); };
  };
  t["unique_consecutive.counts"] = [](const GoldenCase&) -> GoldenOp {
    return [](const Inputs& in) { return std::get<2>(unique_consecutive(in.at("x"))); };
  };
  t["searchsorted"] = [](const GoldenCase& c) -> GoldenOp {
    const bool right = c.options.count("right") ? c.flag("right") : false;
    const std::optional<std::string> side =
        c.options.count("side") ? std::optional<std::string>(c.options.at("side")) : std::nullopt;
    const bool int32 = c.options.count("out_int32") && c.flag("out_int32");
    return [right, side, int32](const Inputs& in) {
      const Tensor sorter = in.count("c") ? in.at("c") : Tensor();
      const Tensor out = searchsorted(in.at("a"), in.at("b"), int32, right,
                                      side ? std::optional<std::string_view>(*side) : std::nullopt, sorter);
      EXPECT_EQ(out.dtype(), int32 ? kInt32 : kInt64);
      return out;
    };
  };
  t["bucketize"] = [](const GoldenCase& c) -> GoldenOp {
    return [right = c.flag("right")](const Inputs& in) { return bucketize(in.at("a"), in.at("b"), false, right); };
  };
  return t;
}

OpTable scan_ops() {
  OpTable t;
  t["cumsum"] = [](const GoldenCase& c) -> GoldenOp {
    std::optional<Dtype> dtype;
    if (c.options.count("dtype")) dtype = kFloat64;
    return [d = c.num("dim"), dtype](const Inputs& in) {
      const Tensor out = cumsum(in.at("x"), d, dtype);
      EXPECT_EQ(out.dtype(), dtype ? *dtype : (in.at("x").is_floating_point() ? in.at("x").dtype() : kInt64));
      return out;
    };
  };
  t["cumprod"] = [](const GoldenCase& c) -> GoldenOp {
    return [d = c.num("dim")](const Inputs& in) { return in.at("x").cumprod(d); };
  };
  t["prod"] = [](const GoldenCase& c) -> GoldenOp {
    if (!c.options.count("dim")) return [](const Inputs& in) { return prod(in.at("x")); };
    return [d = c.num("dim")](const Inputs& in) { return prod(in.at("x"), d); };
  };
  t["logcumsumexp"] = [](const GoldenCase& c) -> GoldenOp {
    return [d = c.num("dim")](const Inputs& in) { return logcumsumexp(in.at("x"), d); };
  };
  add_pair(t, "cummax",
           [](const GoldenCase& c) { return [d = c.num("dim")](const Inputs& in) { return cummax(in.at("x"), d); }; });
  add_pair(t, "cummin",
           [](const GoldenCase& c) { return [d = c.num("dim")](const Inputs& in) { return cummin(in.at("x"), d); }; });
  t["unfold"] = [](const GoldenCase& c) -> GoldenOp {
    return [d = c.num("dim"), s = c.num("size"), st = c.num("step")](const Inputs& in) {
      return in.at("x").unfold(d, s, st);
    };
  };
  return t;
}

OpTable bitwise_ops() {
  OpTable t;
  using Binary = Tensor (*)(const Tensor&, const Tensor&);
  using WithScalar = Tensor (*)(const Tensor&, const Scalar&);
  const std::vector<std::tuple<std::string, Binary, WithScalar>> binary = {
      {"bitwise_and", bitwise_and, bitwise_and},
      {"bitwise_or", bitwise_or, bitwise_or},
      {"bitwise_xor", bitwise_xor, bitwise_xor},
      {"bitwise_left_shift", bitwise_left_shift, bitwise_left_shift},
      {"bitwise_right_shift", bitwise_right_shift, bitwise_right_shift}};
  for (const auto& [name, f, fs] : binary) {
    t[name] = [f, fs](const GoldenCase& c) -> GoldenOp {
      if (c.options.count("scalar")) {
        return [fs, s = c.num("scalar")](const Inputs& in) {
          const Tensor out = fs(in.at("x"), s);
          EXPECT_EQ(out.dtype(), in.at("x").dtype());
          return out;
        };
      }
      return [f](const Inputs& in) { return f(in.at("a"), in.at("b")); };
    };
  }
  t["bitwise_not"] = [](const GoldenCase&) -> GoldenOp { return [](const Inputs& in) { return ~in.at("x"); }; };
  t["isclose"] = [](const GoldenCase& c) -> GoldenOp {
    return [r = c.real("rtol"), a = c.real("atol"), e = c.flag("equal_nan")](const Inputs& in) {
      return isclose(in.at("a"), in.at("b"), r, a, e);
    };
  };
  return t;
}

TEST(SortScan, SortFamilyMatchesPyTorch) {
  EXPECT_EQ(ember_test::check_golden_cases(sort_ops(), 1e-12, 1e-13, golden()), 82);
}

TEST(SortScan, ScansMatchPyTorch) {
  // logcumsumexp's gradient goes through exp and log: a few ulp more than the others.
  EXPECT_EQ(ember_test::check_golden_cases(scan_ops(), 1e-11, 1e-12, golden()), 54);
}

TEST(SortScan, BitwiseAndIscloseMatchPyTorch) {
  EXPECT_EQ(ember_test::check_golden_cases(bitwise_ops(), 0, 0, golden()), 27);
}

TEST(SortScan, Float32CumsumRoundsOncePerOutputAsPyTorch) {
  // The golden case's float32 cumsum is checked bit for bit: PyTorch's CPU kernel adds in double.
  for (const auto& c : ember_test::golden_cases(golden().metadata)) {
    if (c.options.at("op") != "cumsum" || golden().at(c.prefix + "x").dtype() != kFloat32) continue;
    EXPECT_TRUE(equal(cumsum(golden().at(c.prefix + "x"), 1), golden().at(c.prefix + "y")));
    return;
  }
  FAIL() << "no float32 cumsum case";
}

TEST(SortScan, BackwardsScanInReverseAsTheFlippedForm) {
  // cumsum's and logcumsumexp's backward passes scan the gradient from the last position to the
  // first; without create_graph the kernel does it in place of flip, scan, flip, and must add in
  // the same order, so the results are equal bit for bit (float32, whose rounding shows order).
  manual_seed(11);
  for (const int64_t dim : {0, 1, 2}) {
    const Tensor x = randn({5, 300, 7}).requires_grad_();
    const Tensor g = randn({5, 300, 7});
    cumsum(x, dim).backward(g);
    EXPECT_TRUE(equal(x.grad(), cumsum(g.flip({dim}), dim).flip({dim}))) << "cumsum, dim " << dim;
    const Tensor y = randn({5, 300, 7}, kFloat64).requires_grad_();
    const Tensor gy = randn({5, 300, 7}, kFloat64);
    const Tensor out = logcumsumexp(y, dim);
    out.backward(gy);
    // The same gradient through the composed form, taken under create_graph.
    const Tensor y2 = y.detach().clone().requires_grad_();
    const Tensor gy2 = gy.clone().requires_grad_();
    const auto grads = autograd::grad({logcumsumexp(y2, dim)}, {y2}, {.grad_outputs = {gy2}, .create_graph = true});
    EXPECT_TRUE(equal(y.grad(), grads[0].detach())) << "logcumsumexp, dim " << dim;
  }
}

TEST(SortScan, GradFnNamesArePyTorchs) {
  const Tensor x = randn({3, 4}, kFloat64).requires_grad_();
  EXPECT_EQ(std::get<0>(sort(x)).grad_fn_name(), "SortBackward0");
  EXPECT_EQ(std::get<0>(topk(x, 2)).grad_fn_name(), "TopkBackward0");
  EXPECT_EQ(std::get<0>(kthvalue(x, 2, 1, true)).grad_fn_name(), "KthvalueBackward0");
  EXPECT_EQ(median(x).grad_fn_name(), "MedianBackward0");
  EXPECT_EQ(cumsum(x, 0).grad_fn_name(), "CumsumBackward0");
  EXPECT_EQ(cumprod(x, 0).grad_fn_name(), "CumprodBackward0");
  EXPECT_EQ(std::get<0>(cummax(x, 1)).grad_fn_name(), "CummaxBackward0");
  EXPECT_EQ(logcumsumexp(x, 1).grad_fn_name(), "LogcumsumexpBackward0");
  EXPECT_EQ(x.unfold(1, 2, 1).grad_fn_name(), "UnfoldBackward0");
  EXPECT_TRUE(x.unfold(1, 2, 1).is_view());
}

TEST(SortScan, GradientsAgreeWithFiniteDifferences) {
  using ember::test::gradcheck;
  using ember::test::gradgradcheck;
  manual_seed(3);
  const Tensor x = randn({3, 5}, kFloat64);
  gradcheck("sort", [](const std::vector<Tensor>& v) { return std::get<0>(sort(v[0], 1, true)); }, {x});
  gradcheck("topk", [](const std::vector<Tensor>& v) { return std::get<0>(topk(v[0], 2, 0)); }, {x});
  gradcheck("cumsum", [](const std::vector<Tensor>& v) { return cumsum(v[0], 1); }, {x});
  gradcheck("cumprod", [](const std::vector<Tensor>& v) { return cumprod(v[0], 1); }, {x});
  gradcheck("logcumsumexp", [](const std::vector<Tensor>& v) { return logcumsumexp(v[0], 0); }, {x});
  gradcheck("unfold", [](const std::vector<Tensor>& v) { return v[0].unfold(1, 3, 1); }, {x});
  gradgradcheck("cumsum", [](const std::vector<Tensor>& v) { return cumsum(v[0], 1); }, {x});
  gradgradcheck("logcumsumexp", [](const std::vector<Tensor>& v) { return logcumsumexp(v[0], 1); }, {x});
  gradgradcheck("unfold", [](const std::vector<Tensor>& v) { return v[0].unfold(0, 2, 1); }, {x});
  // With zeros, cumprod's double backward takes the explicit-products form.
  const Tensor with_zeros = tensor({{2.0, 0.0, 3.0, -1.5, 0.0}, {1.5, 2.0, -0.5, 0.0, 4.0}}, kFloat64);
  gradcheck("cumprod zeros", [](const std::vector<Tensor>& v) { return cumprod(v[0], 1); }, {with_zeros});
  gradgradcheck("cumprod zeros", [](const std::vector<Tensor>& v) { return cumprod(v[0], 1); }, {with_zeros});
  gradgradcheck("cumprod", [](const std::vector<Tensor>& v) { return cumprod(v[0], 0); }, {x});
}

TEST(SortScan, ErrorsArePyTorchs) {
  const Tensor x = randn({3, 4});
  EXPECT_EQ(error_of([&] { topk(x, 5); }), "selected index k out of range");
  EXPECT_EQ(error_of([&] { topk(x, -1); }), "selected index k out of range");
  EXPECT_EQ(error_of([&] { topk(x, 2, 2); }), "Dimension out of range (expected to be in range of [-2, 1], but got 2)");
  EXPECT_EQ(error_of([&] { kthvalue(x, 5); }), "kthvalue(): selected number k out of range for dimension 1");
  EXPECT_EQ(error_of([&] { kthvalue(x, 0); }), "kthvalue(): selected number k out of range for dimension 1");
  EXPECT_EQ(error_of([&] { sort(x, 3); }), "Dimension out of range (expected to be in range of [-2, 1], but got 3)");
  EXPECT_EQ(error_of([&] { median(empty({0, 3}), 0); }), "median(): Expected reduction dim 0 to have non-zero size.");
  EXPECT_TRUE(std::isnan(median(empty({0})).item<double>()));
  EXPECT_EQ(error_of([&] { cumsum(x, 2); }), "Dimension out of range (expected to be in range of [-2, 1], but got 2)");
  EXPECT_EQ(error_of([&] { logcumsumexp(tensor({1, 2}), 0); }), "\"logcumsumexp_out_cpu\" not implemented for 'Long'");
  EXPECT_EQ(error_of([] {
              searchsorted(tensor({{1.0f, 2.0f}}), tensor({{1.0f}, {2.0f}}));
            }),
            "torch.searchsorted(): boundaries tensor should be 1 dimension or the first N-1 dimensions of boundaries "
            "tensor and input value tensor must match, but we got boundaries tensor [1, 2] and input value tensor "
            "[2, 1]");
  EXPECT_EQ(error_of([] {
              searchsorted(tensor({1.0f, 2.0f}), tensor({1.0f}), false, false, "middle");
            }),
            "torch.searchsorted(): side can only be 'left' or 'right' but got middle");
  EXPECT_EQ(error_of([] {
              searchsorted(tensor({1.0f, 2.0f}), tensor({1.0f}), false, true, "left");
            }),
            "torch.searchsorted(): side and right can't be set to opposites, got side of left while right was True");
  EXPECT_EQ(error_of([] {
              searchsorted(tensor({1.0f, 2.0f}), tensor({1.0f}), false, false, std::nullopt, tensor({0}));
            }),
            "torch.searchsorted(): boundary and sorter must have the same size, but got boundary tensor [2]and got "
            "sorter tensor [1]");
  EXPECT_EQ(error_of([] {
              searchsorted(tensor({1.0f, 2.0f}), tensor({1.0f}), false, false, std::nullopt, tensor({0, 2}));
            }),
            "torch.searchsorted(): sorter index out of range");
  EXPECT_EQ(error_of([] {
              bucketize(tensor({1.0f}), tensor({{1.0f, 2.0f}}));
            }),
            "boundaries tensor must be 1 dimension, but got dim(2)");
  EXPECT_EQ(error_of([] { bitwise_and(tensor({1.0f}), tensor({1.0f})); }),
            "\"bitwise_and_cpu\" not implemented for 'Float'");
  EXPECT_EQ(error_of([] { bitwise_and(tensor({5}), 3.5); }), "\"bitwise_and_cpu\" not implemented for 'Float'");
  EXPECT_EQ(error_of([] { ~tensor({1.0f}); }), "\"bitwise_not_cpu\" not implemented for 'Float'");
  EXPECT_EQ(error_of([] { bitwise_left_shift(tensor({true}), tensor({true})); }),
            "\"lshift_cpu\" not implemented for 'Bool'");
  EXPECT_EQ(error_of([] { isclose(tensor({1.0f}), tensor({1})); }), "Float did not match Long");
  EXPECT_EQ(error_of([] { isclose(tensor({1.0f}), tensor({1.0f}), -1); }),
            "rtol must be greater than or equal to zero, but got -1");
  EXPECT_EQ(error_of([] { ones({4}).unfold(0, 5, 1); }), "maximum size for tensor at dimension 0 is 4 but size is 5");
  EXPECT_EQ(error_of([] { ones({4}).unfold(0, 2, 0); }), "step is 0 but must be > 0");
}

TEST(SortScan, ZeroDimInputs) {
  const Tensor s = tensor(3.0, kFloat64);
  auto [v, i] = sort(s);
  EXPECT_EQ(v.dim(), 0);
  EXPECT_EQ(i.item<int64_t>(), 0);
  EXPECT_EQ(std::get<0>(topk(s, 1)).dim(), 0);
  EXPECT_EQ(std::get<0>(kthvalue(s, 1)).item<double>(), 3.0);
  EXPECT_EQ(cumsum(s, 0).item<double>(), 3.0);
  EXPECT_EQ(cumsum(s, -1).dim(), 0);
  EXPECT_EQ(error_of([&] { kthvalue(s, 2); }), "kthvalue(): selected number k out of range for dimension 0");
}

TEST(Sampling, BernoulliNormalMultinomial) {
  manual_seed(11);
  const Tensor p = full({20000}, 0.3, kFloat64);
  const Tensor b = bernoulli(p);
  EXPECT_EQ(b.dtype(), kFloat64);
  EXPECT_NEAR(b.mean().item<double>(), 0.3, 0.02);  // 6 standard deviations
  EXPECT_TRUE(equal(bernoulli(zeros({5})), zeros({5})));
  EXPECT_TRUE(equal(bernoulli(ones({5})), ones({5})));
  EXPECT_NEAR(bernoulli(zeros({20000}), 0.75).mean().item<double>(), 0.75, 0.02);

  const Tensor n = normal(full({20000}, 2.0, kFloat64), full({20000}, 0.5, kFloat64));
  EXPECT_NEAR(n.mean().item<double>(), 2.0, 0.03);
  EXPECT_NEAR(n.std().item<double>(), 0.5, 0.03);
  const Tensor mean = zeros({4}, kFloat64).requires_grad_();
  const Tensor stddev = ones({4}, kFloat64).requires_grad_();
  const Tensor draw = normal(mean, stddev);
  draw.sum().backward();
  EXPECT_TRUE(equal(mean.grad(), ones({4}, kFloat64)));
  EXPECT_TRUE(allclose(stddev.grad(), draw.detach(), 0, 0));  // d(mean + std * eps)/dstd = eps

  const Tensor weights = tensor({0.0, 1.0, 3.0, 0.0}, kFloat64);
  const Tensor with = multinomial(weights, 40000, true);
  EXPECT_EQ(with.dtype(), kInt64);
  const auto share = [&](int64_t category) {
    return eq(with, full_like(with, category)).to(kFloat64).mean().item<double>();
  };
  EXPECT_EQ(share(0) + share(3), 0.0);
  EXPECT_NEAR(share(2), 0.75, 0.015);
  const Tensor without = multinomial(tensor({{1.0, 2.0, 0.0, 4.0}, {5.0, 0.0, 1.0, 1.0}}), 3, false);
  EXPECT_EQ(without.sizes().vec(), (std::vector<int64_t>{2, 3}));
  for (int64_t r = 0; r < 2; ++r) {
    const Tensor row = std::get<0>(sort(without[r]));
    EXPECT_TRUE(equal(row, r == 0 ? tensor({0, 1, 3}) : tensor({0, 2, 3}))) << row;
  }

  EXPECT_EQ(error_of([] {
              multinomial(tensor({0.0, 0.0}), 1);
            }),
            "invalid multinomial distribution (sum of probabilities <= 0)");
  EXPECT_EQ(error_of([] {
              multinomial(tensor({-1.0, 2.0}), 1);
            }),
            "probability tensor contains either `inf`, `nan` or element < 0");
  EXPECT_EQ(error_of([] {
              multinomial(tensor({1.0, 2.0}), 3);
            }),
            "cannot sample n_sample > prob_dist.size(-1) samples without replacement");
  EXPECT_EQ(error_of([] { multinomial(tensor({1.0, 2.0}), 0); }), "cannot sample n_sample <= 0 samples");
  EXPECT_EQ(error_of([] { multinomial(ones({1, 1, 2}), 1); }), "prob_dist must be 1 or 2 dim");
  EXPECT_EQ(error_of([] {
              multinomial(tensor({1, 2}), 1);
            }),
            "multinomial only supports floating-point dtypes for input, got: Long");
  EXPECT_EQ(error_of([] { bernoulli(tensor({1.5})); }),
            "Expected p_in >= 0 && p_in <= 1 to be true, but got false.  (Could this error message be improved?  If "
            "so, please report an enhancement request to PyTorch.)");
  EXPECT_EQ(error_of([] { normal(tensor({0.0}), tensor({-1.0})); }), "normal expects all elements of std >= 0.0");
}

class SortScanDevice : public ember_test::DeviceTest {};

TEST_P(SortScanDevice, MatchesTheCpu) {
  manual_seed(5);
  Tensor x = randn({4, 6, 5}, kFloat64);
  x.select(1, 2).fill_(std::numeric_limits<double>::quiet_NaN());
  const Tensor xd = x.to(device());
  for (const int64_t dim : {0, 1, 2}) {
    for (const bool desc : {false, true}) {
      auto [v, i] = sort(xd, dim, desc);
      auto [cv, ci] = sort(x, dim, desc);
      EXPECT_CLOSE_TO_CPU(v, cv, 0, 0);
      EXPECT_TRUE(equal(i.cpu(), ci));
    }
    EXPECT_CLOSE_TO_CPU(std::get<0>(topk(xd, 3, dim)), std::get<0>(topk(x, 3, dim)), 0, 0);
    EXPECT_CLOSE_TO_CPU(cumsum(xd, dim), cumsum(x, dim), 0, 0);
    EXPECT_CLOSE_TO_CPU(cumprod(xd, dim), cumprod(x, dim), 0, 0);
    EXPECT_CLOSE_TO_CPU(logcumsumexp(xd, dim), logcumsumexp(x, dim), 0, 0);
    EXPECT_CLOSE_TO_CPU(std::get<0>(cummax(xd, dim)), std::get<0>(cummax(x, dim)), 0, 0);
    EXPECT_TRUE(equal(std::get<1>(cummin(xd, dim)).cpu(), std::get<1>(cummin(x, dim))));
  }
  const Tensor ints = randint(-50, 50, {3, 7}, kInt64);
  EXPECT_TRUE(equal(cumsum(ints.to(device()), 1).cpu(), cumsum(ints, 1)));
  EXPECT_TRUE(equal((ints.to(device()) & 12).cpu(), ints & 12));
  EXPECT_TRUE(equal((ints.to(device()) >> 2).cpu(), ints >> 2));
  const Tensor boundaries = std::get<0>(sort(randn({9}, kFloat64)));
  EXPECT_TRUE(equal(bucketize(x.to(device()), boundaries.to(device())).cpu(), bucketize(x, boundaries)));
  auto [u, inv, counts] = unique(ints.to(device()));
  auto [cu, cinv, ccounts] = unique(ints);
  EXPECT_TRUE(equal(u.cpu(), cu));
  EXPECT_TRUE(equal(inv.cpu(), cinv));
  EXPECT_TRUE(equal(counts.cpu(), ccounts));
  const Tensor g = randn({4, 6, 5}, kFloat64);
  const Tensor leaf = randn({4, 6, 5}, kFloat64).to(device()).requires_grad_();
  (cumprod(leaf, 1) * g.to(device())).sum().backward();
  const Tensor cpu_leaf = leaf.detach().cpu().requires_grad_();
  (cumprod(cpu_leaf, 1) * g).sum().backward();
  EXPECT_CLOSE_TO_CPU(leaf.grad(), cpu_leaf.grad(), 1e-14, 1e-14);
}

EMBER_INSTANTIATE_DEVICE_SUITE(SortScanDevice);

}  // namespace
