#pragma once
/// Reverse-mode automatic differentiation: grad mode, NoGradGuard and backward().
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

/// Computes the gradients of `outputs` (seeded with `grad_outputs`, or ones for one-element
/// outputs) with respect to every leaf that requires grad, accumulating into their grad().
void backward(const std::vector<Tensor>& outputs, const std::vector<Tensor>& grad_outputs = {},
              bool retain_graph = false);

}  // namespace ember
