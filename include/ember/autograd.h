#pragma once
/// Reverse-mode automatic differentiation: grad mode, NoGradGuard, anomaly detection and backward().
///
/// Ops on tensors that require grad record a node; Tensor::backward() walks the recorded graph
/// in reverse and accumulates gradients into the leaves' grad(). The graph's saved tensors are
/// freed after a backward pass unless retain_graph is true.
#include <cstdint>
#include <functional>
#include <memory>
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

/// Called by backward() right after it has accumulated a leaf's gradient into its grad(), with
/// the leaf (PyTorch's Tensor.register_post_accumulate_grad_hook). Data-parallel training starts
/// sending a gradient from here, while backward goes on with the layers before it.
using PostAccumulateGradHook = std::function<void(const Tensor& leaf)>;

/// Removes the hook it was returned for; removing twice, or after the tensor is gone, does nothing.
class HookHandle {
 public:
  HookHandle() = default;
  void remove();

 private:
  friend HookHandle register_post_accumulate_grad_hook(const Tensor& leaf, PostAccumulateGradHook hook);
  std::weak_ptr<AutogradMeta> meta_;
  uint64_t id_ = 0;
};

/// Registers `hook` on `leaf`, which must be a leaf tensor that requires grad. Hooks run in the
/// order registered, on the thread running backward(), with grad mode off.
HookHandle register_post_accumulate_grad_hook(const Tensor& leaf, PostAccumulateGradHook hook);

namespace autograd {
/// Runs `callback` once the backward() running on this thread has finished every node, before
/// it returns (torch's Variable._execution_engine.queue_callback). Only valid inside backward(),
/// i.e. from a backward function or a hook; callbacks run in the order queued.
void queue_callback(std::function<void()> callback);
}  // namespace autograd

/// Computes the gradients of `outputs` (seeded with `grad_outputs`, or ones for one-element
/// outputs) with respect to every leaf that requires grad, accumulating into their grad().
void backward(const std::vector<Tensor>& outputs, const std::vector<Tensor>& grad_outputs = {},
              bool retain_graph = false);

}  // namespace ember
