#pragma once
// The cases of tests/ops/golden/transform_norm_golden.safetensors (tools/gen_transform_norm_golden.py),
// shared by tests/ops/test_transform.cpp and tests/ops/test_norm.cpp: each case runs ember's op on
// the golden inputs and compares the result and every input gradient with PyTorch's.
#include <gtest/gtest.h>

#include <functional>
#include <map>
#include <string>
#include <vector>

#include "ember/ember.h"
#include "ember/io/safetensors.h"
#include "support/golden_cases.h"

namespace ember_test {

inline const ember::io::SafetensorsData& transform_norm_golden() {
  static const ember::io::SafetensorsData data =
      ember::io::load_safetensors(EMBER_SOURCE_DIR "/tests/ops/golden/transform_norm_golden.safetensors");
  return data;
}

/// "0;2" -> {0, 2}; "" -> {}.
inline std::vector<int64_t> int_list(const std::string& text) {
  std::vector<int64_t> out;
  size_t start = 0;
  while (start < text.size()) {
    size_t end = text.find(';', start);
    if (end == std::string::npos) end = text.size();
    out.push_back(std::stoll(text.substr(start, end - start)));
    start = end + 1;
  }
  return out;
}

/// An op of the golden file: its inputs by name ("x", "a", "b", "input", "c") to its result.
using GoldenOp = std::function<ember::Tensor(const std::map<std::string, ember::Tensor>&)>;

/// Runs every case of `g` (by default transform_norm_golden()) whose op `ops` knows (the others
/// are another test file's): the result and the gradient of each floating input against
/// PyTorch's, to rtol/atol. Returns how many ran.
inline int check_golden_cases(const std::map<std::string, std::function<GoldenOp(const GoldenCase&)>>& ops,
                              double rtol = 1e-12, double atol = 1e-13,
                              const ember::io::SafetensorsData& g = transform_norm_golden()) {
  int ran = 0;
  for (const GoldenCase& c : golden_cases(g.metadata)) {
    auto found = ops.find(c.options.at("op"));
    if (found == ops.end()) continue;
    SCOPED_TRACE(c.description);
    std::map<std::string, ember::Tensor> inputs;
    std::vector<std::string> names;
    for (const char* name : {"x", "a", "b", "input", "c"}) {
      if (!g.contains(c.prefix + name)) continue;
      ember::Tensor t = g.at(c.prefix + name).clone();
      if (t.is_floating_point()) t.requires_grad_();
      inputs[name] = t;
      names.push_back(name);
    }
    const ember::Tensor y = found->second(c)(inputs);
    expect_close(y, g.at(c.prefix + "y"), rtol, atol, "y");
    if (g.contains(c.prefix + "gy")) {
      std::vector<ember::Tensor> leaves;
      for (const std::string& n : names) leaves.push_back(inputs[n]);
      const std::vector<ember::Tensor> grads =
          ember::autograd::grad({y}, leaves, {g.at(c.prefix + "gy")}, std::nullopt, false, /*allow_unused=*/true);
      for (size_t i = 0; i < names.size(); ++i) {
        const ember::Tensor want = g.at(c.prefix + "g" + names[i]);
        expect_close(grads[i].defined() ? grads[i] : ember::zeros_like(want), want, rtol, atol, "g" + names[i]);
      }
    }
    ++ran;
  }
  return ran;
}

}  // namespace ember_test
