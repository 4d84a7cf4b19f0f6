#pragma once
/// Grad mode: whether ops record the autograd graph on this thread, and the guards that set it for
/// a scope. A flag of core, below autograd (as PyTorch keeps GradMode in c10): core reads it when it
/// makes a view, the ops read it before they record.

namespace ember {

/// Whether ops record the graph on this thread (on by default).
struct GradMode {
  static bool is_enabled();
  static void set_enabled(bool enabled);
};

/// Sets whether ops record for its scope, then restores what was set (libtorch's AutoGradMode).
class AutoGradMode {
 public:
  explicit AutoGradMode(bool enabled) : previous_(GradMode::is_enabled()) { GradMode::set_enabled(enabled); }
  ~AutoGradMode() { GradMode::set_enabled(previous_); }
  AutoGradMode(const AutoGradMode&) = delete;
  AutoGradMode& operator=(const AutoGradMode&) = delete;

 private:
  bool previous_;
};

/// Turns recording off for its scope (like `with torch.no_grad():`).
class NoGradGuard : public AutoGradMode {
 public:
  NoGradGuard() : AutoGradMode(false) {}
};

/// Turns recording on for its scope, inside a NoGradGuard (like `torch.enable_grad()`).
class EnableGradGuard : public AutoGradMode {
 public:
  EnableGradGuard() : AutoGradMode(true) {}
};

}  // namespace ember
