#pragma once
// Helpers for the tests that read PyTorch goldens written by tools/gen_*_golden.py: their
// metadata holds "count" and, per case i, "case<i>" = "KIND,key=value,..." and optionally
// "case<i>.keys" (a module's state_dict keys, comma-separated).
#include <cstdint>
#include <map>
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

/// One case's description.
struct GoldenCase {
  std::string prefix;       // "case3.": its tensors' names start with it
  std::string description;  // "case3 KIND,key=value,...", for failure messages
  std::string kind;
  std::map<std::string, std::string> options;
  std::vector<std::string> keys;  // empty without "case<i>.keys"

  int64_t num(const std::string& key) const { return std::stoll(options.at(key)); }
  double real(const std::string& key) const { return std::stod(options.at(key)); }
  bool flag(const std::string& key) const { return num(key) != 0; }
};

/// Every case the metadata describes, in order.
inline std::vector<GoldenCase> golden_cases(const std::map<std::string, std::string>& metadata) {
  std::vector<GoldenCase> out;
  const int count = std::stoi(metadata.at("count"));
  for (int i = 0; i < count; ++i) {
    GoldenCase c;
    const std::string name = "case" + std::to_string(i);
    c.prefix = name + ".";
    c.description = name + " " + metadata.at(name);
    const std::vector<std::string> fields = split_commas(metadata.at(name));
    c.kind = fields.at(0);
    for (size_t f = 1; f < fields.size(); ++f) {
      const size_t eq = fields[f].find('=');
      c.options[fields[f].substr(0, eq)] = fields[f].substr(eq + 1);
    }
    if (auto it = metadata.find(name + ".keys"); it != metadata.end()) c.keys = split_commas(it->second);
    out.push_back(std::move(c));
  }
  return out;
}

}  // namespace ember_test
