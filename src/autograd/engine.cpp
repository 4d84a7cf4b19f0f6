// The backward pass: find every node reachable from the outputs, count how many gradients each
// waits for, then run them in dependency order, accumulating into leaves.
#include <algorithm>
#include <atomic>
#include <queue>
#include <unordered_map>
#include <unordered_set>

#include "autograd/node.h"
#include "core/check.h"
#include "core/tensor_internal.h"
#include "ember/factories.h"
#include "ember/ops.h"

namespace ember {

namespace {
thread_local bool g_grad_enabled = true;
std::atomic<bool> g_anomaly_enabled{false};
std::atomic<uint64_t> g_sequence{0};
std::atomic<uint64_t> g_hook_ids{1};
// The callbacks queued during the backward() running on this thread; null outside backward.
thread_local std::vector<std::function<void()>>* g_final_callbacks = nullptr;
}  // namespace

bool GradMode::is_enabled() { return g_grad_enabled; }
void GradMode::set_enabled(bool enabled) { g_grad_enabled = enabled; }

bool AnomalyMode::is_enabled() { return g_anomaly_enabled.load(std::memory_order_relaxed); }
void AnomalyMode::set_enabled(bool enabled) { g_anomaly_enabled.store(enabled, std::memory_order_relaxed); }

namespace autograd {

// A tensor that needs no gradient is kept as a detached alias: it shares the storage (and so
// its version counter) but not the autograd state. That is always the case for the op's own
// output, which is saved before record() gives it its grad_fn; keeping the output itself would
// make a cycle (output -> node -> closure -> output) that leaks the graph when backward never
// runs. Inputs that require grad are kept as they are: backward formulas ask them for that.
SavedTensor::SavedTensor(const Tensor& t)
    : tensor_(t.defined() && !t.requires_grad() ? t.detach() : t),
      version_(t.defined() ? t.impl().storage->version() : 0) {}

Tensor SavedTensor::get() const {
  if (tensor_.defined() && tensor_.impl().storage->version() != version_) {
    std::string sizes;
    for (int64_t i = 0; i < tensor_.dim(); ++i) sizes += (i ? ", " : "") + std::to_string(tensor_.size(i));
    detail::fail("one of the variables needed for gradient computation has been modified by an inplace operation: [",
                 scalar_type_name(tensor_.dtype()), " [", sizes, "]] is at version ", tensor_.impl().storage->version(),
                 "; expected version ", version_,
                 " instead. Hint: avoid in-place ops (x.add_(..), x += ..) on tensors that an op saved for backward.");
  }
  return tensor_;
}

bool needs_grad(std::initializer_list<const Tensor*> inputs) {
  if (!GradMode::is_enabled()) return false;
  for (const Tensor* t : inputs) {
    if (t->defined() && t->requires_grad()) return true;
  }
  return false;
}

bool needs_grad(const std::vector<Tensor>& inputs) {
  if (!GradMode::is_enabled()) return false;
  for (const Tensor& t : inputs) {
    if (t.defined() && t.requires_grad()) return true;
  }
  return false;
}

namespace {

// The node that receives gradients for `t`: its grad_fn, its leaf accumulator, or none.
std::shared_ptr<Node> gradient_node(const Tensor& t) {
  if (!t.defined() || !t.requires_grad()) return nullptr;
  AutogradMeta& meta = *t.impl().autograd;
  if (meta.grad_fn) return meta.grad_fn;
  if (auto acc = meta.accumulator.lock()) return acc;
  auto acc = std::make_shared<Node>();
  acc->name = "AccumulateGrad";
  acc->accumulates = true;
  acc->leaf = t.impl_ptr();
  acc->sequence_nr = g_sequence.fetch_add(1);
  meta.accumulator = acc;
  return acc;
}

}  // namespace

void record(Tensor& output, const char* name, std::span<const Tensor* const> inputs, BackwardFn backward) {
  auto node = std::make_shared<Node>();
  node->name = name;
  node->backward = std::move(backward);
  node->sequence_nr = g_sequence.fetch_add(1);
  node->next.reserve(inputs.size());
  node->inputs.reserve(inputs.size());
  for (const Tensor* t : inputs) {
    node->next.push_back({gradient_node(*t)});
    node->inputs.push_back(t->defined() ? InputMeta{Dims(t->sizes()), t->dtype()} : InputMeta{});
  }
  detail::TensorImpl& impl = output.impl();
  if (!impl.autograd) impl.autograd = std::make_shared<AutogradMeta>();
  impl.autograd->grad_fn = std::move(node);
}

Tensor sum_to(const Tensor& grad, IntList sizes) {
  if (same_dims(grad.sizes(), sizes)) return grad;
  const int64_t lead = grad.dim() - static_cast<int64_t>(sizes.size());
  std::vector<int64_t> dims;
  for (int64_t d = 0; d < grad.dim(); ++d) {
    if (d < lead || (sizes[d - lead] == 1 && grad.size(d) != 1)) dims.push_back(d);
  }
  Tensor reduced = dims.empty() ? grad : sum(grad, dims, /*keepdim=*/true);
  return reduced.reshape(sizes);
}

namespace {

void accumulate_into_leaf(const Node& node, Tensor grad) {
  auto impl = node.leaf.lock();
  if (!impl) return;  // the leaf is gone; nobody can read its gradient
  Tensor leaf(impl);
  AutogradMeta& meta = *impl->autograd;
  if (!meta.grad.defined()) {
    // Take the incoming tensor when nothing else refers to it; otherwise copy, so the leaf's
    // gradient never aliases another tensor.
    const bool unique = grad.impl_ptr().use_count() == 1 && grad.impl().storage.use_count() == 1 &&
                        grad.is_contiguous() && same_dims(grad.sizes(), leaf.sizes());
    meta.grad = unique ? grad : grad.expand(leaf.sizes()).clone();
  } else {
    meta.grad.add_(grad);
  }
  if (meta.post_accumulate_hooks.empty()) return;
  // A copy: a hook may register or remove hooks.
  const auto hooks = meta.post_accumulate_hooks;
  for (const auto& [id, hook] : hooks) hook(leaf);
}

// Anomaly mode: the first backward function whose results hold a NaN is named, with the input
// each result is the gradient for, since that is what a user can find in their forward code.
void check_for_nan(const Node& node, const std::vector<Tensor>& input_grads) {
  for (size_t i = 0; i < input_grads.size(); ++i) {
    const Tensor& g = input_grads[i];
    if (!g.defined() || !g.is_floating_point()) continue;
    if (isnan(g).sum().item<int64_t>() == 0) continue;
    const InputMeta& meta = node.inputs[i];
    detail::fail("Function '", node.name, "' returned nan values in its ", i, "th output (the gradient for its input ",
                 i, " of shape ", detail::shape_str(meta.sizes), ", ", dtype_name(meta.dtype),
                 "). Look at that op's inputs in the forward pass: 0/0, log or sqrt of values <= 0, or overflow.");
  }
}

}  // namespace

void run_backward(const std::vector<Tensor>& outputs, const std::vector<Tensor>& grad_outputs, bool retain_graph) {
  EMBER_CHECK(grad_outputs.empty() || grad_outputs.size() == outputs.size(), "backward: got ", grad_outputs.size(),
              " gradients for ", outputs.size(), " outputs");
  NoGradGuard no_grad;
  std::vector<std::function<void()>> final_callbacks;
  struct CallbacksScope {
    std::vector<std::function<void()>>* previous;
    explicit CallbacksScope(std::vector<std::function<void()>>* mine) : previous(g_final_callbacks) {
      g_final_callbacks = mine;
    }
    ~CallbacksScope() { g_final_callbacks = previous; }
  } callbacks_scope(&final_callbacks);
  std::unordered_map<Node*, Tensor> buffers;
  std::vector<std::shared_ptr<Node>> roots;
  for (size_t i = 0; i < outputs.size(); ++i) {
    const Tensor& out = outputs[i];
    detail::check_defined(out, "backward");
    EMBER_CHECK(out.requires_grad(), "element ", i, " of tensors does not require grad and does not have a grad_fn");
    Tensor g = grad_outputs.empty() ? Tensor() : grad_outputs[i];
    if (!g.defined()) {
      EMBER_CHECK(out.numel() == 1, "grad can be implicitly created only for scalar outputs");
      g = ones_like(out);
    } else {
      EMBER_CHECK(same_dims(g.sizes(), out.sizes()), "Mismatch in shape: grad_output[", i, "] has a shape of ",
                  detail::shape_str(g.sizes()), " and output[", i, "] has a shape of ", detail::shape_str(out.sizes()),
                  ".");
    }
    std::shared_ptr<Node> node = gradient_node(out);
    Tensor& slot = buffers[node.get()];
    slot = slot.defined() ? slot + g : g;
    roots.push_back(std::move(node));
  }

  // Count, for every reachable node, the edges that lead into it.
  std::unordered_map<Node*, int> dependencies;
  std::unordered_set<Node*> seen;
  std::vector<Node*> stack;
  for (const auto& r : roots) {
    if (seen.insert(r.get()).second) stack.push_back(r.get());
  }
  while (!stack.empty()) {
    Node* n = stack.back();
    stack.pop_back();
    for (const Edge& e : n->next) {
      if (!e.node) continue;
      ++dependencies[e.node.get()];
      if (seen.insert(e.node.get()).second) stack.push_back(e.node.get());
    }
  }

  auto later_first = [](Node* a, Node* b) { return a->sequence_nr < b->sequence_nr; };
  std::priority_queue<Node*, std::vector<Node*>, decltype(later_first)> ready(later_first);
  std::unordered_set<Node*> queued;
  for (const auto& r : roots) {
    if (dependencies[r.get()] == 0 && queued.insert(r.get()).second) ready.push(r.get());
  }
  while (!ready.empty()) {
    Node* node = ready.top();
    ready.pop();
    Tensor grad;
    if (auto it = buffers.find(node); it != buffers.end()) {
      grad = std::move(it->second);
      buffers.erase(it);
    }
    std::vector<Tensor> input_grads;
    if (grad.defined()) {
      if (node->accumulates) {
        accumulate_into_leaf(*node, std::move(grad));
      } else {
        EMBER_CHECK(!node->released,
                    "Trying to backward through the graph a second time (or directly access saved tensors after they "
                    "have already been freed). Saved intermediate values of the graph are freed when you call "
                    ".backward(). Specify retain_graph=true if you need to backward through the graph a second time.");
        input_grads = node->backward(grad);
        EMBER_CHECK(input_grads.size() == node->next.size(), "[autograd] ", node->name, " returned ",
                    input_grads.size(), " gradients for ", node->next.size(), " inputs");
        if (AnomalyMode::is_enabled()) check_for_nan(*node, input_grads);
      }
    }
    if (!retain_graph && !node->accumulates) {
      node->backward = nullptr;
      node->released = true;
    }
    for (size_t i = 0; i < node->next.size(); ++i) {
      Node* next = node->next[i].node.get();
      if (!next) continue;
      if (i < input_grads.size() && input_grads[i].defined()) {
        const InputMeta& meta = node->inputs[i];
        Tensor g = sum_to(input_grads[i], meta.sizes);
        if (g.dtype() != meta.dtype) g = g.to(meta.dtype);
        Tensor& slot = buffers[next];
        slot = slot.defined() ? slot + g : g;
      }
      if (--dependencies[next] == 0) ready.push(next);
    }
  }
  // Callbacks may queue further callbacks; those run too.
  for (size_t i = 0; i < final_callbacks.size(); ++i) {
    auto callback = std::move(final_callbacks[i]);
    callback();
  }
}

void queue_callback(std::function<void()> callback) {
  EMBER_CHECK(g_final_callbacks != nullptr,
              "queue_callback: no backward pass is running on this thread; call it from a backward function or a "
              "gradient hook");
  g_final_callbacks->push_back(std::move(callback));
}

}  // namespace autograd

void backward(const std::vector<Tensor>& outputs, const std::vector<Tensor>& grad_outputs, bool retain_graph) {
  autograd::run_backward(outputs, grad_outputs, retain_graph);
}

// ---- Tensor's autograd methods ----

bool Tensor::requires_grad() const {
  const auto& meta = impl().autograd;
  return meta && (meta->requires_grad || meta->grad_fn);
}

Tensor& Tensor::requires_grad_(bool requires_grad) {
  EMBER_CHECK(!requires_grad || is_floating_point(),
              "only Tensors of floating point and complex dtype can require gradients (got ", dtype_name(dtype()), ")");
  if (!is_leaf()) {
    EMBER_CHECK(requires_grad,
                "you can only change requires_grad flags of leaf variables. If you want to use a "
                "computed variable in a subgraph that doesn't require differentiation use "
                "var_no_grad = var.detach().");
    return *this;
  }
  if (!impl().autograd) impl().autograd = std::make_shared<AutogradMeta>();
  impl().autograd->requires_grad = requires_grad;
  return *this;
}

bool Tensor::is_leaf() const { return !impl().autograd || !impl().autograd->grad_fn; }

Tensor Tensor::grad() const { return impl().autograd ? impl().autograd->grad : Tensor(); }

void Tensor::set_grad(const Tensor& grad) {
  if (grad.defined()) {
    EMBER_CHECK(same_dims(grad.sizes(), sizes()),
                "assigned grad has data of a different size: ", detail::shape_str(grad.sizes()), " vs ",
                detail::shape_str(sizes()));
    EMBER_CHECK(grad.dtype() == dtype(), "assigned grad has data of a different type: ", dtype_name(grad.dtype()),
                " vs ", dtype_name(dtype()));
    EMBER_CHECK(grad.device() == device(), "assigned grad has data located on a different device: ", grad.device(),
                " vs ", device());
  }
  if (!impl().autograd) impl().autograd = std::make_shared<AutogradMeta>();
  impl().autograd->grad = grad;
}

void Tensor::backward(const Tensor& gradient, bool retain_graph) const {
  autograd::run_backward({*this}, {gradient}, retain_graph);
}

void HookHandle::remove() {
  if (auto meta = meta_.lock()) {
    std::erase_if(meta->post_accumulate_hooks, [&](const auto& entry) { return entry.first == id_; });
  }
  meta_.reset();
}

HookHandle register_post_accumulate_grad_hook(const Tensor& leaf, PostAccumulateGradHook hook) {
  detail::check_defined(leaf, "register_post_accumulate_grad_hook");
  EMBER_CHECK(leaf.requires_grad(),
              "cannot register a hook on a tensor that doesn't require gradient; call requires_grad_() first");
  EMBER_CHECK(leaf.is_leaf(), "post accumulate grad hooks cannot be registered on non-leaf tensors");
  EMBER_CHECK(hook != nullptr, "register_post_accumulate_grad_hook: the hook is empty");
  AutogradMeta& meta = *leaf.impl().autograd;
  HookHandle handle;
  handle.id_ = g_hook_ids.fetch_add(1);
  handle.meta_ = leaf.impl().autograd;
  meta.post_accumulate_hooks.emplace_back(handle.id_, std::move(hook));
  return handle;
}

std::string Tensor::grad_fn_name() const {
  const auto& meta = impl().autograd;
  return meta && meta->grad_fn ? std::string(meta->grad_fn->name) : std::string();
}

}  // namespace ember
