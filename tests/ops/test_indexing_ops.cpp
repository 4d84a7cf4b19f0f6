// The indexing ops of ember/indexing.h (scatter, scatter_reduce, index_add/copy/fill/put,
// masked_select/scatter, nonzero, take, take_along_dim, one_hot, bincount, histc, and tensor
// indexing): values and gradients against PyTorch's (tools/gen_indexing_golden.py), views,
// PyTorch's error messages, finite differences, and the stand-in device against the CPU.
#include <gtest/gtest.h>

#include <functional>
#include <map>
#include <string>
#include <vector>

#include "ember/ember.h"
#include "ember/indexing.h"
#include "ember/io/safetensors.h"
#include "support/devices.h"
#include "support/error_of.h"
#include "support/golden_cases.h"
#include "support/gradcheck.h"

namespace {

using namespace ember;
using ember_test::error_of;
using ember_test::GoldenCase;
using Inputs = std::map<std::string, Tensor>;
using Op = std::function<Tensor(const Inputs&)>;

const io::SafetensorsData& golden() {
  static const io::SafetensorsData data =
      io::load_safetensors(EMBER_SOURCE_DIR "/tests/ops/golden/indexing_golden.safetensors");
  return data;
}

/// "0;2" -> {0, 2}.
std::vector<std::string> tokens(const std::string& text) {
  std::vector<std::string> out;
  size_t start = 0;
  while (start <= text.size()) {
    size_t end = text.find(';', start);
    if (end == std::string::npos) end = text.size();
    out.push_back(text.substr(start, end - start));
    start = end + 1;
  }
  return out;
}

std::optional<int64_t> bound(const std::string& text) {
  if (text.empty()) return std::nullopt;
  return std::stoll(text);
}

/// The generator's index spec (see tools/gen_indexing_golden.py) as TensorIndex values.
std::vector<TensorIndex> index_of(const std::string& spec, const Inputs& in) {
  std::vector<TensorIndex> out;
  for (const std::string& tok : tokens(spec)) {
    switch (tok[0]) {
      case 'i':
        out.emplace_back(std::stoll(tok.substr(1)));
        break;
      case 's': {
        const size_t a = tok.find(':'), b = tok.find(':', a + 1);
        const std::string step = tok.substr(b + 1);
        out.emplace_back(Slice(bound(tok.substr(1, a - 1)), bound(tok.substr(a + 1, b - a - 1)),
                               step.empty() ? 1 : std::stoll(step)));
        break;
      }
      case 'N':
        out.emplace_back(None);
        break;
      case 'E':
        out.emplace_back(Ellipsis);
        break;
      case 'T':
        out.emplace_back(true);
        break;
      case 'F':
        out.emplace_back(false);
        break;
      case 't':
        out.emplace_back(in.at("index" + tok.substr(1)));
        break;
      case 'm':
        out.emplace_back(in.at("mask" + tok.substr(1)));
        break;
    }
  }
  return out;
}

/// torch.index_put's list: "_" for an undefined entry, k for case.index<k>, m<k> for a mask.
std::vector<Tensor> index_list(const std::string& text, const Inputs& in) {
  std::vector<Tensor> out;
  int64_t position = 0;
  for (const std::string& tok : tokens(text)) {
    if (tok == "_") {
      out.emplace_back();
    } else if (tok[0] == 'm') {
      out.push_back(in.at("mask" + tok.substr(1)));
    } else {
      out.push_back(in.at("index" + std::to_string(position)));
    }
    ++position;
  }
  return out;
}

std::optional<int64_t> dim_of(const GoldenCase& c) {
  if (c.options.at("dim") == "none") return std::nullopt;
  return c.num("dim");
}

Scalar scalar_option(const GoldenCase& c, const std::string& key) {
  const std::string& text = c.options.at(key);
  if (text.find_first_of(".e") != std::string::npos) return c.real(key);
  return c.num(key);
}

Op op_for(const GoldenCase& c) {
  const std::string& op = c.options.at("op");
  if (op == "scatter") {
    return [d = c.num("dim")](const Inputs& in) { return scatter(in.at("x"), d, in.at("index"), in.at("src")); };
  }
  if (op == "scatter_value") {
    return
        [d = c.num("dim"), v = c.real("value")](const Inputs& in) { return scatter(in.at("x"), d, in.at("index"), v); };
  }
  if (op == "scatter_legacy") {
    return [d = c.num("dim"), r = c.options.at("reduce")](const Inputs& in) {
      return scatter(in.at("x"), d, in.at("index"), in.at("src"), r);
    };
  }
  if (op == "scatter_legacy_value") {
    return [d = c.num("dim"), r = c.options.at("reduce"), v = c.real("value")](const Inputs& in) {
      return scatter(in.at("x"), d, in.at("index"), Scalar(v), r);
    };
  }
  if (op == "scatter_reduce") {
    return [d = c.num("dim"), r = c.options.at("reduce"), s = c.flag("include_self")](const Inputs& in) {
      return scatter_reduce(in.at("x"), d, in.at("index"), in.at("src"), r, s);
    };
  }
  if (op == "index_add") {
    return [d = c.num("dim"), a = scalar_option(c, "alpha")](const Inputs& in) {
      return index_add(in.at("x"), d, in.at("index"), in.at("src"), a);
    };
  }
  if (op == "index_copy") {
    return [d = c.num("dim")](const Inputs& in) { return index_copy(in.at("x"), d, in.at("index"), in.at("src")); };
  }
  if (op == "index_fill") {
    return [d = c.num("dim"), v = scalar_option(c, "value")](const Inputs& in) {
      return index_fill(in.at("x"), d, in.at("index"), v);
    };
  }
  if (op == "index_fill_tensor") {
    return [d = c.num("dim")](const Inputs& in) { return index_fill(in.at("x"), d, in.at("index"), in.at("value")); };
  }
  if (op == "index_put") {
    return [list = c.options.at("indices"), acc = c.flag("accumulate")](const Inputs& in) {
      return index_put(in.at("x"), index_list(list, in), in.at("value"), acc);
    };
  }
  if (op == "index") {
    return [spec = c.options.at("spec")](const Inputs& in) { return index(in.at("x"), index_of(spec, in)); };
  }
  if (op == "index_put_") {
    return [spec = c.options.at("spec")](const Inputs& in) {
      Tensor y = in.at("x").clone();
      index_put_(y, index_of(spec, in), in.at("value"));
      return y;
    };
  }
  if (op == "masked_select") {
    return [](const Inputs& in) { return masked_select(in.at("x"), in.at("mask0")); };
  }
  if (op == "masked_scatter") {
    return [](const Inputs& in) { return masked_scatter(in.at("x"), in.at("mask0"), in.at("src")); };
  }
  if (op == "nonzero") return [](const Inputs& in) { return nonzero(in.at("x")); };
  if (op == "argwhere") return [](const Inputs& in) { return argwhere(in.at("x")); };
  if (op == "take") return [](const Inputs& in) { return take(in.at("x"), in.at("index0")); };
  if (op == "take_along_dim") {
    return [d = dim_of(c)](const Inputs& in) { return take_along_dim(in.at("x"), in.at("index0"), d); };
  }
  if (op == "one_hot") return [n = c.num("num_classes")](const Inputs& in) { return one_hot(in.at("x"), n); };
  if (op == "bincount") {
    return [m = c.num("minlength")](const Inputs& in) {
      auto w = in.find("weights");
      return bincount(in.at("x"), w == in.end() ? Tensor() : w->second.detach(), m);
    };
  }
  if (op == "histc") {
    return [b = c.num("bins"), lo = c.real("min"), hi = c.real("max")](const Inputs& in) {
      return histc(in.at("x").detach(), b, lo, hi);
    };
  }
  return {};
}

TEST(IndexingOps, MatchesPyTorchValuesAndGradients) {
  const io::SafetensorsData& g = golden();
  int ran = 0;
  for (const GoldenCase& c : ember_test::golden_cases(g.metadata)) {
    SCOPED_TRACE(c.description);
    const Op op = op_for(c);
    ASSERT_TRUE(op) << "no ember op for this case";
    Inputs inputs;
    std::vector<std::string> differentiable;
    for (const char* name : {"x", "src", "value", "weights", "index", "index0", "index1", "mask0"}) {
      if (!g.contains(c.prefix + name)) continue;
      Tensor t = g.at(c.prefix + name).clone();
      if (t.is_floating_point() && g.contains(c.prefix + "g" + name)) {
        t.requires_grad_();
        differentiable.push_back(name);
      }
      inputs[name] = t;
    }
    Tensor y;
    try {
      y = op(inputs);
    } catch (const Error& e) {
      ADD_FAILURE() << e.what();
      continue;
    }
    const Tensor want = g.at(c.prefix + "y");
    ASSERT_EQ(y.dtype(), want.dtype());
    ember_test::expect_close(y, want, 1e-12, 1e-13, "y");
    if (g.contains(c.prefix + "gy")) {
      std::vector<Tensor> leaves;
      for (const std::string& n : differentiable) leaves.push_back(inputs[n]);
      const std::vector<Tensor> grads =
          autograd::grad({y}, leaves, {g.at(c.prefix + "gy")}, std::nullopt, false, /*allow_unused=*/true);
      for (size_t i = 0; i < differentiable.size(); ++i) {
        const Tensor expected = g.at(c.prefix + "g" + differentiable[i]);
        ember_test::expect_close(grads[i].defined() ? grads[i] : zeros_like(expected), expected, 1e-12, 1e-13,
                                 "g" + differentiable[i]);
      }
    }
    ++ran;
  }
  EXPECT_GE(ran, 100);
}

TEST(IndexingOps, BasicIndexingGivesViews) {
  Tensor x = arange(24, kFloat64).reshape({2, 3, 4});
  Tensor v = index(x, {1, Slice(None, None, 2), None, Ellipsis});
  EXPECT_EQ(v.sizes().vec(), (std::vector<int64_t>{2, 1, 4}));
  EXPECT_TRUE(v.is_alias_of(x));
  EXPECT_TRUE(equal(v.squeeze(1), tensor({{12.0, 13.0, 14.0, 15.0}, {20.0, 21.0, 22.0, 23.0}}, kFloat64)));
  Tensor advanced = index(x, {Slice(), tensor({0, 2})});
  EXPECT_FALSE(advanced.is_alias_of(x));  // advanced indexing copies
  // Adjacent advanced indices stay in place, separated ones go first (after integers apply).
  EXPECT_EQ(index(x, {Slice(), tensor({0, 1}), tensor({1, 2})}).sizes().vec(), (std::vector<int64_t>{2, 2}));
  EXPECT_EQ(index(x, {tensor({0, 1}), Slice(), tensor({1, 2})}).sizes().vec(), (std::vector<int64_t>{2, 3}));
  EXPECT_EQ(index(x, {0, Slice(), tensor({0, 1})}).sizes().vec(), (std::vector<int64_t>{3, 2}));
  EXPECT_EQ(index(x, {true}).sizes().vec(), (std::vector<int64_t>{1, 2, 3, 4}));
  EXPECT_EQ(index(x, {false}).sizes().vec(), (std::vector<int64_t>{0, 2, 3, 4}));
  // Writes through basic indices reach x.
  index_put_(x, {0, Slice(1, None)}, 7.0);
  EXPECT_EQ(index(x, {0, 2, 3}).item<double>(), 7.0);
  index_put_(x, {tensor({1}), 0, tensor({0, 3})}, tensor({-1.0, -2.0}, kFloat64));
  EXPECT_TRUE(equal(index(x, {1, 0}), tensor({-1.0, 13.0, 14.0, -2.0}, kFloat64)));
}

TEST(IndexingOps, ErrorsMatchPyTorch) {
  const Tensor x = arange(24.0).reshape({2, 3, 4});
  EXPECT_EQ(error_of([&] { index(x, {tensor({5})}); }), "index 5 is out of bounds for dimension 0 with size 2");
  EXPECT_EQ(error_of([&] {
              index(x, {Slice(), tensor({-4})});
            }),
            "index -4 is out of bounds for dimension 0 with size 3");
  EXPECT_EQ(error_of([&] {
              index(x, {tensor({0}), Slice(), tensor({9})});
            }),
            "index 9 is out of bounds for dimension 1 with size 4");
  EXPECT_EQ(error_of([&] { index(x, {Slice(), 5}); }), "index 5 is out of bounds for dimension 1 with size 3");
  EXPECT_EQ(error_of([&] {
              index(x, {tensor({true, false, true})});
            }),
            "The shape of the mask [3] at index 0 does not match the shape of the indexed tensor [2, 3, 4] at index 0");
  EXPECT_EQ(error_of([&] { index(x, {0, 0, 0, 0}); }), "too many indices for tensor of dimension 3");
  EXPECT_EQ(error_of([&] { index(x, {tensor({0.5})}); }),
            "tensors used as indices must be long, int, byte or bool tensors");
  EXPECT_EQ(error_of([&] {
              index(x, {tensor({0, 1}), tensor({0, 1, 2})});
            }),
            "shape mismatch: indexing tensors could not be broadcast together with shapes [2], [3]");
  EXPECT_EQ(error_of([&] { index(x, {Slice(None, None, -1)}); }), "step must be greater than zero");
  const Tensor m = zeros({3, 4});
  EXPECT_EQ(error_of([&] { index_put(m, {tensor({0})}, ones({3})); }),
            "shape mismatch: value tensor of shape [3] cannot be broadcast to indexing result of shape [1, 4]");
  EXPECT_EQ(error_of([&] {
              index_put(m, {tensor({0}), tensor({0}), tensor({0})}, ones({1}));
            }),
            "too many indices for tensor of dimension 2 (got 3)");
  EXPECT_EQ(error_of([&] { index_put(zeros({3}), {tensor({0})}, ones({1}, kFloat64)); }),
            "Index put requires the source and destination dtypes match, got Float for the destination and Double for "
            "the source.");
  const Tensor v = zeros({3});
  EXPECT_EQ(error_of([&] { scatter(v, 0, tensor({5}), 1.0); }), "index 5 is out of bounds for dimension 0 with size 3");
  EXPECT_EQ(error_of([&] { scatter(v, 0, tensor({-1}), 1.0); }),
            "index -1 is out of bounds for dimension 0 with size 3");
  EXPECT_EQ(error_of([&] { scatter(v, 0, tensor({{0}}), 1.0); }),
            "Index tensor must have the same number of dimensions as self tensor");
  EXPECT_EQ(error_of([&] { scatter(v, 0, tensor({0}), ones({1}, kFloat64)); }),
            "scatter(): Expected self.dtype to be equal to src.dtype");
  EXPECT_EQ(error_of([&] { scatter(v, 0, tensor({0.0}), ones({1})); }),
            "scatter(): Expected dtype int32/int64 for index");
  EXPECT_EQ(error_of([&] {
              scatter(v, 0, tensor({0, 1}), ones({1}));
            }),
            "Expected index [2] to be no larger than self [3] apart from dimension 0 and to be no larger size than "
            "src [1]");
  EXPECT_EQ(error_of([&] { scatter(v, 0, tensor({0}), ones({1}), "max"); }),
            "reduce argument must be either add or multiply.");
  EXPECT_EQ(error_of([&] { scatter_reduce(v, 0, tensor({0}), ones({1}), "foo"); }),
            "reduce argument must be either sum, prod, mean, amax or amin, got foo");
  EXPECT_EQ(error_of([&] {
              Tensor leaf = zeros({3}).requires_grad_();
              scatter(leaf, 0, tensor({0}), ones({1}), "add").sum().backward();
            }),
            "derivative for aten::scatter is not implemented");
  EXPECT_EQ(error_of([&] { index_add(v, 0, tensor({3}), ones({1})); }), "index out of range in self");
  EXPECT_EQ(error_of([&] {
              index_add(zeros({2, 3}), 0, tensor({-1}), ones({1, 3}));
            }),
            "index -1 is out of bounds for dimension 0 with size 2");
  EXPECT_EQ(error_of([&] {
              index_add(zeros({3, 2}), 0, tensor({0, 1}), ones({1, 2}));
            }),
            "index_add_(): Number of indices (2) should be equal to source.size(dim): (1), for dim: 0");
  EXPECT_EQ(error_of([&] {
              index_add(zeros({3, 2}), 0, tensor({0}), ones({1, 3}));
            }),
            "source tensor shape must match self tensor shape, excluding the specified dimension. Got self.shape = "
            "[3, 2] source.shape = [1, 3]");
  EXPECT_EQ(error_of([&] {
              index_add(zeros({2, 3}), 0, tensor({{0}}), ones({1, 3}));
            }),
            "index_add_(): Index is supposed to be a vector, but got dim: 2 with type: Long and size: [1, 1]");
  EXPECT_EQ(error_of([&] {
              index_add(zeros({3, 2}), 0, tensor({0}), ones({1, 2}, kFloat64));
            }),
            "index_add_(): self (Float) and source (Double) must have the same scalar type");
  EXPECT_EQ(error_of([&] { index_copy(v, 0, tensor({3}), ones({1})); }),
            "index_copy_(): index 3 is out of bounds for dimension 0 with size 3");
  EXPECT_EQ(error_of([&] {
              index_copy(zeros({2, 3}), 0, tensor({0}), ones({2, 3}));
            }),
            "index_copy_(): Number of indices (1) should be equal to source.size(dim) (2)");
  EXPECT_EQ(error_of([&] { index_fill(v, 0, tensor({3}), 1.0); }),
            "index 3 is out of bounds for dimension 0 with size 3");
  EXPECT_EQ(error_of([&] { index_fill(zeros({2, 3}), 0, tensor({{0}}), 1.0); }), "Index has to be a vector/scalar");
  EXPECT_EQ(error_of([&] {
              index_fill(zeros({2, 3}), 0, tensor({0}), ones({1}));
            }),
            "index_fill_ only supports a 0-dimensional value tensor, but got tensor with 1 dimension(s).");
  EXPECT_EQ(error_of([&] { take(v, tensor({3})); }),
            "out of range: tried to access index 3 on a tensor of 3 elements.");
  EXPECT_EQ(error_of([&] { take(zeros({0}), tensor({0})); }), "take(): tried to take from an empty tensor");
  EXPECT_EQ(error_of([&] { masked_select(v, tensor({1, 0, 1})); }), "masked_select: expected BoolTensor for mask");
  EXPECT_EQ(error_of([&] {
              masked_scatter(v, tensor({true, true, true}), ones({2}));
            }),
            "Number of elements of source < number of ones in mask");
  EXPECT_EQ(error_of([&] {
              masked_scatter(v, tensor({1, 1, 0}), ones({2}));
            }),
            "masked_scatter_ only supports boolean masks, but got mask with dtype Long");
  EXPECT_EQ(error_of([&] { one_hot(tensor({3}), 3); }), "Class values must be smaller than num_classes.");
  EXPECT_EQ(error_of([&] { one_hot(tensor({-1})); }), "Class values must be non-negative.");
  EXPECT_EQ(error_of([&] { one_hot(tensor({1.0})); }),
            "one_hot is only applicable to index tensor of type LongTensor.");
  EXPECT_EQ(error_of([&] { one_hot(zeros({0}, kInt64)); }), "Can not infer total number of classes from empty tensor.");
  EXPECT_EQ(error_of([&] { bincount(tensor({-1})); }), "bincount only supports 1-d non-negative integral inputs.");
  EXPECT_EQ(error_of([&] { bincount(tensor({{1}})); }), "bincount only supports 1-d non-negative integral inputs.");
  EXPECT_EQ(error_of([&] { bincount(tensor({1}), ones({2})); }),
            "weights should be 1-d and have the same length as input");
  EXPECT_EQ(error_of([&] { bincount(tensor({1}), Tensor(), -1); }), "minlength should be >= 0");
  EXPECT_EQ(error_of([&] { histc(tensor({1.0}), 0); }),
            "torch.histogram(): bins must be > 0, but got 0 for dimension 0");
  EXPECT_EQ(error_of([&] { histc(tensor({1.0}), 100, 2, 1); }), "torch.histc: max must be larger than min");
  EXPECT_EQ(error_of([&] { histc(tensor({1}), 3); }), "\"histogram_cpu\" not implemented for 'Long'");
  EXPECT_EQ(error_of([&] {
              take_along_dim(zeros({3, 4}), tensor({0}), 1);
            }),
            "torch.take_along_dim(): input and indices should have the same number of dimensions, but got 2 "
            "dimensions for input, and 1 dimensions for indices");
  EXPECT_EQ(error_of([&] {
              take_along_dim(zeros({3, 4}), tensor({{0.0}}), 1);
            }),
            "torch.take_along_dim(): dtype of indices should be Long but got Float");
}

TEST(IndexingOps, PositionsAndCounts) {
  const Tensor z = tensor({{0.0, 1.5, 0.0}, {2.0, 0.0, -1.0}});
  const std::vector<Tensor> columns = nonzero(z, true);
  ASSERT_EQ(columns.size(), 2u);
  EXPECT_TRUE(equal(columns[0], tensor({0, 1, 1})));
  EXPECT_TRUE(equal(columns[1], tensor({1, 0, 2})));
  const std::vector<Tensor> scalar = nonzero(tensor(5.0).reshape({}), true);
  ASSERT_EQ(scalar.size(), 1u);
  EXPECT_TRUE(equal(scalar[0], tensor({0})));
  EXPECT_EQ(nonzero(tensor(5.0).reshape({})).sizes().vec(), (std::vector<int64_t>{1, 0}));
  EXPECT_EQ(one_hot(zeros({0}, kInt64), 4).sizes().vec(), (std::vector<int64_t>{0, 4}));
  EXPECT_EQ(bincount(tensor({1, 1}), ones({2}, kInt32)).dtype(), kFloat64);
  EXPECT_EQ(bincount(tensor({1, 1}), ones({2}, kFloat32)).dtype(), kFloat32);
  // One index per value, the last written wins for duplicates (index order along dim).
  EXPECT_TRUE(equal(index_copy(zeros({3, 2}), 0, tensor({0, 0}), tensor({{1.0, 2.0}, {3.0, 4.0}})),
                    tensor({{3.0, 4.0}, {0.0, 0.0}, {0.0, 0.0}})));
}

TEST(IndexingOps, GradientsMatchFiniteDifferences) {
  manual_seed(11);
  const Tensor idx = tensor({{1, 0, 2}, {0, 0, 1}});
  test::gradcheck("scatter_reduce mean",
                  [idx](const std::vector<Tensor>& in) { return scatter_reduce(in[0], 0, idx, in[1], "mean", false); },
                  {randn({3, 3}), randn({2, 3})});
  test::gradcheck("scatter_reduce prod",
                  [idx](const std::vector<Tensor>& in) { return scatter_reduce(in[0], 0, idx, in[1], "prod"); },
                  {randn({3, 3}), randn({2, 3})});
  test::gradcheck("index",
                  [](const std::vector<Tensor>& in) {
                    return index(in[0], {tensor({1, 1, 0}), Slice(), tensor({2, 0, 2})});
                  },
                  {randn({2, 3, 4})});
  test::gradcheck("index_put accumulate",
                  [](const std::vector<Tensor>& in) {
                    return index_put(in[0], {tensor({1, 1, 0})}, in[1], true);
                  },
                  {randn({3, 2}), randn({3, 2})});
  test::gradcheck("masked_scatter",
                  [](const std::vector<Tensor>& in) {
                    return masked_scatter(in[0], tensor({true, false, true}), in[1]);
                  },
                  {randn({2, 3}), randn({5})});
  test::gradcheck("take_along_dim",
                  [](const std::vector<Tensor>& in) {
                    return take_along_dim(in[0], tensor({{2}, {0}}), 1);
                  },
                  {randn({2, 3})});
}

TEST(IndexingOps, Float32AndIntegerDtypes) {
  manual_seed(12);
  const Tensor x = randn({4, 3});
  const Tensor idx = tensor({{0, 2, 1}, {3, 3, 0}});
  const Tensor src = randn({2, 3});
  EXPECT_TRUE(allclose(scatter_reduce(x, 0, idx, src, "sum"),
                       scatter_reduce(x.to(kFloat64), 0, idx, src.to(kFloat64), "sum").to(kFloat32), 1e-6, 1e-6));
  const Tensor ints = tensor({{5, -7}, {2, 3}});
  EXPECT_TRUE(equal(scatter_reduce(ints, 0, tensor({{1, 1}}), tensor({{-4, 4}}), "mean"), tensor({{5, -7}, {-1, 3}})));
  EXPECT_TRUE(equal(index(tensor({1, 2, 3}, kInt32), {tensor({2, 0})}), tensor({3, 1}, kInt32)));
  EXPECT_TRUE(equal(masked_select(tensor({true, false, true}), tensor({true, true, false})), tensor({true, false})));
}

class IndexingDevice : public ember_test::DeviceTest {};

TEST_P(IndexingDevice, MatchesTheCpu) {
  manual_seed(13);
  const Tensor x = randn({4, 3});
  const Tensor idx = tensor({{0, 2, 1}, {3, 3, 0}});
  const Tensor src = randn({2, 3});
  const Device d = device();
  for (const char* reduce : {"sum", "prod", "mean", "amax", "amin"}) {
    EXPECT_CLOSE_TO_CPU(scatter_reduce(x.to(d), 0, idx.to(d), src.to(d), reduce, false),
                        scatter_reduce(x, 0, idx, src, reduce, false), 1e-6, 1e-6);
  }
  EXPECT_CLOSE_TO_CPU(scatter(x.to(d), 1, idx.narrow(1, 0, 2).remainder(3).to(d), 2.0),
                      scatter(x, 1, idx.narrow(1, 0, 2).remainder(3), 2.0), 0, 0);
  EXPECT_CLOSE_TO_CPU(index(x.to(d), {tensor({3, -1}).to(d), Slice(1, None)}),
                      index(x, {tensor({3, -1}), Slice(1, None)}), 0, 0);
  EXPECT_CLOSE_TO_CPU(index(x.to(d), {x.to(d) > 0}), index(x, {x > 0}), 0, 0);
  EXPECT_CLOSE_TO_CPU(index_put(x.to(d), {tensor({1, 1}).to(d)}, src.to(d), true),
                      index_put(x, {tensor({1, 1})}, src, true), 1e-6, 1e-6);
  EXPECT_CLOSE_TO_CPU(index_add(x.to(d), 0, tensor({2, 0}).to(d), src.to(d), 2),
                      index_add(x, 0, tensor({2, 0}), src, 2), 1e-6, 1e-6);
  EXPECT_CLOSE_TO_CPU(index_fill(x.to(d), 1, tensor({-1}).to(d), 3.0), index_fill(x, 1, tensor({-1}), 3.0), 0, 0);
  EXPECT_CLOSE_TO_CPU(masked_scatter(x.to(d), (x > 0).to(d), randn({12}).to(d).abs() * 0),
                      masked_scatter(x, x > 0, zeros({12})), 0, 0);
  EXPECT_CLOSE_TO_CPU(nonzero(x.to(d) > 0), nonzero(x > 0), 0, 0);
  EXPECT_CLOSE_TO_CPU(take(x.to(d), tensor({11, -12}).to(d)), take(x, tensor({11, -12})), 0, 0);
  EXPECT_CLOSE_TO_CPU(take_along_dim(x.to(d), tensor({{2}, {0}, {1}, {1}}).to(d), 1),
                      take_along_dim(x, tensor({{2}, {0}, {1}, {1}}), 1), 0, 0);
  EXPECT_CLOSE_TO_CPU(one_hot(tensor({2, 0}).to(d)), one_hot(tensor({2, 0})), 0, 0);
  EXPECT_CLOSE_TO_CPU(bincount(tensor({2, 0, 2}).to(d)), bincount(tensor({2, 0, 2})), 0, 0);
  EXPECT_CLOSE_TO_CPU(histc(x.to(d), 5, -1, 1), histc(x, 5, -1, 1), 0, 0);
  // Gradients on the device.
  Tensor on_device = x.to(d, false, /*copy=*/true).requires_grad_();
  Tensor on_cpu = x.detach().clone().requires_grad_();
  scatter_reduce(on_device, 0, idx.to(d), src.to(d), "amax").sum().backward();
  scatter_reduce(on_cpu, 0, idx, src, "amax").sum().backward();
  EXPECT_CLOSE_TO_CPU(on_device.grad(), on_cpu.grad(), 0, 0);
}

EMBER_INSTANTIATE_DEVICE_SUITE(IndexingDevice);

}  // namespace
