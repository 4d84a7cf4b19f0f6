#pragma once
// Helpers for the tests that read PyTorch goldens written by tools/gen_*_golden.py, whose
// metadata describes each case as comma-separated "KIND,key=value,..." strings.
#include <sstream>
#include <string>
#include <vector>

namespace ember_test {

inline std::vector<std::string> split_commas(const std::string& text) {
  std::vector<std::string> out;
  std::stringstream ss(text);
  for (std::string item; std::getline(ss, item, ',');) out.push_back(item);
  return out;
}

}  // namespace ember_test
