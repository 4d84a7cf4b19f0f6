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

}  // namespace
