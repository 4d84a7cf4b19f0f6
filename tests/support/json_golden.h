#pragma once
// Helpers for the tests that read PyTorch goldens stored as JSON (tests/*/golden/*.json, written
// by tools/gen_*_golden.py).
#include <gtest/gtest.h>

#include <cstdint>
#include <fstream>
#include <nlohmann/json.hpp>
#include <string>
#include <vector>

#include "ember/ember.h"

namespace ember_test {

/// The JSON file at `path` (relative to the source tree); a missing file fails the test.
inline nlohmann::json read_json_golden(const std::string& path) {
  std::ifstream in(std::string(EMBER_SOURCE_DIR) + "/" + path);
  EXPECT_TRUE(in.good()) << "missing " << path;
  return nlohmann::json::parse(in);
}

/// A float32 matrix from a list of rows.
inline ember::Tensor matrix_from(const nlohmann::json& rows) {
  std::vector<float> values;
  int64_t cols = 0;
  for (const auto& row : rows) {
    cols = static_cast<int64_t>(row.size());
    for (const auto& v : row) values.push_back(v.get<float>());
  }
  return ember::tensor(values).reshape({static_cast<int64_t>(rows.size()), cols});
}

}  // namespace ember_test
