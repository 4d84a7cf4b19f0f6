#pragma once
/// Reverse-mode automatic differentiation: anomaly detection, hooks and backward() (grad mode and
/// NoGradGuard: ember/grad_mode.h).
///
/// Ops on tensors that require grad record a node; Tensor::backward() walks the recorded graph
/// in reverse and accumulates gradients into the leaves' grad(). The graph's saved tensors are
/// freed after a backward pass unless retain_graph is true.
#include <cstdint>
#include <functional>
#include <initializer_list>
#include <memory>
#include <optional>
#include <utility>
#include <vector>

#include "ember/grad_mode.h"
#include "ember/tensor.h"

namespace ember {

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

/// Called with the gradient computed for a tensor (PyTorch's Tensor.register_hook): returns
/// the gradient to use in its place, or an undefined tensor to leave it as it is.
using TensorHook = std::function<Tensor(const Tensor& grad)>;

/// Removes the hook it was returned for; removing twice, or after the tensor is gone, does nothing.
class HookHandle {
 public:
  HookHandle() = default;
  void remove();

 private:
  friend HookHandle register_post_accumulate_grad_hook(const Tensor& leaf, PostAccumulateGradHook hook);
  friend HookHandle register_hook(const Tensor& tensor, TensorHook hook);
  explicit HookHandle(std::function<void()> remover) : remover_(std::move(remover)) {}
  std::function<void()> remover_;
};

/// Registers `hook` on `leaf`, which must be a leaf tensor that requires grad. Hooks run in the
/// order registered, on the thread running backward(), with grad mode off.
HookHandle register_post_accumulate_grad_hook(const Tensor& leaf, PostAccumulateGradHook hook);

/// Registers `hook` on `tensor`, which must require grad (Tensor.register_hook). Each backward
/// pass (or autograd::grad) that computes the tensor's gradient calls the hooks in the order
/// registered, each with the gradient the previous one left; what the last leaves is what flows
/// on: into the leaf's grad(), or to the ops that made the tensor. A hook may not change the
/// gradient's size, dtype or device. As in PyTorch, a hook registered on a non-leaf tensor that
/// is later written in place sees the gradient of the value the tensor had when it was
/// registered. Hooks run on the thread running backward, with grad mode on only under
/// create_graph.
HookHandle register_hook(const Tensor& tensor, TensorHook hook);

namespace autograd {
/// Runs `callback` once the backward() running on this thread has finished every node, before
/// it returns (torch's Variable._execution_engine.queue_callback). Only valid inside backward(),
/// i.e. from a backward function or a hook; callbacks run in the order queued. A backward pass
/// run from inside another's backward function (a checkpointed block's) queues onto the
/// outermost pass, so its callbacks still run after every gradient of the user's backward().
void queue_callback(std::function<void()> callback);
}  // namespace autograd

/// Computes the gradients of `outputs` (seeded with `grad_outputs`, or ones for one-element
/// outputs) with respect to every leaf that requires grad, accumulating into their grad().
///
/// `create_graph` records the backward pass itself, so that the gradients it produces can be
/// differentiated again (Hessian-vector products, gradient penalties); the graph is then kept,
/// as `retain_graph` defaults to `create_graph`, and grad() of a leaf becomes a recorded tensor
/// (accumulated out of place). Without it the saved tensors are freed as backward goes, and a
/// second backward through the same graph is an error unless `retain_graph` is true.
void backward(const std::vector<Tensor>& outputs, const std::vector<Tensor>& grad_outputs = {},
              std::optional<bool> retain_graph = std::nullopt, bool create_graph = false);

namespace autograd {
/// The gradients of `outputs` with respect to `inputs` (torch.autograd.grad), returned rather
/// than accumulated: no tensor's grad() changes and no post-accumulate hook runs. Inputs may be
/// leaves or intermediate results, and must require grad. Only the part of the graph between
/// the outputs and the inputs runs. An input the outputs do not depend on is an error unless
/// `allow_unused`, which returns an undefined tensor for it, or `materialize_grads`, which returns
/// zeros (a new leaf requiring grad, as PyTorch makes it) and implies `allow_unused` unless that is
/// given as false, which is an error. `grad_outputs`, `retain_graph` and `create_graph` are as
/// for ember::backward().
std::vector<Tensor> grad(const std::vector<Tensor>& outputs, const std::vector<Tensor>& inputs,
                         const std::vector<Tensor>& grad_outputs = {}, std::optional<bool> retain_graph = std::nullopt,
                         bool create_graph = false, std::optional<bool> allow_unused = std::nullopt,
                         bool materialize_grads = false);

/// autograd::grad's optional arguments by name, PyTorch's defaults:
///   autograd::grad({y}, {x}, {.create_graph = true, .allow_unused = true});
/// (GCC 12 also offers a lone designator such as `{.allow_unused = true}` to the positional
/// form's grad_outputs; with braced outputs and inputs the overload below still wins, and with
/// vectors write `autograd::GradOptions{.allow_unused = true}`.)
struct GradOptions {
  std::vector<Tensor> grad_outputs = {};
  std::optional<bool> retain_graph = std::nullopt;
  bool create_graph = false;
  std::optional<bool> allow_unused = std::nullopt;
  bool materialize_grads = false;
};

inline std::vector<Tensor> grad(const std::vector<Tensor>& outputs, const std::vector<Tensor>& inputs,
                                const GradOptions& options) {
  return grad(outputs, inputs, options.grad_outputs, options.retain_graph, options.create_graph, options.allow_unused,
              options.materialize_grads);
}

inline std::vector<Tensor> grad(std::initializer_list<Tensor> outputs, std::initializer_list<Tensor> inputs,
                                const GradOptions& options) {
  return grad(std::vector<Tensor>(outputs), std::vector<Tensor>(inputs), options);
}

/// Activation checkpointing (torch.utils.checkpoint.checkpoint in its reentrant form): runs
/// `fn(inputs)` without recording, so that none of the activations inside it are kept, and
/// records one node that, when backward() reaches it, runs `fn` again with recording on and
/// back-propagates through that second run. Memory for compute: a block's activations cost one
/// extra forward pass of the block instead. The random generators (the CPU's, and the GPU's of
/// the first input on one) are set back for the second run, so dropout draws the same masks.
/// The parameters `fn` uses get their gradients while the second run is back-propagated.
///
/// As in PyTorch's reentrant form: the output requires grad only when an input does (otherwise
/// a warning says the gradients will be None), and a checkpointed block works with backward()
/// only, not with autograd::grad or create_graph, which are errors when they reach it. `fn`
/// must compute the same thing both times; it is called with the inputs detached.
Tensor checkpoint(const std::function<Tensor(const std::vector<Tensor>&)>& fn, const std::vector<Tensor>& inputs);

}  // namespace autograd

}  // namespace ember
