#pragma once
/// Reverse-mode automatic differentiation: grad mode, NoGradGuard, anomaly detection and backward().
///
/// Ops on tensors that require grad record a node; Tensor::backward() walks the recorded graph
/// in reverse and accumulates gradients into the leaves' grad(). The graph's saved tensors are
/// freed after a backward pass unless retain_graph is true.
#include <vector>

#include "ember/tensor.h"

namespace ember {

/// Whether ops record the graph on this thread (on by default).
struct GradMode {
  static bool is_enabled();
  static void set_enabled(bool enabled);
};

/// Turns recording off for its scope (like `with torch.no_grad():`).
class NoGradGuard {
 public:
  NoGradGuard() : previous_(GradMode::is_enabled()) { GradMode::set_enabled(false); }
  ~NoGradGuard() { GradMode::set_enabled(previous_); }
  NoGradGuard(const NoGradGuard&) = delete;
  NoGradGuard& operator=(const NoGradGuard&) = delete;

 private:
  bool previous_;
};

/// Turns recording on for its scope, inside a NoGradGuard (like `torch.enable_grad()`).
class EnableGradGuard {
 public:
  EnableGradGuard() : previous_(GradMode::is_enabled()) { GradMode::set_enabled(true); }
  ~EnableGradGuard() { GradMode::set_enabled(previous_); }
  EnableGradGuard(const EnableGradGuard&) = delete;
  EnableGradGuard& operator=(const EnableGradGuard&) = delete;

 private:
  bool previous_;
};

/// Anomaly detection (like torch.autograd.set_detect_anomaly): while enabled, every backward
/// function's results are checked, and the first one holding a NaN stops backward() with an
/// ember::Error naming that function ("Function 'DivBackward0' returned nan values in its 0th
/// output ..."), so the op that produced the first NaN gradient is known. It reads every
/// gradient back to the host, so it is for debugging, off by default, and global to the process.
struct AnomalyMode {
  static bool is_enabled();
  static void set_enabled(bool enabled);
};

/// Enables anomaly detection for its scope (like `with torch.autograd.detect_anomaly():`).
class DetectAnomalyGuard {
 public:
  DetectAnomalyGuard() : previous_(AnomalyMode::is_enabled()) { AnomalyMode::set_enabled(true); }
  ~DetectAnomalyGuard() { AnomalyMode::set_enabled(previous_); }
  DetectAnomalyGuard(const DetectAnomalyGuard&) = delete;
  DetectAnomalyGuard& operator=(const DetectAnomalyGuard&) = delete;

 private:
  bool previous_;
};

/// Computes the gradients of `outputs` (seeded with `grad_outputs`, or ones for one-element
/// outputs) with respect to every leaf that requires grad, accumulating into their grad().
void backward(const std::vector<Tensor>& outputs, const std::vector<Tensor>& grad_outputs = {},
              bool retain_graph = false);

}  // namespace ember
