#pragma once
// CollectWarnings: while alive, every ember::warn goes into messages() instead of stderr.
#include <string>
#include <utility>
#include <vector>

#include "ember/warning.h"

namespace ember_test {

class CollectWarnings {
 public:
  CollectWarnings()
      : previous_(ember::set_warning_handler([this](const std::string& message) { messages_.push_back(message); })) {}
  ~CollectWarnings() { ember::set_warning_handler(std::move(previous_)); }
  CollectWarnings(const CollectWarnings&) = delete;
  CollectWarnings& operator=(const CollectWarnings&) = delete;

  const std::vector<std::string>& messages() const { return messages_; }

 private:
  std::vector<std::string> messages_;
  ember::WarningHandler previous_;
};

}  // namespace ember_test
