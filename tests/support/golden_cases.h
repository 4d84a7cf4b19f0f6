#pragma once
// Helpers for the tests that read PyTorch goldens written by tools/gen_*_golden.py: their
// metadata holds a count and, per case i of a series ("case" unless the file has several),
// "<series><i>" = "KIND,key=value,..." and optionally "<series><i>.keys" (a module's state_dict
// keys, comma-separated).
#include <gtest/gtest.h>

#include <cstdint>
#include <map>
#include <sstream>
#include <string>
#include <vector>

#include "ember/ember.h"
#include "ember/io/safetensors.h"

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
  std::vector<std::string> keys;  // empty without "<series><i>.keys"

  int64_t num(const std::string& key) const { return std::stoll(options.at(key)); }
  double real(const std::string& key) const { return std::stod(options.at(key)); }
  bool flag(const std::string& key) const { return num(key) != 0; }
};

/// Every case of `series` the metadata describes, in order. The count is "count" for the series
/// "case" and "count.<series>" for any other.
inline std::vector<GoldenCase> golden_cases(const std::map<std::string, std::string>& metadata,
                                            const std::string& series = "case") {
  std::vector<GoldenCase> out;
  const int count = std::stoi(metadata.at(series == "case" ? std::string("count") : "count." + series));
  for (int i = 0; i < count; ++i) {
    GoldenCase c;
    const std::string name = series + std::to_string(i);
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

/// `got` has `want`'s sizes and is allclose to it, both compared in float64 (NaN where PyTorch
/// has NaN counts as equal).
inline void expect_close(const ember::Tensor& got, const ember::Tensor& want, double rtol, double atol,
                         const std::string& what) {
  ASSERT_TRUE(got.defined()) << what << " is undefined";
  ASSERT_EQ(got.sizes().vec(), want.sizes().vec()) << what;
  EXPECT_TRUE(ember::allclose(got.to(ember::kFloat64), want.to(ember::kFloat64), rtol, atol, /*equal_nan=*/true))
      << what << "\ngot\n"
      << got << "\nwant\n"
      << want;
}

/// Every parameter of `m` equals the golden "<prefix><name>" bit for bit, and there are as many of
/// each. Names for which `approximate` is true are held to rtol 2.4e-7 instead (about 2 ulp).
template <typename Approximate>
void expect_parameters(const ember::nn::Module& m, const ember::io::SafetensorsData& golden, const std::string& prefix,
                       const Approximate& approximate) {
  const auto params = m.named_parameters();
  size_t stored = 0;
  for (const std::string& name : golden.names()) stored += name.starts_with(prefix) ? 1 : 0;
  EXPECT_EQ(params.size(), stored) << prefix;
  for (const auto& [name, p] : params) {
    ASSERT_TRUE(golden.contains(prefix + name)) << prefix + name;
    const ember::Tensor& want = golden.at(prefix + name);
    EXPECT_EQ(p.dtype(), want.dtype()) << prefix + name;
    EXPECT_TRUE(approximate(name) ? ember::allclose(p.detach(), want, 2.4e-7, 0.0) : ember::equal(p.detach(), want))
        << prefix + name << "\n"
        << p;
  }
}

inline void expect_parameters(const ember::nn::Module& m, const ember::io::SafetensorsData& golden,
                              const std::string& prefix) {
  expect_parameters(m, golden, prefix, [](const std::string&) { return false; });
}

}  // namespace ember_test
