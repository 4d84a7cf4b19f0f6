#include "ember/warning.h"

#include <cstdio>
#include <mutex>
#include <set>
#include <utility>

namespace ember {

namespace {

struct WarningState {
  std::mutex mutex;
  WarningHandler handler;       // empty: the default
  std::set<std::string> shown;  // messages the default has written
};

WarningState& state() {
  static WarningState s;
  return s;
}

}  // namespace

WarningHandler set_warning_handler(WarningHandler handler) {
  std::lock_guard<std::mutex> lock(state().mutex);
  return std::exchange(state().handler, std::move(handler));
}

void warn(const std::string& message) {
  WarningHandler handler;
  {
    std::lock_guard<std::mutex> lock(state().mutex);
    if (!state().handler) {
      if (state().shown.insert(message).second) std::fprintf(stderr, "UserWarning: %s\n", message.c_str());
      return;
    }
    handler = state().handler;
  }
  // Called without the lock, so that a handler may warn, or install another handler, itself.
  handler(message);
}

}  // namespace ember
