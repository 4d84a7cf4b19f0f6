#pragma once
// Arms EMBER_FAULT_INJECT (src/io/fault_injection.h) for a scope.
#include <cstdlib>
#include <string>

namespace ember_test {

class InjectFault {
 public:
  explicit InjectFault(const std::string& spec) { ::setenv("EMBER_FAULT_INJECT", spec.c_str(), 1); }
  ~InjectFault() { ::unsetenv("EMBER_FAULT_INJECT"); }
  InjectFault(const InjectFault&) = delete;
  InjectFault& operator=(const InjectFault&) = delete;
};

}  // namespace ember_test
