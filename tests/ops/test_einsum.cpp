// einsum against PyTorch 2.15 (tools/gen_einsum_golden.py, opt_einsum off): values and every
// operand's gradient, finite differences, views, PyTorch's messages and the stand-in device;
// the sublist form (einsum({{a, {0, 1}}, {b, {1, 2}}}, {0, 2})) likewise.
#include <gtest/gtest.h>

#include <optional>
#include <sstream>
#include <string>
#include <vector>

#include "ember/einsum.h"
#include "ember/ember.h"
#include "ember/io/safetensors.h"
#include "support/devices.h"
#include "support/error_of.h"
#include "support/golden_cases.h"
#include "support/gradcheck.h"

namespace {

using namespace ember;
using ember_test::error_of;

const io::SafetensorsData& golden() {
  static const io::SafetensorsData data =
      io::load_safetensors(EMBER_SOURCE_DIR "/tests/ops/golden/einsum_golden.safetensors");
  return data;
}

/// Runs every golden case: the result and each operand's gradient against PyTorch's.
void check_cases(bool float64) {
  const io::SafetensorsData& g = golden();
  const int float64_cases = std::stoi(g.metadata.at("count64"));
  int index = 0, ran = 0;
  for (const ember_test::GoldenCase& c : ember_test::golden_cases(g.metadata)) {
    if ((index++ < float64_cases) != float64) continue;
    SCOPED_TRACE(c.description);
    std::string equation = c.options.at("eq");
    for (char& ch : equation)
      if (ch == ';') ch = ',';
    std::vector<Tensor> operands;
    for (int64_t k = 0; k < c.num("n"); ++k)
      operands.push_back(g.at(c.prefix + "op" + std::to_string(k)).clone().requires_grad_());
    const Tensor y = einsum(equation, operands);
    const double rtol = float64 ? 1e-12 : 1e-5, atol = float64 ? 1e-13 : 1e-6;
    EXPECT_EQ(y.dtype(), float64 ? kFloat64 : kFloat32);
    ember_test::expect_close(y, g.at(c.prefix + "y"), rtol, atol, "y");
    const std::vector<Tensor> grads = autograd::grad({y}, operands, {g.at(c.prefix + "gy")});
    for (size_t k = 0; k < operands.size(); ++k)
      ember_test::expect_close(grads[k], g.at(c.prefix + "g" + std::to_string(k)), rtol, atol, "g" + std::to_string(k));
    ++ran;
  }
  EXPECT_GE(ran, float64 ? 50 : 5);
}

TEST(Einsum, MatchesPyTorchFloat64) { check_cases(true); }

TEST(Einsum, MatchesPyTorchFloat32) { check_cases(false); }

TEST(Einsum, ProductsRunOnBmm) {
  const Tensor a = randn({2, 3, 4}, kFloat64).requires_grad_(), b = randn({2, 4, 5}, kFloat64).requires_grad_();
  const Tensor y = einsum("bij,bjk->bik", {a, b});
  EXPECT_TRUE(allclose(y, bmm(a, b), 1e-14, 1e-14));
  // The product's node is bmm's, seen through the view that restores the layout.
  EXPECT_NE(y.grad_fn_name(), "");
  EXPECT_TRUE(equal(einsum("ij,jk->ik", {a[0], b[0]}), mm(a[0], b[0])));
}

TEST(Einsum, RearrangementsAreViews) {
  const Tensor x = randn({3, 4}, kFloat64);
  const Tensor t = einsum("ij->ji", {x});
  EXPECT_TRUE(t.is_view());
  EXPECT_EQ(t.sizes().vec(), (std::vector<int64_t>{4, 3}));
  const Tensor square = randn({4, 4}, kFloat64);
  const Tensor d = einsum("ii->i", {square});
  EXPECT_TRUE(d.is_view());
  EXPECT_TRUE(equal(d, diagonal(square)));
}

TEST(Einsum, IntegerOuterProductPromotesAsMul) {
  const Tensor a = tensor(std::vector<int64_t>{1, 2, 3}), b = tensor(std::vector<int64_t>{4, 5});
  const Tensor y = einsum("i,j->ij", {a, b});
  EXPECT_EQ(y.dtype(), kInt64);
  EXPECT_TRUE(equal(y, tensor(std::vector<int64_t>{4, 5, 8, 10, 12, 15}).reshape({3, 2})));
}

TEST(Einsum, FiniteDifferences) {
  for (const char* equation : {"ij,jk->ik", "bij,bjk->bik", "ii->i", "i,j->ij", "...ij,...jk", "ij,jk,kl->il"}) {
    SCOPED_TRACE(equation);
    std::vector<Tensor> inputs;
    const std::string eq = equation;
    if (eq == "ij,jk->ik") inputs = {randn({2, 3}), randn({3, 2})};
    if (eq == "bij,bjk->bik") inputs = {randn({2, 2, 3}), randn({2, 3, 2})};
    if (eq == "ii->i") inputs = {randn({3, 3})};
    if (eq == "i,j->ij") inputs = {randn({2}), randn({3})};
    if (eq == "...ij,...jk") inputs = {randn({2, 1, 2, 3}), randn({2, 3, 2})};
    if (eq == "ij,jk,kl->il") inputs = {randn({2, 3}), randn({3, 2}), randn({2, 2})};
    ember::test::gradcheck(
        eq, [eq](const std::vector<Tensor>& xs) { return einsum(eq, xs); }, inputs);
  }
}

TEST(Einsum, DoubleBackward) {
  ember::test::gradgradcheck("bij,bjk->bik", [](const std::vector<Tensor>& xs) { return einsum("bij,bjk->bik", xs); },
                             {randn({2, 2, 3}), randn({2, 3, 2})});
}

TEST(Einsum, PyTorchsMessages) {
  const Tensor a = randn({2, 3}, kFloat64), b = randn({3, 4}, kFloat64);
  EXPECT_EQ(error_of([] { einsum("ij", {}); }),
            "einsum(): must specify the equation string and at least one operand, or at least one operand and its "
            "subscripts list");
  EXPECT_EQ(error_of([&] {
              einsum("ij,jk,kl", {a, b});
            }),
            "einsum(): fewer operands were provided than specified in the equation");
  EXPECT_EQ(error_of([&] {
              einsum("ij", {a, b});
            }),
            "einsum(): more operands were provided than specified in the equation");
  EXPECT_EQ(error_of([&] {
              einsum("i.j,jk", {a, b});
            }),
            "einsum(): found '.' for operand 0 that is not part of any ellipsis");
  EXPECT_EQ(error_of([&] {
              einsum("...ij...,jk", {a, b});
            }),
            "einsum(): found '.' for operand 0 for which an ellipsis was already found");
  EXPECT_EQ(error_of([&] {
              einsum("i$,jk", {a, b});
            }),
            "einsum(): invalid subscript given at index 1 in the equation string, subscripts must be in [a-zA-Z]");
  EXPECT_EQ(error_of([&] {
              einsum("ijk,jk", {a, b});
            }),
            "einsum(): the number of subscripts in the equation (3) does not match the number of dimensions (2) for "
            "operand 0 and no ellipsis was given");
  EXPECT_EQ(error_of([&] {
              einsum("...ijk,jk", {a, b});
            }),
            "einsum(): the number of subscripts in the equation (3) is more than the number of dimensions (2) for "
            "operand 0");
  EXPECT_EQ(error_of([&] {
              einsum("ij,jk->iz", {a, b});
            }),
            "einsum(): output subscript z does not appear in the equation for any input operand");
  EXPECT_EQ(error_of([&] {
              einsum("ij,jk->ii", {a, b});
            }),
            "einsum(): output subscript i appears more than once in the output");
  EXPECT_EQ(error_of([&] {
              einsum("ij,jk->i..", {a, b});
            }),
            "einsum(): found '.' for output that is not part of any ellipsis (...)");
  EXPECT_EQ(error_of([&] {
              einsum("ij,jk->...i...", {a, b});
            }),
            "einsum(): found '.' for output but an ellipsis (...) was already found");
  EXPECT_EQ(error_of([&] {
              einsum("ij,jk->i$", {a, b});
            }),
            "einsum(): invalid subscript given at index 8 in the equation string, subscripts must be in [a-zA-Z]");
  EXPECT_EQ(error_of([&] {
              einsum("ij,ik", {a, b});
            }),
            "einsum(): subscript i has size 3 for operand 1 which does not broadcast with previously seen size 2");
  EXPECT_EQ(error_of([&] { einsum("ii", {a}); }),
            "einsum(): subscript i is repeated for operand 0 but the sizes don't match, 3 != 2");
  EXPECT_EQ(error_of([] {
              einsum("...i,...i", {randn({2, 3}), randn({4, 3})});
            }),
            "einsum(): dimension 0 covered by ellipsis in operand 1has size 4 which does not broadcast with previously "
            "seen ellipsis with size 2 for the respective dimension");
  EXPECT_EQ(error_of([&] { einsum("ij,jk", {a, b.to(kFloat32)}); }), "expected scalar type Double but found Float");
  EXPECT_EQ(error_of([&] {
              einsum("ij,jk", {a, randn({2, 4}, kFloat64)});
            }),
            "einsum(): subscript j has size 2 for operand 1 which does not broadcast with previously seen size 3");
}

/// "0 1;E 1 2->0 2" (the golden's form) as the operands' sublists and the output's, if any.
struct SublistCall {
  std::vector<EinsumSublist> inputs;
  std::optional<EinsumSublist> output;
};

EinsumSublist parse_sublist(const std::string& text) {
  EinsumSublist sublist;
  std::istringstream words(text);
  for (std::string word; words >> word;) {
    if (word == "E") {
      sublist.emplace_back(Ellipsis);
    } else {
      sublist.emplace_back(std::stoll(word));
    }
  }
  return sublist;
}

SublistCall parse_sublists(const std::string& text) {
  SublistCall call;
  const size_t arrow = text.find("->");
  const std::string inputs = text.substr(0, arrow);
  if (arrow != std::string::npos) call.output = parse_sublist(text.substr(arrow + 2));
  for (size_t start = 0;;) {
    const size_t end = inputs.find(';', start);
    call.inputs.push_back(parse_sublist(inputs.substr(start, end - start)));
    if (end == std::string::npos) break;
    start = end + 1;
  }
  return call;
}

Tensor run_sublists(const SublistCall& call, const std::vector<Tensor>& tensors) {
  std::vector<EinsumOperand> operands;
  for (size_t k = 0; k < tensors.size(); ++k) operands.push_back({tensors[k], call.inputs[k]});
  return call.output ? einsum(operands, *call.output) : einsum(operands);
}

TEST(EinsumSublist, MatchesPyTorch) {
  const io::SafetensorsData& g = golden();
  const int count = std::stoi(g.metadata.at("sublist_count"));
  EXPECT_GE(count, 14);
  for (int i = 0; i < count; ++i) {
    const std::string p = "sublist" + std::to_string(i);
    SCOPED_TRACE(p + ": " + g.metadata.at(p));
    const SublistCall call = parse_sublists(g.metadata.at(p));
    std::vector<Tensor> operands;
    for (size_t k = 0; k < call.inputs.size(); ++k)
      operands.push_back(g.at(p + ".op" + std::to_string(k)).clone().requires_grad_());
    const Tensor y = run_sublists(call, operands);
    ember_test::expect_close(y, g.at(p + ".y"), 1e-12, 1e-13, "y");
    const std::vector<Tensor> grads = autograd::grad({y}, operands, {g.at(p + ".gy")});
    for (size_t k = 0; k < operands.size(); ++k)
      ember_test::expect_close(grads[k], g.at(p + ".g" + std::to_string(k)), 1e-12, 1e-13, "g" + std::to_string(k));
  }
}

TEST(EinsumSublist, PyTorchsMessages) {
  const io::SafetensorsData& g = golden();
  const int count = std::stoi(g.metadata.at("sublist_error_count"));
  EXPECT_GE(count, 6);
  for (int i = 0; i < count; ++i) {
    const std::string p = "sublist_error" + std::to_string(i);
    SCOPED_TRACE(p + ": " + g.metadata.at(p));
    const SublistCall call = parse_sublists(g.metadata.at(p));
    std::vector<Tensor> operands;
    for (size_t k = 0; k < call.inputs.size(); ++k) operands.push_back(g.at(p + ".op" + std::to_string(k)));
    EXPECT_EQ(error_of([&] { run_sublists(call, operands); }), g.metadata.at(p + ".message"));
  }
  EXPECT_EQ(error_of([] { einsum(std::vector<EinsumOperand>{}); }),
            "einsum(): must specify the equation string and at least one operand, or at least one operand and its "
            "subscripts list");
}

TEST(EinsumSublist, ReadsAsTheEquation) {
  const Tensor a = randn({3, 4}, kFloat64), b = randn({4, 5}, kFloat64), s = randn({2, 3, 3}, kFloat64);
  EXPECT_TRUE(equal(einsum({{a, {0, 1}}, {b, {1, 2}}}, {0, 2}), einsum("AB,BC->AC", {a, b})));
  EXPECT_TRUE(equal(einsum({{a, {26, 51}}, {b, {51, 0}}}), einsum("az,zA", {a, b})));
  EXPECT_TRUE(equal(einsum({{s, {Ellipsis, 8, 8}}}, {Ellipsis, 8}), einsum("...ii->...i", {s})));
  const Tensor view = einsum({{a, {0, 1}}}, {1, 0});
  EXPECT_TRUE(view.is_view());
}

class EinsumDevice : public ember_test::DeviceTest {};

TEST_P(EinsumDevice, MatchesTheCpu) {
  const Tensor a = randn({2, 3, 4}, kFloat64), b = randn({2, 4, 5}, kFloat64), c = randn({4, 4}, kFloat64);
  const Device d = device();
  EXPECT_CLOSE_TO_CPU(einsum("bij,bjk->bik", {a.to(d), b.to(d)}), einsum("bij,bjk->bik", {a, b}), 1e-14, 1e-14);
  EXPECT_CLOSE_TO_CPU(einsum("ii->i", {c.to(d)}).contiguous(), einsum("ii->i", {c}).contiguous(), 0, 0);
  EXPECT_CLOSE_TO_CPU(einsum("bij,jj,bjk", {a.to(d), c.to(d), b.to(d)}), einsum("bij,jj,bjk", {a, c, b}), 1e-14, 1e-14);
  const Tensor x = a.to(d).requires_grad_();
  einsum("bij,bjk->", {x, b.to(d)}).backward();
  EXPECT_EQ(x.grad().device(), d);
  EXPECT_CLOSE_TO_CPU(einsum({{a.to(d), {Ellipsis, 0, 1}}, {b.to(d), {Ellipsis, 1, 2}}}, {Ellipsis, 0, 2}),
                      einsum({{a, {Ellipsis, 0, 1}}, {b, {Ellipsis, 1, 2}}}, {Ellipsis, 0, 2}), 1e-14, 1e-14);
}

EMBER_INSTANTIATE_DEVICE_SUITE(EinsumDevice);

}  // namespace
